// Fuzz target: everything a memory node parses from the network.
//
// The first input byte picks the parser: 0 the door hello (validate_door_hello and the length
// arithmetic the door does), 1 an RPC header (validate_request_header), 2 a served memops
// request on a small region, 3 a whole request through the core service's dispatch (alloc,
// free, roots, objects, sessions-alive, memops, ...) against a real NodeState. The rest of the
// input is the message. Nothing may crash, hang, leak or read out of bounds (run under ASan and
// UBSan), and the node state must stay consistent (checked after each input).
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
#include "farmem/memnode/memops.h"
#include "farmem/memnode/service.h"

namespace {

namespace w = farmem::wire;
using farmem::memnode::NodeState;

constexpr uint64_t kRegionBytes = 1 << 20;

struct World {
  farmem::memnode::ServerConfig config;
  std::vector<uint8_t> region;
  std::unique_ptr<NodeState> node;
  std::unique_ptr<farmem::memnode::ServiceWorker> core;
  World() : region(kRegionBytes) {
    config.capacity_bytes = kRegionBytes;
    node = std::make_unique<NodeState>(config, w::kRegionHeaderBytes);
    node->region_base = region.data();
    node->region_bytes = region.size();
    node->worker_count = 1;
    node->sessions.insert(7);
    farmem::memnode::WorkerContext wc{node.get(), 0};
    core = farmem::memnode::make_core_service()->start_worker(wc);
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
  (void)farmem::memnode::execute_memops(world().region.data(), kRegionBytes, p, n, &reply);
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t* p = data + 1;
  const size_t n = size - 1;
  switch (data[0] % 4) {
    case 0:
      door(p, n);
      break;
    case 1:
      rpc_header(p, n);
      break;
    case 2:
      memops(p, n);
      break;
    default:
      dispatch(p, n);
      break;
  }
  return 0;
}
