// Journal: what keeps a durable memory node's region and metadata across restarts and power
// loss: a write-ahead log, group commit and checkpoints in the node's data directory
// (docs/formats/storage.md has the files and their bytes).
//
// The caller owns the region (the node's exported memory, which clients keep reading and
// writing directly) and its metadata (heap, objects, roots, services' state: opaque bytes here).
//  - append_range(offset, bytes) logs a copy of region bytes as they are now (a `persist`);
//  - append(record) logs one change of the owner's metadata, replayed at recovery.
// Each returns the record's LSN; the record survives the node's durability level once
// stable_lsn() reaches it: at once on a `process` node (the record is in the kernel's page
// cache), after the syncer's fdatasync on a `power` node (group commit: one sync covers every
// record appended while the previous one ran). Listeners (eventfds) are written whenever
// stable_lsn() advances, so a sleeping worker wakes to answer what became stable.
//
// Checkpoints bound the log. When the live log passes checkpoint_log_bytes, the checkpointer
// thread switches appends to the other log file; the owner's snapshot is taken atomically with
// that switch (JournalOwner::snapshot); the region chunks the old log touched go to region.img,
// the snapshot to a meta file and the new generation to CHECKPOINT; the old log is then free.
//
// Recovery (open): region.img into the region, the newest complete checkpoint's snapshot to the
// owner, then every logged record after it in LSN order (ranges into the region, the owner's
// records to JournalOwner::apply). A torn or corrupt log tail is cut at the last valid record
// and counted in the report. A region of another size than the checkpoint's is refused.
//
// A failed write or sync (full disk: kResourceExhausted naming the file) fails that append; a
// failed sync or checkpoint fails the journal: health() and every later append return the error.
//
// Thread safety: append, append_range, stable_lsn, health, stats and listeners from any thread;
// open, start and the destructor on one. The owner's lock (held around its mutations and their
// appends) is taken before the journal's own.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "farmem/common/result.h"
#include "farmem/storage/data_dir.h"
#include "farmem/storage/durability.h"
#include "farmem/storage/file.h"
#include "farmem/storage/log.h"

namespace farmem::storage {

struct JournalOptions {
  Durability durability = Durability::kPower;  // kProcess or kPower
  uint64_t checkpoint_log_bytes = 256ull << 20;
  Disk* disk = nullptr;  // nullptr: posix_disk()
};

// The metadata's side of the journal. Recovery calls load_snapshot (only after a checkpoint)
// and then apply for each record, on the thread calling open(); snapshot runs on the
// checkpointer thread.
class JournalOwner {
 public:
  virtual Status load_snapshot(std::string_view bytes) = 0;
  virtual Status apply(std::string_view record) = 0;
  // Takes the lock held around mutations and their appends, calls rotate() (the log switch),
  // serialises the metadata, releases the lock and returns the bytes.
  virtual std::string snapshot(const std::function<void()>& rotate) = 0;

 protected:
  ~JournalOwner() = default;
};

class Journal {
 public:
  // What recovery found (printed by the node and shown in `farmem status`).
  struct Report {
    uint64_t generation = 0;  // the checkpoint recovery started from (0: none)
    uint64_t records = 0;     // log records replayed
    uint64_t ranges = 0;      // of which region ranges
    uint64_t dropped_records = 0;
    uint64_t dropped_bytes = 0;
    uint64_t image_bytes = 0;  // region bytes read from the checkpoint's image
    uint64_t log_bytes = 0;
    uint64_t elapsed_us = 0;
  };
  struct Stats {
    uint64_t appended_lsn = 0;
    uint64_t stable_lsn = 0;
    uint64_t log_bytes = 0;  // the live log file
    uint64_t syncs = 0;
    uint64_t synced_bytes = 0;
    uint64_t checkpoints = 0;
    uint64_t generation = 0;
    uint64_t last_checkpoint_us = 0;
  };
  static constexpr uint64_t kChunkBytes = 64 * 1024;  // region.img's unit of copying
  static constexpr uint32_t kFormatVersion = 1;

  // Recovers into `region` and `owner` (see above); threads start with start().
  static Result<std::unique_ptr<Journal>> open(const DataDir& dir, std::span<uint8_t> region,
                                               const JournalOptions& options, JournalOwner& owner,
                                               Report* report);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Starts the syncer (power) and checkpointer threads.
  void start();

  Result<uint64_t> append(std::string_view record);
  // Logs region bytes [offset, offset + bytes) as they are now (split into records as needed).
  Result<uint64_t> append_range(uint64_t offset, uint64_t bytes);
  // Logs copies of region ranges the caller took (each as it was when taken), in order, with one
  // write; returns the last LSN. Each copy must lie inside the region and be at most
  // kMaxRangeCopyBytes (larger ranges go through append_range).
  struct RangeCopy {
    uint64_t offset;
    std::string_view bytes;  // the caller's copy
  };
  static constexpr uint64_t kMaxRangeCopyBytes = 1 << 20;
  Result<uint64_t> append_ranges(std::span<const RangeCopy> ranges);
  uint64_t stable_lsn() const { return stable_lsn_.load(std::memory_order_acquire); }
  Status health() const;
  Stats stats() const;
  Durability durability() const { return options_.durability; }

  // `fd` (an eventfd) is written whenever stable_lsn() advances or the journal fails.
  void add_listener(int fd);
  void remove_listener(int fd);

  // A checkpoint now, on the calling thread (tests and shutdown); not concurrently with start().
  // A failure leaves the journal unable to checkpoint again: its caller fails the node's writes.
  Status checkpoint();

 private:
  struct Files;
  Journal(std::span<uint8_t> region, const JournalOptions& options, JournalOwner& owner);

  Status recover(const DataDir& dir, Report* report);
  Status load_checkpoint(uint64_t generation, uint64_t meta_bytes, uint64_t meta_checksum,
                         Report* report);
  Status read_image(Report* report);
  // Opens log.<index> (`file`, or the file at `path`) and applies its records from start_lsn.
  Status replay(int index, const std::string& path, uint64_t start_lsn, Report* report,
                std::unique_ptr<File> file = nullptr);
  Status apply_record(std::string_view payload, Report* report);
  Status apply_ranges(std::string_view payload, Report* report);
  Status write_checkpoint(uint64_t generation, const std::vector<uint64_t>& dirty,
                          uint64_t start_lsn, std::string_view snapshot);
  void rotate(std::vector<uint64_t>* dirty, uint64_t* start_lsn, Status* status);
  Result<uint64_t> append_locked(std::string_view payload);
  Result<uint64_t> append_batch_locked(std::span<const std::string_view> payloads);
  void mark_dirty(uint64_t offset, uint64_t bytes);
  void notify_locked();  // requires mu_
  void advance_stable(uint64_t lsn);
  void fail(const Status& status);
  void sync_loop();
  void checkpoint_loop();

  std::span<uint8_t> region_;
  JournalOptions options_;
  JournalOwner& owner_;
  std::unique_ptr<Files> files_;

  mutable std::mutex mu_;
  std::condition_variable sync_cv_;
  std::condition_variable checkpoint_cv_;
  Log* live_ = nullptr;                    // (mu_) the log appends go to
  std::vector<uint64_t> dirty_;            // (mu_) chunks the live log touched
  std::vector<int> listeners_;             // (mu_)
  Status failed_;                          // (mu_)
  bool stopping_ = false;                  // (mu_)
  std::atomic<uint64_t> appended_lsn_{0};  // last LSN appended
  std::atomic<uint64_t> stable_lsn_{0};
  std::atomic<uint64_t> syncs_{0};
  std::atomic<uint64_t> synced_bytes_{0};
  std::atomic<uint64_t> checkpoints_{0};
  std::atomic<uint64_t> last_checkpoint_us_{0};
  std::atomic<uint64_t> generation_{0};  // the newest complete checkpoint
  std::vector<uint64_t> image_chunks_;   // (checkpointer) chunks region.img holds
  std::thread syncer_;
  std::thread checkpointer_;
};

}  // namespace farmem::storage
