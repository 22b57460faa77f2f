#include "agent_connect.h"

#include <cstdio>

namespace farmem::bench {

int fail(const std::string& what, const Status& s) {
  std::fprintf(stderr, "farmem: %s: %s\n", what.c_str(), s.to_string().c_str());
  return 1;
}

Result<std::unique_ptr<client::Cluster>> connect_agent(const std::string& address,
                                                       const std::string& tls) {
  auto cfg = client::ClusterConfig::from_server_list(address);
  FARMEM_TRY(cfg);
  if (!tls.empty()) cfg->options.tls = tls;
  FARMEM_TRY(cfg->load_cluster_key());
  return client::Cluster::connect(*cfg);
}

}  // namespace farmem::bench
