// farmem bench far cold-path|frontend|analytics [--local-memory BYTES|PCT%] [--backend B] ...
//                                                             (farmem/bench/far_apps.h)
#include "command.h"
#include "farmem/bench/far_apps.h"
#include "flags.h"

namespace farmem::apps {
namespace {

void add_frontend_flags(CLI::App* app, bench::FarAppOptions* o) {
  app->add_option("--keys", o->keys, "frontend: hash-table entries")->check(CLI::Range(1, 1 << 28));
  app->add_option("--keys-per-request", o->keys_per_request,
                  "frontend: hash-table lookups per request (AIFM: 32)")
      ->check(CLI::Range(1, 1024));
  app->add_option("--zipf-theta", o->zipf_theta, "frontend: skew of the request popularity")
      ->check(CLI::Range(0.01, 0.999));
}

void add_backend_flags(CLI::App* app, bench::FarAppOptions* o) {
  add_enum_option(app, "--backend", &o->backend, bench::kFrontendBackendNames,
                  "frontend: far | local | mmap | paged");
  app->add_option("--page-bytes", o->page_bytes, "frontend --backend paged: page size")
      ->transform(bytes_unit());
  app->add_option("--mmap-dir", o->mmap_dir,
                  "frontend --backend mmap: directory of the mapped file (a disk file system)");
  add_enum_option(app, "--madvise", &o->madvise, bench::kMmapAdviceNames,
                  "frontend --backend mmap: normal | random");
  app->add_flag("--shared-budget", o->shared_budget,
                "frontend --backend far|paged: pay from a process-wide LocalBudget of the budget "
                "and print its tenants' usage");
}

void add_flags(CLI::App* app, bench::FarAppOptions* o) {
  add_bench_flags(app, &o->bench, "seconds (frontend)");
  add_enum_option(app, "app", &o->app, bench::kFarAppNames, "cold-path | frontend | analytics")
      ->required();
  app->add_option("--local-memory", o->local_memory,
                  "local cache budget: BYTES or PCT% of the working set");
  app->add_option("--coroutines", o->coroutines, "coroutines per thread (frontend)")
      ->check(CLI::Range(1, 4096));
  app->add_option("--objects", o->objects,
                  "cold-path: objects per size; frontend: 8 KiB array objects");
  add_frontend_flags(app, o);
  app->add_option("--rows", o->rows, "analytics: table rows")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 34));
  add_backend_flags(app, o);
}

}  // namespace

Command bench_far_command() {
  return make_command<bench::FarAppOptions>("bench", "far", "far objects and containers (AIFM)",
                                            add_flags, bench::run_far_app);
}

}  // namespace farmem::apps
