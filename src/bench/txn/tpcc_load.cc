// TPC-C (tpcc.h): the initial rows, a district (w, d) per load unit.
#include <map>

#include "tpcc.h"

namespace farmem::bench::tpcc {

Status Tpcc::load_rows(uint64_t from, uint64_t to, std::vector<LoadRow>* rows) const {
  for (uint64_t u = from; u < to; ++u) {
    Status s = load_district(static_cast<uint32_t>(u / kDistricts + 1),
                             static_cast<uint32_t>(u % kDistricts + 1), rows);
    FARMEM_TRY(s);
  }
  return OkStatus();
}

// Unit (w, d): the district, its customers, history, orders and name index, its tenth of the
// warehouse's stock (and of the items, for w = 1), and the warehouse itself for d = 1. The rows
// are drawn from one stream per unit, in this order.
Status Tpcc::load_district(uint32_t w, uint32_t d, std::vector<LoadRow>* rows) const {
  Rng rng(seed_ * 0x9E3779B97F4A7C15ull + district_key(w, d));
  const int64_t now = unix_now();
  load_district_rows(rng, w, d, rows);
  load_stock(rng, w, d, rows);
  FARMEM_TRY(load_customers(rng, w, d, now, rows));
  load_orders(rng, w, d, rows);
  return OkStatus();
}

// The warehouse (d = 1) and the district: their static rows, year-to-date balances, the
// district's next order id and its oldest undelivered order.
void Tpcc::load_district_rows(Rng& rng, uint32_t w, uint32_t d, std::vector<LoadRow>* rows) const {
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
}

// The district's tenth of the warehouse's stock, and of the items for w = 1.
void Tpcc::load_stock(Rng& rng, uint32_t w, uint32_t d, std::vector<LoadRow>* rows) const {
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
}

// The district's customers, their history rows and the customer-by-last-name index.
Status Tpcc::load_customers(Rng& rng, uint32_t w, uint32_t d, int64_t now,
                            std::vector<LoadRow>* rows) const {
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

}  // namespace farmem::bench::tpcc
