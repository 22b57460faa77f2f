#include "btree_procedures.h"
#include "farmem/ds/btree/served.h"
#include "farmem/ds/hash/served.h"
#include "farmem/ds/service.h"
#include "hash_procedures.h"

namespace farmem::ds {

namespace {

class NoRequests final : public memnode::ServiceWorker {
 public:
  void handle(memnode::Request&, memnode::Responder responder) override {
    responder.fail(Internal("the ds service has no RPCs"));
  }
};

class DsService final : public memnode::Service {
 public:
  std::string_view name() const override { return "ds"; }
  uint16_t first_opcode() const override { return 0; }
  uint16_t last_opcode() const override { return 0; }
  std::vector<memnode::Procedure> procedures() const override {
    return {{hash::kProcHashGet, "hash get", &hash::served_get},
            {hash::kProcHashUpdate, "hash update", &hash::served_update},
            {hash::kProcHashInsert, "hash insert", &hash::served_insert},
            {btree::kProcBtreeScan, "btree scan", &btree::served_scan}};
  }
  std::unique_ptr<memnode::ServiceWorker> start_worker(const memnode::WorkerContext&) override {
    return std::make_unique<NoRequests>();
  }
};

}  // namespace

std::shared_ptr<memnode::Service> make_ds_service() { return std::make_shared<DsService>(); }

}  // namespace farmem::ds
