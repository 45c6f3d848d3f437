#include "jobs/teams.h"

#include <re2/re2.h>

#include <algorithm>
#include <cctype>

namespace gw::jobs {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// "/regex/" -> "regex"; false for an exact name.
bool PatternOf(std::string_view rule, std::string_view* pattern) {
  if (rule.size() < 2 || rule.front() != '/' || rule.back() != '/') return false;
  *pattern = rule.substr(1, rule.size() - 2);
  return true;
}

std::shared_ptr<const re2::RE2> Compile(std::string_view pattern) {
  RE2::Options options;
  options.set_log_errors(false);
  // Fully anchored: the rule must match the whole namespace name.
  auto re = std::make_shared<const re2::RE2>("^(?:" + std::string(pattern) + ")$", options);
  return re->ok() ? re : nullptr;
}

}  // namespace

std::string NamespaceRuleError(std::string_view rule) {
  if (rule.empty()) return "expected a namespace name or \"/regex/\", got an empty key";
  std::string_view pattern;
  if (!PatternOf(rule, &pattern)) return "";
  if (pattern.empty()) return "expected a regular expression between the slashes, got '//'";
  RE2::Options options;
  options.set_log_errors(false);
  const re2::RE2 re("^(?:" + std::string(pattern) + ")$", options);
  if (re.ok()) return "";
  return "bad regular expression '" + std::string(rule) + "': " + re.error();
}

TeamMap::TeamMap(TeamConfig config) : config_(std::move(config)) {
  std::map<std::string, std::string> lowered;
  for (const auto& [account, team] : config_.accounts) lowered[Lower(account)] = team;
  config_.accounts = std::move(lowered);
  for (const auto& [rule, team] : config_.namespaces) {
    std::string_view pattern;
    if (!PatternOf(rule, &pattern)) {
      namespace_names_.emplace(rule, team);  // the first rule for a name wins
    } else if (!pattern.empty()) {
      namespace_patterns_.push_back(Pattern{Compile(pattern), team});
    }
  }
}

std::string TeamMap::TeamOfNamespace(std::string_view ns, std::string_view user) const {
  if (!ns.empty()) {
    if (auto it = namespace_names_.find(std::string(ns)); it != namespace_names_.end())
      return it->second;
    for (const Pattern& p : namespace_patterns_)
      if (p.re && re2::RE2::FullMatch(re2::StringPiece(ns.data(), ns.size()), *p.re)) return p.team;
  }
  return TeamOf("", user);
}

std::string TeamMap::TeamOfJob(const SlurmJob& job) const {
  if (job.source == "kubernetes") return TeamOfNamespace(job.account, job.user);
  return TeamOf(job.account, job.user);
}

std::string TeamMap::TeamOf(std::string_view account, std::string_view user,
                            std::string_view process_team) const {
  if (config_.trust_process_team && !process_team.empty()) return std::string(process_team);
  if (!account.empty()) {
    auto it = config_.accounts.find(Lower(account));
    if (it != config_.accounts.end()) return it->second;
  }
  if (!user.empty()) {
    auto it = config_.users.find(std::string(user));
    if (it != config_.users.end()) return it->second;
  }
  return std::string(kUnassignedTeam);
}

}  // namespace gw::jobs
