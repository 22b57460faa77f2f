#include "farmem/txn/transaction.h"

#include <fmt/format.h>
#include <signal.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "farmem/client/cluster.h"
#include "farmem/common/clock.h"
#include "farmem/ds/common/far_object.h"

namespace farmem::txn {

using runtime::Task;

namespace {

constexpr uint64_t kZeroWord = 0;

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

SlotHeader header_of(const std::string& image, size_t at = 0) {
  SlotHeader h;
  std::memcpy(&h, image.data() + at, sizeof(h));
  return h;
}

bool holds(const SlotHeader& h, uint64_t key) { return (h.flags & kSlotPresent) && h.key == key; }

}  // namespace

const char* abort_reason_name(AbortReason r) {
  switch (r) {
    case AbortReason::kNone:
      return "none";
    case AbortReason::kLockConflict:
      return "lock conflict";
    case AbortReason::kVersionChanged:
      return "version changed";
    case AbortReason::kInvisible:
      return "invisible record";
    case AbortReason::kUserAbort:
      return "user abort";
    case AbortReason::kError:
      return "error";
  }
  return "unknown";
}

// ---- TxnClient ----

TxnClient::TxnClient(client::ThreadClient* c, TxnClientOptions options)
    : client_(c), options_(options), coordinator_(coordinator_id(c)), cache_(options.cache_log2) {
  const char* crash = std::getenv("FARMEM_TXN_CRASH_AT");
  const std::string at = crash == nullptr ? "" : crash;
  if (at == "before_log") crash_at_ = CrashAt::kBeforeLog;
  if (at == "after_log") crash_at_ = CrashAt::kAfterLog;
  if (at == "after_write") crash_at_ = CrashAt::kAfterWrite;
  const char* sig = std::getenv("FARMEM_TXN_CRASH_SIGNAL");
  crash_stops_ = sig != nullptr && std::string_view(sig) == "stop";
}

TxnClient::~TxnClient() = default;

namespace {

constexpr const char* kLogsObject = "txn/logs";

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

}  // namespace

Task<Result<std::unique_ptr<TxnClient>>> TxnClient::create(client::ThreadClient* c,
                                                           TxnClientOptions o) {
  if (o.log_slots == 0 || o.log_slots > 1024)
    co_return InvalidArgument("log_slots must be 1..1024");
  if (o.log_slot_bytes < 256 || o.log_slot_bytes > (1u << 20) || o.log_slot_bytes % 64 != 0) {
    co_return InvalidArgument("log_slot_bytes must be 256..1 MiB, a multiple of 64");
  }
  if (o.cache_log2 > 30) co_return InvalidArgument("cache_log2 must be at most 30");
  if (o.max_records == 0 || o.max_records > 65536) {
    co_return InvalidArgument("max_records must be 1..65536");
  }
  auto logs = co_await logs_object(c);
  FARMEM_CO_TRY(logs);
  std::vector<uint16_t> ids;
  for (const auto& n : c->cluster().nodes()) {
    if (!n.down) ids.push_back(n.node_id);
  }
  std::sort(ids.begin(), ids.end());
  const uint16_t node = ids[c->index() % ids.size()];  // spread coordinators' logs over nodes
  const uint64_t bytes = uint64_t{o.log_slots + 1} * o.log_slot_bytes;
  auto base = co_await c->allocate_on(node, bytes, 64, logs->owner(node));
  FARMEM_CO_TRY(base);
  std::string image(bytes, '\0');
  const uint64_t session = c->session_id(node);
  for (uint32_t i = 0; i <= o.log_slots; ++i) {
    std::memcpy(image.data() + uint64_t{i} * o.log_slot_bytes, &session, 8);
  }
  Status ws = co_await c->write(*base, image.data(), image.size());
  if (!ws.ok()) {
    (void)co_await c->free_on(*base);
    co_return ws;
  }
  std::unique_ptr<TxnClient> tc(new TxnClient(c, o));
  tc->log_base_ = *base;
  for (uint32_t i = o.log_slots; i-- > 0;) tc->free_slots_.push_back(i);
  co_return tc;
}

Task<Status> TxnClient::close() {
  if (log_base_.is_null()) co_return OkStatus();
  Status s = co_await client_->free_on(log_base_);
  log_base_ = GlobalAddress();
  free_slots_.clear();
  co_return s;
}

uint32_t TxnClient::take_slot() {
  if (free_slots_.empty()) return kNoSlot;
  const uint32_t i = free_slots_.back();
  free_slots_.pop_back();
  return i;
}

void TxnClient::crash_point(CrashAt at) const {
  if (crash_at_ == at) ::raise(crash_stops_ ? SIGSTOP : SIGKILL);
}

TxnClient::Check* TxnClient::find_check(uint64_t holder) {
  for (Check& c : checks_) {
    if (c.holder == holder) return &c;
  }
  return nullptr;
}

Task<Result<bool>> TxnClient::recover(GlobalAddress word, uint64_t holder) {
  if (holder == 0 || recovering_) co_return false;
  if (client_->endpoint(GlobalAddress::unpack(holder).node()) == nullptr) co_return false;
  const uint64_t now = now_ns();
  Check* known = find_check(holder);
  // A holder found dead stays dead (its session ended); a live one is asked again only after
  // recovery_check_ns.
  if (known != nullptr && !known->dead && now - known->at_ns < options_.recovery_check_ns) {
    co_return false;
  }
  if (known == nullptr || !known->dead) {
    // At most checks_.size() liveness questions per recovery_check_ns, whatever the number of
    // distinct holders met (live holders change quickly under contention).
    if (now - window_start_ns_ >= options_.recovery_check_ns) {
      window_start_ns_ = now;
      window_checks_ = 0;
    }
    if (window_checks_ >= checks_.size()) co_return false;
    ++window_checks_;
  }
  if (known == nullptr) {
    known = &checks_[next_check_++ % checks_.size()];
    *known = Check{holder, now, false};
  }
  known->at_ns = now;
  recovering_ = true;  // one recovery at a time per coordinator: it has one recovery slot
  bool dead = known->dead;
  Result<bool> r = co_await recover_slot(word, holder, &dead);
  recovering_ = false;
  Check* again = find_check(holder);  // the ring may have moved on meanwhile
  if (again != nullptr) again->dead = dead;
  co_return r;
}

Task<Result<bool>> TxnClient::read_log(GlobalAddress slot, const LogSlotHeader& h,
                                       std::string* log) {
  if (h.state != kLogCommitting || h.body_bytes > options_.log_slot_bytes - sizeof(h)) {
    co_return false;
  }
  log->assign(sizeof(h) + h.body_bytes, '\0');
  Status s = co_await client_->read(slot, log->data(), log->size());
  FARMEM_CO_TRY(s);
  LogSlotHeader now;
  std::memcpy(&now, log->data(), sizeof(now));
  co_return now.state == kLogCommitting&& XXH3_64bits(log->data() + 24, log->size() - 24) ==
      now.checksum;
}

Task<Result<bool>> TxnClient::recover_slot(GlobalAddress word, uint64_t holder, bool* dead) {
  const GlobalAddress slot = GlobalAddress::unpack(holder);
  LogSlotHeader h{};
  Status s = co_await client_->read(slot, &h, sizeof(h));
  FARMEM_CO_TRY(s);
  if (!*dead) {
    std::vector<uint64_t> ids(1, h.owner_session);
    auto alive = co_await client_->sessions_alive(slot.node(), std::move(ids));
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
  s = co_await client_->cas(word, holder, 0, &old);
  FARMEM_CO_TRY(s);
  co_return old == holder;
}

namespace {

// Whether a (checksummed) redo log has a lock word or a target on `node`.
bool log_touches(const std::string& log, uint16_t node) {
  uint64_t at = sizeof(LogSlotHeader);
  while (at + sizeof(LogEntryHeader) <= log.size()) {
    LogEntryHeader e;
    std::memcpy(&e, log.data() + at, sizeof(e));
    const uint64_t n = log_entry_bytes(e.targets, e.image_bytes);
    if (e.targets > kMaxNodes || at + n > log.size()) return true;  // malformed: be careful
    if (GlobalAddress::unpack(e.lock_word).node() == node) return true;
    for (uint32_t t = 0; t < e.targets; ++t) {
      uint64_t target = 0;
      std::memcpy(&target, log.data() + at + sizeof(e) + 8ull * t, 8);
      if (GlobalAddress::unpack(target).node() == node) return true;
    }
    at += n;
  }
  return false;
}

}  // namespace

Task<Result<bool>> TxnClient::settle_for_promotion(uint64_t holder, uint16_t dead_node) {
  const GlobalAddress slot = GlobalAddress::unpack(holder);
  LogSlotHeader h{};
  Status s = co_await client_->read(slot, &h, sizeof(h));
  FARMEM_CO_TRY(s);
  std::string log;
  auto committing = co_await read_log(slot, h, &log);
  FARMEM_CO_TRY(committing);
  if (!*committing) co_return false;  // nothing of it is in place; its locks go when met
  if (!log_touches(log, dead_node)) co_return false;  // recovered as usual when met
  std::vector<uint64_t> ids(1, h.owner_session);
  auto alive = co_await client_->sessions_alive(slot.node(), std::move(ids));
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

Task<Status> TxnClient::roll_forward(uint64_t holder, const std::string& log) {
  // Adopt the log into this coordinator's recovery slot first: the locks taken over below name
  // it, so if this client dies too, the next recoverer finds the same log there.
  const GlobalAddress mine = log_slot(options_.log_slots);
  Status s = co_await client_->write(mine + 8, log.data() + 8, log.size() - 8);
  FARMEM_CO_TRY(s);
  uint64_t at = sizeof(LogSlotHeader);
  while (at + sizeof(LogEntryHeader) <= log.size()) {
    LogEntryHeader e;
    std::memcpy(&e, log.data() + at, sizeof(e));
    const uint64_t n = log_entry_bytes(e.targets, e.image_bytes);
    if (e.targets > kMaxNodes || at + n > log.size()) co_return Internal("malformed redo log");
    const GlobalAddress word = GlobalAddress::unpack(e.lock_word);
    const char* image = log.data() + at + sizeof(e) + 8ull * e.targets;
    std::vector<GlobalAddress> targets;
    for (uint32_t t = 0; t < e.targets; ++t) {
      uint64_t target = 0;
      std::memcpy(&target, log.data() + at + sizeof(e) + 8ull * t, 8);
      const GlobalAddress a = GlobalAddress::unpack(target);
      if (!client_->cluster().is_down(a.node())) targets.push_back(a);  // a dead replica
    }
    if (client_->cluster().is_down(word.node())) {
      // The lock word died with its node (a promotion): apply by version instead.
      s = co_await apply_unlocked(targets, image, e.image_bytes);
      FARMEM_CO_TRY(s);
      at += n;
      continue;
    }
    uint64_t old = 0;
    s = co_await client_->cas(word, holder, mine.pack(), &old);
    FARMEM_CO_TRY(s);
    if (old == holder || old == mine.pack()) {
      for (const GlobalAddress& target : targets) {
        s = co_await client_->write(target, image, e.image_bytes);
        FARMEM_CO_TRY(s);
      }
      s = co_await client_->write(word, &kZeroWord, 8);
      FARMEM_CO_TRY(s);
    }
    at += n;
  }
  s = co_await client_->write(GlobalAddress::unpack(holder) + 8, &kZeroWord, 8);
  FARMEM_CO_TRY(s);
  s = co_await client_->write(mine + 8, &kZeroWord, 8);
  co_return s;
}

Task<Status> TxnClient::apply_unlocked(const std::vector<GlobalAddress>& targets, const char* image,
                                       uint32_t image_bytes) {
  if (image_bytes < 8) co_return OkStatus();
  uint64_t version = 0;  // every image starts with the version it gives its slot or bucket
  std::memcpy(&version, image, 8);
  for (const GlobalAddress& target : targets) {
    uint64_t current = 0;
    Status s = co_await client_->read(target, &current, 8);
    FARMEM_CO_TRY(s);
    // Written already (or by a later transaction): a live coordinator's batch that failed only
    // on the dead node reached this replica.
    if (current >= version) continue;
    s = co_await client_->write(target, image, image_bytes);
    FARMEM_CO_TRY(s);
  }
  co_return OkStatus();
}

Transaction TxnClient::begin() {
  return Transaction(this, TxnId{coordinator_, next_sequence_++}, false);
}

Transaction TxnClient::begin_read_only() {
  return Transaction(this, TxnId{coordinator_, next_sequence_++}, true);
}

uint32_t TxnClient::cached_slot(const Table& t, uint64_t key) {
  if (!cache_.enabled()) return kSlotsPerBucket;
  const CacheEntry& e = cache_.at(key * 0x9e3779b97f4a7c15ull ^ t.tag());
  if (e.slot_plus_one == 0 || e.key != key || e.tag != t.tag()) return kSlotsPerBucket;
  return e.slot_plus_one - 1;
}

void TxnClient::forget(const Table& t, uint64_t key) {
  if (!cache_.enabled()) return;
  CacheEntry& e = cache_.at(key * 0x9e3779b97f4a7c15ull ^ t.tag());
  if (e.key == key && e.tag == t.tag()) e.slot_plus_one = 0;
}

void TxnClient::remember(const Table& t, uint64_t key, uint32_t slot) {
  if (!cache_.enabled()) return;
  cache_.at(key * 0x9e3779b97f4a7c15ull ^ t.tag()) = CacheEntry{key, t.tag(), slot + 1};
}

// ---- Transaction: bookkeeping ----

Status Transaction::check_write(const Table& table, std::string_view value, bool sized) {
  if (finished_)
    return abort_status_.ok() ? InvalidArgument("transaction finished") : abort_status_;
  if (read_only_) return InvalidArgument("a read-only transaction cannot write");
  if (!table.valid()) return InvalidArgument("unknown table (not created or opened)");
  if (sized && value.size() != table.record_bytes()) {
    return InvalidArgument(fmt::format("table '{}' holds {}-byte records, not {} bytes",
                                       table.name(), table.record_bytes(), value.size()));
  }
  return OkStatus();
}

Status Transaction::check_room() const {
  const size_t records = reads_.size() + writes_.size() + buckets_.size();
  if (records < tc_->options_.max_records) return OkStatus();
  return ResourceExhausted(fmt::format("a transaction touches at most {} records and buckets",
                                       tc_->options_.max_records));
}

Transaction::ReadEntry* Transaction::find_read(const Table& t, uint64_t key) {
  for (auto& r : reads_) {
    if (r.table == &t && r.key == key) return &r;
  }
  return nullptr;
}

Transaction::WriteEntry* Transaction::find_write(const Table& t, uint64_t key) {
  for (auto& w : writes_) {
    if (w.table == &t && w.key == key) return &w;
  }
  return nullptr;
}

Transaction::BucketLock* Transaction::find_bucket(const Table& t, uint64_t bucket) {
  for (auto& b : buckets_) {
    if (b.table == &t && b.bucket == bucket) return &b;
  }
  return nullptr;
}

const SlotHeader* Transaction::bucket_slot(const Table& t, uint32_t slot) const {
  return reinterpret_cast<const SlotHeader*>(bucket_.data() + sizeof(BucketHeader) +
                                             slot * t.slot_bytes());
}

uint32_t Transaction::find_in_bucket(const Table& t, uint64_t key) const {
  for (uint32_t s = 0; s < kSlotsPerBucket; ++s) {
    SlotHeader h;
    std::memcpy(&h, bucket_slot(t, s), sizeof(h));
    if (holds(h, key)) return s;
  }
  return kSlotsPerBucket;
}

std::vector<Transaction::Access> Transaction::accesses() const {
  std::vector<Access> out;
  for (const auto& r : reads_) {
    if (r.slot < kSlotsPerBucket) out.push_back({r.table->tag(), r.key, r.version, false});
  }
  for (const auto& w : writes_) {
    out.push_back({w.table->tag(), w.key, w.version, w.kind != Kind::kLocked});
  }
  return out;
}

// ---- remote steps ----

Task<Status> Transaction::read_bucket(const Table& t, uint64_t b) {
  bucket_.resize(t.bucket_bytes());
  Status s = co_await tc_->client_->read(t.primary_bucket(b), bucket_.data(), bucket_.size());
  ++tc_->counters_.round_trips;
  co_return s;
}

Status Transaction::ensure_log_slot() {
  if (log_slot_.index != TxnClient::kNoSlot) return OkStatus();
  log_slot_.index = tc_->take_slot();
  if (log_slot_.index == TxnClient::kNoSlot) {
    return ResourceExhausted(
        fmt::format("all {} log slots of this coordinator are in use", tc_->options_.log_slots));
  }
  return OkStatus();
}

Task<Status> Transaction::lock_and_read(GlobalAddress addr, size_t bytes, std::string* out,
                                        const char* what) {
  Status s = ensure_log_slot();
  uint64_t old = ~0ull;
  if (s.ok()) {
    out->resize(bytes);
    client::Batch batch(*tc_->client_);
    (void)batch.cas(addr, 0, lock_value(), &old);
    (void)batch.fence();  // the read sees what the previous holder wrote before it unlocked
    (void)batch.read(addr, out->data(), bytes);
    s = co_await batch.wait();
    ++tc_->counters_.round_trips;
  }
  if (!s.ok()) {
    Status e = co_await finish_abort(fail_error(s));
    co_return e;
  }
  if (old != 0) {
    conflict(addr, old);
    Status e = co_await finish_abort(fail(AbortReason::kLockConflict, what));
    co_return e;
  }
  co_return OkStatus();
}

Task<Status> Transaction::finish_abort(Status why) {
  Status r = co_await release_all();
  if (!r.ok()) log_slot_.retire();  // locks may still name the slot: never reuse it
  log_slot_.reset();
  finished_ = true;
  abort_status_ = why;
  ++tc_->counters_.aborts;
  if (conflict_holder_ != 0) {
    // The holder may be a coordinator that died: recover its lock (rate-limited per holder).
    auto rec = co_await tc_->recover(conflict_word_, conflict_holder_);
    (void)rec;  // best effort: the caller retries the transaction either way
    conflict_holder_ = 0;
  }
  co_return why;
}

Status Transaction::fail(AbortReason reason, std::string_view what) {
  reason_ = reason;
  return Aborted(fmt::format("{}: {}", abort_reason_name(reason), what));
}

Status Transaction::fail_error(Status s) {
  reason_ = AbortReason::kError;
  return s;
}

Task<Status> Transaction::release_all() {
  client::ThreadClient* c = tc_->client_;
  std::vector<GlobalAddress> words;
  for (const auto& w : writes_) words.push_back(w.table->primary_slot(w.bucket, w.slot));
  for (const auto& b : buckets_) words.push_back(b.table->primary_bucket(b.bucket));
  if (log_written_) words.push_back(tc_->log_slot(log_slot_.index) + 8);  // state := idle
  log_written_ = false;
  writes_.clear();
  buckets_.clear();
  Status first;
  for (size_t i = 0; i < words.size(); i += client::Batch::kMaxOps) {
    client::Batch batch(*c);
    const size_t end = std::min(words.size(), i + client::Batch::kMaxOps);
    for (size_t j = i; j < end; ++j) (void)batch.write(words[j], &kZeroWord, 8);
    Status s = co_await batch.wait();
    ++tc_->counters_.round_trips;
    if (first.ok()) first = s;
  }
  co_return first;
}

Task<Status> Transaction::absent(const Table& t, uint64_t key, uint64_t b) {
  BucketHeader bh;
  std::memcpy(&bh, bucket_.data(), sizeof(bh));
  if (bh.lock != 0 && find_bucket(t, b) == nullptr) {
    conflict(t.primary_bucket(b), bh.lock);  // an insert or erase in this bucket is under way
    Status e = co_await finish_abort(fail(AbortReason::kInvisible, "bucket being changed"));
    co_return e;
  }
  if (find_read(t, key) == nullptr) reads_.push_back({&t, key, b, kSlotsPerBucket, bh.version, {}});
  co_return NotFound(fmt::format("no key {} in table '{}'", key, t.name()));
}

Task<Status> Transaction::lock_record(const Table& t, uint64_t key, WriteEntry** entry) {
  FARMEM_CO_TRY(check_room());
  const uint64_t b = t.bucket_of(key);
  if (Status live = t.check_bucket(b); !live.ok()) {
    Status e = co_await finish_abort(fail_error(live));
    co_return e;
  }
  const size_t rb = t.record_bytes();
  uint32_t slot = tc_->cached_slot(t, key);
  for (const auto& w : writes_) {
    // A stale entry naming a slot this transaction already holds (for another key).
    if (w.table == &t && w.bucket == b && w.slot == slot) slot = kSlotsPerBucket;
  }
  if (slot < kSlotsPerBucket) {
    // Forgotten until the lock is won (remembered again below): if the entry is stale and its
    // slot is locked by someone else, the retry searches the bucket instead of aborting again.
    tc_->forget(t, key);
    const GlobalAddress a = t.primary_slot(b, slot);
    Status s = co_await lock_and_read(a, t.slot_bytes(), &slot_, "record locked");
    FARMEM_CO_TRY(s);
    if (!holds(header_of(slot_), key)) {
      // A stale cache entry: let go of the slot and search the bucket.
      Status u = co_await tc_->client_->write(a, &kZeroWord, 8);
      ++tc_->counters_.round_trips;
      if (!u.ok()) {
        Status e = co_await finish_abort(fail_error(u));
        co_return e;
      }
      slot = kSlotsPerBucket;
    }
  }
  if (slot == kSlotsPerBucket) {
    Status s = co_await read_bucket(t, b);
    if (!s.ok()) {
      Status e = co_await finish_abort(fail_error(s));
      co_return e;
    }
    slot = find_in_bucket(t, key);
    if (slot == kSlotsPerBucket) {
      Status e = co_await absent(t, key, b);
      co_return e;
    }
    const GlobalAddress a = t.primary_slot(b, slot);
    s = co_await lock_and_read(a, t.slot_bytes(), &slot_, "record locked");
    FARMEM_CO_TRY(s);
  }
  const SlotHeader h = header_of(slot_);
  writes_.push_back({&t, key, b, slot, h.version, Kind::kLocked, slot_.substr(sizeof(h), rb)});
  if (!holds(h, key)) {
    Status e = co_await finish_abort(fail(AbortReason::kVersionChanged, "record moved"));
    co_return e;
  }
  tc_->remember(t, key, slot);
  for (size_t i = 0; i < reads_.size(); ++i) {
    if (reads_[i].table != &t || reads_[i].key != key) continue;
    if (reads_[i].slot != slot || reads_[i].version != h.version) {
      Status e = co_await finish_abort(fail(AbortReason::kVersionChanged, "record changed"));
      co_return e;
    }
    reads_.erase(reads_.begin() + static_cast<ptrdiff_t>(i));
    break;
  }
  *entry = &writes_.back();
  co_return OkStatus();
}

Task<Status> Transaction::lock_bucket(const Table& t, uint64_t b, BucketLock** lock) {
  if (BucketLock* held = find_bucket(t, b)) {
    Status s = co_await read_bucket(t, b);  // ours: only our own slot writes change it
    if (!s.ok()) {
      Status e = co_await finish_abort(fail_error(s));
      co_return e;
    }
    *lock = held;
    co_return OkStatus();
  }
  if (Status live = t.check_bucket(b); !live.ok()) {
    Status e = co_await finish_abort(fail_error(live));
    co_return e;
  }
  const GlobalAddress a = t.primary_bucket(b);
  Status s = co_await lock_and_read(a, t.bucket_bytes(), &bucket_, "bucket locked");
  FARMEM_CO_TRY(s);
  BucketHeader bh;
  std::memcpy(&bh, bucket_.data(), sizeof(bh));
  buckets_.push_back({&t, b, bh.version, false});
  *lock = &buckets_.back();
  co_return OkStatus();
}

// ---- the API ----

Task<Status> Transaction::read(const Table& t, uint64_t key, std::string* value) {
  if (finished_)
    co_return abort_status_.ok() ? InvalidArgument("transaction finished") : abort_status_;
  if (!t.valid()) co_return InvalidArgument("unknown table (not created or opened)");
  if (const WriteEntry* w = find_write(t, key)) {
    if (w->kind == Kind::kErase) co_return NotFound("erased by this transaction");
    *value = w->value;
    co_return OkStatus();
  }
  if (const ReadEntry* r = find_read(t, key)) {
    if (r->slot == kSlotsPerBucket)
      co_return NotFound(fmt::format("no key {} in table '{}'", key, t.name()));
    *value = r->value;
    co_return OkStatus();
  }
  FARMEM_CO_TRY(check_room());
  const uint64_t b = t.bucket_of(key);
  if (Status live = t.check_bucket(b); !live.ok()) {
    Status e = co_await finish_abort(fail_error(live));
    co_return e;
  }
  const size_t rb = t.record_bytes();
  const uint32_t cached = tc_->cached_slot(t, key);
  if (cached < kSlotsPerBucket) {
    slot_.resize(t.slot_bytes());
    Status s = co_await tc_->client_->read(t.primary_slot(b, cached), slot_.data(), slot_.size());
    ++tc_->counters_.round_trips;
    if (!s.ok()) {
      Status e = co_await finish_abort(fail_error(s));
      co_return e;
    }
    const SlotHeader h = header_of(slot_);
    if (holds(h, key)) {
      if (h.lock != 0) {
        conflict(t.primary_slot(b, cached), h.lock);
        Status e = co_await finish_abort(fail(AbortReason::kLockConflict, "record locked"));
        co_return e;
      }
      reads_.push_back({&t, key, b, cached, h.version, slot_.substr(sizeof(h), rb)});
      *value = reads_.back().value;
      co_return OkStatus();
    }
  }
  Status s = co_await read_bucket(t, b);
  if (!s.ok()) {
    Status e = co_await finish_abort(fail_error(s));
    co_return e;
  }
  const uint32_t slot = find_in_bucket(t, key);
  if (slot == kSlotsPerBucket) {
    Status e = co_await absent(t, key, b);
    co_return e;
  }
  SlotHeader h;
  std::memcpy(&h, bucket_slot(t, slot), sizeof(h));
  if (h.lock != 0) {
    conflict(t.primary_slot(b, slot), h.lock);
    Status e = co_await finish_abort(fail(AbortReason::kLockConflict, "record locked"));
    co_return e;
  }
  tc_->remember(t, key, slot);
  const char* v = reinterpret_cast<const char*>(bucket_slot(t, slot)) + sizeof(SlotHeader);
  reads_.push_back({&t, key, b, slot, h.version, std::string(v, rb)});
  *value = reads_.back().value;
  co_return OkStatus();
}

Task<Status> Transaction::read_for_update(const Table& t, uint64_t key, std::string* value) {
  FARMEM_CO_TRY(check_write(t, {}, false));
  if (const WriteEntry* w = find_write(t, key)) {
    if (w->kind == Kind::kErase) co_return NotFound("erased by this transaction");
    *value = w->value;
    co_return OkStatus();
  }
  WriteEntry* w = nullptr;
  Status s = co_await lock_record(t, key, &w);
  FARMEM_CO_TRY(s);
  *value = w->value;
  co_return OkStatus();
}

Task<Status> Transaction::update(const Table& t, uint64_t key, std::string_view value) {
  FARMEM_CO_TRY(check_write(t, value, true));
  WriteEntry* w = find_write(t, key);
  if (w == nullptr) {
    Status s = co_await lock_record(t, key, &w);
    FARMEM_CO_TRY(s);
  } else if (w->kind == Kind::kErase) {
    co_return NotFound("erased by this transaction");
  }
  w->value.assign(value.data(), value.size());
  if (w->kind == Kind::kLocked) w->kind = Kind::kUpdate;
  co_return OkStatus();
}

Task<Status> Transaction::insert(const Table& t, uint64_t key, std::string_view value) {
  FARMEM_CO_TRY(check_write(t, value, true));
  if (WriteEntry* w = find_write(t, key)) {
    if (w->kind != Kind::kErase) co_return AlreadyExists(fmt::format("key {} exists", key));
    w->kind = Kind::kUpdate;  // erased, then inserted again: the slot stays
    w->value.assign(value.data(), value.size());
    co_return OkStatus();
  }
  FARMEM_CO_TRY(check_room());
  const uint64_t b = t.bucket_of(key);
  BucketLock* bl = nullptr;
  Status s = co_await lock_bucket(t, b, &bl);
  FARMEM_CO_TRY(s);
  const uint64_t locked_version = bl->version;
  for (size_t i = 0; i < reads_.size(); ++i) {
    const ReadEntry& r = reads_[i];
    if (r.table != &t || r.key != key || r.slot != kSlotsPerBucket) continue;
    if (r.version != locked_version) {
      Status e =
          co_await finish_abort(fail(AbortReason::kVersionChanged, "key inserted meanwhile"));
      co_return e;
    }
    reads_.erase(reads_.begin() + static_cast<ptrdiff_t>(i));
    break;
  }
  const uint32_t present = find_in_bucket(t, key);
  if (present < kSlotsPerBucket) {
    SlotHeader h;
    std::memcpy(&h, bucket_slot(t, present), sizeof(h));
    if (h.lock != 0) {
      conflict(t.primary_slot(b, present), h.lock);
      Status e = co_await finish_abort(fail(AbortReason::kLockConflict, "record locked"));
      co_return e;
    }
    if (find_read(t, key) == nullptr) {
      const char* v = reinterpret_cast<const char*>(bucket_slot(t, present)) + sizeof(SlotHeader);
      reads_.push_back({&t, key, b, present, h.version, std::string(v, t.record_bytes())});
    }
    co_return AlreadyExists(fmt::format("key {} exists in table '{}'", key, t.name()));
  }
  uint32_t slot = kSlotsPerBucket;
  for (uint32_t i = 0; i < kSlotsPerBucket && slot == kSlotsPerBucket; ++i) {
    SlotHeader h;
    std::memcpy(&h, bucket_slot(t, i), sizeof(h));
    if ((h.flags & kSlotPresent) || h.lock != 0) continue;
    bool claimed = false;
    for (const auto& w : writes_) claimed |= w.table == &t && w.bucket == b && w.slot == i;
    if (!claimed) slot = i;
  }
  if (slot == kSlotsPerBucket) {
    co_return ResourceExhausted(fmt::format("bucket {} of table '{}' is full", b, t.name()));
  }
  const GlobalAddress a = t.primary_slot(b, slot);
  s = co_await lock_and_read(a, t.slot_bytes(), &slot_, "free slot locked");
  FARMEM_CO_TRY(s);
  const SlotHeader h = header_of(slot_);
  writes_.push_back({&t, key, b, slot, h.version, Kind::kInsert, std::string(value)});
  if (h.flags & kSlotPresent) {
    Status e = co_await finish_abort(fail(AbortReason::kVersionChanged, "slot taken"));
    co_return e;
  }
  find_bucket(t, b)->changed = true;
  co_return OkStatus();
}

Task<Status> Transaction::erase(const Table& t, uint64_t key) {
  FARMEM_CO_TRY(check_write(t, {}, false));
  WriteEntry* w = find_write(t, key);
  if (w != nullptr && w->kind == Kind::kErase) co_return NotFound("erased by this transaction");
  if (w != nullptr && w->kind == Kind::kInsert) {
    // Inserted by this transaction: forget it (the bucket stays locked until the end).
    const GlobalAddress a = t.primary_slot(w->bucket, w->slot);
    writes_.erase(writes_.begin() + (w - writes_.data()));
    Status u = co_await tc_->client_->write(a, &kZeroWord, 8);
    ++tc_->counters_.round_trips;
    if (!u.ok()) {
      Status e = co_await finish_abort(fail_error(u));
      co_return e;
    }
    co_return OkStatus();
  }
  if (w == nullptr) {
    Status s = co_await lock_record(t, key, &w);
    FARMEM_CO_TRY(s);
  }
  const uint64_t b = w->bucket;
  const size_t index = static_cast<size_t>(w - writes_.data());
  BucketLock* bl = nullptr;
  Status s = co_await lock_bucket(t, b, &bl);
  FARMEM_CO_TRY(s);
  writes_[index].kind = Kind::kErase;
  bl->changed = true;
  co_return OkStatus();
}

Task<Status> Transaction::abort() {
  if (finished_)
    co_return abort_status_.ok() ? InvalidArgument("transaction finished") : abort_status_;
  Status e = co_await finish_abort(fail(AbortReason::kUserAbort, "aborted by the caller"));
  co_return e;
}

Task<Status> Transaction::validate() {
  client::ThreadClient* c = tc_->client_;
  std::vector<BucketHeader> seen(reads_.size());  // {lock, version} of slot or bucket header
  for (size_t i = 0; i < reads_.size(); i += client::Batch::kMaxOps) {
    client::Batch batch(*c);
    const size_t end = std::min(reads_.size(), i + client::Batch::kMaxOps);
    for (size_t j = i; j < end; ++j) {
      const ReadEntry& r = reads_[j];
      const GlobalAddress a = r.slot < kSlotsPerBucket ? r.table->primary_slot(r.bucket, r.slot)
                                                       : r.table->primary_bucket(r.bucket);
      (void)batch.read(a, &seen[j], sizeof(BucketHeader));
    }
    Status s = co_await batch.wait();
    ++tc_->counters_.round_trips;
    if (!s.ok()) {
      Status e = co_await finish_abort(fail_error(s));
      co_return e;
    }
  }
  for (size_t j = 0; j < reads_.size(); ++j) {
    const ReadEntry& r = reads_[j];
    bool mine = false;
    if (r.slot == kSlotsPerBucket) mine = find_bucket(*r.table, r.bucket) != nullptr;
    if (seen[j].lock != 0 && !mine) {
      Status e = co_await finish_abort(fail(AbortReason::kLockConflict, "read record locked"));
      co_return e;
    }
    if (seen[j].version != r.version) {
      Status e = co_await finish_abort(fail(AbortReason::kVersionChanged, "read record changed"));
      co_return e;
    }
  }
  co_return OkStatus();
}

Status Transaction::plan_commit(std::string* log, std::vector<Op>* ops) {
  struct Pending {
    uint64_t lock_word;
    std::vector<uint64_t> targets;
    std::string image;
  };
  std::vector<Pending> entries;
  for (const auto& w : writes_) {
    const Table& t = *w.table;
    Pending p{t.primary_slot(w.bucket, w.slot).pack(), {}, {}};
    if (w.kind != Kind::kLocked) {
      p.image.assign(t.slot_bytes() - 8, '\0');  // the slot from its version on
      SlotHeader h{};
      h.version = w.version + 1;
      h.key = w.key;
      h.flags = w.kind == Kind::kErase ? 0 : kSlotPresent;
      std::memcpy(p.image.data(), reinterpret_cast<const char*>(&h) + 8, sizeof(h) - 8);
      if (w.kind != Kind::kErase) {
        std::memcpy(p.image.data() + sizeof(h) - 8, w.value.data(), w.value.size());
      }
      for (uint32_t r = 0; r < t.replicas(); ++r) {
        if (t.replica_live(w.bucket, r)) {
          p.targets.push_back((t.slot_address(w.bucket, w.slot, r) + 8).pack());
        }
      }
      if (w.kind == Kind::kInsert) tc_->remember(t, w.key, w.slot);
    }
    entries.push_back(std::move(p));
  }
  for (const auto& b : buckets_) {
    Pending p{b.table->primary_bucket(b.bucket).pack(), {}, {}};
    if (b.changed) {
      const uint64_t v = b.version + 1;
      p.image.assign(reinterpret_cast<const char*>(&v), 8);
      for (uint32_t r = 0; r < b.table->replicas(); ++r) {
        if (b.table->replica_live(b.bucket, r)) {
          p.targets.push_back((b.table->bucket_address(b.bucket, r) + 8).pack());
        }
      }
    }
    entries.push_back(std::move(p));
  }
  const client::Cluster& cluster = tc_->client_->cluster();
  for (const auto& p : entries) {
    for (uint64_t target : p.targets) {
      const uint16_t node = GlobalAddress::unpack(target).node();
      if (cluster.is_down(node)) {
        // Checked before the log: the transaction aborts cleanly instead of committing with a
        // replica it cannot write.
        return Unavailable(fmt::format(
            "a replica of this transaction's writes is on memory node {}, which is down; "
            "promote its backups (farmem txn promote) and refresh the table",
            node));
      }
    }
  }
  uint64_t bytes = sizeof(LogSlotHeader);
  for (const auto& p : entries) {
    bytes += log_entry_bytes(static_cast<uint32_t>(p.targets.size()),
                             static_cast<uint32_t>(p.image.size()));
  }
  if (bytes > tc_->options_.log_slot_bytes) {
    return ResourceExhausted(
        fmt::format("the transaction's redo log needs {} bytes; log slots hold {}", bytes,
                    tc_->options_.log_slot_bytes));
  }
  log->assign(bytes, '\0');
  uint64_t at = sizeof(LogSlotHeader);
  ops->clear();
  for (const auto& p : entries) {
    LogEntryHeader e{p.lock_word, static_cast<uint32_t>(p.targets.size()),
                     static_cast<uint32_t>(p.image.size())};
    std::memcpy(log->data() + at, &e, sizeof(e));
    if (!p.targets.empty()) {
      std::memcpy(log->data() + at + sizeof(e), p.targets.data(), 8 * p.targets.size());
    }
    const uint64_t image_at = at + sizeof(e) + 8 * p.targets.size();
    if (!p.image.empty()) std::memcpy(log->data() + image_at, p.image.data(), p.image.size());
    for (uint64_t target : p.targets) {
      ops->push_back({GlobalAddress::unpack(target), log->data() + image_at, p.image.size()});
    }
    at += log_entry_bytes(e.targets, e.image_bytes);
  }
  LogSlotHeader h{};
  h.owner_session = 0;  // not written: the log write starts at the state word
  h.state = kLogCommitting;
  h.body_bytes = static_cast<uint32_t>(bytes - sizeof(h));
  h.entries = static_cast<uint32_t>(entries.size());
  h.txn_coordinator = id_.coordinator;
  h.txn_sequence = id_.sequence;
  std::memcpy(log->data(), &h, sizeof(h));
  h.checksum = XXH3_64bits(log->data() + 24, log->size() - 24);
  std::memcpy(log->data() + 16, &h.checksum, 8);
  return OkStatus();
}

Task<Status> Transaction::write_ops(const std::vector<Op>& ops) {
  for (size_t i = 0; i < ops.size(); i += client::Batch::kMaxOps) {
    client::Batch batch(*tc_->client_);
    const size_t end = std::min(ops.size(), i + client::Batch::kMaxOps);
    for (size_t j = i; j < end; ++j) (void)batch.write(ops[j].addr, ops[j].src, ops[j].bytes);
    Status s = co_await batch.wait();
    ++tc_->counters_.round_trips;
    FARMEM_CO_TRY(s);
  }
  co_return OkStatus();
}

Task<Status> Transaction::commit() {
  if (finished_)
    co_return abort_status_.ok() ? InvalidArgument("transaction finished") : abort_status_;
  Status s = co_await validate();
  FARMEM_CO_TRY(s);
  if (!writes_.empty() || !buckets_.empty()) {
    std::string log;
    std::vector<Op> ops;
    s = plan_commit(&log, &ops);
    if (!s.ok()) {
      Status e = co_await finish_abort(fail_error(s));
      co_return e;
    }
    tc_->crash_point(TxnClient::CrashAt::kBeforeLog);
    // The redo log first (from the state word on: the owner word stays): once it is complete
    // at the node, the transaction is committed whatever happens to this coordinator.
    log_written_ = true;
    s = co_await tc_->client_->write(tc_->log_slot(log_slot_.index) + 8, log.data() + 8,
                                     log.size() - 8);
    ++tc_->counters_.round_trips;
    if (!s.ok()) {
      Status e = co_await finish_abort(fail_error(s));
      co_return e;
    }
    tc_->crash_point(TxnClient::CrashAt::kAfterLog);
    s = co_await write_ops(ops);
    if (!s.ok()) {
      // Committed (the log is complete) but not applied everywhere: the locks stay, naming the
      // log, and the slot is never reused; recovery rolls it forward once this coordinator ends.
      log_slot_.retire();
      writes_.clear();
      buckets_.clear();
      finished_ = true;
      reason_ = AbortReason::kError;
      abort_status_ = s;
      co_return s;
    }
    tc_->crash_point(TxnClient::CrashAt::kAfterWrite);
    s = co_await release_all();
    if (!s.ok()) log_slot_.retire();
  }
  log_slot_.reset();
  finished_ = true;
  ++tc_->counters_.commits;
  co_return s;
}

}  // namespace farmem::txn
