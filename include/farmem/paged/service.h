// The memory node's paged service (opcodes 384..399, paged/wire.h): loads files from the
// node's preload_dir into its region for paged regions' allocate_from_file.
// Thread safety: handlers run on the node's worker threads (memnode/service.h contract); each
// request opens, reads and closes the file itself (bounded: kMaxLoadBytes).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "farmem/common/result.h"
#include "farmem/memnode/service.h"

namespace farmem::paged {

std::shared_ptr<memnode::Service> make_paged_service();

// Opens `name` for reading beneath `dir` (the checks of paged/wire.h); the caller closes it.
Result<int> open_preload_file(const std::string& dir, std::string_view name);

// One request (for tests without a server): `opcode` in the paged range, the reply payload in
// *out.
Status handle_paged_request(const std::string& preload_dir, uint8_t* region, uint64_t region_bytes,
                            uint16_t opcode, const uint8_t* payload, size_t bytes,
                            std::string* out);

}  // namespace farmem::paged
