// Resolving the cluster a command runs against: the memory nodes named by ClusterOptions
// (servers or a config file, with the nodes known to be down), or, with neither, a local memory
// node started for the run (harness/local_node.h) and kept alive by the caller.
// Thread safety: none needed (set-up, the calling thread).
#pragma once

#include <memory>

#include "farmem/bench/harness/local_node.h"
#include "farmem/bench/harness/options.h"
#include "farmem/client/cluster_config.h"
#include "farmem/common/result.h"

namespace farmem::bench {

// The cluster named by options.servers / options.config; with neither, starts a local memory
// node of options.local_capacity_bytes (kept alive by *local) and returns a config pointing at
// it. kInvalidArgument for both at once, or for down nodes without a cluster.
Result<client::ClusterConfig> resolve_cluster(const ClusterOptions& options,
                                              std::unique_ptr<LocalNode>* local);

}  // namespace farmem::bench
