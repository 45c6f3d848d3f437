#include "serve/state_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/file.h"

namespace gw::serve {

std::optional<std::string> ReadStateFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void SetAsideStateFile(const std::string& path, const std::string& who, const std::string& why,
                       const std::string& consequence, Logger* log) {
  std::error_code ec;
  std::filesystem::rename(path, path + ".corrupt", ec);
  log->Error(who + ": cannot read " + path + ": " + why + "; " + consequence +
             (ec ? " (it could not be renamed: " + ec.message() + ")"
                 : " (the file is kept as " + path + ".corrupt)"));
}

void WriteStateFile(const std::string& path, std::string_view text, const std::string& who,
                    bool* failed, Logger* log) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  const Status s = WriteFileDurably(path, text);
  if (!s.ok() && !*failed)
    log->Error(who + ": cannot keep the running figures for a restart: " + s.message());
  *failed = !s.ok();
}

}  // namespace gw::serve
