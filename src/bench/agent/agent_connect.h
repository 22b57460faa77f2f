// What `farmem bench agent` and `farmem agent-stats` share (farmem/bench/agent.h): reaching an
// agent, and how a failed step is reported.
// Thread safety: set-up on the calling thread.
#pragma once

#include <memory>
#include <string>

#include "farmem/client/cluster.h"
#include "farmem/common/result.h"

namespace farmem::bench {

// Prints "farmem: <what>: <status>" to stderr; 1.
int fail(const std::string& what, const Status& s);

// A cluster of one node: the agent at `address`, over `tls` ("" = the default transports),
// with the cluster key of the environment.
Result<std::unique_ptr<client::Cluster>> connect_agent(const std::string& address,
                                                       const std::string& tls);

}  // namespace farmem::bench
