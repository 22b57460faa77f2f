#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string_view>

#include "farmem/graph/format.h"
#include "farmem/graph/input.h"

namespace farmem::graph {

namespace {

// Splits a line into whitespace-separated fields.
std::vector<std::string_view> fields_of(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    size_t j = i;
    while (j < line.size() && !std::isspace(static_cast<unsigned char>(line[j]))) ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

template <typename T>
bool parse_number(std::string_view text, T* out) {
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && p == end;
}

// Reads the lines of a file; the reader calls `line(number, text)` for each and stops on error.
class LineReader {
 public:
  explicit LineReader(const std::string& path) : path_(path), in_(path) {}
  bool opened() const { return static_cast<bool>(in_); }
  bool next(std::string_view* line) {
    if (!std::getline(in_, buffer_)) return false;
    ++number_;
    if (!buffer_.empty() && buffer_.back() == '\r') buffer_.pop_back();
    *line = buffer_;
    return true;
  }
  Status error(std::string_view what) const {
    return InvalidArgument(fmt::format("{}:{}: {}", path_, number_, what));
  }

 private:
  std::string path_;
  std::ifstream in_;
  std::string buffer_;
  uint64_t number_ = 0;
};

Status add_edge(EdgeList* el, uint64_t src, uint64_t dst, const LineReader& r) {
  if (src >= kFmgMaxVertices || dst >= kFmgMaxVertices) {
    return r.error(fmt::format("vertex id {} too large (ids are 32-bit)", std::max(src, dst)));
  }
  el->edges.push_back({static_cast<uint32_t>(src), static_cast<uint32_t>(dst)});
  el->vertices = std::max<uint64_t>(el->vertices, std::max(src, dst) + 1);
  return OkStatus();
}

Result<EdgeList> read_edge_list(const std::string& path, bool weighted) {
  LineReader r(path);
  if (!r.opened()) return NotFound(fmt::format("cannot open {}", path));
  EdgeList el;
  std::string_view line;
  while (r.next(&line)) {
    auto f = fields_of(line);
    if (f.empty() || f[0][0] == '#' || f[0][0] == '%') continue;
    const size_t want = weighted ? 3 : 2;
    if (f.size() != want) {
      return r.error(fmt::format("expected {} fields ({}), found {}", want,
                                 weighted ? "src dst weight" : "src dst", f.size()));
    }
    uint64_t src, dst;
    if (!parse_number(f[0], &src) || !parse_number(f[1], &dst)) {
      return r.error("vertex ids must be non-negative integers");
    }
    if (Status s = add_edge(&el, src, dst, r); !s.ok()) return s;
    if (weighted) {
      float w;
      if (!parse_number(f[2], &w)) return r.error(fmt::format("bad weight '{}'", f[2]));
      el.weights.push_back(w);
    }
  }
  return el;
}

struct MtxBanner {
  bool weighted = false;
  bool symmetric = false;
};

Result<MtxBanner> parse_mtx_banner(std::string_view line, const LineReader& r) {
  auto f = fields_of(line);
  std::vector<std::string> lower;
  for (auto x : f) {
    std::string s(x);
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    lower.push_back(s);
  }
  if (lower.size() != 5 || lower[0] != "%%matrixmarket" || lower[1] != "matrix") {
    return r.error("expected '%%MatrixMarket matrix coordinate <field> <symmetry>'");
  }
  if (lower[2] != "coordinate") return r.error("only coordinate Matrix Market files are graphs");
  MtxBanner b;
  if (lower[3] == "integer" || lower[3] == "real") {
    b.weighted = true;
  } else if (lower[3] != "pattern") {
    return r.error(fmt::format("field '{}' unsupported (pattern, integer, real)", f[3]));
  }
  if (lower[4] == "symmetric") {
    b.symmetric = true;
  } else if (lower[4] != "general") {
    return r.error(fmt::format("symmetry '{}' unsupported (general, symmetric)", f[4]));
  }
  return b;
}

Result<EdgeList> read_mtx(const std::string& path) {
  LineReader r(path);
  if (!r.opened()) return NotFound(fmt::format("cannot open {}", path));
  std::string_view line;
  if (!r.next(&line)) return r.error("empty file, expected a %%MatrixMarket banner");
  auto banner = parse_mtx_banner(line, r);
  FARMEM_TRY(banner);
  uint64_t rows = 0, cols = 0, nnz = 0, seen = 0;
  bool have_size = false;
  EdgeList el;
  while (r.next(&line)) {
    auto f = fields_of(line);
    if (f.empty() || f[0][0] == '%') continue;
    if (!have_size) {
      if (f.size() != 3 || !parse_number(f[0], &rows) || !parse_number(f[1], &cols) ||
          !parse_number(f[2], &nnz)) {
        return r.error("expected the size line 'rows cols entries'");
      }
      if (std::max(rows, cols) > kFmgMaxVertices) return r.error("too many rows/columns");
      el.vertices = std::max(rows, cols);
      have_size = true;
      continue;
    }
    const size_t want = banner->weighted ? 3 : 2;
    if (f.size() != want)
      return r.error(fmt::format("expected {} fields, found {}", want, f.size()));
    uint64_t i, j;
    if (!parse_number(f[0], &i) || !parse_number(f[1], &j) || i < 1 || j < 1 || i > rows ||
        j > cols) {
      return r.error(fmt::format("entry indices must be 1..{} and 1..{}", rows, cols));
    }
    if (++seen > nnz) return r.error(fmt::format("more entries than the {} declared", nnz));
    float w = 1;
    if (banner->weighted && !parse_number(f[2], &w)) {
      double d;
      if (!parse_number(f[2], &d)) return r.error(fmt::format("bad value '{}'", f[2]));
      w = static_cast<float>(d);
    }
    el.edges.push_back({static_cast<uint32_t>(i - 1), static_cast<uint32_t>(j - 1)});
    if (banner->weighted) el.weights.push_back(w);
    if (banner->symmetric && i != j) {
      el.edges.push_back({static_cast<uint32_t>(j - 1), static_cast<uint32_t>(i - 1)});
      if (banner->weighted) el.weights.push_back(w);
    }
  }
  if (!have_size) return r.error("missing the size line 'rows cols entries'");
  if (seen != nnz) return r.error(fmt::format("{} entries declared, {} found", nnz, seen));
  return el;
}

}  // namespace

Result<EdgeList> read_edge_file(const std::string& path) {
  if (path.ends_with(".wel")) return read_edge_list(path, true);
  if (path.ends_with(".el")) return read_edge_list(path, false);
  if (path.ends_with(".mtx")) return read_mtx(path);
  return InvalidArgument(
      fmt::format("{}: unknown input format (expected .el, .wel or .mtx)", path));
}

}  // namespace farmem::graph
