// Appending benchmark results to a file: FILE.json gets one JSON object per line, FILE.csv a
// header (when new) and one row per run. The format is chosen by the extension.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "farmem/common/status.h"

namespace farmem::apps {

Status append_report(const std::string& path, const nlohmann::ordered_json& record);

}  // namespace farmem::apps
