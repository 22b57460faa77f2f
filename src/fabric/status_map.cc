#include "farmem/fabric/status_map.h"

#include <fmt/format.h>

namespace farmem::fabric {

StatusCode map_ucs_code(ucs_status_t s) {
  switch (s) {
    case UCS_OK:
      return StatusCode::kOk;
    case UCS_ERR_TIMED_OUT:
      return StatusCode::kTimedOut;
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_REJECTED:
    case UCS_ERR_NOT_CONNECTED:
    case UCS_ERR_IO_ERROR:
      return StatusCode::kPeerFailed;
    case UCS_ERR_CANCELED:
      return StatusCode::kCancelled;
    case UCS_ERR_NO_MEMORY:
    case UCS_ERR_NO_RESOURCE:
    case UCS_ERR_EXCEEDS_LIMIT:
      return StatusCode::kResourceExhausted;
    case UCS_ERR_INVALID_PARAM:
    case UCS_ERR_INVALID_ADDR:
      return StatusCode::kInvalidArgument;
    case UCS_ERR_UNSUPPORTED:  // like every other code: ours to fix
    default:
      return StatusCode::kInternal;
  }
}

Status from_ucs(ucs_status_t s, std::string_view what) {
  if (s == UCS_OK) return OkStatus();
  return Status(map_ucs_code(s), fmt::format("{}: {}", what, ucs_status_string(s)));
}

}  // namespace farmem::fabric
