#include "far_apps.h"

#include <algorithm>
#include <cstdlib>

#include "farmem/common/clock.h"
#include "farmem/common/units.h"

namespace farmem::bench {

Result<uint64_t> local_budget(const std::string& spec, uint64_t working_set) {
  if (!spec.empty() && spec.back() == '%') {
    double pct = std::atof(spec.c_str());
    if (pct <= 0 || pct > 1000) return InvalidArgument("--local-memory percentage out of range");
    return static_cast<uint64_t>(static_cast<double>(working_set) * pct / 100);
  }
  return parse_bytes(spec);
}

double median_ns(std::vector<uint64_t>* cycles) {
  if (cycles->empty()) return 0;
  std::nth_element(cycles->begin(), cycles->begin() + cycles->size() / 2, cycles->end());
  return cycles_to_ns((*cycles)[cycles->size() / 2]);
}

double load_average_1m() {
  double load[3] = {0, 0, 0};
  (void)::getloadavg(load, 3);
  return load[0];
}

int run_far_app(const FarAppOptions& o) {
  switch (o.app) {
    case FarApp::kColdPath:
      return run_cold_path(o);
    case FarApp::kFrontend:
      return run_frontend(o);
    case FarApp::kAnalytics:
      break;
  }
  return run_analytics(o);
}

}  // namespace farmem::bench
