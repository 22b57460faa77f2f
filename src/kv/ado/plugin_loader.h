// Loading ADO plugins (shared libraries with the C ABI of farmem/kv/ado_plugin.h) in the ADO
// process.
//
// load_plugin() dlopens a library (RTLD_NOW | RTLD_LOCAL: every symbol resolved at load, none
// leaked to the next plugin), finds FARMEM_ADO_ENTRY_POINT, calls it and checks what it returned
// (ABI version, struct size, launch and do_work present). Every failure is a kInvalidArgument
// naming the file and the reason (dlerror's text for a missing file or symbol).
// Thread safety: the ADO process's one thread.
#pragma once

#include <string>

#include "farmem/common/result.h"
#include "farmem/kv/ado_plugin.h"

namespace farmem::kv::ado {

// A loaded plugin; unloads (shutdown() if launched, then dlclose) when destroyed.
class LoadedPlugin {
 public:
  static Result<LoadedPlugin> load(const std::string& path);
  LoadedPlugin(LoadedPlugin&& o) noexcept;
  LoadedPlugin& operator=(LoadedPlugin&& o) noexcept;
  LoadedPlugin(const LoadedPlugin&) = delete;
  LoadedPlugin& operator=(const LoadedPlugin&) = delete;
  ~LoadedPlugin();

  const farmem_ado_plugin& api() const { return *api_; }
  const std::string& path() const { return path_; }
  // The plugin's own name, or the file's when it gives none.
  std::string name() const;
  // Calls launch(); the plugin's refusal (NULL) becomes kInvalidArgument with its text.
  Status launch(const farmem_ado_launch& launch, farmem_ado_store* store,
                const farmem_ado_store_ops* ops);
  void* self() const { return self_; }
  // Calls shutdown() once (if launched).
  void shutdown();

 private:
  LoadedPlugin() = default;
  void reset();

  std::string path_;
  void* handle_ = nullptr;
  const farmem_ado_plugin* api_ = nullptr;
  void* self_ = nullptr;
  bool launched_ = false;
};

}  // namespace farmem::kv::ado
