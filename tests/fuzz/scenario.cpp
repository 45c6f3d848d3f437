// Simulator scenario files (--simulate FILE, docs/scenarios.md).
#include "sim/scenario.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto scenario = gw::sim::ParseScenario(gw::fuzz::AsText(data, size), "fuzz.yaml", 1'700'000'000);
  if (!scenario.ok() && scenario.error().message.rfind("fuzz.yaml", 0) != 0) {
    gw::fuzz::Fail("scenario error without the file: " + scenario.error().message);
  }
  return 0;
}
