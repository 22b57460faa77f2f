#include "farmem/client/cluster.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>

#include "farmem/common/clock.h"

namespace farmem::client {

Result<std::unique_ptr<Cluster>> Cluster::connect(const ClusterConfig& config) {
  FARMEM_TRY(config.validate());
  uint64_t t0 = now_ns();
  std::unique_ptr<Cluster> c(new Cluster(config));
  if (c->config_.options.cluster_key.empty()) {
    FARMEM_TRY(c->config_.load_cluster_key());
  }
  fabric::ContextOptions co;
  co.tls = config.options.tls;
  co.net_devices = config.options.net_devices;
  auto ctx = fabric::Context::create(co);
  FARMEM_TRY(ctx);
  c->context_ = std::move(*ctx);
  for (const HostPort& hp : config.memnodes) {
    NodeInfo n;
    n.address = hp;
    for (const DownNode& d : config.options.down_nodes) {
      if (d.address.host == hp.host && d.address.port == hp.port) {
        n.down = true;
        n.node_id = d.node_id;
        if (c->down_.size() <= d.node_id) c->down_.resize(d.node_id + 1, false);
        c->down_[d.node_id] = true;
      }
    }
    c->nodes_.push_back(n);
  }
  auto first = c->thread_client();
  FARMEM_TRY(first);
  for (const NodeInfo& n : c->nodes_) c->sorted_ids_.push_back(n.node_id);
  std::sort(c->sorted_ids_.begin(), c->sorted_ids_.end());
  c->transports_ = (*first)->transports();
  c->connect_ms_ = static_cast<double>(now_ns() - t0) / 1e6;
  return c;
}

Cluster::~Cluster() {
  std::lock_guard<std::mutex> lock(mu_);
  clients_.clear();
  context_.reset();
}

Result<ThreadClient*> Cluster::thread_client() {
  std::unique_lock<std::mutex> lock(mu_);
  auto id = std::this_thread::get_id();
  auto it = clients_.find(id);
  if (it != clients_.end()) return it->second.get();
  std::unique_ptr<ThreadClient> tc(new ThreadClient(*this, next_index_++));
  // The first connection fills nodes_; later ones only read it (under mu_).
  Status s = tc->connect_all(nodes_);
  FARMEM_TRY(s);
  ThreadClient* raw = tc.get();
  clients_.emplace(id, std::move(tc));
  return raw;
}

void Cluster::release_thread_client() {
  std::unique_ptr<ThreadClient> victim;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = clients_.find(std::this_thread::get_id());
    if (it == clients_.end()) return;
    victim = std::move(it->second);
    clients_.erase(it);
  }
  victim.reset();  // outside the lock: closing endpoints progresses the worker
}

Status Cluster::down_status(uint16_t node) const {
  for (const NodeInfo& n : nodes_) {
    if (n.down && n.node_id == node) {
      return Unavailable(fmt::format("memory node {} ({}:{}) is down (named in down_nodes)", node,
                                     n.address.host, n.address.port));
    }
  }
  return Unavailable(fmt::format("memory node {} is down", node));
}

uint16_t Cluster::root_node(std::string_view name) const {
  uint64_t h = XXH3_64bits(name.data(), name.size());
  return sorted_ids_[h % sorted_ids_.size()];
}

}  // namespace farmem::client
