#include "graph_far.h"

namespace farmem::apps {

Result<std::unique_ptr<graph::GraphMemory>> open_far_graph(const GraphFlags&, uint64_t,
                                                           std::unique_ptr<FarGraphSession>*) {
  return Unavailable("--backend far is not available in this build (no paged regions yet)");
}

}  // namespace farmem::apps
