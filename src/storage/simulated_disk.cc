#include "farmem/storage/simulated_disk.h"

#include <errno.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <utility>

namespace farmem::storage {

namespace {

// One change not yet synced: a write of `bytes` at `offset`, or (truncate) a resize to `offset`.
struct Pending {
  bool truncate = false;
  uint64_t offset = 0;
  std::string bytes;
};

void apply_change(std::string& image, const Pending& p) {
  if (p.truncate) {
    image.resize(p.offset, '\0');
    return;
  }
  if (image.size() < p.offset + p.bytes.size()) image.resize(p.offset + p.bytes.size(), '\0');
  std::memcpy(image.data() + p.offset, p.bytes.data(), p.bytes.size());
}

}  // namespace

struct SimulatedDisk::FileState {
  std::string stable;
  std::string current;
  std::vector<Pending> pending;
};

class SimulatedFile final : public File {
 public:
  SimulatedFile(SimulatedDisk* disk, SimulatedDisk::FileState* state, std::string path)
      : disk_(disk), state_(state), path_(std::move(path)) {}

  Status write_at(uint64_t offset, std::string_view bytes) override {
    return disk_->write(*state_, path_, offset, bytes);
  }
  Result<size_t> read_at(uint64_t offset, char* out, size_t n) override {
    std::lock_guard<std::mutex> lock(disk_->mu_);
    const std::string& c = state_->current;
    if (offset >= c.size()) return size_t{0};
    const size_t k = std::min<uint64_t>(n, c.size() - offset);
    std::memcpy(out, c.data() + offset, k);
    return k;
  }
  Status sync() override {
    disk_->sync(*state_);
    return OkStatus();
  }
  Result<uint64_t> size() override {
    std::lock_guard<std::mutex> lock(disk_->mu_);
    return static_cast<uint64_t>(state_->current.size());
  }
  Status truncate(uint64_t bytes) override { return disk_->truncate(*state_, bytes); }
  const std::string& path() const override { return path_; }

 private:
  SimulatedDisk* disk_;
  SimulatedDisk::FileState* state_;
  std::string path_;
};

SimulatedDisk::SimulatedDisk() = default;
SimulatedDisk::~SimulatedDisk() = default;

Result<std::unique_ptr<File>> SimulatedDisk::open(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = files_[path];
  if (!slot) slot = std::make_unique<FileState>();
  return std::unique_ptr<File>(std::make_unique<SimulatedFile>(this, slot.get(), path));
}

Status SimulatedDisk::write(FileState& f, const std::string& path, uint64_t offset,
                            std::string_view bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t end = offset + bytes.size();
  const uint64_t growth = end > f.current.size() ? end - f.current.size() : 0;
  if (capacity_bytes_ != 0 && used_bytes() + growth > capacity_bytes_) {
    return io_error("write", path, ENOSPC);
  }
  f.pending.push_back({false, offset, std::string(bytes)});
  apply_change(f.current, f.pending.back());
  return OkStatus();
}

Status SimulatedDisk::truncate(FileState& f, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  f.pending.push_back({true, bytes, {}});
  apply_change(f.current, f.pending.back());
  return OkStatus();
}

void SimulatedDisk::sync(FileState& f) {
  std::lock_guard<std::mutex> lock(mu_);
  f.stable = f.current;
  f.pending.clear();
  ++syncs_;
}

void SimulatedDisk::power_loss() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [path, f] : files_) {
    f->current = f->stable;
    f->pending.clear();
  }
}

void SimulatedDisk::power_loss_torn(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mu_);
  std::mt19937_64 rng(seed);
  for (auto& [path, f] : files_) {
    const size_t kept = f->pending.empty() ? 0 : rng() % (f->pending.size() + 1);
    for (size_t i = 0; i < kept; ++i) {
      Pending p = f->pending[i];
      if (i + 1 == kept && !p.truncate && !p.bytes.empty()) p.bytes.resize(rng() % p.bytes.size());
      apply_change(f->stable, p);
    }
    f->current = f->stable;
    f->pending.clear();
  }
}

std::unique_ptr<SimulatedDisk> SimulatedDisk::crash_copy(uint64_t seed) const {
  auto copy = std::make_unique<SimulatedDisk>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [path, f] : files_) copy->files_[path] = std::make_unique<FileState>(*f);
  }
  if (seed == 0) {
    copy->power_loss();
  } else {
    copy->power_loss_torn(seed);
  }
  return copy;
}

void SimulatedDisk::set_capacity(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  capacity_bytes_ = bytes;
}

uint64_t SimulatedDisk::syncs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return syncs_;
}

std::string SimulatedDisk::contents(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(path);
  return it == files_.end() ? std::string() : it->second->current;
}

uint64_t SimulatedDisk::used_bytes() const {
  uint64_t used = 0;
  for (const auto& [path, f] : files_) used += f->current.size();
  return used;
}

}  // namespace farmem::storage
