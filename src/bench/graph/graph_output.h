// What the graph commands (farmem/bench/graph.h) share: their clock, their error line, and the
// "id value" files they write (--order-map, --output).
// Thread safety: the calling thread.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "farmem/common/status.h"

namespace farmem::bench {

// Seconds on the steady clock.
inline double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// Prints "farmem graph: <what>" to stderr; 1.
inline int graph_fail(std::string_view what) {
  fmt::print(stderr, "farmem graph: {}\n", what);
  return 1;
}

// Writes "id value" lines to `path`, for id = 0 .. n-1.
template <typename ValueOf>
Status write_id_lines(const std::string& path, uint64_t n, const ValueOf& value_of) {
  std::FILE* out = std::fopen(path.c_str(), "w");
  if (out == nullptr) return InvalidArgument(fmt::format("cannot create {}", path));
  for (uint64_t v = 0; v < n; ++v) fmt::print(out, "{} {}\n", v, value_of(v));
  const bool ok = std::fclose(out) == 0;
  return ok ? OkStatus() : Internal(fmt::format("writing {} failed", path));
}

}  // namespace farmem::bench
