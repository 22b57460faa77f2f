// The kv service: routes each request to the shard (worker) that owns its pool and hands it to
// that worker's Shard (shard.h).
#include "farmem/kv/service.h"

#include <fmt/format.h>

#include "ado_manager.h"
#include "farmem/kv/wire.h"
#include "messages.h"
#include "shard.h"

namespace farmem::kv {

namespace {

namespace w = farmem::kv::wire;
using memnode::Request;
using memnode::Responder;
using service::KvShared;
using service::Shard;

class KvWorker final : public memnode::ServiceWorker {
 public:
  KvWorker(const memnode::WorkerContext& context, KvShared& shared)
      : context_(context), shard_(context, shared) {}

  void handle(Request& r, Responder responder) override {
    auto target = route(r);
    if (!target.ok()) return responder.fail(target.status());
    if (*target != context_.worker_index) {
      return context_.forward(*target, std::move(r), std::move(responder));
    }
    shard_.handle(r, std::move(responder));
  }
  void on_session_end(uint64_t session) override { shard_.on_session_end(session); }
  void poll(uint64_t now_ns) override { shard_.poll(now_ns); }
  uint64_t wake_at_ns() const override { return shard_.wake_at_ns(); }

 private:
  // The worker whose shard must serve the request.
  Result<uint32_t> route(const Request& r) const {
    const uint32_t here = context_.worker_index;
    switch (static_cast<w::KvOpcode>(r.header.opcode)) {
      case w::KvOpcode::kPoolCreate:
      case w::KvOpcode::kPoolOpen:
      case w::KvOpcode::kPoolDelete: {
        auto req =
            service::parse_pool_request(r.payload, static_cast<w::KvOpcode>(r.header.opcode));
        FARMEM_TRY(req);
        return service::shard_of(req->name, context_.worker_count);
      }
      case w::KvOpcode::kPoolList:
      case w::KvOpcode::kShardStats:
        return here;
      case w::KvOpcode::kPoolClose:
      case w::KvOpcode::kPoolConfigure:
      case w::KvOpcode::kPoolInfo:
      case w::KvOpcode::kOps:
      case w::KvOpcode::kLocate:
      case w::KvOpcode::kRelease:
      case w::KvOpcode::kFind:
      case w::KvOpcode::kAttribute:
      case w::KvOpcode::kInvokeAdo:
      case w::KvOpcode::kInvokePutAdo: {
        auto handle = service::leading_pool_handle(r.payload);
        FARMEM_TRY(handle);
        const uint32_t worker = w::pool_worker(*handle);
        if (worker >= context_.worker_count) {
          return NotFound(fmt::format("pool handle {:#x} names no worker of this node", *handle));
        }
        return worker;
      }
    }
    return InvalidArgument(fmt::format("unknown kv opcode {}", r.header.opcode));
  }

  memnode::WorkerContext context_;
  Shard shard_;
};

class KvService final : public memnode::Service {
 public:
  explicit KvService(KvServiceOptions options) : shared_(std::move(options)) {}
  std::string_view name() const override { return "kv"; }
  uint16_t first_opcode() const override { return w::kKvFirstOpcode; }
  uint16_t last_opcode() const override { return w::kKvLastOpcode; }
  std::unique_ptr<memnode::ServiceWorker> start_worker(
      const memnode::WorkerContext& context) override {
    return std::make_unique<KvWorker>(context, shared_);
  }

 private:
  KvShared shared_;
};

}  // namespace

std::shared_ptr<memnode::Service> make_kv_service(KvServiceOptions options) {
  // Active Data Objects when the node has a plugin directory (src/kv/service/ado_manager.h).
  if (!options.make_hooks && !options.ado_plugin_dir.empty()) {
    options.make_hooks = &service::make_ado_manager;
  }
  return std::make_shared<KvService>(std::move(options));
}

}  // namespace farmem::kv
