// farmem bench ops [--op read|write|cas|faa|inc] [--depth N] [--block-bytes N]
//                  [--span-bytes N] [--throttle off|fixed|adaptive] [--backoff on|off]
//                  [--direct on|off] <bench flags>          (farmem/bench/ops.h)
#include "command.h"
#include "farmem/bench/ops.h"
#include "flags.h"

namespace farmem::apps {
namespace {

void add_flags(CLI::App* app, bench::OpsOptions* o) {
  add_bench_flags(app, &o->bench, "seconds");
  add_enum_option(app, "--op", &o->op, bench::kOneSidedOpNames,
                  "read|write|cas|faa|inc (inc = CAS retry loop)");
  app->add_option("--depth", o->depth, "operations in flight per thread")
      ->check(CLI::Range(1, 4096));
  app->add_option("--block-bytes", o->block_bytes, "bytes per read/write")
      ->transform(bytes_unit())
      ->check(CLI::Range(uint64_t{1}, uint64_t{64} << 20));
  app->add_option("--span-bytes", o->span_bytes,
                  "per-thread working set; offsets are random in it (default 64MiB)")
      ->transform(bytes_unit())
      ->check(CLI::Range(uint64_t{8}, uint64_t{1} << 40));
  add_choice_option(app, "--throttle", &o->throttle, {"off", "fixed", "adaptive"},
                    runtime::parse_throttle_mode, "off|fixed|adaptive (default: client config)");
  add_on_off_option(app, "--backoff", &o->backoff,
                    "on|off: conflict-avoidance backoff (default on)");
  add_on_off_option(app, "--direct", &o->direct,
                    "on|off: direct access on shared memory (default: client config, on)");
}

}  // namespace

Command bench_ops_command() {
  return make_command<bench::OpsOptions>(
      "bench", "ops", "one-sided operation rate (SMART test_rdma)", add_flags, bench::run_ops);
}

}  // namespace farmem::apps
