#include <gtest/gtest.h>

#include <regex>

#include "sim/scenario.h"
#include "support/mutate.h"

namespace gw::sim {
namespace {

TEST(ScenarioFuzz, MutantsOfEveryShippedScenarioAreAcceptedOrRefusedWithALine) {
  gw::testing::Mutator mutator(7);
  int refused = 0, tried = 0;
  for (const EmbeddedScenario& scenario : EmbeddedScenarios()) {
    if (scenario.name.starts_with("fleet-1024")) continue;  // large; the others cover the same keys
    std::string text(scenario.text);
    for (int i = 0; i < 150; ++i, ++tried) {
      std::string mutant = mutator.Mutate(text);
      auto parsed = ParseScenario(mutant, "fuzz.yaml", 1700000000);
      if (parsed.ok()) continue;
      ++refused;
      EXPECT_TRUE(std::regex_search(parsed.error().message, std::regex("^fuzz\\.yaml:[0-9]+: ")))
          << parsed.error().message << "\n--- mutant of " << scenario.name << ":\n"
          << mutant;
    }
  }
  EXPECT_GT(tried, 1000);
  EXPECT_GT(refused, tried / 10);
}

}  // namespace
}  // namespace gw::sim
