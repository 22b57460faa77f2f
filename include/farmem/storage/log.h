// Log: an append-only file of checksummed records, the write-ahead log of a durable node.
//
// Each record (docs/formats/storage_log.md) is a 24-byte header (magic, payload length, LSN,
// XXH3 checksum of LSN, length and payload) and the payload, padded with zeros to 8 bytes. LSNs
// start at 1 and grow by one per record, across reset() too.
//
// open() reads the file from the start and keeps its valid prefix: the first record whose
// header, checksum or LSN (one more than the record before) is wrong ends it (a torn write from a
// crash, or a flipped bit), the file is cut there, and Recovery says what was kept and what was
// dropped. append() adds a record at the tail, not yet stable; sync() makes every appended record
// stable (what a `power` node does before it acknowledges; a `process` node's records survive kill
// -9 without it). A failed write leaves the log as it was before the append (kResourceExhausted
// naming the file when the disk is full).
//
// Thread safety: one thread at a time appends, resets and reads the counters (the caller
// serialises them, e.g. under a lock); sync() may run on another thread at the same time (a
// group commit's syncer), and makes stable at least every record appended before it was called.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "farmem/common/result.h"
#include "farmem/storage/file.h"

namespace farmem::storage {

inline constexpr uint32_t kLogRecordMagic = 0x524c4d46;  // "FMLR" little-endian
inline constexpr size_t kLogHeaderBytes = 24;
inline constexpr uint32_t kMaxLogRecordBytes = 64u << 20;

class Log {
 public:
  // What open() found: records kept, and the tail it cut (bytes, and how many whole records
  // with a valid checksum stood beyond the cut and were dropped with it).
  struct Recovery {
    uint64_t records = 0;
    uint64_t bytes = 0;
    uint64_t dropped_bytes = 0;
    uint64_t dropped_records = 0;
  };
  // Called for each kept record, in LSN order.
  using Visitor = std::function<Status(uint64_t lsn, std::string_view payload)>;

  // Records below start_lsn (a checkpoint holds them already) are kept but not visited; an
  // empty log's first record gets start_lsn.
  static Result<Log> open(std::unique_ptr<File> file, uint64_t start_lsn, const Visitor& visit,
                          Recovery* recovery);

  Log(Log&&) noexcept;
  Log& operator=(Log&&) noexcept;
  ~Log();

  // Appends one record (payload at most kMaxLogRecordBytes) and returns its LSN.
  Result<uint64_t> append(std::string_view payload);
  // Appends records with consecutive LSNs in one write (group of a caller's changes); returns
  // the last LSN. Nothing is appended if any payload is too large or the write fails.
  Result<uint64_t> append_batch(std::span<const std::string_view> payloads);
  Status sync();
  // Empties the file (after a checkpoint holds everything in it); LSNs go on from where they were.
  Status reset();
  // An empty log (reset, or never written) takes over another log's numbering: its next record
  // gets `lsn` (at least 1).
  void continue_from(uint64_t lsn);

  uint64_t next_lsn() const { return next_lsn_.load(std::memory_order_acquire); }
  uint64_t bytes() const { return tail_; }
  // LSN of the last record a sync() made stable (0: none).
  uint64_t synced_lsn() const { return synced_lsn_.load(std::memory_order_acquire); }
  // The LSN of the first valid record of `file`, or 0 when it holds none (read only).
  static Result<uint64_t> first_lsn(File& file);

 private:
  Log(std::unique_ptr<File> file, uint64_t tail, uint64_t next_lsn);

  std::unique_ptr<File> file_;
  uint64_t tail_ = 0;
  std::atomic<uint64_t> next_lsn_{1};
  std::atomic<uint64_t> synced_lsn_{0};
};

}  // namespace farmem::storage
