// CachedHashTable<K, V, kSlots>: a fixed-capacity far hash table: a local index (one far pointer
// per bucket, 2^buckets_log2 of them) over far buckets of kSlots key-value slots (AIFM's hopscotch
// table, simplified to bucket-granular linear probing).
//
// A bucket is a far object laid out as the far service reads it (wire::BucketHeader, then the
// slots; docs/formats/far.md). An insert goes to the first bucket of the probe run with room
// and marks every full bucket it passes as overflowed; a lookup stops at the first bucket that
// never overflowed. When a bucket is absent locally, find() asks the memory node to scan the
// run of absent buckets (up to 8) in one round trip instead of fetching them (RemoteLookup::kOn;
// kAuto does so when the node is not reached by direct access, where a fetch is cheaper).
// K and V are trivially copyable with no padding between them (keys compare bytewise).
// Thread safety: the cache's thread.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <type_traits>

#include "farmem/far/chunked.h"
#include "farmem/far/wire.h"

namespace farmem::far {

uint64_t hash_key(const void* key, size_t bytes);

enum class RemoteLookup : uint8_t { kAuto, kOn, kOff };

template <typename K, typename V, uint32_t kSlots = 8>
class CachedHashTable {
  struct Slot {
    K key;
    V value;
  };
  static_assert(sizeof(Slot) == sizeof(K) + sizeof(V), "key and value must pack without padding");
  static_assert(std::has_unique_object_representations_v<K>, "keys compare bytewise");
  static_assert(kSlots >= 1 && kSlots <= 1024);

 public:
  struct Bucket {
    wire::BucketHeader header;
    Slot slots[kSlots];
  };

  static runtime::Task<Result<CachedHashTable>> create(ThreadCache* cache, uint32_t buckets_log2,
                                                       RemoteLookup remote = RemoteLookup::kAuto) {
    if (buckets_log2 > 30) co_return InvalidArgument("far hash table: at most 2^30 buckets");
    CachedHashTable t(cache, buckets_log2, remote);
    Status s = co_await t.store_.grow_to(uint64_t{1} << buckets_log2);
    FARMEM_CO_TRY(s);
    t.store_.prefetcher().set_enabled(false);
    co_return t;
  }
  CachedHashTable(CachedHashTable&&) noexcept = default;

  uint64_t buckets() const { return mask_ + 1; }
  uint64_t size() const { return size_; }
  uint64_t remote_lookups() const { return remote_lookups_; }
  ChunkedStore<Bucket>& store() { return store_; }

  class FindOp;
  // `Result<std::optional<V>> v = co_await table.find(key);` When every bucket of the probe is
  // local the lookup completes without suspending and without a coroutine frame (as a std
  // lookup: consecutive finds overlap their cache misses); otherwise it runs find_slow().
  FindOp find(K key) { return FindOp(this, key); }

  // The lookup from local buckets alone: the answer, or nullopt when a bucket of the probe is
  // absent (a fetch or the memory node must answer). Stamps the buckets it reads.
  std::optional<std::optional<V>> try_find(K key) {
    DerefScope scope(*store_.cache());  // a hit allocates nothing: no admission wait
    uint64_t b = hash_key(&key, sizeof(K)) & mask_;
    for (uint64_t probed = 0; probed <= mask_; ++probed, b = (b + 1) & mask_) {
      const Bucket* bk = store_.template try_element<const Bucket>(scope, b);
      if (bk == nullptr) {
        if (store_.chunk(b)->flags & kZeroFill) return std::optional<V>();  // never written
        return std::nullopt;
      }
      if (const V* v = scan(bk, key)) return std::optional<V>(*v);
      if (!(bk->header.flags & wire::kBucketOverflowed)) return std::optional<V>();
    }
    return std::optional<V>();
  }

  // The whole lookup as a coroutine: fetches absent buckets, or has the node scan them.
  runtime::Task<Result<std::optional<V>>> find_slow(K key) {
    uint64_t b = hash_key(&key, sizeof(K)) & mask_;
    for (uint64_t probed = 0; probed <= mask_;) {
      if (store_.chunk_local(b) == nullptr) {  // absent (or never written): ask the entry
        const Entry* e = store_.chunk(b);
        if (e->flags & kZeroFill) co_return std::optional<V>();
        if (remote_scannable(e) && use_remote(e)) {
          auto r = co_await remote_find(key, b);
          FARMEM_CO_TRY(r);
          if (r->outcome != wire::HashOutcome::kGoOn) co_return std::move(r->value);
          b = (b + r->scanned) & mask_;
          probed += r->scanned;
          continue;
        }
      }
      auto scope = co_await DerefScope::enter(*store_.cache());
      FARMEM_CO_TRY(scope);
      auto p = co_await store_.template element<const Bucket>(*scope, b);
      FARMEM_CO_TRY(p);
      const Bucket* bk = *p;
      if (const V* v = scan(bk, key)) co_return std::optional<V>(*v);
      if (!(bk->header.flags & wire::kBucketOverflowed)) co_return std::optional<V>();
      b = (b + 1) & mask_;
      ++probed;
    }
    co_return std::optional<V>();
  }

  // Inserts or replaces. kResourceExhausted when every bucket is full.
  runtime::Task<Status> put(K key, V value) {
    uint64_t b = hash_key(&key, sizeof(K)) & mask_;
    // First pass: replace if present (the key may sit past buckets with room left by erases).
    for (uint64_t probed = 0; probed <= mask_; ++probed, b = (b + 1) & mask_) {
      auto scope = co_await DerefScope::enter(*store_.cache());
      FARMEM_CO_TRY(scope);
      auto p = co_await store_.template element<Bucket>(*scope, b);
      FARMEM_CO_TRY(p);
      Bucket* bk = *p;
      for (uint32_t s = 0; s < bk->header.count; ++s) {
        if (std::memcmp(&bk->slots[s].key, &key, sizeof(K)) == 0) {
          bk->slots[s].value = value;
          co_return OkStatus();
        }
      }
      if (!(bk->header.flags & wire::kBucketOverflowed)) break;
    }
    b = hash_key(&key, sizeof(K)) & mask_;
    for (uint64_t probed = 0; probed <= mask_; ++probed, b = (b + 1) & mask_) {
      auto scope = co_await DerefScope::enter(*store_.cache());
      FARMEM_CO_TRY(scope);
      auto p = co_await store_.template element<Bucket>(*scope, b);
      FARMEM_CO_TRY(p);
      Bucket* bk = *p;
      if (bk->header.count < kSlots) {
        bk->slots[bk->header.count] = Slot{key, value};
        ++bk->header.count;
        ++size_;
        co_return OkStatus();
      }
      bk->header.flags |= wire::kBucketOverflowed;
    }
    co_return ResourceExhausted("far hash table is full");
  }

  // True if the key was there.
  runtime::Task<Result<bool>> erase(K key) {
    uint64_t b = hash_key(&key, sizeof(K)) & mask_;
    for (uint64_t probed = 0; probed <= mask_; ++probed, b = (b + 1) & mask_) {
      auto scope = co_await DerefScope::enter(*store_.cache());
      FARMEM_CO_TRY(scope);
      auto p = co_await store_.template element<Bucket>(*scope, b);
      FARMEM_CO_TRY(p);
      Bucket* bk = *p;
      for (uint32_t s = 0; s < bk->header.count; ++s) {
        if (std::memcmp(&bk->slots[s].key, &key, sizeof(K)) == 0) {
          bk->slots[s] = bk->slots[bk->header.count - 1];
          --bk->header.count;
          --size_;
          co_return true;
        }
      }
      if (!(bk->header.flags & wire::kBucketOverflowed)) co_return false;
    }
    co_return false;
  }

 private:
  CachedHashTable(ThreadCache* cache, uint32_t log2, RemoteLookup remote)
      : store_(cache, sizeof(Bucket)), mask_((uint64_t{1} << log2) - 1), remote_(remote) {}

  static const V* scan(const Bucket* bk, const K& key) {
    for (uint32_t s = 0; s < bk->header.count && s < kSlots; ++s) {
      if (std::memcmp(&bk->slots[s].key, &key, sizeof(K)) == 0) return &bk->slots[s].value;
    }
    return nullptr;
  }

  // Whether the node may scan this bucket for us: absent, with a far copy, and no fetch or
  // write-back of it in flight (a fetch in flight is joined instead).
  static bool remote_scannable(const Entry* e) {
    return e->local == nullptr && !(e->flags & (kZeroFill | kFetching | kWriteback));
  }
  bool use_remote(const Entry* e) const {
    if (remote_ == RemoteLookup::kOff) return false;
    if (remote_ == RemoteLookup::kOn) return true;
    return !store_.cache()->client()->direct(e->remote.node());
  }

  struct RemoteFound {
    wire::HashOutcome outcome;
    std::optional<V> value;
    uint32_t scanned;
  };
  // One round trip over the run of absent, written buckets starting at b (one node).
  runtime::Task<Result<RemoteFound>> remote_find(K key, uint64_t b) {
    std::string req;
    const uint16_t node = store_.chunk(b)->remote.node();
    std::vector<uint64_t> offsets;
    for (uint64_t k = b; offsets.size() < wire::kMaxHashBuckets && offsets.size() <= mask_;
         k = (k + 1) & mask_) {
      const Entry* e = store_.chunk(k);
      if (!remote_scannable(e) || e->remote.node() != node) break;  // never the first (find())
      offsets.push_back(e->remote.offset());
    }
    wire::HashLookupRequest q{sizeof(K), sizeof(V), kSlots, static_cast<uint16_t>(offsets.size())};
    req.append(reinterpret_cast<const char*>(&q), sizeof(q));
    req.append(reinterpret_cast<const char*>(&key), sizeof(K));
    req.append(reinterpret_cast<const char*>(offsets.data()), offsets.size() * 8);
    std::string reply(sizeof(wire::HashLookupReply) + sizeof(V), '\0');
    uint32_t got = 0;
    Status s = co_await store_.cache()->client()->rpc(
        node, static_cast<uint16_t>(wire::Op::kHashLookup), req.data(), req.size(), reply.data(),
        static_cast<uint32_t>(reply.size()), &got);
    FARMEM_CO_TRY(s);
    ++remote_lookups_;
    store_.cache()->mutable_stats().rpc_bytes += req.size() + got;
    wire::HashLookupReply h;
    if (got < sizeof(h)) co_return ProtocolError("short hash lookup reply");
    std::memcpy(&h, reply.data(), sizeof(h));
    RemoteFound out{static_cast<wire::HashOutcome>(h.outcome), std::nullopt,
                    static_cast<uint32_t>(offsets.size())};
    if (out.outcome == wire::HashOutcome::kFound) {
      if (got != sizeof(h) + sizeof(V)) co_return ProtocolError("hash lookup reply size");
      V v;
      std::memcpy(&v, reply.data() + sizeof(h), sizeof(V));
      out.value = v;
    }
    co_return out;
  }

  ChunkedStore<Bucket> store_;
  uint64_t mask_;
  RemoteLookup remote_;
  uint64_t size_ = 0;
  uint64_t remote_lookups_ = 0;
};

template <typename K, typename V, uint32_t kSlots>
class [[nodiscard]] CachedHashTable<K, V, kSlots>::FindOp {
 public:
  FindOp(CachedHashTable* t, K key) : t_(t), key_(key) {}
  bool await_ready() {
    auto hit = t_->try_find(key_);
    if (!hit) return false;
    value_ = *hit;
    return true;
  }
  auto await_suspend(std::coroutine_handle<> h) { return slow_.start(run_slow(), h); }
  Result<std::optional<V>> await_resume() {
    if (slow_.started()) {
      Status s = slow_.result();
      FARMEM_TRY(s);
    }
    return value_;
  }

 private:
  runtime::Task<Status> run_slow() {
    auto r = co_await t_->find_slow(key_);
    FARMEM_CO_TRY(r);
    value_ = *r;
    co_return OkStatus();
  }
  CachedHashTable* t_;
  K key_;
  std::optional<V> value_;
  SlowPath slow_;
};

}  // namespace farmem::far
