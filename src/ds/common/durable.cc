#include "farmem/ds/common/durable.h"

#include <algorithm>
#include <map>

#include "farmem/client/batch.h"

namespace farmem::ds {

runtime::Task<Status> persist_if_durable(client::ThreadClient* c, GlobalAddress addr,
                                         uint64_t bytes) {
  if (!node_durable(c, addr.node())) co_return OkStatus();
  Status s = co_await c->persist(addr, bytes);
  co_return s;
}

runtime::Task<Status> persist_all(client::ThreadClient* c, const std::vector<PersistRange>& ranges,
                                  bool ordered) {
  std::map<uint16_t, std::vector<wire::PersistRange>> by_node;
  for (const PersistRange& r : ranges) {
    if (r.bytes == 0 || !node_durable(c, r.addr.node())) continue;
    by_node[r.addr.node()].push_back({r.addr.offset(), r.bytes});
  }
  for (auto& [node, list] : by_node) {
    for (size_t at = 0; at < list.size(); at += wire::kMaxPersistRanges) {
      const size_t n = std::min<size_t>(wire::kMaxPersistRanges, list.size() - at);
      std::vector<wire::PersistRange> part(list.begin() + static_cast<long>(at),
                                           list.begin() + static_cast<long>(at + n));
      FARMEM_CO_TRY(co_await c->persist(node, std::move(part), ordered));
    }
  }
  co_return OkStatus();
}

runtime::Task<Status> durable_write(client::ThreadClient* c, GlobalAddress addr, const void* src,
                                    size_t bytes) {
  if (!node_durable(c, addr.node())) {
    Status s = co_await c->write(addr, src, bytes);
    co_return s;
  }
  client::Batch b(*c);  // over TCP one message: the write, then its persist
  FARMEM_CO_TRY(b.write(addr, src, bytes));
  FARMEM_CO_TRY(b.persist(addr, bytes));
  Status s = co_await b.wait();
  co_return s;
}

}  // namespace farmem::ds
