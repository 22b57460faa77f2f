#include "farmem/fabric/door.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "farmem/common/clock.h"

namespace farmem::fabric {

namespace w = farmem::wire;

Status validate_door_hello(const w::DoorHello& h) {
  if (h.magic != w::kDoorMagic) {
    return ProtocolError(fmt::format("not a farmem client (magic 0x{:08x})", h.magic));
  }
  if (h.version != w::kProtocolVersion) {
    return VersionMismatch(fmt::format(
        "client speaks farmem protocol v{}, this memory node speaks v{}; upgrade the older side",
        h.version, w::kProtocolVersion));
  }
  if (h.key_bytes > w::kMaxClusterKeyBytes) {
    return ProtocolError(
        fmt::format("cluster key of {} bytes exceeds {}", h.key_bytes, w::kMaxClusterKeyBytes));
  }
  if (h.address_bytes == 0 || h.address_bytes > w::kMaxWorkerAddressBytes) {
    return ProtocolError(fmt::format("worker address of {} bytes is not in 1..{}", h.address_bytes,
                                     w::kMaxWorkerAddressBytes));
  }
  if (h.flags != 0 || h.reserved != 0) return ProtocolError("reserved hello fields are not 0");
  return OkStatus();
}

Status validate_door_welcome(const w::DoorWelcome& m) {
  if (m.magic != w::kDoorMagic) {
    return ProtocolError(fmt::format("not a farmem memory node (magic 0x{:08x})", m.magic));
  }
  if (m.version != w::kProtocolVersion) {
    return VersionMismatch(fmt::format("memory node speaks farmem protocol v{}, this client v{}",
                                       m.version, w::kProtocolVersion));
  }
  if (m.message_bytes > w::kMaxDoorMessageBytes || m.rkey_bytes > w::kMaxRkeyBytes ||
      m.address_bytes > w::kMaxWorkerAddressBytes) {
    return ProtocolError("memory node sent a welcome with oversized fields");
  }
  if (m.status == 0 && (m.worker_count == 0 || m.worker_count > w::kMaxServerWorkers ||
                        m.worker_index >= m.worker_count || m.address_bytes == 0 ||
                        m.rkey_bytes == 0 || (m.session_id & w::kObjectOwnerBit) != 0)) {
    return ProtocolError("memory node sent a malformed welcome");
  }
  return OkStatus();
}

bool keys_equal(std::string_view a, std::string_view b) {
  // The length is not secret; the bytes are compared without an early exit.
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

namespace {

int remaining_ms(uint64_t deadline_ns) {
  uint64_t now = now_ns();
  if (now >= deadline_ns) return 0;
  uint64_t ms = (deadline_ns - now + 999'999) / 1'000'000;
  return ms > 60'000 ? 60'000 : static_cast<int>(ms);
}

// Waits for `events` on fd until the deadline: OK, kTimedOut, or the socket's error.
Status wait_for(int fd, short events, uint64_t deadline_ns, const char* what) {
  for (;;) {
    int ms = remaining_ms(deadline_ns);
    if (ms == 0) return TimedOut(fmt::format("{}: no progress before the deadline", what));
    pollfd p{fd, events, 0};
    int r = poll(&p, 1, ms);
    if (r > 0) return OkStatus();
    if (r < 0 && errno != EINTR) {
      return Internal(fmt::format("{}: poll: {}", what, std::strerror(errno)));
    }
  }
}

Status socket_error(int err, const char* what) {
  if (err == ECONNREFUSED) {
    return Unavailable(fmt::format("{}: connection refused (no memory node listening)", what));
  }
  if (err == ECONNRESET || err == EPIPE || err == ENOTCONN) {
    return PeerFailed(fmt::format("{}: {}", what, std::strerror(err)));
  }
  if (err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH) {
    return Unavailable(fmt::format("{}: {}", what, std::strerror(err)));
  }
  return Internal(fmt::format("{}: {}", what, std::strerror(err)));
}

}  // namespace

Result<int> tcp_connect(const std::string& host, uint16_t port, uint64_t deadline_ns) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string port_s = std::to_string(port);
  int rc = getaddrinfo(host.c_str(), port_s.c_str(), &hints, &res);
  if (rc != 0 || res == nullptr) {
    return InvalidArgument(fmt::format("cannot resolve '{}': {}", host, gai_strerror(rc)));
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    freeaddrinfo(res);
    return Internal(fmt::format("socket: {}", std::strerror(errno)));
  }
  std::string what = fmt::format("connect to {}:{}", host, port);
  int r = ::connect(fd, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  if (r != 0 && errno != EINPROGRESS) {
    Status s = socket_error(errno, what.c_str());
    ::close(fd);
    return s;
  }
  if (r != 0) {
    Status s = wait_for(fd, POLLOUT, deadline_ns, what.c_str());
    int err = 0;
    socklen_t len = sizeof(err);
    if (s.ok() && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err != 0) {
      s = socket_error(err, what.c_str());
    }
    if (!s.ok()) {
      ::close(fd);
      return s;
    }
  }
  return fd;
}

Status send_all(int fd, const void* data, size_t bytes, uint64_t deadline_ns) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (bytes > 0) {
    ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      FARMEM_TRY(wait_for(fd, POLLOUT, deadline_ns, "send"));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return socket_error(n < 0 ? errno : EPIPE, "send");
  }
  return OkStatus();
}

Status recv_exact(int fd, void* data, size_t bytes, uint64_t deadline_ns) {
  auto* p = static_cast<uint8_t*>(data);
  while (bytes > 0) {
    ssize_t n = ::recv(fd, p, bytes, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return PeerFailed("the peer closed the connection");
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      FARMEM_TRY(wait_for(fd, POLLIN, deadline_ns, "receive"));
      continue;
    }
    if (errno == EINTR) continue;
    return socket_error(errno, "receive");
  }
  return OkStatus();
}

void tune_session_socket(int fd) {
  int one = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  // A host that vanishes without a FIN or RST is noticed within about 10 + 3 x 2 s.
  (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  int idle = 10, interval = 2, count = 3;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
}

}  // namespace farmem::fabric
