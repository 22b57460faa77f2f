#include "farmem/storage/log.h"

#include <xxhash.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <utility>

#include "farmem/common/atomic_max.h"
#include "farmem/common/check.h"

namespace farmem::storage {
namespace {

struct RecordHeader {
  uint32_t magic;
  uint32_t payload_bytes;
  uint64_t lsn;
  uint64_t checksum;
};
static_assert(sizeof(RecordHeader) == kLogHeaderBytes);
static_assert(offsetof(RecordHeader, payload_bytes) == 4);
static_assert(offsetof(RecordHeader, lsn) == 8);
static_assert(offsetof(RecordHeader, checksum) == 16);

uint64_t padded(uint64_t bytes) { return (bytes + 7) & ~uint64_t{7}; }

uint64_t checksum(uint64_t lsn, std::string_view payload) {
  const uint64_t seed = (lsn * 0x9E3779B97F4A7C15ull) ^ payload.size();
  return XXH3_64bits_withSeed(payload.data(), payload.size(), seed);
}

// The record at `offset` if it is whole (padding included) and valid (and, when lsn != 0, carries
// that LSN); its payload in *payload. False at the end of the file or at a bad record.
Result<bool> read_record(File& file, uint64_t offset, uint64_t lsn, RecordHeader* h,
                         std::string* payload) {
  FARMEM_ASSIGN_OR_RETURN(size_t n, file.read_at(offset, reinterpret_cast<char*>(h), sizeof(*h)));
  if (n < sizeof(*h) || h->magic != kLogRecordMagic || h->payload_bytes > kMaxLogRecordBytes ||
      (lsn != 0 && h->lsn != lsn) || h->lsn == 0) {
    return false;
  }
  // Whole means padding too: a record whose padding a torn write lost ends the log.
  payload->resize(padded(h->payload_bytes));
  FARMEM_ASSIGN_OR_RETURN(n, file.read_at(offset + sizeof(*h), payload->data(), payload->size()));
  if (n != payload->size()) return false;
  payload->resize(h->payload_bytes);
  return checksum(h->lsn, *payload) == h->checksum;
}

// Whole valid records (any LSN) at 8-byte steps from `offset` to `end`: what a cut drops.
Result<uint64_t> count_beyond(File& file, uint64_t offset, uint64_t end) {
  uint64_t found = 0;
  RecordHeader h{};
  std::string payload;
  for (uint64_t at = offset + 8; at + kLogHeaderBytes <= end;) {
    FARMEM_ASSIGN_OR_RETURN(bool ok, read_record(file, at, 0, &h, &payload));
    if (!ok) {
      at += 8;
      continue;
    }
    ++found;
    at += kLogHeaderBytes + padded(h.payload_bytes);
  }
  return found;
}

}  // namespace

Result<Log> Log::open(std::unique_ptr<File> file, uint64_t start_lsn, const Visitor& visit,
                      Recovery* recovery) {
  *recovery = Recovery{};
  FARMEM_ASSIGN_OR_RETURN(const uint64_t end, file->size());
  uint64_t offset = 0;
  uint64_t lsn = 0;  // the first record sets the sequence
  RecordHeader h{};
  std::string payload;
  for (;;) {
    FARMEM_ASSIGN_OR_RETURN(bool ok, read_record(*file, offset, lsn, &h, &payload));
    if (!ok) break;
    if (h.lsn >= start_lsn) FARMEM_TRY(visit(h.lsn, payload));
    lsn = h.lsn + 1;
    offset += kLogHeaderBytes + padded(h.payload_bytes);
    ++recovery->records;
  }
  recovery->bytes = offset;
  if (offset < end) {
    recovery->dropped_bytes = end - offset;
    FARMEM_ASSIGN_OR_RETURN(recovery->dropped_records, count_beyond(*file, offset, end));
    FARMEM_TRY(file->truncate(offset));
  }
  // What was found counts as stable from here on: sync it (a record a killed node had written
  // but not synced would otherwise be lost to a later power loss after being recovered).
  FARMEM_TRY(file->sync());
  const uint64_t next = lsn == 0 ? start_lsn : std::max(lsn, start_lsn);
  return Log(std::move(file), offset, next == 0 ? 1 : next);
}

Log::Log(std::unique_ptr<File> file, uint64_t tail, uint64_t next_lsn)
    : file_(std::move(file)), tail_(tail), next_lsn_(next_lsn), synced_lsn_(next_lsn - 1) {}

Log::Log(Log&& o) noexcept { *this = std::move(o); }

Log& Log::operator=(Log&& o) noexcept {
  file_ = std::move(o.file_);
  tail_ = o.tail_;
  next_lsn_.store(o.next_lsn_.load());
  synced_lsn_.store(o.synced_lsn_.load());
  return *this;
}

Log::~Log() = default;

Result<uint64_t> Log::append(std::string_view payload) {
  return append_batch(std::span<const std::string_view>(&payload, 1));
}

Result<uint64_t> Log::append_batch(std::span<const std::string_view> payloads) {
  size_t total = 0;
  for (std::string_view p : payloads) {
    if (p.size() > kMaxLogRecordBytes) {
      return InvalidArgument("log record of " + std::to_string(p.size()) + " bytes: the limit is " +
                             std::to_string(kMaxLogRecordBytes));
    }
    total += kLogHeaderBytes + padded(p.size());
  }
  uint64_t lsn = next_lsn_.load(std::memory_order_relaxed);
  std::string records(total, '\0');
  size_t at = 0;
  for (std::string_view p : payloads) {
    const RecordHeader h{kLogRecordMagic, static_cast<uint32_t>(p.size()), lsn, checksum(lsn, p)};
    std::memcpy(records.data() + at, &h, sizeof(h));
    std::memcpy(records.data() + at + sizeof(h), p.data(), p.size());
    at += kLogHeaderBytes + padded(p.size());
    ++lsn;
  }
  Status s = file_->write_at(tail_, records);
  if (!s.ok()) {
    (void)file_->truncate(tail_);  // no half record stays behind the tail
    return s;
  }
  tail_ += records.size();
  next_lsn_.store(lsn, std::memory_order_release);
  return lsn - 1;
}

Status Log::sync() {
  const uint64_t upto = next_lsn() - 1;
  FARMEM_TRY(file_->sync());
  raise_to(synced_lsn_, upto);
  return OkStatus();
}

Result<uint64_t> Log::first_lsn(File& file) {
  RecordHeader h{};
  std::string payload;
  FARMEM_ASSIGN_OR_RETURN(bool ok, read_record(file, 0, 0, &h, &payload));
  return ok ? h.lsn : 0;
}

Status Log::reset() {
  FARMEM_TRY(file_->truncate(0));
  FARMEM_TRY(file_->sync());
  tail_ = 0;
  synced_lsn_.store(next_lsn() - 1);
  return OkStatus();
}

void Log::continue_from(uint64_t lsn) {
  FARMEM_ASSERT(tail_ == 0, "only an empty log takes over another's numbering");
  next_lsn_.store(lsn);
  synced_lsn_.store(lsn - 1);
}

}  // namespace farmem::storage
