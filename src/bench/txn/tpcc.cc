// TPC-C (tpcc.h): sizing the tables, drawing a transaction, dispatching it; the factory.
#include "tpcc.h"

#include <bit>
#include <cmath>
#include <stdexcept>

namespace farmem::bench::tpcc {

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

// Bytes of a table's bucket array on one node holding all of it (txn::bucket_count buckets).
uint64_t table_bytes(const TableSpec& s) {
  return txn::bucket_count(s.capacity, 1) * txn::bucket_bytes(s.record_bytes);
}

Tpcc::Tpcc(const TxnBenchOptions& f)
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

}  // namespace farmem::bench::tpcc

namespace farmem::bench {

std::unique_ptr<TxnWorkload> make_tpcc(const TxnBenchOptions& flags) {
  return std::make_unique<tpcc::Tpcc>(flags);
}

}  // namespace farmem::bench
