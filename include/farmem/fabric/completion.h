// Completion: where the fabric reports the end of one or more posted operations.
//
// A poster sets `notify` (and `owner`), posts operations that each add 1 to `remaining` when
// they do not complete at once, and then waits for notify(). notify() runs on the worker's
// thread from inside Worker::progress() or Worker::expire(); it must only record or schedule,
// never post or progress. The first failure of any operation is kept in `status`.
// Thread safety: owned by the worker's thread.
#pragma once

#include <cstdint>

#include "farmem/common/check.h"
#include "farmem/common/status.h"

namespace farmem::fabric {

struct Completion {
  uint32_t remaining = 0;
  Status status;
  void (*notify)(Completion*) = nullptr;
  void* owner = nullptr;

  void fail(Status s) {
    if (status.ok()) status = std::move(s);
  }
  // Called by the fabric for each pending operation that finished.
  void complete_one(Status s) {
    FARMEM_ASSERT(remaining > 0, "an operation completed twice, or one never counted");
    if (!s.ok()) fail(std::move(s));
    if (--remaining == 0 && notify != nullptr) notify(this);
  }
};

}  // namespace farmem::fabric
