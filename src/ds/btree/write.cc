// BTree leaf writes: insert, update, put and erase of one key under its leaf's lock, with
// out-of-place values in KV blocks (btree.h, docs/formats/btree.md).
#include <fmt/format.h>

#include "farmem/ds/btree/btree.h"
#include "farmem/ds/common/durable.h"
#include "farmem/ds/common/kv_block.h"

namespace farmem::ds::btree {

using runtime::Task;

Task<Result<GlobalAddress>> BTree::new_page() {
  const uint16_t node = nodes_[next_node_++ % nodes_.size()];
  auto a = co_await heap_.allocate(node, page_bytes_);
  co_return a;
}

Task<Result<GlobalAddress>> BTree::write_block(GlobalAddress near, std::string_view key,
                                               std::string_view value, uint64_t* bytes) {
  const uint16_t node = near.is_null() ? nodes_[next_node_++ % nodes_.size()] : near.node();
  std::string image;
  encode_kv_block(key, value, client_->session_id(node), &image);
  *bytes = image.size();
  auto a = co_await heap_.allocate(node, image.size());
  FARMEM_CO_TRY(a);
  Status st = co_await durable_write(client_, *a, image.data(), image.size());
  FARMEM_CO_TRY(st);
  co_return a;
}

// ------------------------------------------------------------------------------------------
// Leaf operations

Task<Status> BTree::write_leaf(std::string_view key, std::string_view value, Mode mode) {
  FARMEM_CO_TRY(check_key(key));
  if (value.size() > kMaxValueBytes) {
    co_return InvalidArgument(
        fmt::format("value of {} bytes exceeds the {}-byte maximum", value.size(), kMaxValueBytes));
  }
  const bool oop = value.size() > inline_bytes_;
  GlobalAddress block;
  uint64_t block_bytes = 0;
  std::string entry;
  if (oop) {
    auto b = co_await write_block(GlobalAddress(), key, value, &block_bytes);
    FARMEM_CO_TRY(b);
    block = *b;
    entry = out_of_place_entry(key, block.pack(), static_cast<uint32_t>(value.size()));
  } else {
    entry = leaf_entry(key, value);
  }
  BufRef buf(this);
  GlobalAddress a;
  PageView v;
  Status st = co_await lock_covering(key, 0, buf.get(), &a, &v);
  if (!st.ok()) {
    if (oop) (void)co_await heap_.free(block, block_bytes);
    co_return st;
  }
  const uint32_t i = v.lower_bound(key);
  const bool exists = i < v.count() && v.key(i) == key;
  if ((exists && mode == Mode::kInsert) || (!exists && mode == Mode::kUpdate)) {
    Status us = co_await unlock_page(a);
    if (oop) (void)co_await heap_.free(block, block_bytes);
    FARMEM_CO_TRY(us);
    if (exists) co_return AlreadyExists("key present");
    co_return NotFound("key not present");
  }
  GlobalAddress old_block;
  uint64_t old_bytes = 0;
  if (exists && v.out_of_place(i)) {
    old_block = GlobalAddress::unpack(v.block(i));
    old_bytes = kv_block_bytes(key.size(), v.block_value_bytes(i));
  }
  PageDraft d = PageDraft::from(v);
  if (exists) {
    d.entries[i] = entry;
  } else {
    d.entries.insert(d.entries.begin() + i, entry);
  }
  st = co_await store(a, d);
  if (!st.ok()) {
    // The new entry may be in the page (a timed-out write): keep the block until the grace
    // period has passed rather than reuse it at once.
    if (oop) (void)co_await reclaimer_.retire(block, block_bytes);
    co_return st;
  }
  if (!old_block.is_null()) {
    Status rs = co_await reclaimer_.retire(old_block, old_bytes);
    (void)rs;
  }
  co_return OkStatus();
}

Task<Status> BTree::insert(std::string_view key, std::string_view value) {
  ++stats_.inserts;
  Status st = co_await write_leaf(key, value, Mode::kInsert);
  co_return st;
}

Task<Status> BTree::update(std::string_view key, std::string_view value) {
  ++stats_.updates;
  Status st = co_await write_leaf(key, value, Mode::kUpdate);
  co_return st;
}

Task<Status> BTree::put(std::string_view key, std::string_view value) {
  ++stats_.puts;
  Status st = co_await write_leaf(key, value, Mode::kPut);
  co_return st;
}

Task<Status> BTree::erase(std::string_view key) {
  FARMEM_CO_TRY(check_key(key));
  ++stats_.erases;
  BufRef buf(this);
  GlobalAddress a;
  PageView v;
  Status st = co_await lock_covering(key, 0, buf.get(), &a, &v);
  FARMEM_CO_TRY(st);
  const uint32_t i = v.lower_bound(key);
  if (i == v.count() || v.key(i) != key) {
    Status us = co_await unlock_page(a);
    FARMEM_CO_TRY(us);
    co_return NotFound("key not present");
  }
  GlobalAddress old_block;
  uint64_t old_bytes = 0;
  if (v.out_of_place(i)) {
    old_block = GlobalAddress::unpack(v.block(i));
    old_bytes = kv_block_bytes(key.size(), v.block_value_bytes(i));
  }
  PageDraft d = PageDraft::from(v);
  d.entries.erase(d.entries.begin() + i);
  const bool emptied = d.entries.empty() && !d.low_infinite;
  std::string low(d.low);
  st = co_await store(a, d);
  FARMEM_CO_TRY(st);
  if (!old_block.is_null()) {
    Status rs = co_await reclaimer_.retire(old_block, old_bytes);
    (void)rs;
  }
  if (emptied && options_.unlink_empty_leaves) {
    Status us = co_await unlink_leaf(a, std::move(low));
    (void)us;  // best effort: an empty leaf that stays linked is still a correct leaf
  }
  co_return OkStatus();
}

}  // namespace farmem::ds::btree
