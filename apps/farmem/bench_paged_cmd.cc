// farmem bench paged fault|scan [--page-bytes N] [--bytes N] [--local-memory BYTES|PCT%]
//                    [--samples N] [--out FILE.json] <cluster flags>  (farmem/bench/paged.h)
#include "command.h"
#include "farmem/bench/paged.h"
#include "flags.h"

namespace farmem::apps {
namespace {

void add_flags(CLI::App* app, bench::PagedBenchOptions* o) {
  add_cluster_flags(app, &o->cluster);
  add_enum_option(app, "mode", &o->mode, bench::kPagedBenchModeNames, "fault | scan")->required();
  app->add_option("--page-bytes", o->page_bytes, "page size (power of two >= 4KiB)")
      ->transform(bytes_unit());
  app->add_option("--bytes", o->bytes, "scan: region size")->transform(bytes_unit());
  app->add_option("--local-memory", o->local_memory, "scan: budget, BYTES or PCT% of the region");
  app->add_option("--samples", o->samples, "fault: faults measured")->check(CLI::Range(1, 1 << 20));
  app->add_option("--out", o->out, "append a JSON line to FILE");
}

}  // namespace

Command bench_paged_command() {
  return make_command<bench::PagedBenchOptions>("bench", "paged",
                                                "paged regions: fault latency, scan throughput",
                                                add_flags, bench::run_paged_bench);
}

}  // namespace farmem::apps
