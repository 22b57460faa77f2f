#include "farmem/memnode/config.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>

#include "farmem/common/toml_config.h"
#include "farmem/fabric/door.h"

namespace farmem::memnode {
namespace {

using toml_config::get_int;

Result<ServerConfig> parse(const toml::table& root, const std::set<std::string>& services) {
  ServerConfig c;
  for (auto&& [k, v] : root) {
    if (k.str() != "memnode" && services.count(std::string(k.str())) == 0) {
      return InvalidArgument(
          fmt::format("unknown config section '{}' (expected [memnode])", k.str()));
    }
  }
  const toml::table* t = root["memnode"].as_table();
  if (t == nullptr) return InvalidArgument("config has no [memnode] table");
  static const std::set<std::string> known = {"node_id",      "listen",          "port",
                                              "capacity",     "workers",         "idle_spin_us",
                                              "max_sessions", "door_timeout_ms", "cluster_key_file",
                                              "tls",          "net_devices",     "preload_dir",
                                              "data_dir",     "durability",      "checkpoint_log"};
  FARMEM_TRY(toml_config::check_keys(*t, "memnode", known));
  auto node_id = get_int(*t, "memnode", "node_id", 0, 0, 65535);
  FARMEM_TRY(node_id);
  c.node_id = static_cast<uint16_t>(*node_id);
  auto port = get_int(*t, "memnode", "port", 7000, 0, 65535);
  FARMEM_TRY(port);
  c.port = static_cast<uint16_t>(*port);
  auto workers = get_int(*t, "memnode", "workers", 1, 1, wire::kMaxServerWorkers);
  FARMEM_TRY(workers);
  c.workers = static_cast<uint32_t>(*workers);
  auto spin = get_int(*t, "memnode", "idle_spin_us", 200, 0, 10'000'000);
  FARMEM_TRY(spin);
  c.idle_spin_us = static_cast<uint32_t>(*spin);
  auto max_sessions = get_int(*t, "memnode", "max_sessions", 1024, 1, 65536);
  FARMEM_TRY(max_sessions);
  c.max_sessions = static_cast<uint32_t>(*max_sessions);
  auto door_timeout = get_int(*t, "memnode", "door_timeout_ms", 2000, 10, 60'000);
  FARMEM_TRY(door_timeout);
  c.door_timeout_ms = static_cast<uint32_t>(*door_timeout);
  FARMEM_TRY(toml_config::get_string(*t, "memnode", "listen", &c.listen));
  FARMEM_TRY(toml_config::get_string(*t, "memnode", "cluster_key_file", &c.cluster_key_file));
  FARMEM_TRY(toml_config::get_string(*t, "memnode", "tls", &c.tls));
  FARMEM_TRY(toml_config::get_string(*t, "memnode", "net_devices", &c.net_devices));
  FARMEM_TRY(toml_config::get_string(*t, "memnode", "preload_dir", &c.preload_dir));
  toml_config::BytesRules capacity_rules;
  capacity_rules.expected = "a size like \"1GiB\" or an integer";
  capacity_rules.positive_integer = true;
  capacity_rules.prefix_parse_errors = true;
  FARMEM_TRY(toml_config::get_bytes(*t, "memnode", "capacity", capacity_rules, &c.capacity_bytes));
  FARMEM_TRY(toml_config::get_bytes(*t, "memnode", "checkpoint_log", capacity_rules,
                                    &c.checkpoint_log_bytes));
  std::string data_dir;
  std::string durability;
  FARMEM_TRY(toml_config::get_string(*t, "memnode", "data_dir", &data_dir));
  FARMEM_TRY(toml_config::get_string(*t, "memnode", "durability", &durability));
  if (!data_dir.empty() || !durability.empty()) FARMEM_TRY(c.set_data_dir(data_dir, durability));
  FARMEM_TRY(c.validate());
  return c;
}

}  // namespace

Status ServerConfig::set_data_dir(const std::string& dir, const std::string& level) {
  data_dir = dir;
  if (level.empty()) {
    durability = dir.empty() ? storage::Durability::kVolatile : storage::Durability::kPower;
    return OkStatus();
  }
  FARMEM_ASSIGN_OR_RETURN(durability, storage::parse_durability(level));
  return OkStatus();
}

Status ServerConfig::validate() const {
  if (data_dir.empty() != (durability == storage::Durability::kVolatile)) {
    return InvalidArgument(
        data_dir.empty()
            ? fmt::format("durability '{}' needs a data directory (data_dir, --data-dir)",
                          storage::durability_name(durability))
            : std::string("a node with a data directory is durable: choose durability "
                          "'process' or 'power'"));
  }
  if (!region_file.empty() && !data_dir.empty()) {
    return InvalidArgument(
        "a region file (--region-file, for measuring) is not a durability mode: a durable node "
        "keeps its region in memory UCX allocates");
  }
  if (checkpoint_log_bytes < (64ull << 10)) {
    return InvalidArgument(
        fmt::format("checkpoint_log {} bytes is below the 64 KiB minimum", checkpoint_log_bytes));
  }
  if (!preload_dir.empty() && preload_dir[0] != '/') {
    return InvalidArgument("preload_dir must be an absolute path");
  }
  if (capacity_bytes < (64ull << 10)) {
    return InvalidArgument(
        fmt::format("capacity {} bytes is below the 64 KiB minimum", capacity_bytes));
  }
  if (capacity_bytes > (1ull << 48)) {
    return InvalidArgument("capacity exceeds 256 TiB (48-bit offsets)");
  }
  if (workers < 1 || workers > wire::kMaxServerWorkers) {
    return InvalidArgument(fmt::format("workers must be 1..{}", wire::kMaxServerWorkers));
  }
  if (max_sessions < 1 || max_sessions > 65536) {
    return InvalidArgument("max_sessions must be 1..65536");
  }
  if (door_timeout_ms < 10 || door_timeout_ms > 60'000) {
    return InvalidArgument("door_timeout_ms must be 10..60000");
  }
  if (listen.empty()) return InvalidArgument("listen address is empty");
  return OkStatus();
}

Status ServerConfig::load_cluster_key() {
  std::string key;
  if (!cluster_key_file.empty()) {
    std::ifstream f(cluster_key_file, std::ios::binary);
    if (!f) {
      return InvalidArgument(fmt::format("cannot read cluster key file '{}'", cluster_key_file));
    }
    key.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  } else if (const char* env = std::getenv("FARMEM_CLUSTER_KEY")) {
    key = env;
  } else {
    cluster_key.clear();
    return OkStatus();
  }
  while (!key.empty() && (key.back() == '\n' || key.back() == '\r')) key.pop_back();
  if (key.empty()) return InvalidArgument("the cluster key is empty");
  if (key.size() > wire::kMaxClusterKeyBytes) {
    return InvalidArgument(
        fmt::format("the cluster key is longer than {} bytes", wire::kMaxClusterKeyBytes));
  }
  cluster_key = std::move(key);
  return OkStatus();
}

Result<ServerConfig> ServerConfig::from_toml_string(const std::string& text,
                                                    const std::set<std::string>& services) {
  auto root = toml_config::parse_string(text);
  FARMEM_TRY(root);
  return parse(*root, services);
}

Result<ServerConfig> ServerConfig::from_toml_file(const std::string& path,
                                                  const std::set<std::string>& services) {
  auto root = toml_config::parse_file(path);
  FARMEM_TRY(root);
  return parse(*root, services);
}

}  // namespace farmem::memnode
