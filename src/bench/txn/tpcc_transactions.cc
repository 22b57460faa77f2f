// TPC-C (tpcc.h): the five transactions (clause 2), each generating its inputs from the
// transaction's seed so that a retry repeats them.
#include "tpcc.h"

namespace farmem::bench::tpcc {

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
  FARMEM_CO_TRY(s);
  const uint64_t o = static_cast<uint64_t>(i64_of(v));
  if (o > order_room_) {
    co_return Status(StatusCode::kResourceExhausted,
                     fmt::format("tpcc: district ({}, {}) has used its room for {} orders: size "
                                 "the tables with --tpcc-orders-per-s",
                                 w, in.d, order_room_));
  }
  s = co_await x.update(district_next_, district_key(w, in.d), u64s(o + 1));
  if (s.ok()) s = co_await x.read(customer_, customer_key(w, in.d, in.c), &v);
  FARMEM_CO_TRY(s);
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
  FARMEM_CO_TRY(s);
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
  FARMEM_CO_TRY(s);
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
  FARMEM_CO_TRY(s);
  const Warehouse wh = record_of<Warehouse>(v);
  s = co_await x.read_for_update(district_ytd_, district_key(w, d), &v);
  if (s.ok()) s = co_await x.update(district_ytd_, district_key(w, d), u64s(i64_of(v) + amount));
  if (s.ok()) s = co_await x.read(district_, district_key(w, d), &v);
  FARMEM_CO_TRY(s);
  const District di = record_of<District>(v);
  uint32_t c = 0;
  if (s.ok()) s = co_await find_customer(x, c_w, c_d, ch, &c);
  if (s.ok()) s = co_await x.read_for_update(customer_, customer_key(c_w, c_d, c), &v);
  FARMEM_CO_TRY(s);
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
  FARMEM_CO_TRY(s);
  const uint64_t o = static_cast<uint64_t>(i64_of(v));
  s = co_await x.read(order_, order_key(w, d, o), &v);
  FARMEM_CO_TRY(s);
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
  FARMEM_CO_TRY(s);
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

}  // namespace farmem::bench::tpcc
