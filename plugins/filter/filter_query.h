// The filter plugin's query and its evaluation, shared by the plugin (libfarmem_ado_filter.so)
// and by clients that compute the same answer themselves (farmem bench ado-filter).
//
// A record is a value made of 8-byte little-endian signed fields (field i at byte 8 * i). A
// query is text:
//   <agg> <field> [where <field> <lt|le|eq|ne|ge|gt> <integer>] [prefix <key-prefix>]
//   agg: sum | count | min | max | top<k> (k in 1..kMaxTopK)
// e.g. "sum 0 where 1 ge 500 prefix rec". Records too short for a field named are skipped.
// The answer (FilterResult, response layer 1; top-k items as layer 2 responses of an int64
// value followed by the key, largest first; a text summary as layer 0).
// Thread safety: values.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace farmem::ado_filter {

inline constexpr uint32_t kFieldBytes = sizeof(int64_t);  // field i is at byte kFieldBytes * i
inline constexpr uint32_t kMaxTopK = 32;
inline constexpr uint32_t kLayerText = 0;
inline constexpr uint32_t kLayerResult = 1;
inline constexpr uint32_t kLayerTop = 2;

enum class Agg : uint8_t { kSum, kCount, kMin, kMax, kTop };
enum class Cmp : uint8_t { kNone, kLt, kLe, kEq, kNe, kGe, kGt };

struct Query {
  Agg agg = Agg::kSum;
  uint32_t field = 0;
  uint32_t k = 0;
  Cmp cmp = Cmp::kNone;
  uint32_t where_field = 0;
  int64_t arg = 0;
  std::string prefix;
};

struct FilterResult {
  uint64_t scanned = 0;    // records looked at (key prefix matched)
  uint64_t matched = 0;    // records that passed the predicate
  uint64_t skipped = 0;    // records too short for the fields
  uint64_t rechecked = 0;  // records read again under a lock (changed while read)
  int64_t sum = 0;
  int64_t min = std::numeric_limits<int64_t>::max();
  int64_t max = std::numeric_limits<int64_t>::min();
};
static_assert(sizeof(FilterResult) == 56);

namespace detail {
inline std::vector<std::string_view> words(std::string_view s) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    size_t b = s.find_first_not_of(' ');
    if (b == std::string_view::npos) break;
    s.remove_prefix(b);
    size_t e = std::min(s.find(' '), s.size());
    out.push_back(s.substr(0, e));
    s.remove_prefix(e);
  }
  return out;
}
template <typename T>
bool number(std::string_view s, T* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}
inline Cmp comparison(std::string_view s) {
  static constexpr std::pair<const char*, Cmp> kOps[] = {{"lt", Cmp::kLt}, {"le", Cmp::kLe},
                                                         {"eq", Cmp::kEq}, {"ne", Cmp::kNe},
                                                         {"ge", Cmp::kGe}, {"gt", Cmp::kGt}};
  for (const auto& [name, c] : kOps) {
    if (s == name) return c;
  }
  return Cmp::kNone;
}
}  // namespace detail

// Parses a query; on failure *error says why.
inline bool parse_query(std::string_view text, Query* q, std::string* error) {
  auto w = detail::words(text);
  *q = Query{};
  if (w.size() < 2) return *error = "query: <agg> <field> [where <f> <op> <n>] [prefix <p>]", false;
  if (w[0] == "sum")
    q->agg = Agg::kSum;
  else if (w[0] == "count")
    q->agg = Agg::kCount;
  else if (w[0] == "min")
    q->agg = Agg::kMin;
  else if (w[0] == "max")
    q->agg = Agg::kMax;
  else if (w[0].starts_with("top") && detail::number(w[0].substr(3), &q->k) && q->k >= 1 &&
           q->k <= kMaxTopK) {
    q->agg = Agg::kTop;
  } else {
    return *error = "query: unknown aggregate " + std::string(w[0]), false;
  }
  if (!detail::number(w[1], &q->field) || q->field > 4096)
    return *error = "query: bad field", false;
  size_t i = 2;
  if (i < w.size() && w[i] == "where") {
    if (i + 3 >= w.size()) return *error = "query: where needs 3 words", false;
    if (!detail::number(w[i + 1], &q->where_field) || q->where_field > 4096 ||
        (q->cmp = detail::comparison(w[i + 2])) == Cmp::kNone ||
        !detail::number(w[i + 3], &q->arg)) {
      return *error = "query: where <field> <lt|le|eq|ne|ge|gt> <integer>", false;
    }
    i += 4;
  }
  if (i < w.size() && w[i] == "prefix") {
    if (i + 1 >= w.size()) return *error = "query: prefix needs a value", false;
    q->prefix = std::string(w[i + 1]);
    i += 2;
  }
  if (i != w.size()) return *error = "query: unexpected " + std::string(w[i]), false;
  return true;
}

// Folds records into a result.
class Accumulator {
 public:
  explicit Accumulator(const Query& q) : q_(q) {}

  bool key_matches(std::string_view key) const { return key.starts_with(q_.prefix); }

  // What one record contributes, computed before it is applied (so that a reader can check
  // that the record did not change while it was read, then apply).
  enum class Outcome : uint8_t { kSkipped, kNoMatch, kMatch };
  struct Eval {
    Outcome outcome = Outcome::kSkipped;
    int64_t value = 0;
  };
  Eval evaluate(const uint8_t* value, uint64_t value_bytes) const {
    uint32_t need = std::max(q_.field, q_.cmp == Cmp::kNone ? 0u : q_.where_field) + 1;
    if (value_bytes < uint64_t{need} * kFieldBytes) return {Outcome::kSkipped, 0};
    if (q_.cmp != Cmp::kNone && !passes(field(value, q_.where_field))) {
      return {Outcome::kNoMatch, 0};
    }
    return {Outcome::kMatch, field(value, q_.field)};
  }
  // Applies one record whose key matched.
  void apply(std::string_view key, const Eval& e) {
    ++r_.scanned;
    if (e.outcome == Outcome::kSkipped) ++r_.skipped;
    if (e.outcome != Outcome::kMatch) return;
    int64_t v = e.value;
    ++r_.matched;
    // Wraps on overflow (two's complement through unsigned: defined, and the same everywhere).
    r_.sum = static_cast<int64_t>(static_cast<uint64_t>(r_.sum) + static_cast<uint64_t>(v));
    r_.min = std::min(r_.min, v);
    r_.max = std::max(r_.max, v);
    if (q_.agg == Agg::kTop) push_top(v, key);
  }
  void add(std::string_view key, const uint8_t* value, uint64_t value_bytes) {
    apply(key, evaluate(value, value_bytes));
  }
  void note_recheck() { ++r_.rechecked; }
  const FilterResult& result() const { return r_; }
  // Top-k, largest first (ties: smaller key first).
  std::vector<std::pair<int64_t, std::string>> top() const {
    auto t = top_;
    std::sort(t.begin(), t.end(), better);
    return t;
  }
  // The layer-0 text answer.
  std::string summary() const {
    std::string s = "scanned=" + std::to_string(r_.scanned) +
                    " matched=" + std::to_string(r_.matched) +
                    " skipped=" + std::to_string(r_.skipped);
    switch (q_.agg) {
      case Agg::kSum:
        return s + " sum=" + std::to_string(r_.sum);
      case Agg::kCount:
        return s + " count=" + std::to_string(r_.matched);
      case Agg::kMin:
        return s + (r_.matched ? " min=" + std::to_string(r_.min) : " min=none");
      case Agg::kMax:
        return s + (r_.matched ? " max=" + std::to_string(r_.max) : " max=none");
      case Agg::kTop:
        return s + " top=" + std::to_string(top_.size());
    }
    return s;
  }

 private:
  static int64_t field(const uint8_t* value, uint32_t i) {
    uint64_t u = 0;
    std::memcpy(&u, value + uint64_t{i} * kFieldBytes, kFieldBytes);
    return static_cast<int64_t>(u);
  }
  bool passes(int64_t x) const {
    switch (q_.cmp) {
      case Cmp::kLt:
        return x < q_.arg;
      case Cmp::kLe:
        return x <= q_.arg;
      case Cmp::kEq:
        return x == q_.arg;
      case Cmp::kNe:
        return x != q_.arg;
      case Cmp::kGe:
        return x >= q_.arg;
      case Cmp::kGt:
        return x > q_.arg;
      case Cmp::kNone:
        return true;
    }
    return true;
  }
  static bool better(const std::pair<int64_t, std::string>& a,
                     const std::pair<int64_t, std::string>& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  }
  void push_top(int64_t v, std::string_view key) {
    std::pair<int64_t, std::string> item{v, std::string(key)};
    if (top_.size() < q_.k) {
      top_.push_back(std::move(item));
      std::push_heap(top_.begin(), top_.end(), better);
    } else if (better(item, top_.front())) {
      std::pop_heap(top_.begin(), top_.end(), better);
      top_.back() = std::move(item);
      std::push_heap(top_.begin(), top_.end(), better);
    }
  }

  Query q_;
  FilterResult r_;
  std::vector<std::pair<int64_t, std::string>> top_;  // heap: the worst of the k on top
};

}  // namespace farmem::ado_filter
