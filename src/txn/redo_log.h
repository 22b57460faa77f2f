// The redo log of one commit as bytes (docs/formats/txn.md "Logs"): a LogSlotHeader, then one
// entry per lock the transaction holds, {LogEntryHeader, the targets (packed GlobalAddresses,
// one per replica written), the image padded to 8}. A commit lays its log out with encode_log
// and writes it from kLogStateOffset on; recovery and promotion read a log back whole and walk
// its entries with LogCursor.
// Thread safety: values and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "farmem/client/global_address.h"
#include "farmem/txn/layout.h"
#include "farmem/txn/transaction.h"

namespace farmem::txn {

// One entry before encoding: the lock word held and, for a write, its image and where it goes.
struct LogRecord {
  uint64_t lock_word = 0;         // packed GlobalAddress of the primary's lock word
  std::vector<uint64_t> targets;  // packed GlobalAddresses (none: a record only locked)
  std::string image;              // a slot from its version on, or a bucket's version word
};

// One in-place write of a commit: an image (inside the encoded log) to one replica.
struct ImageWrite {
  GlobalAddress addr;
  const char* src;
  size_t bytes;
};

// The bytes of the log of `records`, header included.
uint64_t encoded_log_bytes(const std::vector<LogRecord>& records);

// Lays out the log of transaction `id` in *log (`bytes` = encoded_log_bytes(records), which the
// caller has checked against its log slot): the entries, then the header in state
// kLogCommitting with its checksum (owner_session left 0: it is not written). Appends to
// *writes the in-place writes the log describes, in entry order; they point into *log.
void encode_log(const std::vector<LogRecord>& records, uint64_t bytes, const TxnId& id,
                std::string* log, std::vector<ImageWrite>* writes);

// The checksum of a log whose header and body are the `bytes` bytes at `log`.
uint64_t log_checksum(const char* log, size_t bytes);

// One entry of a log read back.
struct LogEntryView {
  GlobalAddress lock_word;
  uint32_t targets = 0;
  const char* target_words = nullptr;  // `targets` packed GlobalAddresses (unaligned)
  const char* image = nullptr;
  uint32_t image_bytes = 0;

  GlobalAddress target(uint32_t i) const;
};

// Walks the entries of a log read back whole (header and body, as bytes from another client:
// every length is checked against the log's size). next() is false at the end, or at an entry
// that does not fit the log or names more than kMaxNodes targets: then malformed() is true.
class LogCursor {
 public:
  explicit LogCursor(std::string_view log) : log_(log) {}
  bool next(LogEntryView* e);
  bool malformed() const { return malformed_; }

 private:
  std::string_view log_;
  uint64_t at_ = sizeof(LogSlotHeader);
  bool malformed_ = false;
};

// Whether a log has a lock word or a target on `node` (a malformed one counts as touching it).
bool log_touches(std::string_view log, uint16_t node);

}  // namespace farmem::txn
