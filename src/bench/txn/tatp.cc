// TATP for `farmem bench txn` (FORD's benchmark, standard mix): subscriber, secondary index
// (sub_nbr -> s_id), access_info, special_facility, call_forwarding for 100,000 x scale
// subscribers, populated as the specification says; GetSubscriberData 35, GetNewDestination 10,
// GetAccessData 35 (read-only: 80%), UpdateSubscriberData 2, UpdateLocation 14,
// InsertCallForwarding 2, DeleteCallForwarding 2. After the run the record counts are checked
// (call_forwarding: loaded + inserted - deleted).
#include <fmt/format.h>

#include <algorithm>

#include "txn_workload.h"

namespace farmem::bench {

namespace {

using runtime::Task;
using txn::Table;
using txn::Transaction;

enum TatpType {
  kGetSubscriberData,
  kGetNewDestination,
  kGetAccessData,
  kUpdateSubscriberData,
  kUpdateLocation,
  kInsertCallForwarding,
  kDeleteCallForwarding
};
const std::vector<std::string> kTatpNames = {
    "GetSubscriberData", "GetNewDestination",    "GetAccessData",       "UpdateSubscriberData",
    "UpdateLocation",    "InsertCallForwarding", "DeleteCallForwarding"};
constexpr int kTatpMix[] = {35, 10, 35, 2, 14, 2, 2};
constexpr uint32_t kSubscriberBytes = 40;  // sub_nbr 8, bits 4, vlr 4, msc 4, hex 10, byte2 10
constexpr uint32_t kAccessInfoBytes = 16;
constexpr uint32_t kSpecialFacilityBytes = 16;  // is_active, error_cntrl, data_a, data_b[5]
constexpr uint32_t kCallForwardingBytes = 24;   // end_time, numberx[15]

uint64_t sub_nbr(uint64_t s_id) { return s_id * 7919 + 13; }  // a bijection: the index is real
uint64_t ai_key(uint64_t s_id, uint64_t type) { return s_id * 4 + type - 1; }
uint64_t sf_key(uint64_t s_id, uint64_t type) { return s_id * 4 + type - 1; }
uint64_t cf_key(uint64_t s_id, uint64_t sf, uint64_t start) {
  return sf_key(s_id, sf) * 3 + start / 8;
}

// Which of the 4 access_info / special_facility types and 3 start times a subscriber has: a
// function of s_id (so that the load and the count check agree without storing it).
uint32_t tatp_mask(uint64_t s_id, uint64_t salt, uint32_t slots, uint32_t min) {
  workload::Rng r(s_id * 0x9E3779B97F4A7C15ull + salt);
  const uint32_t n = min + static_cast<uint32_t>(r.uniform(slots - min + 1));
  uint32_t mask = 0;
  while (static_cast<uint32_t>(__builtin_popcount(mask)) < n) mask |= 1u << r.uniform(slots);
  return mask;
}

// kNotFound from a row the transaction needs: the transaction is rolled back (the spec's
// expected failures), reported as a user abort.
Task<Status> rolled_back_if_missing(Transaction& x, Status s) {
  if (s.code() != StatusCode::kNotFound && s.code() != StatusCode::kAlreadyExists) co_return s;
  Status a = co_await x.abort();
  co_return a;
}

class Tatp final : public TxnWorkload {
 public:
  explicit Tatp(const TxnBenchOptions& f)
      : subscribers_(std::max<uint64_t>(10, static_cast<uint64_t>(100000 * f.scale))) {
    // Counts per table of the rows the load puts in (computed, not read).
    for (uint64_t s_id = 1; s_id <= subscribers_; ++s_id) {
      loaded_ai_ += __builtin_popcount(tatp_mask(s_id, 1, 4, 1));
      const uint32_t sf = tatp_mask(s_id, 2, 4, 1);
      loaded_sf_ += __builtin_popcount(sf);
      for (uint64_t type = 1; type <= 4; ++type) {
        if (sf & (1u << (type - 1)))
          loaded_cf_ += __builtin_popcount(tatp_mask(s_id * 8 + type, 3, 3, 0));
      }
    }
  }

  const std::vector<std::string>& type_names() const override { return kTatpNames; }
  bool read_only(int type) const override { return type <= kGetAccessData; }
  std::vector<TableSpec> tables() override {
    const uint64_t n = subscribers_ + 1;
    return {{&subscriber_, "tatp.subscriber", kSubscriberBytes, n},
            {&sec_, "tatp.sec_subscriber", 8, n},
            {&access_, "tatp.access_info", kAccessInfoBytes, 3 * n},
            {&facility_, "tatp.special_facility", kSpecialFacilityBytes, 3 * n},
            {&forwarding_, "tatp.call_forwarding", kCallForwardingBytes, 5 * n}};
  }
  uint64_t load_row_count() const override { return 12 * subscribers_; }
  uint64_t load_units() const override { return subscribers_; }  // unit u: s_id u + 1
  Status load_rows(uint64_t from, uint64_t to, std::vector<LoadRow>* rows) const override;
  TxnParams params(workload::Rng& rng, TxnStream*) const override {
    TxnParams p;
    int r = static_cast<int>(rng.uniform(100));
    while (r >= kTatpMix[p.type]) r -= kTatpMix[p.type++];
    p.a = 1 + rng.uniform(subscribers_);  // s_id (uniform, as FORD runs it)
    p.b = 1 + rng.uniform(4);             // ai_type / sf_type
    p.c = 8 * rng.uniform(3);             // start_time
    p.d = rng.uniform(1u << 16);          // data_a, vlr_location, end_time
    return p;
  }
  Task<Status> body(Transaction& x, TxnParams p, int64_t* cf_delta) const override;
  Task<Status> check(txn::TxnClient* tc, int64_t cf_delta, TxnCheck* out) const override;
  uint32_t replicas() const override { return subscriber_.replicas(); }

 private:
  Task<Status> sec_lookup(Transaction& x, uint64_t nbr, uint64_t* s_id) const;

  Table subscriber_, sec_, access_, facility_, forwarding_;
  uint64_t subscribers_ = 0;
  uint64_t loaded_ai_ = 0, loaded_sf_ = 0, loaded_cf_ = 0;
};

Status Tatp::load_rows(uint64_t from, uint64_t to, std::vector<LoadRow>* rows) const {
  for (uint64_t s_id = from + 1; s_id < to + 1; ++s_id) {
    std::string sub(kSubscriberBytes, '\0');
    const uint64_t nbr = sub_nbr(s_id);
    std::memcpy(sub.data(), &nbr, 8);
    rows->push_back({&subscriber_, s_id, sub});
    rows->push_back({&sec_, nbr, u64s(s_id)});
    const uint32_t ai = tatp_mask(s_id, 1, 4, 1), sf = tatp_mask(s_id, 2, 4, 1);
    for (uint64_t type = 1; type <= 4; ++type) {
      if (ai & (1u << (type - 1))) {
        rows->push_back({&access_, ai_key(s_id, type), std::string(kAccessInfoBytes, 'a')});
      }
      if (!(sf & (1u << (type - 1)))) continue;
      std::string f(kSpecialFacilityBytes, '\0');
      f[0] = workload::Rng(s_id * 31 + type).uniform(100) < 85 ? 1 : 0;  // is_active
      rows->push_back({&facility_, sf_key(s_id, type), f});
      const uint32_t cf = tatp_mask(s_id * 8 + type, 3, 3, 0);
      for (uint64_t st = 0; st < 3; ++st) {
        if (cf & (1u << st)) {
          rows->push_back(
              {&forwarding_, cf_key(s_id, type, st * 8), std::string(kCallForwardingBytes, 'c')});
        }
      }
    }
  }
  return OkStatus();
}

Task<Status> Tatp::sec_lookup(Transaction& x, uint64_t nbr, uint64_t* s_id) const {
  std::string v;
  Status s = co_await x.read(sec_, nbr, &v);
  if (s.ok()) *s_id = static_cast<uint64_t>(i64_of(v));
  co_return s;
}

Task<Status> Tatp::body(Transaction& x, TxnParams p, int64_t* cf_delta) const {
  std::string v;
  Status s;
  switch (p.type) {
    case kGetSubscriberData:
      s = co_await x.read(subscriber_, p.a, &v);
      break;
    case kGetNewDestination: {
      s = co_await x.read(facility_, sf_key(p.a, p.b), &v);
      if (s.ok() && v[0] != 0) {
        for (uint64_t start = 0; start <= p.c && s.ok(); start += 8) {
          s = co_await x.read(forwarding_, cf_key(p.a, p.b, start), &v);
          if (s.code() == StatusCode::kNotFound) s = OkStatus();
        }
      }
      if (s.code() == StatusCode::kNotFound) s = OkStatus();  // a read-only miss is an answer
      break;
    }
    case kGetAccessData:
      s = co_await x.read(access_, ai_key(p.a, p.b), &v);
      if (s.code() == StatusCode::kNotFound) s = OkStatus();
      break;
    case kUpdateSubscriberData:
      s = co_await x.read_for_update(subscriber_, p.a, &v);
      if (s.ok()) {
        v[8] = static_cast<char>(p.c & 1);  // bit_1
        s = co_await x.update(subscriber_, p.a, v);
      }
      if (s.ok()) s = co_await x.read_for_update(facility_, sf_key(p.a, p.b), &v);
      if (s.ok()) {
        v[2] = static_cast<char>(p.d);  // data_a
        s = co_await x.update(facility_, sf_key(p.a, p.b), v);
      }
      s = co_await rolled_back_if_missing(x, s);
      break;
    case kUpdateLocation: {
      uint64_t id = 0;
      s = co_await sec_lookup(x, sub_nbr(p.a), &id);
      if (s.ok()) s = co_await x.read_for_update(subscriber_, id, &v);
      if (s.ok()) {
        const uint32_t vlr = static_cast<uint32_t>(p.d);
        std::memcpy(v.data() + 12, &vlr, 4);
        s = co_await x.update(subscriber_, id, v);
      }
      s = co_await rolled_back_if_missing(x, s);
      break;
    }
    case kInsertCallForwarding: {
      uint64_t id = 0;
      s = co_await sec_lookup(x, sub_nbr(p.a), &id);
      if (s.ok()) s = co_await x.read(facility_, sf_key(id, p.b), &v);
      std::string row(kCallForwardingBytes, '\0');
      row[0] = static_cast<char>(p.c + 1 + p.d % 24);  // end_time
      if (s.ok()) s = co_await x.insert(forwarding_, cf_key(id, p.b, p.c), row);
      if (s.ok()) *cf_delta = 1;
      s = co_await rolled_back_if_missing(x, s);
      break;
    }
    default: {  // kDeleteCallForwarding
      uint64_t id = 0;
      s = co_await sec_lookup(x, sub_nbr(p.a), &id);
      if (s.ok()) s = co_await x.erase(forwarding_, cf_key(id, p.b, p.c));
      if (s.ok()) *cf_delta = -1;
      s = co_await rolled_back_if_missing(x, s);
      break;
    }
  }
  co_return s;
}

Task<Status> Tatp::check(txn::TxnClient* tc, int64_t cf_delta, TxnCheck* out) const {
  int64_t sum = 0;
  uint64_t subs = 0, ai = 0, sf = 0, cf = 0;
  std::vector<uint64_t> quad, triple;
  for (uint64_t s_id = 1; s_id <= subscribers_; ++s_id) {
    for (uint64_t t = 1; t <= 4; ++t) {
      quad.push_back(sf_key(s_id, t));
      for (uint64_t st = 0; st < 24; st += 8) triple.push_back(cf_key(s_id, t, st));
    }
  }
  Status s = co_await scan(tc, &subscriber_, key_range(1, subscribers_ + 1), &sum, &subs);
  if (s.ok()) s = co_await scan(tc, &access_, quad, &sum, &ai);
  if (s.ok()) s = co_await scan(tc, &facility_, quad, &sum, &sf);
  if (s.ok()) s = co_await scan(tc, &forwarding_, triple, &sum, &cf);
  FARMEM_CO_TRY(s);
  const int64_t want_cf = static_cast<int64_t>(loaded_cf_) + cf_delta;
  out->ok = subs == subscribers_ && ai == loaded_ai_ && sf == loaded_sf_ &&
            static_cast<int64_t>(cf) == want_cf;
  out->line = fmt::format(
      "tatp record counts: subscriber {}/{} access_info {}/{} special_facility {}/{} "
      "call_forwarding {}/{} (loaded {} + inserted - deleted {}): {}",
      subs, subscribers_, ai, loaded_ai_, sf, loaded_sf_, cf, want_cf, loaded_cf_, cf_delta,
      out->ok ? "OK" : "WRONG");
  co_return OkStatus();
}

}  // namespace

std::unique_ptr<TxnWorkload> make_tatp(const TxnBenchOptions& flags) {
  return std::make_unique<Tatp>(flags);
}

}  // namespace farmem::bench
