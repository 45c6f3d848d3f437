#include <gtest/gtest.h>

#include <regex>

#include "config/config.h"
#include "support/mutate.h"
#include "support/process.h"

namespace gw::config {
namespace {

TEST(ConfigFuzz, MutantsAreAcceptedOrRefusedWithALocation) {
  const std::string valid =
      "listen: 127.0.0.1:9000\nlog_level: info\nweb_config_file: \"\"\nnvml:\n"
      "  library: libnvidia-ml.so.1\n  call_timeout: 2s\nsimulate:\n  scenario: demo\n"
      "  clock: stepped\n  speed: 10\ncollect:\n  interval: 500ms\n  slow_interval: 1m\n"
      "  memory_peak_interval: 0\n  per_process_metrics: true\n";
  gw::testing::TempDir dir;
  const std::string path = dir / "c.yaml";
  const std::regex located("^" + path + "(:[0-9]+)?: .+");
  gw::testing::Mutator mutator(20261129);
  int refused = 0;
  for (int i = 0; i < 1500; ++i) {
    std::string mutant = mutator.Mutate(valid);
    gw::testing::WriteFile(path, mutant);
    Config c;
    Status s = LoadConfigFile(path, &c);
    if (s.ok()) continue;
    ++refused;
    EXPECT_TRUE(std::regex_match(s.message(), located)) << s.message() << "\n--- input:\n"
                                                        << mutant;
  }
  EXPECT_GT(refused, 100);  // the mutator does produce bad files
}

}  // namespace
}  // namespace gw::config
