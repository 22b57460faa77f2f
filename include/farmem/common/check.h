// FARMEM_ASSERT and FARMEM_DCHECK: invariants stated in code.
//
// FARMEM_ASSERT(cond, msg) stays on in release builds: when `cond` is false it prints
// "farmem: invariant failed at FILE:LINE: COND (MSG)" on stderr and aborts. Use it for cheap
// checks whose failure means memory is corrupt or a protocol is broken (lock words, log states,
// slot versions, page headers, allocator bounds), never for input a peer or user can send: bad
// input gets a Status. FARMEM_DCHECK(cond, msg) is the same in debug builds and compiles to
// nothing (cond is not evaluated) when NDEBUG is defined; use it for checks too costly for the
// data path. `msg` is a string literal.
// Thread safety: any thread.
#pragma once

namespace farmem {

[[noreturn]] void invariant_failed(const char* file, int line, const char* condition,
                                   const char* message);

}  // namespace farmem

#define FARMEM_ASSERT(cond, msg)                                  \
  do {                                                            \
    if (!(cond)) [[unlikely]]                                     \
      ::farmem::invariant_failed(__FILE__, __LINE__, #cond, msg); \
  } while (0)

#ifdef NDEBUG
#define FARMEM_DCHECK(cond, msg) \
  do {                           \
    if (false) {                 \
      (void)(cond);              \
    }                            \
  } while (0)
#else
#define FARMEM_DCHECK(cond, msg) FARMEM_ASSERT(cond, msg)
#endif
