#include "farmem/memnode/server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "door.h"
#include "farmem/common/clock.h"
#include "farmem/common/log.h"
#include "farmem/memnode/node_journal.h"
#include "farmem/storage/sync_only_disk.h"
#include "server_worker.h"

namespace farmem::memnode {

Status check_capacity(uint64_t capacity_bytes) {
  std::ifstream f("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit) {
    if (key != "MemAvailable:") continue;
    const uint64_t available = kb * 1024;
    if (capacity_bytes > available) {
      return InvalidArgument(
          fmt::format("capacity of {} bytes exceeds the memory this machine can back now ({} bytes "
                      "available); choose a smaller capacity",
                      capacity_bytes, available));
    }
    return OkStatus();
  }
  return OkStatus();  // no /proc/meminfo: nothing to compare with
}

std::string net_device_for(const std::string& listen) {
  if (listen == "0.0.0.0" || listen == "*") return "";
  in_addr want{};
  if (inet_pton(AF_INET, listen.c_str(), &want) != 1) return "";
  if ((ntohl(want.s_addr) >> 24) == 127) return "lo";
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string name;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if (reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr == want.s_addr) {
      name = i->ifa_name;
      break;
    }
  }
  freeifaddrs(list);
  return name;
}

Result<std::unique_ptr<Server>> Server::create(const ServerConfig& config,
                                               std::vector<std::shared_ptr<Service>> services) {
  FARMEM_TRY(config.validate());
  FARMEM_TRY(check_capacity(config.capacity_bytes));
  std::unique_ptr<Server> s(new Server());
  FARMEM_TRY(s->services_.add(make_core_service()));
  for (auto& svc : services) FARMEM_TRY(s->services_.add(std::move(svc)));
  s->stop_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (s->stop_fd_ < 0) return Internal(fmt::format("eventfd: {}", std::strerror(errno)));

  fabric::ContextOptions co;
  co.tls = config.tls;
  co.net_devices = config.net_devices;
  // UCX's own TCP interfaces listen where the door does, unless told otherwise.
  if (co.net_devices.empty() && std::getenv("UCX_NET_DEVICES") == nullptr) {
    co.net_devices = net_device_for(config.listen);
  }
  auto ctx = fabric::Context::create(co);
  FARMEM_TRY(ctx);
  s->context_ = std::move(*ctx);
  auto region =
      config.region_file.empty()
          ? fabric::MemoryRegion::allocate(*s->context_, config.capacity_bytes)
          : fabric::MemoryRegion::map_file(*s->context_, config.region_file, config.capacity_bytes);
  FARMEM_TRY(region);
  s->region_ = std::move(*region);

  s->node_ = std::make_unique<NodeState>(config, kRegionHeaderBytes);
  NodeState& node = *s->node_;
  node.region_base = s->region_->base();
  node.region_bytes = s->region_->bytes();
  node.packed_rkey.assign(s->region_->packed_rkey().begin(), s->region_->packed_rkey().end());
  node.worker_count = config.workers;
  node.start_ns = now_ns();
  for (const auto& svc : s->services_.services()) {
    for (const Procedure& p : svc->procedures()) FARMEM_TRY(node.procedures.add(p));
  }
  if (!config.data_dir.empty()) FARMEM_TRY(s->recover());
  RegionHeader hdr{};
  hdr.magic = kRegionMagic;
  hdr.version = wire::kProtocolVersion;
  hdr.node_id = config.node_id;
  hdr.capacity_bytes = config.capacity_bytes;
  std::memcpy(node.region_base, &hdr, sizeof(hdr));

  std::vector<ServerWorker*> raw;
  for (uint32_t i = 0; i < config.workers; ++i) {
    auto worker = std::make_unique<ServerWorker>(node, s->services_, i, s->stop_fd_);
    Status st = worker->init(*s->context_);
    if (!st.ok()) return Status(st.code(), fmt::format("worker {}: {}", i, st.message()));
    raw.push_back(worker.get());
    s->workers_.push_back(std::move(worker));
  }
  for (auto& worker : s->workers_) worker->set_peers(raw);
  auto door = Door::open(node, raw, s->stop_fd_);
  FARMEM_TRY(door);
  s->door_ = std::move(*door);
  node.door_port.store(s->door_->port());
  return s;
}

Server::~Server() {
  door_.reset();
  workers_.clear();
  journal_.reset();  // its threads stop before the region and the tables go
  node_journal_.reset();
  region_.reset();
  context_.reset();
  if (stop_fd_ >= 0) close(stop_fd_);
}

uint16_t Server::port() const { return door_->port(); }

Status Server::recover() {
  NodeState& node = *node_;
  const ServerConfig& config = node.config;
  FARMEM_ASSIGN_OR_RETURN(storage::DataDir dir, storage::DataDir::open(config.data_dir));
  data_dir_ = std::make_unique<storage::DataDir>(std::move(dir));
  node_journal_ = std::make_unique<NodeJournal>(node);
  storage::JournalOptions options;
  options.durability = config.durability;
  options.checkpoint_log_bytes = config.checkpoint_log_bytes;
  if (config.simulate_power_loss) options.disk = &storage::sync_only_disk();
  if (!config.sync_trace.empty()) FARMEM_TRY(storage::start_sync_trace(config.sync_trace));
  storage::Journal::Report r;
  FARMEM_ASSIGN_OR_RETURN(
      journal_, storage::Journal::open(*data_dir_, {node.region_base, node.region_bytes}, options,
                                       *node_journal_, &r));
  node.journal = journal_.get();
  node.recovery_records = r.records;
  node.recovery_dropped_records = r.dropped_records;
  node.recovery_us = r.elapsed_us;
  {
    // No session survives a restart: what sessions owned goes back to the heap.
    std::lock_guard<std::mutex> lock(node.mu);
    const uint64_t boot = node.boot + 1;
    if (boot >= (uint64_t{1} << (48 - NodeState::kBootShift))) {
      return ResourceExhausted(fmt::format("{} has seen {} starts, the most session ids allow",
                                           config.data_dir, node.boot));
    }
    FARMEM_TRY(node.commit_locked(NodeRecordKind::kRestart, boot));
    log::info(
        "node {}: {} data in {} ({}), start {}: checkpoint {}, {} records replayed ({} ranges), {} "
        "image "
        "bytes, {} records ({} bytes) dropped from a torn tail, {} objects, {} roots, {} "
        "allocations, log {} bytes, {:.1f} ms",
        config.node_id, r.generation == 0 && r.records == 0 ? "new" : "recovered", config.data_dir,
        storage::durability_name(config.durability), boot, r.generation, r.records, r.ranges,
        r.image_bytes, r.dropped_records, r.dropped_bytes, node.objects.size(), node.roots.size(),
        node.heap.live_allocations(), r.log_bytes, r.elapsed_us / 1000.0);
  }
  journal_->start();
  return OkStatus();
}

void Server::stop() {
  if (node_ != nullptr) node_->stopping.store(true);
  uint64_t one = 1;
  ssize_t r = write(stop_fd_, &one, sizeof(one));
  (void)r;
}

Status Server::run() {
  std::vector<std::thread> threads;
  threads.emplace_back([this] { door_->run(); });
  for (size_t i = 1; i < workers_.size(); ++i) {
    threads.emplace_back([this, i] { workers_[i]->run(); });
  }
  workers_[0]->run();
  for (auto& t : threads) t.join();
  return OkStatus();
}

}  // namespace farmem::memnode
