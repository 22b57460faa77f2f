// Fuzz target: everything a memory node parses from the network.
//
// The first input byte picks the parser: 0 the door hello (validate_door_hello and the length
// arithmetic the door does), 1 an RPC header (validate_request_header), 2 a served memops
// request on a small region, 3 a whole request through the core service's dispatch (alloc,
// free, roots, objects, sessions-alive, memops, ...) against a real NodeState, 4 a request of
// the kv service (opcode 256 + next byte % 64, then the payload) on that node, where a pool
// "fuzz" is open and a leading pool handle of 1 stands for its handle. The rest of the input is
// the message. Nothing may crash, hang, leak or read out of bounds (run under ASan and UBSan),
// every kv request is answered exactly once within the 64 KiB reply bound, and the node state
// must stay consistent (checked after each input).
//
// Built two ways: with libFuzzer (clang, -DFARMEM_LIBFUZZER=ON) for open-ended fuzzing, and as
// farmem_fuzz_server_input (fuzz_main.cc) that replays tests/fuzz/corpus and then runs a fixed
// number of seeded mutations, which CI runs.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "farmem/fabric/door.h"
#include "farmem/fabric/rpc.h"
#include "farmem/kv/service.h"
#include "farmem/kv/wire.h"
#include "farmem/memnode/memops.h"
#include "farmem/memnode/service.h"

namespace {

namespace w = farmem::wire;
using farmem::memnode::NodeState;

constexpr uint64_t kRegionBytes = 1 << 20;
constexpr uint64_t kSession = 7;

// Keeps the one answer a handler gives.
struct Capture final : farmem::memnode::ReplySink {
  int replies = 0;
  farmem::StatusCode code = farmem::StatusCode::kOk;
  std::string payload;
  void send_reply(uint64_t, uint32_t, const w::RpcHeader&, farmem::StatusCode c, const void* p,
                  size_t n) override {
    ++replies;
    code = c;
    payload.assign(static_cast<const char*>(p), n);
  }
};

struct World {
  farmem::memnode::ServerConfig config;
  std::vector<uint64_t> region;  // 8-byte aligned words: records hold atomics
  std::unique_ptr<NodeState> node;
  std::unique_ptr<farmem::memnode::ServiceWorker> core;
  std::shared_ptr<farmem::memnode::Service> kv_service;
  std::unique_ptr<farmem::memnode::ServiceWorker> kv;
  World() : region(kRegionBytes / 8) {
    config.capacity_bytes = kRegionBytes;
    node = std::make_unique<NodeState>(config, w::kRegionHeaderBytes);
    node->region_base = reinterpret_cast<uint8_t*>(region.data());
    node->region_bytes = kRegionBytes;
    node->worker_count = 1;
    node->sessions.insert(kSession);
    farmem::memnode::WorkerContext wc{node.get(), 0};
    core = farmem::memnode::make_core_service()->start_worker(wc);
    farmem::kv::KvServiceOptions o;
    o.record_grace_ms = 0;
    kv_service = farmem::kv::make_kv_service(o);
    kv = kv_service->start_worker(wc);
  }
};

World& world() {
  static World* w = new World();
  return *w;
}

void door(const uint8_t* p, size_t n) {
  w::DoorHello h{};
  std::memcpy(&h, p, std::min(n, sizeof(h)));
  if (!farmem::fabric::validate_door_hello(h).ok()) return;
  const size_t want = sizeof(h) + h.key_bytes + h.address_bytes;  // bounded by validation
  if (want > sizeof(h) + w::kMaxClusterKeyBytes + w::kMaxWorkerAddressBytes) __builtin_trap();
  if (n >= want) {
    std::string_view key(reinterpret_cast<const char*>(p) + sizeof(h), h.key_bytes);
    (void)farmem::fabric::keys_equal(key, "secret");
  }
}

void rpc_header(const uint8_t* p, size_t n) {
  const size_t header_bytes = n > 0 ? p[0] % 64 : 0;
  if (n < 1 + header_bytes) return;
  w::RpcHeader h;
  (void)farmem::fabric::validate_request_header(p + 1, header_bytes, n - 1 - header_bytes, &h);
}

void memops(const uint8_t* p, size_t n) {
  std::string reply;
  (void)farmem::memnode::execute_memops(world().node->region_base, kRegionBytes, p, n, &reply);
  if (reply.size() > w::kMaxRpcPayloadBytes) __builtin_trap();
}

void dispatch(const uint8_t* p, size_t n) {
  if (n < 2) return;
  farmem::memnode::Request r;
  r.header.magic = w::kRpcMagic;
  r.header.version = w::kProtocolVersion;
  r.header.opcode = static_cast<uint16_t>(p[0] | (p[1] << 8));
  r.payload.assign(p + 2, p + n);
  r.header.payload_bytes = static_cast<uint32_t>(r.payload.size());
  r.session = 7;
  // A responder without a worker answers nowhere: the handler's reply is dropped.
  world().core->handle(r, farmem::memnode::Responder(nullptr, 7, r.header));
  NodeState& node = *world().node;
  std::lock_guard<std::mutex> lock(node.mu);
  if (node.heap.used_bytes() > kRegionBytes) __builtin_trap();
  // Keep the state from filling up across inputs: drop what this input's session allocated.
  node.heap.release(7);
}

// One kv request from session 7; traps unless it is answered exactly once within the bounds.
Capture kv_call(uint16_t opcode, std::vector<uint8_t> payload) {
  farmem::memnode::Request r;
  r.header.magic = w::kRpcMagic;
  r.header.version = w::kProtocolVersion;
  r.header.opcode = opcode;
  r.payload = std::move(payload);
  r.header.payload_bytes = static_cast<uint32_t>(r.payload.size());
  r.session = kSession;
  Capture c;
  world().kv->handle(r, farmem::memnode::Responder(&c, kSession, r.header));
  if (c.replies != 1 || c.payload.size() > w::kMaxRpcPayloadBytes) __builtin_trap();
  return c;
}

std::vector<uint8_t> pool_request(std::string_view name, uint64_t capacity) {
  farmem::kv::wire::KvPoolRequest q{capacity, 0, 0, static_cast<uint32_t>(name.size())};
  std::vector<uint8_t> p(sizeof(q) + name.size());
  std::memcpy(p.data(), &q, sizeof(q));
  std::memcpy(p.data() + sizeof(q), name.data(), name.size());
  return p;
}

// Opens (creating it if needed) the pool "fuzz" for session 7; its handle, or 0.
uint64_t open_fuzz_pool() {
  Capture c = kv_call(static_cast<uint16_t>(farmem::kv::wire::KvOpcode::kPoolCreate),
                      pool_request("fuzz", 256 << 10));
  farmem::kv::wire::KvPoolReply reply{};
  if (c.code != farmem::StatusCode::kOk || c.payload.size() != sizeof(reply)) return 0;
  std::memcpy(&reply, c.payload.data(), sizeof(reply));
  return reply.pool;
}

// Deletes every pool but "fuzz" (the session's handles are closed by then).
void delete_other_pools() {
  namespace kw = farmem::kv::wire;
  kw::KvListRequest lr{0, 0};
  std::vector<uint8_t> p(sizeof(lr));
  std::memcpy(p.data(), &lr, sizeof(lr));
  Capture c = kv_call(static_cast<uint16_t>(kw::KvOpcode::kPoolList), p);
  if (c.code != farmem::StatusCode::kOk) __builtin_trap();
  std::vector<std::string> names;
  size_t at = sizeof(kw::KvListReply);
  while (at + sizeof(kw::KvListEntry) <= c.payload.size()) {
    kw::KvListEntry e;
    std::memcpy(&e, c.payload.data() + at, sizeof(e));
    at += sizeof(e);
    names.emplace_back(c.payload.substr(at, e.name_bytes));
    at += (e.name_bytes + 7) & ~size_t{7};
  }
  for (const auto& n : names) {
    if (n == "fuzz") continue;
    Capture d = kv_call(static_cast<uint16_t>(kw::KvOpcode::kPoolDelete), pool_request(n, 0));
    if (d.code != farmem::StatusCode::kOk) __builtin_trap();
  }
}

void kv_request(const uint8_t* p, size_t n) {
  if (n < 1) return;
  const uint16_t opcode = static_cast<uint16_t>(farmem::kv::wire::kKvFirstOpcode + p[0] % 64);
  std::vector<uint8_t> payload(p + 1, p + n);
  const uint64_t handle = open_fuzz_pool();
  uint64_t lead = 0;
  if (payload.size() >= 8) std::memcpy(&lead, payload.data(), 8);
  if (lead == 1) std::memcpy(payload.data(), &handle, 8);
  kv_call(opcode, std::move(payload));
  world().kv->on_session_end(kSession);  // handles and locks go, as when a session ends
  delete_other_pools();
  NodeState& node = *world().node;
  std::lock_guard<std::mutex> lock(node.mu);
  if (node.heap.used_bytes() > kRegionBytes) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t* p = data + 1;
  const size_t n = size - 1;
  switch (data[0] % 5) {
    case 0:
      door(p, n);
      break;
    case 1:
      rpc_header(p, n);
      break;
    case 2:
      memops(p, n);
      break;
    case 3:
      dispatch(p, n);
      break;
    default:
      kv_request(p, n);
      break;
  }
  return 0;
}
