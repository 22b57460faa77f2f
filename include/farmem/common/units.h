// Parsing of human-written sizes ("64MiB", "1g", "4096") and host:port strings, for configs
// and command lines. Setup-time only. Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "farmem/common/result.h"

namespace farmem {

// Accepts an integer with an optional suffix: B, K/KB/KiB, M/MB/MiB, G/GB/GiB, T/TiB (all
// powers of 1024, case-insensitive).
Result<uint64_t> parse_bytes(std::string_view text);

struct HostPort {
  std::string host;
  uint16_t port = 0;
};
// "host:port", port 1..65535.
Result<HostPort> parse_host_port(std::string_view text);

}  // namespace farmem
