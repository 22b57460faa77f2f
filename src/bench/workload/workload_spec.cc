#include "farmem/bench/workload/workload_spec.h"

#include <array>
#include <cctype>
#include <cmath>
#include <string>

namespace farmem::bench::workload {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

WorkloadSpec make(const char* name, const char* description, double read, double update,
                  double insert, double scan, double rmw, bool latest) {
  WorkloadSpec spec;
  spec.name = name;
  spec.description = description;
  spec.read_proportion = read;
  spec.update_proportion = update;
  spec.insert_proportion = insert;
  spec.scan_proportion = scan;
  spec.read_modify_write_proportion = rmw;
  spec.latest_reads = latest;
  return spec;
}

const std::array<WorkloadSpec, 6>& core_table() {
  static const std::array<WorkloadSpec, 6> table = {
      make("a", "update heavy: 50% read, 50% update", 0.5, 0.5, 0, 0, 0, false),
      make("b", "read mostly: 95% read, 5% update", 0.95, 0.05, 0, 0, 0, false),
      make("c", "read only: 100% read", 1.0, 0, 0, 0, 0, false),
      make("d", "read latest: 95% read of recent keys, 5% insert", 0.95, 0, 0.05, 0, 0, true),
      make("e", "short ranges: 95% scan (1..100 keys), 5% insert", 0, 0, 0.05, 0.95, 0, false),
      make("f", "read-modify-write: 50% read, 50% read-modify-write", 0.5, 0, 0, 0, 0.5, false),
  };
  return table;
}

}  // namespace

std::string_view op_type_name(OpType type) {
  switch (type) {
    case OpType::kRead:
      return "read";
    case OpType::kUpdate:
      return "update";
    case OpType::kInsert:
      return "insert";
    case OpType::kScan:
      return "scan";
    case OpType::kReadModifyWrite:
      return "read_modify_write";
  }
  return "unknown";
}

std::string_view distribution_name(Distribution distribution) {
  switch (distribution) {
    case Distribution::kZipfian:
      return "zipfian";
    case Distribution::kUniform:
      return "uniform";
  }
  return "unknown";
}

Result<Distribution> distribution_by_name(std::string_view name) {
  const std::string key = lower(name);
  if (key == "zipfian") return Distribution::kZipfian;
  if (key == "uniform") return Distribution::kUniform;
  return InvalidArgument("unknown request distribution '" + std::string(name) +
                         "' (expected zipfian or uniform)");
}

double WorkloadSpec::proportion(OpType type) const {
  switch (type) {
    case OpType::kRead:
      return read_proportion;
    case OpType::kUpdate:
      return update_proportion;
    case OpType::kInsert:
      return insert_proportion;
    case OpType::kScan:
      return scan_proportion;
    case OpType::kReadModifyWrite:
      return read_modify_write_proportion;
  }
  return 0.0;
}

Status validate_workload(const WorkloadSpec& spec) {
  double sum = 0.0;
  for (int i = 0; i < kOpTypeCount; ++i) {
    const auto type = static_cast<OpType>(i);
    const double p = spec.proportion(type);
    if (!std::isfinite(p) || p < 0.0) {
      return InvalidArgument("workload '" + spec.name + "': " + std::string(op_type_name(type)) +
                             " proportion must be finite and >= 0");
    }
    sum += p;
  }
  if (!(sum > 0.0)) {
    return InvalidArgument("workload '" + spec.name + "': operation proportions sum to 0");
  }
  if (spec.scan_proportion > 0.0 &&
      (spec.min_scan_length < 1 || spec.min_scan_length > spec.max_scan_length)) {
    return InvalidArgument("workload '" + spec.name +
                           "': scan lengths need 1 <= min_scan_length <= max_scan_length");
  }
  return OkStatus();
}

Result<WorkloadSpec> workload_by_name(std::string_view name) {
  std::string key = lower(name);
  if (key.size() > 8 && key.starts_with("workload")) key.erase(0, 8);
  for (const WorkloadSpec& spec : core_table()) {
    if (spec.name == key) return spec;
  }
  if (key == "w")
    return make("w", "write only: 100% update (not a YCSB core workload)", 0, 1.0, 0, 0, 0, false);
  return InvalidArgument("unknown YCSB workload '" + std::string(name) +
                         "' (expected one of a, b, c, d, e, f, or w)");
}

std::span<const WorkloadSpec> core_workloads() { return core_table(); }

}  // namespace farmem::bench::workload
