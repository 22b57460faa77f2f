// TPC-C for `farmem bench txn --workload tpcc` (TPC-C 5.11: the nine tables with the
// specification's cardinalities, all five transactions at the standard mix, consistency
// conditions 1-4 checked after the run). --scale is the number of warehouses W. This header is
// the workload's records and its class; tpcc.cc sizes and draws, tpcc_load.cc loads,
// tpcc_transactions.cc runs the five transactions, tpcc_check.cc checks the conditions.
//
// Tables (fixed-size records, little-endian structs below; sizes close to clause 1.3's):
// WAREHOUSE 96 B (W rows), DISTRICT 104 B (10 per warehouse), CUSTOMER 672 B (3,000 per
// district), HISTORY 64 B (one per customer, then one per Payment), ORDER 24 B (3,000 per
// district, customers in a random permutation), NEW-ORDER 8 B (the last 900 orders of each
// district), ORDER-LINE 56 B (5..15 per order), ITEM 88 B (100,000), STOCK 312 B (100,000 per
// warehouse). Nothing is trimmed but the names of dates (seconds since 1970, 8 B) and money
// (int64 cents); keys: tpcc_keys.h. Three auxiliary tables stand in for what the txn
// library has no index for, each maintained inside the transactions that change it:
// customer by last name ((w, d, name) -> the c_ids sorted by first name, built at load;
// customers are never inserted and names never change), a customer's last order ((w, d, c) ->
// o_id, written by NewOrder) and a district's oldest undelivered order ((w, d) -> o_id, moved
// by Delivery). Order lines are addressed by (w, d, o, ol_number).
//
// Mix: NewOrder 45, Payment 43, OrderStatus 4, Delivery 4, StockLevel 4. The home warehouse is
// drawn uniformly per transaction (no terminals bound to warehouses, no keying or think
// times). Inputs as clause 2 says: NURand customers and items, 1% of NewOrders name an unused
// item on their last line and roll back (a user abort: reported as rolled_back, not as an
// abort), 1% of order lines from a remote warehouse and 15% of Payments for a remote
// warehouse's customer (when W > 1), 60% of Payments and OrderStatus by last name. OrderStatus
// and StockLevel are read-only transactions; StockLevel, which clause 3.4.0.1 lets run at
// isolation level 1, skips the validation (its reads still abort on a locked record, so it
// never sees uncommitted data). Delivery is not deferred: it delivers the oldest
// new order of all ten districts in one transaction (a district without one is skipped).
//
// Sizing: there are no resizes, so ORDER, NEW-ORDER, ORDER-LINE and HISTORY are created for the
// initial rows plus the orders the run can insert: --tpcc-orders-per-s (default 12,000, all
// threads together; about what one thread commits on shared memory) over
// warm-up + duration (+ 2 s), 1.25 times over the districts (the districts are drawn uniformly). A
// NewOrder that would exceed its district's room, or an insert into a full table, ends the run with
// a message that names the flag.
// Thread safety: as TxnWorkload (txn_workload.h).
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <string>
#include <type_traits>
#include <vector>

#include "tpcc_keys.h"
#include "txn_workload.h"

namespace farmem::bench::tpcc {

using runtime::Task;
using txn::Table;
using txn::Transaction;
using workload::Rng;

enum TpccType { kNewOrder, kPayment, kOrderStatus, kDelivery, kStockLevel };
inline const std::vector<std::string> kTpccNames = {"NewOrder", "Payment", "OrderStatus",
                                                    "Delivery", "StockLevel"};
inline constexpr int kTpccMix[] = {45, 43, 4, 4, 4};
inline constexpr uint64_t kCheckBeyond = 200;  // order ids past D_NEXT_O_ID the check looks at

// ---- records (memcpy'd to and from the txn records)

struct Address {
  char street_1[20], street_2[20], city[20], state[2], zip[9];
};
// W_YTD, D_YTD and D_NEXT_O_ID live in tables of their own (8 B each: int64 cents or the order
// id, keyed as their warehouse and district): TPC-C allows vertical partitioning (clause 1.6),
// and it keeps Payment's and NewOrder's updates from invalidating each other's reads of the
// static columns (W_TAX, D_TAX, names).
struct Warehouse {
  uint32_t tax;  // 1/10,000
  char name[10];
  Address address;
};
struct District {
  uint32_t tax;
  char name[10];
  Address address;
};
struct Customer {
  int64_t balance, ytd_payment, credit_lim, since;
  uint32_t payment_cnt, delivery_cnt, discount;  // discount: 1/10,000
  char credit[2], middle[2], last[16], first[16];
  Address address;
  char phone[16];
  char data[500];
};
struct History {
  int64_t date, amount;
  uint32_t c_id, c_d_id, c_w_id, d_id, w_id;
  char data[24];
};
struct Order {
  int64_t entry_d;
  uint32_t c_id, carrier_id, ol_cnt, all_local;
};
struct OrderLine {
  int64_t delivery_d, amount;
  uint32_t i_id, supply_w_id, quantity;
  char dist_info[24];
};
struct Item {
  int64_t price;
  uint32_t im_id;
  char name[24], data[50];
};
struct Stock {
  int64_t ytd;
  int32_t quantity;
  uint32_t order_cnt, remote_cnt;
  char dist[kDistricts][24];
  char data[50];
};
inline constexpr uint32_t kMaxSameName = 126;  // customers of one district sharing a last name
struct NameIndex {
  uint32_t count;
  uint16_t c_ids[kMaxSameName];  // sorted by first name
};
static_assert(sizeof(Warehouse) == 88 && sizeof(District) == 88 && sizeof(Customer) == 672);
static_assert(sizeof(History) == 64 && sizeof(Order) == 24 && sizeof(OrderLine) == 56);
static_assert(sizeof(Item) == 88 && sizeof(Stock) == 312 && sizeof(NameIndex) == 256);

template <typename T>
std::string bytes_of(const T& v) {
  static_assert(std::is_trivially_copyable_v<T>);
  return std::string(reinterpret_cast<const char*>(&v), sizeof(T));
}
template <typename T>
T record_of(const std::string& s) {
  static_assert(std::is_trivially_copyable_v<T>);
  T v{};
  std::memcpy(&v, s.data(), std::min(s.size(), sizeof(T)));
  return v;
}

template <size_t N>
void fill(char (&field)[N], Rng& rng, size_t min_len = N) {
  const size_t n = min_len + rng.uniform(N - min_len + 1);
  for (size_t i = 0; i < N; ++i) field[i] = i < n ? static_cast<char>('a' + rng.uniform(26)) : 0;
}
void fill(Address* a, Rng& rng);

// Clause 4.3.2.3: the last name of number n (0..999) from three syllables.
std::string last_name(uint64_t n);

inline int64_t unix_now() { return static_cast<int64_t>(std::time(nullptr)); }

// A NewOrder's inputs (clause 2.4.1), generated from the transaction's seed.
struct NewOrderInput {
  uint32_t d, c, ol_cnt;
  bool all_local = true;
  uint32_t items[kMaxOrderLines], supply_w[kMaxOrderLines], quantity[kMaxOrderLines];
};

// A customer chosen by last name (60%) or by id (clause 2.5.1.2, 2.6.1.2).
struct CustomerChoice {
  bool by_name;
  uint32_t c;     // by id
  uint32_t name;  // by name
};

// Bytes of a table's bucket array on one node holding all of it (txn::bucket_count buckets).
uint64_t table_bytes(const TableSpec& s);

class Tpcc final : public TxnWorkload {
 public:
  explicit Tpcc(const TxnBenchOptions& f);

  const std::vector<std::string>& type_names() const override { return kTpccNames; }
  bool read_only(int type) const override { return type == kOrderStatus || type == kStockLevel; }
  // Clause 3.4.0.1: Stock-Level needs only isolation level 1 (no dirty reads).
  bool validated(int type) const override { return type != kStockLevel; }
  std::vector<TableSpec> tables() override;
  uint64_t load_row_count() const override;
  uint64_t local_bytes() const override;
  txn::TxnClientOptions client_options() const override {
    txn::TxnClientOptions o;
    o.log_slot_bytes = 64 << 10;  // Delivery (ten districts) and 15-line NewOrders
    return o;
  }
  uint64_t load_units() const override { return uint64_t{warehouses_} * kDistricts; }
  Status load_rows(uint64_t from, uint64_t to, std::vector<LoadRow>* rows) const override;
  TxnParams params(Rng& rng, TxnStream* stream) const override;
  Task<Status> body(Transaction& x, TxnParams p, int64_t* delta) const override;
  Task<Status> check(txn::TxnClient* tc, int64_t committed_delta, TxnCheck* out) const override;
  uint32_t replicas() const override { return warehouse_.replicas(); }
  std::string result_words() const override {
    return fmt::format(" warehouses={} items={} customers/district={}{}", warehouses_, items_,
                       customers_, standard() ? "" : " NON-STANDARD");
  }

 private:
  bool standard() const { return items_ == 100000 && customers_ == 3000; }
  // Orders 1..first_undelivered_ - 1 are delivered at load; the rest are NEW-ORDER rows.
  uint32_t first_undelivered() const { return customers_ - customers_ * 3 / 10 + 1; }
  uint32_t other_warehouse(Rng& rng, uint32_t w) const {
    const uint32_t o = 1 + static_cast<uint32_t>(rng.uniform(warehouses_ - 1));
    return o >= w ? o + 1 : o;
  }
  CustomerChoice choose_customer(Rng& rng) const {
    CustomerChoice ch{};
    ch.by_name = rng.uniform(100) < 60;
    if (ch.by_name) {
      ch.name = static_cast<uint32_t>(nurand(rng, 255, 0, kNames - 1, kCLastRun) % names());
    } else {
      ch.c = static_cast<uint32_t>(nurand(rng, 1023, 1, customers_, kCId));
    }
    return ch;
  }
  // Name numbers in use: 1000, or fewer with a NON-STANDARD smaller --tpcc-customers.
  uint32_t names() const { return std::min(kNames, customers_); }
  NewOrderInput new_order_input(Rng& rng, uint32_t w) const;
  Status full(Status s, const char* table) const;

  Status load_district(uint32_t w, uint32_t d, std::vector<LoadRow>* rows) const;
  void load_district_rows(Rng& rng, uint32_t w, uint32_t d, std::vector<LoadRow>* rows) const;
  void load_stock(Rng& rng, uint32_t w, uint32_t d, std::vector<LoadRow>* rows) const;
  Status load_customers(Rng& rng, uint32_t w, uint32_t d, int64_t now,
                        std::vector<LoadRow>* rows) const;
  void load_orders(Rng& rng, uint32_t w, uint32_t d, std::vector<LoadRow>* rows) const;

  Task<Status> new_order(Transaction& x, uint32_t w, uint64_t seed) const;
  Task<Status> new_order_line(Transaction& x, const NewOrderInput* in, uint32_t w, uint64_t o,
                              uint32_t ol) const;
  Task<Status> payment(Transaction& x, uint32_t w, uint64_t seed, uint64_t history) const;
  Task<Status> order_status(Transaction& x, uint32_t w, uint64_t seed) const;
  Task<Status> delivery(Transaction& x, uint32_t w, uint64_t seed, int64_t date) const;
  Task<Status> stock_level(Transaction& x, uint32_t w, uint64_t seed) const;
  Task<Status> find_customer(Transaction& x, uint32_t w, uint32_t d, CustomerChoice ch,
                             uint32_t* c) const;
  Task<Status> check_district(txn::TxnClient* tc, uint32_t w, uint32_t d, int64_t* d_ytd,
                              std::string* failures) const;

  uint32_t warehouses_;
  uint32_t items_;
  uint32_t customers_;  // per district (and initial orders per district)
  uint64_t seed_;
  uint64_t order_room_;  // orders per district: initial + what the run may insert
  Table warehouse_, warehouse_ytd_, district_, district_ytd_, district_next_, customer_, history_,
      order_, new_order_, order_line_, item_, stock_, by_name_, last_order_, undelivered_;
};

}  // namespace farmem::bench::tpcc
