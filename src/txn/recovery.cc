#include "recovery.h"

#include <fmt/format.h>

#include <cstring>
#include <utility>

#include "context.h"
#include "farmem/client/cluster.h"
#include "farmem/common/clock.h"
#include "farmem/ds/common/durable.h"
#include "redo_log.h"

namespace farmem::txn {

using runtime::Task;

namespace {

constexpr uint64_t kZeroWord = 0;

}  // namespace

// ---- HolderChecks ----

HolderChecks::Check* HolderChecks::find(uint64_t holder) {
  for (Check& c : checks_) {
    if (c.holder == holder) return &c;
  }
  return nullptr;
}

bool HolderChecks::admit(uint64_t holder, uint64_t now_ns, uint64_t interval_ns, bool* dead) {
  Check* known = find(holder);
  if (known != nullptr && !known->dead && now_ns - known->at_ns < interval_ns) return false;
  if (known == nullptr || !known->dead) {
    if (now_ns - window_start_ns_ >= interval_ns) {
      window_start_ns_ = now_ns;
      window_checks_ = 0;
    }
    if (window_checks_ >= kRecent) return false;
    ++window_checks_;
  }
  if (known == nullptr) {
    known = &checks_[next_++ % kRecent];
    *known = Check{holder, now_ns, false};
  }
  known->at_ns = now_ns;
  *dead = known->dead;
  return true;
}

void HolderChecks::record(uint64_t holder, bool dead) {
  Check* again = find(holder);  // the ring may have moved on meanwhile
  if (again != nullptr) again->dead = dead;
}

// ---- Recovery ----

Task<Result<bool>> Recovery::recover(GlobalAddress word, uint64_t holder) {
  if (holder == 0 || recovering_) co_return false;
  if (ctx_->client->endpoint(GlobalAddress::unpack(holder).node()) == nullptr) co_return false;
  bool dead = false;
  if (!checks_.admit(holder, now_ns(), ctx_->options.recovery_check_ns, &dead)) co_return false;
  recovering_ = true;  // one recovery at a time per coordinator: it has one recovery slot
  Result<bool> r = co_await recover_slot(word, holder, &dead);
  recovering_ = false;
  checks_.record(holder, dead);
  co_return r;
}

Task<Result<bool>> Recovery::read_log(GlobalAddress slot, const LogSlotHeader& h,
                                      std::string* log) {
  if (h.state != kLogCommitting || h.body_bytes > ctx_->options.log_slot_bytes - sizeof(h)) {
    co_return false;
  }
  log->assign(sizeof(h) + h.body_bytes, '\0');
  Status s = co_await ctx_->client->read(slot, log->data(), log->size());
  FARMEM_CO_TRY(s);
  LogSlotHeader now;
  std::memcpy(&now, log->data(), sizeof(now));
  const bool complete =
      now.state == kLogCommitting && log_checksum(log->data(), log->size()) == now.checksum;
  co_return complete;
}

Task<Result<bool>> Recovery::recover_slot(GlobalAddress word, uint64_t holder, bool* dead) {
  client::ThreadClient* c = ctx_->client;
  const GlobalAddress slot = GlobalAddress::unpack(holder);
  LogSlotHeader h{};
  Status s = co_await c->read(slot, &h, sizeof(h));
  FARMEM_CO_TRY(s);
  if (!*dead) {
    std::vector<uint64_t> ids(1, h.owner_session);
    auto alive = co_await c->sessions_alive(slot.node(), std::move(ids));
    FARMEM_CO_TRY(alive);
    if (alive->empty() || (*alive)[0]) co_return false;
    *dead = true;
  }
  // The holder's coordinator has ended: it sends nothing more, so its log is final.
  std::string log;
  auto committing = co_await read_log(slot, h, &log);
  FARMEM_CO_TRY(committing);
  if (*committing) {
    s = co_await roll_forward(holder, log);
    FARMEM_CO_TRY(s);
    co_return true;
  }
  // Not committing (or a torn log): nothing was written in place; release the lock.
  uint64_t old = 0;
  s = co_await c->cas(word, holder, 0, &old);
  FARMEM_CO_TRY(s);
  co_return old == holder;
}

Task<Result<bool>> Recovery::settle_for_promotion(uint64_t holder, uint16_t dead_node) {
  client::ThreadClient* c = ctx_->client;
  const GlobalAddress slot = GlobalAddress::unpack(holder);
  LogSlotHeader h{};
  Status s = co_await c->read(slot, &h, sizeof(h));
  FARMEM_CO_TRY(s);
  std::string log;
  auto committing = co_await read_log(slot, h, &log);
  FARMEM_CO_TRY(committing);
  if (!*committing) co_return false;  // nothing of it is in place; its locks go when met
  if (!log_touches(log, dead_node)) co_return false;  // recovered as usual when met
  std::vector<uint64_t> ids(1, h.owner_session);
  auto alive = co_await c->sessions_alive(slot.node(), std::move(ids));
  FARMEM_CO_TRY(alive);
  if (alive->empty() || (*alive)[0]) {
    co_return Busy(fmt::format(
        "the coordinator of a transaction committing to node {} (its log at node {} offset {}, "
        "session {}) is still running; stop it (or let it end) and promote again",
        dead_node, slot.node(), slot.offset(), h.owner_session));
  }
  s = co_await roll_forward(holder, log);
  FARMEM_CO_TRY(s);
  co_return true;
}

Task<Status> Recovery::roll_forward(uint64_t holder, const std::string& log) {
  client::ThreadClient* c = ctx_->client;
  // Adopt the log into this coordinator's recovery slot first: the locks taken over below name
  // it, so if this client dies too, the next recoverer finds the same log there.
  const GlobalAddress mine = ctx_->logs.recovery_slot();
  // Every write below is persisted on a durable node before the next (ds/common/durable.h).
  Status s = co_await ds::durable_write(c, mine + kLogStateOffset, log.data() + kLogStateOffset,
                                        log.size() - kLogStateOffset);
  FARMEM_CO_TRY(s);
  LogCursor cursor(log);
  LogEntryView e;
  while (cursor.next(&e)) {
    std::vector<GlobalAddress> targets;
    for (uint32_t t = 0; t < e.targets; ++t) {
      const GlobalAddress a = e.target(t);
      if (!c->cluster().is_down(a.node())) targets.push_back(a);  // a dead replica
    }
    if (c->cluster().is_down(e.lock_word.node())) {
      // The lock word died with its node (a promotion): apply by version instead.
      s = co_await apply_unlocked(targets, e.image, e.image_bytes);
      FARMEM_CO_TRY(s);
      continue;
    }
    uint64_t old = 0;
    s = co_await c->cas(e.lock_word, holder, mine.pack(), &old);
    FARMEM_CO_TRY(s);
    if (old == holder || old == mine.pack()) {
      for (const GlobalAddress& target : targets) {
        s = co_await ds::durable_write(c, target, e.image, e.image_bytes);
        FARMEM_CO_TRY(s);
      }
      s = co_await ds::durable_write(c, e.lock_word, &kZeroWord, kLockWordBytes);
      FARMEM_CO_TRY(s);
    }
  }
  if (cursor.malformed()) co_return Internal("malformed redo log");
  s = co_await ds::durable_write(c, GlobalAddress::unpack(holder) + kLogStateOffset, &kZeroWord,
                                 sizeof(kZeroWord));
  FARMEM_CO_TRY(s);
  s = co_await ds::durable_write(c, mine + kLogStateOffset, &kZeroWord, sizeof(kZeroWord));
  co_return s;
}

Task<Status> Recovery::apply_unlocked(const std::vector<GlobalAddress>& targets, const char* image,
                                      uint32_t image_bytes) {
  if (image_bytes < sizeof(uint64_t)) co_return OkStatus();
  uint64_t version = 0;  // every image starts with the version it gives its slot or bucket
  std::memcpy(&version, image, sizeof(version));
  for (const GlobalAddress& target : targets) {
    uint64_t current = 0;
    Status s = co_await ctx_->client->read(target, &current, sizeof(current));
    FARMEM_CO_TRY(s);
    // Written already (or by a later transaction): a live coordinator's batch that failed only
    // on the dead node reached this replica.
    if (current >= version) continue;
    s = co_await ds::durable_write(ctx_->client, target, image, image_bytes);
    FARMEM_CO_TRY(s);
  }
  co_return OkStatus();
}

}  // namespace farmem::txn
