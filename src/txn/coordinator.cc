// TxnClient: a thread's coordinator (creation of its log slots, ids, begin) and the crash hook.
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "context.h"
#include "farmem/client/cluster.h"
#include "farmem/ds/common/durable.h"
#include "farmem/ds/common/far_object.h"
#include "farmem/txn/transaction.h"

namespace farmem::txn {

using runtime::Task;

namespace {

constexpr const char* kLogsObject = "txn/logs";

// The lowest node id that is not named down.
uint16_t lowest_node(client::ThreadClient* c) {
  uint16_t lowest = UINT16_MAX;
  for (const auto& n : c->cluster().nodes()) {
    if (!n.down) lowest = std::min(lowest, n.node_id);
  }
  return lowest;
}

// Session ids are unique per node: a coordinator id from a node other than the lowest listed
// one (named down) carries that node's id in its top 16 bits.
uint64_t coordinator_id(client::ThreadClient* c) {
  const uint16_t node = lowest_node(c);
  bool lowest = true;
  for (const auto& n : c->cluster().nodes()) lowest &= n.node_id >= node;
  const uint64_t session = c->session_id(node);
  return lowest ? session : (uint64_t{node} << 48) | (session & ((1ull << 48) - 1));
}

// Opens the persistent object that owns every coordinator's log slots, creating it on first use.
Task<Result<ds::FarObject>> logs_object(client::ThreadClient* c) {
  ds::RetryLoop loop(c, "opening txn/logs", 50);
  for (;;) {
    auto opened = co_await ds::FarObject::open(c, kLogsObject);
    if (opened.ok() || opened.status().code() != StatusCode::kNotFound) co_return opened;
    auto created = co_await ds::FarObject::create(c, kLogsObject, false);
    if (created.ok()) {
      const uint16_t node = lowest_node(c);
      auto marker = co_await c->allocate_on(node, 64, 64, created->owner(node));
      Status s = marker.status();
      if (s.ok()) s = co_await created->commit(c, *marker);
      if (s.ok()) co_return created;
      (void)co_await created->destroy(c);
      co_return s;
    }
    if (created.status().code() != StatusCode::kAlreadyExists) co_return created.status();
    if (loop.exhausted()) co_return loop.give_up();  // created elsewhere, not yet published
    co_await loop.retry();
  }
}

Status check_options(const TxnClientOptions& o) {
  if (o.log_slots == 0 || o.log_slots > 1024) return InvalidArgument("log_slots must be 1..1024");
  if (o.log_slot_bytes < 256 || o.log_slot_bytes > (1u << 20) || o.log_slot_bytes % 64 != 0) {
    return InvalidArgument("log_slot_bytes must be 256..1 MiB, a multiple of 64");
  }
  if (o.cache_log2 > 30) return InvalidArgument("cache_log2 must be at most 30");
  if (o.max_records == 0 || o.max_records > 65536) {
    return InvalidArgument("max_records must be 1..65536");
  }
  return OkStatus();
}

// The node of this thread's log slots: the live nodes in id order, by thread index (spreads
// the coordinators' logs over the nodes).
uint16_t log_node(client::ThreadClient* c) {
  std::vector<uint16_t> ids;
  for (const auto& n : c->cluster().nodes()) {
    if (!n.down) ids.push_back(n.node_id);
  }
  std::sort(ids.begin(), ids.end());
  return ids[c->index() % ids.size()];
}

// Allocates log_slots + 1 slots owned by `logs` and writes each slot's owner_session (this
// thread's session on that node); every other byte is 0 (state idle).
Task<Result<GlobalAddress>> allocate_log_slots(client::ThreadClient* c, const ds::FarObject& logs,
                                               const TxnClientOptions& o) {
  const uint16_t node = log_node(c);
  const uint64_t bytes = uint64_t{o.log_slots + 1} * o.log_slot_bytes;
  FARMEM_CO_ASSIGN_OR_RETURN(const GlobalAddress base,
                             co_await c->allocate_on(node, bytes, 64, logs.owner(node)));
  std::string image(bytes, '\0');
  const uint64_t session = c->session_id(node);
  for (uint32_t i = 0; i <= o.log_slots; ++i) {
    std::memcpy(image.data() + uint64_t{i} * o.log_slot_bytes + kLogOwnerOffset, &session,
                sizeof(session));
  }
  Status ws = co_await ds::durable_write(c, base, image.data(), image.size());
  if (!ws.ok()) {
    (void)co_await c->free_on(base);
    co_return ws;
  }
  co_return base;
}

}  // namespace

// ---- CrashHook ----

CrashHook CrashHook::from_environment() {
  CrashHook h;
  const char* crash = std::getenv("FARMEM_TXN_CRASH_AT");
  const std::string at = crash == nullptr ? "" : crash;
  if (at == "before_log") h.at_ = At::kBeforeLog;
  if (at == "after_log") h.at_ = At::kAfterLog;
  if (at == "after_write") h.at_ = At::kAfterWrite;
  const char* sig = std::getenv("FARMEM_TXN_CRASH_SIGNAL");
  h.stops_ = sig != nullptr && std::string_view(sig) == "stop";
  return h;
}

void CrashHook::fire() const { ::raise(stops_ ? SIGSTOP : SIGKILL); }

// ---- TxnClient ----

TxnClient::TxnClient(client::ThreadClient* c, std::unique_ptr<TxnContext> ctx)
    : client_(c), ctx_(std::move(ctx)), coordinator_(coordinator_id(c)) {}

TxnClient::~TxnClient() = default;

Task<Result<std::unique_ptr<TxnClient>>> TxnClient::create(client::ThreadClient* c,
                                                           TxnClientOptions o) {
  FARMEM_CO_TRY(check_options(o));
  auto logs = co_await logs_object(c);
  FARMEM_CO_TRY(logs);
  FARMEM_CO_ASSIGN_OR_RETURN(const GlobalAddress base, co_await allocate_log_slots(c, *logs, o));
  std::unique_ptr<TxnClient> tc(new TxnClient(c, std::make_unique<TxnContext>(c, o, base)));
  co_return tc;
}

Task<Status> TxnClient::close() {
  const GlobalAddress base = ctx_->logs.base();
  if (base.is_null()) co_return OkStatus();
  Status s = co_await client_->free_on(base);
  ctx_->logs.close();
  co_return s;
}

const TxnCounters& TxnClient::counters() const { return ctx_->counters; }

Task<Result<bool>> TxnClient::recover(GlobalAddress word, uint64_t holder) {
  auto r = co_await ctx_->recovery.recover(word, holder);
  co_return r;
}

Task<Result<bool>> TxnClient::settle_for_promotion(uint64_t holder, uint16_t dead_node) {
  auto r = co_await ctx_->recovery.settle_for_promotion(holder, dead_node);
  co_return r;
}

}  // namespace farmem::txn
