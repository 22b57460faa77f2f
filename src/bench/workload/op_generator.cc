#include "farmem/bench/workload/op_generator.h"

#include <limits>
#include <string>

namespace farmem::bench::workload {
namespace {

constexpr int kMaxRedraws = 16;

}  // namespace

Result<OpGenerator> OpGenerator::create(const OpGeneratorOptions& options) {
  FARMEM_TRY(validate_workload(options.spec));
  const WorkloadSpec& spec = options.spec;
  if (options.record_count == 0) return InvalidArgument("record_count must be at least 1");
  if (options.distribution == Distribution::kZipfian &&
      !(options.zipf_theta > 0.0 && options.zipf_theta < 1.0)) {
    return InvalidArgument("zipf_theta must lie in (0, 1), got " +
                           std::to_string(options.zipf_theta));
  }
  const bool grows = spec.insert_proportion > 0.0;
  if ((grows || spec.latest_reads) && options.key_counter == nullptr) {
    return InvalidArgument("workload '" + spec.name +
                           "' inserts or reads latest keys and needs a shared key_counter");
  }
  if (options.key_counter != nullptr &&
      options.key_counter->load(std::memory_order_acquire) < options.record_count) {
    return InvalidArgument("key_counter must start at record_count (" +
                           std::to_string(options.record_count) + ")");
  }
  if (options.expected_new_keys > std::numeric_limits<uint64_t>::max() - options.record_count) {
    return InvalidArgument("record_count + expected_new_keys overflows");
  }
  ChooserKind kind = ChooserKind::kUniform;
  if (options.distribution == Distribution::kZipfian) {
    kind = spec.latest_reads ? ChooserKind::kLatest : ChooserKind::kScrambledZipfian;
  }
  return OpGenerator(options, kind);
}

OpGenerator::OpGenerator(const OpGeneratorOptions& options, ChooserKind kind)
    : spec_(options.spec),
      kind_(kind),
      record_count_(options.record_count),
      key_counter_(options.key_counter),
      visible_(nullptr) {
  if (key_counter_ != nullptr || options.visible_key_count != nullptr) {
    visible_ = options.visible_key_count != nullptr ? options.visible_key_count : key_counter_;
  }
  double sum = 0.0;
  for (int i = 0; i < kOpTypeCount; ++i) sum += spec_.proportion(static_cast<OpType>(i));
  double running = 0.0;
  int last_used = 0;
  for (int i = 0; i < kOpTypeCount; ++i) {
    const double p = spec_.proportion(static_cast<OpType>(i));
    running += p / sum;
    cumulative_[i] = running;
    if (p > 0.0) last_used = i;
  }
  for (int i = last_used; i < kOpTypeCount; ++i) cumulative_[i] = 2.0;
  switch (kind_) {
    case ChooserKind::kScrambledZipfian:
      zipfian_.emplace(record_count_ + options.expected_new_keys, options.zipf_theta);
      break;
    case ChooserKind::kLatest:
      latest_.emplace(visible_, options.zipf_theta);
      break;
    case ChooserKind::kUniform:
      break;
  }
}

uint64_t OpGenerator::visible_count() const {
  if (visible_ == nullptr) return record_count_;
  return visible_->load(std::memory_order_acquire);
}

uint64_t OpGenerator::choose_existing_key(Rng& rng) {
  switch (kind_) {
    case ChooserKind::kLatest:
      return latest_->next(rng);
    case ChooserKind::kUniform:
      return rng.uniform(visible_count());
    case ChooserKind::kScrambledZipfian: {
      const uint64_t first = zipfian_->next(rng);
      if (first < record_count_) return first;  // loaded keys always exist
      const uint64_t count = visible_count();
      if (first < count) return first;
      for (int i = 0; i < kMaxRedraws; ++i) {
        const uint64_t key = zipfian_->next(rng);
        if (key < count) return key;
      }
      return rng.uniform(count);
    }
  }
  return 0;
}

Op OpGenerator::next(Rng& rng) {
  const double u = rng.next_double();
  int index = 0;
  while (u >= cumulative_[index]) ++index;  // terminates: the last used type has bound 2.0
  Op op;
  op.type = static_cast<OpType>(index);
  switch (op.type) {
    case OpType::kInsert:
      op.key = key_counter_->fetch_add(1, std::memory_order_relaxed);
      break;
    case OpType::kScan:
      op.key = choose_existing_key(rng);
      op.scan_length =
          static_cast<uint32_t>(rng.uniform_between(spec_.min_scan_length, spec_.max_scan_length));
      break;
    default:
      op.key = choose_existing_key(rng);
      break;
  }
  return op;
}

}  // namespace farmem::bench::workload
