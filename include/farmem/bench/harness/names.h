// Names of an option's values: a fixed table {name, value} per enumeration, which a command
// line uses to accept exactly those spellings and a report uses to print a value back.
//
//   enum class Structure { kHash, kBtree };
//   inline constexpr EnumNames<Structure, 2> kStructureNames{{{"hash", Structure::kHash},
//                                                            {"btree", Structure::kBtree}}};
//   name_of(kStructureNames, Structure::kHash) == "hash"
//   parse_name(kStructureNames, "btree") == Structure::kBtree
//
// A value may have several names (aliases); name_of returns the first.
// Thread safety: constant tables, pure functions.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace farmem::bench {

template <typename E>
struct EnumName {
  std::string_view name;
  E value;
};

template <typename E, size_t N>
using EnumNames = std::array<EnumName<E>, N>;

// The value named `name` (exact spelling), or nothing.
template <typename E, size_t N>
constexpr std::optional<E> parse_name(const EnumNames<E, N>& names, std::string_view name) {
  for (const EnumName<E>& n : names) {
    if (n.name == name) return n.value;
  }
  return std::nullopt;
}

// The first name of `value` ("?" if the table has none).
template <typename E, size_t N>
constexpr std::string_view name_of(const EnumNames<E, N>& names, E value) {
  for (const EnumName<E>& n : names) {
    if (n.value == value) return n.name;
  }
  return "?";
}

// Every name, in table order.
template <typename E, size_t N>
std::vector<std::string> all_names(const EnumNames<E, N>& names) {
  std::vector<std::string> out;
  for (const EnumName<E>& n : names) out.emplace_back(n.name);
  return out;
}

}  // namespace farmem::bench
