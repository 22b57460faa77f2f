// guarded_main: the body of an executable's main(). Set-up may throw (CLI11, std::filesystem,
// allocation); main() must not let that escape. guarded_main runs `body` and turns an escaping
// exception into one line on stderr and exit code 1.
// Thread safety: call from main() only.
#pragma once

#include <cstdio>
#include <exception>

namespace farmem {

template <class Body>
int guarded_main(const char* program, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
  } catch (...) {
    std::fprintf(stderr, "%s: unknown exception\n", program);
  }
  return 1;
}

}  // namespace farmem
