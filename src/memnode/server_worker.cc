#include "server_worker.h"

#include <fmt/format.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "farmem/common/clock.h"
#include "farmem/common/log.h"
#include "farmem/fabric/door.h"
#include "farmem/fabric/rpc.h"
#include "farmem/memnode/idle_spin.h"

namespace farmem::memnode {

namespace w = farmem::wire;

namespace {

// Bounds on what clients can make a worker hold.
constexpr size_t kMaxQueued = 4096;                 // requests per worker
constexpr size_t kMaxQueuedBytes = 16u << 20;       // payload bytes per worker
constexpr size_t kMaxQueuedPerSession = 512;        // requests per session
constexpr size_t kMaxForwarded = 4096;              // forwarded requests waiting per worker
constexpr size_t kMaxForwardedBytes = 16u << 20;    // their payload bytes
constexpr uint32_t kEventRounds = 64;               // busy rounds between socket polls
constexpr uint64_t kShutdownFlushNs = 200'000'000;  // replies get this long to leave at exit

// epoll tags: the kind in the top byte, a session id in the rest.
constexpr uint64_t kTagUcx = 1ull << 56;
constexpr uint64_t kTagStop = 2ull << 56;
constexpr uint64_t kTagHandoff = 3ull << 56;
constexpr uint64_t kTagSession = 4ull << 56;
constexpr uint64_t kTagMail = 5ull << 56;
constexpr uint64_t kTagService = 6ull << 56;  // a service's fd (WorkerContext::watch_fd)
constexpr uint64_t kTagMask = 0xFFull << 56;

// The idle spin's wait hint. Not sched_yield(): on a loaded machine the kernel's scheduler
// (EEVDF) treats a yield as giving up the rest of the slice, so the worker waited a whole
// scheduling round (milliseconds) before it polled again, and so did every served round trip.
inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

void send_frame(int fd, w::Beat kind, uint32_t seq) {
  w::HeartbeatFrame f{static_cast<uint32_t>(kind), seq};
  // Best effort: a full socket buffer means the client is not reading; it will time out.
  (void)::send(fd, &f, sizeof(f), MSG_NOSIGNAL | MSG_DONTWAIT);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Responder

Responder::Responder(Responder&& o) noexcept
    : worker_(std::exchange(o.worker_, nullptr)),
      session_(o.session_),
      header_(o.header_),
      home_(o.home_) {}

Responder& Responder::operator=(Responder&& o) noexcept {
  if (this != &o) {
    if (worker_ != nullptr) fail(Internal("request abandoned by its service"));
    worker_ = std::exchange(o.worker_, nullptr);
    session_ = o.session_;
    header_ = o.header_;
    home_ = o.home_;
  }
  return *this;
}

Responder::~Responder() {
  if (worker_ != nullptr) fail(Internal("request abandoned by its service"));
}

void Responder::ok(const void* data, size_t bytes) {
  if (worker_ == nullptr) return;
  std::exchange(worker_, nullptr)
      ->send_reply(session_, home_, header_, StatusCode::kOk, data, bytes);
}

void Responder::fail(const Status& s) {
  if (worker_ == nullptr) return;
  StatusCode code = s.ok() ? StatusCode::kInternal : s.code();
  std::string_view msg = s.ok() ? std::string_view("failed without a status") : s.message();
  std::exchange(worker_, nullptr)
      ->send_reply(session_, home_, header_, code, msg.data(), msg.size());
}

void Responder::finish(const Status& s, std::string_view bytes) {
  if (s.ok()) {
    ok(bytes);
  } else {
    fail(s);
  }
}

// ---------------------------------------------------------------------------------------------
// WorkerContext

void WorkerContext::forward(uint32_t target_worker, Request request, Responder responder) const {
  if (host == nullptr) {
    return responder.fail(Internal("request forwarding needs a running memory node"));
  }
  host->forward(service_index, target_worker, std::move(request), std::move(responder));
}

Status WorkerContext::watch_fd(int fd) const {
  if (host == nullptr) return Internal("watching a descriptor needs a running memory node");
  return host->watch_fd(fd);
}

void WorkerContext::unwatch_fd(int fd) const {
  if (host != nullptr) host->unwatch_fd(fd);
}

uint64_t WorkerContext::now_ns() const { return farmem::now_ns(); }

// ---------------------------------------------------------------------------------------------
// Set-up

ServerWorker::ServerWorker(NodeState& node, const ServiceRegistry& services, uint32_t index,
                           int stop_fd)
    : node_(node), services_(services), index_(index), stop_fd_(stop_fd) {}

ServerWorker::~ServerWorker() {
  peers_.clear();  // answers still held by services are dropped, not mailed to a dead worker
  for (auto& [id, s] : sessions_) {
    if (s->fd >= 0) ::close(s->fd);
  }
  sessions_.clear();
  service_workers_.clear();
  worker_.reset();
  for (Admission& a : handoff_) ::close(a.fd);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (handoff_fd_ >= 0) ::close(handoff_fd_);
  if (mail_fd_ >= 0) ::close(mail_fd_);
}

Status ServerWorker::init(fabric::Context& context) {
  fabric::WorkerOptions wo;
  wo.register_rpc_client = false;
  wo.collect_closed = true;
  auto worker = fabric::Worker::create(context, wo);
  FARMEM_TRY(worker);
  worker_ = std::move(*worker);
  FARMEM_TRY(worker_->set_am_handler(w::kAmRpcRequest, &ServerWorker::on_request, this));
  address_ = worker_->address();
  if (address_.empty()) return Internal("cannot read the UCX worker address");
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  handoff_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  mail_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || handoff_fd_ < 0 || mail_fd_ < 0) {
    return Internal(fmt::format("epoll/eventfd: {}", std::strerror(errno)));
  }
  const std::pair<int, uint64_t> fds[] = {{worker_->event_fd(), kTagUcx},
                                          {stop_fd_, kTagStop},
                                          {handoff_fd_, kTagHandoff},
                                          {mail_fd_, kTagMail}};
  for (auto [fd, tag] : fds) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = tag;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      return Internal(fmt::format("epoll_ctl: {}", std::strerror(errno)));
    }
  }
  for (size_t i = 0; i < services_.services().size(); ++i) {
    WorkerContext wc{&node_, index_, node_.worker_count, static_cast<uint32_t>(i), this};
    service_workers_.push_back(services_.services()[i]->start_worker(wc));
  }
  return OkStatus();
}

void ServerWorker::adopt(Admission a) {
  {
    std::lock_guard<std::mutex> lock(handoff_mu_);
    handoff_.push_back(std::move(a));
  }
  uint64_t one = 1;
  ssize_t r = ::write(handoff_fd_, &one, sizeof(one));
  (void)r;
}

size_t ServerWorker::pending_admissions() {
  std::lock_guard<std::mutex> lock(handoff_mu_);
  return handoff_.size();
}

// ---------------------------------------------------------------------------------------------
// The loop

void ServerWorker::run() {
  IdleSpin spin(static_cast<uint64_t>(node_.config.idle_spin_us) * 1000);
  uint64_t last_active = now_ns();
  uint32_t rounds = 0;
  bool spinning = false;
  while (!node_.stopping.load(std::memory_order_relaxed)) {
    unsigned n = worker_->progress();
    end_failed_sessions();
    if (!queue_.empty()) n += process_queue();
    if (mail_count_.load(std::memory_order_relaxed) != 0) n += process_mail();
    poll_services();
    if (++rounds % kEventRounds == 0) n += poll_events(0);
    if (n > 0) {
      if (std::exchange(spinning, false)) spin.productive();
      last_active = now_ns();
      continue;
    }
    const uint64_t now = now_ns();
    if (now - last_active < spin.window_ns()) {
      spinning = true;
      spin_pause();  // stay responsive: the next request is probably close
      continue;
    }
    spinning = false;
    spin.wasted(now);
    n = poll_events(0);
    if (n > 0 || !worker_->arm()) continue;  // events arrived meanwhile
    // Posters write mail_fd_ while asleep_ is set; mail posted before it was set is seen here.
    asleep_.store(true);
    if (mail_count_.load() != 0) {
      asleep_.store(false);
      continue;
    }
    // Woken by traffic, a socket, a new session, mail, a watched fd or stop; or by the timeout
    // (a service's wake-up time, else 1 s: sleep again).
    bool woke = false;
    poll_events(sleep_timeout_ms(), &woke);
    asleep_.store(false);
    last_active = woke ? now_ns() : 0;
  }
  shut_down();
}

void ServerWorker::poll_services() {
  // The core service polls only to answer what waits for the journal.
  if (service_workers_.size() < 2 && node_.journal == nullptr) return;
  const uint64_t now = now_ns();
  for (auto& sw : service_workers_) sw->poll(now);
}

int ServerWorker::sleep_timeout_ms() const {
  uint64_t wake = 0;
  for (const auto& sw : service_workers_) {
    const uint64_t w = sw->wake_at_ns();
    if (w != 0 && (wake == 0 || w < wake)) wake = w;
  }
  if (wake == 0) return 1000;
  const uint64_t now = now_ns();
  if (wake <= now) return 0;
  return static_cast<int>(std::min<uint64_t>(1000, (wake - now + 999'999) / 1'000'000));
}

unsigned ServerWorker::poll_events(int timeout_ms, bool* woke) {
  epoll_event events[64];
  int ready = epoll_wait(epoll_fd_, events, 64, timeout_ms);
  if (woke != nullptr) *woke = ready > 0;
  unsigned n = 0;
  for (int i = 0; i < ready; ++i) {
    const uint64_t tag = events[i].data.u64;
    switch (tag & kTagMask) {
      case kTagHandoff: {
        uint64_t v;
        ssize_t r = ::read(handoff_fd_, &v, sizeof(v));
        (void)r;
        take_admissions();
        ++n;
        break;
      }
      case kTagSession:
        on_socket(tag & ~kTagMask);
        ++n;
        break;
      case kTagMail: {
        uint64_t v;
        ssize_t r = ::read(mail_fd_, &v, sizeof(v));
        (void)r;
        n += process_mail();
        break;
      }
      case kTagService:  // a service's fd is readable: its poll() reads it next round
        ++n;
        break;
      default:
        // UCX's event fd stays readable until the worker is armed again, so it is not work in
        // itself: the next progress() handles what it announced. Stop: the loop condition.
        break;
    }
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// Sessions

void ServerWorker::take_admissions() {
  std::vector<Admission> batch;
  {
    std::lock_guard<std::mutex> lock(handoff_mu_);
    batch.swap(handoff_);
  }
  for (Admission& a : batch) open_session(a);
}

void ServerWorker::open_session(Admission& a) {
  w::DoorWelcome m{};
  m.magic = w::kDoorMagic;
  m.version = w::kProtocolVersion;
  auto ep = fabric::Endpoint::create(*worker_, a.client_address.data(), a.client_address.size(),
                                     fmt::format("client {}", a.peer));
  if (!ep.ok()) {
    std::string msg(ep.status().message().substr(0, w::kMaxDoorMessageBytes));
    m.status = static_cast<uint16_t>(ep.status().code());
    m.message_bytes = static_cast<uint32_t>(msg.size());
    std::string out(reinterpret_cast<const char*>(&m), sizeof(m));
    out += msg;
    (void)fabric::send_all(a.fd, out.data(), out.size(), now_ns() + 100'000'000);
    ::close(a.fd);
    node_.refused.fetch_add(1);
    log::warn("node {}: could not connect back to {}: {}", node_.config.node_id, a.peer,
              ep.status().to_string());
    return;
  }
  auto s = std::make_unique<Session>();
  s->id = a.session_id;
  s->fd = a.fd;
  s->ep = std::move(*ep);
  s->peer = a.peer;
  {
    std::lock_guard<std::mutex> lock(node_.mu);
    node_.sessions.insert(s->id);
  }
  node_.sessions_total.fetch_add(1);
  m.node_id = node_.config.node_id;
  m.worker_count = static_cast<uint16_t>(node_.worker_count);
  m.worker_index = static_cast<uint16_t>(index_);
  m.durability = static_cast<uint16_t>(node_.config.durability);
  m.session_id = s->id;
  m.region_base = reinterpret_cast<uint64_t>(node_.region_base);
  m.region_bytes = node_.region_bytes;
  m.rkey_bytes = static_cast<uint32_t>(node_.packed_rkey.size());
  m.address_bytes = static_cast<uint32_t>(address_.size());
  std::string out(reinterpret_cast<const char*>(&m), sizeof(m));
  out += node_.packed_rkey;
  out += address_;
  by_ep_[s->ep->handle()] = s->id;
  by_endpoint_[s->ep.get()] = s->id;
  const uint64_t id = s->id;
  const int fd = s->fd;
  sessions_.emplace(id, std::move(s));
  Status sent = fabric::send_all(fd, out.data(), out.size(), now_ns() + 1'000'000'000);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.u64 = kTagSession | id;
  if (!sent.ok() || epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    end_session(id, "the welcome could not be sent");
    return;
  }
  log::debug("node {}: session {} opened for {} (tag {:#x}) on worker {}", node_.config.node_id, id,
             a.peer, a.client_tag, index_);
}

void ServerWorker::on_socket(uint64_t id) {
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  Session& s = *it->second;
  uint8_t buf[512];
  ssize_t n = ::recv(s.fd, buf, sizeof(buf), MSG_DONTWAIT);
  if (n == 0) return end_session(id, "the client closed its connection");
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
    return end_session(id, "its connection failed");
  }
  for (ssize_t i = 0; i < n; ++i) {
    s.rx[s.rx_bytes++] = buf[i];
    if (s.rx_bytes < sizeof(w::HeartbeatFrame)) continue;
    s.rx_bytes = 0;
    w::HeartbeatFrame f;
    std::memcpy(&f, s.rx, sizeof(f));
    if (f.kind != static_cast<uint32_t>(w::Beat::kPing)) {
      return end_session(id, "it sent something other than a heartbeat");
    }
    send_frame(s.fd, w::Beat::kPong, f.seq);
  }
}

void ServerWorker::end_session(uint64_t id, const char* why) {
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  std::unique_ptr<Session> s = std::move(it->second);
  sessions_.erase(it);
  log::debug("node {}: session {} of {} ended: {}", node_.config.node_id, id, s->peer, why);
  by_ep_.erase(s->ep->handle());
  by_endpoint_.erase(s->ep.get());
  s->ep.reset();  // force-closes; never progresses
  if (s->fd >= 0) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, s->fd, nullptr);
    ::close(s->fd);
  }
  for (auto& sw : service_workers_) sw->on_session_end(id);
  node_.end_session(id);
  // Other workers may hold state of this session (requests it forwarded to them): they hear of
  // its end after those requests.
  if (service_workers_.size() < 2) return;
  for (ServerWorker* peer : peers_) {
    if (peer == nullptr || peer == this) continue;
    Mail m;
    m.kind = Mail::Kind::kSessionEnd;
    m.request.session = id;
    peer->post_mail(std::move(m), false);
  }
}

void ServerWorker::end_failed_sessions() {
  for (fabric::Endpoint* ep : worker_->take_closed()) {
    auto it = by_endpoint_.find(ep);
    if (it != by_endpoint_.end()) end_session(it->second, "its endpoint failed");
  }
}

// ---------------------------------------------------------------------------------------------
// Requests

ucs_status_t ServerWorker::on_request(void* arg, const void* header, size_t header_length,
                                      void* data, size_t length, const ucp_am_recv_param_t* param) {
  auto* self = static_cast<ServerWorker*>(arg);
  // Only sessions opened through the door are served; anything else is dropped.
  auto sit = (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)
                 ? self->by_ep_.find(param->reply_ep)
                 : self->by_ep_.end();
  Session* s = nullptr;
  if (sit != self->by_ep_.end()) {
    auto it = self->sessions_.find(sit->second);
    if (it != self->sessions_.end()) s = it->second.get();
  }
  if (s == nullptr || self->queue_.size() >= 2 * kMaxQueued ||
      s->queued >= 2 * kMaxQueuedPerSession) {
    self->node_.rpcs_dropped.fetch_add(1, std::memory_order_relaxed);
    return UCS_OK;  // unknown sender, or flooded: the sender times out
  }
  Incoming in;
  in.request.session = s->id;
  in.request.worker = self->index_;
  in.request.session_worker = self->index_;
  in.error = fabric::validate_request_header(header, header_length, length, &in.request.header);
  if (in.error.ok() && (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
    in.error = InvalidArgument("RPC requests must be sent eagerly");
  }
  if (in.error.ok()) {
    if (self->queue_.size() >= kMaxQueued || s->queued >= kMaxQueuedPerSession ||
        self->queued_bytes_ + length > kMaxQueuedBytes) {
      in.error = ResourceExhausted("memory node request queue is full; retry later");
    } else {
      const auto* b = static_cast<const uint8_t*>(data);
      in.request.payload.assign(b, b + length);
      self->queued_bytes_ += length;
    }
  }
  ++s->queued;
  self->queue_.push_back(std::move(in));
  // Data of a rendezvous message we do not receive is dropped by returning UCS_OK.
  return UCS_OK;
}

unsigned ServerWorker::process_queue() {
  unsigned n = 0;
  while (!queue_.empty()) {
    Incoming in = std::move(queue_.front());
    queue_.pop_front();
    queued_bytes_ -= in.request.payload.size();
    ++n;
    dispatch(in);
  }
  return n;
}

void ServerWorker::dispatch(Incoming& in) {
  auto it = sessions_.find(in.request.session);
  if (it == sessions_.end()) {  // the session ended while its request waited
    node_.rpcs_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  --it->second->queued;
  node_.rpcs_served.fetch_add(1, std::memory_order_relaxed);
  Responder responder(this, in.request.session, in.request.header);
  if (!in.error.ok()) return responder.fail(in.error);
  int svc = services_.find(in.request.header.opcode);
  if (svc < 0) {
    return responder.fail(
        InvalidArgument(fmt::format("unknown RPC opcode {}", in.request.header.opcode)));
  }
  service_workers_[static_cast<size_t>(svc)]->handle(in.request, std::move(responder));
}

void ServerWorker::send_reply(uint64_t session, uint32_t home, const w::RpcHeader& request,
                              StatusCode code, const void* payload, size_t bytes) {
  if (home == Responder::kThisWorker || home == index_) {
    return send_local_reply(session, request, code, payload, bytes);
  }
  if (home >= peers_.size() || peers_[home] == nullptr) return;
  Mail m;
  m.kind = Mail::Kind::kReply;
  m.request.session = session;
  m.request.header = request;
  m.code = code;
  m.reply.assign(static_cast<const char*>(payload), bytes);
  peers_[home]->post_mail(std::move(m), false);
}

void ServerWorker::send_local_reply(uint64_t session, const w::RpcHeader& request, StatusCode code,
                                    const void* payload, size_t bytes) {
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return;  // the session ended: nobody to answer
  Status s = it->second->ep->send_reply(request, code, payload, bytes);
  if (!s.ok()) log::debug("reply to {} failed: {}", it->second->peer, s.to_string());
}

// ---------------------------------------------------------------------------------------------
// Forwarding and mail between workers

void ServerWorker::forward(uint32_t service, uint32_t target, Request&& request,
                           Responder&& responder) {
  if (responder.answered()) return;
  if (target >= peers_.size() || target == index_ || peers_[target] == nullptr ||
      service >= service_workers_.size()) {
    return responder.fail(Internal(fmt::format("cannot forward a request to worker {}", target)));
  }
  Mail m;
  m.kind = Mail::Kind::kRequest;
  m.service = service;
  m.request = std::move(request);
  m.request.session = responder.session_;
  m.request.header = responder.header_;
  m.request.session_worker = responder.home_ == Responder::kThisWorker ? index_ : responder.home_;
  m.request.worker = target;
  if (!peers_[target]->post_mail(std::move(m), true)) {
    return responder.fail(ResourceExhausted(
        fmt::format("worker {}'s forwarding queue is full; retry later", target)));
  }
  responder.worker_ = nullptr;  // the target answers
}

bool ServerWorker::post_mail(Mail mail, bool bounded) {
  {
    std::lock_guard<std::mutex> lock(mail_mu_);
    const size_t bytes = mail.request.payload.size();
    if (bounded) {
      if (mail_requests_ >= kMaxForwarded || mail_bytes_ + bytes > kMaxForwardedBytes) {
        return false;
      }
      ++mail_requests_;
      mail_bytes_ += bytes;
    }
    mail_.push_back(std::move(mail));
    mail_count_.store(mail_.size());
  }
  if (asleep_.load()) {
    uint64_t one = 1;
    ssize_t r = ::write(mail_fd_, &one, sizeof(one));
    (void)r;
  }
  return true;
}

unsigned ServerWorker::process_mail() {
  std::deque<Mail> batch;
  {
    std::lock_guard<std::mutex> lock(mail_mu_);
    batch.swap(mail_);
    mail_requests_ = 0;
    mail_bytes_ = 0;
    mail_count_.store(0);
  }
  for (Mail& m : batch) run_mail(m);
  return static_cast<unsigned>(batch.size());
}

void ServerWorker::run_mail(Mail& m) {
  switch (m.kind) {
    case Mail::Kind::kRequest: {
      Responder responder(this, m.request.session, m.request.header, m.request.session_worker);
      service_workers_[m.service]->handle(m.request, std::move(responder));
      break;
    }
    case Mail::Kind::kReply:
      send_local_reply(m.request.session, m.request.header, m.code, m.reply.data(), m.reply.size());
      break;
    case Mail::Kind::kSessionEnd:
      for (auto& sw : service_workers_) sw->on_session_end(m.request.session);
      break;
  }
}

Status ServerWorker::watch_fd(int fd) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kTagService | static_cast<uint32_t>(fd);
  if (fd < 0 || epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    return Internal(fmt::format("cannot watch descriptor {}: {}", fd, std::strerror(errno)));
  }
  return OkStatus();
}

void ServerWorker::unwatch_fd(int fd) {
  if (fd >= 0) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
}

// ---------------------------------------------------------------------------------------------
// Shutdown: answer what is queued, say goodbye, give the replies a moment to leave.

void ServerWorker::shut_down() {
  process_queue();
  process_mail();
  for (auto& [id, s] : sessions_) send_frame(s->fd, w::Beat::kBye, 0);
  const uint64_t until = now_ns() + kShutdownFlushNs;
  for (int i = 0; i < 1000 && now_ns() < until; ++i) {
    if (worker_->progress() == 0 && i > 10) break;
  }
  std::vector<uint64_t> ids;
  for (auto& [id, s] : sessions_) ids.push_back(id);
  for (uint64_t id : ids) end_session(id, "the memory node is shutting down");
  std::lock_guard<std::mutex> lock(handoff_mu_);
  for (Admission& a : handoff_) ::close(a.fd);
  handoff_.clear();
}

}  // namespace farmem::memnode
