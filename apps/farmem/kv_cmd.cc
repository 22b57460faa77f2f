// farmem kv: the key-value store from a terminal or a script (kv_cmd.h; kv_actions.cc).
//
//   farmem kv pools                                 every pool of every node
//   farmem kv create-pool NAME [--capacity 64MiB] [--expected-count N] [--create-only]
//   farmem kv delete-pool NAME
//   farmem kv put POOL KEY [VALUE | --value-file F] [--create-only | --dont-overwrite]
//   farmem kv get POOL KEY [--raw]
//   farmem kv erase POOL KEY
//   farmem kv find POOL EXPRESSION [--start N] [--limit N]   (exact:K prefix:P regex:R next:)
//   farmem kv count POOL
//   farmem kv stats [POOL]                          the pool's figures, the nodes' shard counters
//   farmem kv invoke POOL KEY REQUEST [--put-value V] [--ado-flags N] [--value-size N]
//   farmem kv configure POOL COMMAND              AddIndex::VolatileTree, RemoveIndex,
//                                                 AdoPlugins::a.so[,b.so], AdoParam::k=v,
//                                                 AdoSignals::post-put[,...] (kv.md)
//
// Exit codes (kv_cmd.h): 0 ok, 1 error, 2 usage, 3 no such pool/key/match, 4 exists
// (create-only), 5 busy (locked key, pool open elsewhere).
#include "kv_cmd.h"

#include <memory>

#include "command.h"
#include "flags.h"

namespace farmem::apps {
namespace {

void add_pool(CLI::App* app, KvOptions* o) {
  app->add_option("pool", o->pool, "pool name")->required();
}
void add_key(CLI::App* app, KvOptions* o) { app->add_option("key", o->key, "key")->required(); }

void add_pools_flags(CLI::App*, KvOptions*) {}
void add_create_pool_flags(CLI::App* app, KvOptions* o) {
  add_pool(app, o);
  app->add_option("--capacity", o->capacity_bytes, "bytes of the pool (default 64MiB)")
      ->transform(bytes_unit());
  app->add_option("--expected-count", o->expected_count, "keys to presize the index for");
  app->add_flag("--create-only", o->create_only, "fail (exit 4) if the pool exists");
}
void add_pool_flags(CLI::App* app, KvOptions* o) { add_pool(app, o); }
void add_pool_key_flags(CLI::App* app, KvOptions* o) {
  add_pool(app, o);
  add_key(app, o);
}
void add_put_flags(CLI::App* app, KvOptions* o) {
  add_pool_key_flags(app, o);
  app->add_option("value", o->value, "value (or --value-file)");
  app->add_option("--value-file", o->value_file, "read the value from a file ('-': stdin)");
  app->add_flag("--create-only", o->create_only, "fail (exit 4) if the key exists");
  app->add_flag("--dont-overwrite", o->dont_overwrite, "keep an existing value (exit 0)");
}
void add_get_flags(CLI::App* app, KvOptions* o) {
  add_pool_key_flags(app, o);
  app->add_flag("--raw", o->raw, "print the value's bytes only (no newline)");
}
void add_find_flags(CLI::App* app, KvOptions* o) {
  add_pool(app, o);
  app->add_option("expression", o->expression, "exact:K | prefix:P | regex:R | next:")->required();
  app->add_option("--start", o->start, "first position to consider (default 0)");
  app->add_option("--limit", o->limit, "print at most this many matches (default all)");
}
void add_stats_flags(CLI::App* app, KvOptions* o) {
  app->add_option("pool", o->pool, "a pool to describe too");
}
void add_invoke_flags(CLI::App* app, KvOptions* o) {
  add_pool_key_flags(app, o);
  app->add_option("request", o->request, "the request passed to the plugin")->required();
  app->add_option("--put-value", o->put_value, "invoke_put_ado: store this value first");
  app->add_option("--ado-flags", o->ado_flags, "kAdo* flags (docs/formats/kv.md)");
  app->add_option("--value-size", o->ado_value_size, "size of a value created on demand");
}
void add_configure_flags(CLI::App* app, KvOptions* o) {
  add_pool(app, o);
  app->add_option("command", o->configure,
                  "AddIndex::VolatileTree | RemoveIndex | AdoPlugins::a.so,b.so | "
                  "AdoParam::key=value | AdoSignals::post-put,post-get,post-erase")
      ->required();
}

// A kv command: the cluster flags, then its own.
Command kv_command(const char* name, const char* help, void (*add_flags)(CLI::App*, KvOptions*),
                   int (*run)(const KvOptions&)) {
  auto o = std::make_shared<KvOptions>();
  o->command = name;
  return Command{"kv", name, help,
                 [o, add_flags](CLI::App* app) {
                   add_cluster_flags(app, &o->cluster);
                   add_flags(app, o.get());
                 },
                 [o, run] { return run(*o); }};
}

}  // namespace

std::vector<Command> kv_commands() {
  return {
      kv_command("pools", "list every pool of every node", add_pools_flags, kv_pools),
      kv_command("create-pool", "create a pool (or open an existing one unless --create-only)",
                 add_create_pool_flags, kv_create_pool),
      kv_command("delete-pool", "delete a pool and everything in it", add_pool_flags,
                 kv_delete_pool),
      kv_command("put", "store a value under a key", add_put_flags, kv_put),
      kv_command("get", "print a key's value", add_get_flags, kv_get),
      kv_command("erase", "remove a key", add_pool_key_flags, kv_erase),
      kv_command("find",
                 "keys matching exact:K, prefix:P, regex:R or next: (needs a secondary index)",
                 add_find_flags, kv_find),
      kv_command("count", "number of keys in a pool", add_pool_flags, kv_count),
      kv_command("stats", "a pool's figures and the nodes' per-shard counters", add_stats_flags,
                 kv_stats),
      kv_command("invoke", "call the pool's Active Data Object on a key", add_invoke_flags,
                 kv_invoke),
      kv_command("configure",
                 "configure a pool: AddIndex::VolatileTree, RemoveIndex, AdoPlugins::a.so,..., "
                 "AdoParam::k=v, AdoSignals::post-put,...",
                 add_configure_flags, kv_configure),
  };
}

}  // namespace farmem::apps
