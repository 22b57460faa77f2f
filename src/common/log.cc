#include "farmem/common/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <cstring>

namespace farmem::log {
namespace {

spdlog::logger& logger() {
  static std::shared_ptr<spdlog::logger> instance = [] {
    auto l = spdlog::stderr_color_mt("farmem");
    l->set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
    return l;
  }();
  return *instance;
}

spdlog::level::level_enum to_spd(Level level) {
  switch (level) {
    case Level::kDebug:
      return spdlog::level::debug;
    case Level::kInfo:
      return spdlog::level::info;
    case Level::kWarn:
      return spdlog::level::warn;
    case Level::kError:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

}  // namespace

void set_level(Level level) { logger().set_level(to_spd(level)); }

void init_from_env() {
  const char* v = std::getenv("FARMEM_LOG");
  if (v == nullptr) return;
  if (std::strcmp(v, "debug") == 0) set_level(Level::kDebug);
  if (std::strcmp(v, "info") == 0) set_level(Level::kInfo);
  if (std::strcmp(v, "warn") == 0) set_level(Level::kWarn);
  if (std::strcmp(v, "error") == 0) set_level(Level::kError);
}

void write(Level level, std::string_view message) { logger().log(to_spd(level), "{}", message); }

}  // namespace farmem::log
