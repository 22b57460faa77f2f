#include "farmem/storage/journal.h"

#include <fmt/format.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstring>

#include "farmem/common/clock.h"
#include "journal_format.h"

namespace farmem::storage {

using journal_format::CheckpointSlot;
using journal_format::MetaHeader;
using journal_format::RangePrefix;
using journal_format::RecordPrefix;

namespace {

using journal_format::hash;
using journal_format::words_for;

// Reads the whole of `file` (small files: metadata snapshots).
Result<std::string> read_all(File& file) {
  FARMEM_ASSIGN_OR_RETURN(const uint64_t bytes, file.size());
  std::string out(bytes, '\0');
  FARMEM_ASSIGN_OR_RETURN(const size_t n, file.read_at(0, out.data(), out.size()));
  out.resize(n);
  return out;
}

// The newest valid checkpoint slot; generation 0 when there is none.
Result<CheckpointSlot> newest_slot(File& file) {
  CheckpointSlot best{};
  for (uint64_t i = 0; i < 2; ++i) {
    CheckpointSlot s{};
    FARMEM_ASSIGN_OR_RETURN(const size_t n, file.read_at(i * journal_format::kSlotBytes,
                                                         reinterpret_cast<char*>(&s), sizeof(s)));
    if (n != sizeof(s) || s.magic != journal_format::kCheckpointMagic ||
        s.checksum != journal_format::slot_checksum(s)) {
      continue;
    }
    if (s.version != Journal::kFormatVersion) {
      return VersionMismatch(fmt::format("{}: checkpoint format version {}, this node reads {}",
                                         file.path(), s.version, Journal::kFormatVersion));
    }
    if (s.generation > best.generation) best = s;
  }
  return best;
}

}  // namespace

Journal::Journal(std::span<uint8_t> region, const JournalOptions& options, JournalOwner& owner)
    : region_(region), options_(options), owner_(owner), files_(std::make_unique<Files>()) {
  if (options_.disk == nullptr) options_.disk = &posix_disk();
  dirty_.assign(words_for(region.size()), 0);
  image_chunks_.assign(words_for(region.size()), 0);
}

Journal::~Journal() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  sync_cv_.notify_all();
  checkpoint_cv_.notify_all();
  if (syncer_.joinable()) syncer_.join();
  if (checkpointer_.joinable()) checkpointer_.join();
}

Result<std::unique_ptr<Journal>> Journal::open(const DataDir& dir, std::span<uint8_t> region,
                                               const JournalOptions& options, JournalOwner& owner,
                                               Report* report) {
  if (options.durability == Durability::kVolatile) {
    return InvalidArgument("a journal keeps data durably: choose process or power");
  }
  std::unique_ptr<Journal> j(new Journal(region, options, owner));
  *report = Report{};
  const uint64_t start = now_ns();
  FARMEM_TRY(j->recover(dir, report));
  report->elapsed_us = (now_ns() - start) / 1000;
  return j;
}

Status Journal::recover(const DataDir& dir, Report* report) {
  Disk& disk = *options_.disk;
  Files& f = *files_;
  FARMEM_ASSIGN_OR_RETURN(f.checkpoint, disk.open(dir.file("CHECKPOINT")));
  FARMEM_ASSIGN_OR_RETURN(f.image, disk.open(dir.file("region.img")));
  for (int i = 0; i < 2; ++i) {
    FARMEM_ASSIGN_OR_RETURN(f.meta[i], disk.open(dir.file(fmt::format("meta.{}", i))));
  }
  FARMEM_ASSIGN_OR_RETURN(const CheckpointSlot slot, newest_slot(*f.checkpoint));
  uint64_t start_lsn = 1;
  if (slot.generation > 0) {
    if (slot.region_bytes != region_.size()) {
      return InvalidArgument(fmt::format(
          "{} holds a region of {} bytes but this node exports {}: start it with that capacity",
          dir.path(), slot.region_bytes, region_.size()));
    }
    FARMEM_TRY(load_checkpoint(slot.generation, slot.meta_bytes, slot.meta_checksum, report));
    start_lsn = slot.start_lsn;
  }
  report->generation = slot.generation;
  generation_.store(slot.generation);
  const int first = static_cast<int>(slot.generation % 2);
  FARMEM_TRY(replay(first, dir.file(fmt::format("log.{}", first)), start_lsn, report));
  const int second = 1 - first;
  FARMEM_ASSIGN_OR_RETURN(auto other, disk.open(dir.file(fmt::format("log.{}", second))));
  FARMEM_ASSIGN_OR_RETURN(const uint64_t other_first, Log::first_lsn(*other));
  const uint64_t next = f.logs[first]->next_lsn();
  if (other_first == 0 || other_first != next) {
    // Empty, or an old generation's log: it takes over at the next checkpoint.
    Log::Recovery ignored;
    FARMEM_ASSIGN_OR_RETURN(Log log,
                            Log::open(
                                std::move(other), UINT64_MAX,
                                [](uint64_t, std::string_view) { return OkStatus(); }, &ignored));
    f.logs[second] = std::make_unique<Log>(std::move(log));
    FARMEM_TRY(f.logs[second]->reset());
    f.logs[second]->continue_from(next);
    f.live = first;
  } else {
    // A checkpoint was under way: the state at its switch is the state now; finish it.
    std::vector<uint64_t> dirty(dirty_.size(), 0);
    dirty.swap(dirty_);
    const std::string snapshot = owner_.snapshot([] {});
    const std::string path = other->path();
    FARMEM_TRY(replay(second, path, next, report, std::move(other)));
    FARMEM_TRY(write_checkpoint(slot.generation + 1, dirty, next, snapshot));
    f.live = second;
  }
  live_ = f.logs[f.live].get();
  report->log_bytes = live_->bytes();
  appended_lsn_.store(live_->next_lsn() - 1);
  stable_lsn_.store(live_->next_lsn() - 1);
  return OkStatus();
}

Status Journal::load_checkpoint(uint64_t generation, uint64_t meta_bytes, uint64_t meta_checksum,
                                Report* report) {
  File& meta_file = *files_->meta[generation % 2];
  FARMEM_ASSIGN_OR_RETURN(const std::string meta, read_all(meta_file));
  if (meta.size() != meta_bytes || hash(meta) != meta_checksum ||
      meta.size() < sizeof(MetaHeader)) {
    return Internal(fmt::format("{}: checkpoint {} metadata does not match its checksum",
                                meta_file.path(), generation));
  }
  MetaHeader h{};
  std::memcpy(&h, meta.data(), sizeof(h));
  const uint64_t words = words_for(region_.size());
  if (h.chunk_bytes != kChunkBytes || h.chunk_words != words ||
      meta.size() < sizeof(h) + words * 8) {
    return Internal(
        fmt::format("{}: checkpoint {} metadata has a bad header", meta_file.path(), generation));
  }
  std::memcpy(image_chunks_.data(), meta.data() + sizeof(h), words * 8);
  FARMEM_TRY(read_image(report));
  return owner_.load_snapshot(std::string_view(meta).substr(sizeof(h) + words * 8));
}

Status Journal::read_image(Report* report) {
  File& image = *files_->image;
  for (uint64_t w = 0; w < image_chunks_.size(); ++w) {
    for (uint64_t bits = image_chunks_[w]; bits != 0; bits &= bits - 1) {
      const uint64_t chunk = w * 64 + std::countr_zero(bits);
      const uint64_t offset = chunk * kChunkBytes;
      const uint64_t n = std::min<uint64_t>(kChunkBytes, region_.size() - offset);
      FARMEM_ASSIGN_OR_RETURN(const size_t got,
                              image.read_at(offset, reinterpret_cast<char*>(&region_[offset]), n));
      if (got != n) {
        return Internal(
            fmt::format("{}: the checkpoint image ends at chunk {}", image.path(), chunk));
      }
      report->image_bytes += n;
    }
  }
  return OkStatus();
}

Status Journal::replay(int index, const std::string& path, uint64_t start_lsn, Report* report,
                       std::unique_ptr<File> file) {
  if (file == nullptr) {
    FARMEM_ASSIGN_OR_RETURN(file, options_.disk->open(path));
  }
  Log::Recovery r;
  auto visit = [&](uint64_t, std::string_view payload) { return apply_record(payload, report); };
  FARMEM_ASSIGN_OR_RETURN(Log log, Log::open(std::move(file), start_lsn, visit, &r));
  report->dropped_records += r.dropped_records;
  report->dropped_bytes += r.dropped_bytes;
  files_->logs[index] = std::make_unique<Log>(std::move(log));
  return OkStatus();
}

Status Journal::apply_record(std::string_view payload, Report* report) {
  if (payload.size() < sizeof(RecordPrefix)) {
    return Internal(fmt::format("a {}-byte journal record has no kind", payload.size()));
  }
  ++report->records;
  const auto kind = static_cast<uint8_t>(payload[0]);
  if (kind == journal_format::kOwnerRecord) {
    return owner_.apply(payload.substr(sizeof(RecordPrefix)));
  }
  if (kind == journal_format::kRangesRecord) return apply_ranges(payload, report);
  if (kind != journal_format::kRangeRecord || payload.size() < sizeof(RangePrefix)) {
    return Internal(fmt::format("journal record of unknown kind {}", kind));
  }
  RangePrefix p{};
  std::memcpy(&p, payload.data(), sizeof(p));
  const uint64_t bytes = payload.size() - sizeof(p);
  if (p.offset > region_.size() || bytes > region_.size() - p.offset) {
    return Internal(fmt::format("journal range [{:#x}, +{}) lies outside the {}-byte region",
                                p.offset, bytes, region_.size()));
  }
  std::memcpy(&region_[p.offset], payload.data() + sizeof(p), bytes);
  mark_dirty(p.offset, bytes);
  ++report->ranges;
  return OkStatus();
}

Status Journal::apply_ranges(std::string_view payload, Report* report) {
  using journal_format::RangeEntry;
  for (size_t at = sizeof(RecordPrefix); at < payload.size();) {
    RangeEntry e{};
    if (payload.size() - at < sizeof(e))
      return Internal("a journal ranges record ends inside an entry");
    std::memcpy(&e, payload.data() + at, sizeof(e));
    const uint64_t step = journal_format::range_entry_bytes(e.bytes);
    if (e.reserved != 0 || step > payload.size() - at || e.offset > region_.size() ||
        e.bytes > region_.size() - e.offset) {
      return Internal(fmt::format("journal ranges record: entry [{:#x}, +{}) does not hold",
                                  e.offset, e.bytes));
    }
    std::memcpy(&region_[e.offset], payload.data() + at + sizeof(e), e.bytes);
    mark_dirty(e.offset, e.bytes);
    ++report->ranges;
    at += step;
  }
  return OkStatus();
}

void Journal::start() {
  if (options_.durability == Durability::kPower) syncer_ = std::thread([this] { sync_loop(); });
  checkpointer_ = std::thread([this] { checkpoint_loop(); });
}

Status Journal::health() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failed_;
}

Result<uint64_t> Journal::append(std::string_view record) {
  std::string payload(sizeof(RecordPrefix) + record.size(), '\0');
  payload[0] = static_cast<char>(journal_format::kOwnerRecord);
  std::memcpy(payload.data() + sizeof(RecordPrefix), record.data(), record.size());
  std::lock_guard<std::mutex> lock(mu_);
  return append_locked(payload);
}

Result<uint64_t> Journal::append_range(uint64_t offset, uint64_t bytes) {
  if (offset > region_.size() || bytes > region_.size() - offset) {
    return InvalidArgument(fmt::format("range [{:#x}, +{}) lies outside the {}-byte region", offset,
                                       bytes, region_.size()));
  }
  constexpr uint64_t kPiece = kMaxLogRecordBytes - sizeof(RangePrefix);
  std::string payload;
  uint64_t lsn = 0;
  uint64_t done = 0;
  std::lock_guard<std::mutex> lock(mu_);
  do {  // (an empty range still gets its record and an LSN to wait for)
    const uint64_t n = std::min(kPiece, bytes - done);
    const RangePrefix p{journal_format::kRangeRecord, {}, offset + done};
    payload.resize(sizeof(p) + n);
    std::memcpy(payload.data(), &p, sizeof(p));
    std::memcpy(payload.data() + sizeof(p), &region_[offset + done], n);
    FARMEM_ASSIGN_OR_RETURN(lsn, append_locked(payload));
    done += n;
  } while (done < bytes);
  mark_dirty(offset, bytes);
  return lsn;
}

Result<uint64_t> Journal::append_ranges(std::span<const RangeCopy> ranges) {
  using journal_format::RangeEntry;
  size_t total = 0;
  for (const RangeCopy& r : ranges) {
    if (r.bytes.size() > kMaxRangeCopyBytes || r.offset > region_.size() ||
        r.bytes.size() > region_.size() - r.offset) {
      return InvalidArgument(fmt::format(
          "range copy [{:#x}, +{}) is too large or outside the region", r.offset, r.bytes.size()));
    }
    total += journal_format::range_entry_bytes(r.bytes.size());
  }
  // Ranges records of at most kMaxLogRecordBytes, one after the other in `arena`; a range never
  // spans two (each is at most kMaxRangeCopyBytes).
  std::string arena(total + sizeof(RecordPrefix) * (2 + total / (kMaxLogRecordBytes / 4)), '\0');
  std::vector<std::string_view> payloads;
  size_t start = 0, at = 0;
  auto open_record = [&] {
    start = at;
    const RecordPrefix p{journal_format::kRangesRecord, {}};
    std::memcpy(arena.data() + at, &p, sizeof(p));
    at += sizeof(p);
  };
  open_record();
  for (const RangeCopy& r : ranges) {
    const uint64_t step = journal_format::range_entry_bytes(r.bytes.size());
    if (at - start + step > kMaxLogRecordBytes / 2) {
      payloads.emplace_back(arena.data() + start, at - start);
      open_record();
    }
    const RangeEntry e{r.offset, static_cast<uint32_t>(r.bytes.size()), 0};
    std::memcpy(arena.data() + at, &e, sizeof(e));
    if (!r.bytes.empty())
      std::memcpy(arena.data() + at + sizeof(e), r.bytes.data(), r.bytes.size());
    at += step;  // (the padding is the arena's zeros)
  }
  payloads.emplace_back(arena.data() + start, at - start);
  std::lock_guard<std::mutex> lock(mu_);
  FARMEM_ASSIGN_OR_RETURN(const uint64_t lsn, append_batch_locked(payloads));
  for (const RangeCopy& r : ranges) mark_dirty(r.offset, r.bytes.size());
  return lsn;
}

Result<uint64_t> Journal::append_locked(std::string_view payload) {
  return append_batch_locked(std::span<const std::string_view>(&payload, 1));
}

Result<uint64_t> Journal::append_batch_locked(std::span<const std::string_view> payloads) {
  FARMEM_TRY(failed_);
  FARMEM_ASSIGN_OR_RETURN(const uint64_t lsn, live_->append_batch(payloads));
  appended_lsn_.store(lsn, std::memory_order_release);
  if (options_.durability == Durability::kProcess) {
    stable_lsn_.store(lsn, std::memory_order_release);
  } else {
    sync_cv_.notify_one();
  }
  if (live_->bytes() >= options_.checkpoint_log_bytes) checkpoint_cv_.notify_one();
  return lsn;
}

void Journal::mark_dirty(uint64_t offset, uint64_t bytes) {
  if (bytes == 0) return;
  for (uint64_t c = offset / kChunkBytes; c <= (offset + bytes - 1) / kChunkBytes; ++c) {
    dirty_[c / 64] |= uint64_t{1} << (c % 64);
  }
}

void Journal::add_listener(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  listeners_.push_back(fd);
}

void Journal::remove_listener(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  listeners_.erase(std::remove(listeners_.begin(), listeners_.end(), fd), listeners_.end());
}

Journal::Stats Journal::stats() const {
  Stats s;
  s.appended_lsn = appended_lsn_.load();
  s.stable_lsn = stable_lsn_.load();
  {
    std::lock_guard<std::mutex> lock(mu_);
    s.log_bytes = live_->bytes();
  }
  s.syncs = syncs_.load();
  s.synced_bytes = synced_bytes_.load();
  s.checkpoints = checkpoints_.load();
  s.generation = generation_.load();
  s.last_checkpoint_us = last_checkpoint_us_.load();
  return s;
}

}  // namespace farmem::storage
