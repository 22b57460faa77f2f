#include "plugin_loader.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstring>
#include <utility>

namespace farmem::kv::ado {

Result<LoadedPlugin> LoadedPlugin::load(const std::string& path) {
  LoadedPlugin p;
  p.path_ = path;
  dlerror();
  p.handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (p.handle_ == nullptr) {
    const char* why = dlerror();
    return InvalidArgument(
        fmt::format("cannot load ADO plugin {}: {}", path, why != nullptr ? why : "unknown"));
  }
  void* sym = dlsym(p.handle_, FARMEM_ADO_ENTRY_POINT);
  if (sym == nullptr) {
    return InvalidArgument(
        fmt::format("ADO plugin {} exports no {} function", path, FARMEM_ADO_ENTRY_POINT));
  }
  auto entry = reinterpret_cast<farmem_ado_entry_fn>(sym);
  p.api_ = entry();
  if (p.api_ == nullptr) {
    return InvalidArgument(
        fmt::format("ADO plugin {}: {} returned NULL", path, FARMEM_ADO_ENTRY_POINT));
  }
  if (p.api_->abi_version != FARMEM_ADO_ABI_VERSION) {
    return InvalidArgument(fmt::format("ADO plugin {} is built for ABI v{}, farmem-ado speaks v{}",
                                       path, p.api_->abi_version, FARMEM_ADO_ABI_VERSION));
  }
  if (p.api_->struct_bytes < sizeof(farmem_ado_plugin)) {
    return InvalidArgument(fmt::format("ADO plugin {}: struct of {} bytes, expected at least {}",
                                       path, p.api_->struct_bytes, sizeof(farmem_ado_plugin)));
  }
  if (p.api_->launch == nullptr || p.api_->do_work == nullptr) {
    return InvalidArgument(fmt::format("ADO plugin {} has no launch or do_work function", path));
  }
  return p;
}

LoadedPlugin::LoadedPlugin(LoadedPlugin&& o) noexcept
    : path_(std::move(o.path_)),
      handle_(std::exchange(o.handle_, nullptr)),
      api_(std::exchange(o.api_, nullptr)),
      self_(std::exchange(o.self_, nullptr)),
      launched_(std::exchange(o.launched_, false)) {}

LoadedPlugin& LoadedPlugin::operator=(LoadedPlugin&& o) noexcept {
  if (this != &o) {
    reset();
    path_ = std::move(o.path_);
    handle_ = std::exchange(o.handle_, nullptr);
    api_ = std::exchange(o.api_, nullptr);
    self_ = std::exchange(o.self_, nullptr);
    launched_ = std::exchange(o.launched_, false);
  }
  return *this;
}

LoadedPlugin::~LoadedPlugin() { reset(); }

void LoadedPlugin::reset() {
  shutdown();
  if (handle_ != nullptr) dlclose(handle_);
  handle_ = nullptr;
  api_ = nullptr;
}

std::string LoadedPlugin::name() const {
  if (api_ != nullptr && api_->name != nullptr && api_->name[0] != '\0') return api_->name;
  size_t slash = path_.rfind('/');
  return slash == std::string::npos ? path_ : path_.substr(slash + 1);
}

Status LoadedPlugin::launch(const farmem_ado_launch& launch, farmem_ado_store* store,
                            const farmem_ado_store_ops* ops) {
  char error[FARMEM_ADO_MAX_ERROR_BYTES] = {};
  self_ = api_->launch(&launch, store, ops, error, sizeof(error));
  if (self_ == nullptr) {
    error[sizeof(error) - 1] = '\0';
    return InvalidArgument(fmt::format("ADO plugin {} refused to launch on pool {}: {}", name(),
                                       launch.pool_name, error[0] != '\0' ? error : "no reason"));
  }
  launched_ = true;
  return OkStatus();
}

void LoadedPlugin::shutdown() {
  if (launched_ && api_ != nullptr && api_->shutdown != nullptr) api_->shutdown(self_);
  launched_ = false;
  self_ = nullptr;
}

}  // namespace farmem::kv::ado
