#include "jobs/teams.h"

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

}  // namespace

TeamMap::TeamMap(TeamConfig config) : config_(std::move(config)) {
  std::map<std::string, std::string> lowered;
  for (const auto& [account, team] : config_.accounts) lowered[Lower(account)] = team;
  config_.accounts = std::move(lowered);
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
