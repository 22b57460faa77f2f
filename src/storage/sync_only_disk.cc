#include "farmem/storage/sync_only_disk.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "farmem/storage/sync_trace.h"

namespace farmem::storage {
namespace {

// The trace every sync goes to once start_sync_trace() set it (never unset: a node's life).
std::atomic<SyncTraceWriter*> trace_{nullptr};

class SyncOnlyFile final : public File {
 public:
  SyncOnlyFile(std::unique_ptr<File> real, std::string image)
      : real_(std::move(real)),
        image_(std::move(image)),
        synced_bytes_(image_.size()),
        cut_bytes_(synced_bytes_) {}

  Status write_at(uint64_t offset, std::string_view bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (offset + bytes.size() > image_.size()) image_.resize(offset + bytes.size());
    std::memcpy(image_.data() + offset, bytes.data(), bytes.size());
    dirty_.push_back({offset, bytes.size()});
    return OkStatus();
  }

  Result<size_t> read_at(uint64_t offset, char* out, size_t n) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (offset >= image_.size()) return size_t{0};
    const size_t k = std::min<size_t>(n, image_.size() - offset);
    std::memcpy(out, image_.data() + offset, k);
    return k;
  }

  // Out go the shortest cut since the last sync, the written ranges and the final size, then
  // the real sync.
  Status sync() override {
    std::lock_guard<std::mutex> lock(mu_);  // (a test's disk: writes wait for the sync)
    if (cut_bytes_ < synced_bytes_) FARMEM_TRY(real_->truncate(cut_bytes_));
    std::vector<SyncTraceWriter::RangeView> ranges;
    for (const auto& [offset, bytes] : dirty_) {
      if (offset >= image_.size()) continue;
      const size_t k = std::min<size_t>(bytes, image_.size() - offset);
      ranges.push_back({offset, std::string_view(image_.data() + offset, k)});
      FARMEM_TRY(real_->write_at(offset, ranges.back().bytes));
    }
    if (image_.size() != synced_bytes_ || cut_bytes_ < synced_bytes_) {
      FARMEM_TRY(real_->truncate(image_.size()));
    }
    FARMEM_TRY(real_->sync());
    if (SyncTraceWriter* trace = trace_.load(std::memory_order_acquire)) {
      const std::string& path = real_->path();
      FARMEM_TRY(trace->append(std::string_view(path).substr(path.rfind('/') + 1), cut_bytes_,
                               image_.size(), ranges));
    }
    dirty_.clear();
    synced_bytes_ = cut_bytes_ = image_.size();
    return OkStatus();
  }

  Result<uint64_t> size() override {
    std::lock_guard<std::mutex> lock(mu_);
    return uint64_t{image_.size()};
  }

  Status truncate(uint64_t bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    image_.resize(bytes);
    cut_bytes_ = std::min<uint64_t>(cut_bytes_, bytes);
    return OkStatus();
  }

  const std::string& path() const override { return real_->path(); }

 private:
  std::unique_ptr<File> real_;
  // The log's appends and its sync thread's sync() meet here (posix files allow that too).
  std::mutex mu_;
  std::string image_;                                 // what a reader of the file sees
  uint64_t synced_bytes_;                             // the real file's size
  uint64_t cut_bytes_;                                // the shortest size since the last sync
  std::vector<std::pair<uint64_t, uint64_t>> dirty_;  // (offset, bytes) written since sync
};

class SyncOnlyDisk final : public Disk {
 public:
  Result<std::unique_ptr<File>> open(const std::string& path) override {
    FARMEM_ASSIGN_OR_RETURN(auto real, posix_disk().open(path));
    FARMEM_ASSIGN_OR_RETURN(const uint64_t bytes, real->size());
    std::string image(bytes, '\0');
    FARMEM_ASSIGN_OR_RETURN(const size_t got, real->read_at(0, image.data(), image.size()));
    image.resize(got);
    return std::unique_ptr<File>(std::make_unique<SyncOnlyFile>(std::move(real), std::move(image)));
  }
};

}  // namespace

Disk& sync_only_disk() {
  static SyncOnlyDisk disk;
  return disk;
}

Status start_sync_trace(const std::string& path) {
  static std::unique_ptr<SyncTraceWriter> writer;  // lives as long as the process
  if (writer != nullptr) return InvalidArgument("a sync trace is already being written");
  FARMEM_ASSIGN_OR_RETURN(writer, SyncTraceWriter::open(path));
  trace_.store(writer.get(), std::memory_order_release);
  return OkStatus();
}

}  // namespace farmem::storage
