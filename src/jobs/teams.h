// Teams: which team a job belongs to, from configuration.
//
// Lookup order: GPUWARDEN_TEAM given by the process itself (sites without a scheduler, when
// `trust_process_team` is on), then the Slurm account's team, then the user's team, else the
// visible team "unassigned". Slurm lower-cases account names, so account keys are compared
// case-insensitively. Immutable after construction: safe to share between threads.
#ifndef GPUWARDEN_JOBS_TEAMS_H_
#define GPUWARDEN_JOBS_TEAMS_H_

#include <map>
#include <string>
#include <string_view>

namespace gw::jobs {

inline constexpr std::string_view kUnassignedTeam = "unassigned";

struct TeamConfig {
  std::map<std::string, std::string> accounts;  // Slurm account -> team
  std::map<std::string, std::string> users;     // user name -> team
  bool trust_process_team = true;               // honour GPUWARDEN_TEAM from the environment
};

class TeamMap {
 public:
  TeamMap() = default;
  explicit TeamMap(TeamConfig config);

  // The team for a job or process. Any argument may be empty.
  std::string TeamOf(std::string_view account, std::string_view user,
                     std::string_view process_team = "") const;

 private:
  TeamConfig config_;
};

}  // namespace gw::jobs

#endif  // GPUWARDEN_JOBS_TEAMS_H_
