// The far backend of `farmem graph run` (graph_far.cc): the cluster connection and paged
// Manager that a far GraphMemory lives in, kept alive for the run.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>

#include "farmem/graph/memory.h"
#include "graph_cmd.h"

namespace farmem::apps {

class FarGraphSession {
 public:
  virtual ~FarGraphSession() = default;
  // Bytes and messages per path ({"host_to_memnode": {"bytes":..,"messages":..}, ...}).
  virtual nlohmann::ordered_json traffic_json() const = 0;
};

// Opens f.graph on paged far memory with a local budget of budget_bytes (0: unlimited).
Result<std::unique_ptr<graph::GraphMemory>> open_far_graph(const GraphFlags& f,
                                                           uint64_t budget_bytes,
                                                           std::unique_ptr<FarGraphSession>* s);

}  // namespace farmem::apps
