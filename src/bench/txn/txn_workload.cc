// Helpers shared by the workloads of `farmem bench txn` (txn_workload.h).
#include "txn_workload.h"

#include <algorithm>
#include <utility>

#include "farmem/ds/common/retry.h"

namespace farmem::bench {

using runtime::Task;
using txn::Transaction;

uint64_t TxnWorkload::local_bytes() const {
  return std::max<uint64_t>(256ull << 20, load_row_count() * 1024);
}

Task<Status> scan_rows(txn::TxnClient* tc, const txn::Table* table, std::vector<uint64_t> keys,
                       std::function<void(size_t, const std::string&)> visit) {
  std::vector<std::pair<size_t, std::string>> found;
  for (size_t i = 0; i < keys.size(); i += 64) {
    const size_t end = std::min(keys.size(), i + 64);
    ds::RetryLoop loop(tc->client(), "checking", 10000);
    for (;;) {
      Transaction x = tc->begin_read_only();
      found.clear();
      Status s;
      std::string v;
      for (size_t j = i; j < end && s.ok(); ++j) {
        s = co_await x.read(*table, keys[j], &v);
        if (s.ok()) {
          found.emplace_back(j, v);
        } else if (s.code() == StatusCode::kNotFound) {
          s = OkStatus();
        }
      }
      if (s.ok()) s = co_await x.commit();
      if (s.ok()) {
        for (const auto& [j, value] : found) visit(j, value);
        break;
      }
      if (s.code() != StatusCode::kAborted || loop.exhausted()) co_return s;
      co_await loop.retry();
    }
  }
  co_return OkStatus();
}

Task<Status> scan(txn::TxnClient* tc, const txn::Table* table, std::vector<uint64_t> keys,
                  int64_t* sum, uint64_t* present) {
  // Summed modulo 2^64 (a table whose records are not balances, e.g. TATP's, is only counted;
  // its "sum" is meaningless but must not overflow).
  uint64_t total = static_cast<uint64_t>(*sum);
  uint64_t n = 0;
  Status s = co_await scan_rows(tc, table, std::move(keys), [&](size_t, const std::string& v) {
    total += static_cast<uint64_t>(i64_of(v));
    ++n;
  });
  *sum = static_cast<int64_t>(total);
  *present += n;
  co_return s;
}

std::vector<uint64_t> key_range(uint64_t from, uint64_t to) {
  std::vector<uint64_t> k;
  for (uint64_t i = from; i < to; ++i) k.push_back(i);
  return k;
}

}  // namespace farmem::bench
