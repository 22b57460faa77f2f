#include "channel.h"

#include <fmt/format.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace farmem::kv::ado {
namespace {

// Appends fixed structs and byte strings to a message and fills in its header.
class Builder {
 public:
  Builder(MsgType type, uint64_t id) {
    MsgHeader h{};
    h.magic = kChannelMagic;
    h.type = static_cast<uint16_t>(type);
    h.id = id;
    put(h);
  }
  template <typename T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void put_bytes(std::string_view b) { out_.append(b.data(), b.size()); }
  void put_u16_string(std::string_view s) {
    put(static_cast<uint16_t>(s.size()));
    put_bytes(s);
  }
  std::string finish() {
    uint32_t bytes = static_cast<uint32_t>(out_.size());
    std::memcpy(out_.data() + offsetof(MsgHeader, bytes), &bytes, sizeof(bytes));
    return std::move(out_);
  }

 private:
  std::string out_;
};

// Reads fixed structs and byte strings from a body, failing on any overrun.
class Reader {
 public:
  explicit Reader(std::string_view body) : rest_(body) {}
  template <typename T>
  bool get(T* v) {
    if (rest_.size() < sizeof(T)) return false;
    std::memcpy(v, rest_.data(), sizeof(T));
    rest_.remove_prefix(sizeof(T));
    return true;
  }
  bool get_bytes(size_t n, std::string_view* out) {
    if (rest_.size() < n) return false;
    *out = rest_.substr(0, n);
    rest_.remove_prefix(n);
    return true;
  }
  bool get_u16_string(uint32_t max, std::string* out) {
    uint16_t n = 0;
    std::string_view v;
    if (!get(&n) || n == 0 || n > max || !get_bytes(n, &v)) return false;
    out->assign(v);
    return true;
  }
  bool done() const { return rest_.empty(); }
  std::string_view rest() const { return rest_; }

 private:
  std::string_view rest_;
};

Status malformed(std::string_view what) {
  return ProtocolError(fmt::format("malformed ADO channel message: {}", what));
}

bool known_type(uint16_t t) {
  switch (static_cast<MsgType>(t)) {
    case MsgType::kLaunch:
    case MsgType::kWork:
    case MsgType::kCallbackReply:
    case MsgType::kEvent:
    case MsgType::kShutdown:
    case MsgType::kLaunchReply:
    case MsgType::kWorkDone:
    case MsgType::kCallback:
      return true;
  }
  return false;
}

}  // namespace

std::string encode_launch(const Launch& l) {
  Builder b(MsgType::kLaunch, 0);
  LaunchMsg m{};
  m.abi_version = FARMEM_ADO_ABI_VERSION;
  m.flags = l.flags;
  m.pool_capacity_bytes = l.pool_capacity_bytes;
  m.region_bytes = l.region_bytes;
  m.node_id = l.node_id;
  m.plugin_count = static_cast<uint16_t>(l.plugin_paths.size());
  m.param_count = static_cast<uint16_t>(l.params.size());
  m.pool_name_bytes = static_cast<uint16_t>(l.pool_name.size());
  m.timeout_ms = l.timeout_ms;
  m.undo_offset = l.undo.offset;
  m.undo_bytes = l.undo.bytes;
  b.put(m);
  b.put_bytes(l.pool_name);
  for (const auto& p : l.plugin_paths) b.put_u16_string(p);
  for (const auto& [k, v] : l.params) {
    b.put(static_cast<uint16_t>(k.size()));
    b.put(static_cast<uint16_t>(v.size()));
    b.put_bytes(k);
    b.put_bytes(v);
  }
  return b.finish();
}

std::string encode_work(const Work& w) {
  Builder b(MsgType::kWork, w.work_id);
  WorkMsg m{};
  m.flags = w.flags;
  m.signal = w.signal;
  m.key_bytes = static_cast<uint32_t>(w.key.size());
  m.request_bytes = static_cast<uint32_t>(w.request.size());
  m.value_count = w.value_count;
  for (uint32_t i = 0; i < w.value_count && i < 2; ++i) m.values[i] = w.values[i];
  b.put(m);
  b.put_bytes(w.key);
  b.put_bytes(w.request);
  return b.finish();
}

std::string encode_event(uint32_t event, std::string_view key) {
  Builder b(MsgType::kEvent, 0);
  b.put(EventMsg{event, static_cast<uint32_t>(key.size())});
  b.put_bytes(key);
  return b.finish();
}

std::string encode_shutdown() { return Builder(MsgType::kShutdown, 0).finish(); }

std::string encode_status(MsgType type, uint64_t id, const Status& status) {
  Builder b(type, id);
  std::string_view text = status.ok() ? std::string_view() : status.message();
  if (text.size() > kMaxErrorBytes) text = text.substr(0, kMaxErrorBytes);
  b.put(StatusMsg{static_cast<int32_t>(status.code()), static_cast<uint32_t>(text.size())});
  b.put_bytes(text);
  return b.finish();
}

std::string encode_callback_reply(uint64_t work_id, const Status& status,
                                  std::string_view payload) {
  if (!status.ok()) return encode_status(MsgType::kCallbackReply, work_id, status);
  Builder b(MsgType::kCallbackReply, work_id);
  b.put(StatusMsg{0, 0});
  b.put_bytes(payload);
  return b.finish();
}

std::string encode_callback(const Callback& c) {
  Builder b(MsgType::kCallback, c.work_id);
  b.put(CallbackMsg{static_cast<uint32_t>(c.op), static_cast<uint32_t>(c.key.size()), c.arg0,
                    c.arg1});
  b.put_bytes(c.key);
  return b.finish();
}

std::string encode_done(const Done& d) {
  Builder b(MsgType::kWorkDone, d.work_id);
  b.put(DoneMsg{d.flags, 0});
  b.put_bytes(d.reply);
  return b.finish();
}

Result<Message> parse_message(std::string_view bytes) {
  Message m;
  if (bytes.size() < sizeof(MsgHeader)) return malformed("shorter than its header");
  std::memcpy(&m.header, bytes.data(), sizeof(MsgHeader));
  const MsgHeader& h = m.header;
  if (h.magic != kChannelMagic) return malformed(fmt::format("magic 0x{:08x}", h.magic));
  if (!known_type(h.type)) return malformed(fmt::format("unknown type {}", h.type));
  if (h.bytes != bytes.size() || h.bytes > kMaxMessageBytes) {
    return malformed(fmt::format("length {} but {} bytes arrived", h.bytes, bytes.size()));
  }
  if (h.reserved != 0 || h.reserved2 != 0) return malformed("reserved header fields are not 0");
  m.body = bytes.substr(sizeof(MsgHeader));
  return m;
}

Result<Launch> decode_launch(const Message& m) {
  Reader r(m.body);
  LaunchMsg lm{};
  std::string_view name;
  if (m.type() != MsgType::kLaunch || !r.get(&lm)) return malformed("launch header");
  if (lm.abi_version != FARMEM_ADO_ABI_VERSION) {
    return VersionMismatch(fmt::format("node speaks ADO ABI v{}, this farmem-ado v{}",
                                       lm.abi_version, FARMEM_ADO_ABI_VERSION));
  }
  if (lm.reserved != 0 || (lm.flags & ~kLaunchKnownFlags) != 0 ||
      (lm.undo_offset == 0) != (lm.undo_bytes == 0)) {
    return malformed("launch reserved fields, flags or undo block");
  }
  if (lm.plugin_count == 0 || lm.plugin_count > kMaxPlugins || lm.param_count > kMaxParams ||
      lm.pool_name_bytes == 0 || lm.pool_name_bytes > wire::kMaxPoolNameBytes ||
      !r.get_bytes(lm.pool_name_bytes, &name)) {
    return malformed("launch counts or pool name");
  }
  Launch l;
  l.flags = lm.flags;
  l.pool_capacity_bytes = lm.pool_capacity_bytes;
  l.region_bytes = lm.region_bytes;
  l.node_id = lm.node_id;
  l.timeout_ms = lm.timeout_ms;
  l.undo = {lm.undo_offset, lm.undo_bytes};
  l.pool_name.assign(name);
  l.plugin_paths.resize(lm.plugin_count);
  for (auto& p : l.plugin_paths) {
    if (!r.get_u16_string(kMaxNameBytes, &p)) return malformed("launch plugin path");
  }
  for (uint16_t i = 0; i < lm.param_count; ++i) {
    uint16_t kb = 0, vb = 0;
    std::string_view k, v;
    if (!r.get(&kb) || !r.get(&vb) || kb == 0 || kb > kMaxNameBytes || vb > kMaxNameBytes ||
        !r.get_bytes(kb, &k) || !r.get_bytes(vb, &v)) {
      return malformed("launch parameter");
    }
    l.params.emplace_back(std::string(k), std::string(v));
  }
  if (!r.done()) return malformed("launch has trailing bytes");
  return l;
}

Result<Work> decode_work(const Message& m) {
  Reader r(m.body);
  WorkMsg wm{};
  std::string_view key, request;
  if (m.type() != MsgType::kWork || !r.get(&wm)) return malformed("work header");
  if (wm.reserved != 0 || wm.value_count > 2 || wm.key_bytes > wire::kMaxKeyBytes ||
      wm.request_bytes > wire::kMaxAdoRequestBytes || wm.signal > FARMEM_ADO_SIGNAL_POST_ERASE) {
    return malformed("work fields");
  }
  for (uint32_t i = wm.value_count; i < 2; ++i) {
    if (wm.values[i].offset != 0 || wm.values[i].bytes != 0) return malformed("unused value");
  }
  if (!r.get_bytes(wm.key_bytes, &key) || !r.get_bytes(wm.request_bytes, &request) || !r.done()) {
    return malformed("work lengths");
  }
  Work w;
  w.work_id = m.header.id;
  w.flags = wm.flags;
  w.signal = wm.signal;
  w.key.assign(key);
  w.request.assign(request);
  w.value_count = wm.value_count;
  w.values[0] = wm.values[0];
  w.values[1] = wm.values[1];
  return w;
}

Result<std::pair<uint32_t, std::string>> decode_event(const Message& m) {
  Reader r(m.body);
  EventMsg em{};
  std::string_view key;
  if (m.type() != MsgType::kEvent || !r.get(&em) || em.key_bytes > wire::kMaxKeyBytes ||
      em.event == 0 || em.event > FARMEM_ADO_EVENT_SHUTDOWN || !r.get_bytes(em.key_bytes, &key) ||
      !r.done()) {
    return malformed("event");
  }
  return std::make_pair(em.event, std::string(key));
}

Status decode_status(const Message& m, std::string_view* payload) {
  Reader r(m.body);
  StatusMsg sm{};
  if (!r.get(&sm)) return malformed("status");
  if (sm.status < 0 || sm.status > static_cast<int32_t>(kLastStatusCode)) {
    return malformed(fmt::format("status code {}", sm.status));
  }
  if (sm.status == 0) {
    if (sm.message_bytes != 0) return malformed("OK status with a message");
    if (payload != nullptr) *payload = r.rest();
    return OkStatus();
  }
  std::string_view text;
  if (sm.message_bytes > kMaxErrorBytes || !r.get_bytes(sm.message_bytes, &text) || !r.done()) {
    return malformed("status message");
  }
  return Status(static_cast<StatusCode>(sm.status), text);
}

Result<Callback> decode_callback(const Message& m) {
  Reader r(m.body);
  CallbackMsg cm{};
  std::string_view key;
  if (m.type() != MsgType::kCallback || !r.get(&cm)) return malformed("callback header");
  if (cm.op == 0 || cm.op > kLastCallbackOp || cm.key_bytes > wire::kMaxKeyBytes ||
      !r.get_bytes(cm.key_bytes, &key) || !r.done()) {
    return malformed("callback fields");
  }
  Callback c;
  c.work_id = m.header.id;
  c.op = static_cast<CallbackOp>(cm.op);
  c.key.assign(key);
  c.arg0 = cm.arg0;
  c.arg1 = cm.arg1;
  return c;
}

Result<Done> decode_done(const Message& m) {
  Reader r(m.body);
  DoneMsg dm{};
  if (m.type() != MsgType::kWorkDone || !r.get(&dm) || dm.reserved != 0 ||
      (dm.flags & ~kDoneKnownFlags) != 0) {
    return malformed("done header");
  }
  Done d;
  d.work_id = m.header.id;
  d.flags = dm.flags;
  d.reply.assign(r.rest());
  FARMEM_TRY(validate_reply(d.reply));
  return d;
}

Status validate_reply(std::string_view reply) {
  Reader r(reply);
  wire::KvAdoReply head{};
  if (reply.size() > kMaxReplyBytes || !r.get(&head)) return malformed("reply header");
  if (head.responses > wire::kMaxAdoResponses) return malformed("too many responses");
  for (uint32_t i = 0; i < head.responses; ++i) {
    wire::KvAdoResponse resp{};
    std::string_view data;
    size_t padded = 0;
    if (!r.get(&resp)) return malformed("response header");
    padded = (static_cast<size_t>(resp.bytes) + 7) & ~size_t{7};
    if (!r.get_bytes(padded, &data)) return malformed("response length");
    for (size_t j = resp.bytes; j < padded; ++j) {
      if (data[j] != 0) return malformed("response padding");
    }
  }
  if (!r.done()) return malformed("reply has trailing bytes");
  return OkStatus();
}

Result<std::pair<int, int>> make_channel() {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) != 0) {
    return Internal(fmt::format("socketpair: {}", std::strerror(errno)));
  }
  // A packet must fit in the sender's buffer: ask for room for a few of the largest.
  int want = static_cast<int>(4 * kMaxMessageBytes);
  for (int fd : fds) {
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &want, sizeof(want));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &want, sizeof(want));
    int got = 0;
    socklen_t len = sizeof(got);
    if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &got, &len) != 0 ||
        got < static_cast<int>(kMaxMessageBytes) + 4096) {
      close(fds[0]);
      close(fds[1]);
      return ResourceExhausted(fmt::format(
          "ADO channel send buffer of {} bytes cannot hold a {}-byte message (net.core.wmem_max)",
          got, kMaxMessageBytes));
    }
  }
  return std::make_pair(fds[0], fds[1]);
}

Status send_message(int fd, std::string_view message) {
  ssize_t n = send(fd, message.data(), message.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n == static_cast<ssize_t>(message.size())) return OkStatus();
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)) {
    return ResourceExhausted("ADO channel full");
  }
  if (n < 0 && errno == EINTR) return ResourceExhausted("ADO channel send interrupted");
  if (n < 0 && (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN)) {
    return PeerFailed("ADO channel closed by the peer");
  }
  return Internal(fmt::format("ADO channel send: {}", n < 0 ? std::strerror(errno) : "short"));
}

Result<std::string_view> receive_message(int fd, std::string* buffer) {
  buffer->resize(kMaxMessageBytes + 1);
  for (;;) {
    ssize_t n = recv(fd, buffer->data(), buffer->size(), MSG_DONTWAIT | MSG_TRUNC);
    if (n > 0) {
      if (static_cast<size_t>(n) > kMaxMessageBytes) {
        return ProtocolError(
            fmt::format("ADO channel packet of {} bytes exceeds {}", n, kMaxMessageBytes));
      }
      return std::string_view(buffer->data(), static_cast<size_t>(n));
    }
    if (n == 0) return PeerFailed("ADO channel closed by the peer");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return std::string_view();
    if (errno == ECONNRESET) return PeerFailed("ADO channel reset by the peer");
    return Internal(fmt::format("ADO channel receive: {}", std::strerror(errno)));
  }
}

}  // namespace farmem::kv::ado
