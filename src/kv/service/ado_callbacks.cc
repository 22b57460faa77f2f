#include "ado_callbacks.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace farmem::kv::service {

namespace w = farmem::kv::wire;

namespace {

using Op = ado::CallbackOp;

// The most pool-memory blocks an ADO may hold at once.
constexpr size_t kMaxAllocations = size_t{1} << 20;
// The largest alignment allocate_pool_memory takes (records' and blocks' own).
constexpr uint64_t kMaxAlignment = 64;

template <typename T>
std::string bytes_of(const T& v) {
  return std::string(reinterpret_cast<const char*>(&v), sizeof(v));
}

std::string range_bytes(uint64_t offset, uint64_t bytes) {
  return bytes_of(ado::ValueRange{offset, bytes});
}

bool keyed(Op op) {
  return op == Op::kCreateKey || op == Op::kOpenKey || op == Op::kEraseKey || op == Op::kResize ||
         op == Op::kUnlock;
}

// One callback being answered: what it may touch, and one step per operation.
class CallbackRun {
 public:
  CallbackRun(ServerPool& pool, PoolAdo& ado, AdoJob* job, const ado::Callback& c, uint64_t now_ns)
      : pool_(pool),
        region_(pool.region()),
        ado_(ado),
        job_(job),
        c_(c),
        now_(now_ns),
        owner_(ado_owner(c.work_id)) {}

  Result<std::string> answer() {
    if (keyed(c_.op) && c_.key.empty()) return InvalidArgument("empty key");
    switch (c_.op) {
      case Op::kCreateKey:
        return create_key();
      case Op::kOpenKey:
        return open_key();
      case Op::kEraseKey:
        return erase_key();
      case Op::kResize:
        return resize();
      case Op::kAllocate:
        return allocate();
      case Op::kFree:
        return free();
      case Op::kFind:
        return find();
      case Op::kIterate:
        return iterate();
      case Op::kUnlock:
        return unlock();
      case Op::kPoolInfo:
        return pool_info();
      case Op::kLogUndo:  // AdoManager::log_undo answers it
        break;
    }
    return InvalidArgument("unknown callback");
  }

 private:
  AdoGrant* held() const { return job_ == nullptr ? nullptr : job_->held(c_.key); }
  // A lock a callback took: the invocation keeps it; outside one, no lock is kept.
  void keep_or_release(const LockGrant& g) {
    if (job_ != nullptr) {
      job_->grants.push_back({g.token, g.key, g.mode, g.address, g.value_bytes});
    } else {
      (void)pool_.release(owner_, g.token, 0, now_);
    }
  }
  void forget_grant() {
    std::erase_if(job_->grants, [this](const AdoGrant& x) { return x.key == c_.key; });
  }

  Result<std::string> create_key() {
    if (c_.arg0 > UINT32_MAX) return InvalidArgument("value above 4 GiB - 1");
    auto g =
        pool_.lock(owner_, c_.key, w::LocateMode::kPutNew, 0, c_.arg0, w::kLocateCreateOnly, now_);
    FARMEM_TRY(g);
    std::memset(region_.at(g->address), 0, g->length);
    keep_or_release(*g);
    return range_bytes(g->address, g->value_bytes);
  }

  Result<std::string> open_key() {
    if (AdoGrant* mine = held()) return range_bytes(mine->address, mine->bytes);
    if (c_.arg0 != FARMEM_ADO_LOCK_READ && c_.arg0 != FARMEM_ADO_LOCK_WRITE) {
      return InvalidArgument("open_key: lock must be FARMEM_ADO_LOCK_READ or _WRITE");
    }
    auto mode = c_.arg0 == FARMEM_ADO_LOCK_WRITE ? w::LocateMode::kWrite : w::LocateMode::kRead;
    auto g = pool_.lock(owner_, c_.key, mode, 0, 0, 0, now_);
    FARMEM_TRY(g);
    keep_or_release(*g);
    return range_bytes(g->address, g->value_bytes);
  }

  Result<std::string> erase_key() {
    if (held() != nullptr) {
      return InvalidArgument(
          "erase_key of a key this invocation holds (the target: return "
          "FARMEM_ADO_ERASE_TARGET; others: unlock_key first)");
    }
    FARMEM_TRY(pool_.erase(c_.key, now_));
    ado_.send_event(FARMEM_ADO_EVENT_ERASE, c_.key);
    return std::string();
  }

  // A value this invocation created (not yet published) is resized by making a new one of the
  // new size, contents kept up to the smaller size, the rest zero.
  Result<LockGrant> resize_created(const AdoGrant& g) {
    const uint8_t* from = region_.at(g.address);
    const std::vector<uint8_t> old(from, from + g.bytes);
    FARMEM_TRY(pool_.release(owner_, g.token, w::kReleaseAbort, now_));
    auto ng = pool_.lock(owner_, c_.key, w::LocateMode::kPutNew, 0, c_.arg0, 0, now_);
    if (!ng.ok()) {  // the created value is gone with its lock
      forget_grant();
      return ng.status();
    }
    uint8_t* v = region_.at(ng->address);
    const size_t keep = std::min<uint64_t>(old.size(), c_.arg0);
    if (keep > 0) std::memcpy(v, old.data(), keep);  // an empty vector's data() may be null
    std::memset(v + keep, 0, c_.arg0 - keep);
    return ng;
  }

  Result<std::string> resize() {
    AdoGrant* g = held();
    if (g == nullptr || g->mode == w::LocateMode::kRead) {
      return InvalidArgument("resize_value needs a key this invocation holds write-locked");
    }
    if (c_.arg0 > UINT32_MAX || c_.arg0 > w::kMaxValueBytes) return InvalidArgument("too large");
    // A published value moves to a new record, locked until release.
    auto ng = g->mode == w::LocateMode::kWrite ? pool_.resize(owner_, g->token, c_.arg0, now_)
                                               : resize_created(*g);
    FARMEM_TRY(ng);
    *g = {ng->token, c_.key, ng->mode, ng->address, ng->value_bytes};
    ado_.send_event(FARMEM_ADO_EVENT_RESIZE, c_.key);
    return range_bytes(ng->address, ng->value_bytes);
  }

  Result<std::string> allocate() {
    if (c_.arg0 == 0 || c_.arg0 > w::kMaxValueBytes) return InvalidArgument("bytes out of range");
    if (c_.arg1 > kMaxAlignment || (c_.arg1 & (c_.arg1 - 1)) != 0) {
      return InvalidArgument("alignment must be a power of two up to 64");
    }
    if (ado_.allocations.size() >= kMaxAllocations) {
      return ResourceExhausted("too many ADO allocations");
    }
    auto off = pool_.allocate(c_.arg0, now_);
    FARMEM_TRY(off);
    ado_.allocations[*off] = c_.arg0;
    return range_bytes(*off, c_.arg0);
  }

  Result<std::string> free() {
    auto it = ado_.allocations.find(c_.arg0);
    if (it == ado_.allocations.end() || it->second != c_.arg1) {
      return InvalidArgument("free_pool_memory of memory the ADO did not allocate (or size)");
    }
    pool_.free(c_.arg0, c_.arg1, now_);
    ado_.allocations.erase(it);
    return std::string();
  }

  Result<std::string> find() {
    const SecondaryIndex* index = pool_.secondary();
    if (index == nullptr) return InvalidArgument("pool has no secondary index");
    auto f = index->find(c_.key, c_.arg0);
    FARMEM_TRY(f);
    const ado::FindReply r{f->position, static_cast<uint32_t>(f->key.size()),
                           f->more ? ado::kFindReplyMore : 0};
    return bytes_of(r) + f->key;
  }

  Result<std::string> iterate() {
    std::vector<ado::RecordRef>& listing = job_ != nullptr ? job_->listing : ado_.launch_listing;
    if (c_.arg0 == 0) {
      listing.clear();
      listing.reserve(pool_.count());
      pool_.for_each_key([&listing](std::string_view, const KeyInfo& info) {
        listing.push_back({info.record, info.version});
      });
    }
    if (c_.arg0 > listing.size()) return InvalidArgument("iterate: cursor past the end");
    const uint64_t n =
        std::min<uint64_t>({c_.arg1, ado::kMaxIterateRefs, listing.size() - c_.arg0});
    const ado::IterateReply r{c_.arg0 + n >= listing.size() ? UINT64_MAX : c_.arg0 + n,
                              static_cast<uint32_t>(n), 0};
    std::string out = bytes_of(r);
    out.append(reinterpret_cast<const char*>(listing.data() + c_.arg0), n * sizeof(ado::RecordRef));
    return out;
  }

  Result<std::string> unlock() {
    if (job_ == nullptr) return InvalidArgument("unlock_key outside an invocation");
    if (!job_->grants.empty() && job_->grants.front().key == c_.key) {
      return InvalidArgument("the invocation's target is unlocked when the invocation ends");
    }
    AdoGrant* g = held();
    if (g == nullptr) return NotFound("this invocation holds no lock on that key");
    FARMEM_TRY(pool_.release(owner_, g->token, 0, now_));
    forget_grant();
    return std::string();
  }

  Result<std::string> pool_info() {
    const farmem_ado_pool_info info{pool_.count(), pool_.used_bytes(), pool_.capacity_bytes()};
    return bytes_of(info);
  }

  ServerPool& pool_;
  RegionView region_;
  PoolAdo& ado_;
  AdoJob* job_;
  const ado::Callback& c_;
  uint64_t now_;
  uint64_t owner_;
};

}  // namespace

Result<std::string> answer_callback(ServerPool& pool, PoolAdo& ado, AdoJob* job,
                                    const ado::Callback& c, uint64_t now_ns) {
  return CallbackRun(pool, ado, job, c, now_ns).answer();
}

}  // namespace farmem::kv::service
