// The redo log's bytes (src/txn/redo_log.h, docs/formats/txn.md "Logs"): what encode_log lays
// out is what LogCursor reads back, the header and checksum sit at their named offsets, and a
// log from another client whose lengths do not fit is reported malformed, never overrun.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "txn/redo_log.h"

namespace farmem::txn {
namespace {

// encode_log at the size the records need.
void encode(const std::vector<LogRecord>& records, TxnId id, std::string* log,
            std::vector<ImageWrite>* writes) {
  encode_log(records, encoded_log_bytes(records), id, log, writes);
}

std::vector<LogRecord> sample_records() {
  std::vector<LogRecord> records;
  records.push_back({GlobalAddress(1, 4096).pack(),
                     {GlobalAddress(1, 4104).pack(), GlobalAddress(2, 8200).pack()},
                     std::string("abcdefghijk", 11)});        // a slot image, padded to 16
  records.push_back({GlobalAddress(2, 640).pack(), {}, {}});  // a record only locked
  records.push_back({GlobalAddress(3, 64).pack(),
                     {GlobalAddress(3, 72).pack()},
                     std::string(8, '\x07')});  // a bucket's version word
  return records;
}

TEST(TxnRedoLog, EncodedLogReadsBackEntryByEntry) {
  const std::vector<LogRecord> records = sample_records();
  std::string log;
  std::vector<ImageWrite> writes;
  encode(records, TxnId{77, 5}, &log, &writes);
  EXPECT_EQ(log.size(), encoded_log_bytes(records));
  EXPECT_EQ(log.size(), sizeof(LogSlotHeader) + (16 + 16 + 16) + 16 + (16 + 8 + 8));

  LogCursor cursor(log);
  LogEntryView e;
  for (const LogRecord& r : records) {
    ASSERT_TRUE(cursor.next(&e));
    EXPECT_EQ(e.lock_word.pack(), r.lock_word);
    ASSERT_EQ(e.targets, r.targets.size());
    for (uint32_t t = 0; t < e.targets; ++t) EXPECT_EQ(e.target(t).pack(), r.targets[t]);
    EXPECT_EQ(std::string(e.image, e.image_bytes), r.image);
  }
  EXPECT_FALSE(cursor.next(&e));
  EXPECT_FALSE(cursor.malformed());

  // One write per target, in entry order, each pointing at its image inside the log.
  ASSERT_EQ(writes.size(), 3u);
  EXPECT_EQ(writes[0].addr, GlobalAddress(1, 4104));
  EXPECT_EQ(writes[1].addr, GlobalAddress(2, 8200));
  EXPECT_EQ(writes[2].addr, GlobalAddress(3, 72));
  EXPECT_EQ(std::string(writes[1].src, writes[1].bytes), records[0].image);
  EXPECT_EQ(std::string(writes[2].src, writes[2].bytes), records[2].image);
  EXPECT_GE(writes[0].src, log.data());
  EXPECT_LE(writes[2].src + writes[2].bytes, log.data() + log.size());
}

TEST(TxnRedoLog, HeaderIsCommittingAndChecksummedAtItsOffsets) {
  std::string log;
  std::vector<ImageWrite> writes;
  encode(sample_records(), TxnId{77, 5}, &log, &writes);
  LogSlotHeader h;
  std::memcpy(&h, log.data(), sizeof(h));
  EXPECT_EQ(h.owner_session, 0u);  // never written by a commit
  EXPECT_EQ(h.state, kLogCommitting);
  EXPECT_EQ(h.entries, 3u);
  EXPECT_EQ(h.body_bytes, log.size() - sizeof(LogSlotHeader));
  EXPECT_EQ(h.txn_coordinator, 77u);
  EXPECT_EQ(h.txn_sequence, 5u);
  EXPECT_EQ(h.checksum, log_checksum(log.data(), log.size()));
  uint64_t at_offset = 0;
  std::memcpy(&at_offset, log.data() + kLogChecksumOffset, sizeof(at_offset));
  EXPECT_EQ(at_offset, h.checksum);

  // The checksum covers every byte from kLogChecksummedFrom on, and none before.
  std::string changed = log;
  changed[kLogChecksummedFrom] ^= 1;
  EXPECT_NE(log_checksum(changed.data(), changed.size()), h.checksum);
  changed = log;
  changed.back() ^= 1;
  EXPECT_NE(log_checksum(changed.data(), changed.size()), h.checksum);
  changed = log;
  changed[kLogStateOffset] ^= 1;
  EXPECT_EQ(log_checksum(changed.data(), changed.size()), h.checksum);
}

TEST(TxnRedoLog, EntriesThatDoNotFitAreMalformed) {
  std::string log;
  std::vector<ImageWrite> writes;
  encode(sample_records(), TxnId{1, 1}, &log, &writes);
  LogEntryView e;

  std::string cut = log.substr(0, log.size() - 8);  // the last image cut short
  LogCursor short_log(cut);
  EXPECT_TRUE(short_log.next(&e));
  EXPECT_TRUE(short_log.next(&e));
  EXPECT_FALSE(short_log.next(&e));
  EXPECT_TRUE(short_log.malformed());

  std::string many = log;  // the first entry claims more targets than there are nodes
  const uint32_t targets = kMaxNodes + 1;
  std::memcpy(many.data() + sizeof(LogSlotHeader) + offsetof(LogEntryHeader, targets), &targets,
              sizeof(targets));
  LogCursor many_targets(many);
  EXPECT_FALSE(many_targets.next(&e));
  EXPECT_TRUE(many_targets.malformed());
  EXPECT_TRUE(log_touches(many, 42));  // a malformed log is treated as touching any node

  // Trailing bytes shorter than an entry header end the walk without an error.
  std::string padded = log + std::string(8, '\0');
  LogCursor tail(padded);
  int entries = 0;
  while (tail.next(&e)) ++entries;
  EXPECT_EQ(entries, 3);
  EXPECT_FALSE(tail.malformed());
}

TEST(TxnRedoLog, LogTouchesNodesOfItsLockWordsAndTargets) {
  std::string log;
  std::vector<ImageWrite> writes;
  encode(sample_records(), TxnId{1, 1}, &log, &writes);
  EXPECT_TRUE(log_touches(log, 1));  // lock word and target
  EXPECT_TRUE(log_touches(log, 2));  // a target, and a lock only held
  EXPECT_TRUE(log_touches(log, 3));
  EXPECT_FALSE(log_touches(log, 4));
}

}  // namespace
}  // namespace farmem::txn
