#include "farmem/bench/harness/cluster.h"

#include <utility>

namespace farmem::bench {

Result<client::ClusterConfig> resolve_cluster(const ClusterOptions& o,
                                              std::unique_ptr<LocalNode>* local) {
  if (!o.servers.empty() && !o.config.empty()) {
    return InvalidArgument("give either --servers or --config, not both");
  }
  if (!o.config.empty() || !o.servers.empty()) {
    auto config = !o.config.empty() ? client::ClusterConfig::from_toml_file(o.config)
                                    : client::ClusterConfig::from_server_list(o.servers);
    if (!config.ok() || o.down_nodes.empty()) return config;
    FARMEM_ASSIGN_OR_RETURN(config->options.down_nodes, client::parse_down_nodes(o.down_nodes));
    FARMEM_TRY(config->validate());
    return config;
  }
  if (!o.down_nodes.empty()) return InvalidArgument("--down-nodes needs --servers or --config");
  FARMEM_ASSIGN_OR_RETURN(*local, LocalNode::start(o.local_capacity_bytes, 1, o.local_idle_spin_us,
                                                   o.local_preload_dir, o.local_durability));
  return client::ClusterConfig::from_server_list((*local)->address());
}

}  // namespace farmem::bench
