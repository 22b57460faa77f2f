// SmallBank for `farmem bench txn` (FORD's benchmark, standard mix): savings and checking
// tables of 8-byte balances (cents), 100,000 x scale accounts, 90% of transactions on the 4%
// hot accounts; Amalgamate 15, Balance 15, DepositChecking 15, SendPayment 25,
// TransactSavings 15, WriteCheck 15. After the run the total money is checked: it must equal
// the initial total plus the net deposits of the committed transactions.
#include <fmt/format.h>

#include <algorithm>

#include "txn_workload.h"

namespace farmem::bench {

namespace {

using runtime::Task;
using txn::Table;
using txn::Transaction;

enum SbType {
  kAmalgamate,
  kBalance,
  kDepositChecking,
  kSendPayment,
  kTransactSavings,
  kWriteCheck
};
const std::vector<std::string> kSbNames = {"Amalgamate",  "Balance",         "DepositChecking",
                                           "SendPayment", "TransactSavings", "WriteCheck"};
constexpr int kSbMix[] = {15, 15, 15, 25, 15, 15};
constexpr int64_t kInitialBalance = 10'000;  // cents, per account and table

class SmallBank final : public TxnWorkload {
 public:
  explicit SmallBank(const TxnBenchOptions& f)
      : accounts_(std::max<uint64_t>(100, static_cast<uint64_t>(100000 * f.scale))),
        hot_(std::max<uint64_t>(1, static_cast<uint64_t>(4000 * f.scale))) {}

  const std::vector<std::string>& type_names() const override { return kSbNames; }
  bool read_only(int type) const override { return type == kBalance; }
  std::vector<TableSpec> tables() override {
    return {{&savings_, "smallbank.savings", 8, accounts_},
            {&checking_, "smallbank.checking", 8, accounts_}};
  }
  uint64_t load_row_count() const override { return 2 * accounts_; }
  uint64_t load_units() const override { return accounts_; }
  Status load_rows(uint64_t from, uint64_t to, std::vector<LoadRow>* rows) const override {
    for (uint64_t k = from; k < to; ++k) {
      rows->push_back({&savings_, k, u64s(kInitialBalance)});
      rows->push_back({&checking_, k, u64s(kInitialBalance)});
    }
    return OkStatus();
  }
  TxnParams params(workload::Rng& rng, TxnStream*) const override {
    TxnParams p;
    int r = static_cast<int>(rng.uniform(100));
    while (r >= kSbMix[p.type]) r -= kSbMix[p.type++];
    p.a = account(rng);
    do {
      p.b = account(rng);
    } while (p.b == p.a);
    return p;
  }
  Task<Status> body(Transaction& x, TxnParams p, int64_t* delta) const override;
  Task<Status> check(txn::TxnClient* tc, int64_t committed_delta, TxnCheck* out) const override;
  uint32_t replicas() const override { return savings_.replicas(); }

 private:
  uint64_t account(workload::Rng& rng) const {
    if (rng.uniform(100) < 90) return rng.uniform(hot_);
    return hot_ + rng.uniform(accounts_ - hot_);
  }

  Table savings_, checking_;
  uint64_t accounts_ = 0, hot_ = 0;
};

Task<Status> SmallBank::body(Transaction& x, TxnParams p, int64_t* delta) const {
  std::string v1, v2, v3;
  Status s;
  switch (p.type) {
    case kAmalgamate: {
      s = co_await x.read_for_update(savings_, p.a, &v1);
      if (s.ok()) s = co_await x.read_for_update(checking_, p.a, &v2);
      if (s.ok()) s = co_await x.read_for_update(checking_, p.b, &v3);
      if (s.ok()) s = co_await x.update(savings_, p.a, u64s(0));
      if (s.ok()) s = co_await x.update(checking_, p.a, u64s(0));
      const int64_t total = i64_of(v1) + i64_of(v2) + i64_of(v3);
      if (s.ok()) s = co_await x.update(checking_, p.b, u64s(static_cast<uint64_t>(total)));
      break;
    }
    case kBalance:
      s = co_await x.read(savings_, p.a, &v1);
      if (s.ok()) s = co_await x.read(checking_, p.a, &v2);
      break;
    case kDepositChecking:
      s = co_await x.read_for_update(checking_, p.a, &v1);
      if (s.ok()) s = co_await x.update(checking_, p.a, u64s(i64_of(v1) + 130));
      *delta = 130;
      break;
    case kSendPayment:
      s = co_await x.read_for_update(checking_, p.a, &v1);
      if (s.ok() && i64_of(v1) < 500) {
        s = co_await x.abort();  // insufficient funds
        break;
      }
      if (s.ok()) s = co_await x.read_for_update(checking_, p.b, &v2);
      if (s.ok()) s = co_await x.update(checking_, p.a, u64s(i64_of(v1) - 500));
      if (s.ok()) s = co_await x.update(checking_, p.b, u64s(i64_of(v2) + 500));
      break;
    case kTransactSavings:
      s = co_await x.read_for_update(savings_, p.a, &v1);
      if (s.ok()) s = co_await x.update(savings_, p.a, u64s(i64_of(v1) + 2020));
      *delta = 2020;
      break;
    default: {  // kWriteCheck
      s = co_await x.read(savings_, p.a, &v1);
      if (s.ok()) s = co_await x.read_for_update(checking_, p.a, &v2);
      const int64_t amount = i64_of(v1) + i64_of(v2) < 500 ? 501 : 500;  // overdraft penalty
      if (s.ok()) s = co_await x.update(checking_, p.a, u64s(i64_of(v2) - amount));
      *delta = -amount;
      break;
    }
  }
  co_return s;
}

Task<Status> SmallBank::check(txn::TxnClient* tc, int64_t committed_delta, TxnCheck* out) const {
  int64_t total = 0;
  uint64_t present = 0;
  Status s = co_await scan(tc, &savings_, key_range(0, accounts_), &total, &present);
  if (s.ok()) s = co_await scan(tc, &checking_, key_range(0, accounts_), &total, &present);
  FARMEM_CO_TRY(s);
  const int64_t initial = 2 * kInitialBalance * static_cast<int64_t>(accounts_);
  out->ok = total == initial + committed_delta && present == 2 * accounts_;
  out->line = fmt::format(
      "smallbank invariant: total money {} = initial {} + net committed deposits {}: {} "
      "({} of {} rows)",
      total, initial, committed_delta, out->ok ? "conserved" : "VIOLATED", present, 2 * accounts_);
  co_return OkStatus();
}

}  // namespace

std::unique_ptr<TxnWorkload> make_smallbank(const TxnBenchOptions& flags) {
  return std::make_unique<SmallBank>(flags);
}

}  // namespace farmem::bench
