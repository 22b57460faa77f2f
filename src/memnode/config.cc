#include "farmem/memnode/config.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <toml++/toml.h>

#include "farmem/common/units.h"
#include "farmem/fabric/door.h"

namespace farmem::memnode {
namespace {

Result<int64_t> get_int(const toml::table& t, const char* key, int64_t dflt, int64_t lo,
                        int64_t hi) {
  const toml::node* n = t.get(key);
  if (n == nullptr) return dflt;
  auto v = n->value_exact<int64_t>();
  if (!v) return InvalidArgument(fmt::format("memnode.{} must be an integer", key));
  if (*v < lo || *v > hi) {
    return InvalidArgument(fmt::format("memnode.{} = {} is out of range [{}, {}]", key, *v, lo, hi));
  }
  return *v;
}

Result<ServerConfig> parse(const toml::table& root) {
  ServerConfig c;
  for (auto&& [k, v] : root) {
    if (k.str() != "memnode") {
      return InvalidArgument(fmt::format("unknown config section '{}' (expected [memnode])", k.str()));
    }
  }
  const toml::table* t = root["memnode"].as_table();
  if (t == nullptr) return InvalidArgument("config has no [memnode] table");
  static const std::set<std::string> known = {
      "node_id",      "listen",       "port",          "capacity",         "workers",
      "idle_spin_us", "max_sessions", "door_timeout_ms", "cluster_key_file", "tls",
      "net_devices"};
  for (auto&& [k, v] : *t) {
    if (!known.count(std::string(k.str()))) {
      return InvalidArgument(fmt::format("unknown key memnode.{}", k.str()));
    }
  }
  auto node_id = get_int(*t, "node_id", 0, 0, 65535);
  if (!node_id.ok()) return node_id.status();
  c.node_id = static_cast<uint16_t>(*node_id);
  auto port = get_int(*t, "port", 7000, 0, 65535);
  if (!port.ok()) return port.status();
  c.port = static_cast<uint16_t>(*port);
  auto workers = get_int(*t, "workers", 1, 1, wire::kMaxServerWorkers);
  if (!workers.ok()) return workers.status();
  c.workers = static_cast<uint32_t>(*workers);
  auto spin = get_int(*t, "idle_spin_us", 200, 0, 10'000'000);
  if (!spin.ok()) return spin.status();
  c.idle_spin_us = static_cast<uint32_t>(*spin);
  auto max_sessions = get_int(*t, "max_sessions", 1024, 1, 65536);
  if (!max_sessions.ok()) return max_sessions.status();
  c.max_sessions = static_cast<uint32_t>(*max_sessions);
  auto door_timeout = get_int(*t, "door_timeout_ms", 2000, 10, 60'000);
  if (!door_timeout.ok()) return door_timeout.status();
  c.door_timeout_ms = static_cast<uint32_t>(*door_timeout);
  if (const toml::node* n = t->get("listen")) {
    auto s = n->value_exact<std::string>();
    if (!s) return InvalidArgument("memnode.listen must be a string");
    c.listen = *s;
  }
  if (const toml::node* n = t->get("cluster_key_file")) {
    auto s = n->value_exact<std::string>();
    if (!s) return InvalidArgument("memnode.cluster_key_file must be a string");
    c.cluster_key_file = *s;
  }
  if (const toml::node* n = t->get("tls")) {
    auto s = n->value_exact<std::string>();
    if (!s) return InvalidArgument("memnode.tls must be a string");
    c.tls = *s;
  }
  if (const toml::node* n = t->get("net_devices")) {
    auto s = n->value_exact<std::string>();
    if (!s) return InvalidArgument("memnode.net_devices must be a string");
    c.net_devices = *s;
  }
  if (const toml::node* n = t->get("capacity")) {
    if (auto i = n->value_exact<int64_t>()) {
      if (*i <= 0) return InvalidArgument("memnode.capacity must be positive");
      c.capacity_bytes = static_cast<uint64_t>(*i);
    } else if (auto s = n->value_exact<std::string>()) {
      auto b = parse_bytes(*s);
      if (!b.ok()) return InvalidArgument(fmt::format("memnode.capacity: {}", b.status().message()));
      c.capacity_bytes = *b;
    } else {
      return InvalidArgument("memnode.capacity must be a size like \"1GiB\" or an integer");
    }
  }
  FARMEM_RETURN_IF_ERROR(c.validate());
  return c;
}

}  // namespace

Status ServerConfig::validate() const {
  if (capacity_bytes < (64ull << 10)) {
    return InvalidArgument(fmt::format("capacity {} bytes is below the 64 KiB minimum", capacity_bytes));
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
    return InvalidArgument(fmt::format("the cluster key is longer than {} bytes",
                                       wire::kMaxClusterKeyBytes));
  }
  cluster_key = std::move(key);
  return OkStatus();
}

Result<ServerConfig> ServerConfig::from_toml_string(const std::string& text) {
  try {
    toml::table root = toml::parse(text);
    return parse(root);
  } catch (const toml::parse_error& e) {
    return InvalidArgument(fmt::format("config is not valid TOML: {} (line {})", e.description(),
                                       e.source().begin.line));
  }
}

Result<ServerConfig> ServerConfig::from_toml_file(const std::string& path) {
  try {
    toml::table root = toml::parse_file(path);
    return parse(root);
  } catch (const toml::parse_error& e) {
    return InvalidArgument(fmt::format("{}: {} (line {})", path, e.description(),
                                       e.source().begin.line));
  }
}

}  // namespace farmem::memnode
