// BTree: creation, opening and the read path (fetch, locate, get, scan). Page locks and
// write-back are in page_lock.cc, leaf writes in write.cc, splits in split.cc, unlinking in
// unlink.cc, the diagnostic walk in check.cc.
#include "farmem/ds/btree/btree.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>

#include "farmem/client/cluster.h"
#include "farmem/common/clock.h"
#include "farmem/ds/common/durable.h"
#include "farmem/ds/common/kv_block.h"
#include "farmem/ds/common/retry.h"

namespace farmem::ds::btree {

using client::Batch;
using runtime::Task;

namespace {

std::string root_name(const std::string& name) { return "btree/" + name; }

Status check_create_options(const BTreeOptions& o) {
  if (!valid_page_bytes(o.page_bytes)) {
    return InvalidArgument(
        fmt::format("page_bytes must be a power of two in {}..{}", kMinPageBytes, kMaxPageBytes));
  }
  if (o.inline_value_bytes > max_inline_value_bytes(o.page_bytes)) {
    return InvalidArgument(fmt::format("inline_value_bytes must be at most {} with {}-byte pages",
                                       max_inline_value_bytes(o.page_bytes), o.page_bytes));
  }
  return OkStatus();
}

}  // namespace

BTree::BTree(client::ThreadClient* client, BTreeOptions options, FarObject object,
             uint32_t page_bytes, uint32_t inline_bytes, uint64_t tree_id)
    : client_(client),
      options_(options),
      object_(std::move(object)),
      heap_(client, &object_, client->cluster().config().options.chunk_bytes),
      reclaimer_(
          client, &heap_,
          options.retire_grace_ms != 0
              ? options.retire_grace_ms * 1'000'000
              : Reclaimer::default_grace_ns(client->cluster().config().options.op_timeout_ms),
          options.max_retired),
      page_bytes_(page_bytes),
      inline_bytes_(inline_bytes),
      tree_id_(tree_id),
      cache_(page_bytes, tree_id, options.cache_bytes),
      locks_(&client->scheduler(), options.max_handovers) {
  for (const auto& n : client->cluster().nodes()) nodes_.push_back(n.node_id);
  std::sort(nodes_.begin(), nodes_.end());
  uint16_t max_id = nodes_.empty() ? 0 : nodes_.back();
  free_logs_.resize(size_t{max_id} + 1);
}

BTree::~BTree() = default;

const BTreeStats& BTree::stats() const {
  stats_.retired = reclaimer_.stats().retired;
  stats_.reclaimed = reclaimer_.stats().reclaimed;
  stats_.cache_hits = cache_.stats().hits;
  stats_.cache_misses = cache_.stats().misses;
  stats_.cache_invalidations = cache_.stats().invalidations;
  stats_.local_waits = locks_.waits();
  stats_.handovers = locks_.handovers();
  return stats_;
}

Status BTree::check_key(std::string_view key) const {
  if (key.empty()) return InvalidArgument("empty key");
  if (key.size() > kMaxKeyBytes) {
    return InvalidArgument(
        fmt::format("key of {} bytes exceeds the {}-byte maximum", key.size(), kMaxKeyBytes));
  }
  return OkStatus();
}

uint64_t BTree::lock_wait_ns() const {
  uint64_t ms = options_.lock_wait_ms;
  if (ms == 0) {
    ms = std::max<uint64_t>(10'000, 4ull * client_->cluster().config().options.op_timeout_ms);
  }
  return ms * 1'000'000;
}

// ------------------------------------------------------------------------------------------
// Creation, opening, destruction

Task<Result<std::unique_ptr<BTree>>> BTree::create(client::ThreadClient* c, std::string name,
                                                   BTreeOptions o) {
  if (name.empty()) co_return InvalidArgument("a B+tree needs a name");
  FARMEM_CO_TRY(check_create_options(o));
  auto object = co_await FarObject::create(c, root_name(name), o.temporary);
  if (!object.ok()) {
    if (object.status().code() == StatusCode::kAlreadyExists) {
      co_return AlreadyExists(fmt::format("a B+tree named '{}' already exists", name));
    }
    co_return object.status();
  }
  const uint64_t seed = now_ns() ^ cycles() ^ c->session_id(c->cluster().nodes()[0].node_id);
  uint64_t tree_id = XXH3_64bits_withSeed(name.data(), name.size(), seed) | 1;
  std::unique_ptr<BTree> t(
      new BTree(c, o, std::move(*object), o.page_bytes, o.inline_value_bytes, tree_id));
  Status st;
  auto root = co_await t->new_page();
  if (!root.ok()) st = root.status();
  if (st.ok()) {
    PageDraft d;
    d.tree_id = tree_id;
    BufRef img(t.get());
    d.encode(img.get(), t->page_bytes_);
    st = co_await durable_write(c, *root, img.get(), t->page_bytes_);
  }
  GlobalAddress meta;
  if (st.ok()) {
    auto m = co_await t->heap_.allocate(t->nodes_.front(), sizeof(TreeMeta));
    st = m.status();
    if (m.ok()) {
      meta = *m;
      TreeMeta tm{};
      tm.root = root->pack();
      tm.magic = kMetaMagic;
      tm.version = kLayoutVersion;
      tm.page_bytes = o.page_bytes;
      tm.inline_value_bytes = o.inline_value_bytes;
      tm.tree_id = tree_id;
      st = co_await durable_write(c, meta, &tm, sizeof(tm));
    }
  }
  if (st.ok()) st = co_await t->object_.commit(c, meta);
  if (!st.ok()) {
    (void)co_await t->object_.destroy(c);  // nothing of a failed create stays behind
    co_return st;
  }
  t->meta_ = meta;
  t->root_ = *root;
  t->root_level_ = 0;
  co_return t;
}

Task<Result<std::unique_ptr<BTree>>> BTree::open(client::ThreadClient* c, std::string name,
                                                 BTreeOptions o) {
  auto root = co_await c->lookup_root(root_name(name));
  if (!root.ok()) {
    if (root.status().code() == StatusCode::kNotFound) {
      co_return NotFound(fmt::format("no B+tree named '{}'", name));
    }
    co_return root.status();
  }
  TreeMeta m{};
  Status rs = co_await c->read(*root, &m, sizeof(m));
  FARMEM_CO_TRY(rs);
  if (m.magic != kMetaMagic) {
    co_return InvalidArgument(fmt::format("root '{}' does not point to a B+tree", root_name(name)));
  }
  BTreeOptions check = o;
  check.page_bytes = m.page_bytes;
  check.inline_value_bytes = m.inline_value_bytes;
  if (m.version != kLayoutVersion || !check_create_options(check).ok()) {
    co_return InvalidArgument(fmt::format(
        "B+tree '{}' has layout version {} with {}-byte pages; this client reads version {}", name,
        m.version, m.page_bytes, kLayoutVersion));
  }
  auto object = co_await FarObject::open(c, root_name(name));
  FARMEM_CO_TRY(object);
  std::unique_ptr<BTree> t(
      new BTree(c, o, std::move(*object), m.page_bytes, m.inline_value_bytes, m.tree_id));
  t->meta_ = *root;
  OpContext op;
  Status st = co_await t->refresh_root(op);
  FARMEM_CO_TRY(st);
  co_return t;
}

Task<Status> BTree::destroy() {
  cache_.clear();
  Status s = co_await object_.destroy(client_);
  co_return s;
}

Task<Status> BTree::destroy(client::ThreadClient* c, std::string name) {
  Status s = co_await FarObject::destroy_named(c, root_name(name),
                                               fmt::format("no B+tree named '{}'", name));
  co_return s;
}

Task<void> BTree::reclaim(bool wait_for_all) { co_await reclaimer_.reclaim(wait_for_all); }

// ------------------------------------------------------------------------------------------
// Reading pages

Task<Status> BTree::read_page(OpContext& op, GlobalAddress a, char* buf) {
  ++op.round_trips;
  ++stats_.page_reads;
  Status st = co_await client_->read(a, buf, page_bytes_);
  co_return st;
}

Task<Status> BTree::refresh_root(OpContext& op) {
  uint64_t root = 0;
  Status st = co_await client_->read(meta_, &root, 8);
  FARMEM_CO_TRY(st);
  BufRef buf(this);
  PageView v;
  bool foreign = false;
  st = co_await fetch(op, GlobalAddress::unpack(root), buf.get(), &v, &foreign);
  FARMEM_CO_TRY(st);
  if (foreign) co_return Internal("the B+tree's root page is not a live page of the tree");
  // Another coroutine may have seen a newer root meanwhile: keep the higher one.
  if (root_.is_null() || v.level() >= root_level_) {
    root_ = GlobalAddress::unpack(root);
    root_level_ = v.level();
  }
  co_return OkStatus();
}

Task<Status> BTree::fetch(OpContext& op, GlobalAddress a, char* buf, PageView* v, bool* foreign,
                          bool locked) {
  *foreign = false;
  runtime::Backoff backoff(client_->backoff_policy(), client_->scheduler());
  uint64_t torn_since = 0;
  for (uint32_t attempt = 0;; ++attempt) {
    Status st = co_await read_page(op, a, buf);
    FARMEM_CO_TRY(st);
    const PageView::Check c = v->parse(buf, page_bytes_, tree_id_);
    // A whole page whose redo word is set is mid-write. With its lock held, its writer is dead:
    // repair it first. A reader on a durable node waits for it like a torn page (or repairs it
    // once its writer is dead), so that no one answers from the page a crash's redo replaces.
    const bool mid_write = c == PageView::Check::kWhole && v->header().redo != 0 &&
                           (locked || node_durable(client_, a.node()));
    if (mid_write && locked) {
      FARMEM_CO_TRY(co_await repair(a));
      continue;
    }
    if (c == PageView::Check::kWhole && !mid_write) {
      *foreign = v->dead();
      co_return OkStatus();
    }
    if (c == PageView::Check::kForeign) {
      *foreign = true;
      co_return OkStatus();
    }
    ++stats_.torn_reads;
    if (locked && attempt >= 3) {
      co_return Internal(fmt::format("B+tree page {}:{:#x} is torn although we hold its lock",
                                     a.node(), a.offset()));
    }
    if (attempt >= options_.max_attempts) {
      co_return RetriesExhausted("B+tree page read (the page stayed torn)", attempt);
    }
    const uint64_t now = now_ns();
    if (torn_since == 0) torn_since = now;
    if (now - torn_since >= options_.lease_check_ms * 1'000'000) {
      // Torn for long: its writer may have died mid-write. With the lock (a live holder makes
      // this wait, kTimedOut past lock_wait_ms) the page is repaired from the redo copy if it
      // has one: taking a dead session's lock over does it, and so does a redo word under a
      // free lock (a durable node does not persist lock words).
      Status ls = co_await lock_page(a);
      FARMEM_CO_TRY(ls);
      Status rs = co_await repair(a);
      Status us = co_await unlock_page(a);
      FARMEM_CO_TRY(rs);
      FARMEM_CO_TRY(us);
      torn_since = now_ns();
      continue;
    }
    co_await backoff.retry();
  }
}

Task<Status> BTree::locate(OpContext& op, std::string_view key, uint32_t level, char* buf,
                           GlobalAddress* addr, PageView* v) {
  GlobalAddress a;
  Via via = Via::kRoot;
  if (level == 0) {
    a = cache_.leaf_for(key);
    if (!a.is_null()) via = Via::kHint;
  }
  if (a.is_null()) {
    if (root_.is_null()) FARMEM_CO_TRY(co_await refresh_root(op));
    a = root_;
  }
  bool refreshed = false;
  for (uint32_t steps = 0; steps < options_.max_attempts; ++steps) {
    bool foreign = false;
    Status st = co_await fetch(op, a, buf, v, &foreign);
    FARMEM_CO_TRY(st);
    if (foreign || v->below(key)) {
      // A stale pointer (the cache, or a page unlinked since its parent was read): start over
      // from the root, which is never unlinked.
      ++stats_.restarts;
      if (via == Via::kHint) cache_.invalidate(key);
      via = Via::kRoot;
      a = root_;
      continue;
    }
    if (v->beyond(key)) {
      ++stats_.sibling_hops;
      if (via == Via::kHint) cache_.invalidate(key);  // its parent missed a split: re-read it
      if (v->sibling() == 0) co_return Internal("B+tree page with a high fence but no sibling");
      a = GlobalAddress::unpack(v->sibling());
      continue;
    }
    if (v->level() == level) {
      *addr = a;
      co_return OkStatus();
    }
    if (v->level() < level) {
      // Started below the level wanted: the cached root is stale, or the tree is lower.
      if (!refreshed) {
        refreshed = true;
        FARMEM_CO_TRY(co_await refresh_root(op));
        if (root_level_ >= level) {
          a = root_;
          via = Via::kRoot;
          continue;
        }
      }
      co_return NotFound("the B+tree is lower than the level asked for");
    }
    if (v->level() == 1) cache_.insert(a, buf);
    a = GlobalAddress::unpack(v->child_for(key));
    via = Via::kRoot;
  }
  co_return RetriesExhausted("B+tree descent (pages kept moving)", options_.max_attempts);
}

Task<Status> BTree::read_value(OpContext& op, const PageView& v, uint32_t i, std::string* value) {
  if (!v.out_of_place(i)) {
    value->assign(v.inline_value(i));
    co_return OkStatus();
  }
  const std::string_view key = v.key(i);
  std::string buf(kv_block_bytes(key.size(), v.block_value_bytes(i)), '\0');
  ++stats_.block_reads;
  ++op.round_trips;
  Status st = co_await client_->read(GlobalAddress::unpack(v.block(i)), buf.data(), buf.size());
  FARMEM_CO_TRY(st);
  KvBlockView b;
  size_t need = 0;
  if (check_kv_block(buf.data(), buf.size(), kMaxKeyBytes, kMaxValueBytes, &b, &need) !=
          BlockCheck::kOk ||
      b.key != key) {
    // The leaf changed and the block was reclaimed after its grace period: read again.
    co_return Unavailable("stale value block");
  }
  value->assign(b.value);
  co_return OkStatus();
}

// ------------------------------------------------------------------------------------------
// Operations: get, scan

Task<Result<bool>> BTree::get(std::string_view key, std::string* value) {
  FARMEM_CO_TRY(check_key(key));
  ++stats_.gets;
  BufRef buf(this);
  OpContext op;  // this get's own round trips (coroutines of the handle interleave)
  Result<bool> result = false;
  for (uint32_t attempt = 0;; ++attempt) {
    GlobalAddress a;
    PageView v;
    Status st;
    // The common case without the coroutines of locate and fetch: the index cache names the
    // leaf, and its image is whole and covers key. Anything else (no hint, a torn, moved or
    // dead page) goes through locate, which reads the page again and handles every case.
    bool located = false;
    if (attempt == 0) {
      a = cache_.leaf_for(key);
      if (!a.is_null()) {
        ++op.round_trips;
        ++stats_.page_reads;
        st = co_await client_->read(a, buf.get(), page_bytes_);
        if (!st.ok()) {
          result = st;
          break;
        }
        const PageView::Check c = v.parse(buf.get(), page_bytes_, tree_id_);
        if (c == PageView::Check::kTorn) ++stats_.torn_reads;
        located = c == PageView::Check::kWhole && !v.dead() && v.leaf() && !v.below(key) &&
                  !v.beyond(key);
      }
    }
    if (!located) {
      st = co_await locate(op, key, 0, buf.get(), &a, &v);
      if (!st.ok()) {
        result = st;
        break;
      }
    }
    const uint32_t i = v.lower_bound(key);
    if (i == v.count() || v.key(i) != key) {
      result = false;
      break;
    }
    if (!v.out_of_place(i)) {  // inline: no coroutine for read_value
      value->assign(v.inline_value(i));
      result = true;
      break;
    }
    st = co_await read_value(op, v, i, value);
    if (st.code() == StatusCode::kUnavailable && attempt < options_.max_attempts) continue;
    result = st.ok() ? Result<bool>(true) : Result<bool>(st);
    break;
  }
  stats_.get_page_reads += op.round_trips;
  co_return result;
}

Task<Status> BTree::scan(std::string_view from, std::string_view to, size_t limit,
                         std::vector<std::pair<std::string, std::string>>* out) {
  out->clear();
  if (!from.empty()) FARMEM_CO_TRY(check_key(from));
  ++stats_.scans;
  OpContext op;
  std::string next(from);  // every key < next has been dealt with
  bool done = false;
  Status st = co_await served_scan(op, &next, to, limit, out, &done);
  FARMEM_CO_TRY(st);
  if (done) co_return OkStatus();
  st = co_await scan_one_sided(op, std::move(next), to, limit, out);
  co_return st;
}

Task<Status> BTree::scan_one_sided(OpContext& op, std::string next, std::string_view to,
                                   size_t limit,
                                   std::vector<std::pair<std::string, std::string>>* out) {
  if (!to.empty() && next >= to) co_return OkStatus();
  if (limit != 0 && out->size() >= limit) co_return OkStatus();
  BufRef buf(this);
  GlobalAddress a;
  PageView v;
  Status st = co_await locate(op, next, 0, buf.get(), &a, &v);
  FARMEM_CO_TRY(st);
  for (;;) {
    // v covers next: take its keys >= next, then move on to its high fence.
    for (uint32_t i = next.empty() ? 0 : v.lower_bound(next); i < v.count(); ++i) {
      const std::string_view k = v.key(i);
      if (!to.empty() && k >= to) co_return OkStatus();
      if (limit != 0 && out->size() >= limit) co_return OkStatus();
      std::string value;
      st = co_await read_value(op, v, i, &value);
      if (st.code() == StatusCode::kUnavailable) {
        next.assign(k);  // re-read this page (below) and go on from this key
        break;
      }
      FARMEM_CO_TRY(st);
      out->emplace_back(std::string(k), std::move(value));
      ++stats_.scan_records;
    }
    if (st.code() == StatusCode::kUnavailable) {
      st = OkStatus();  // a value changed under us: next is the first key not yet returned
    } else {
      if (v.high_infinite()) co_return OkStatus();
      if (limit != 0 && out->size() >= limit) co_return OkStatus();
      next.assign(v.high());
      if (!to.empty() && next >= to) co_return OkStatus();
      // The sibling covers [high, ...) unless it changed since: checked below.
      a = GlobalAddress::unpack(v.sibling());
      bool foreign = false;
      st = co_await fetch(op, a, buf.get(), &v, &foreign);
      FARMEM_CO_TRY(st);
      if (!foreign && !v.below(next) && !v.beyond(next) && v.leaf()) continue;
      ++stats_.restarts;
    }
    st = co_await locate(op, next, 0, buf.get(), &a, &v);
    FARMEM_CO_TRY(st);
  }
}

}  // namespace farmem::ds::btree
