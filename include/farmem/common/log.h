// Control-plane logging. Only src/common/log.cc includes spdlog; everything else formats with
// fmt and calls these functions. Never log per operation on the data path.
// Thread safety: callable from any thread.
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace farmem::log {

enum class Level { kDebug, kInfo, kWarn, kError };

void set_level(Level level);
// Reads FARMEM_LOG (debug|info|warn|error) if set; default info.
void init_from_env();
void write(Level level, std::string_view message);

template <typename... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
  write(Level::kInfo, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
  write(Level::kWarn, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void error(fmt::format_string<Args...> f, Args&&... args) {
  write(Level::kError, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void debug(fmt::format_string<Args...> f, Args&&... args) {
  write(Level::kDebug, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace farmem::log
