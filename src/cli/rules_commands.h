// cli/rules_commands.h — `gpuwarden rules check FILE…` and `gpuwarden rules test FILE…`,
// promtool-compatible (`promtool check rules`, `promtool test rules`, Prometheus 2.42).
#ifndef GPUWARDEN_CLI_RULES_COMMANDS_H_
#define GPUWARDEN_CLI_RULES_COMMANDS_H_

#include <string>
#include <vector>

namespace gw::cli {

// Checks rule files; prints like promtool ("Checking FILE", "  SUCCESS: N rules found" or
// "  FAILED:" and one "FILE:LINE:COL: reason" per problem). Exit 0, or 1 if any file failed.
int RunRulesCheck(const std::vector<std::string>& files);

// Runs rule unit-test files; prints like promtool. Exit 0 if all passed, 1 otherwise.
int RunRulesTest(const std::vector<std::string>& files);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_RULES_COMMANDS_H_
