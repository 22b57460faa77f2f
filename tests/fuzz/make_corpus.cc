// Writes the seed corpus of server_input_fuzz.cc (tests/fuzz/corpus): one valid message of
// every kind the node parses. Run once when the wire formats change:
//   build/tests/farmem_fuzz_make_corpus tests/fuzz/corpus
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>

#include "farmem/fabric/door.h"
#include "farmem/fabric/wire.h"
#include "farmem/kv/wire.h"
#include "kv/kv_messages.h"

namespace w = farmem::wire;

namespace {

std::string dir;

void put(const std::string& name, uint8_t selector, const std::string& body) {
  std::ofstream f(dir + "/" + name, std::ios::binary);
  f.put(static_cast<char>(selector));
  f << body;
}

template <typename T>
std::string bytes(const T& v) {
  return std::string(reinterpret_cast<const char*>(&v), sizeof(v));
}

std::string op(w::Opcode o) {
  uint16_t v = static_cast<uint16_t>(o);
  return bytes(v);
}

// kv requests (selector 4): the opcode's offset from 256, then the payload; pool handle 1 is the
// fuzz target's open pool "fuzz".
void kv(const std::string& name, farmem::kv::wire::KvOpcode o, const std::string& payload) {
  put("kv_" + name, 4,
      std::string(1,
                  static_cast<char>(static_cast<uint16_t>(o) - farmem::kv::wire::kKvFirstOpcode)) +
          payload);
}

void kv_corpus() {
  namespace kt = farmem::kv::testing;
  namespace kw = farmem::kv::wire;
  using O = kw::KvOpcode;
  kv("create", O::kPoolCreate,
     farmem::kv::encode_pool_request("other", 64 << 10, 10, kw::kPoolCreateOnly));
  kv("open", O::kPoolOpen, farmem::kv::encode_pool_request("fuzz", 0, 0, kw::kPoolReadOnly));
  kv("close", O::kPoolClose, farmem::kv::encode_pool_ref(1));
  kv("delete", O::kPoolDelete, farmem::kv::encode_pool_request("fuzz", 0, 0, 0));
  kv("configure_index", O::kPoolConfigure,
     farmem::kv::encode_configure(1, "AddIndex::VolatileTree"));
  kv("configure_ado", O::kPoolConfigure, farmem::kv::encode_configure(1, "AdoPlugins::a.so,b.so"));
  kv("info", O::kPoolInfo, farmem::kv::encode_pool_ref(1));
  kv("list", O::kPoolList, farmem::kv::encode_list(0));
  kv("ops", O::kOps,
     kt::ops_request(1, {{kw::KvOp::kPut, 0, "key", "value"},
                         {kw::KvOp::kPut, kw::kPutDontOverwrite, "key", "other"},
                         {kw::KvOp::kGet, 0, "key", ""},
                         {kw::KvOp::kPut, kw::kPutCreateOnly, "big", std::string(3000, 'v')},
                         {kw::KvOp::kErase, 0, "key", ""}}));
  kv("locate_read", O::kLocate,
     farmem::kv::encode_locate(1, kw::LocateMode::kRead, 0, 10, 100, "big"));
  kv("locate_write", O::kLocate,
     farmem::kv::encode_locate(1, kw::LocateMode::kWrite, 0, 0, 0, "key"));
  kv("locate_put_new", O::kLocate,
     farmem::kv::encode_locate(1, kw::LocateMode::kPutNew, kw::kLocateCreateOnly, 0, 70000, "new"));
  kv("release", O::kRelease, farmem::kv::encode_release(1, 1, kw::kReleaseAbort));
  kv("find", O::kFind, farmem::kv::encode_find(1, 0, "regex:k.*"));
  kv("attribute", O::kAttribute, farmem::kv::encode_attribute(1, kw::Attribute::kCrc32, "key"));
  kv("shard_stats", O::kShardStats, "");
  kv("invoke", O::kInvokeAdo, kt::bytes_of(kw::KvAdoRequest{1, 0, 0, 3, 0, 4}) + "keyreqs");
}

}  // namespace

int main(int argc, char** argv) {
  dir = argc > 1 ? argv[1] : ".";
  w::DoorHello h{w::kDoorMagic, w::kProtocolVersion, 6, 12, 0, 0, 42, 0};
  put("door_hello", 0, bytes(h) + "secret" + "worker-addr!");
  w::RpcHeader r{w::kRpcMagic, w::kProtocolVersion, 8, 1, 4, 0, 0};
  put("rpc_header", 1, std::string(1, 32) + bytes(r) + "abcd");
  w::MemOpsHeader mh{3, 0};
  w::MemOp rd{1, 0, 0, 16, 4096, 0, 0};
  w::MemOp wr{2, 0, 0, 8, 8192, 0, 0};
  w::MemOp cas{3, 0, 0, 8, 8192, 1, 2};
  put("memops", 2, bytes(mh) + bytes(rd) + bytes(wr) + std::string(8, 'x') + bytes(cas));
  put("dispatch_alloc", 3, op(w::Opcode::kAlloc) + bytes(w::AllocRequest{4096, 64, 0}));
  put("dispatch_free", 3, op(w::Opcode::kFree) + bytes(w::FreeRequest{4096}));
  w::RootRequest root{0x0003000000001000ull, 4, 0, 0};
  put("dispatch_root_publish", 3, op(w::Opcode::kRootPublish) + bytes(root) + "name");
  put("dispatch_root_lookup", 3, op(w::Opcode::kRootLookup) + bytes(root) + "name");
  w::ObjectRequest obj{0, 4, w::kObjectEphemeral};
  put("dispatch_object_create", 3, op(w::Opcode::kObjectCreate) + bytes(obj) + "hash");
  w::ObjectRequest destroy{w::kObjectOwnerBit | 1, 0, 0};
  put("dispatch_object_destroy", 3, op(w::Opcode::kObjectDestroy) + bytes(destroy));
  w::SessionsAliveRequest alive{2, 0};
  uint64_t ids[2] = {7, 8};
  put("dispatch_sessions_alive", 3,
      op(w::Opcode::kSessionsAlive) + bytes(alive) + std::string(reinterpret_cast<char*>(ids), 16));
  put("dispatch_memops", 3,
      op(w::Opcode::kMemOps) + bytes(mh) + bytes(rd) + bytes(wr) + std::string(8, 'x') +
          bytes(cas));
  put("dispatch_stats", 3, op(w::Opcode::kStats));
  put("dispatch_echo", 3, op(w::Opcode::kEcho) + "echo");
  kv_corpus();
  return 0;
}
