// OpGenerator: the per-thread stream of YCSB operations for one workload.
//
// Each next() draws an operation type from the spec's (normalised) mix and a key index:
//   * kInsert takes a fresh index with key_counter->fetch_add(1), so threads sharing the counter
//     never insert the same key and inserted indices are dense: [record_count, ...).
//   * Every other type (read, update, scan start, read-modify-write) picks an existing key:
//       - kUniform: uniform over [0, c), c = current visible key count (record_count when the
//         workload never inserts);
//       - kZipfian, spec.latest_reads (D): LatestChooser over [0, c) with zipf_theta;
//       - kZipfian otherwise: ScrambledZipfianChooser over record_count + expected_new_keys
//         items; a draw >= c is redrawn (up to 16 times, then uniform over [0, c)), which is how
//         YCSB lets workload E's scans reach inserted keys. With expected_new_keys == 0 (the
//         default) only the loaded keys [0, record_count) are chosen.
//   * kScan also gets a length uniform in [min_scan_length, max_scan_length]; others get 0.
//
// Key counter: one std::atomic<uint64_t> per run, shared by every thread's generator, owned by
// the caller and initialised to record_count before the generators are created; required when
// the workload inserts or has latest_reads. The visible key count c is read (acquire) from
// visible_key_count if given, else from key_counter. Because an insert's index is claimed before
// the driver writes the key, a read may target a key whose insert is still in flight on another
// thread; a driver that must avoid that maintains its own "all keys below c are written" counter
// and passes it as visible_key_count (YCSB's AcknowledgedCounterGenerator does this).
//
// Thread safety: an OpGenerator belongs to one thread; the counters are the only shared state.
// next() never throws or allocates. Determinism: the same options, counter values and Rng seed
// give the same operations.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

#include "farmem/bench/workload/latest_chooser.h"
#include "farmem/bench/workload/rng.h"
#include "farmem/bench/workload/scrambled_zipfian_chooser.h"
#include "farmem/bench/workload/workload_spec.h"
#include "farmem/bench/workload/zipfian_chooser.h"
#include "farmem/common/result.h"

namespace farmem::bench::workload {

struct Op {
  OpType type = OpType::kRead;
  uint32_t scan_length = 0;  // keys to scan from `key` (kScan only), 0 otherwise
  uint64_t key = 0;          // key index; for kInsert a fresh index no other generator returned
};

struct OpGeneratorOptions {
  WorkloadSpec spec;
  uint64_t record_count = 0;  // keys [0, record_count) were loaded before the run; >= 1
  Distribution distribution = Distribution::kZipfian;
  double zipf_theta = kDefaultZipfTheta;                     // in (0, 1); used by kZipfian
  std::atomic<uint64_t>* key_counter = nullptr;              // see the file comment
  const std::atomic<uint64_t>* visible_key_count = nullptr;  // optional, see the file comment
  uint64_t expected_new_keys = 0;  // kZipfian without latest_reads only; see the file comment
};

// Which key chooser serves non-insert operations.
enum class ChooserKind : uint8_t { kUniform, kScrambledZipfian, kLatest };

class OpGenerator {
 public:
  // kInvalidArgument for an invalid spec (validate_workload), record_count == 0, a zipf_theta
  // outside (0, 1) with kZipfian, a missing key_counter when one is required, a key_counter
  // below record_count, or record_count + expected_new_keys overflowing.
  static Result<OpGenerator> create(const OpGeneratorOptions& options);

  Op next(Rng& rng);

  const WorkloadSpec& spec() const { return spec_; }
  ChooserKind chooser_kind() const { return kind_; }

 private:
  OpGenerator(const OpGeneratorOptions& options, ChooserKind kind);
  uint64_t visible_count() const;
  uint64_t choose_existing_key(Rng& rng);

  WorkloadSpec spec_;
  ChooserKind kind_;
  uint64_t record_count_;
  std::atomic<uint64_t>* key_counter_;
  const std::atomic<uint64_t>* visible_;  // nullptr when the key space never grows
  // cumulative_[i]: upper bound of op type i on [0, 1); the last used type gets 2.0 so rounding
  // cannot fall past it.
  double cumulative_[kOpTypeCount];
  std::optional<ScrambledZipfianChooser> zipfian_;
  std::optional<LatestChooser> latest_;
};

}  // namespace farmem::bench::workload
