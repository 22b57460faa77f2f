// TPC-C (tpcc.h): consistency conditions 1-4 (clause 3.3.2) after the run.
#include "tpcc.h"

namespace farmem::bench::tpcc {

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
  FARMEM_CO_TRY(s);
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
  FARMEM_CO_TRY(s);
  uint64_t no_min = UINT64_MAX, no_max = 0, no_rows = 0;
  s = co_await scan_rows(tc, &new_order_, keys, [&](size_t i, const std::string&) {
    no_min = std::min<uint64_t>(no_min, i + 1);
    no_max = std::max<uint64_t>(no_max, i + 1);
    ++no_rows;
  });
  FARMEM_CO_TRY(s);
  keys.clear();
  for (uint64_t o : orders) {
    for (uint64_t ol = 1; ol <= kMaxOrderLines; ++ol) keys.push_back(order_line_key(w, d, o, ol));
  }
  uint64_t ol_rows = 0;
  s = co_await scan_rows(tc, &order_line_, keys, [&](size_t, const std::string&) { ++ol_rows; });
  FARMEM_CO_TRY(s);
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
    FARMEM_CO_TRY(s);
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

}  // namespace farmem::bench::tpcc
