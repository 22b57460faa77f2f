#include "door.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "farmem/common/clock.h"
#include "farmem/common/log.h"

namespace farmem::memnode {

namespace w = farmem::wire;

namespace {

constexpr uint64_t kTagListen = ~0ull;
constexpr uint64_t kTagStop = ~0ull - 1;

Result<sockaddr_in> resolve_listen(const std::string& host, uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (host == "0.0.0.0" || host == "*") {
    addr.sin_addr.s_addr = INADDR_ANY;
  } else if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    addrinfo* res = nullptr;
    if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || res == nullptr) {
      return InvalidArgument(fmt::format("cannot resolve listen address '{}'", host));
    }
    addr.sin_addr = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
    freeaddrinfo(res);
  }
  return addr;
}

std::string peer_of(const sockaddr_in& a) {
  char host[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &a.sin_addr, host, sizeof(host));
  return fmt::format("{}:{}", host, ntohs(a.sin_port));
}

const char* refusal_name(int kind) {
  static const char* names[] = {"junk",          "version mismatch",  "wrong cluster key",
                                "session limit", "handshake timeout", "closed early"};
  return names[kind];
}

}  // namespace

Result<std::unique_ptr<Door>> Door::open(NodeState& node, std::vector<ServerWorker*> workers,
                                         int stop_fd) {
  std::unique_ptr<Door> d(new Door(node, std::move(workers)));  // stop_fd only goes to epoll
  auto addr = resolve_listen(node.config.listen, node.config.port);
  FARMEM_TRY(addr);
  d->listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (d->listen_fd_ < 0) return Internal(fmt::format("socket: {}", std::strerror(errno)));
  int one = 1;
  (void)setsockopt(d->listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(d->listen_fd_, reinterpret_cast<const sockaddr*>(&*addr), sizeof(*addr)) != 0) {
    return Unavailable(fmt::format("cannot listen on {}:{}: {}", node.config.listen,
                                   node.config.port, std::strerror(errno)));
  }
  if (listen(d->listen_fd_, kBacklog) != 0) {
    return Internal(fmt::format("listen: {}", std::strerror(errno)));
  }
  sockaddr_in bound{};
  socklen_t len = sizeof(bound);
  getsockname(d->listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  d->port_ = ntohs(bound.sin_port);
  d->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (d->epoll_fd_ < 0) return Internal(fmt::format("epoll_create1: {}", std::strerror(errno)));
  for (auto [fd, tag] :
       {std::pair<int, uint64_t>{d->listen_fd_, kTagListen}, {stop_fd, kTagStop}}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = tag;
    if (epoll_ctl(d->epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      return Internal(fmt::format("epoll_ctl: {}", std::strerror(errno)));
    }
  }
  return d;
}

Door::~Door() {
  for (auto& [fd, p] : pending_) ::close(fd);
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

int Door::wait_ms(uint64_t now) const {
  uint64_t next = UINT64_MAX;
  for (const auto& [fd, p] : pending_) next = std::min(next, p.deadline_ns);
  if (next == UINT64_MAX) return 1000;
  if (next <= now) return 0;
  return static_cast<int>(std::min<uint64_t>((next - now) / 1'000'000 + 1, 1000));
}

void Door::run() {
  while (!node_.stopping.load()) {
    epoll_event events[64];
    int n = epoll_wait(epoll_fd_, events, 64, wait_ms(now_ns()));
    for (int i = 0; i < n; ++i) {
      const uint64_t tag = events[i].data.u64;
      if (tag == kTagStop) continue;  // the loop condition sees it
      if (tag == kTagListen) {
        accept_all();
      } else {
        on_readable(static_cast<int>(tag));
      }
    }
    expire(now_ns());
    // Room again for handshakes: watch the listener again.
    if (!accepting_ && pending_.size() < kMaxPending) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = kTagListen;
      if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev) == 0) accepting_ = true;
    }
  }
  // Stop accepting at once; connections not yet admitted are closed by the destructor.
  ::close(listen_fd_);
  listen_fd_ = -1;
}

void Door::accept_all() {
  while (pending_.size() < kMaxPending) {
    sockaddr_in from{};
    socklen_t len = sizeof(from);
    int fd =
        accept4(listen_fd_, reinterpret_cast<sockaddr*>(&from), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE) {
        log::warn("node {}: out of file descriptors; connections wait in the backlog",
                  node_.config.node_id);
      }
      return;  // EAGAIN: nothing more to accept now
    }
    Pending p;
    p.fd = fd;
    p.peer = peer_of(from);
    p.deadline_ns = now_ns() + uint64_t{node_.config.door_timeout_ms} * 1'000'000;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = static_cast<uint64_t>(fd);
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      ::close(fd);
      continue;
    }
    pending_.emplace(fd, std::move(p));
  }
  // Full: leave further connections in the backlog until a handshake finishes.
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr) == 0) accepting_ = false;
}

void Door::on_readable(int fd) {
  auto it = pending_.find(fd);
  if (it == pending_.end()) return;
  Pending& p = it->second;
  char buf[4096];
  const size_t room = std::min(sizeof(buf), p.want - p.buffer.size());
  ssize_t n = ::recv(fd, buf, room, MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    return refuse(fd, Refusal::kClosed, Unavailable("connection closed during the handshake"),
                  false);
  }
  if (n < 0) return;
  p.buffer.append(buf, static_cast<size_t>(n));
  if (p.buffer.size() < p.want) return;
  if (p.want == sizeof(w::DoorHello)) {
    std::memcpy(&p.hello, p.buffer.data(), sizeof(p.hello));
    Status s = fabric::validate_door_hello(p.hello);
    if (!s.ok()) {
      // Junk gets no answer; a farmem client of another version gets a clear one.
      bool farmem = p.hello.magic == w::kDoorMagic;
      return refuse(fd,
                    s.code() == StatusCode::kVersionMismatch ? Refusal::kVersion : Refusal::kJunk,
                    s, farmem);
    }
    p.want = sizeof(w::DoorHello) + p.hello.key_bytes + p.hello.address_bytes;
    return;
  }
  admit(p);
}

void Door::admit(Pending& p) {
  const int fd = p.fd;
  std::string_view key(p.buffer.data() + sizeof(w::DoorHello), p.hello.key_bytes);
  if (!fabric::keys_equal(key, node_.config.cluster_key) && !node_.config.cluster_key.empty()) {
    return refuse(fd, Refusal::kKey,
                  PermissionDenied(key.empty() ? "this memory node requires a cluster key "
                                                 "(FARMEM_CLUSTER_KEY or cluster_key_file)"
                                               : "wrong cluster key"),
                  true);
  }
  size_t open = 0;
  {
    std::lock_guard<std::mutex> lock(node_.mu);
    open = node_.sessions.size();
  }
  for (ServerWorker* w : workers_) open += w->pending_admissions();
  if (open >= node_.config.max_sessions) {
    return refuse(fd, Refusal::kFull,
                  ResourceExhausted(fmt::format("the memory node already serves {} sessions "
                                                "(max_sessions); try again later",
                                                open)),
                  true);
  }
  Admission a;
  a.fd = fd;
  a.peer = p.peer;
  a.client_tag = p.hello.client_tag;
  a.client_address = p.buffer.substr(sizeof(w::DoorHello) + p.hello.key_bytes);
  a.session_id = node_.next_session.fetch_add(1);
  ServerWorker* target = workers_[p.hello.worker_hint % workers_.size()];
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  pending_.erase(fd);  // p is gone from here on
  target->adopt(std::move(a));
}

void Door::expire(uint64_t now) {
  std::vector<int> late;
  for (const auto& [fd, p] : pending_) {
    if (p.deadline_ns <= now) late.push_back(fd);
  }
  for (int fd : late) {
    refuse(fd, Refusal::kTimeout, TimedOut("no complete hello before the door's deadline"), false);
  }
}

void Door::refuse(int fd, Refusal kind, const Status& why, bool send_message) {
  auto it = pending_.find(fd);
  std::string peer = it != pending_.end() ? it->second.peer : "?";
  node_.refused.fetch_add(1);
  const auto k = static_cast<size_t>(kind);
  if (!logged_[k] && kind != Refusal::kClosed) {
    logged_[k] = true;
    log::warn(
        "node {}: refused a connection from {} ({}): {} (further refusals of this kind "
        "are counted in `farmem status`, not logged)",
        node_.config.node_id, peer, refusal_name(static_cast<int>(k)), why.message());
  }
  if (send_message) {
    w::DoorWelcome m{};
    m.magic = w::kDoorMagic;
    m.version = w::kProtocolVersion;
    m.status = static_cast<uint16_t>(why.code());
    std::string msg(why.message().substr(0, w::kMaxDoorMessageBytes));
    m.message_bytes = static_cast<uint32_t>(msg.size());
    std::string out(reinterpret_cast<const char*>(&m), sizeof(m));
    out += msg;
    (void)::send(fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  drop(fd);
}

void Door::drop(int fd) {
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  ::close(fd);
  pending_.erase(fd);
}

}  // namespace farmem::memnode
