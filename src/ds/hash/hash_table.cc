#include "farmem/ds/hash/hash_table.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "farmem/client/cluster.h"
#include "farmem/common/clock.h"

namespace farmem::ds::hash {

using client::Batch;
using runtime::Task;

KeyHash hash_key(std::string_view key) {
  XXH128_hash_t h = XXH3_128bits(key.data(), key.size());
  return KeyHash{h.low64, h.high64};
}

uint64_t block_checksum(const void* p, size_t bytes) { return XXH3_64bits(p, bytes); }

namespace {

uint64_t mask(uint32_t depth) { return depth >= 64 ? ~0ull : (1ull << depth) - 1; }

std::string root_name(const std::string& name) { return "hash/" + name; }

uint32_t len_units(uint64_t bytes) {
  uint64_t units = bytes / kBlockUnit;
  return units <= kMaxInlineUnits ? static_cast<uint32_t>(units) : 0;
}

// A subtable with every bucket header set to {depth, suffix} and every slot empty.
std::string subtable_image(uint32_t main_log2, uint32_t depth, uint32_t suffix) {
  std::string image(subtable_bytes(main_log2), '\0');
  SubtableHeader sh{};
  sh.local_depth = depth;
  sh.suffix = suffix;
  std::memcpy(image.data(), &sh, sizeof(sh));
  Bucket bk{};
  bk.local_depth = depth;
  bk.suffix = suffix;
  for (uint64_t b = 0; b < subtable_buckets(main_log2); ++b) {
    std::memcpy(image.data() + sizeof(SubtableHeader) + b * kBucketBytes, &bk, sizeof(bk));
  }
  return image;
}

}  // namespace

HashTable::HashTable(client::ThreadClient* client, HashTableOptions options)
    : client_(client), options_(options) {
  check_interval_cycles_ = static_cast<uint64_t>(static_cast<double>(grace_ns() / 4) *
                                                 cycles_per_ns());
  // Distinct per handle and process: only ever compared for "is it zero".
  split_token_ = (now_ns() << 16) ^ reinterpret_cast<uintptr_t>(this) ^ 1;
  if (split_token_ == 0) split_token_ = 1;
}

Status HashTable::check_sizes(std::string_view key, std::string_view value) const {
  if (key.empty()) return InvalidArgument("empty key");
  if (key.size() > kMaxKeyBytes) {
    return InvalidArgument(fmt::format("key of {} bytes exceeds the {}-byte maximum", key.size(),
                                       kMaxKeyBytes));
  }
  if (value.size() > kMaxValueBytes) {
    return InvalidArgument(fmt::format("value of {} bytes exceeds the {}-byte maximum",
                                       value.size(), kMaxValueBytes));
  }
  return OkStatus();
}

// ------------------------------------------------------------------------------------------
// Creation and opening

Task<Result<std::unique_ptr<HashTable>>> HashTable::create(client::ThreadClient* c,
                                                           std::string name,
                                                           HashTableOptions o) {
  if (name.empty()) co_return InvalidArgument("a hash table needs a name");
  if (o.main_buckets_log2 < 2 || o.main_buckets_log2 > 24) {
    co_return InvalidArgument("main_buckets_log2 must be 2..24");
  }
  if (o.initial_depth > kMaxDepth) {
    co_return InvalidArgument(fmt::format("initial_depth must be 0..{}", kMaxDepth));
  }
  if (o.max_depth < o.initial_depth || o.max_depth > kMaxDepth) {
    co_return InvalidArgument(
        fmt::format("max_depth must be initial_depth ({})..{}", o.initial_depth, kMaxDepth));
  }
  if (o.spec_cache_log2 > 30) co_return InvalidArgument("spec_cache_log2 must be 0..30");
  std::unique_ptr<HashTable> t(new HashTable(c, o));
  t->main_buckets_log2_ = o.main_buckets_log2;
  t->max_depth_ = o.max_depth;
  std::vector<uint16_t> ids;
  for (const auto& n : c->cluster().nodes()) ids.push_back(n.node_id);
  std::sort(ids.begin(), ids.end());

  const uint64_t sub_bytes = subtable_bytes(o.main_buckets_log2);
  const uint64_t nsub = 1ull << o.initial_depth;
  for (uint16_t node : ids) {
    Shard s;
    s.node = node;
    s.global_depth = o.initial_depth;
    for (uint64_t i = 0; i < nsub; ++i) {
      auto sub = co_await c->allocate_on(node, sub_bytes, 4096);
      if (!sub.ok()) co_return sub.status();
      std::string image =
          subtable_image(o.main_buckets_log2, o.initial_depth, static_cast<uint32_t>(i));
      Status ws = co_await c->write(*sub, image.data(), image.size());
      if (!ws.ok()) co_return ws;
      s.entries.push_back(dir_entry(sub->offset(), o.initial_depth));
    }
    std::string dir(sizeof(DirectoryHeader) + (8ull << kMaxDepth), '\0');
    DirectoryHeader dh{};
    dh.global_depth = o.initial_depth;
    std::memcpy(dir.data(), &dh, sizeof(dh));
    std::memcpy(dir.data() + sizeof(dh), s.entries.data(), 8 * s.entries.size());
    auto d = co_await c->allocate_on(node, dir.size(), 4096);
    if (!d.ok()) co_return d.status();
    Status ds = co_await c->write(*d, dir.data(), dir.size());
    if (!ds.ok()) co_return ds;
    s.directory = *d;
    s.checked_cycles = cycles();
    t->shards_.push_back(std::move(s));
  }
  std::string meta(sizeof(TableMeta) + 8 * t->shards_.size(), '\0');
  TableMeta m{};
  m.magic = kTableMagic;
  m.version = kLayoutVersion;
  m.shards = static_cast<uint32_t>(t->shards_.size());
  m.main_buckets_log2 = o.main_buckets_log2;
  m.initial_depth = o.initial_depth;
  m.max_depth = o.max_depth;
  std::memcpy(meta.data(), &m, sizeof(m));
  for (size_t i = 0; i < t->shards_.size(); ++i) {
    uint64_t a = t->shards_[i].directory.pack();
    std::memcpy(meta.data() + sizeof(m) + 8 * i, &a, 8);
  }
  auto ma = co_await c->allocate(meta.size(), t->shards_.front().node);
  if (!ma.ok()) co_return ma.status();
  Status mw = co_await c->write(*ma, meta.data(), meta.size());
  if (!mw.ok()) co_return mw;
  Status pub = co_await c->publish_root(root_name(name), *ma);
  if (!pub.ok()) {
    if (pub.code() == StatusCode::kAlreadyExists) {
      co_return AlreadyExists(fmt::format("a hash table named '{}' already exists", name));
    }
    co_return pub;
  }
  t->spec_.resize(o.speculative_lookup ? (size_t{1} << o.spec_cache_log2) : 0);
  co_return t;
}

Task<Result<std::unique_ptr<HashTable>>> HashTable::open(client::ThreadClient* c, std::string name,
                                                         HashTableOptions o) {
  if (o.spec_cache_log2 > 30) co_return InvalidArgument("spec_cache_log2 must be 0..30");
  auto root = co_await c->lookup_root(root_name(name));
  if (!root.ok()) {
    if (root.status().code() == StatusCode::kNotFound) {
      co_return NotFound(fmt::format("no hash table named '{}'", name));
    }
    co_return root.status();
  }
  TableMeta m{};
  Status rs = co_await c->read(*root, &m, sizeof(m));
  if (!rs.ok()) co_return rs;
  if (m.magic != kTableMagic) {
    co_return InvalidArgument(
        fmt::format("root '{}' does not point to a hash table", root_name(name)));
  }
  if (m.version != kLayoutVersion || m.shards == 0 || m.shards > 65536 ||
      m.main_buckets_log2 < 2 || m.main_buckets_log2 > 24 || m.max_depth > kMaxDepth) {
    co_return InvalidArgument(fmt::format(
        "hash table '{}' has layout version {} with {} shards; this client reads version {}", name,
        m.version, m.shards, kLayoutVersion));
  }
  std::unique_ptr<HashTable> t(new HashTable(c, o));
  t->main_buckets_log2_ = m.main_buckets_log2;
  t->max_depth_ = m.max_depth;
  std::vector<uint64_t> dirs(m.shards);
  rs = co_await c->read(*root + sizeof(m), dirs.data(), 8 * dirs.size());
  if (!rs.ok()) co_return rs;
  for (uint64_t d : dirs) {
    Shard s;
    s.directory = GlobalAddress::unpack(d);
    s.node = s.directory.node();
    Status fs = co_await t->refresh_directory(s);
    if (!fs.ok()) co_return fs;
    t->shards_.push_back(std::move(s));
  }
  t->spec_.resize(o.speculative_lookup ? (size_t{1} << o.spec_cache_log2) : 0);
  co_return t;
}

Task<Status> HashTable::refresh_directory(Shard& s, uint32_t* rtt) {
  DirectoryHeader h{};
  const uint64_t started = cycles();
  Status st = co_await client_->read(s.directory, &h, sizeof(h));
  if (rtt != nullptr) ++*rtt;
  ++stats_.directory_reads;
  if (!st.ok()) co_return st;
  uint32_t depth = directory_depth(h.global_depth);
  if (depth > kMaxDepth) co_return ProtocolError("hash table directory is corrupt (depth)");
  std::vector<uint64_t> entries(size_t{1} << depth);
  st = co_await client_->read(s.directory + sizeof(h), entries.data(), 8 * entries.size());
  if (rtt != nullptr) ++*rtt;
  if (!st.ok()) co_return st;
  for (uint64_t e : entries) {
    if (dir_entry_offset(e) == 0) co_return ProtocolError("hash table directory is corrupt (entry)");
  }
  // Another coroutine of this handle may have refreshed meanwhile; keep the newer view.
  if (!s.entries.empty() && h.epoch < s.epoch) co_return OkStatus();
  // Subtables changed: cached slot addresses may point into a retired subtable.
  if (!s.entries.empty() && (h.epoch != s.epoch || entries != s.entries)) clear_spec_cache();
  s.global_depth = depth;
  s.epoch = h.epoch;
  s.entries = std::move(entries);
  s.checked_cycles = started;
  co_return OkStatus();
}

bool HashTable::directory_due(const Shard& s) const {
  return cycles() - s.checked_cycles > check_interval_cycles_;
}

Task<Status> HashTable::check_directory(Shard& s, uint32_t* rtt) {
  const uint64_t started = cycles();
  uint64_t words[2] = {0, 0};  // global_depth, epoch
  Status st = co_await client_->read(s.directory, words, sizeof(words));
  if (rtt != nullptr) ++*rtt;
  if (!st.ok()) co_return st;
  if (words[1] == s.epoch && directory_depth(words[0]) == s.global_depth) {
    if (started > s.checked_cycles) s.checked_cycles = started;
    co_return OkStatus();
  }
  co_return co_await refresh_directory(s, rtt);
}

void HashTable::clear_spec_cache() {
  for (SpecEntry& e : spec_) e.slot_addr = 0;
}

size_t HashTable::subtable_count(uint32_t shard) const {
  std::vector<uint64_t> offsets;
  for (uint64_t e : shards_.at(shard).entries) offsets.push_back(dir_entry_offset(e));
  std::sort(offsets.begin(), offsets.end());
  return static_cast<size_t>(std::unique(offsets.begin(), offsets.end()) - offsets.begin());
}

// ------------------------------------------------------------------------------------------
// Reading buckets and blocks

void HashTable::bucket_addrs(const Shard& s, const KeyHash& kh, Buckets* b) const {
  uint64_t e = s.entries[kh.h1 & mask(s.global_depth)];
  GlobalAddress base(s.node, dir_entry_offset(e));
  const uint64_t main = 1ull << main_buckets_log2_;
  uint64_t i1 = (kh.h1 >> 24) & (main - 1);
  uint64_t i2 = kh.h2 & (main - 1);
  // The two combined buckets must not share a group (they would share its overflow bucket).
  if ((i2 >> 1) == (i1 >> 1)) i2 = (i2 + 2) & (main - 1);
  b->addr[0] = base + combined_bucket_offset(i1);
  b->addr[1] = b->addr[0] + kBucketBytes;
  b->addr[2] = base + combined_bucket_offset(i2);
  b->addr[3] = b->addr[2] + kBucketBytes;
}

Task<Status> HashTable::read_buckets(Shard& s, const KeyHash& kh, Buckets* b,
                                     GlobalAddress block, const std::string* block_bytes,
                                     uint32_t* rtt) {
  if (directory_due(s)) FARMEM_CO_RETURN_IF_ERROR(co_await check_directory(s, rtt));
  bucket_addrs(s, kh, b);
  Batch batch(*client_);
  if (!block.is_null()) (void)batch.write(block, block_bytes->data(), block_bytes->size());
  (void)batch.read(b->addr[0], &b->bucket[0], 2 * kBucketBytes);
  (void)batch.read(b->addr[2], &b->bucket[2], 2 * kBucketBytes);
  Status st = co_await batch.wait();
  if (rtt != nullptr) ++*rtt;
  co_return st;
}

bool HashTable::buckets_fresh(const KeyHash& kh, const Buckets& b) const {
  for (const Bucket& bk : b.bucket) {
    if (bk.local_depth > 32 || (kh.h1 & mask(bk.local_depth)) != bk.suffix) return false;
  }
  return true;
}

Task<Result<HashTable::Scan>> HashTable::find(const Shard& s, std::string_view key,
                                              const KeyHash& kh, const Buckets& b,
                                              bool pending_too, std::vector<Match>* out,
                                              std::string* value, uint32_t* rtt) {
  out->clear();
  for (const Bucket& bk : b.bucket) {
    for (uint64_t w : bk.slots) {
      if (slot_frozen(w)) co_return Scan::kFrozen;
    }
  }
  std::vector<Match> cands;
  for (int j = 0; j < 4; ++j) {
    for (int k = 0; k < static_cast<int>(kSlotsPerBucket); ++k) {
      uint64_t w = b.bucket[j].slots[k];
      if (w == 0 || slot_fp(w) != kh.fp()) continue;
      if (slot_pending(w) && !pending_too) continue;
      cands.push_back(Match{j, k, w, 0});
    }
  }
  if (cands.empty()) co_return Scan::kOk;
  std::vector<std::string> bufs(cands.size());
  {
    Batch batch(*client_);
    for (size_t i = 0; i < cands.size(); ++i) {
      uint32_t units = slot_len_units(cands[i].word);
      bufs[i].resize(units ? units * kBlockUnit : kBlockUnit);
      (void)batch.read(GlobalAddress(s.node, slot_offset(cands[i].word)), bufs[i].data(),
                       bufs[i].size());
    }
    Status st = co_await batch.wait();
    if (rtt != nullptr) ++*rtt;
    if (!st.ok()) co_return st;
  }
  // Large blocks: the first 64 bytes told their size; read the rest.
  bool large = false;
  for (size_t i = 0; i < cands.size(); ++i) {
    if (slot_len_units(cands[i].word) != 0) continue;
    BlockHeader h;
    std::memcpy(&h, bufs[i].data(), sizeof(h));
    if (h.key_bytes != key.size() || h.value_bytes > kMaxValueBytes) {
      bufs[i].clear();  // not our key (or torn): skip
      continue;
    }
    bufs[i].resize(block_bytes(h.key_bytes, h.value_bytes));
    large = true;
  }
  if (large) {
    Batch batch(*client_);
    for (size_t i = 0; i < cands.size(); ++i) {
      if (slot_len_units(cands[i].word) == 0 && bufs[i].size() > kBlockUnit) {
        (void)batch.read(GlobalAddress(s.node, slot_offset(cands[i].word)), bufs[i].data(),
                         bufs[i].size());
      }
    }
    Status st = co_await batch.wait();
    if (rtt != nullptr) ++*rtt;
    if (!st.ok()) co_return st;
  }
  bool torn = false;
  for (size_t i = 0; i < cands.size(); ++i) {
    const std::string& buf = bufs[i];
    if (buf.size() < sizeof(BlockHeader)) continue;
    BlockHeader h;
    std::memcpy(&h, buf.data(), sizeof(h));
    uint64_t used = sizeof(BlockHeader) + uint64_t{h.key_bytes} + h.value_bytes;
    if (used > buf.size() ||
        block_checksum(buf.data() + 8, used - 8) != h.checksum) {
      torn = true;
      continue;
    }
    if (h.key_bytes != key.size() ||
        std::memcmp(buf.data() + sizeof(BlockHeader), key.data(), key.size()) != 0) {
      continue;
    }
    Match m = cands[i];
    m.block_bytes = block_bytes(h.key_bytes, h.value_bytes);
    out->push_back(m);
  }
  if (out->empty()) co_return torn ? Scan::kTorn : Scan::kOk;
  std::sort(out->begin(), out->end(), [&b](const Match& x, const Match& y) {
    return slot_addr(b, x).pack() < slot_addr(b, y).pack();
  });
  if (value != nullptr) {
    for (size_t i = 0; i < cands.size(); ++i) {
      if (cands[i].bucket == (*out)[0].bucket && cands[i].slot == (*out)[0].slot) {
        BlockHeader h;
        std::memcpy(&h, bufs[i].data(), sizeof(h));
        value->assign(bufs[i].data() + sizeof(BlockHeader) + h.key_bytes, h.value_bytes);
      }
    }
  }
  co_return Scan::kOk;
}

uint64_t HashTable::split_wait_ns() const {
  uint64_t ms = options_.split_wait_ms;
  if (ms == 0) ms = std::max<uint64_t>(10'000, 4ull * client_->cluster().config().options.op_timeout_ms);
  return ms * 1'000'000;
}

Task<Status> HashTable::wait_for_split(Shard& s, runtime::Backoff& backoff, uint64_t* since_ns,
                                       uint32_t* rtt) {
  ++stats_.split_waits;
  const uint64_t now = now_ns();
  if (*since_ns == 0) {
    *since_ns = now;
  } else if (now - *since_ns > split_wait_ns()) {
    co_return TimedOut(fmt::format(
        "the hash table subtable for this key has been frozen by a split for {} ms; its "
        "splitter may have died (the keys are intact in the frozen subtable)",
        (now - *since_ns) / 1'000'000));
  }
  co_await backoff.retry();
  co_return co_await refresh_directory(s, rtt);
}

Task<Result<HashTable::Match>> HashTable::locate(Shard& s, std::string_view key,
                                                 const KeyHash& kh, Buckets* b,
                                                 std::string* value, GlobalAddress block,
                                                 const std::string* block_bytes, uint32_t* rtt,
                                                 std::vector<Match>* all) {
  runtime::Backoff backoff(client_->backoff_policy(), client_->scheduler());
  uint64_t split_since = 0;  // when this operation started waiting for a split
  std::vector<Match> matches;
  for (uint32_t attempt = 0; attempt < options_.max_attempts; ++attempt) {
    Status st = co_await read_buckets(s, kh, b, attempt == 0 ? block : GlobalAddress(),
                                      block_bytes, rtt);
    if (!st.ok()) co_return st;
    if (!buckets_fresh(kh, *b)) {
      Status rs = co_await refresh_directory(s, rtt);
      if (!rs.ok()) co_return rs;
      continue;
    }
    auto scan = co_await find(s, key, kh, *b, /*pending_too=*/false, &matches, value, rtt);
    if (!scan.ok()) co_return scan.status();
    if (*scan == Scan::kFrozen) {
      FARMEM_CO_RETURN_IF_ERROR(co_await wait_for_split(s, backoff, &split_since, rtt));
      continue;
    }
    if (*scan == Scan::kTorn) {
      ++stats_.stale_reads;
      co_await backoff.retry();
      continue;
    }
    if (all != nullptr) *all = matches;
    co_return matches.empty() ? Match{} : matches.front();
  }
  co_return Internal("hash table lookup kept reading inconsistent buckets");
}

Task<Result<bool>> HashTable::speculative_get(const Shard& s, std::string_view key,
                                              const KeyHash& kh, std::string* value,
                                              uint32_t* rtt) {
  // A snapshot: other coroutines of this handle may rewrite the entry while we wait, and the
  // block we read must be the one the slot word we compare against points to.
  const SpecEntry e = spec_[kh.h1 & (spec_.size() - 1)];
  if (e.slot_addr == 0 || slot_fp(e.slot_word) != kh.fp()) co_return false;
  uint32_t units = slot_len_units(e.slot_word);
  if (units == 0) co_return false;
  uint64_t word = 0;
  char small[1024];
  std::string big;
  char* buf = small;
  size_t bytes = units * kBlockUnit;
  if (bytes > sizeof(small)) {
    big.resize(bytes);
    buf = big.data();
  }
  Batch batch(*client_);
  (void)batch.read(GlobalAddress::unpack(e.slot_addr), &word, 8);
  (void)batch.read(GlobalAddress(s.node, slot_offset(e.slot_word)), buf, bytes);
  Status st = co_await batch.wait();
  if (rtt != nullptr) ++*rtt;
  if (!st.ok()) co_return st;
  BlockHeader h;
  std::memcpy(&h, buf, sizeof(h));
  uint64_t used = sizeof(BlockHeader) + uint64_t{h.key_bytes} + h.value_bytes;
  if (word != e.slot_word || used > bytes || h.key_bytes != key.size() ||
      std::memcmp(buf + sizeof(BlockHeader), key.data(), key.size()) != 0 ||
      block_checksum(buf + 8, used - 8) != h.checksum) {
    SpecEntry& live = spec_[kh.h1 & (spec_.size() - 1)];
    if (live.slot_addr == e.slot_addr && live.slot_word == e.slot_word) {
      live.slot_addr = 0;
    }
    ++stats_.spec_misses;
    co_return false;
  }
  value->assign(buf + sizeof(BlockHeader) + h.key_bytes, h.value_bytes);
  ++stats_.spec_hits;
  co_return true;
}

void HashTable::remember(const KeyHash& kh, GlobalAddress slot, uint64_t word) {
  if (spec_.empty() || slot_len_units(word) == 0) return;
  spec_[kh.h1 & (spec_.size() - 1)] = SpecEntry{slot.pack(), word};
}

void HashTable::forget(const KeyHash& kh) {
  if (spec_.empty()) return;
  SpecEntry& e = spec_[kh.h1 & (spec_.size() - 1)];
  if (slot_fp(e.slot_word) == kh.fp()) e.slot_addr = 0;
}

// ------------------------------------------------------------------------------------------
// Operations

Task<Result<bool>> HashTable::get(std::string_view key, std::string* value) {
  FARMEM_CO_RETURN_IF_ERROR(check_sizes(key, {}));
  KeyHash kh = hash_key(key);
  Shard& s = shard_of(kh);
  ++stats_.gets;
  uint32_t rtt = 0;  // this get's own round trips (coroutines of the handle interleave)
  if (directory_due(s)) FARMEM_CO_RETURN_IF_ERROR(co_await check_directory(s, &rtt));
  if (!spec_.empty()) {
    // The cache entry is likely a cache miss: start loading it, and let the thread's other
    // coroutines run meanwhile when there are any.
    __builtin_prefetch(&spec_[kh.h1 & (spec_.size() - 1)]);
    if (client_->scheduler().others_ready()) co_await client_->scheduler().yield();
    auto hit = co_await speculative_get(s, key, kh, value, &rtt);
    if (!hit.ok()) co_return hit.status();
    if (*hit) {
      stats_.get_round_trips += rtt;
      co_return true;
    }
  }
  Buckets b;
  auto m = co_await locate(s, key, kh, &b, value, GlobalAddress(), nullptr, &rtt);
  stats_.get_round_trips += rtt;
  if (!m.ok()) co_return m.status();
  if (m->bucket < 0) co_return false;
  remember(kh, slot_addr(b, *m), m->word);
  co_return true;
}

Task<Result<GlobalAddress>> HashTable::write_block(const Shard& s, std::string_view key,
                                                   std::string_view value, std::string* bytes) {
  bytes->assign(block_bytes(key.size(), value.size()), '\0');
  BlockHeader h{0, static_cast<uint32_t>(key.size()), static_cast<uint32_t>(value.size())};
  std::memcpy(bytes->data(), &h, sizeof(h));
  std::memcpy(bytes->data() + sizeof(h), key.data(), key.size());
  if (!value.empty()) std::memcpy(bytes->data() + sizeof(h) + key.size(), value.data(), value.size());
  h.checksum = block_checksum(bytes->data() + 8, sizeof(h) - 8 + key.size() + value.size());
  std::memcpy(bytes->data(), &h.checksum, 8);
  auto a = co_await client_->allocate(bytes->size(), s.node);
  if (a.ok() && a->offset() % kBlockUnit != 0) {
    co_return Internal(fmt::format("KV block allocated at offset {:#x}, not {}-byte aligned",
                                   a->offset(), kBlockUnit));
  }
  co_return a;
}

Task<Status> HashTable::release_block(GlobalAddress block, uint64_t bytes, bool published) {
  if (published) {
    Status st = co_await retire(block, bytes);
    co_return st;
  }
  Status st = co_await client_->free(block, bytes);
  co_return st;
}

Task<Status> HashTable::insert_block(Shard& s, std::string_view key, const KeyHash& kh,
                                     GlobalAddress block, const std::string& bytes,
                                     bool block_written, bool* published) {
  runtime::Backoff backoff(client_->backoff_policy(), client_->scheduler());
  uint64_t split_since = 0;  // when this operation started waiting for a split
  const uint32_t units = len_units(bytes.size());
  std::vector<Match> matches;
  bool rivals_seen = false;
  for (uint32_t attempt = 0; attempt < options_.max_attempts; ++attempt) {
    Buckets b;
    Status st = co_await read_buckets(s, kh, &b, block_written ? GlobalAddress() : block, &bytes);
    if (!st.ok()) co_return st;
    block_written = true;
    if (!buckets_fresh(kh, b)) {
      FARMEM_CO_RETURN_IF_ERROR(co_await refresh_directory(s));
      continue;
    }
    // After withdrawing or losing a race, pending rivals count too: one scan finds both the
    // committed copy and any rival insert still in flight.
    auto scan = co_await find(s, key, kh, b, /*pending_too=*/rivals_seen, &matches, nullptr);
    if (!scan.ok()) co_return scan.status();
    if (*scan == Scan::kFrozen) {
      FARMEM_CO_RETURN_IF_ERROR(co_await wait_for_split(s, backoff, &split_since));
      continue;
    }
    if (*scan == Scan::kTorn) {
      ++stats_.stale_reads;
      co_await backoff.retry();
      continue;
    }
    for (const Match& m : matches) {
      if (!slot_pending(m.word)) co_return AlreadyExists("key already present");
    }
    if (!matches.empty()) {  // only pending rivals: wait for them to commit or withdraw
      co_await backoff.retry();
      continue;
    }
    // Power of two choices: the combined bucket with more free slots.
    int free_count[2] = {0, 0};
    for (int j = 0; j < 4; ++j) {
      for (uint64_t w : b.bucket[j].slots) free_count[j / 2] += (w == 0);
    }
    if (free_count[0] + free_count[1] == 0) {
      // Both buckets are full: split the subtable, then try again.
      auto split_done = co_await split(s, kh);
      if (!split_done.ok()) co_return split_done.status();
      if (!*split_done) FARMEM_CO_RETURN_IF_ERROR(co_await wait_for_split(s, backoff, &split_since));
      continue;
    }
    int pick = free_count[1] > free_count[0] ? 1 : 0;
    Match mine;
    for (int j = 2 * pick; j < 2 * pick + 2 && mine.bucket < 0; ++j) {
      for (int k = 0; k < static_cast<int>(kSlotsPerBucket); ++k) {
        if (b.bucket[j].slots[k] == 0) {
          mine = Match{j, k, 0, bytes.size()};
          break;
        }
      }
    }
    GlobalAddress my_slot = slot_addr(b, mine);
    uint64_t pending = make_slot(kh.fp(), units, block.offset(), true);
    uint64_t found = 0;
    st = co_await client_->cas(my_slot, 0, pending, &found);
    if (!st.ok()) co_return st;
    if (found != 0) {
      ++stats_.cas_failures;
      rivals_seen = true;
      if (backoff.exhausted()) break;
      co_await backoff.retry();
      continue;
    }
    *published = true;
    // Resolve duplicates. Commit only when ours is the only slot holding this key: then no
    // other inserter can also see itself alone (it claimed its slot before or after our
    // re-read, and either way one of us sees the other). With rival pending inserts, the
    // lower slot waits and the higher one withdraws and starts over; a committed rival wins.
    // A split that freezes our pending slot drops it (only committed slots are copied): the
    // commit CAS then fails on the frozen word and the insert starts over in the new subtable.
    bool restart = false;
    for (uint32_t round = 0; round < options_.max_attempts && !restart; ++round) {
      Buckets again;
      st = co_await read_buckets(s, kh, &again, GlobalAddress(), nullptr);
      Result<Scan> all = st.ok() ? co_await find(s, key, kh, again, true, &matches, nullptr)
                                 : Result<Scan>(st);
      uint64_t old = 0;
      if (!all.ok()) {
        // Best effort: do not leave a pending slot behind (readers ignore it, but a later
        // insert of this key would wait for it).
        (void)co_await client_->cas(my_slot, pending, 0, &old);
        co_return all.status();
      }
      if (*all == Scan::kFrozen || !buckets_fresh(kh, again)) {
        // A split is under way: withdraw (or find the slot frozen, hence dropped) and retry.
        st = co_await client_->cas(my_slot, pending, 0, &old);
        if (!st.ok()) co_return st;
        FARMEM_CO_RETURN_IF_ERROR(co_await wait_for_split(s, backoff, &split_since));
        restart = true;
        break;
      }
      if (*all == Scan::kTorn) {
        ++stats_.stale_reads;
        co_await backoff.retry();
        continue;
      }
      bool committed_other = false, lower_pending = false, others = false;
      for (const Match& m : matches) {
        GlobalAddress a = slot_addr(again, m);
        if (a == my_slot) continue;
        others = true;
        if (!slot_pending(m.word)) committed_other = true;
        if (a.pack() < my_slot.pack()) lower_pending = true;
      }
      if (committed_other) {
        st = co_await client_->cas(my_slot, pending, 0, &old);
        co_return st.ok() ? AlreadyExists("key already present") : st;
      }
      if (!others) {
        uint64_t committed = pending & ~kSlotPendingBit;
        st = co_await client_->cas(my_slot, pending, committed, &old);
        if (!st.ok()) co_return st;
        if (old == pending) {
          remember(kh, my_slot, committed);
          co_return OkStatus();
        }
        if (old != (pending | kSlotFrozenBit)) {
          co_return Internal("a pending slot changed under its owner");
        }
        FARMEM_CO_RETURN_IF_ERROR(co_await wait_for_split(s, backoff, &split_since));
        restart = true;
        break;
      }
      rivals_seen = true;
      if (lower_pending) {
        // A rival holds a lower slot: withdraw and start over (it will commit or withdraw).
        // If a split froze our slot meanwhile, it is dropped all the same.
        st = co_await client_->cas(my_slot, pending, 0, &old);
        if (!st.ok()) co_return st;
        restart = true;
      }
      // Otherwise ours is the lowest: wait for the higher rivals to withdraw.
      ++stats_.cas_failures;
      co_await backoff.retry();
    }
    if (restart) continue;
    uint64_t old = 0;
    (void)co_await client_->cas(my_slot, pending, 0, &old);
    co_return TimedOut("a concurrent insert of the same key did not finish");
  }
  co_return ResourceExhausted(
      fmt::format("insert gave up after {} contended attempts", options_.max_attempts));
}

Task<Status> HashTable::insert(std::string_view key, std::string_view value) {
  FARMEM_CO_RETURN_IF_ERROR(check_sizes(key, value));
  KeyHash kh = hash_key(key);
  Shard& s = shard_of(kh);
  ++stats_.inserts;
  std::string bytes;
  auto block = co_await write_block(s, key, value, &bytes);
  if (!block.ok()) co_return block.status();
  bool published = false;
  Status st = co_await insert_block(s, key, kh, *block, bytes, false, &published);
  if (!st.ok()) (void)co_await release_block(*block, bytes.size(), published);
  co_return st;
}

Task<Status> HashTable::replace(Shard& s, std::string_view key, const KeyHash& kh,
                                std::string_view value, bool insert_if_absent) {
  std::string bytes;
  auto block = co_await write_block(s, key, value, &bytes);
  if (!block.ok()) co_return block.status();
  const uint64_t new_word = make_slot(kh.fp(), len_units(bytes.size()), block->offset(), false);
  runtime::Backoff backoff(client_->backoff_policy(), client_->scheduler());
  bool written = false, published = false;
  for (uint32_t attempt = 0; attempt < options_.max_attempts; ++attempt) {
    Buckets b;
    auto m = co_await locate(s, key, kh, &b, nullptr, written ? GlobalAddress() : *block, &bytes);
    if (!m.ok()) {
      (void)co_await release_block(*block, bytes.size(), published);
      co_return m.status();
    }
    written = true;
    if (m->bucket < 0) {
      if (!insert_if_absent) {
        (void)co_await release_block(*block, bytes.size(), published);
        co_return NotFound("key not present");
      }
      Status st = co_await insert_block(s, key, kh, *block, bytes, true, &published);
      if (st.ok()) co_return st;
      if (st.code() != StatusCode::kAlreadyExists) {
        (void)co_await release_block(*block, bytes.size(), published);
        co_return st;
      }
      continue;  // someone inserted it meanwhile: update instead
    }
    uint64_t found = 0;
    GlobalAddress slot = slot_addr(b, *m);
    Status st = co_await client_->cas(slot, m->word, new_word, &found);
    if (!st.ok()) {
      (void)co_await release_block(*block, bytes.size(), true);
      co_return st;
    }
    if (found == m->word) {
      remember(kh, slot, new_word);
      co_return co_await retire(GlobalAddress(s.node, slot_offset(m->word)), m->block_bytes);
    }
    ++stats_.cas_failures;
    if (backoff.exhausted()) break;
    co_await backoff.retry();
  }
  (void)co_await release_block(*block, bytes.size(), published);
  co_return ResourceExhausted(
      fmt::format("update gave up after {} contended attempts", options_.max_attempts));
}

Task<Status> HashTable::update(std::string_view key, std::string_view value) {
  FARMEM_CO_RETURN_IF_ERROR(check_sizes(key, value));
  KeyHash kh = hash_key(key);
  ++stats_.updates;
  Status st = co_await replace(shard_of(kh), key, kh, value, false);
  co_return st;
}

Task<Status> HashTable::put(std::string_view key, std::string_view value) {
  FARMEM_CO_RETURN_IF_ERROR(check_sizes(key, value));
  KeyHash kh = hash_key(key);
  ++stats_.puts;
  Status st = co_await replace(shard_of(kh), key, kh, value, true);
  co_return st;
}

Task<Status> HashTable::erase(std::string_view key) {
  FARMEM_CO_RETURN_IF_ERROR(check_sizes(key, {}));
  KeyHash kh = hash_key(key);
  Shard& s = shard_of(kh);
  ++stats_.erases;
  runtime::Backoff backoff(client_->backoff_policy(), client_->scheduler());
  for (uint32_t attempt = 0; attempt < options_.max_attempts; ++attempt) {
    Buckets b;
    auto m = co_await locate(s, key, kh, &b, nullptr, GlobalAddress(), nullptr);
    if (!m.ok()) co_return m.status();
    if (m->bucket < 0) co_return NotFound("key not present");
    uint64_t found = 0;
    Status st = co_await client_->cas(slot_addr(b, *m), m->word, 0, &found);
    if (!st.ok()) co_return st;
    if (found == m->word) {
      forget(kh);
      co_return co_await retire(GlobalAddress(s.node, slot_offset(m->word)), m->block_bytes);
    }
    ++stats_.cas_failures;
    if (backoff.exhausted()) break;
    co_await backoff.retry();
  }
  co_return ResourceExhausted(
      fmt::format("erase gave up after {} contended attempts", options_.max_attempts));
}

Task<Result<int>> HashTable::committed_copies(std::string_view key) {
  FARMEM_CO_RETURN_IF_ERROR(check_sizes(key, {}));
  KeyHash kh = hash_key(key);
  Buckets b;
  std::vector<Match> all;
  auto m = co_await locate(shard_of(kh), key, kh, &b, nullptr, GlobalAddress(), nullptr, nullptr,
                           &all);
  if (!m.ok()) co_return m.status();
  co_return static_cast<int>(all.size());
}

// ------------------------------------------------------------------------------------------
// Growth: splitting a full subtable

namespace {

// Reads of a whole subtable and CAS rounds are cut into pieces of this many bytes / operations.
constexpr uint64_t kSplitReadBytes = 256 * 1024;
constexpr size_t kSplitOpsPerBatch = 32;

}  // namespace

Task<Result<bool>> HashTable::split(Shard& s, const KeyHash& kh) {
  const GlobalAddress sub(s.node, dir_entry_offset(s.entries[kh.h1 & mask(s.global_depth)]));
  SubtableHeader h{};
  FARMEM_CO_RETURN_IF_ERROR(co_await client_->read(sub, &h, sizeof(h)));
  if (h.lock != 0) co_return false;  // being split by someone else, or already retired
  if (h.local_depth > kMaxDepth || (kh.h1 & mask(h.local_depth)) != h.suffix) {
    co_return false;  // our directory is stale
  }
  if (h.local_depth >= max_depth_) {
    co_return ResourceExhausted(fmt::format(
        "hash table is full: the subtable for this key is at the maximum depth {} and its "
        "buckets are full",
        max_depth_));
  }
  uint64_t old = 0;
  FARMEM_CO_RETURN_IF_ERROR(co_await client_->cas(sub, 0, split_token_, &old));
  if (old != 0) co_return false;
  ++stats_.splits;
  const uint32_t d = h.local_depth;
  const uint32_t x = h.suffix;

  // 1. Freeze every slot: from here no insert, update or erase can change this subtable, and
  //    every reader that sees a frozen slot goes back to the directory.
  std::vector<Bucket> buckets;
  Status st = co_await freeze(sub, &buckets);
  if (!st.ok()) {
    ++stats_.split_failures;
    co_await abandon_split(sub);
    co_return st;
  }

  // 2. Which committed slots move: rehash each key (read from its block).
  struct Item {
    uint64_t bucket;
    uint32_t slot;
    uint64_t word;  // without the frozen bit
    uint32_t side = 0;
  };
  std::vector<Item> items;
  for (uint64_t bi = 0; bi < buckets.size(); ++bi) {
    for (uint32_t k = 0; k < kSlotsPerBucket; ++k) {
      uint64_t w = buckets[bi].slots[k];
      if (!slot_used(w) || slot_pending(w)) continue;  // empty, or an insert not committed
      items.push_back(Item{bi, k, w & ~kSlotFrozenBit});
    }
  }
  std::vector<std::string> bufs(kSplitOpsPerBatch);
  for (size_t first = 0; first < items.size() && st.ok(); first += kSplitOpsPerBatch) {
    const size_t n = std::min(kSplitOpsPerBatch, items.size() - first);
    for (int pass = 0; pass < 2 && st.ok(); ++pass) {
      // Pass 0 reads len x 64 bytes (64 for large blocks); pass 1 the rest of large blocks.
      Batch batch(*client_);
      for (size_t i = 0; i < n; ++i) {
        const Item& it = items[first + i];
        uint32_t units = slot_len_units(it.word);
        if (pass == 0) {
          bufs[i].resize(units ? units * kBlockUnit : kBlockUnit);
        } else {
          if (units != 0) continue;
          BlockHeader bh;
          std::memcpy(&bh, bufs[i].data(), sizeof(bh));
          if (bh.key_bytes > kMaxKeyBytes || bh.value_bytes > kMaxValueBytes) continue;
          bufs[i].resize(block_bytes(bh.key_bytes, bh.value_bytes));
        }
        (void)batch.read(GlobalAddress(s.node, slot_offset(it.word)), bufs[i].data(),
                         bufs[i].size());
      }
      if (batch.size() > 0) st = co_await batch.wait();
    }
    for (size_t i = 0; i < n && st.ok(); ++i) {
      Item& it = items[first + i];
      const std::string& buf = bufs[i];
      BlockHeader bh;
      std::memcpy(&bh, buf.data(), sizeof(bh));
      uint64_t used = sizeof(BlockHeader) + uint64_t{bh.key_bytes} + bh.value_bytes;
      if (bh.key_bytes == 0 || used > buf.size() ||
          block_checksum(buf.data() + 8, used - 8) != bh.checksum) {
        // Blocks of committed slots are immutable until retired, and a frozen slot cannot be
        // replaced: a bad block here is corruption, not a race.
        st = Internal(fmt::format("hash table split: the block at offset {:#x} on node {} fails "
                                  "its checksum",
                                  slot_offset(it.word), s.node));
        break;
      }
      KeyHash k = hash_key(std::string_view(buf.data() + sizeof(BlockHeader), bh.key_bytes));
      it.side = static_cast<uint32_t>((k.h1 >> d) & 1);
    }
  }
  if (!st.ok()) {
    ++stats_.split_failures;
    co_await abandon_split(sub);
    co_return st;
  }

  // 3. Two new subtables one depth deeper; every moved word keeps its bucket and slot (a key's
  //    bucket indices do not depend on its suffix).
  const uint64_t sub_bytes = subtable_bytes(main_buckets_log2_);
  GlobalAddress halves[2];
  for (uint32_t side = 0; side < 2 && st.ok(); ++side) {
    std::string image = subtable_image(main_buckets_log2_, d + 1, x | (side << d));
    for (const Item& it : items) {
      if (it.side != side) continue;
      std::memcpy(image.data() + subtable_slot_offset(it.bucket, it.slot), &it.word, 8);
    }
    auto a = co_await client_->allocate_on(s.node, sub_bytes, 4096);
    if (!a.ok()) {
      st = a.status();
      break;
    }
    halves[side] = *a;
    st = co_await client_->write(*a, image.data(), image.size());
  }
  bool maybe_published = false;
  if (st.ok()) st = co_await publish_split(s, d, x, sub, halves[0], halves[1], &maybe_published);
  if (!st.ok() && maybe_published) {
    // The entries may point at the new subtables: undoing could leave two live copies.
    ++stats_.split_failures;
    co_return st;
  }
  if (!st.ok()) {
    for (GlobalAddress a : halves) {
      if (!a.is_null()) (void)co_await client_->free_on(a);
    }
    ++stats_.split_failures;
    co_await abandon_split(sub);
    co_return st;
  }
  // 4. The frozen subtable stays locked; readers with an old directory still find it frozen
  //    until it is freed after the grace period (handles re-check their directory well before).
  FARMEM_CO_RETURN_IF_ERROR(co_await retire(sub, sub_bytes));
  co_return true;
}

Task<Status> HashTable::freeze(GlobalAddress sub, std::vector<Bucket>* buckets) {
  const uint64_t nbuckets = subtable_buckets(main_buckets_log2_);
  buckets->assign(nbuckets, Bucket{});
  const GlobalAddress first = sub + sizeof(SubtableHeader);  // bucket 0
  const uint64_t total = nbuckets * kBucketBytes;
  const uint64_t per_batch = kSplitReadBytes * kSplitOpsPerBatch;
  for (uint64_t start = 0; start < total; start += per_batch) {
    Batch batch(*client_);
    for (uint64_t off = start; off < std::min(total, start + per_batch); off += kSplitReadBytes) {
      (void)batch.read(first + off, reinterpret_cast<char*>(buckets->data()) + off,
                       std::min(kSplitReadBytes, total - off));
    }
    FARMEM_CO_RETURN_IF_ERROR(co_await batch.wait());
  }
  // CAS every slot to word | frozen; a lost race (a concurrent insert, update or erase) is
  // retried with the value found. Only the lock holder sets the bit.
  std::vector<uint64_t> todo;  // slot indices over the whole subtable
  todo.reserve(nbuckets * kSlotsPerBucket);
  for (uint64_t i = 0; i < nbuckets * kSlotsPerBucket; ++i) {
    if (!slot_frozen((*buckets)[i / kSlotsPerBucket].slots[i % kSlotsPerBucket])) {
      todo.push_back(i);
    }
  }
  std::vector<uint64_t> again;
  std::array<uint64_t, kSplitOpsPerBatch> found{};
  for (uint32_t round = 0; !todo.empty(); ++round) {
    if (round >= options_.max_attempts) {
      co_return ResourceExhausted("hash table split: slots kept changing while being frozen");
    }
    again.clear();
    for (size_t at = 0; at < todo.size(); at += kSplitOpsPerBatch) {
      const size_t n = std::min(kSplitOpsPerBatch, todo.size() - at);
      Batch batch(*client_);
      for (size_t i = 0; i < n; ++i) {
        uint64_t idx = todo[at + i];
        uint64_t w = (*buckets)[idx / kSlotsPerBucket].slots[idx % kSlotsPerBucket];
        (void)batch.cas(sub + subtable_slot_offset(idx / kSlotsPerBucket,
                                                   static_cast<uint32_t>(idx % kSlotsPerBucket)),
                        w, w | kSlotFrozenBit, &found[i]);
      }
      FARMEM_CO_RETURN_IF_ERROR(co_await batch.wait());
      for (size_t i = 0; i < n; ++i) {
        uint64_t idx = todo[at + i];
        uint64_t& w = (*buckets)[idx / kSlotsPerBucket].slots[idx % kSlotsPerBucket];
        if (found[i] == w) {
          w |= kSlotFrozenBit;
        } else {
          w = found[i];
          if (!slot_frozen(w)) again.push_back(idx);
        }
      }
    }
    todo.swap(again);
  }
  co_return OkStatus();
}

Task<void> HashTable::abandon_split(GlobalAddress sub) {
  // Re-read rather than trust what freeze() saw: a batch that failed may have applied some of
  // its CAS. While we hold the lock, every frozen slot was frozen by us.
  const uint64_t nbuckets = subtable_buckets(main_buckets_log2_);
  std::vector<Bucket> buckets(nbuckets);
  Status st = co_await client_->read(sub + sizeof(SubtableHeader), buckets.data(),
                                     nbuckets * kBucketBytes);
  if (!st.ok()) co_return;  // the node is unreachable: nothing more to do
  uint64_t ignored = 0;
  for (uint64_t bi = 0; bi < nbuckets; ++bi) {
    for (uint32_t k = 0; k < kSlotsPerBucket; ++k) {
      uint64_t w = buckets[bi].slots[k];
      if (!slot_frozen(w)) continue;
      st = co_await client_->cas(sub + subtable_slot_offset(bi, k), w, w & ~kSlotFrozenBit,
                                 &ignored);
      if (!st.ok()) co_return;
    }
  }
  (void)co_await client_->cas(sub, split_token_, 0, &ignored);
}

Task<Status> HashTable::publish_split(Shard& s, uint32_t d, uint32_t x, GlobalAddress old_sub,
                                      GlobalAddress sub0, GlobalAddress sub1,
                                      bool* maybe_published) {
  // Lock the directory (bit 63 of global_depth).
  runtime::Backoff backoff(client_->backoff_policy(), client_->scheduler());
  uint64_t words[2] = {0, 0};
  const uint64_t lock_start = now_ns();
  for (uint32_t attempt = 0;; ++attempt) {
    if (attempt >= options_.max_attempts || now_ns() - lock_start > split_wait_ns()) {
      co_return TimedOut(
          "hash table split: the directory stayed locked by another splitter (it may have died)");
    }
    FARMEM_CO_RETURN_IF_ERROR(co_await client_->read(s.directory, words, sizeof(words)));
    if ((words[0] & kDirectoryLockBit) == 0) {
      uint64_t old = 0;
      FARMEM_CO_RETURN_IF_ERROR(
          co_await client_->cas(s.directory, words[0], words[0] | kDirectoryLockBit, &old));
      if (old == words[0]) break;
    }
    co_await backoff.retry();
  }
  // Changes happen only under the lock: this read is current.
  Status st = co_await client_->read(s.directory, words, sizeof(words));
  const uint32_t g = directory_depth(words[0]);
  std::vector<uint64_t> entries(size_t{1} << std::min(g, kMaxDepth));
  if (st.ok() && g > kMaxDepth) st = ProtocolError("hash table directory is corrupt (depth)");
  if (st.ok()) st = co_await client_->read(s.directory + sizeof(DirectoryHeader), entries.data(),
                                           8 * entries.size());
  if (st.ok()) {
    for (uint64_t i = 0; i < entries.size(); ++i) {
      if ((i & mask(d)) == x && dir_entry_offset(entries[i]) != old_sub.offset()) {
        st = Internal("hash table split: the directory no longer points to the locked subtable");
        break;
      }
    }
  }
  const uint32_t new_g = std::max(g, d + 1);
  if (st.ok()) {
    // Double if needed: the upper half starts as a copy of the lower one.
    entries.resize(size_t{1} << new_g);
    for (size_t i = size_t{1} << g; i < entries.size(); ++i) {
      entries[i] = entries[i & ((size_t{1} << g) - 1)];
    }
    for (uint64_t i = 0; i < entries.size(); ++i) {
      if ((i & mask(d)) != x) continue;
      GlobalAddress half = ((i >> d) & 1) ? sub1 : sub0;
      entries[i] = dir_entry(half.offset(), d + 1);
    }
    // Entries first (readers only look below the published depth), then depth and epoch,
    // which also unlocks.
    *maybe_published = true;
    st = co_await client_->write(s.directory + sizeof(DirectoryHeader), entries.data(),
                                 8 * entries.size());
  }
  uint64_t unlocked[2] = {st.ok() ? uint64_t{new_g} : uint64_t{g}, words[1] + (st.ok() ? 1 : 0)};
  Status us = co_await client_->write(s.directory, unlocked, sizeof(unlocked));
  if (!st.ok()) co_return st;
  if (!us.ok()) co_return us;
  s.global_depth = new_g;
  s.epoch = unlocked[1];
  s.entries = std::move(entries);
  s.checked_cycles = cycles();
  clear_spec_cache();
  co_return OkStatus();
}

// ------------------------------------------------------------------------------------------
// Reclamation

namespace {
uint32_t now_ms32() { return static_cast<uint32_t>(now_ns() / 1'000'000); }
}  // namespace

uint64_t HashTable::age_ns(const Retired& r) {
  return uint64_t{static_cast<uint32_t>(now_ms32() - r.when_ms)} * 1'000'000;
}

Task<Status> HashTable::retire(GlobalAddress addr, uint64_t bytes) {
  retired_.push_back(Retired{addr.pack(), static_cast<uint32_t>(bytes), now_ms32()});
  ++stats_.retired;
  const uint64_t grace = grace_ns();
  if (retired_.size() > options_.max_retired) {
    // Bounded: wait for the oldest block's grace period rather than grow.
    const uint64_t age = age_ns(retired_.front());
    if (age < grace) co_await client_->scheduler().sleep_for_ns(grace - age);
  }
  if (!retired_.empty() && age_ns(retired_.front()) >= grace) co_await reclaim(false);
  co_return OkStatus();
}

uint64_t HashTable::grace_ns() const {
  uint64_t ms = options_.retire_grace_ms;
  if (ms == 0) ms = 2ull * client_->cluster().config().options.op_timeout_ms + 1000;
  return ms * 1'000'000;
}

Task<void> HashTable::reclaim(bool wait_for_all) {
  const uint64_t grace = grace_ns();
  while (!retired_.empty()) {
    Retired r = retired_.front();
    const uint64_t age = age_ns(r);
    if (age < grace) {
      if (!wait_for_all) co_return;
      co_await client_->scheduler().sleep_for_ns(grace - age);
      continue;  // another coroutine of the handle may have freed it meanwhile
    }
    retired_.pop_front();
    (void)co_await client_->free(GlobalAddress::unpack(r.addr), r.bytes);
    ++stats_.reclaimed;
  }
}

// ------------------------------------------------------------------------------------------
// Blocking wrappers

Result<bool> HashTable::get_sync(std::string_view key, std::string* value) {
  return client_->run(get(key, value));
}
Status HashTable::insert_sync(std::string_view key, std::string_view value) {
  return client_->run(insert(key, value));
}
Status HashTable::update_sync(std::string_view key, std::string_view value) {
  return client_->run(update(key, value));
}
Status HashTable::put_sync(std::string_view key, std::string_view value) {
  return client_->run(put(key, value));
}
Status HashTable::erase_sync(std::string_view key) { return client_->run(erase(key)); }

}  // namespace farmem::ds::hash
