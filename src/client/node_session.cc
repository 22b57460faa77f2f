#include "farmem/client/node_session.h"

#include <fmt/format.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "farmem/common/clock.h"
#include "farmem/fabric/door.h"

namespace farmem::client {

namespace w = farmem::wire;

namespace {

// Receives the variable parts of a welcome: a refusal message, or the rkey and address.
Status read_welcome(int fd, const w::DoorWelcome& m, uint64_t deadline, const std::string& where,
                    std::string* rkey, std::string* address) {
  if (m.status != 0) {
    std::string msg(m.message_bytes, '\0');
    if (!msg.empty()) (void)fabric::recv_exact(fd, msg.data(), msg.size(), deadline);
    StatusCode code = m.status <= static_cast<uint16_t>(kLastStatusCode)
                          ? static_cast<StatusCode>(m.status)
                          : StatusCode::kProtocolError;
    return Status(code, fmt::format("memory node {} refused the connection: {}", where, msg));
  }
  rkey->resize(m.rkey_bytes);
  address->resize(m.address_bytes);
  FARMEM_TRY(fabric::recv_exact(fd, rkey->data(), rkey->size(), deadline));
  return fabric::recv_exact(fd, address->data(), address->size(), deadline);
}

}  // namespace

Result<std::unique_ptr<NodeSession>> NodeSession::open(fabric::Worker& worker,
                                                       const HostPort& where_hp,
                                                       const SessionOptions& o) {
  std::unique_ptr<NodeSession> s(new NodeSession());
  s->options_ = o;
  s->where_ = fmt::format("{}:{}", where_hp.host, where_hp.port);
  const uint64_t deadline = now_ns() + o.connect_timeout_ns;
  auto fd = fabric::tcp_connect(where_hp.host, where_hp.port, deadline);
  if (!fd.ok()) {
    return Status(fd.status().code(),
                  fmt::format("memory node {}: {}", s->where_, fd.status().message()));
  }
  s->fd_ = *fd;
  fabric::tune_session_socket(s->fd_);
  const std::string mine = worker.address();
  if (mine.empty()) return Internal("cannot read this thread's UCX worker address");
  w::DoorHello h{};
  h.magic = w::kDoorMagic;
  h.version = w::kProtocolVersion;
  h.key_bytes = static_cast<uint16_t>(o.cluster_key.size());
  h.address_bytes = static_cast<uint32_t>(mine.size());
  h.worker_hint = o.worker_hint;
  h.client_tag = o.client_tag;
  std::string hello(reinterpret_cast<const char*>(&h), sizeof(h));
  hello += o.cluster_key;
  hello += mine;
  auto failed = [&](const Status& st) {
    return Status(st.code(),
                  fmt::format("handshake with memory node {} failed: {}", s->where_, st.message()));
  };
  Status st = fabric::send_all(s->fd_, hello.data(), hello.size(), deadline);
  if (!st.ok()) return failed(st);
  w::DoorWelcome m{};
  st = fabric::recv_exact(s->fd_, &m, sizeof(m), deadline);
  if (st.ok()) st = fabric::validate_door_welcome(m);
  if (!st.ok()) return failed(st);
  std::string rkey, address;
  FARMEM_TRY(read_welcome(s->fd_, m, deadline, s->where_, &rkey, &address));
  s->id_ = m.session_id;
  s->node_id_ = m.node_id;
  s->worker_count_ = m.worker_count;
  s->durable_ = m.durability != 0;
  auto ep = fabric::Endpoint::create(worker, address.data(), address.size(),
                                     fmt::format("memory node {} ({})", m.node_id, s->where_));
  FARMEM_TRY(ep);
  s->ep_ = std::move(*ep);
  FARMEM_TRY(s->ep_->attach_region(m.region_base, m.region_bytes, rkey.data(), rkey.size()));
  const uint64_t now = now_ns();
  s->next_ping_ns_ = now + o.heartbeat_ns;
  s->next_check_ns_ = now + o.heartbeat_ns / 4;
  return s;
}

NodeSession::~NodeSession() {
  ep_.reset();  // force-close first: nothing of this session may reach the node after its end
  if (fd_ >= 0) ::close(fd_);
}

void NodeSession::lost(Status why) {
  if (ep_ != nullptr && !ep_->failed()) ep_->fail(std::move(why));
  next_check_ns_ = UINT64_MAX;  // nothing more to watch
  // The session is over for this client: closing the door connection lets the node (if it
  // lives) end it too and take back what it owned.
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

void NodeSession::check_now(uint64_t now) {
  next_check_ns_ = now + options_.heartbeat_ns / 4;
  if (ep_ == nullptr || ep_->failed()) {
    return lost(ep_ != nullptr ? ep_->failure() : Unavailable("no endpoint"));
  }
  uint8_t buf[256];
  for (;;) {
    ssize_t n = ::recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
    if (n == 0) {
      return lost(PeerFailed(fmt::format(
          "memory node {} closed its connection (it died or was stopped for good)", where_)));
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno == EINTR) continue;
      return lost(PeerFailed(
          fmt::format("connection to memory node {} failed: {}", where_, std::strerror(errno))));
    }
    for (ssize_t i = 0; i < n; ++i) {
      rx_[rx_bytes_++] = buf[i];
      if (rx_bytes_ < sizeof(w::HeartbeatFrame)) continue;
      rx_bytes_ = 0;
      w::HeartbeatFrame f;
      std::memcpy(&f, rx_, sizeof(f));
      if (f.kind == static_cast<uint32_t>(w::Beat::kBye)) {
        return lost(Unavailable(fmt::format("memory node {} is shutting down", where_)));
      }
      if (f.kind != static_cast<uint32_t>(w::Beat::kPong)) {
        return lost(ProtocolError(fmt::format("memory node {} sent a bad heartbeat", where_)));
      }
      // Any pong shows the node alive; what stays outstanding is at most the newest ping.
      ping_sent_ns_ = f.seq == ping_seq_ ? 0 : last_ping_ns_;
    }
  }
  if (ping_sent_ns_ != 0 && now - ping_sent_ns_ > options_.silence_ns) {
    return lost(PeerFailed(
        fmt::format("memory node {} did not answer heartbeats for {} ms (stopped or unreachable)",
                    where_, (now - ping_sent_ns_) / 1'000'000)));
  }
  if (now >= next_ping_ns_) {
    next_ping_ns_ = now + options_.heartbeat_ns;
    w::HeartbeatFrame f{static_cast<uint32_t>(w::Beat::kPing), ++ping_seq_};
    ssize_t n = ::send(fd_, &f, sizeof(f), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0 && n < static_cast<ssize_t>(sizeof(f))) {
      // Only a node that stopped reading for thousands of periods fills the socket buffer.
      return lost(PeerFailed(fmt::format("memory node {} stopped reading heartbeats", where_)));
    }
    if (n == static_cast<ssize_t>(sizeof(f))) {
      last_ping_ns_ = now;
      if (ping_sent_ns_ == 0) ping_sent_ns_ = now;
    }
  }
}

}  // namespace farmem::client
