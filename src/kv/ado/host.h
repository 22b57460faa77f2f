// AdoHost: the loop of the ADO process (farmem-ado): the process side of the ADO channel.
//
// It waits for the launch message, loads the pool's plugins (LoadedPlugin) and calls their
// launch(), answers the launch, then serves messages one at a time until shutdown or until the
// channel closes: a work message runs do_work() of the plugins in configured order until one
// does not answer FARMEM_ADO_NOT_MINE and sends back the responses it collected; an event calls
// op_event(). Store callbacks the plugins make (farmem_ado_store_ops) become callback messages
// to the memory node, answered by the pool's worker; messages that arrive meanwhile (events, a
// shutdown) wait in a bounded inbox. Values are reached through `region`, this process's mapping
// of the node's exported region: every range the node names is checked against region_bytes.
// tx_add keeps the old bytes of what a plugin changes in the pool's undo block (undo_log.h); on
// a durable node each entry is logged by the node (a kLogUndo callback) before tx_add returns.
//
// Thread safety: one thread (the process's). Blocking is fine here: only this process waits.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "channel.h"
#include "farmem/common/result.h"
#include "farmem/kv/ado_plugin.h"
#include "plugin_loader.h"
#include "undo_log.h"

namespace farmem::kv::ado {

struct HostOptions {
  int fd = kChannelFd;  // the channel (non-blocking SOCK_SEQPACKET)
  uint8_t* region = nullptr;
  uint64_t region_bytes = 0;
  uint16_t node_id = 0;
  // Called about every idle_ms while no message arrives (progress the node connection); a
  // non-OK status (the node is gone) ends the process.
  std::function<Status()> idle;
  uint32_t idle_ms = 100;
  // How long to wait for the launch message.
  uint32_t launch_wait_ms = 30000;
};

class AdoHost {
 public:
  static constexpr size_t kMaxInbox = 4096;

  explicit AdoHost(HostOptions options);
  AdoHost(const AdoHost&) = delete;
  AdoHost& operator=(const AdoHost&) = delete;
  ~AdoHost();

  // Runs until shutdown (returns 0) or failure (returns non-zero, after a line on stderr).
  // `setup` is what connecting to the node gave: if it failed, the launch is answered with it.
  int run(const Status& setup);

 private:
  struct Current {
    uint64_t work_id = 0;
    bool collect = false;  // responses wanted (not async, not a signal)
    std::string responses;
    uint32_t count = 0;
    // The values this call holds write-locked (key, range), and the ranges its tx_add put in
    // the undo log (host_tx.cc).
    std::vector<std::pair<std::string, ValueRange>> writable;
    std::vector<ValueRange> added;
  };

  Status launch(const Launch& l);
  Status serve(const Message& m);
  Status run_work(const Work& w);
  void run_event(uint32_t event, const std::string& key);
  // Waits for one message (inbox first) until deadline_ns; empty optional text on timeout.
  Result<std::string> next_message(uint64_t deadline_ns, bool use_inbox);
  Status send(std::string_view message);
  // One store callback: sends it and waits for its reply (queueing anything else meanwhile).
  Status call(const Callback& c, std::string* payload);
  int32_t fail_callback(const Status& s);
  int32_t to_value(std::string_view payload, farmem_ado_value* out);
  // A callback answered with a value of key c.key (create, open, resize): *out, and the value is
  // this call's to change (tx_add) when `writable`.
  int32_t keyed_value(const Callback& c, bool writable, farmem_ado_value* out);
  bool range_ok(uint64_t offset, uint64_t bytes) const;

  // ---- transactions (host_tx.cc) ----
  // The value `key` of this call, now write-locked at `range` (replacing what it was).
  void note_writable(std::string_view key, ValueRange range);
  void forget_writable(std::string_view key);
  // Whether the call's undo log holds bytes of the value `key` (then it may not move or unlock).
  bool in_transaction(std::string_view key) const;
  static int32_t op_tx_add(farmem_ado_store* s, uint64_t work_id, const void* data, uint64_t bytes);
  static int32_t op_tx_abort(farmem_ado_store* s, uint64_t work_id);

  // farmem_ado_store_ops
  static AdoHost* self(farmem_ado_store* s) { return reinterpret_cast<AdoHost*>(s); }
  static int32_t op_create_key(farmem_ado_store* s, uint64_t work_id, const void* key,
                               uint32_t key_bytes, uint64_t value_bytes, farmem_ado_value* out);
  static int32_t op_open_key(farmem_ado_store* s, uint64_t work_id, const void* key,
                             uint32_t key_bytes, uint32_t lock, farmem_ado_value* out);
  static int32_t op_erase_key(farmem_ado_store* s, const void* key, uint32_t key_bytes);
  static int32_t op_resize_value(farmem_ado_store* s, uint64_t work_id, const void* key,
                                 uint32_t key_bytes, uint64_t new_bytes, farmem_ado_value* out);
  static int32_t op_allocate(farmem_ado_store* s, uint64_t bytes, uint64_t alignment,
                             farmem_ado_value* out);
  static int32_t op_free(farmem_ado_store* s, uint64_t offset, uint64_t bytes);
  static int32_t op_find_key(farmem_ado_store* s, const char* expression, uint32_t expression_bytes,
                             uint64_t start, uint64_t* position, void* key_out,
                             uint32_t key_capacity, uint32_t* key_bytes);
  static int32_t op_iterate(farmem_ado_store* s, uint64_t* cursor, farmem_ado_ref* refs,
                            uint32_t max_refs, uint32_t* count);
  static int32_t op_unlock_key(farmem_ado_store* s, uint64_t work_id, const void* key,
                               uint32_t key_bytes);
  static int32_t op_pool_info(farmem_ado_store* s, farmem_ado_pool_info* out);
  static int32_t op_ref_is_current(farmem_ado_store* s, const farmem_ado_ref* ref);
  static int32_t op_respond(farmem_ado_store* s, uint64_t work_id, uint32_t layer, const void* data,
                            uint64_t bytes);
  static const char* op_last_error(farmem_ado_store* s);

  HostOptions options_;
  farmem_ado_store_ops ops_{};
  std::vector<LoadedPlugin> plugins_;
  std::string pool_name_;
  uint64_t timeout_ns_ = 0;
  std::deque<std::string> inbox_;
  std::string buffer_;
  Current current_;
  UndoWriter undo_;
  uint64_t undo_offset_ = 0;   // the undo block's region offset
  bool durable_node_ = false;  // tx_add entries are logged by the node before the change
  std::string last_error_;
  bool stopping_ = false;
};

}  // namespace farmem::kv::ado
