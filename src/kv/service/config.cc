// KvServiceOptions from the [kv] table of a node's TOML file.
#include <fmt/format.h>
#include <toml++/toml.h>

#include "farmem/common/toml_config.h"
#include "farmem/kv/service.h"

namespace farmem::kv {

namespace {

Result<KvServiceOptions> parse(const toml::table& root) {
  KvServiceOptions o;
  const toml::table* t = root["kv"].as_table();
  if (t == nullptr) {
    if (root.contains("kv")) return InvalidArgument("config: [kv] must be a table");
    return o;
  }
  static const std::set<std::string> known = {"record_grace_ms", "ado_plugin_dir", "ado_binary",
                                              "ado_timeout_ms", "ado_launch_retry_ms"};
  FARMEM_TRY(toml_config::check_keys(*t, "kv", known));
  auto grace = toml_config::get_int(*t, "kv", "record_grace_ms", 1000, 0, 3'600'000);
  FARMEM_TRY(grace);
  o.record_grace_ms = static_cast<uint32_t>(*grace);
  auto timeout = toml_config::get_int(*t, "kv", "ado_timeout_ms", 5000, 1, 3'600'000);
  FARMEM_TRY(timeout);
  o.ado_timeout_ms = static_cast<uint32_t>(*timeout);
  auto retry = toml_config::get_int(*t, "kv", "ado_launch_retry_ms", 1000, 0, 3'600'000);
  FARMEM_TRY(retry);
  o.ado_launch_retry_ms = static_cast<uint32_t>(*retry);
  FARMEM_TRY(toml_config::get_string(*t, "kv", "ado_plugin_dir", &o.ado_plugin_dir));
  FARMEM_TRY(toml_config::get_string(*t, "kv", "ado_binary", &o.ado_binary));
  FARMEM_TRY(o.validate());
  return o;
}

}  // namespace

Status KvServiceOptions::validate() const {
  if (record_grace_ms > 3'600'000) return InvalidArgument("kv.record_grace_ms must be 0..3600000");
  if (ado_timeout_ms < 1 || ado_timeout_ms > 3'600'000) {
    return InvalidArgument("kv.ado_timeout_ms must be 1..3600000");
  }
  if (ado_launch_retry_ms > 3'600'000) {
    return InvalidArgument("kv.ado_launch_retry_ms must be 0..3600000");
  }
  return OkStatus();
}

Result<KvServiceOptions> KvServiceOptions::from_toml_string(const std::string& text) {
  auto root = toml_config::parse_string(text);
  FARMEM_TRY(root);
  return parse(*root);
}

Result<KvServiceOptions> KvServiceOptions::from_toml_file(const std::string& path) {
  auto root = toml_config::parse_file(path);
  FARMEM_TRY(root);
  return parse(*root);
}

}  // namespace farmem::kv
