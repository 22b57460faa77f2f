// The bench harness (farmem/bench/harness/), under the names the commands still use here.
#pragma once

#include "commands.h"
#include "farmem/bench/harness/bench.h"
#include "farmem/bench/harness/latency.h"
#include "farmem/bench/harness/report.h"

namespace farmem::apps {

using bench::append_report;
using bench::Bench;
using bench::BenchThread;
using bench::latency_us;
using bench::LatencyUs;
using bench::ProgressFormat;

}  // namespace farmem::apps
