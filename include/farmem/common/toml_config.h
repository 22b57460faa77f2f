// Reading config values out of a toml++ table with farmem's error messages: the one helper
// behind ServerConfig (memnode) and ClusterConfig (client).
//
// Every error is kInvalidArgument and names the key as "<section>.<key>" (section "memnode",
// "client", ...). An absent key is never an error: get_int returns its default, the others
// leave *out unchanged.
//
// Header-only, so that farmem_common does not link toml++: include it only from a target that
// links tomlplusplus::tomlplusplus (its compile definitions select the toml++ build). Setup-time
// only. Thread safety: pure functions.
#pragma once

#include <fmt/format.h>
#include <toml++/toml.h>

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "farmem/common/result.h"
#include "farmem/common/status.h"
#include "farmem/common/units.h"

namespace farmem::toml_config {

// Parses TOML text; a syntax error is "config is not valid TOML: <why> (line N)".
inline Result<toml::table> parse_string(const std::string& text) {
  try {
    return toml::parse(text);
  } catch (const toml::parse_error& e) {
    return InvalidArgument(fmt::format("config is not valid TOML: {} (line {})", e.description(),
                                       e.source().begin.line));
  }
}

// Parses a TOML file; an unreadable file or a syntax error is "<path>: <why> (line N)".
inline Result<toml::table> parse_file(const std::string& path) {
  try {
    return toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    return InvalidArgument(
        fmt::format("{}: {} (line {})", path, e.description(), e.source().begin.line));
  }
}

// "unknown key <section>.<key>" for the first key of `t` that is not in `known`.
inline Status check_keys(const toml::table& t, std::string_view section,
                         const std::set<std::string>& known) {
  for (auto&& [k, v] : t) {
    if (!known.count(std::string(k.str()))) {
      return InvalidArgument(fmt::format("unknown key {}.{}", section, k.str()));
    }
  }
  return OkStatus();
}

// An integer in [lo, hi], `dflt` when absent: "<section>.<key> must be an integer",
// "<section>.<key> = <v> is out of range [lo, hi]".
inline Result<int64_t> get_int(const toml::table& t, std::string_view section, const char* key,
                               int64_t dflt, int64_t lo, int64_t hi) {
  const toml::node* n = t.get(key);
  if (n == nullptr) return dflt;
  auto v = n->value_exact<int64_t>();
  if (!v) return InvalidArgument(fmt::format("{}.{} must be an integer", section, key));
  if (*v < lo || *v > hi) {
    return InvalidArgument(
        fmt::format("{}.{} = {} is out of range [{}, {}]", section, key, *v, lo, hi));
  }
  return *v;
}

// A string: "<section>.<key> must be a string".
inline Status get_string(const toml::table& t, std::string_view section, const char* key,
                         std::string* out) {
  const toml::node* n = t.get(key);
  if (n == nullptr) return OkStatus();
  auto s = n->value_exact<std::string>();
  if (!s) return InvalidArgument(fmt::format("{}.{} must be a string", section, key));
  *out = *s;
  return OkStatus();
}

// true or false: "<section>.<key> must be true or false".
inline Status get_bool(const toml::table& t, std::string_view section, const char* key, bool* out) {
  const toml::node* n = t.get(key);
  if (n == nullptr) return OkStatus();
  auto b = n->value_exact<bool>();
  if (!b) return InvalidArgument(fmt::format("{}.{} must be true or false", section, key));
  *out = *b;
  return OkStatus();
}

// How get_bytes words its errors. The memory node's and the client's keys differ (and their
// messages are kept as they were).
struct BytesRules {
  const char* expected = "a size";   // any other type: "<section>.<key> must be <expected>"
  bool positive_integer = false;     // integer <= 0: "<section>.<key> must be positive"
                                     // (else an integer is taken as is, two's complement)
  bool prefix_parse_errors = false;  // bad string: "<section>.<key>: <why>" (else parse_bytes's
                                     // own status)
};

// A size: an integer number of bytes, or a string with a unit parsed by parse_bytes ("1GiB").
// Ranges are the caller's to check.
inline Status get_bytes(const toml::table& t, std::string_view section, const char* key,
                        const BytesRules& rules, uint64_t* out) {
  const toml::node* n = t.get(key);
  if (n == nullptr) return OkStatus();
  if (auto i = n->value_exact<int64_t>()) {
    if (rules.positive_integer && *i <= 0) {
      return InvalidArgument(fmt::format("{}.{} must be positive", section, key));
    }
    *out = static_cast<uint64_t>(*i);
    return OkStatus();
  }
  if (auto s = n->value_exact<std::string>()) {
    auto b = parse_bytes(*s);
    if (!b.ok() && rules.prefix_parse_errors) {
      return InvalidArgument(fmt::format("{}.{}: {}", section, key, b.status().message()));
    }
    FARMEM_TRY(b);
    *out = *b;
    return OkStatus();
  }
  return InvalidArgument(fmt::format("{}.{} must be {}", section, key, rules.expected));
}

}  // namespace farmem::toml_config
