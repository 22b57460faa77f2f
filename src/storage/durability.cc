#include "farmem/storage/durability.h"

#include <array>
#include <string>

namespace farmem::storage {
namespace {

constexpr std::array<std::string_view, 3> kNames = {"volatile", "process", "power"};

}  // namespace

std::string_view durability_name(Durability d) { return kNames[static_cast<size_t>(d)]; }

Result<Durability> parse_durability(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (name == kNames[i]) return static_cast<Durability>(i);
  }
  return InvalidArgument("durability must be volatile, process or power, not '" +
                         std::string(name) + "'");
}

}  // namespace farmem::storage
