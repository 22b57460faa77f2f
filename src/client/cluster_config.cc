#include "farmem/client/cluster_config.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>

#include "farmem/common/toml_config.h"
#include "farmem/fabric/door.h"

namespace farmem::client {
namespace {

bool same_address(const HostPort& a, const HostPort& b) {
  return a.host == b.host && a.port == b.port;
}

#define FARMEM_ASSIGN_INT(field, key, dflt, lo, hi)                  \
  do {                                                               \
    auto _v = toml_config::get_int(*t, "client", key, dflt, lo, hi); \
    if (!_v.ok()) return _v.status();                                \
    c.options.field = static_cast<decltype(c.options.field)>(*_v);   \
  } while (0)

Result<ClusterConfig> parse(const toml::table& root) {
  ClusterConfig c;
  for (auto&& [k, v] : root) {
    if (k.str() != "memnode" && k.str() != "client") {
      return InvalidArgument(
          fmt::format("unknown config section '{}' (expected [[memnode]] and [client])", k.str()));
    }
  }
  const toml::array* nodes = root["memnode"].as_array();
  if (nodes == nullptr) return InvalidArgument("config lists no [[memnode]] entries");
  for (const toml::node& n : *nodes) {
    const toml::table* t = n.as_table();
    if (t == nullptr) return InvalidArgument("each [[memnode]] must be a table");
    FARMEM_TRY(toml_config::check_keys(*t, "memnode", {"address"}));
    auto addr = (*t)["address"].value_exact<std::string>();
    if (!addr) return InvalidArgument("[[memnode]] needs address = \"host:port\"");
    auto hp = parse_host_port(*addr);
    FARMEM_TRY(hp);
    c.memnodes.push_back(*hp);
  }
  if (const toml::table* t = root["client"].as_table()) {
    static const std::set<std::string> known = {"op_timeout_ms",    "connect_timeout_ms",
                                                "max_coroutines",   "max_inflight",
                                                "throttle",         "throttle_cap",
                                                "backoff",          "chunk_bytes",
                                                "direct_access",    "tls",
                                                "net_devices",      "one_sided",
                                                "cluster_key_file", "down_nodes",
                                                "served_in_flight"};
    FARMEM_TRY(toml_config::check_keys(*t, "client", known));
    FARMEM_ASSIGN_INT(op_timeout_ms, "op_timeout_ms", 5000, 1, 3'600'000);
    FARMEM_ASSIGN_INT(connect_timeout_ms, "connect_timeout_ms", 5000, 1, 3'600'000);
    FARMEM_ASSIGN_INT(max_coroutines, "max_coroutines", 4096, 1, 1'000'000);
    FARMEM_ASSIGN_INT(max_inflight, "max_inflight", 16384, 16, 1'000'000);
    FARMEM_ASSIGN_INT(throttle_cap, "throttle_cap", 16, 1, 1'000'000);
    FARMEM_ASSIGN_INT(served_in_flight, "served_in_flight", 8, 1, 256);
    if (t->contains("throttle")) {
      std::string mode;
      FARMEM_TRY(toml_config::get_string(*t, "client", "throttle", &mode));
      auto m = runtime::parse_throttle_mode(mode);
      FARMEM_TRY(m);
      c.options.throttle = *m;
    }
    FARMEM_TRY(toml_config::get_bool(*t, "client", "backoff", &c.options.backoff));
    FARMEM_TRY(toml_config::get_bool(*t, "client", "direct_access", &c.options.direct_access));
    if (const toml::node* n = t->get("one_sided")) {
      auto s = n->value_exact<std::string>();
      auto m = s ? parse_one_sided(*s) : Result<OneSidedPath>(InvalidArgument(""));
      if (!m.ok())
        return InvalidArgument("client.one_sided must be \"auto\", \"ucx\" or \"served\"");
      c.options.one_sided = *m;
    }
    FARMEM_TRY(
        toml_config::get_string(*t, "client", "cluster_key_file", &c.options.cluster_key_file));
    FARMEM_TRY(toml_config::get_string(*t, "client", "tls", &c.options.tls));
    FARMEM_TRY(toml_config::get_string(*t, "client", "net_devices", &c.options.net_devices));
    FARMEM_TRY(toml_config::get_bytes(*t, "client", "chunk_bytes", {}, &c.options.chunk_bytes));
    std::string down;
    FARMEM_TRY(toml_config::get_string(*t, "client", "down_nodes", &down));
    auto parsed = parse_down_nodes(down);
    FARMEM_TRY(parsed);
    c.options.down_nodes = std::move(*parsed);
  }
  FARMEM_TRY(c.validate());
  return c;
}

}  // namespace

Result<OneSidedPath> parse_one_sided(std::string_view s) {
  if (s == "auto") return OneSidedPath::kAuto;
  if (s == "ucx") return OneSidedPath::kUcx;
  if (s == "served") return OneSidedPath::kServed;
  return InvalidArgument(fmt::format("one-sided path '{}' is not auto, ucx or served", s));
}

Result<std::vector<DownNode>> parse_down_nodes(std::string_view text) {
  std::vector<DownNode> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const size_t eq = item.rfind('=');
    if (eq == std::string_view::npos) {
      return InvalidArgument(fmt::format("down node '{}' is not host:port=ID", item));
    }
    auto hp = parse_host_port(std::string(item.substr(0, eq)));
    FARMEM_TRY(hp);
    const std::string id_text(item.substr(eq + 1));
    char* end = nullptr;
    const unsigned long id = std::strtoul(id_text.c_str(), &end, 10);
    if (id_text.empty() || *end != '\0' || id > UINT16_MAX) {
      return InvalidArgument(fmt::format("down node '{}': the id must be 0..65535", item));
    }
    out.push_back(DownNode{*hp, static_cast<uint16_t>(id)});
  }
  return out;
}

Status ClusterConfig::load_cluster_key() {
  std::string key;
  if (!options.cluster_key_file.empty()) {
    std::ifstream f(options.cluster_key_file, std::ios::binary);
    if (!f) {
      return InvalidArgument(
          fmt::format("cannot read cluster key file '{}'", options.cluster_key_file));
    }
    key.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  } else if (const char* env = std::getenv("FARMEM_CLUSTER_KEY")) {
    key = env;
  } else {
    return OkStatus();
  }
  while (!key.empty() && (key.back() == '\n' || key.back() == '\r')) key.pop_back();
  if (key.empty()) return InvalidArgument("the cluster key is empty");
  if (key.size() > wire::kMaxClusterKeyBytes) {
    return InvalidArgument(
        fmt::format("the cluster key is longer than {} bytes", wire::kMaxClusterKeyBytes));
  }
  options.cluster_key = std::move(key);
  return OkStatus();
}

Status ClusterConfig::validate() const {
  if (memnodes.empty()) return InvalidArgument("a cluster needs at least one memory node");
  for (size_t i = 0; i < options.down_nodes.size(); ++i) {
    const DownNode& d = options.down_nodes[i];
    if (std::none_of(memnodes.begin(), memnodes.end(),
                     [&](const HostPort& m) { return same_address(m, d.address); })) {
      return InvalidArgument(fmt::format("down node {}:{} is not one of the listed memory nodes",
                                         d.address.host, d.address.port));
    }
    for (size_t j = 0; j < i; ++j) {
      if (same_address(options.down_nodes[j].address, d.address) ||
          options.down_nodes[j].node_id == d.node_id) {
        return InvalidArgument(fmt::format("down node {}:{} (id {}) is named twice", d.address.host,
                                           d.address.port, d.node_id));
      }
    }
  }
  if (options.down_nodes.size() >= memnodes.size()) {
    return InvalidArgument("every listed memory node is down");
  }
  if (options.chunk_bytes < 4096 || options.chunk_bytes > (1ull << 30)) {
    return InvalidArgument("client.chunk_bytes must be 4KiB..1GiB");
  }
  return OkStatus();
}

Result<ClusterConfig> ClusterConfig::from_toml_string(const std::string& text) {
  auto root = toml_config::parse_string(text);
  FARMEM_TRY(root);
  return parse(*root);
}

Result<ClusterConfig> ClusterConfig::from_toml_file(const std::string& path) {
  auto root = toml_config::parse_file(path);
  FARMEM_TRY(root);
  return parse(*root);
}

Result<ClusterConfig> ClusterConfig::from_server_list(const std::string& list) {
  ClusterConfig c;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string item =
        list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front())))
      item.erase(0, 1);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back()))) item.pop_back();
    if (!item.empty()) {
      auto hp = parse_host_port(item);
      FARMEM_TRY(hp);
      c.memnodes.push_back(*hp);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  FARMEM_TRY(c.validate());
  return c;
}

}  // namespace farmem::client
