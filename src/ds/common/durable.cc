#include "farmem/ds/common/durable.h"

namespace farmem::ds {

runtime::Task<Status> persist_if_durable(client::ThreadClient* c, GlobalAddress addr,
                                         uint64_t bytes) {
  if (!node_durable(c, addr.node())) co_return OkStatus();
  Status s = co_await c->persist(addr, bytes);
  co_return s;
}

runtime::Task<Status> durable_write(client::ThreadClient* c, GlobalAddress addr, const void* src,
                                    size_t bytes) {
  FARMEM_CO_TRY(co_await c->write(addr, src, bytes));
  Status s = co_await persist_if_durable(c, addr, bytes);
  co_return s;
}

}  // namespace farmem::ds
