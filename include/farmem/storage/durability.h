// Durability: how much of a memory node's data outlives what.
//
//   kVolatile  DRAM only: a restart or kill -9 of the node loses everything (no data directory).
//   kProcess   the data outlives the node's process (kill -9, a crash, a restart): what was
//              acknowledged is in the data directory's files, at least in the kernel's page cache.
//   kPower     the data outlives the machine losing power: what was acknowledged was synced to
//              stable storage (fdatasync) before the acknowledgement.
//
// Names on the command line and in TOML: "volatile", "process", "power".
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string_view>

#include "farmem/common/result.h"

namespace farmem::storage {

enum class Durability : uint8_t { kVolatile = 0, kProcess = 1, kPower = 2 };

// "volatile", "process" or "power".
std::string_view durability_name(Durability d);

// The inverse of durability_name; anything else is kInvalidArgument naming the three choices.
Result<Durability> parse_durability(std::string_view name);

}  // namespace farmem::storage
