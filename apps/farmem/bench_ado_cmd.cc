// farmem bench ado-filter [--records N] [--value-bytes N] [--query Q] [--coroutines N]
//                         [--repeat N] <bench flags>   (farmem/bench/ado_filter.h; needs a node
//                                                        with ADO plugins)
#include "command.h"
#include "farmem/bench/ado_filter.h"
#include "flags.h"

namespace farmem::apps {
namespace {

void add_flags(CLI::App* app, bench::AdoFilterOptions* o) {
  add_bench_flags(app, &o->bench, "unused (the run is --repeat rounds)");
  app->add_option("--records", o->records, "records in the pool")
      ->check(CLI::Range(uint64_t{1}, uint64_t{100'000'000}));
  app->add_option("--value-bytes", o->value_bytes, "record size (8-byte fields)")
      ->check(CLI::Range(size_t{8}, size_t{65536}));
  app->add_option("--query", o->query,
                  "filter query: <sum|count|min|max|top<k>> <field> [where <f> <op> <n>] "
                  "[prefix <p>]");
  app->add_option("--coroutines", o->coroutines, "client-side gets in flight")
      ->check(CLI::Range(1u, 4096u));
  app->add_option("--repeat", o->repeat, "rounds of each way (the best is reported)")
      ->check(CLI::Range(1u, 1000u));
}

}  // namespace

Command bench_ado_command() {
  return make_command<bench::AdoFilterOptions>(
      "bench", "ado-filter",
      "filter/aggregate records: fetch all to the client vs. one ADO invocation", add_flags,
      bench::run_ado_filter);
}

}  // namespace farmem::apps
