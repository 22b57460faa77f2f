// ServerPool (server_pool.h) on a durable node: marking changes, the header, recovery.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "farmem/common/check.h"
#include "record.h"
#include "server_pool.h"

namespace farmem::kv::service {

namespace w = farmem::kv::wire;

void ServerPool::make_durable(DirtyRanges* dirty, bool temporary) {
  dirty_ = dirty;
  temporary_ = temporary;
  index_.set_dirty(dirty, [this] { follow_table(); });
}

void ServerPool::write_record_marked(uint64_t rec, uint64_t version, std::string_view key,
                                     const void* value, uint32_t value_bytes) {
  write_record(region_.at(rec), version, key, value, value_bytes);
  mark(rec, record_bytes(key.size(), value_bytes));
}

void ServerPool::store_state_marked(uint64_t rec, uint64_t state) {
  store_state(region_.at(rec), state);
  mark(rec, sizeof(uint64_t));
}

Status ServerPool::write_header() {
  if (dirty_ == nullptr) return OkStatus();
  PoolMeta m;
  m.name = name_;
  m.object_id = object_id_;
  m.capacity_bytes = allocator_.capacity_bytes();
  m.table_offset = index_.table_offset();
  m.table_slots = index_.slots();
  m.sequence = header_sequence_ + 1;
  m.flags = (secondary_ ? kPoolHeaderIndex : 0u) | (temporary_ ? kPoolHeaderTemporary : 0u);
  m.ado = ado_;
  FARMEM_ASSIGN_OR_RETURN(const uint64_t bytes, write_pool_header(region_.at(header_), m));
  header_sequence_ = m.sequence;
  header_table_ = m.table_offset;
  mark(header_, bytes);
  return OkStatus();
}

void ServerPool::rewrite_header() {
  const Status s = write_header();
  FARMEM_ASSERT(s.ok(), "a durable pool's checked settings fit its header");
}

void ServerPool::follow_table() {
  if (dirty_ != nullptr && index_.table_offset() != header_table_) rewrite_header();
}

Status ServerPool::set_ado(AdoSettings settings) {
  std::swap(ado_, settings);
  Status s = write_header();
  if (!s.ok()) std::swap(ado_, settings);
  return s;
}

bool ServerPool::keep_on_recovery(const IndexBucket& b, uint64_t* max_version,
                                  std::vector<PoolAllocator::Live>* lives) {
  const uint8_t* h = region_.ptr(b.record, sizeof(w::KvRecordHeader));
  if (h == nullptr || b.record % w::kRecordAlign != 0) return false;
  w::KvRecordHeader hdr;
  std::memcpy(&hdr, h, sizeof(hdr));
  if (hdr.version == 0 || hdr.version > w::kMaxRecordVersion || hdr.key_bytes == 0 ||
      hdr.key_bytes > w::kMaxKeyBytes || hdr.value_bytes > w::kMaxValueBytes ||
      region_.ptr(b.record, record_alloc_bytes(hdr.key_bytes, hdr.value_bytes)) == nullptr) {
    return false;
  }
  const std::string_view key = index_.key_of(b.record);
  if (HopscotchIndex::hash_key(key) != b.hash) return false;
  uint8_t* r = region_.at(b.record);
  if (state_kind(load_state(r)) == w::kRecordLocked) {
    // A writer's lock died with the node: its value is published as it is (as at a session end).
    seal(r, hdr.version, hdr.key_bytes, hdr.value_bytes);
  } else {
    // Whatever its state word says (a torn log can leave `writing` or `dead` on the record the
    // index names), the record is the key's value if it is whole.
    const uint64_t sum = record_checksum(hdr.version, hdr.key_bytes, hdr.value_bytes, key.data(),
                                         r + sizeof(hdr) + hdr.key_bytes);
    if (sum != hdr.checksum) return false;
  }
  const uint64_t live = w::record_state(hdr.version, w::kRecordLive);
  if (load_state(r) != live) {
    store_state_marked(b.record, live);
    mark(b.record, record_bytes(hdr.key_bytes, hdr.value_bytes));
  }
  *max_version = std::max(*max_version, hdr.version);
  lives->push_back({b.record, record_alloc_bytes(hdr.key_bytes, hdr.value_bytes)});
  return true;
}

namespace {

// Whether [offset, offset + bytes) lies inside one of `blocks` (sorted by offset).
bool inside(const std::vector<MemorySource::Block>& blocks, uint64_t offset, uint64_t bytes) {
  auto it = std::upper_bound(blocks.begin(), blocks.end(), offset,
                             [](uint64_t o, const MemorySource::Block& b) { return o < b.offset; });
  if (it == blocks.begin()) return false;
  --it;
  return offset + bytes <= it->offset + it->bytes;
}

}  // namespace

Result<ServerPool::Recovered> ServerPool::recover(const PoolMeta& meta, uint64_t header,
                                                  MemorySource::Block undo,
                                                  std::vector<MemorySource::Block> blocks) {
  FARMEM_ASSERT(dirty_ != nullptr, "only a durable pool recovers");
  header_ = header;
  header_sequence_ = meta.sequence;
  ado_ = meta.ado;
  std::erase_if(blocks, [&](const MemorySource::Block& b) {
    return b.offset == header || (undo.bytes != 0 && b.offset == undo.offset);
  });
  std::sort(blocks.begin(), blocks.end(),
            [](const auto& a, const auto& b) { return a.offset < b.offset; });
  if (undo.bytes != 0) {
    // An invocation the node died in: its values get their old bytes back (only inside the
    // pool's own blocks), before the records are checked and resealed below.
    undo_ = undo.offset;
    undo_bytes_ = undo.bytes;
    (void)roll_back_undo(
        0, [&](uint64_t offset, uint64_t bytes) { return inside(blocks, offset, bytes); });
  }
  FARMEM_TRY(index_.adopt(meta.table_offset, meta.table_slots));
  if (!inside(blocks, meta.table_offset, meta.table_slots * sizeof(IndexBucket))) {
    return Internal(fmt::format("pool '{}': its index lies outside its memory", name_));
  }
  header_table_ = meta.table_offset;
  Recovered out;
  std::vector<PoolAllocator::Live> lives;
  lives.push_back({index_.table_offset(), index_.slots() * sizeof(IndexBucket)});
  out.dropped = index_.repair([&](const IndexBucket& b, uint64_t) {
    return inside(blocks, b.record, sizeof(w::KvRecordHeader)) &&
           keep_on_recovery(b, &out.max_version, &lives);
  });
  std::vector<PoolAllocator::Live> refused = allocator_.rebuild(std::move(blocks), lives);
  if (!refused.empty()) {
    // Overlapping records (only a client writing where it should not makes them): drop them.
    auto by_offset = [](const auto& a, const auto& c) { return a.offset < c.offset; };
    std::sort(refused.begin(), refused.end(), by_offset);
    auto is_refused = [&](uint64_t offset) {
      return std::binary_search(refused.begin(), refused.end(), PoolAllocator::Live{offset, 0},
                                by_offset);
    };
    if (is_refused(index_.table_offset())) {
      return Internal(fmt::format("pool '{}': its index overlaps its records", name_));
    }
    out.dropped +=
        index_.repair([&](const IndexBucket& b, uint64_t) { return !is_refused(b.record); });
  }
  if ((meta.flags & kPoolHeaderIndex) != 0) add_index();
  out.keys = index_.size();
  refresh_summary();
  return out;
}

}  // namespace farmem::kv::service
