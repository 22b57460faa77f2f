#include "farmem/memnode/server.h"

#include <fmt/format.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <unordered_map>

#include "farmem/common/clock.h"
#include "farmem/common/log.h"
#include "farmem/fabric/endpoint.h"
#include "farmem/fabric/listener.h"
#include "farmem/fabric/rpc.h"
#include "farmem/fabric/wire.h"
#include "farmem/fabric/worker.h"

namespace farmem::memnode {

namespace w = farmem::wire;

// One progress thread of a memory node.
class ServerWorker {
 public:
  ServerWorker(Server& server, uint32_t index) : server_(server), index_(index) {}
  ~ServerWorker() {
    endpoints_.clear();
    listener_.reset();
    worker_.reset();
    if (epoll_fd_ >= 0) close(epoll_fd_);
  }

  Status init(fabric::Context& context, uint16_t port) {
    fabric::WorkerOptions wo;
    wo.register_rpc_client = false;
    auto worker = fabric::Worker::create(context, wo);
    if (!worker.ok()) return worker.status();
    worker_ = std::move(*worker);
    FARMEM_RETURN_IF_ERROR(worker_->set_am_handler(w::kAmRpcRequest, &ServerWorker::on_request, this));
    auto l = fabric::Listener::listen(*worker_, server_.config_.listen, port,
                                      [this](ucp_conn_request_h r) { on_connect(r); });
    if (!l.ok()) return l.status();
    listener_ = std::move(*l);
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0) return Internal(fmt::format("epoll_create1: {}", std::strerror(errno)));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = worker_->event_fd();
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, worker_->event_fd(), &ev) != 0) {
      return Internal(fmt::format("epoll_ctl(worker efd): {}", std::strerror(errno)));
    }
    ev.data.fd = server_.stop_fd_;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, server_.stop_fd_, &ev) != 0) {
      return Internal(fmt::format("epoll_ctl(stop fd): {}", std::strerror(errno)));
    }
    return OkStatus();
  }

  uint16_t port() const { return listener_->port(); }

  void run() {
    const uint64_t spin_ns = static_cast<uint64_t>(server_.config_.idle_spin_us) * 1000;
    uint64_t last_active = now_ns();
    uint32_t loops = 0;
    while (!server_.stopping_.load(std::memory_order_relaxed)) {
      unsigned n = worker_->progress();
      if (!queue_.empty()) n += process_queue();
      if (reap_pending_ && (++loops & 1023) == 0) reap_endpoints();
      if (n > 0) {
        last_active = now_ns();
        continue;
      }
      uint64_t now = now_ns();
      if (now - last_active < spin_ns) {
        sched_yield();  // stay responsive, but let a client on this core run
        continue;
      }
      if (reap_pending_) reap_endpoints();
      if (!worker_->arm()) continue;  // events arrived meanwhile
      epoll_event events[2];
      // Woken by traffic (spin again) or by the timeout (sleep again at once).
      int ready = epoll_wait(epoll_fd_, events, 2, 1000);
      last_active = ready > 0 ? now_ns() : 0;
    }
  }

 private:
  struct Incoming {
    w::RpcHeader header;
    Status error;  // set when the request was rejected before dispatch
    std::vector<uint8_t> payload;
    ucp_ep_h reply_ep;
  };

  static constexpr size_t kMaxQueued = 4096;
  static constexpr size_t kMaxQueuedBytes = 16u << 20;

  void on_connect(ucp_conn_request_h request) {
    auto ep = fabric::Endpoint::accept(*worker_, request);
    if (!ep.ok()) {
      log::warn("node {}: rejected a connection: {}", server_.config_.node_id,
                ep.status().to_string());
      return;
    }
    ucp_ep_h h = (*ep)->handle();
    endpoints_.emplace(h, std::move(*ep));
    server_.connections_.fetch_add(1);
    reap_pending_ = true;
  }

  static ucs_status_t on_request(void* arg, const void* header, size_t header_length, void* data,
                                 size_t length, const ucp_am_recv_param_t* param) {
    auto* self = static_cast<ServerWorker*>(arg);
    Incoming in;
    in.reply_ep = (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ? param->reply_ep : nullptr;
    in.error = fabric::validate_request_header(header, header_length, length, &in.header);
    if (in.error.ok() && (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
      in.error = InvalidArgument("RPC requests must be sent eagerly");
    }
    if (in.error.ok()) {
      if (self->queue_.size() >= kMaxQueued || self->queued_bytes_ + length > kMaxQueuedBytes) {
        in.error = ResourceExhausted("memory node request queue is full; retry later");
      } else {
        const auto* b = static_cast<const uint8_t*>(data);
        in.payload.assign(b, b + length);
        self->queued_bytes_ += length;
      }
    }
    if (self->queue_.size() >= 2 * kMaxQueued) return UCS_OK;  // flooded: the sender times out
    self->queue_.push_back(std::move(in));
    // Data of a rendezvous message we do not receive is dropped by returning UCS_OK.
    return UCS_OK;
  }

  unsigned process_queue() {
    unsigned n = 0;
    while (!queue_.empty()) {
      Incoming in = std::move(queue_.front());
      queue_.pop_front();
      queued_bytes_ -= in.payload.size();
      ++n;
      auto it = endpoints_.find(in.reply_ep);
      if (it == endpoints_.end() || it->second->failed()) continue;  // peer gone
      fabric::Endpoint& ep = *it->second;
      std::string out;
      Status s = in.error.ok() ? dispatch(in, out) : in.error;
      server_.rpcs_served_.fetch_add(1, std::memory_order_relaxed);
      Status sent = s.ok() ? ep.send_reply(in.header, StatusCode::kOk, out.data(), out.size())
                           : ep.send_reply(in.header, s.code(), s.message().data(),
                                           s.message().size());
      if (!sent.ok()) log::debug("reply to {} failed: {}", ep.peer(), sent.to_string());
    }
    return n;
  }

  template <typename T>
  static Status parse(const Incoming& in, T* out, const char* what) {
    if (in.payload.size() < sizeof(T)) {
      return InvalidArgument(fmt::format("{} request is {} bytes, expected at least {}", what,
                                         in.payload.size(), sizeof(T)));
    }
    std::memcpy(out, in.payload.data(), sizeof(T));
    return OkStatus();
  }

  template <typename T>
  static void emit(std::string& out, const T& v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof(v));
  }

  Status dispatch(const Incoming& in, std::string& out) {
    switch (static_cast<w::Opcode>(in.header.opcode)) {
      case w::Opcode::kHello: return hello(in, out);
      case w::Opcode::kAlloc: return alloc(in, out);
      case w::Opcode::kFree: return free_block(in);
      case w::Opcode::kRootPublish:
      case w::Opcode::kRootLookup:
      case w::Opcode::kRootRemove: return root(in, out);
      case w::Opcode::kStats: return stats(out);
      case w::Opcode::kEcho:
        out.assign(reinterpret_cast<const char*>(in.payload.data()), in.payload.size());
        return OkStatus();
      default:
        return InvalidArgument(fmt::format("unknown RPC opcode {}", in.header.opcode));
    }
  }

  Status hello(const Incoming& in, std::string& out) {
    w::HelloRequest req;
    FARMEM_RETURN_IF_ERROR(parse(in, &req, "hello"));
    log::debug("node {}: hello from client thread {}", server_.config_.node_id, req.client_tag);
    if (req.magic != w::kRpcMagic) return ProtocolError("hello carries a bad magic");
    if (req.version != w::kProtocolVersion) {
      return VersionMismatch(fmt::format(
          "client speaks farmem protocol v{}, this memory node speaks v{}", req.version,
          w::kProtocolVersion));
    }
    const fabric::MemoryRegion& region = *server_.region_;
    w::HelloResponse resp{};
    resp.magic = w::kRpcMagic;
    resp.version = w::kProtocolVersion;
    resp.node_id = server_.config_.node_id;
    resp.region_base = reinterpret_cast<uint64_t>(region.base());
    resp.region_bytes = region.bytes();
    resp.rkey_bytes = static_cast<uint32_t>(region.packed_rkey().size());
    resp.worker_count = static_cast<uint16_t>(server_.workers_.size());
    resp.worker_index = static_cast<uint16_t>(index_);
    for (size_t i = 0; i < server_.workers_.size(); ++i) {
      resp.worker_ports[i] = server_.workers_[i]->port();
    }
    emit(out, resp);
    out.append(reinterpret_cast<const char*>(region.packed_rkey().data()),
               region.packed_rkey().size());
    return OkStatus();
  }

  Status alloc(const Incoming& in, std::string& out) {
    w::AllocRequest req;
    FARMEM_RETURN_IF_ERROR(parse(in, &req, "alloc"));
    if (req.alignment > 4096) return InvalidArgument("alignment above 4096 is not supported");
    std::lock_guard<std::mutex> lock(server_.mu_);
    auto b = server_.allocator_.allocate(req.bytes, req.alignment);
    if (!b.ok()) return b.status();
    emit(out, w::AllocResponse{b->offset, b->bytes});
    return OkStatus();
  }

  Status free_block(const Incoming& in) {
    w::FreeRequest req;
    FARMEM_RETURN_IF_ERROR(parse(in, &req, "free"));
    std::lock_guard<std::mutex> lock(server_.mu_);
    return server_.allocator_.free(req.offset);
  }

  Status root(const Incoming& in, std::string& out) {
    w::RootRequest req;
    FARMEM_RETURN_IF_ERROR(parse(in, &req, "root"));
    if (in.payload.size() != sizeof(req) + req.name_bytes) {
      return InvalidArgument(fmt::format("root request announces a {}-byte name but carries {}",
                                         req.name_bytes, in.payload.size() - sizeof(req)));
    }
    std::string_view name(reinterpret_cast<const char*>(in.payload.data()) + sizeof(req),
                          req.name_bytes);
    std::lock_guard<std::mutex> lock(server_.mu_);
    switch (static_cast<w::Opcode>(in.header.opcode)) {
      case w::Opcode::kRootPublish:
        return server_.roots_.publish(name, req.address, (req.flags & 1u) != 0);
      case w::Opcode::kRootLookup: {
        auto a = server_.roots_.lookup(name);
        if (!a.ok()) return a.status();
        emit(out, w::RootResponse{*a});
        return OkStatus();
      }
      default:
        return server_.roots_.remove(name);
    }
  }

  Status stats(std::string& out) {
    w::StatsResponse r{};
    {
      std::lock_guard<std::mutex> lock(server_.mu_);
      r.capacity_bytes = server_.region_->bytes();
      r.used_bytes = server_.allocator_.used_bytes();
      r.roots = server_.roots_.size();
      r.allocations = server_.allocator_.live_allocations();
    }
    r.rpcs_served = server_.rpcs_served_.load() + 1;  // count this one
    r.connections = server_.connections_.load();
    r.node_id = server_.config_.node_id;
    r.worker_count = static_cast<uint16_t>(server_.workers_.size());
    r.uptime_ms = (now_ns() - server_.start_ns_) / 1'000'000;
    emit(out, r);
    return OkStatus();
  }

  void reap_endpoints() {
    reap_pending_ = false;
    for (auto it = endpoints_.begin(); it != endpoints_.end();) {
      if (it->second->closed()) {
        log::debug("node {}: connection from {} closed: {}", server_.config_.node_id,
                   it->second->peer(), it->second->failure().to_string());
        it = endpoints_.erase(it);
        server_.connections_.fetch_sub(1);
      } else {
        if (it->second->failed()) reap_pending_ = true;
        ++it;
      }
    }
    if (!endpoints_.empty()) reap_pending_ = true;  // keep checking for failures
  }

  Server& server_;
  uint32_t index_;
  std::unique_ptr<fabric::Worker> worker_;
  std::unique_ptr<fabric::Listener> listener_;
  std::unordered_map<ucp_ep_h, std::unique_ptr<fabric::Endpoint>> endpoints_;
  std::deque<Incoming> queue_;
  size_t queued_bytes_ = 0;
  bool reap_pending_ = false;
  int epoll_fd_ = -1;
};

Server::Server(const ServerConfig& config)
    : allocator_(config.capacity_bytes, kRegionHeaderBytes), config_(config) {}

Result<std::unique_ptr<Server>> Server::create(const ServerConfig& config) {
  FARMEM_RETURN_IF_ERROR(config.validate());
  std::unique_ptr<Server> s(new Server(config));
  s->start_ns_ = now_ns();
  s->stop_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (s->stop_fd_ < 0) return Internal(fmt::format("eventfd: {}", std::strerror(errno)));
  fabric::ContextOptions co;
  co.tls = config.tls;
  co.net_devices = config.net_devices;
  auto ctx = fabric::Context::create(co);
  if (!ctx.ok()) return ctx.status();
  s->context_ = std::move(*ctx);
  auto region = fabric::MemoryRegion::allocate(*s->context_, config.capacity_bytes);
  if (!region.ok()) return region.status();
  s->region_ = std::move(*region);
  RegionHeader hdr{};
  hdr.magic = kRegionMagic;
  hdr.version = wire::kProtocolVersion;
  hdr.node_id = config.node_id;
  hdr.capacity_bytes = config.capacity_bytes;
  std::memcpy(s->region_->base(), &hdr, sizeof(hdr));
  for (uint32_t i = 0; i < config.workers; ++i) {
    auto worker = std::make_unique<ServerWorker>(*s, i);
    uint16_t port = config.port == 0 ? 0 : static_cast<uint16_t>(config.port + i);
    Status st = worker->init(*s->context_, port);
    if (!st.ok()) return Status(st.code(), fmt::format("worker {}: {}", i, st.message()));
    s->workers_.push_back(std::move(worker));
  }
  return s;
}

Server::~Server() {
  workers_.clear();
  region_.reset();
  context_.reset();
  if (stop_fd_ >= 0) close(stop_fd_);
}

std::vector<uint16_t> Server::ports() const {
  std::vector<uint16_t> p;
  for (const auto& w : workers_) p.push_back(w->port());
  return p;
}

void Server::stop() {
  stopping_.store(true);
  uint64_t one = 1;
  ssize_t r = write(stop_fd_, &one, sizeof(one));
  (void)r;
}

Status Server::run() {
  std::vector<std::thread> threads;
  for (size_t i = 1; i < workers_.size(); ++i) {
    threads.emplace_back([this, i] { workers_[i]->run(); });
  }
  workers_[0]->run();
  for (auto& t : threads) t.join();
  return OkStatus();
}

}  // namespace farmem::memnode
