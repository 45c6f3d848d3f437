// serve/governance_decisions.cpp — the reclaim decisions log: JSON lines appended and fsync'ed,
// the recent ones kept for the API.
#include "serve/governance_decisions.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>
#include <utility>

namespace gw::serve {

std::string DecisionsLogPath(const config::Config& config) {
  return config.governance.decisions_log.empty()
             ? config.storage.path + "/governance/decisions.jsonl"
             : config.governance.decisions_log;
}

DecisionsLog::DecisionsLog(std::string path) : path_(std::move(path)) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), ec);
}

void DecisionsLog::Add(const governance::Decision& decision) {
  std::string line = governance::DecisionToJson(decision);
  std::lock_guard<std::mutex> lock(mu_);
  recent_.push_back(line);
  while (recent_.size() > 1000) recent_.pop_front();
  unwritten_.push_back(std::move(line));
}

void DecisionsLog::Flush(Logger* log) {
  std::vector<std::string> lines;
  {
    std::lock_guard<std::mutex> lock(mu_);
    lines.swap(unwritten_);
  }
  if (lines.empty()) return;
  std::lock_guard<std::mutex> file(file_mu_);  // the recorder thread and the worker both write
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  bool ok = fd >= 0;
  if (ok) {
    ok = ::write(fd, out.data(), out.size()) == static_cast<ssize_t>(out.size());
    ok = ::fsync(fd) == 0 && ok;
    ::close(fd);
  }
  if (!ok) {
    log->Error("governance: cannot append to " + path_ + "; " + std::to_string(lines.size()) +
               " decision(s) are in the log only");
    std::lock_guard<std::mutex> lock(mu_);
    errors_ += lines.size();
  }
}

std::vector<std::string> DecisionsLog::Recent(std::size_t limit) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (auto it = recent_.rbegin(); it != recent_.rend() && out.size() < limit; ++it)
    out.push_back(*it);
  return out;
}

std::uint64_t DecisionsLog::errors() const {
  std::lock_guard<std::mutex> lock(mu_);
  return errors_;
}

}  // namespace gw::serve
