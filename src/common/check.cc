#include "farmem/common/check.h"

#include <cstdio>
#include <cstdlib>

namespace farmem {

void invariant_failed(const char* file, int line, const char* condition, const char* message) {
  std::fprintf(stderr, "farmem: invariant failed at %s:%d: %s (%s)\n", file, line, condition,
               message);
  std::fflush(stderr);
  std::abort();
}

}  // namespace farmem
