// Appending benchmark results to a file: FILE.json gets one JSON object per line, FILE.csv a
// header (when the file is new or empty) and one row per run of the record's scalar fields
// (nested objects and arrays are left out of CSV; a value with a comma is quoted). The format is
// chosen by the extension; anything else is kInvalidArgument.
// Thread safety: none (one writer per file).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "farmem/common/status.h"

namespace farmem::bench {

Status append_report(const std::string& path, const nlohmann::ordered_json& record);

}  // namespace farmem::bench
