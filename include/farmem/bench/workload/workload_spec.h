// WorkloadSpec: a YCSB workload's operation mix, and the six YCSB core workloads A-F.
//
// The mixes are those of YCSB's workloads/workload{a..f} files:
//   A  update heavy   50% read, 50% update                    zipfian
//   B  read mostly    95% read, 5% update                     zipfian
//   C  read only      100% read                               zipfian
//   D  read latest    95% read, 5% insert                     latest (recent keys are hot)
//   E  short ranges   95% scan, 5% insert, length U[1, 100]   zipfian
//   F  read-modify-write  50% read, 50% read-modify-write     zipfian
// A spec only describes the mix; OpGenerator (op_generator.h) turns it into operations, and the
// request distribution (zipfian or uniform) is chosen there. Proportions need not sum to 1: they
// are normalised, as YCSB does.
//
// Thread safety: values; the functions are pure.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "farmem/common/result.h"
#include "farmem/common/status.h"

namespace farmem::bench::workload {

enum class OpType : uint8_t {
  kRead = 0,
  kUpdate = 1,
  kInsert = 2,
  kScan = 3,
  kReadModifyWrite = 4
};
inline constexpr int kOpTypeCount = 5;

// "read", "update", "insert", "scan", "read_modify_write".
std::string_view op_type_name(OpType type);

// The request distribution over existing keys. kZipfian is YCSB's "zipfian" (scrambled) for
// workloads without latest_reads and YCSB's "latest" for those with it (D).
enum class Distribution : uint8_t { kZipfian = 0, kUniform = 1 };

// "zipfian", "uniform".
std::string_view distribution_name(Distribution distribution);
// Case-insensitive inverse of distribution_name; kInvalidArgument for anything else.
Result<Distribution> distribution_by_name(std::string_view name);

struct WorkloadSpec {
  std::string name;         // "a" .. "f" for the core workloads
  std::string description;  // e.g. "update heavy: 50% read, 50% update"
  double read_proportion = 0.0;
  double update_proportion = 0.0;
  double insert_proportion = 0.0;
  double scan_proportion = 0.0;
  double read_modify_write_proportion = 0.0;
  // Skewed key choice favours the most recently inserted keys (YCSB's "latest", workload D).
  bool latest_reads = false;
  // Scan lengths are uniform in [min_scan_length, max_scan_length] (YCSB: 1 .. maxscanlength).
  uint32_t min_scan_length = 1;
  uint32_t max_scan_length = 100;

  double proportion(OpType type) const;
};

// Checks that proportions are finite and >= 0 with a positive sum, and that scan lengths satisfy
// 1 <= min <= max when scans occur. kInvalidArgument naming the offending field otherwise.
Status validate_workload(const WorkloadSpec& spec);

// The YCSB core workload `name` ("a" .. "f", case-insensitive, an optional "workload" prefix is
// accepted: "workloadb"). kInvalidArgument naming the valid choices for anything else.
Result<WorkloadSpec> workload_by_name(std::string_view name);

// The six core workloads, A to F in order.
std::span<const WorkloadSpec> core_workloads();

}  // namespace farmem::bench::workload
