#include "farmem/fabric/context.h"

#include <fmt/format.h>

#include <cstdlib>

#include "farmem/fabric/status_map.h"
#include "farmem/fabric/worker.h"

namespace farmem::fabric {
namespace {

// Whether a UCX_TLS value may select a shared-memory transport.
bool tls_allows_shm(const std::string& tls) {
  if (tls.empty() || tls[0] == '^') return true;
  size_t start = 0;
  while (start <= tls.size()) {
    size_t comma = tls.find(',', start);
    std::string t =
        tls.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (t == "all" || t == "sm" || t == "shm" || t == "posix" || t == "sysv" || t == "mm") {
      return true;
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return false;
}

}  // namespace

Result<std::unique_ptr<Context>> Context::create(const ContextOptions& options) {
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return from_ucs(st, "ucp_config_read");
  if (!options.tls.empty()) {
    st = ucp_config_modify(config, "TLS", options.tls.c_str());
    if (st != UCS_OK) {
      ucp_config_release(config);
      return from_ucs(st, fmt::format("UCX_TLS={} is not accepted by UCX", options.tls));
    }
  }
  if (!options.net_devices.empty()) {
    st = ucp_config_modify(config, "NET_DEVICES", options.net_devices.c_str());
    if (st != UCS_OK) {
      ucp_config_release(config);
      return from_ucs(
          st, fmt::format("UCX_NET_DEVICES={} is not accepted by UCX", options.net_devices));
    }
  }
  if (std::getenv("UCX_KEEPALIVE_INTERVAL") == nullptr && options.keepalive_interval_ms > 0) {
    std::string v = fmt::format("{}ms", options.keepalive_interval_ms);
    (void)ucp_config_modify(config, "KEEPALIVE_INTERVAL", v.c_str());
  }
  // Shared-memory transports are left out of endpoints with peer-failure handling unless this
  // is set (openucx/ucx#8477); without it a same-host node would be reached over TCP.
  const char* env_tls = std::getenv("UCX_TLS");
  std::string tls = !options.tls.empty() ? options.tls : (env_tls ? env_tls : "");
  if (std::getenv("UCX_MM_ERROR_HANDLING") == nullptr && tls_allows_shm(tls)) {
    (void)ucp_config_modify(config, "MM_ERROR_HANDLING", "y");
  }
  ucp_params_t params{};
  params.field_mask =
      UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED | UCP_PARAM_FIELD_REQUEST_SIZE;
  // Every UCX request carries a PendingOp, so in-flight bookkeeping needs no allocation.
  params.request_size = sizeof(PendingOp);
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO64 | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  params.mt_workers_shared = 1;
  ucp_context_h ctx = nullptr;
  st = ucp_init(&params, config, &ctx);
  ucp_config_release(config);
  if (st != UCS_OK) return from_ucs(st, "ucp_init");
  return std::unique_ptr<Context>(new Context(ctx));
}

Context::~Context() { ucp_cleanup(context_); }

}  // namespace farmem::fabric
