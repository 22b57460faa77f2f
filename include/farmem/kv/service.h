// The memory node's key-value service (farmem::kv, server side): pools of key-value pairs kept
// in the node's exported region, served through the service door (memnode/service.h) on the
// opcodes of kv/wire.h. Byte-level contract: docs/formats/kv.md.
//
// farmem-server registers it (make_kv_service); its settings come from the [kv] table of the
// node's TOML file:
//
//   [kv]
//   record_grace_ms = 1000   # a dead record's memory is reused only after this long
//   ado_plugin_dir = ""      # where ADO plugins (.so) are loaded from; "" = no ADO
//   ado_binary = ""          # the ADO host process; "" = farmem-ado next to farmem-server
//   ado_timeout_ms = 5000    # deadline of every exchange with an ADO process
//   ado_launch_retry_ms = 1000  # after a failed ADO launch, invocations get its error for this
//                               # long before a new process is tried (0: try at once)
//
// Unknown keys are errors. Thread safety: plain values and a factory, used at start-up.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "farmem/common/result.h"
#include "farmem/memnode/service.h"

namespace farmem::kv {

namespace service {
class PoolHooks;
class Shard;
}  // namespace service

struct KvServiceOptions {
  uint32_t record_grace_ms = 1000;  // 0..3,600,000
  std::string ado_plugin_dir;
  std::string ado_binary;
  uint32_t ado_timeout_ms = 5000;       // 1..3,600,000
  uint32_t ado_launch_retry_ms = 1000;  // 0..3,600,000
  // Makes the per-shard hooks through which Active Data Objects plug in (src/kv/service/pool.h),
  // called once per worker on that worker's thread. Null: kInvokeAdo / kInvokePutAdo answer
  // kUnavailable "no ADO support".
  std::function<std::unique_ptr<service::PoolHooks>(service::Shard&)> make_hooks;

  Status validate() const;
  // Reads the [kv] table of a node's TOML file (absent table: defaults); other sections are
  // left to their own parsers.
  static Result<KvServiceOptions> from_toml_file(const std::string& path);
  static Result<KvServiceOptions> from_toml_string(const std::string& text);
};

std::shared_ptr<memnode::Service> make_kv_service(KvServiceOptions options = {});

}  // namespace farmem::kv
