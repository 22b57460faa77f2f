// farmem-ado: the Active Data Object process of one pool. Started only by a memory node's kv
// service (src/kv/service/ado_process), never by hand; docs/formats/ado.md "The process".
//
// Inputs, never on the command line:
//   fd 3                     the ADO channel (SOCK_SEQPACKET) to the pool's worker
//   FARMEM_ADO_NODE          host:port of the memory node's door
//   FARMEM_CLUSTER_KEY       the node's cluster key (removed from the environment once read)
//   FARMEM_ADO_PARENT_PID    the node's pid: the process exits if its parent is gone
//   FARMEM_ADO_TLS           UCX transports for the connection (default "sm,tcp")
// The process connects to its node as an ordinary client so that UCX maps the node's exported
// region here (fabric::Endpoint::direct_base()); plugins then work on the pool's values in
// place. Without that mapping (the node's UCX context has no shared memory) the launch is
// answered with kUnavailable and the process exits. It dies with its parent (PR_SET_PDEATHSIG)
// and exits when the channel closes or the node fails.
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "farmem/client/cluster.h"
#include "farmem/common/log.h"
#include "farmem/common/status.h"
#include "kv/ado/host.h"

namespace {

using farmem::Status;
namespace ado = farmem::kv::ado;

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string(fallback);
}

struct Connection {
  std::unique_ptr<farmem::client::Cluster> cluster;
  farmem::client::ThreadClient* client = nullptr;
  uint16_t node = 0;
  uint8_t* region = nullptr;
  uint64_t region_bytes = 0;
};

// Connects to the node and finds UCX's mapping of its region.
Status connect(Connection* c) {
  std::string node = env_or("FARMEM_ADO_NODE", "");
  if (node.empty()) return farmem::InvalidArgument("FARMEM_ADO_NODE is not set");
  FARMEM_ASSIGN_OR_RETURN(farmem::client::ClusterConfig config,
                          farmem::client::ClusterConfig::from_server_list(node));
  config.options.tls = env_or("FARMEM_ADO_TLS", "sm,tcp");
  config.options.direct_access = true;
  FARMEM_TRY(config.load_cluster_key());
  unsetenv("FARMEM_CLUSTER_KEY");
  FARMEM_ASSIGN_OR_RETURN(c->cluster, farmem::client::Cluster::connect(config));
  FARMEM_ASSIGN_OR_RETURN(c->client, c->cluster->thread_client());
  c->node = c->cluster->nodes().front().node_id;
  farmem::fabric::Endpoint* ep = c->client->endpoint(c->node);
  if (ep == nullptr || ep->direct_base() == nullptr) {
    return farmem::Unavailable(fmt::format(
        "UCX does not map the memory node's region into the ADO process (transports: {}); an "
        "ADO needs the node's UCX context to include shared memory (posix or sysv): start the "
        "node with its default transports or with tls including sm",
        c->client->transports()));
  }
  c->region = ep->direct_base();
  c->region_bytes = ep->region_bytes();
  return farmem::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  farmem::log::init_from_env();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  std::string parent = env_or("FARMEM_ADO_PARENT_PID", "");
  if (!parent.empty() && std::to_string(getppid()) != parent) return 1;  // the node is gone
  struct stat st {};
  if (argc != 1 || fstat(ado::kChannelFd, &st) != 0 || !S_ISSOCK(st.st_mode)) {
    std::fprintf(stderr,
                 "farmem-ado: started by a memory node only (expects the ADO channel on fd %d)\n",
                 ado::kChannelFd);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  Connection conn;
  Status setup = connect(&conn);
  ado::HostOptions options;
  options.region = conn.region;
  options.region_bytes = conn.region_bytes;
  options.node_id = conn.node;
  if (conn.client != nullptr) {
    farmem::client::ThreadClient* c = conn.client;
    uint16_t node = conn.node;
    options.idle = [c, node]() {
      c->scheduler().poll_once();
      c->check_liveness(farmem::now_ns());
      return c->node_status(node);
    };
  }
  int rc = 0;
  {
    ado::AdoHost host(std::move(options));
    rc = host.run(setup);
  }
  if (conn.cluster != nullptr) {
    conn.cluster->release_thread_client();
    conn.cluster.reset();
  }
  return rc;
}
