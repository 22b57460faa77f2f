#include "farmem/common/units.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <string>

namespace farmem {

Result<uint64_t> parse_bytes(std::string_view text) {
  std::string_view t = text;
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (ec != std::errc() || ptr == t.data()) {
    return InvalidArgument(fmt::format("'{}' is not a size (expected e.g. 4096, 64MiB, 1G)", text));
  }
  std::string suffix(ptr, t.data() + t.size());
  for (char& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  uint64_t mult = 0;
  if (suffix.empty() || suffix == "b")
    mult = 1;
  else if (suffix == "k" || suffix == "kb" || suffix == "kib")
    mult = 1ull << 10;
  else if (suffix == "m" || suffix == "mb" || suffix == "mib")
    mult = 1ull << 20;
  else if (suffix == "g" || suffix == "gb" || suffix == "gib")
    mult = 1ull << 30;
  else if (suffix == "t" || suffix == "tb" || suffix == "tib")
    mult = 1ull << 40;
  if (mult == 0) {
    return InvalidArgument(fmt::format("'{}' has an unknown size suffix '{}'", text, suffix));
  }
  if (value > UINT64_MAX / mult) return InvalidArgument(fmt::format("'{}' overflows", text));
  return value * mult;
}

Result<HostPort> parse_host_port(std::string_view text) {
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) {
    return InvalidArgument(fmt::format("'{}' is not host:port", text));
  }
  unsigned port = 0;
  std::string_view p = text.substr(colon + 1);
  auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), port);
  if (ec != std::errc() || ptr != p.data() + p.size() || port == 0 || port > 65535) {
    return InvalidArgument(fmt::format("'{}' has an invalid port (1..65535)", text));
  }
  HostPort hp;
  hp.host = std::string(text.substr(0, colon));
  hp.port = static_cast<uint16_t>(port);
  return hp;
}

}  // namespace farmem
