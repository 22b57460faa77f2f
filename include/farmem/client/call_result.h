// call_result: reads the reply slot of a served procedure call (Batch::call; wire format in
// docs/formats/memops.md "Calls"): the procedure's result bytes, or the error it (or the node,
// for an unknown procedure: kNotFound) answered with. A slot whose header is malformed (unknown
// code, length past the slot) is kProtocolError. Thread safety: pure.
#pragma once

#include <cstddef>
#include <string_view>

#include "farmem/common/result.h"
#include "farmem/common/status.h"

namespace farmem::client {

// `slot` holds slot_bytes bytes as the node answered them; the view points into it.
Result<std::string_view> call_result(const void* slot, size_t slot_bytes);

}  // namespace farmem::client
