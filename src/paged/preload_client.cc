// The file-preload client (the memory nodes' paged service, docs/formats/paged.md).
#include "pager.h"

namespace farmem::paged {

runtime::Task<Status> preload_file(Manager::Impl*, const std::string&, bool, RemoteLayout*,
                                   uint64_t*) {
  co_return Unavailable("paged: file preload is not built yet");
}

}  // namespace farmem::paged
