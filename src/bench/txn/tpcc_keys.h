// TPC-C's keys and input generation for `farmem bench txn --workload tpcc` (txn_tpcc.cc).
//
// Keys: composite 64-bit packings, most significant field first, so that the rows of one
// district are neighbours in key order (the hash placement spreads them anyway):
//   warehouse     w                                  (w: 16 bits, 1..65535)
//   district      w << 4 | d                         (d: 4 bits, 1..10)
//   customer      district << 12 | c                 (c: 12 bits, 1..3000)
//   order         district << 24 | o                 (o: 24 bits, 1..16,777,215)
//   new-order     = order's key
//   order-line    order << 4 | ol                    (ol: 4 bits, 1..15)
//   item          i                                  (i: 17 bits, 1..100,000)
//   stock         w << 17 | i
//   history       customer's key for the loaded rows; (stream + 1) << 40 | sequence for the
//                 rows Payment inserts (stream: the coordinator coroutine, sequence < 2^40)
// Auxiliary tables (not in the specification; maintained inside the same transactions):
//   customer by last name   district << 10 | name number (0..999)
//   customer's last order   = customer's key
//   oldest undelivered      = district's key
// Input generation: NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x
// with the run's C constants below (C_LAST differs between load and run as clause 2.1.6.1
// requires: 223 - 157 = 66, in [65, 119] and neither 96 nor 112).
// Thread safety: pure functions (the Rng is the caller's).
#pragma once

#include <cstdint>

#include "farmem/bench/workload/rng.h"

namespace farmem::bench::tpcc {

inline constexpr uint32_t kDistricts = 10;
inline constexpr uint32_t kMaxWarehouses = 65535;
inline constexpr uint32_t kMaxCustomers = 4095;
inline constexpr uint32_t kMaxItems = (1u << 17) - 1;
inline constexpr uint64_t kMaxOrders = (1u << 24) - 1;
inline constexpr uint32_t kMaxOrderLines = 15;
inline constexpr uint32_t kNames = 1000;

inline constexpr uint64_t kCLastLoad = 157;
inline constexpr uint64_t kCLastRun = 223;
inline constexpr uint64_t kCId = 259;
inline constexpr uint64_t kCItem = 7911;
static_assert(kCLastRun - kCLastLoad >= 65 && kCLastRun - kCLastLoad <= 119);
static_assert(kCLastRun - kCLastLoad != 96 && kCLastRun - kCLastLoad != 112);

constexpr uint64_t warehouse_key(uint64_t w) { return w; }
constexpr uint64_t district_key(uint64_t w, uint64_t d) { return w << 4 | d; }
constexpr uint64_t customer_key(uint64_t w, uint64_t d, uint64_t c) {
  return district_key(w, d) << 12 | c;
}
constexpr uint64_t order_key(uint64_t w, uint64_t d, uint64_t o) {
  return district_key(w, d) << 24 | o;
}
constexpr uint64_t order_line_key(uint64_t w, uint64_t d, uint64_t o, uint64_t ol) {
  return order_key(w, d, o) << 4 | ol;
}
constexpr uint64_t item_key(uint64_t i) { return i; }
constexpr uint64_t stock_key(uint64_t w, uint64_t i) { return w << 17 | i; }
constexpr uint64_t name_key(uint64_t w, uint64_t d, uint64_t name) {
  return district_key(w, d) << 10 | name;
}
constexpr uint64_t history_key(uint64_t stream, uint64_t sequence) {
  return (stream + 1) << 40 | sequence;
}

// random(x, y): uniform in [x, y].
inline uint64_t uniform_in(workload::Rng& rng, uint64_t x, uint64_t y) {
  return x + rng.uniform(y - x + 1);
}
inline uint64_t nurand(workload::Rng& rng, uint64_t a, uint64_t x, uint64_t y, uint64_t c) {
  return ((uniform_in(rng, 0, a) | uniform_in(rng, x, y)) + c) % (y - x + 1) + x;
}

}  // namespace farmem::bench::tpcc
