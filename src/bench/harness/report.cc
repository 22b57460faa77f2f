#include "farmem/bench/harness/report.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

namespace farmem::bench {

Status append_report(const std::string& path, const nlohmann::ordered_json& record) {
  bool csv = path.size() >= 4 && path.substr(path.size() - 4) == ".csv";
  bool json = path.size() >= 5 && path.substr(path.size() - 5) == ".json";
  if (!csv && !json)
    return InvalidArgument(fmt::format("--out '{}' must end in .json or .csv", path));
  bool fresh = !std::filesystem::exists(path) || std::filesystem::file_size(path) == 0;
  std::ofstream f(path, std::ios::app);
  if (!f) return InvalidArgument(fmt::format("cannot open '{}' for appending", path));
  if (json) {
    f << record.dump() << "\n";
  } else {
    std::string header, row;
    for (auto it = record.begin(); it != record.end(); ++it) {
      if (it.value().is_structured()) continue;
      header += (header.empty() ? "" : ",") + it.key();
      std::string v = it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
      if (v.find(',') != std::string::npos) {
        v.insert(0, 1, '"');
        v += '"';
      }
      row += (row.empty() ? "" : ",") + v;
    }
    if (fresh) f << header << "\n";
    f << row << "\n";
  }
  return f ? OkStatus() : InvalidArgument(fmt::format("write to '{}' failed", path));
}

}  // namespace farmem::bench
