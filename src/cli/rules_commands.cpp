// `gpuwarden rules check|test`: thin wrappers over rules/ printing as promtool does.
#include "cli/rules_commands.h"

#include <cstdio>
#include <iostream>

#include "rules/rule_file.h"
#include "rules/unit_test.h"

namespace gw::cli {

int RunRulesCheck(const std::vector<std::string>& files) {
  bool failed = false;
  for (const std::string& f : files) {
    std::printf("Checking %s\n", f.c_str());
    auto r = rules::ParseRuleFile(f);
    if (!r.ok()) {
      std::fflush(stdout);
      std::fprintf(stderr, "  FAILED:\n%s\n", r.error().message.c_str());
      std::fflush(stderr);
      std::printf("\n");
      failed = true;
      continue;
    }
    size_t n = 0;
    for (const auto& g : r->groups) n += g.rules.size();
    std::printf("  SUCCESS: %zu rules found\n\n", n);
  }
  std::fflush(stdout);
  return failed ? 1 : 0;
}

int RunRulesTest(const std::vector<std::string>& files) {
  return rules::RunRuleUnitTests(files, std::cout, std::cerr);
}

}  // namespace gw::cli
