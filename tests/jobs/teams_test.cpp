// Teams of Kubernetes jobs: namespace rules (exact names first, then "/regex/" in order, fully
// anchored), then the user's team, else "unassigned"; Slurm jobs keep going by account.
#include "jobs/teams.h"

#include <gtest/gtest.h>

namespace gw::jobs {
namespace {

TeamMap Map() {
  TeamConfig c;
  c.accounts = {{"ml-research", "slurm-team"}};
  c.users = {{"alice", "alice-team"}};
  c.namespaces = {{"/vision-.*/", "vision"},
                  {"ml-research", "research"},
                  {"/.*-prod/", "production"},
                  {"/vision-prod/", "never"}};
  return TeamMap(c);
}

SlurmJob Pod(std::string ns, std::string user = "") {
  SlurmJob j;
  j.source = "kubernetes";
  j.id = ns + "/train-0";
  j.account = j.pod_namespace = std::move(ns);
  j.user = std::move(user);
  return j;
}

TEST(NamespaceTeams, ExactNameBeforePatterns) {
  TeamMap teams = Map();
  EXPECT_EQ(teams.TeamOfNamespace("ml-research", ""), "research");
  EXPECT_EQ(teams.TeamOfJob(Pod("ml-research")), "research");
}

TEST(NamespaceTeams, PatternsInFileOrderAndFullyAnchored) {
  TeamMap teams = Map();
  EXPECT_EQ(teams.TeamOfNamespace("vision-a", ""), "vision");
  // Both /vision-.*/ and /.*-prod/ match: the first in the file wins.
  EXPECT_EQ(teams.TeamOfNamespace("vision-prod", ""), "vision");
  EXPECT_EQ(teams.TeamOfNamespace("web-prod", ""), "production");
  // Anchored: a pattern must match the whole name, not a part of it.
  EXPECT_EQ(teams.TeamOfNamespace("old-vision-a", ""), "unassigned");
  EXPECT_EQ(teams.TeamOfNamespace("web-prod-2", ""), "unassigned");
}

TEST(NamespaceTeams, ThenUserThenUnassigned) {
  TeamMap teams = Map();
  EXPECT_EQ(teams.TeamOfJob(Pod("default", "alice")), "alice-team");
  EXPECT_EQ(teams.TeamOfJob(Pod("default", "bob")), "unassigned");
  EXPECT_EQ(teams.TeamOfJob(Pod("")), "unassigned");
  // A rule beats the user's team.
  EXPECT_EQ(teams.TeamOfJob(Pod("vision-x", "alice")), "vision");
}

TEST(NamespaceTeams, AccountsAreNotNamespacesAndViceVersa) {
  TeamConfig c;
  c.accounts = {{"physics", "sim-team"}};
  c.namespaces = {{"vision", "vision-team"}};
  TeamMap teams(c);
  // A namespace called like an account does not take the account's team...
  EXPECT_EQ(teams.TeamOfJob(Pod("physics")), "unassigned");
  // ...and a Slurm account called like a namespace does not take the namespace's.
  SlurmJob slurm;
  slurm.account = "vision";
  EXPECT_EQ(teams.TeamOfJob(slurm), "unassigned");
  slurm.account = "Physics";
  EXPECT_EQ(teams.TeamOfJob(slurm), "sim-team");
}

TEST(NamespaceTeams, CopiesShareTheRules) {
  TeamMap copy = Map();
  TeamMap other = copy;
  EXPECT_EQ(other.TeamOfNamespace("vision-b", ""), "vision");
}

TEST(NamespaceTeams, RuleErrors) {
  EXPECT_EQ(NamespaceRuleError("ml"), "");
  EXPECT_EQ(NamespaceRuleError("/ml-.*/"), "");
  EXPECT_NE(NamespaceRuleError("/ml-(/").find("bad regular expression '/ml-(/'"),
            std::string::npos);
  EXPECT_NE(NamespaceRuleError("//"), "");
  EXPECT_NE(NamespaceRuleError(""), "");
  // A broken rule never matches (TeamMap is built from checked configuration, but stays safe).
  TeamMap teams(TeamConfig{.namespaces = {{"/ml-(/", "x"}}});
  EXPECT_EQ(teams.TeamOfNamespace("ml-(", ""), "unassigned");
}

}  // namespace
}  // namespace gw::jobs
