#include "secondary_index.h"

#include <fmt/format.h>
#include <re2/re2.h>

namespace farmem::kv::service {

namespace {
constexpr int64_t kRegexMaxMem = 8 << 20;  // RE2's budget for one compiled expression

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
}  // namespace

Result<SecondaryIndex::Found> SecondaryIndex::find(std::string_view expr, uint64_t start) const {
  if (starts_with(expr, "exact:")) return find_exact(expr.substr(6), start);
  if (starts_with(expr, "prefix:")) return find_prefix(expr.substr(7), start);
  if (starts_with(expr, "regex:")) return find_regex(expr.substr(6), start);
  if (starts_with(expr, "next:")) return at(start);
  return InvalidArgument("find expression must start with exact:, prefix:, regex: or next:");
}

Result<SecondaryIndex::Found> SecondaryIndex::at(uint64_t position) const {
  if (position >= tree_.size()) return NotFound("no key at or after this position");
  return Found{false, position, *tree_.find_by_order(position)};
}

Result<SecondaryIndex::Found> SecondaryIndex::find_exact(std::string_view key,
                                                         uint64_t start) const {
  auto it = tree_.find(std::string(key));
  if (it == tree_.end()) return NotFound("no such key");
  const uint64_t rank = tree_.order_of_key(*it);
  if (rank < start) return NotFound("the key is before the start position");
  return Found{false, rank, *it};
}

Result<SecondaryIndex::Found> SecondaryIndex::find_prefix(std::string_view prefix,
                                                          uint64_t start) const {
  // Keys with the prefix are contiguous: the first at or after max(rank(prefix), start).
  const uint64_t first = tree_.order_of_key(std::string(prefix));
  const uint64_t pos = std::max(first, start);
  if (pos >= tree_.size()) return NotFound("no key with this prefix at or after the position");
  auto it = tree_.find_by_order(pos);
  if (!starts_with(*it, prefix))
    return NotFound("no key with this prefix at or after the position");
  return Found{false, pos, *it};
}

Result<SecondaryIndex::Found> SecondaryIndex::find_regex(std::string_view pattern,
                                                         uint64_t start) const {
  RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(kRegexMaxMem);
  RE2 re(re2::StringPiece(pattern.data(), pattern.size()), options);
  if (!re.ok()) return InvalidArgument(fmt::format("bad regex: {}", re.error()));
  if (start >= tree_.size()) return NotFound("no matching key at or after this position");
  auto it = tree_.find_by_order(start);
  uint64_t pos = start;
  for (uint64_t n = 0; n < kMaxExamined && it != tree_.end(); ++n, ++it, ++pos) {
    if (RE2::FullMatch(re2::StringPiece(it->data(), it->size()), re)) return Found{false, pos, *it};
  }
  if (it == tree_.end()) return NotFound("no matching key at or after this position");
  return Found{true, pos, {}};
}

}  // namespace farmem::kv::service
