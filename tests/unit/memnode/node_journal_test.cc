// Unit tests for memnode::NodeJournal: a snapshot of the node's tables, applied to a fresh
// node, gives the same tables, and replayed records rebuild them as the handlers left them.
#include "farmem/memnode/node_journal.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>

#include "farmem/fabric/wire.h"

namespace farmem::memnode {
namespace {

namespace w = farmem::wire;

struct Tables {
  std::map<uint64_t, std::tuple<std::string, uint64_t, bool>> objects;
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> heap;  // offset -> (bytes, owner)
  std::map<std::string, std::pair<uint64_t, uint64_t>> roots;
  bool operator==(const Tables&) const = default;
};

Tables tables_of(NodeState& n) {
  Tables t;
  n.objects.for_each([&](const ObjectTable::Object& o) {
    t.objects[o.id] = {o.name, o.session, o.pinned};
  });
  n.heap.for_each([&](uint64_t off, uint64_t bytes, uint64_t owner) {
    t.heap[off] = {bytes, owner};
  });
  n.roots.for_each([&](const std::string& name, uint64_t a, uint64_t owner) {
    t.roots[name] = {a, owner};
  });
  return t;
}

ServerConfig config() {
  ServerConfig c;
  c.capacity_bytes = 1 << 20;
  return c;
}

// Applies `record` through the journal's owner interface, as recovery does.
void replay(NodeJournal& j, const std::string& record) {
  Status s = j.apply(record);
  ASSERT_TRUE(s.ok()) << s.to_string();
}

TEST(NodeJournalTest, RecordsRebuildTheTablesAndASnapshotCopiesThem) {
  NodeState a(config(), w::kRegionHeaderBytes);
  NodeJournal ja(a);
  const uint64_t obj = w::kObjectOwnerBit | 1;
  const uint64_t eph = w::kObjectOwnerBit | 2;
  replay(ja, encode_record(NodeRecordKind::kObjectCreate, obj, 0, 0, "table"));
  replay(ja, encode_record(NodeRecordKind::kObjectCreate, eph, 7, 0, "tmp"));
  replay(ja, encode_record(NodeRecordKind::kObjectCreate, w::kObjectOwnerBit | 3, 0, 0, "pool",
                           kNodeRecordPinned));
  replay(ja, encode_record(NodeRecordKind::kAlloc, 8192, 4096, obj));
  replay(ja, encode_record(NodeRecordKind::kAlloc, 16384, 64, 7));  // session 7's
  replay(ja, encode_record(NodeRecordKind::kAlloc, 16448, 64, 9));  // session 9's
  replay(ja, encode_record(NodeRecordKind::kAlloc, 32768, 1024, eph));
  replay(ja, encode_record(NodeRecordKind::kRootPublish, 8192, obj, 0, "table.root"));
  replay(ja, encode_record(NodeRecordKind::kRootPublish, 99, 0, 0, "loose"));
  replay(ja, encode_record(NodeRecordKind::kRootPublish, 100, 0, 0, "loose"));  // replaces
  replay(ja, encode_record(NodeRecordKind::kReleaseOwner, 9));
  EXPECT_EQ(a.heap.live_allocations(), 3u);
  EXPECT_EQ(*a.roots.lookup("loose"), 100u);

  NodeState b(config(), w::kRegionHeaderBytes);
  NodeJournal jb(b);
  const std::string snapshot = ja.snapshot([] {});
  ASSERT_TRUE(jb.load_snapshot(snapshot).ok());
  EXPECT_EQ(tables_of(b), tables_of(a));
  EXPECT_TRUE(b.objects.find(w::kObjectOwnerBit | 3)->pinned);
  // Ids go on after the highest one seen.
  auto next = b.objects.create("next", 0);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->id, w::kObjectOwnerBit | 4);

  // A restart releases what every session owned, ephemeral objects included.
  replay(jb, encode_record(NodeRecordKind::kRestart, 0));
  EXPECT_EQ(b.heap.live_allocations(), 1u);
  EXPECT_EQ(b.objects.find(eph).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(b.heap.owner_of(8192), obj);
  replay(jb, encode_record(NodeRecordKind::kObjectDestroy, obj));
  EXPECT_EQ(b.heap.live_allocations(), 0u);
  EXPECT_EQ(b.roots.lookup("table.root").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(b.heap.used_bytes(), w::kRegionHeaderBytes);
}

TEST(NodeJournalTest, ARecordThatDoesNotApplyIsAnInternalError) {
  NodeState a(config(), w::kRegionHeaderBytes);
  NodeJournal ja(a);
  replay(ja, encode_record(NodeRecordKind::kAlloc, 8192, 4096, 5));
  EXPECT_EQ(ja.apply(encode_record(NodeRecordKind::kAlloc, 8192, 4096, 5)).code(),
            StatusCode::kInternal);
  EXPECT_EQ(ja.apply(encode_record(NodeRecordKind::kFree, 65536)).code(), StatusCode::kInternal);
  std::string truncated = encode_record(NodeRecordKind::kRootRemove, 0, 0, 0, "name");
  truncated.pop_back();
  EXPECT_EQ(ja.apply(truncated).code(), StatusCode::kInternal);
  std::string unknown = encode_record(NodeRecordKind::kFree, 0);
  unknown[0] = 77;
  EXPECT_EQ(ja.apply(unknown).code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace farmem::memnode
