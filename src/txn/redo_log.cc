#include "redo_log.h"

#include <xxhash.h>

#include <cstring>

#include "farmem/common/check.h"

namespace farmem::txn {

uint64_t encoded_log_bytes(const std::vector<LogRecord>& records) {
  uint64_t bytes = sizeof(LogSlotHeader);
  for (const LogRecord& r : records) {
    bytes += log_entry_bytes(static_cast<uint32_t>(r.targets.size()),
                             static_cast<uint32_t>(r.image.size()));
  }
  return bytes;
}

namespace {

// Writes the entry of `r` at log + at; returns the offset of its image.
uint64_t put_entry(const LogRecord& r, uint64_t at, std::string* log) {
  FARMEM_ASSERT(r.targets.size() <= kMaxNodes, "one target per replica at most");
  const LogEntryHeader e{r.lock_word, static_cast<uint32_t>(r.targets.size()),
                         static_cast<uint32_t>(r.image.size())};
  std::memcpy(log->data() + at, &e, sizeof(e));
  if (!r.targets.empty()) {
    std::memcpy(log->data() + at + sizeof(e), r.targets.data(), kLogTargetBytes * e.targets);
  }
  const uint64_t image_at = at + sizeof(e) + kLogTargetBytes * e.targets;
  if (!r.image.empty()) std::memcpy(log->data() + image_at, r.image.data(), r.image.size());
  return image_at;
}

}  // namespace

void encode_log(const std::vector<LogRecord>& records, uint64_t bytes, const TxnId& id,
                std::string* log, std::vector<ImageWrite>* writes) {
  FARMEM_DCHECK(bytes == encoded_log_bytes(records), "the log's size is its records'");
  log->assign(bytes, '\0');
  uint64_t at = sizeof(LogSlotHeader);
  for (const LogRecord& r : records) {
    const uint64_t image_at = put_entry(r, at, log);
    for (uint64_t target : r.targets) {
      writes->push_back({GlobalAddress::unpack(target), log->data() + image_at, r.image.size()});
    }
    at += log_entry_bytes(static_cast<uint32_t>(r.targets.size()),
                          static_cast<uint32_t>(r.image.size()));
  }
  FARMEM_ASSERT(at == bytes, "the entries fill the log exactly");
  LogSlotHeader h{};
  h.owner_session = 0;  // not written: the log write starts at the state word
  h.state = kLogCommitting;
  h.body_bytes = static_cast<uint32_t>(bytes - sizeof(h));
  h.entries = static_cast<uint32_t>(records.size());
  h.txn_coordinator = id.coordinator;
  h.txn_sequence = id.sequence;
  std::memcpy(log->data(), &h, sizeof(h));
  h.checksum = log_checksum(log->data(), log->size());
  std::memcpy(log->data() + kLogChecksumOffset, &h.checksum, sizeof(h.checksum));
}

uint64_t log_checksum(const char* log, size_t bytes) {
  return XXH3_64bits(log + kLogChecksummedFrom, bytes - kLogChecksummedFrom);
}

GlobalAddress LogEntryView::target(uint32_t i) const {
  uint64_t packed = 0;
  std::memcpy(&packed, target_words + kLogTargetBytes * i, sizeof(packed));
  return GlobalAddress::unpack(packed);
}

bool LogCursor::next(LogEntryView* e) {
  if (malformed_ || at_ + sizeof(LogEntryHeader) > log_.size()) return false;
  LogEntryHeader h;
  std::memcpy(&h, log_.data() + at_, sizeof(h));
  const uint64_t n = log_entry_bytes(h.targets, h.image_bytes);
  if (h.targets > kMaxNodes || at_ + n > log_.size()) {
    malformed_ = true;
    return false;
  }
  e->lock_word = GlobalAddress::unpack(h.lock_word);
  e->targets = h.targets;
  e->target_words = log_.data() + at_ + sizeof(h);
  e->image = e->target_words + kLogTargetBytes * h.targets;
  e->image_bytes = h.image_bytes;
  at_ += n;
  return true;
}

bool log_touches(std::string_view log, uint16_t node) {
  LogCursor cursor(log);
  LogEntryView e;
  while (cursor.next(&e)) {
    if (e.lock_word.node() == node) return true;
    for (uint32_t t = 0; t < e.targets; ++t) {
      if (e.target(t).node() == node) return true;
    }
  }
  return cursor.malformed();  // malformed: be careful
}

}  // namespace farmem::txn
