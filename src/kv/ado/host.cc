#include "host.h"

#include <fmt/format.h>
#include <poll.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#include "farmem/common/clock.h"

namespace farmem::kv::ado {
namespace {

constexpr uint64_t kNsPerMs = 1'000'000;

static_assert(-FARMEM_ADO_E_INVALID == static_cast<int>(StatusCode::kInvalidArgument));
static_assert(-FARMEM_ADO_E_OUT_OF_RANGE == static_cast<int>(StatusCode::kOutOfRange));
static_assert(-FARMEM_ADO_E_NOT_FOUND == static_cast<int>(StatusCode::kNotFound));
static_assert(-FARMEM_ADO_E_EXISTS == static_cast<int>(StatusCode::kAlreadyExists));
static_assert(-FARMEM_ADO_E_EXHAUSTED == static_cast<int>(StatusCode::kResourceExhausted));
static_assert(-FARMEM_ADO_E_TIMED_OUT == static_cast<int>(StatusCode::kTimedOut));
static_assert(-FARMEM_ADO_E_PROTOCOL == static_cast<int>(StatusCode::kProtocolError));
static_assert(-FARMEM_ADO_E_UNAVAILABLE == static_cast<int>(StatusCode::kUnavailable));
static_assert(-FARMEM_ADO_E_INTERNAL == static_cast<int>(StatusCode::kInternal));
static_assert(-FARMEM_ADO_E_BUSY == static_cast<int>(StatusCode::kBusy));
static_assert(FARMEM_ADO_MAX_RESPONSES == wire::kMaxAdoResponses);
static_assert(FARMEM_ADO_MAX_RESPONSE_BYTES + sizeof(wire::KvAdoReply) <= kMaxReplyBytes);

std::string_view bytes_of(const void* p, size_t n) {
  return n == 0 ? std::string_view() : std::string_view(static_cast<const char*>(p), n);
}

template <typename T>
bool read_struct(std::string_view payload, T* out, size_t at = 0) {
  if (payload.size() < at + sizeof(T)) return false;
  std::memcpy(out, payload.data() + at, sizeof(T));
  return true;
}

}  // namespace

AdoHost::AdoHost(HostOptions options) : options_(std::move(options)) {
  ops_.struct_bytes = sizeof(farmem_ado_store_ops);
  ops_.create_key = &op_create_key;
  ops_.open_key = &op_open_key;
  ops_.erase_key = &op_erase_key;
  ops_.resize_value = &op_resize_value;
  ops_.allocate_pool_memory = &op_allocate;
  ops_.free_pool_memory = &op_free;
  ops_.find_key = &op_find_key;
  ops_.iterate = &op_iterate;
  ops_.unlock_key = &op_unlock_key;
  ops_.pool_info = &op_pool_info;
  ops_.ref_is_current = &op_ref_is_current;
  ops_.respond = &op_respond;
  ops_.last_error = &op_last_error;
  ops_.tx_add = &op_tx_add;
  ops_.tx_abort = &op_tx_abort;
}

AdoHost::~AdoHost() {
  // Plugins shut down in reverse order of loading.
  while (!plugins_.empty()) plugins_.pop_back();
}

int AdoHost::run(const Status& setup) {
  uint64_t deadline = now_ns() + options_.launch_wait_ms * kNsPerMs;
  Result<std::string> first = next_message(deadline, false);
  if (!first.ok() || first->empty()) {
    std::fprintf(stderr, "farmem-ado: no launch message: %s\n",
                 first.ok() ? "timed out" : first.status().to_string().c_str());
    return 2;
  }
  Result<Message> m = parse_message(*first);
  Result<Launch> l = m.ok() ? decode_launch(*m) : Result<Launch>(m.status());
  Status s = !l.ok() ? l.status() : !setup.ok() ? setup : launch(*l);
  Status sent = send(encode_status(MsgType::kLaunchReply, 0, s));
  if (!s.ok() || !sent.ok()) {
    std::fprintf(stderr, "farmem-ado: launch failed: %s\n", s.to_string().c_str());
    return 3;
  }
  while (!stopping_) {
    Result<std::string> raw = next_message(0, true);
    if (!raw.ok()) {
      std::fprintf(stderr, "farmem-ado (pool %s): %s\n", pool_name_.c_str(),
                   raw.status().to_string().c_str());
      return 4;
    }
    Result<Message> msg = parse_message(*raw);
    Status served = msg.ok() ? serve(*msg) : msg.status();
    if (!served.ok()) {
      std::fprintf(stderr, "farmem-ado (pool %s): %s\n", pool_name_.c_str(),
                   served.to_string().c_str());
      return 5;
    }
  }
  return 0;
}

Status AdoHost::launch(const Launch& l) {
  if (options_.region == nullptr || l.region_bytes != options_.region_bytes) {
    return Unavailable(
        fmt::format("the ADO process maps {} bytes of the node's region, the node exports {}",
                    options_.region == nullptr ? 0 : options_.region_bytes, l.region_bytes));
  }
  pool_name_ = l.pool_name;
  timeout_ns_ = static_cast<uint64_t>(l.timeout_ms) * kNsPerMs;
  durable_node_ = (l.flags & kLaunchDurableNode) != 0;
  if (l.undo.bytes != 0) {
    if (!range_ok(l.undo.offset, l.undo.bytes)) {
      return ProtocolError("the launch names an undo block outside the region");
    }
    undo_offset_ = l.undo.offset;
    undo_.attach(options_.region + l.undo.offset, l.undo.bytes);
  }
  for (const auto& path : l.plugin_paths) {
    Result<LoadedPlugin> p = LoadedPlugin::load(path);
    FARMEM_TRY(p);
    plugins_.push_back(std::move(*p));
  }
  std::vector<farmem_ado_param> params;
  params.reserve(l.params.size());
  for (const auto& [k, v] : l.params) params.push_back({k.c_str(), v.c_str()});
  farmem_ado_launch info{};
  info.pool_name = pool_name_.c_str();
  info.pool_capacity_bytes = l.pool_capacity_bytes;
  info.params = params.data();
  info.param_count = static_cast<uint32_t>(params.size());
  info.flags = l.flags & FARMEM_ADO_LAUNCH_NEW_POOL;
  for (auto& p : plugins_) {
    FARMEM_TRY(p.launch(info, reinterpret_cast<farmem_ado_store*>(this), &ops_));
  }
  return OkStatus();
}

Status AdoHost::serve(const Message& m) {
  switch (m.type()) {
    case MsgType::kWork: {
      Result<Work> w = decode_work(m);
      FARMEM_TRY(w);
      return run_work(*w);
    }
    case MsgType::kEvent: {
      auto e = decode_event(m);
      FARMEM_TRY(e);
      run_event(e->first, e->second);
      return OkStatus();
    }
    case MsgType::kShutdown:
      run_event(FARMEM_ADO_EVENT_SHUTDOWN, {});
      for (auto& p : plugins_) p.shutdown();
      stopping_ = true;
      return OkStatus();
    default:
      return ProtocolError(fmt::format("unexpected ADO channel message type {}", m.header.type));
  }
}

Status AdoHost::run_work(const Work& w) {
  farmem_ado_work work{};
  work.work_id = w.work_id;
  work.key = reinterpret_cast<const uint8_t*>(w.key.data());
  work.key_bytes = static_cast<uint32_t>(w.key.size());
  work.request = reinterpret_cast<const uint8_t*>(w.request.data());
  work.request_bytes = static_cast<uint32_t>(w.request.size());
  work.flags = w.flags;
  work.signal = w.signal;
  work.value_count = w.value_count;
  for (uint32_t i = 0; i < w.value_count; ++i) {
    const ValueRange& v = w.values[i];
    if (!range_ok(v.offset, v.bytes)) {
      return ProtocolError(
          fmt::format("work names bytes [{}, +{}) outside the region", v.offset, v.bytes));
    }
    work.values[i] = {options_.region + v.offset, v.bytes, v.offset};
  }
  bool collect = (w.flags & (FARMEM_ADO_WORK_ASYNC | FARMEM_ADO_WORK_SIGNAL)) == 0;
  const bool target_writable =
      w.value_count > 0 && (w.flags & (FARMEM_ADO_WORK_READ_ONLY | FARMEM_ADO_WORK_SIGNAL)) == 0;
  undo_.begin(w.work_id);
  int32_t status = FARMEM_ADO_NOT_MINE;
  for (auto& p : plugins_) {
    current_ = Current{w.work_id, collect, {}, 0, {}, {}};
    if (target_writable) note_writable(w.key, w.values[0]);
    status = p.api().do_work(p.self(), &work);
    if (status != FARMEM_ADO_NOT_MINE) break;
  }
  Done d;
  d.work_id = w.work_id;
  if (status == FARMEM_ADO_NOT_MINE) {
    d.flags |= kDoneNotHandled;
    current_ = Current{};
  } else if (status == FARMEM_ADO_ERASE_TARGET) {
    d.flags |= kDoneEraseTarget;
    status = FARMEM_ADO_OK;
  }
  wire::KvAdoReply head{status, current_.count};
  d.reply.assign(reinterpret_cast<const char*>(&head), sizeof(head));
  d.reply += current_.responses;
  current_ = Current{};
  return send(encode_done(d));
}

void AdoHost::run_event(uint32_t event, const std::string& key) {
  for (auto& p : plugins_) {
    if (p.api().op_event == nullptr) continue;
    p.api().op_event(p.self(), event, key.empty() ? nullptr : key.data(),
                     static_cast<uint32_t>(key.size()));
  }
}

Result<std::string> AdoHost::next_message(uint64_t deadline_ns, bool use_inbox) {
  if (use_inbox && !inbox_.empty()) {
    std::string m = std::move(inbox_.front());
    inbox_.pop_front();
    return m;
  }
  for (;;) {
    Result<std::string_view> got = receive_message(options_.fd, &buffer_);
    FARMEM_TRY(got);
    if (!got->empty()) return std::string(*got);
    uint64_t now = now_ns();
    if (deadline_ns != 0 && now >= deadline_ns) return std::string();
    int wait_ms = static_cast<int>(options_.idle_ms);
    if (deadline_ns != 0) {
      wait_ms = std::min<int>(wait_ms, static_cast<int>((deadline_ns - now) / kNsPerMs) + 1);
    }
    pollfd p{options_.fd, POLLIN, 0};
    int n = poll(&p, 1, wait_ms);
    if (n < 0 && errno != EINTR) {
      return Internal(fmt::format("poll on the ADO channel: {}", std::strerror(errno)));
    }
    if (n == 0 && options_.idle) FARMEM_TRY(options_.idle());
  }
}

Status AdoHost::send(std::string_view message) {
  uint64_t deadline = now_ns() + (timeout_ns_ != 0 ? timeout_ns_ : 10'000 * kNsPerMs);
  for (;;) {
    Status s = send_message(options_.fd, message);
    if (s.code() != StatusCode::kResourceExhausted) return s;
    if (now_ns() >= deadline) return TimedOut("the memory node does not read the ADO channel");
    pollfd p{options_.fd, POLLOUT, 0};
    poll(&p, 1, static_cast<int>(options_.idle_ms));
  }
}

Status AdoHost::call(const Callback& c, std::string* payload) {
  FARMEM_TRY(send(encode_callback(c)));
  uint64_t deadline = now_ns() + (timeout_ns_ != 0 ? timeout_ns_ : 10'000 * kNsPerMs);
  for (;;) {
    Result<std::string> raw = next_message(deadline, false);
    FARMEM_TRY(raw);
    if (raw->empty()) return TimedOut("the memory node did not answer an ADO callback in time");
    Result<Message> m = parse_message(*raw);
    FARMEM_TRY(m);
    if (m->type() != MsgType::kCallbackReply) {
      if (m->type() == MsgType::kWork || inbox_.size() >= kMaxInbox) {
        return ProtocolError("the memory node sent work while a callback was pending");
      }
      inbox_.push_back(std::move(*raw));
      continue;
    }
    if (m->header.id != c.work_id) return ProtocolError("callback reply for another work");
    std::string_view rest;
    Status s = decode_status(*m, &rest);
    if (s.ok()) payload->assign(rest);
    return s;
  }
}

int32_t AdoHost::fail_callback(const Status& s) {
  last_error_ = s.to_string();
  int code = static_cast<int>(s.code());
  return code == 0 ? FARMEM_ADO_E_INTERNAL : -code;
}

bool AdoHost::range_ok(uint64_t offset, uint64_t bytes) const {
  return offset <= options_.region_bytes && bytes <= options_.region_bytes - offset;
}

int32_t AdoHost::to_value(std::string_view payload, farmem_ado_value* out) {
  ValueRange v{};
  if (payload.size() != sizeof(v) || !read_struct(payload, &v) || !range_ok(v.offset, v.bytes)) {
    return fail_callback(ProtocolError("the memory node answered with a bad value range"));
  }
  if (out != nullptr) *out = {options_.region + v.offset, v.bytes, v.offset};
  return FARMEM_ADO_OK;
}

int32_t AdoHost::keyed_value(const Callback& c, bool writable, farmem_ado_value* out) {
  std::string payload;
  farmem_ado_value v{};
  Status st = call(c, &payload);
  const int32_t r = st.ok() ? to_value(payload, &v) : fail_callback(st);
  if (r != FARMEM_ADO_OK) return r;
  if (writable && c.work_id == current_.work_id) note_writable(c.key, {v.offset, v.bytes});
  if (out != nullptr) *out = v;
  return r;
}

int32_t AdoHost::op_create_key(farmem_ado_store* s, uint64_t work_id, const void* key,
                               uint32_t key_bytes, uint64_t value_bytes, farmem_ado_value* out) {
  return self(s)->keyed_value(
      {work_id, CallbackOp::kCreateKey, std::string(bytes_of(key, key_bytes)), value_bytes, 0},
      true, out);
}

int32_t AdoHost::op_open_key(farmem_ado_store* s, uint64_t work_id, const void* key,
                             uint32_t key_bytes, uint32_t lock, farmem_ado_value* out) {
  return self(s)->keyed_value(
      {work_id, CallbackOp::kOpenKey, std::string(bytes_of(key, key_bytes)), lock, 0},
      lock == FARMEM_ADO_LOCK_WRITE, out);
}

int32_t AdoHost::op_erase_key(farmem_ado_store* s, const void* key, uint32_t key_bytes) {
  std::string payload;
  Status st = self(s)->call({self(s)->current_.work_id, CallbackOp::kEraseKey,
                             std::string(bytes_of(key, key_bytes)), 0, 0},
                            &payload);
  return st.ok() ? FARMEM_ADO_OK : self(s)->fail_callback(st);
}

int32_t AdoHost::op_resize_value(farmem_ado_store* s, uint64_t work_id, const void* key,
                                 uint32_t key_bytes, uint64_t new_bytes, farmem_ado_value* out) {
  AdoHost* h = self(s);
  if (h->in_transaction(bytes_of(key, key_bytes))) {
    return h->fail_callback(InvalidArgument(
        "resize_value of a value whose bytes this call added with tx_add (resize it first)"));
  }
  return h->keyed_value(
      {work_id, CallbackOp::kResize, std::string(bytes_of(key, key_bytes)), new_bytes, 0}, true,
      out);
}

int32_t AdoHost::op_allocate(farmem_ado_store* s, uint64_t bytes, uint64_t alignment,
                             farmem_ado_value* out) {
  std::string payload;
  Status st = self(s)->call(
      {self(s)->current_.work_id, CallbackOp::kAllocate, {}, bytes, alignment}, &payload);
  return st.ok() ? self(s)->to_value(payload, out) : self(s)->fail_callback(st);
}

int32_t AdoHost::op_free(farmem_ado_store* s, uint64_t offset, uint64_t bytes) {
  std::string payload;
  Status st =
      self(s)->call({self(s)->current_.work_id, CallbackOp::kFree, {}, offset, bytes}, &payload);
  return st.ok() ? FARMEM_ADO_OK : self(s)->fail_callback(st);
}

int32_t AdoHost::op_find_key(farmem_ado_store* s, const char* expression, uint32_t expression_bytes,
                             uint64_t start, uint64_t* position, void* key_out,
                             uint32_t key_capacity, uint32_t* key_bytes) {
  std::string payload;
  Status st = self(s)->call({self(s)->current_.work_id, CallbackOp::kFind,
                             std::string(bytes_of(expression, expression_bytes)), start, 0},
                            &payload);
  if (!st.ok()) return self(s)->fail_callback(st);
  FindReply r{};
  if (!read_struct(payload, &r) || payload.size() != sizeof(r) + r.key_bytes) {
    return self(s)->fail_callback(ProtocolError("the memory node answered find malformed"));
  }
  if (position != nullptr) *position = r.position;
  if (key_bytes != nullptr) *key_bytes = r.key_bytes;
  if (r.flags & kFindReplyMore) return FARMEM_ADO_MORE;
  if (r.key_bytes > key_capacity) {
    return self(s)->fail_callback(ResourceExhausted(
        fmt::format("found key of {} bytes exceeds the buffer of {}", r.key_bytes, key_capacity)));
  }
  if (r.key_bytes > 0) std::memcpy(key_out, payload.data() + sizeof(r), r.key_bytes);
  return FARMEM_ADO_OK;
}

int32_t AdoHost::op_iterate(farmem_ado_store* s, uint64_t* cursor, farmem_ado_ref* refs,
                            uint32_t max_refs, uint32_t* count) {
  AdoHost* h = self(s);
  if (cursor == nullptr || count == nullptr || (refs == nullptr && max_refs > 0)) {
    return h->fail_callback(InvalidArgument("iterate: null cursor, count or refs"));
  }
  *count = 0;
  if (*cursor == UINT64_MAX) return FARMEM_ADO_OK;
  uint32_t want = std::min<uint32_t>(max_refs, kMaxIterateRefs);
  std::string payload;
  Status st = h->call({h->current_.work_id, CallbackOp::kIterate, {}, *cursor, want}, &payload);
  if (!st.ok()) return h->fail_callback(st);
  IterateReply r{};
  if (!read_struct(payload, &r) || r.count > want ||
      payload.size() != sizeof(r) + r.count * sizeof(RecordRef)) {
    return h->fail_callback(ProtocolError("the memory node answered iterate malformed"));
  }
  *cursor = r.next_cursor;
  uint32_t n = 0;
  for (uint32_t i = 0; i < r.count; ++i) {
    RecordRef rr{};
    read_struct(payload, &rr, sizeof(r) + i * sizeof(RecordRef));
    wire::KvRecordHeader head{};
    if (!h->range_ok(rr.record, sizeof(head))) continue;
    std::memcpy(&head, h->options_.region + rr.record, sizeof(head));
    uint64_t body = uint64_t{head.key_bytes} + head.value_bytes;
    // A record rewritten since it was listed may show any header: skip what cannot be real
    // (ref_is_current would reject it anyway).
    if (!h->range_ok(rr.record + sizeof(head), body)) continue;
    farmem_ado_ref& ref = refs[n++];
    ref = {};
    ref.key = h->options_.region + rr.record + sizeof(head);
    ref.key_bytes = head.key_bytes;
    ref.value = ref.key + head.key_bytes;
    ref.value_bytes = head.value_bytes;
    ref.record = rr.record;
    ref.version = rr.version;
  }
  *count = n;
  return FARMEM_ADO_OK;
}

int32_t AdoHost::op_unlock_key(farmem_ado_store* s, uint64_t work_id, const void* key,
                               uint32_t key_bytes) {
  AdoHost* h = self(s);
  if (h->in_transaction(bytes_of(key, key_bytes))) {
    return h->fail_callback(InvalidArgument(
        "unlock_key of a value whose bytes this call added with tx_add (it is unlocked when the "
        "invocation ends)"));
  }
  std::string payload;
  Status st = h->call({work_id, CallbackOp::kUnlock, std::string(bytes_of(key, key_bytes)), 0, 0},
                      &payload);
  if (!st.ok()) return h->fail_callback(st);
  if (work_id == h->current_.work_id) h->forget_writable(bytes_of(key, key_bytes));
  return FARMEM_ADO_OK;
}

int32_t AdoHost::op_pool_info(farmem_ado_store* s, farmem_ado_pool_info* out) {
  std::string payload;
  Status st = self(s)->call({self(s)->current_.work_id, CallbackOp::kPoolInfo, {}, 0, 0}, &payload);
  if (!st.ok()) return self(s)->fail_callback(st);
  if (payload.size() != sizeof(farmem_ado_pool_info) || out == nullptr) {
    return self(s)->fail_callback(ProtocolError("the memory node answered pool_info malformed"));
  }
  std::memcpy(out, payload.data(), sizeof(*out));
  return FARMEM_ADO_OK;
}

int32_t AdoHost::op_ref_is_current(farmem_ado_store* s, const farmem_ado_ref* ref) {
  AdoHost* h = self(s);
  if (ref == nullptr || !h->range_ok(ref->record, sizeof(wire::KvRecordHeader))) return 0;
  // The plugin's reads of the value happen before this load (a seqlock's second check): the
  // node marks a record locked or dead before it changes its bytes.
  std::atomic_thread_fence(std::memory_order_acquire);
  auto* state = reinterpret_cast<const uint64_t*>(h->options_.region + ref->record);
  uint64_t now = __atomic_load_n(state, __ATOMIC_ACQUIRE);
  return now == wire::record_state(ref->version, wire::kRecordLive) ? 1 : 0;
}

int32_t AdoHost::op_respond(farmem_ado_store* s, uint64_t work_id, uint32_t layer, const void* data,
                            uint64_t bytes) {
  AdoHost* h = self(s);
  Current& c = h->current_;
  if (work_id != c.work_id || work_id == 0) {
    return h->fail_callback(InvalidArgument("respond outside the do_work call of that work id"));
  }
  if (!c.collect) return FARMEM_ADO_OK;  // asynchronous call or signal: dropped
  uint64_t padded = (bytes + 7) & ~uint64_t{7};
  uint64_t total = c.responses.size() + sizeof(wire::KvAdoResponse) + padded;
  if (c.count >= FARMEM_ADO_MAX_RESPONSES || total > FARMEM_ADO_MAX_RESPONSE_BYTES) {
    return h->fail_callback(
        ResourceExhausted(fmt::format("ADO reply full ({} responses, {} bytes max)",
                                      FARMEM_ADO_MAX_RESPONSES, FARMEM_ADO_MAX_RESPONSE_BYTES)));
  }
  wire::KvAdoResponse r{static_cast<uint32_t>(bytes), layer};
  c.responses.append(reinterpret_cast<const char*>(&r), sizeof(r));
  c.responses.append(bytes_of(data, bytes));
  c.responses.append(padded - bytes, '\0');
  ++c.count;
  return FARMEM_ADO_OK;
}

const char* AdoHost::op_last_error(farmem_ado_store* s) { return self(s)->last_error_.c_str(); }

}  // namespace farmem::kv::ado
