// raise_to: an atomic maximum (a high-water mark, a stable LSN) raised without a lock.
// Thread safety: any thread.
#pragma once

#include <atomic>

namespace farmem {

// Makes `a` at least `v`; never lowers it.
template <typename T>
void raise_to(std::atomic<T>& a, T v, std::memory_order order = std::memory_order_seq_cst) {
  T seen = a.load(std::memory_order_relaxed);  // the exchange below re-reads it in `order`
  while (seen < v && !a.compare_exchange_weak(seen, v, order)) {
  }
}

}  // namespace farmem
