// The core service: the memory node's own RPCs (docs/formats/control.md, memops.md).
#include <fmt/format.h>

#include <cstring>
#include <string>
#include <vector>

#include "farmem/common/check.h"
#include "farmem/common/clock.h"
#include "farmem/memnode/memops.h"
#include "farmem/memnode/service.h"
#include "farmem/memnode/stable_replies.h"
#include "farmem/storage/journal.h"
#include "persist_group.h"

namespace farmem::memnode {
namespace {

namespace w = farmem::wire;

// Reads a request struct from the start of the payload (exactly sizeof(T) plus `extra`).
template <typename T>
Status parse(const Request& r, T* out, const char* what, size_t extra = 0) {
  if (r.payload.size() < sizeof(T)) {
    return InvalidArgument(fmt::format("{} request is {} bytes, expected {}", what,
                                       r.payload.size(), sizeof(T) + extra));
  }
  std::memcpy(out, r.payload.data(), sizeof(T));
  return OkStatus();
}

template <typename T>
std::string_view bytes_of(const T& v) {
  return {reinterpret_cast<const char*>(&v), sizeof(v)};
}

// The name that follows a fixed-size struct in the payload, checked against its length field.
Result<std::string_view> trailing_name(const Request& r, size_t fixed, uint32_t name_bytes,
                                       const char* what) {
  if (r.payload.size() != fixed + name_bytes) {
    return InvalidArgument(fmt::format("{} request announces a {}-byte name but carries {}", what,
                                       name_bytes, r.payload.size() - fixed));
  }
  return std::string_view(reinterpret_cast<const char*>(r.payload.data()) + fixed, name_bytes);
}

class CoreWorker : public ServiceWorker {
 public:
  explicit CoreWorker(const WorkerContext& c)
      : node_(*c.node), replies_(c), persists_(*c.node, replies_) {}

  void handle(Request& r, Responder responder) override {
    std::string out;
    lsn_ = 0;
    grouped_ = false;
    Status s = dispatch(r, &out);
    if (grouped_) {  // a checked persist on a durable node: logged at the round's end
      persists_.add(ranges_, ordered_, std::move(responder));
      return;
    }
    replies_.finish(lsn_, std::move(responder), s, std::move(out));
  }
  // The end of a round of requests: its persists go to the log together.
  void poll(uint64_t) override {
    persists_.flush();
    replies_.poll();
  }

 private:
  Status dispatch(const Request& r, std::string* out) {
    switch (static_cast<w::Opcode>(r.header.opcode)) {
      case w::Opcode::kAlloc:
        return alloc(r, out);
      case w::Opcode::kFree:
        return free_block(r);
      case w::Opcode::kRootPublish:
      case w::Opcode::kRootLookup:
      case w::Opcode::kRootRemove:
        return root(r, out);
      case w::Opcode::kStats:
        return stats(r, out);
      case w::Opcode::kEcho:
        out->assign(reinterpret_cast<const char*>(r.payload.data()), r.payload.size());
        return OkStatus();
      case w::Opcode::kObjectCreate:
      case w::Opcode::kObjectOpen:
        return object_by_name(r, out);
      case w::Opcode::kObjectDestroy:
      case w::Opcode::kObjectPersist:
        return object_by_id(r);
      case w::Opcode::kSessionsAlive:
        return sessions_alive(r, out);
      case w::Opcode::kMemOps:
        return memops(r, out);
      case w::Opcode::kPersist:
        return persist(r);
      default:
        return InvalidArgument(fmt::format("unknown RPC opcode {}", r.header.opcode));
    }
  }

  // An owner named in a request: the caller's session, or an existing object that no service
  // has pinned.
  Result<uint64_t> owner_for(const Request& r, uint64_t requested) {
    if (requested == w::kOwnerSession) return r.session;
    if ((requested & w::kObjectOwnerBit) == 0) {
      return InvalidArgument("owner must be 0 (this session) or an object id");
    }
    FARMEM_TRY(unpinned(requested));
    return requested;
  }

  // Requires mu. kNotFound for no such object, kPermissionDenied for a service's object.
  Status unpinned(uint64_t id) {
    auto o = node_.objects.find(id);
    FARMEM_TRY(o);
    if (o->pinned) {
      return PermissionDenied(
          fmt::format("object '{}' belongs to a service of the memory node", o->name));
    }
    return OkStatus();
  }

  Status alloc(const Request& r, std::string* out) {
    w::AllocRequest req;
    FARMEM_TRY(parse(r, &req, "alloc"));
    if (r.payload.size() != sizeof(req)) return InvalidArgument("alloc request has extra bytes");
    if (req.alignment > 4096) return InvalidArgument("alignment above 4096 is not supported");
    std::lock_guard<std::mutex> lock(node_.mu);
    auto owner = owner_for(r, req.owner);
    FARMEM_TRY(owner);
    auto b = node_.heap.allocate(req.bytes, req.alignment, *owner);
    FARMEM_TRY(b);
    auto logged = node_.log_locked(NodeRecordKind::kAlloc, b->offset, b->bytes, *owner);
    if (!logged.ok()) {
      const Status undone = node_.heap.free(b->offset, *owner);
      FARMEM_ASSERT(undone.ok(), "an allocation just made cannot be freed");
      return logged.status();
    }
    lsn_ = *logged;
    out->assign(bytes_of(w::AllocResponse{b->offset, b->bytes}));
    return OkStatus();
  }

  // NodeState::commit_locked, keeping the LSN this request's answer waits for. Requires mu.
  Status commit_locked(NodeRecordKind kind, uint64_t a, uint64_t b = 0,
                       std::string_view name = {}) {
    FARMEM_ASSIGN_OR_RETURN(lsn_, node_.commit_locked(kind, a, b, name));
    return OkStatus();
  }

  Status free_block(const Request& r) {
    w::FreeRequest req;
    FARMEM_TRY(parse(r, &req, "free"));
    if (r.payload.size() != sizeof(req)) return InvalidArgument("free request has extra bytes");
    std::lock_guard<std::mutex> lock(node_.mu);
    const uint64_t owner = node_.heap.owner_of(req.offset);
    if (owner & w::kObjectOwnerBit) FARMEM_TRY(unpinned(owner));
    FARMEM_TRY(node_.heap.check_free(req.offset, r.session));
    return commit_locked(NodeRecordKind::kFree, req.offset);
  }

  Status root(const Request& r, std::string* out) {
    w::RootRequest req;
    FARMEM_TRY(parse(r, &req, "root"));
    auto name = trailing_name(r, sizeof(req), req.name_bytes, "root");
    FARMEM_TRY(name);
    const auto op = static_cast<w::Opcode>(r.header.opcode);
    if ((req.flags & ~w::kRootFlagReplace) != 0) return InvalidArgument("unknown root flags");
    std::lock_guard<std::mutex> lock(node_.mu);
    if (op == w::Opcode::kRootPublish) {
      if (req.owner != 0) {
        if ((req.owner & w::kObjectOwnerBit) == 0) {
          return InvalidArgument("a root's owner must be an object id or 0");
        }
        FARMEM_TRY(node_.objects.find(req.owner).status());
      }
      FARMEM_TRY(node_.roots.check_publish(*name, (req.flags & w::kRootFlagReplace) != 0));
      return commit_locked(NodeRecordKind::kRootPublish, req.address, req.owner, *name);
    }
    if (op == w::Opcode::kRootLookup) {
      auto a = node_.roots.lookup(*name);
      FARMEM_TRY(a);
      out->assign(bytes_of(w::RootResponse{*a}));
      return OkStatus();
    }
    FARMEM_TRY(node_.roots.lookup(*name).status());
    return commit_locked(NodeRecordKind::kRootRemove, 0, 0, *name);
  }

  Status stats(const Request& r, std::string* out) {
    w::StatsResponse s{};
    {
      std::lock_guard<std::mutex> lock(node_.mu);
      s.capacity_bytes = node_.region_bytes;
      s.used_bytes = node_.heap.used_bytes();
      s.roots = node_.roots.size();
      s.allocations = node_.heap.live_allocations();
      s.objects = static_cast<uint32_t>(node_.objects.size());
      s.connections = node_.sessions.size();
    }
    s.rpcs_served = node_.rpcs_served.load() + 1;  // count this one
    s.node_id = node_.config.node_id;
    s.worker_count = static_cast<uint16_t>(node_.worker_count);
    s.uptime_ms = (now_ns() - node_.start_ns) / 1'000'000;
    s.sessions_total = node_.sessions_total.load();
    s.refused = node_.refused.load();
    s.rpcs_dropped = node_.rpcs_dropped.load();
    if (node_.journal != nullptr) {
      const storage::Journal::Stats j = node_.journal->stats();
      s.durability = static_cast<uint32_t>(node_.journal->durability());
      s.recovery_dropped_records = static_cast<uint32_t>(node_.recovery_dropped_records);
      s.recovery_records = node_.recovery_records;
      s.recovery_us = node_.recovery_us;
      s.log_bytes = j.log_bytes;
      s.syncs = j.syncs;
    }
    out->assign(bytes_of(s));
    return OkStatus();
  }

  Status object_by_name(const Request& r, std::string* out) {
    w::ObjectRequest req;
    FARMEM_TRY(parse(r, &req, "object"));
    auto name = trailing_name(r, sizeof(req), req.name_bytes, "object");
    FARMEM_TRY(name);
    if (req.id != 0) return InvalidArgument("object create/open takes a name, not an id");
    const bool create = static_cast<w::Opcode>(r.header.opcode) == w::Opcode::kObjectCreate;
    if ((req.flags & ~(create ? w::kObjectEphemeral : 0u)) != 0) {
      return InvalidArgument("unknown object flags");
    }
    std::lock_guard<std::mutex> lock(node_.mu);
    auto o = create ? node_.objects.create(*name, (req.flags & w::kObjectEphemeral) ? r.session : 0)
                    : node_.objects.open(*name);
    FARMEM_TRY(o);
    if (create) {
      auto logged = node_.log_locked(NodeRecordKind::kObjectCreate, o->id, o->session, 0, o->name);
      if (!logged.ok()) {
        const Status undone = node_.objects.remove(o->id);
        FARMEM_ASSERT(undone.ok(), "an object just made cannot be removed");
        return logged.status();
      }
      lsn_ = *logged;
    }
    out->assign(bytes_of(w::ObjectResponse{o->id, o->session ? w::kObjectEphemeral : 0u, 0}));
    return OkStatus();
  }

  Status object_by_id(const Request& r) {
    w::ObjectRequest req;
    FARMEM_TRY(parse(r, &req, "object"));
    if (r.payload.size() != sizeof(req) || req.name_bytes != 0 || req.flags != 0) {
      return InvalidArgument("object destroy/persist takes only an id");
    }
    if ((req.id & w::kObjectOwnerBit) == 0) return InvalidArgument("not an object id");
    std::lock_guard<std::mutex> lock(node_.mu);
    FARMEM_TRY(unpinned(req.id));
    return commit_locked(static_cast<w::Opcode>(r.header.opcode) == w::Opcode::kObjectPersist
                             ? NodeRecordKind::kObjectPersist
                             : NodeRecordKind::kObjectDestroy,
                         req.id);
  }

  // Served one-sided operations; on a durable node the copies their persists took are logged
  // in order and the answer waits until they are stable.
  Status memops(const Request& r, std::string* out) {
    // The log keeps the order bytes were read in: the round's grouped persists read theirs
    // before these operations write and copy.
    if (node_.journal != nullptr) persists_.flush();
    std::vector<PersistCopy> copies;
    const MemopsTarget target{node_.region_base, node_.region_bytes, &node_.procedures};
    FARMEM_TRY(execute_memops(target, r.payload.data(), r.payload.size(), out,
                              node_.journal ? &copies : nullptr));
    if (copies.empty()) return OkStatus();
    std::vector<storage::Journal::RangeCopy> ranges;
    ranges.reserve(copies.size());
    for (const PersistCopy& c : copies) ranges.push_back({c.offset, c.bytes});
    FARMEM_ASSIGN_OR_RETURN(lsn_, node_.journal->append_ranges(ranges));
    return OkStatus();
  }

  // Checks the named region ranges; on a durable node they are logged with the round's other
  // persists (PersistGroup) and the answer waits until they are stable.
  Status persist(const Request& r) {
    w::PersistRequest req;
    FARMEM_TRY(parse(r, &req, "persist"));
    if ((req.flags & ~w::kPersistOrdered) != 0 || req.count == 0 ||
        req.count > w::kMaxPersistRanges ||
        r.payload.size() != sizeof(req) + sizeof(w::PersistRange) * req.count) {
      return InvalidArgument(
          fmt::format("persist request for {} ranges in {} bytes", req.count, r.payload.size()));
    }
    std::vector<w::PersistRange>& ranges = ranges_;
    ranges.resize(req.count);
    std::memcpy(ranges.data(), r.payload.data() + sizeof(req), sizeof(w::PersistRange) * req.count);
    for (const w::PersistRange& range : ranges) {
      if (range.offset < w::kRegionHeaderBytes || range.offset > node_.region_bytes ||
          range.bytes > node_.region_bytes - range.offset) {
        return InvalidArgument(fmt::format("persist range [{:#x}, +{}) is outside the region",
                                           range.offset, range.bytes));
      }
    }
    if (node_.journal == nullptr) return OkStatus();  // a volatile node has nothing to keep
    grouped_ = true;
    ordered_ = (req.flags & w::kPersistOrdered) != 0;  // answered once in the log, in order
    return OkStatus();
  }

  Status sessions_alive(const Request& r, std::string* out) {
    w::SessionsAliveRequest req;
    FARMEM_TRY(parse(r, &req, "sessions-alive"));
    if (req.reserved != 0 || req.count == 0 || req.count > w::kMaxSessionsPerQuery ||
        r.payload.size() != sizeof(req) + 8ull * req.count) {
      return InvalidArgument(fmt::format("sessions-alive request for {} ids in {} bytes", req.count,
                                         r.payload.size()));
    }
    out->assign(req.count, '\0');
    std::lock_guard<std::mutex> lock(node_.mu);
    for (uint32_t i = 0; i < req.count; ++i) {
      uint64_t id;
      std::memcpy(&id, r.payload.data() + sizeof(req) + 8 * i, 8);
      (*out)[i] = node_.sessions.count(id) ? 1 : 0;
    }
    return OkStatus();
  }

  NodeState& node_;
  StableReplies replies_;
  PersistGroup persists_;
  uint64_t lsn_ = 0;  // the request's last journal record (0: none)
  // persist(): the checked ranges of a request the group takes, and how it is answered.
  std::vector<w::PersistRange> ranges_;
  bool grouped_ = false;
  bool ordered_ = false;
};

class CoreService : public Service {
 public:
  std::string_view name() const override { return "core"; }
  uint16_t first_opcode() const override { return 1; }
  uint16_t last_opcode() const override { return w::kLastCoreOpcode; }
  std::unique_ptr<ServiceWorker> start_worker(const WorkerContext& c) override {
    return std::make_unique<CoreWorker>(c);
  }
};

}  // namespace

std::shared_ptr<Service> make_core_service() { return std::make_shared<CoreService>(); }

Status ServiceRegistry::add(std::shared_ptr<Service> s) {
  if (s == nullptr) return InvalidArgument("null service");
  const bool no_rpcs = s->first_opcode() == 0 && s->last_opcode() == 0;
  if (!no_rpcs && (s->first_opcode() == 0 || s->first_opcode() > s->last_opcode())) {
    return InvalidArgument(fmt::format("service {}: empty opcode range", s->name()));
  }
  for (const auto& o : services_) {
    if (no_rpcs || (o->first_opcode() == 0 && o->last_opcode() == 0)) continue;
    if (s->first_opcode() <= o->last_opcode() && o->first_opcode() <= s->last_opcode()) {
      return InvalidArgument(fmt::format("service {}: opcodes {}..{} overlap service {}", s->name(),
                                         s->first_opcode(), s->last_opcode(), o->name()));
    }
  }
  services_.push_back(std::move(s));
  return OkStatus();
}

int ServiceRegistry::find(uint16_t opcode) const {
  for (size_t i = 0; i < services_.size(); ++i) {
    if (opcode != 0 && opcode >= services_[i]->first_opcode() &&
        opcode <= services_[i]->last_opcode()) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

}  // namespace farmem::memnode
