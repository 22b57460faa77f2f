// SimulatedDisk: a Disk in memory for tests of durability. Each file keeps what its last sync()
// made stable apart from the writes (and truncations) made since; a simulated power loss drops
// those, or keeps a seeded random prefix of them with the last one possibly torn, as a real disk
// may. A capacity makes it a full disk (writes past it fail with kResourceExhausted).
//
// Files live as long as the SimulatedDisk, across any number of open() calls: reopening after
// power_loss() sees what survived. Thread safety: every method from any thread (one mutex).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "farmem/storage/file.h"

namespace farmem::storage {

class SimulatedDisk final : public Disk {
 public:
  struct FileState;  // a file's stable image, its current image and what is not yet synced

  SimulatedDisk();
  ~SimulatedDisk() override;

  Result<std::unique_ptr<File>> open(const std::string& path) override;

  // Power lost: every file goes back to what its last sync() made stable.
  void power_loss();
  // Power lost after the disk wrote some of what was pending: per file, a prefix of its unsynced
  // writes chosen with `seed`, the last of them cut at a random byte.
  void power_loss_torn(uint64_t seed);
  // A new disk holding what a power loss now would leave (power_loss(), or power_loss_torn(seed)
  // when seed != 0); this one goes on unchanged.
  std::unique_ptr<SimulatedDisk> crash_copy(uint64_t seed = 0) const;
  // Total bytes the files may hold; 0 (the default) is unlimited.
  void set_capacity(uint64_t bytes);
  // How many sync() calls returned OK, over all files: the sync boundaries of a run.
  uint64_t syncs() const;
  // A file's current contents (what a reader sees now); empty when there is no such file.
  std::string contents(const std::string& path) const;

 private:
  friend class SimulatedFile;
  Status write(FileState& f, const std::string& path, uint64_t offset, std::string_view bytes);
  Status truncate(FileState& f, uint64_t bytes);
  void sync(FileState& f);
  uint64_t used_bytes() const;

  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<FileState>> files_;
  uint64_t capacity_bytes_ = 0;
  uint64_t syncs_ = 0;
};

}  // namespace farmem::storage
