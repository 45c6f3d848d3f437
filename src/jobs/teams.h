// Teams: which team a job belongs to, from configuration.
//
// Lookup order: GPUWARDEN_TEAM given by the process itself (sites without a scheduler, when
// `trust_process_team` is on), then the Slurm account's team, then the user's team, else the
// visible team "unassigned". Slurm lower-cases account names, so account keys are compared
// case-insensitively.
//
// Kubernetes jobs (SlurmJob::source "kubernetes", account = the pod's namespace) go by
// `namespaces` instead of `accounts` (TeamOfJob, TeamOfNamespace): an exact namespace name first,
// then the "/regex/" rules in their order (RE2, matched against the whole name), then the user's
// team, else "unassigned". Namespace names are compared as written (Kubernetes names are lower
// case already).
//
// Immutable after construction: safe to share between threads; copies share the compiled rules.
#ifndef GPUWARDEN_JOBS_TEAMS_H_
#define GPUWARDEN_JOBS_TEAMS_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jobs/job.h"

namespace re2 {
class RE2;
}

namespace gw::jobs {

inline constexpr std::string_view kUnassignedTeam = "unassigned";

struct TeamConfig {
  std::map<std::string, std::string> accounts;  // Slurm account -> team
  std::map<std::string, std::string> users;     // user name -> team
  bool trust_process_team = true;               // honour GPUWARDEN_TEAM from the environment
  // Kubernetes namespace -> team, in order: a name, or "/regex/" (fully anchored RE2).
  std::vector<std::pair<std::string, std::string>> namespaces;
};

// "" when `rule` is a usable teams.namespaces key, else what is wrong with it ("bad regular
// expression '/(/': missing ): ("). For the configuration's checks.
std::string NamespaceRuleError(std::string_view rule);

class TeamMap {
 public:
  TeamMap() = default;
  explicit TeamMap(TeamConfig config);

  // The team for a job or process. Any argument may be empty.
  std::string TeamOf(std::string_view account, std::string_view user,
                     std::string_view process_team = "") const;
  // A Kubernetes namespace's team: its rule, else the user's team, else "unassigned".
  std::string TeamOfNamespace(std::string_view ns, std::string_view user) const;
  // A scheduler job's team: TeamOfNamespace(account, user) for a Kubernetes job, else
  // TeamOf(account, user).
  std::string TeamOfJob(const SlurmJob& job) const;

 private:
  struct Pattern {
    std::shared_ptr<const re2::RE2> re;  // null: the rule did not compile (never matches)
    std::string team;
  };
  TeamConfig config_;
  std::map<std::string, std::string> namespace_names_;  // the exact rules
  std::vector<Pattern> namespace_patterns_;             // the "/regex/" rules, in order
};

}  // namespace gw::jobs

#endif  // GPUWARDEN_JOBS_TEAMS_H_
