#include "farmem/ds/hash/hash_table.h"

#include <fmt/format.h>
// XXH3 compiled into this file (xxhash's header-only mode): every operation hashes its key,
// a few bytes, where the call into the shared library costs about as much as the hashing.
#define XXH_INLINE_ALL
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

namespace {

uint64_t mask(uint32_t depth) { return depth >= 64 ? ~0ull : (1ull << depth) - 1; }

std::string root_name(const std::string& name) { return "hash/" + name; }

}  // namespace

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

HashTable::HashTable(client::ThreadClient* client, HashTableOptions options, FarObject object)
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
      spec_(options.speculative_lookup ? static_cast<int>(options.spec_cache_log2) : -1) {
  check_interval_cycles_ =
      static_cast<uint64_t>(static_cast<double>(grace_ns() / 4) * cycles_per_ns());
}

HashTable::~HashTable() = default;

const HashStats& HashTable::stats() const {
  stats_.retired = reclaimer_.stats().retired;
  stats_.reclaimed = reclaimer_.stats().reclaimed;
  return stats_;
}

Status HashTable::check_sizes(std::string_view key, std::string_view value) const {
  if (key.empty()) return InvalidArgument("empty key");
  if (key.size() > kMaxKeyBytes) {
    return InvalidArgument(
        fmt::format("key of {} bytes exceeds the {}-byte maximum", key.size(), kMaxKeyBytes));
  }
  if (value.size() > kMaxValueBytes) {
    return InvalidArgument(
        fmt::format("value of {} bytes exceeds the {}-byte maximum", value.size(), kMaxValueBytes));
  }
  return OkStatus();
}

// ------------------------------------------------------------------------------------------
// Creation, opening, destruction

namespace {

Status check_create_options(const HashTableOptions& o) {
  if (o.main_buckets_log2 < 2 || o.main_buckets_log2 > 24) {
    return InvalidArgument("main_buckets_log2 must be 2..24");
  }
  if (o.initial_depth > kMaxDepth) {
    return InvalidArgument(fmt::format("initial_depth must be 0..{}", kMaxDepth));
  }
  if (o.max_depth < o.initial_depth || o.max_depth > kMaxDepth) {
    return InvalidArgument(
        fmt::format("max_depth must be initial_depth ({})..{}", o.initial_depth, kMaxDepth));
  }
  if (o.spec_cache_log2 > 30) return InvalidArgument("spec_cache_log2 must be 0..30");
  return OkStatus();
}

std::string table_meta(const HashTableOptions& o, const std::vector<GlobalAddress>& dirs) {
  std::string meta(sizeof(TableMeta) + 8 * dirs.size(), '\0');
  TableMeta m{};
  m.magic = kTableMagic;
  m.version = kLayoutVersion;
  m.shards = static_cast<uint32_t>(dirs.size());
  m.main_buckets_log2 = o.main_buckets_log2;
  m.initial_depth = o.initial_depth;
  m.max_depth = o.max_depth;
  std::memcpy(meta.data(), &m, sizeof(m));
  for (size_t i = 0; i < dirs.size(); ++i) {
    uint64_t a = dirs[i].pack();
    std::memcpy(meta.data() + sizeof(m) + 8 * i, &a, 8);
  }
  return meta;
}

}  // namespace

Task<Status> HashTable::create_shard(client::ThreadClient* c, const FarObject& object,
                                     uint16_t node, const HashTableOptions& o, Shard* s) {
  s->node = node;
  s->global_depth = o.initial_depth;
  const uint64_t owner = object.owner(node);
  for (uint64_t i = 0; i < (1ull << o.initial_depth); ++i) {
    auto sub = co_await c->allocate_on(node, subtable_bytes(o.main_buckets_log2), 4096, owner);
    FARMEM_CO_TRY(sub);
    std::string image =
        subtable_image(o.main_buckets_log2, o.initial_depth, static_cast<uint32_t>(i));
    Status ws = co_await c->write(*sub, image.data(), image.size());
    FARMEM_CO_TRY(ws);
    s->entries.push_back(dir_entry(sub->offset(), o.initial_depth));
  }
  std::string dir(sizeof(DirectoryHeader) + (8ull << kMaxDepth), '\0');
  DirectoryHeader dh{};
  dh.global_depth = o.initial_depth;
  std::memcpy(dir.data(), &dh, sizeof(dh));
  std::memcpy(dir.data() + sizeof(dh), s->entries.data(), 8 * s->entries.size());
  auto d = co_await c->allocate_on(node, dir.size(), 4096, owner);
  FARMEM_CO_TRY(d);
  Status ds = co_await c->write(*d, dir.data(), dir.size());
  FARMEM_CO_TRY(ds);
  s->directory = *d;
  s->checked_cycles = cycles();
  co_return OkStatus();
}

Task<Result<std::unique_ptr<HashTable>>> HashTable::create(client::ThreadClient* c,
                                                           std::string name, HashTableOptions o) {
  if (name.empty()) co_return InvalidArgument("a hash table needs a name");
  FARMEM_CO_TRY(check_create_options(o));
  auto object = co_await FarObject::create(c, root_name(name), o.temporary);
  if (!object.ok()) {
    if (object.status().code() == StatusCode::kAlreadyExists) {
      co_return AlreadyExists(fmt::format("a hash table named '{}' already exists", name));
    }
    co_return object.status();
  }
  std::unique_ptr<HashTable> t(new HashTable(c, o, std::move(*object)));
  t->main_buckets_log2_ = o.main_buckets_log2;
  t->max_depth_ = o.max_depth;
  std::vector<uint16_t> ids;
  for (const auto& n : c->cluster().nodes()) ids.push_back(n.node_id);
  std::sort(ids.begin(), ids.end());
  Status st;
  std::vector<GlobalAddress> dirs;
  for (uint16_t node : ids) {
    Shard s;
    st = co_await create_shard(c, t->object_, node, o, &s);
    if (!st.ok()) break;
    dirs.push_back(s.directory);
    t->shards_.push_back(std::move(s));
  }
  GlobalAddress meta_addr;
  if (st.ok()) {
    std::string meta = table_meta(o, dirs);
    auto ma = co_await t->heap_.allocate(ids.front(), meta.size());
    st = ma.status();
    if (ma.ok()) {
      meta_addr = *ma;
      st = co_await c->write(meta_addr, meta.data(), meta.size());
    }
  }
  if (st.ok()) st = co_await t->object_.commit(c, meta_addr);
  if (!st.ok()) {
    (void)co_await t->object_.destroy(c);  // nothing of a failed create stays behind
    co_return st;
  }
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
  FARMEM_CO_TRY(rs);
  if (m.magic != kTableMagic) {
    co_return InvalidArgument(
        fmt::format("root '{}' does not point to a hash table", root_name(name)));
  }
  if (m.version != kLayoutVersion || m.shards == 0 || m.shards > 65536 || m.main_buckets_log2 < 2 ||
      m.main_buckets_log2 > 24 || m.max_depth > kMaxDepth) {
    co_return InvalidArgument(fmt::format(
        "hash table '{}' has layout version {} with {} shards; this client reads version {}", name,
        m.version, m.shards, kLayoutVersion));
  }
  auto object = co_await FarObject::open(c, root_name(name));
  FARMEM_CO_TRY(object);
  std::unique_ptr<HashTable> t(new HashTable(c, o, std::move(*object)));
  t->main_buckets_log2_ = m.main_buckets_log2;
  t->max_depth_ = m.max_depth;
  std::vector<uint64_t> dirs(m.shards);
  rs = co_await c->read(*root + sizeof(m), dirs.data(), 8 * dirs.size());
  FARMEM_CO_TRY(rs);
  for (uint64_t d : dirs) {
    Shard s;
    s.directory = GlobalAddress::unpack(d);
    s.node = s.directory.node();
    Status fs = co_await t->refresh_directory(s);
    FARMEM_CO_TRY(fs);
    t->shards_.push_back(std::move(s));
  }
  co_return t;
}

Task<Status> HashTable::destroy() {
  shards_.clear();
  Status s = co_await object_.destroy(client_);
  co_return s;
}

Task<Status> HashTable::destroy(client::ThreadClient* c, std::string name) {
  Status s = co_await FarObject::destroy_named(c, root_name(name),
                                               fmt::format("no hash table named '{}'", name));
  co_return s;
}

// ------------------------------------------------------------------------------------------
// The directory cache

Task<Status> HashTable::refresh_directory(Shard& s, uint32_t* rtt) {
  DirectoryHeader h{};
  const uint64_t started = cycles();
  Status st = co_await client_->read(s.directory, &h, sizeof(h));
  if (rtt != nullptr) ++*rtt;
  ++stats_.directory_reads;
  FARMEM_CO_TRY(st);
  uint32_t depth = directory_depth(h.global_depth);
  if (depth > kMaxDepth) co_return ProtocolError("hash table directory is corrupt (depth)");
  std::vector<uint64_t> entries(size_t{1} << depth);
  st = co_await client_->read(s.directory + sizeof(h), entries.data(), 8 * entries.size());
  if (rtt != nullptr) ++*rtt;
  FARMEM_CO_TRY(st);
  for (uint64_t e : entries) {
    if (dir_entry_offset(e) == 0)
      co_return ProtocolError("hash table directory is corrupt (entry)");
  }
  // Another coroutine of this handle may have refreshed meanwhile; keep the newer view.
  if (!s.entries.empty() && h.epoch < s.epoch) co_return OkStatus();
  // Subtables changed: cached slot addresses may point into a retired subtable.
  if (!s.entries.empty() && (h.epoch != s.epoch || entries != s.entries)) spec_.clear();
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
  FARMEM_CO_TRY(st);
  if (words[1] == s.epoch && directory_depth(words[0]) == s.global_depth) {
    if (started > s.checked_cycles) s.checked_cycles = started;
    co_return OkStatus();
  }
  Status rs = co_await refresh_directory(s, rtt);
  co_return rs;
}

size_t HashTable::subtable_count(uint32_t shard) const {
  std::vector<uint64_t> offsets;
  for (uint64_t e : shards_.at(shard).entries) offsets.push_back(dir_entry_offset(e));
  std::sort(offsets.begin(), offsets.end());
  return static_cast<size_t>(std::unique(offsets.begin(), offsets.end()) - offsets.begin());
}

GlobalAddress HashTable::subtable_of(const Shard& s, const KeyHash& kh) const {
  return GlobalAddress(s.node, dir_entry_offset(s.entries[kh.h1 & mask(s.global_depth)]));
}

uint64_t HashTable::split_wait_ns() const {
  uint64_t ms = options_.split_wait_ms;
  if (ms == 0) {
    ms = std::max<uint64_t>(10'000, 4ull * client_->cluster().config().options.op_timeout_ms);
  }
  return ms * 1'000'000;
}

Task<Status> HashTable::wait_for_split(Shard& s, const KeyHash& kh, runtime::Backoff& backoff,
                                       Wait* wait, uint32_t* rtt) {
  ++stats_.split_waits;
  const uint64_t now = now_ns();
  if (wait->since_ns == 0) {
    wait->since_ns = now;
  } else if (now - wait->since_ns > split_wait_ns()) {
    co_return TimedOut(fmt::format(
        "the hash table subtable for this key has been frozen by a split (or its directory left "
        "half-published) for {} ms; the client holding it is alive but does not finish "
        "(stopped?); the keys are intact",
        (now - wait->since_ns) / 1'000'000));
  }
  if (now - wait->since_ns >= lease_check_ns() && now - wait->checked_ns >= lease_check_ns()) {
    wait->checked_ns = now;
    Status rs = co_await repair_stuck_split(s, kh);
    FARMEM_CO_TRY(rs);
  }
  co_await backoff.retry();
  Status st = co_await refresh_directory(s, rtt);
  co_return st;
}

Task<Status> HashTable::resync(Shard& s, const KeyHash& kh, runtime::Backoff& backoff, Wait* wait,
                               uint32_t* rtt) {
  const uint64_t epoch = s.epoch;
  Status st = co_await refresh_directory(s, rtt);
  FARMEM_CO_TRY(st);
  if (s.epoch != epoch) co_return OkStatus();  // the cache was stale: now it is not
  // The directory has not moved on, yet the buckets belong elsewhere: a split is publishing
  // (entries before the header), or its publisher died doing so. Wait like for a split.
  Status ws = co_await wait_for_split(s, kh, backoff, wait, rtt);
  co_return ws;
}

// ------------------------------------------------------------------------------------------
// Reading buckets and blocks

void HashTable::bucket_addrs(const Shard& s, const KeyHash& kh, Buckets* b) const {
  const GlobalAddress base = subtable_of(s, kh);
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

Task<Status> HashTable::read_buckets(Shard& s, const KeyHash& kh, Buckets* b, GlobalAddress block,
                                     const std::string* block_bytes, uint32_t* rtt) {
  if (directory_due(s)) FARMEM_CO_TRY(co_await check_directory(s, rtt));
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

void HashTable::add_block_reads(const Shard& s, const std::vector<Match>& cands, int round,
                                std::vector<std::string>* bufs, Batch* batch) {
  for (size_t i = 0; i < cands.size(); ++i) {
    std::string& buf = (*bufs)[i];
    const uint32_t units = slot_len_units(cands[i].word);
    if (round == 0) {
      buf.resize(units ? units * kBlockUnit : kBlockUnit);
    } else {
      // Only a large block (its slot gives no length) can be longer than round 0 read; the
      // slot test comes first, so no other block is checksummed here.
      if (units != 0) continue;
      KvBlockView v;
      size_t need = 0;
      if (check_kv_block(buf.data(), buf.size(), kMaxKeyBytes, kMaxValueBytes, &v, &need) !=
          BlockCheck::kShort) {
        continue;
      }
      buf.resize(need);
    }
    (void)batch->read(GlobalAddress(s.node, slot_offset(cands[i].word)), buf.data(), buf.size());
  }
}

Task<Status> HashTable::read_block_round(const Shard& s, const std::vector<Match>& cands, int round,
                                         std::vector<std::string>* bufs, uint32_t* rtt) {
  Batch batch(*client_);
  add_block_reads(s, cands, round, bufs, &batch);
  if (batch.size() == 0) co_return OkStatus();
  Status st = co_await batch.wait();
  if (rtt != nullptr) ++*rtt;
  co_return st;
}

Task<Status> HashTable::read_blocks(const Shard& s, const std::vector<Match>& cands,
                                    std::vector<std::string>* bufs, uint32_t* rtt) {
  bufs->assign(cands.size(), std::string());
  for (int round = 0; round < 2; ++round) {
    Status st = co_await read_block_round(s, cands, round, bufs, rtt);
    FARMEM_CO_TRY(st);
  }
  co_return OkStatus();
}

Task<Result<HashTable::Scan>> HashTable::find(const Shard& s, std::string_view key,
                                              const KeyHash& kh, const Buckets& b, bool pending_too,
                                              std::vector<Match>* out, std::string* value,
                                              uint32_t* rtt) {
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
      cands.push_back(Match{j, k, w, 0, 0});
    }
  }
  if (cands.empty()) co_return Scan::kOk;
  // read_blocks, with its first round here: a lookup reads blocks on every miss of the
  // speculative cache and every update, and a coroutine call costs more than the reads.
  std::vector<std::string> bufs(cands.size());
  {
    Batch batch(*client_);
    add_block_reads(s, cands, 0, &bufs, &batch);
    Status st = co_await batch.wait();
    if (rtt != nullptr) ++*rtt;
    FARMEM_CO_TRY(st);
  }
  for (const Match& c : cands) {
    if (slot_len_units(c.word) == 0) {  // a large block: its header may announce more
      Status st = co_await read_block_round(s, cands, 1, &bufs, rtt);
      FARMEM_CO_TRY(st);
      break;
    }
  }
  bool torn = false;
  uint64_t first_addr = 0;
  std::string_view first_value;  // the value of the lowest matching slot (in bufs)
  for (size_t i = 0; i < cands.size(); ++i) {
    KvBlockView v;
    size_t need = 0;
    if (check_kv_block(bufs[i].data(), bufs[i].size(), kMaxKeyBytes, kMaxValueBytes, &v, &need) !=
        BlockCheck::kOk) {
      torn = true;
      continue;
    }
    if (!kv_block_key_is(v, key)) continue;
    Match m = cands[i];
    m.block_bytes = v.bytes;
    m.owner = v.owner;
    const uint64_t addr = slot_addr(b, m).pack();
    if (out->empty() || addr < first_addr) {
      first_addr = addr;
      first_value = v.value;
    }
    out->push_back(m);
  }
  if (out->empty()) co_return torn ? Scan::kTorn : Scan::kOk;
  if (out->size() > 1) {
    std::sort(out->begin(), out->end(), [&b](const Match& x, const Match& y) {
      return slot_addr(b, x).pack() < slot_addr(b, y).pack();
    });
  }
  if (value != nullptr) value->assign(first_value);
  co_return Scan::kOk;
}

Task<Result<HashTable::Match>> HashTable::locate(Shard& s, std::string_view key, const KeyHash& kh,
                                                 Buckets* b, std::string* value,
                                                 GlobalAddress block,
                                                 const std::string* block_bytes, uint32_t* rtt,
                                                 std::vector<Match>* all) {
  runtime::Backoff backoff(client_->backoff_policy(), client_->scheduler());
  Wait wait;
  std::vector<Match> matches;
  for (uint32_t attempt = 0; attempt < options_.max_attempts; ++attempt) {
    Status st =
        co_await read_buckets(s, kh, b, attempt == 0 ? block : GlobalAddress(), block_bytes, rtt);
    FARMEM_CO_TRY(st);
    if (!buckets_fresh(kh, *b)) {
      Status rs = co_await resync(s, kh, backoff, &wait, rtt);
      FARMEM_CO_TRY(rs);
      continue;
    }
    auto scan = co_await find(s, key, kh, *b, /*pending_too=*/false, &matches, value, rtt);
    FARMEM_CO_TRY(scan);
    if (*scan == Scan::kFrozen) {
      Status ws = co_await wait_for_split(s, kh, backoff, &wait, rtt);
      FARMEM_CO_TRY(ws);
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
  co_return RetriesExhausted("hash table lookup (buckets kept changing)", options_.max_attempts);
}

Task<Result<bool>> HashTable::speculative_get(const Shard& s, std::string_view key,
                                              const KeyHash& kh, std::string* value,
                                              uint32_t* rtt) {
  // A snapshot: other coroutines of this handle may rewrite the entry while we wait, and the
  // block we read must be the one the slot word we compare against points to.
  const SpecEntry e = spec_.at(kh.h1);
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
  FARMEM_CO_TRY(st);
  KvBlockView v;
  size_t need = 0;
  if (word != e.slot_word ||
      check_kv_block(buf, bytes, kMaxKeyBytes, kMaxValueBytes, &v, &need) != BlockCheck::kOk ||
      !kv_block_key_is(v, key)) {
    SpecEntry& live = spec_.at(kh.h1);
    if (live.slot_addr == e.slot_addr && live.slot_word == e.slot_word) live.slot_addr = 0;
    ++stats_.spec_misses;
    co_return false;
  }
  value->assign(v.value);
  ++stats_.spec_hits;
  co_return true;
}

void HashTable::remember(const KeyHash& kh, GlobalAddress slot, uint64_t word) {
  if (!spec_.enabled() || slot_len_units(word) == 0) return;
  spec_.at(kh.h1) = SpecEntry{slot.pack(), word};
}

void HashTable::forget(const KeyHash& kh) {
  if (!spec_.enabled()) return;
  SpecEntry& e = spec_.at(kh.h1);
  if (slot_fp(e.slot_word) == kh.fp()) e.slot_addr = 0;
}

// ------------------------------------------------------------------------------------------
// Operations

Task<Result<bool>> HashTable::get(std::string_view key, std::string* value) {
  FARMEM_CO_TRY(check_sizes(key, {}));
  KeyHash kh = hash_key(key);
  Shard& s = shard_of(kh);
  ++stats_.gets;
  uint32_t rtt = 0;  // this get's own round trips (coroutines of the handle interleave)
  if (directory_due(s)) FARMEM_CO_TRY(co_await check_directory(s, &rtt));
  if (spec_.enabled()) {
    // The cache entry is likely a cache miss: start loading it, and let the thread's other
    // coroutines run meanwhile when there are any.
    spec_.prefetch(kh.h1);
    if (client_->scheduler().others_ready()) co_await client_->scheduler().yield();
    auto hit = co_await speculative_get(s, key, kh, value, &rtt);
    FARMEM_CO_TRY(hit);
    if (*hit) {
      stats_.get_round_trips += rtt;
      co_return true;
    }
  }
  Buckets b;
  auto m = co_await locate(s, key, kh, &b, value, GlobalAddress(), nullptr, &rtt);
  stats_.get_round_trips += rtt;
  FARMEM_CO_TRY(m);
  if (m->bucket < 0) co_return false;
  remember(kh, slot_addr(b, *m), m->word);
  co_return true;
}

Task<Result<GlobalAddress>> HashTable::write_block(const Shard& s, std::string_view key,
                                                   std::string_view value, std::string* bytes) {
  encode_kv_block(key, value, client_->session_id(s.node), bytes);
  auto a = co_await heap_.allocate(s.node, bytes->size());
  if (a.ok() && a->offset() % kBlockUnit != 0) {
    co_return Internal(fmt::format("KV block allocated at offset {:#x}, not {}-byte aligned",
                                   a->offset(), kBlockUnit));
  }
  co_return a;
}

Task<Status> HashTable::release_block(GlobalAddress block, uint64_t bytes, bool published) {
  // (Each co_await its own statement: GCC 12 miscompiles co_await inside ?: and similar.)
  if (published) {
    Status st = co_await reclaimer_.retire(block, bytes);
    co_return st;
  }
  Status st = co_await heap_.free(block, bytes);
  co_return st;
}

Task<Status> HashTable::insert(std::string_view key, std::string_view value) {
  FARMEM_CO_TRY(check_sizes(key, value));
  KeyHash kh = hash_key(key);
  Shard& s = shard_of(kh);
  ++stats_.inserts;
  std::string bytes;
  auto block = co_await write_block(s, key, value, &bytes);
  FARMEM_CO_TRY(block);
  bool published = false;
  Status st = co_await insert_block(s, key, kh, *block, bytes, false, &published);
  if (!st.ok()) {
    Status rs = co_await release_block(*block, bytes.size(), published);
    (void)rs;
  }
  co_return st;
}

Task<Status> HashTable::replace(Shard& s, std::string_view key, const KeyHash& kh,
                                std::string_view value, bool insert_if_absent) {
  std::string bytes;
  auto block = co_await write_block(s, key, value, &bytes);
  FARMEM_CO_TRY(block);
  const uint64_t new_word = make_slot(kh.fp(), len_units(bytes.size()), block->offset(), false);
  RetryLoop loop(client_, insert_if_absent ? "put" : "update", options_.max_attempts);
  bool written = false, published = false;
  Status result;
  for (;;) {
    Buckets b;
    auto m = co_await locate(s, key, kh, &b, nullptr, written ? GlobalAddress() : *block, &bytes);
    if (!m.ok()) {
      result = m.status();
      break;
    }
    written = true;
    if (m->bucket < 0) {
      if (!insert_if_absent) {
        result = NotFound("key not present");
        break;
      }
      Status st = co_await insert_block(s, key, kh, *block, bytes, true, &published);
      if (st.code() == StatusCode::kAlreadyExists) {  // inserted meanwhile: update it
        if (loop.exhausted()) {
          result = loop.give_up();
          break;
        }
        co_await loop.retry();
        continue;
      }
      if (st.ok()) co_return st;
      result = st;
      break;
    }
    uint64_t found = 0;
    GlobalAddress slot = slot_addr(b, *m);
    Status st = co_await client_->cas(slot, m->word, new_word, &found);
    if (!st.ok()) {
      published = true;  // the CAS may have happened
      result = st;
      break;
    }
    if (found == m->word) {
      loop.succeeded();
      remember(kh, slot, new_word);
      Status rs =
          co_await reclaimer_.retire(GlobalAddress(s.node, slot_offset(m->word)), m->block_bytes);
      co_return rs;
    }
    ++stats_.cas_failures;
    if (loop.exhausted()) {
      result = loop.give_up();
      break;
    }
    co_await loop.retry();
  }
  Status rs = co_await release_block(*block, bytes.size(), published);
  (void)rs;
  co_return result;
}

Task<Status> HashTable::update(std::string_view key, std::string_view value) {
  FARMEM_CO_TRY(check_sizes(key, value));
  KeyHash kh = hash_key(key);
  ++stats_.updates;
  Status st = co_await replace(shard_of(kh), key, kh, value, false);
  co_return st;
}

Task<Status> HashTable::put(std::string_view key, std::string_view value) {
  FARMEM_CO_TRY(check_sizes(key, value));
  KeyHash kh = hash_key(key);
  ++stats_.puts;
  Status st = co_await replace(shard_of(kh), key, kh, value, true);
  co_return st;
}

Task<Status> HashTable::erase(std::string_view key) {
  FARMEM_CO_TRY(check_sizes(key, {}));
  KeyHash kh = hash_key(key);
  Shard& s = shard_of(kh);
  ++stats_.erases;
  RetryLoop loop(client_, "erase", options_.max_attempts);
  for (;;) {
    Buckets b;
    auto m = co_await locate(s, key, kh, &b, nullptr, GlobalAddress(), nullptr);
    FARMEM_CO_TRY(m);
    if (m->bucket < 0) co_return NotFound("key not present");
    uint64_t found = 0;
    Status st = co_await client_->cas(slot_addr(b, *m), m->word, 0, &found);
    FARMEM_CO_TRY(st);
    if (found == m->word) {
      loop.succeeded();
      forget(kh);
      Status rs =
          co_await reclaimer_.retire(GlobalAddress(s.node, slot_offset(m->word)), m->block_bytes);
      co_return rs;
    }
    ++stats_.cas_failures;
    if (loop.exhausted()) co_return loop.give_up();
    co_await loop.retry();
  }
}

Task<Result<int>> HashTable::committed_copies(std::string_view key) {
  FARMEM_CO_TRY(check_sizes(key, {}));
  KeyHash kh = hash_key(key);
  Buckets b;
  std::vector<Match> all;
  auto m =
      co_await locate(shard_of(kh), key, kh, &b, nullptr, GlobalAddress(), nullptr, nullptr, &all);
  FARMEM_CO_TRY(m);
  co_return static_cast<int>(all.size());
}

Task<void> HashTable::reclaim(bool wait_for_all) { co_await reclaimer_.reclaim(wait_for_all); }

// ------------------------------------------------------------------------------------------
// Blocking wrappers

}  // namespace farmem::ds::hash
