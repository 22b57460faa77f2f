// Translation of UCX status codes into farmem Status, at the fabric boundary.
// Thread safety: pure functions.
#pragma once

#include <ucs/type/status.h>

#include <string_view>

#include "farmem/common/status.h"

namespace farmem::fabric {

StatusCode map_ucs_code(ucs_status_t status);
Status from_ucs(ucs_status_t status, std::string_view what);

}  // namespace farmem::fabric
