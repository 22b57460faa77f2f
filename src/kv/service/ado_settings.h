// AdoSettings: what a pool's configure commands set for its Active Data Objects (AdoPlugins::,
// AdoParam::, AdoSignals::; docs/formats/kv.md "Configure"). A durable node keeps them in the
// pool's header (pool_header.h). Thread safety: a plain value.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace farmem::kv::service {

struct AdoSettings {
  std::vector<std::string> plugins;  // file names in KvServiceOptions::ado_plugin_dir
  std::map<std::string, std::string> params;
  bool post_put = false, post_get = false, post_erase = false;
  bool configured() const { return !plugins.empty(); }
};

}  // namespace farmem::kv::service
