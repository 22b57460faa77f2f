// TPC-C for `farmem bench txn --workload tpcc` (TPC-C 5.11: the nine tables with the
// specification's cardinalities, all five transactions at the standard mix, consistency
// conditions 1-4 checked after the run). --scale is the number of warehouses W.
//
// Tables (fixed-size records, little-endian structs below; sizes close to clause 1.3's):
// WAREHOUSE 96 B (W rows), DISTRICT 104 B (10 per warehouse), CUSTOMER 672 B (3,000 per
// district), HISTORY 64 B (one per customer, then one per Payment), ORDER 24 B (3,000 per
// district, customers in a random permutation), NEW-ORDER 8 B (the last 900 orders of each
// district), ORDER-LINE 56 B (5..15 per order), ITEM 88 B (100,000), STOCK 312 B (100,000 per
// warehouse). Nothing is trimmed but the names of dates (seconds since 1970, 8 B) and money
// (int64 cents); keys: txn_tpcc_keys.h. Three auxiliary tables stand in for what the txn
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
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <ctime>
#include <map>
#include <stdexcept>
#include <type_traits>

#include "txn_tpcc_keys.h"
#include "txn_workload.h"

namespace farmem::apps {

namespace {

using bench::workload::Rng;
using runtime::Task;
using txn::Table;
using txn::Transaction;
using namespace tpcc;  // NOLINT: the key packings and constants

enum TpccType { kNewOrder, kPayment, kOrderStatus, kDelivery, kStockLevel };
const std::vector<std::string> kTpccNames = {"NewOrder", "Payment", "OrderStatus", "Delivery",
                                             "StockLevel"};
constexpr int kTpccMix[] = {45, 43, 4, 4, 4};
constexpr uint64_t kCheckBeyond = 200;  // order ids past D_NEXT_O_ID the check looks at

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
constexpr uint32_t kMaxSameName = 126;  // customers of one district sharing a last name
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
void fill(Address* a, Rng& rng) {
  fill(a->street_1, rng, 10);
  fill(a->street_2, rng, 10);
  fill(a->city, rng, 10);
  fill(a->state, rng);
  fill(a->zip, rng);
}

// Clause 4.3.2.3: the last name of number n (0..999) from three syllables.
std::string last_name(uint64_t n) {
  static const char* const kSyllables[] = {"BAR", "OUGHT", "ABLE",  "PRI",   "PRES",
                                           "ESE", "ANTI",  "CALLY", "ATION", "EING"};
  return std::string(kSyllables[n / 100]) + kSyllables[n / 10 % 10] + kSyllables[n % 10];
}

int64_t unix_now() { return static_cast<int64_t>(std::time(nullptr)); }

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
uint64_t table_bytes(const TableSpec& s) {
  return txn::bucket_count(s.capacity, 1) * txn::bucket_bytes(s.record_bytes);
}

class Tpcc final : public TxnWorkload {
 public:
  explicit Tpcc(const BenchTxnFlags& f);

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

Tpcc::Tpcc(const BenchTxnFlags& f)
    : items_(f.tpcc_items), customers_(f.tpcc_customers), seed_(f.bench.seed) {
  if (f.scale < 1 || f.scale != std::floor(f.scale) || f.scale > kMaxWarehouses) {
    throw std::invalid_argument("--scale for tpcc is the number of warehouses, an integer >= 1");
  }
  warehouses_ = static_cast<uint32_t>(f.scale);
  if (items_ > kMaxItems || customers_ > kMaxCustomers) {
    throw std::invalid_argument("--tpcc-items or --tpcc-customers out of range");
  }
  const double seconds = f.bench.warmup_s + f.bench.duration_s + 2;
  const double run_orders = f.tpcc_orders_per_s * seconds * 1.25;
  order_room_ = customers_ + static_cast<uint64_t>(run_orders / (warehouses_ * kDistricts)) + 100;
  if (order_room_ > kMaxOrders) {
    throw std::invalid_argument("tpcc: more orders per district than the keys hold (2^24)");
  }
}

// Largest first (the memory node's buddy allocator then packs them).
std::vector<TableSpec> Tpcc::tables() {
  const uint64_t w = warehouses_, districts = w * kDistricts, orders = districts * order_room_;
  std::vector<TableSpec> specs = {
      {&warehouse_, "tpcc.warehouse", sizeof(Warehouse), w},
      {&warehouse_ytd_, "tpcc.warehouse_ytd", 8, w},
      {&district_, "tpcc.district", sizeof(District), districts},
      {&district_ytd_, "tpcc.district_ytd", 8, districts},
      {&district_next_, "tpcc.district_next_o_id", 8, districts},
      {&customer_, "tpcc.customer", sizeof(Customer), districts * customers_},
      {&history_, "tpcc.history", sizeof(History), orders},
      {&order_, "tpcc.order", sizeof(Order), orders},
      {&new_order_, "tpcc.new_order", 8, orders},
      // 10 lines per order on average (5..15 uniform), 10% over.
      {&order_line_, "tpcc.order_line", sizeof(OrderLine), orders * 11},
      {&item_, "tpcc.item", sizeof(Item), items_},
      {&stock_, "tpcc.stock", sizeof(Stock), w * items_},
      {&by_name_, "tpcc.customer_by_name", sizeof(NameIndex), districts * names()},
      {&last_order_, "tpcc.customer_last_order", 8, districts * customers_},
      {&undelivered_, "tpcc.district_undelivered", 8, districts}};
  std::stable_sort(specs.begin(), specs.end(), [](const TableSpec& a, const TableSpec& b) {
    return table_bytes(a) > table_bytes(b);
  });
  return specs;
}

uint64_t Tpcc::load_row_count() const {
  const uint64_t districts = uint64_t{warehouses_} * kDistricts;
  const uint64_t per_district = 2 + customers_ * 4ull + customers_ * 10ull + customers_ * 3 / 10;
  return warehouses_ + items_ + uint64_t{warehouses_} * items_ + districts * per_district +
         districts * names();
}

// The tables, each rounded up to a power of two (the buddy allocator's blocks, naturally
// aligned: the largest one needs a free block at twice its size's offset, hence once more), plus
// room for log slots and metadata.
uint64_t Tpcc::local_bytes() const {
  uint64_t bytes = 256ull << 20, largest = 0;
  for (const TableSpec& s : const_cast<Tpcc*>(this)->tables()) {
    bytes += std::bit_ceil(table_bytes(s));
    largest = std::max(largest, std::bit_ceil(table_bytes(s)));
  }
  return bytes + largest;
}

Status Tpcc::full(Status s, const char* table) const {
  if (s.code() != StatusCode::kResourceExhausted) return s;
  return Status(StatusCode::kResourceExhausted,
                fmt::format("tpcc: table {} is full ({}): size it with --tpcc-orders-per-s", table,
                            s.to_string()));
}

// ------------------------------------------------------------------------------ loading

Status Tpcc::load_rows(uint64_t from, uint64_t to, std::vector<LoadRow>* rows) const {
  for (uint64_t u = from; u < to; ++u) {
    Status s = load_district(static_cast<uint32_t>(u / kDistricts + 1),
                             static_cast<uint32_t>(u % kDistricts + 1), rows);
    if (!s.ok()) return s;
  }
  return OkStatus();
}

// Unit (w, d): the district, its customers, history, orders and name index, its tenth of the
// warehouse's stock (and of the items, for w = 1), and the warehouse itself for d = 1.
Status Tpcc::load_district(uint32_t w, uint32_t d, std::vector<LoadRow>* rows) const {
  Rng rng(seed_ * 0x9E3779B97F4A7C15ull + district_key(w, d));
  const int64_t now = unix_now();
  if (d == 1) {
    Warehouse wh{};
    rows->push_back({&warehouse_ytd_, warehouse_key(w), u64s(30'000'000)});  // 300,000.00
    wh.tax = static_cast<uint32_t>(rng.uniform(2001));
    fill(wh.name, rng, 6);
    fill(&wh.address, rng);
    rows->push_back({&warehouse_, warehouse_key(w), bytes_of(wh)});
  }
  District di{};
  rows->push_back({&district_ytd_, district_key(w, d), u64s(3'000'000)});  // 30,000.00
  di.tax = static_cast<uint32_t>(rng.uniform(2001));
  rows->push_back({&district_next_, district_key(w, d), u64s(customers_ + 1)});
  fill(di.name, rng, 6);
  fill(&di.address, rng);
  rows->push_back({&district_, district_key(w, d), bytes_of(di)});
  rows->push_back({&undelivered_, district_key(w, d), u64s(first_undelivered())});
  const uint64_t first_item = (d - 1) * uint64_t{items_} / kDistricts + 1;
  const uint64_t last_item = d * uint64_t{items_} / kDistricts;
  for (uint64_t i = first_item; i <= last_item; ++i) {
    Stock st{};
    st.quantity = static_cast<int32_t>(uniform_in(rng, 10, 100));
    for (auto& dist : st.dist) fill(dist, rng);
    fill(st.data, rng, 26);
    if (rng.uniform(10) == 0) std::memcpy(st.data + rng.uniform(18), "ORIGINAL", 8);
    rows->push_back({&stock_, stock_key(w, i), bytes_of(st)});
    if (w != 1) continue;
    Item it{};
    it.im_id = static_cast<uint32_t>(uniform_in(rng, 1, 10000));
    it.price = static_cast<int64_t>(uniform_in(rng, 100, 10000));
    fill(it.name, rng, 14);
    fill(it.data, rng, 26);
    if (rng.uniform(10) == 0) std::memcpy(it.data + rng.uniform(18), "ORIGINAL", 8);
    rows->push_back({&item_, item_key(i), bytes_of(it)});
  }
  std::map<uint32_t, std::vector<std::pair<std::string, uint32_t>>> by_name;
  for (uint32_t c = 1; c <= customers_; ++c) {
    Customer cu{};
    const uint32_t name =
        c <= kNames ? (c - 1) % names()
                    : static_cast<uint32_t>(nurand(rng, 255, 0, kNames - 1, kCLastLoad) % names());
    const std::string last = last_name(name);
    std::memcpy(cu.last, last.data(), std::min(last.size(), sizeof(cu.last)));
    fill(cu.first, rng, 8);
    std::memcpy(cu.middle, "OE", 2);
    std::memcpy(cu.credit, rng.uniform(10) == 0 ? "BC" : "GC", 2);
    cu.credit_lim = 5'000'000;
    cu.discount = static_cast<uint32_t>(rng.uniform(5001));
    cu.balance = -1000;
    cu.ytd_payment = 1000;
    cu.payment_cnt = 1;
    cu.since = now;
    fill(&cu.address, rng);
    fill(cu.phone, rng);
    fill(cu.data, rng, 300);
    rows->push_back({&customer_, customer_key(w, d, c), bytes_of(cu)});
    by_name[name].emplace_back(std::string(cu.first, sizeof(cu.first)), c);
    History h{};
    h.c_id = c;
    h.c_d_id = h.d_id = d;
    h.c_w_id = h.w_id = w;
    h.date = now;
    h.amount = 1000;
    fill(h.data, rng, 12);
    rows->push_back({&history_, customer_key(w, d, c), bytes_of(h)});
  }
  for (auto& [name, list] : by_name) {
    if (list.size() > kMaxSameName) {
      return Status(StatusCode::kResourceExhausted,
                    fmt::format("tpcc: {} customers of district ({}, {}) named {} (at most {})",
                                list.size(), w, d, last_name(name), kMaxSameName));
    }
    std::sort(list.begin(), list.end());
    NameIndex ix{};
    ix.count = static_cast<uint32_t>(list.size());
    for (size_t i = 0; i < list.size(); ++i) ix.c_ids[i] = static_cast<uint16_t>(list[i].second);
    rows->push_back({&by_name_, name_key(w, d, name), bytes_of(ix)});
  }
  load_orders(rng, w, d, rows);
  return OkStatus();
}

void Tpcc::load_orders(Rng& rng, uint32_t w, uint32_t d, std::vector<LoadRow>* rows) const {
  std::vector<uint32_t> perm(customers_);
  for (uint32_t i = 0; i < customers_; ++i) perm[i] = i + 1;
  for (uint32_t i = customers_ - 1; i > 0; --i) std::swap(perm[i], perm[rng.uniform(i + 1)]);
  const int64_t now = unix_now();
  for (uint32_t o = 1; o <= customers_; ++o) {
    const bool delivered = o < first_undelivered();
    Order od{};
    od.c_id = perm[o - 1];
    od.entry_d = now;
    od.carrier_id = delivered ? static_cast<uint32_t>(uniform_in(rng, 1, 10)) : 0;
    od.ol_cnt = static_cast<uint32_t>(uniform_in(rng, 5, 15));
    od.all_local = 1;
    rows->push_back({&order_, order_key(w, d, o), bytes_of(od)});
    rows->push_back({&last_order_, customer_key(w, d, od.c_id), u64s(o)});
    if (!delivered) rows->push_back({&new_order_, order_key(w, d, o), u64s(order_key(w, d, o))});
    for (uint32_t ol = 1; ol <= od.ol_cnt; ++ol) {
      OrderLine line{};
      line.i_id = static_cast<uint32_t>(uniform_in(rng, 1, items_));
      line.supply_w_id = w;
      line.delivery_d = delivered ? now : 0;
      line.quantity = 5;
      line.amount = delivered ? 0 : static_cast<int64_t>(uniform_in(rng, 1, 999999));
      fill(line.dist_info, rng);
      rows->push_back({&order_line_, order_line_key(w, d, o, ol), bytes_of(line)});
    }
  }
}

// ------------------------------------------------------------------------------ transactions

TxnParams Tpcc::params(Rng& rng, TxnStream* stream) const {
  TxnParams p;
  int r = static_cast<int>(rng.uniform(100));
  while (r >= kTpccMix[p.type]) r -= kTpccMix[p.type++];
  p.a = rng.next_u64();                   // the inputs' seed
  p.b = uniform_in(rng, 1, warehouses_);  // home warehouse
  if (p.type == kPayment) p.c = history_key(stream->id, ++stream->sequence);
  p.d = static_cast<uint64_t>(unix_now());  // dates
  return p;
}

Task<Status> Tpcc::body(Transaction& x, TxnParams p, int64_t*) const {
  const uint32_t w = static_cast<uint32_t>(p.b);
  Status s;
  switch (p.type) {
    case kNewOrder:
      s = co_await new_order(x, w, p.a);
      break;
    case kPayment:
      s = co_await payment(x, w, p.a, p.c);
      break;
    case kOrderStatus:
      s = co_await order_status(x, w, p.a);
      break;
    case kDelivery:
      s = co_await delivery(x, w, p.a, static_cast<int64_t>(p.d));
      break;
    default:
      s = co_await stock_level(x, w, p.a);
      break;
  }
  co_return s;
}

NewOrderInput Tpcc::new_order_input(Rng& rng, uint32_t w) const {
  NewOrderInput in{};
  in.d = static_cast<uint32_t>(uniform_in(rng, 1, kDistricts));
  in.c = static_cast<uint32_t>(nurand(rng, 1023, 1, customers_, kCId));
  in.ol_cnt = static_cast<uint32_t>(uniform_in(rng, 5, 15));
  const bool rollback = rng.uniform(100) == 0;
  for (uint32_t i = 0; i < in.ol_cnt; ++i) {
    bool again = true;
    while (again) {  // distinct items (a stock row is updated once per order)
      in.items[i] = static_cast<uint32_t>(nurand(rng, 8191, 1, items_, kCItem));
      again = std::find(in.items, in.items + i, in.items[i]) != in.items + i;
    }
    in.supply_w[i] = w;
    if (warehouses_ > 1 && rng.uniform(100) == 0) {
      in.supply_w[i] = other_warehouse(rng, w);
      in.all_local = false;
    }
    in.quantity[i] = static_cast<uint32_t>(uniform_in(rng, 1, 10));
  }
  if (rollback) in.items[in.ol_cnt - 1] = items_ + 1;  // unused: the order rolls back
  return in;
}

Task<Status> Tpcc::new_order(Transaction& x, uint32_t w, uint64_t seed) const {
  Rng rng(seed);
  const NewOrderInput in = new_order_input(rng, w);
  std::string v;
  Status s = co_await x.read(warehouse_, warehouse_key(w), &v);
  if (s.ok()) s = co_await x.read(district_, district_key(w, in.d), &v);
  if (s.ok()) s = co_await x.read_for_update(district_next_, district_key(w, in.d), &v);
  if (!s.ok()) co_return s;
  const uint64_t o = static_cast<uint64_t>(i64_of(v));
  if (o > order_room_) {
    co_return Status(StatusCode::kResourceExhausted,
                     fmt::format("tpcc: district ({}, {}) has used its room for {} orders: size "
                                 "the tables with --tpcc-orders-per-s",
                                 w, in.d, order_room_));
  }
  s = co_await x.update(district_next_, district_key(w, in.d), u64s(o + 1));
  if (s.ok()) s = co_await x.read(customer_, customer_key(w, in.d, in.c), &v);
  if (!s.ok()) co_return s;
  Order od{};
  od.c_id = in.c;
  od.entry_d = unix_now();
  od.ol_cnt = in.ol_cnt;
  od.all_local = in.all_local ? 1 : 0;
  s = co_await x.insert(order_, order_key(w, in.d, o), bytes_of(od));
  s = full(s, "order");
  if (s.ok()) s = co_await x.insert(new_order_, order_key(w, in.d, o), u64s(order_key(w, in.d, o)));
  s = full(s, "new_order");
  if (s.ok()) s = co_await x.read_for_update(last_order_, customer_key(w, in.d, in.c), &v);
  if (s.ok()) s = co_await x.update(last_order_, customer_key(w, in.d, in.c), u64s(o));
  for (uint32_t ol = 1; ol <= in.ol_cnt && s.ok(); ++ol) {
    s = co_await new_order_line(x, &in, w, o, ol);
  }
  co_return s;
}

// Line ol of order o: the item (absent: the 1% that roll back), its stock, the ORDER-LINE row.
Task<Status> Tpcc::new_order_line(Transaction& x, const NewOrderInput* in, uint32_t w, uint64_t o,
                                  uint32_t ol) const {
  const uint32_t i = in->items[ol - 1], supply = in->supply_w[ol - 1];
  std::string v;
  Status s = co_await x.read(item_, item_key(i), &v);
  if (s.code() == StatusCode::kNotFound) {
    s = co_await x.abort();
    co_return s;
  }
  const Item it = record_of<Item>(v);
  if (s.ok()) s = co_await x.read_for_update(stock_, stock_key(supply, i), &v);
  if (!s.ok()) co_return s;
  Stock st = record_of<Stock>(v);
  const int32_t q = static_cast<int32_t>(in->quantity[ol - 1]);
  st.quantity = st.quantity >= q + 10 ? st.quantity - q : st.quantity - q + 91;
  st.ytd += q;
  ++st.order_cnt;
  if (supply != w) ++st.remote_cnt;
  s = co_await x.update(stock_, stock_key(supply, i), bytes_of(st));
  OrderLine line{};
  line.i_id = i;
  line.supply_w_id = supply;
  line.quantity = static_cast<uint32_t>(q);
  line.amount = q * it.price;
  std::memcpy(line.dist_info, st.dist[in->d - 1], sizeof(line.dist_info));
  if (s.ok()) s = co_await x.insert(order_line_, order_line_key(w, in->d, o, ol), bytes_of(line));
  co_return full(s, "order_line");
}

Task<Status> Tpcc::find_customer(Transaction& x, uint32_t w, uint32_t d, CustomerChoice ch,
                                 uint32_t* c) const {
  if (!ch.by_name) {
    *c = ch.c;
    co_return OkStatus();
  }
  std::string v;
  Status s = co_await x.read(by_name_, name_key(w, d, ch.name), &v);
  if (!s.ok()) co_return s;
  const NameIndex ix = record_of<NameIndex>(v);
  if (ix.count == 0 || ix.count > kMaxSameName) {
    co_return Status(StatusCode::kInternal, "tpcc: a customer-by-name record is corrupt");
  }
  *c = ix.c_ids[(ix.count - 1) / 2];  // position ceil(n / 2), sorted by first name
  co_return OkStatus();
}

Task<Status> Tpcc::payment(Transaction& x, uint32_t w, uint64_t seed, uint64_t history) const {
  Rng rng(seed);
  const uint32_t d = static_cast<uint32_t>(uniform_in(rng, 1, kDistricts));
  uint32_t c_w = w, c_d = d;
  if (warehouses_ > 1 && rng.uniform(100) < 15) {
    c_w = other_warehouse(rng, w);
    c_d = static_cast<uint32_t>(uniform_in(rng, 1, kDistricts));
  }
  const CustomerChoice ch = choose_customer(rng);
  const int64_t amount = static_cast<int64_t>(uniform_in(rng, 100, 500000));
  std::string v;
  Status s = co_await x.read_for_update(warehouse_ytd_, warehouse_key(w), &v);
  if (s.ok()) s = co_await x.update(warehouse_ytd_, warehouse_key(w), u64s(i64_of(v) + amount));
  if (s.ok()) s = co_await x.read(warehouse_, warehouse_key(w), &v);
  if (!s.ok()) co_return s;
  const Warehouse wh = record_of<Warehouse>(v);
  s = co_await x.read_for_update(district_ytd_, district_key(w, d), &v);
  if (s.ok()) s = co_await x.update(district_ytd_, district_key(w, d), u64s(i64_of(v) + amount));
  if (s.ok()) s = co_await x.read(district_, district_key(w, d), &v);
  if (!s.ok()) co_return s;
  const District di = record_of<District>(v);
  uint32_t c = 0;
  if (s.ok()) s = co_await find_customer(x, c_w, c_d, ch, &c);
  if (s.ok()) s = co_await x.read_for_update(customer_, customer_key(c_w, c_d, c), &v);
  if (!s.ok()) co_return s;
  Customer cu = record_of<Customer>(v);
  cu.balance -= amount;
  cu.ytd_payment += amount;
  ++cu.payment_cnt;
  if (std::memcmp(cu.credit, "BC", 2) == 0) {
    std::string data = fmt::format("{} {} {} {} {} {}|", c, c_d, c_w, d, w, amount);
    data.append(cu.data, sizeof(cu.data));
    std::memcpy(cu.data, data.data(), sizeof(cu.data));
  }
  s = co_await x.update(customer_, customer_key(c_w, c_d, c), bytes_of(cu));
  History h{};
  h.c_id = c;
  h.c_d_id = c_d;
  h.c_w_id = c_w;
  h.d_id = d;
  h.w_id = w;
  h.date = unix_now();
  h.amount = amount;
  std::memcpy(h.data, wh.name, sizeof(wh.name));
  std::memcpy(h.data + 12, di.name, sizeof(di.name));
  if (s.ok()) s = co_await x.insert(history_, history, bytes_of(h));
  co_return full(s, "history");
}

Task<Status> Tpcc::order_status(Transaction& x, uint32_t w, uint64_t seed) const {
  Rng rng(seed);
  const uint32_t d = static_cast<uint32_t>(uniform_in(rng, 1, kDistricts));
  const CustomerChoice ch = choose_customer(rng);
  uint32_t c = 0;
  std::string v;
  Status s = co_await find_customer(x, w, d, ch, &c);
  if (s.ok()) s = co_await x.read(customer_, customer_key(w, d, c), &v);
  if (s.ok()) s = co_await x.read(last_order_, customer_key(w, d, c), &v);
  if (!s.ok()) co_return s;
  const uint64_t o = static_cast<uint64_t>(i64_of(v));
  s = co_await x.read(order_, order_key(w, d, o), &v);
  if (!s.ok()) co_return s;
  const Order od = record_of<Order>(v);
  for (uint32_t ol = 1; ol <= od.ol_cnt && s.ok(); ++ol) {
    s = co_await x.read(order_line_, order_line_key(w, d, o, ol), &v);
  }
  co_return s;
}

Task<Status> Tpcc::delivery(Transaction& x, uint32_t w, uint64_t seed, int64_t date) const {
  Rng rng(seed);
  const uint32_t carrier = static_cast<uint32_t>(uniform_in(rng, 1, 10));
  std::string v;
  Status s;
  for (uint32_t d = 1; d <= kDistricts && s.ok(); ++d) {
    s = co_await x.read_for_update(undelivered_, district_key(w, d), &v);
    if (!s.ok()) break;
    const uint64_t o = static_cast<uint64_t>(i64_of(v));
    s = co_await x.read(new_order_, order_key(w, d, o), &v);
    if (s.code() == StatusCode::kNotFound) {  // no undelivered order in this district
      s = OkStatus();
      continue;
    }
    if (s.ok()) s = co_await x.erase(new_order_, order_key(w, d, o));
    if (s.ok()) s = co_await x.update(undelivered_, district_key(w, d), u64s(o + 1));
    if (s.ok()) s = co_await x.read_for_update(order_, order_key(w, d, o), &v);
    if (!s.ok()) break;
    Order od = record_of<Order>(v);
    od.carrier_id = carrier;
    s = co_await x.update(order_, order_key(w, d, o), bytes_of(od));
    int64_t total = 0;
    for (uint32_t ol = 1; ol <= od.ol_cnt && s.ok(); ++ol) {
      s = co_await x.read_for_update(order_line_, order_line_key(w, d, o, ol), &v);
      if (!s.ok()) break;
      OrderLine line = record_of<OrderLine>(v);
      total += line.amount;
      line.delivery_d = date;
      s = co_await x.update(order_line_, order_line_key(w, d, o, ol), bytes_of(line));
    }
    if (s.ok()) s = co_await x.read_for_update(customer_, customer_key(w, d, od.c_id), &v);
    if (!s.ok()) break;
    Customer cu = record_of<Customer>(v);
    cu.balance += total;
    ++cu.delivery_cnt;
    s = co_await x.update(customer_, customer_key(w, d, od.c_id), bytes_of(cu));
  }
  co_return s;
}

Task<Status> Tpcc::stock_level(Transaction& x, uint32_t w, uint64_t seed) const {
  Rng rng(seed);
  const uint32_t d = static_cast<uint32_t>(uniform_in(rng, 1, kDistricts));
  const int32_t threshold = static_cast<int32_t>(uniform_in(rng, 10, 20));
  std::string v;
  Status s = co_await x.read(district_next_, district_key(w, d), &v);
  if (!s.ok()) co_return s;
  const uint32_t next = static_cast<uint32_t>(i64_of(v));
  std::vector<uint32_t> items;
  for (uint32_t o = next > 20 ? next - 20 : 1; o < next && s.ok(); ++o) {
    s = co_await x.read(order_, order_key(w, d, o), &v);
    if (!s.ok()) break;
    const Order od = record_of<Order>(v);
    for (uint32_t ol = 1; ol <= od.ol_cnt && s.ok(); ++ol) {
      s = co_await x.read(order_line_, order_line_key(w, d, o, ol), &v);
      if (s.ok()) items.push_back(record_of<OrderLine>(v).i_id);
    }
  }
  std::sort(items.begin(), items.end());
  items.erase(std::unique(items.begin(), items.end()), items.end());
  uint32_t low = 0;
  for (size_t i = 0; i < items.size() && s.ok(); ++i) {
    s = co_await x.read(stock_, stock_key(w, items[i]), &v);
    if (s.ok() && record_of<Stock>(v).quantity < threshold) ++low;
  }
  (void)low;  // the transaction's answer
  co_return s;
}

// ------------------------------------------------------------------------------ checks

// Consistency conditions 2-4 of one district (clause 3.3.2); *d_ytd for condition 1.
Task<Status> Tpcc::check_district(txn::TxnClient* tc, uint32_t w, uint32_t d, int64_t* d_ytd,
                                  std::string* failures) const {
  uint64_t present = 0;
  uint32_t next = 0;
  std::vector<uint64_t> one(1, district_key(w, d));  // (no braced list in a co_await: g++ 12)
  Status s = co_await scan_rows(tc, &district_next_, one, [&](size_t, const std::string& v) {
    next = static_cast<uint32_t>(i64_of(v));
    ++present;
  });
  if (s.ok()) {
    s = co_await scan_rows(tc, &district_ytd_, one,
                           [&](size_t, const std::string& v) { *d_ytd = i64_of(v); });
  }
  if (!s.ok()) co_return s;
  // Orders and new orders are looked for up to D_NEXT_O_ID + kCheckBeyond (only NewOrder
  // inserts them, at D_NEXT_O_ID under the district's lock).
  std::vector<uint64_t> keys;
  const uint64_t last = std::min<uint64_t>(order_room_, uint64_t{next} + kCheckBeyond);
  for (uint64_t o = 1; o <= last; ++o) keys.push_back(order_key(w, d, o));
  uint64_t max_o = 0, ol_cnt_sum = 0;
  std::vector<uint64_t> orders;
  s = co_await scan_rows(tc, &order_, keys, [&](size_t i, const std::string& v) {
    max_o = std::max<uint64_t>(max_o, i + 1);
    ol_cnt_sum += record_of<Order>(v).ol_cnt;
    orders.push_back(i + 1);
  });
  if (!s.ok()) co_return s;
  uint64_t no_min = UINT64_MAX, no_max = 0, no_rows = 0;
  s = co_await scan_rows(tc, &new_order_, keys, [&](size_t i, const std::string&) {
    no_min = std::min<uint64_t>(no_min, i + 1);
    no_max = std::max<uint64_t>(no_max, i + 1);
    ++no_rows;
  });
  if (!s.ok()) co_return s;
  keys.clear();
  for (uint64_t o : orders) {
    for (uint64_t ol = 1; ol <= kMaxOrderLines; ++ol) keys.push_back(order_line_key(w, d, o, ol));
  }
  uint64_t ol_rows = 0;
  s = co_await scan_rows(tc, &order_line_, keys, [&](size_t, const std::string&) { ++ol_rows; });
  if (!s.ok()) co_return s;
  const auto failed = [&](int n, const std::string& what) {
    *failures += fmt::format(" [{}] district ({}, {}): {};", n, w, d, what);
  };
  if (present != 1) failed(2, "no district row");
  if (next - 1 != max_o || (no_rows > 0 && no_max != max_o)) {
    failed(2, fmt::format("D_NEXT_O_ID - 1 = {}, max(O_ID) = {}, max(NO_O_ID) = {}", next - 1,
                          max_o, no_max));
  }
  if (no_rows > 0 && no_max - no_min + 1 != no_rows) {
    failed(3, fmt::format("max(NO_O_ID) - min(NO_O_ID) + 1 = {}, NEW-ORDER rows {}",
                          no_max - no_min + 1, no_rows));
  }
  if (ol_cnt_sum != ol_rows) {
    failed(4, fmt::format("sum(O_OL_CNT) = {}, ORDER-LINE rows {}", ol_cnt_sum, ol_rows));
  }
  co_return OkStatus();
}

Task<Status> Tpcc::check(txn::TxnClient* tc, int64_t, TxnCheck* out) const {
  std::string failures;
  for (uint32_t w = 1; w <= warehouses_; ++w) {
    int64_t w_ytd = 0, d_sum = 0;
    std::vector<uint64_t> one(1, warehouse_key(w));  // (no braced list in a co_await: g++ 12)
    Status s = co_await scan_rows(tc, &warehouse_ytd_, one,
                                  [&](size_t, const std::string& v) { w_ytd = i64_of(v); });
    for (uint32_t d = 1; d <= kDistricts && s.ok(); ++d) {
      int64_t d_ytd = 0;
      s = co_await check_district(tc, w, d, &d_ytd, &failures);
      d_sum += d_ytd;
    }
    if (!s.ok()) co_return s;
    if (w_ytd != d_sum) {
      failures += fmt::format(" [1] warehouse {}: W_YTD {} != sum(D_YTD) {};", w, w_ytd, d_sum);
    }
  }
  out->ok = failures.empty();
  out->line = out->ok
                  ? fmt::format("tpcc consistency conditions 1-4 ({} warehouses): OK", warehouses_)
                  : "tpcc consistency conditions 1-4: FAILED" + failures;
  out->json["consistency_ok"] = out->ok;
  out->json["warehouses"] = warehouses_;
  out->json["standard_cardinalities"] = standard();
  co_return OkStatus();
}

}  // namespace

std::unique_ptr<TxnWorkload> make_tpcc(const BenchTxnFlags& flags) {
  return std::make_unique<Tpcc>(flags);
}

}  // namespace farmem::apps
