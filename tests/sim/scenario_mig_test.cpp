// Parsing of the datacenter keys (mig, nvlink, driver.missing, profiling overrides): placements
// and ids, and bad input refused with "file:line: what is wrong".
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "sim/gpm.h"
#include "sim/scenario.h"
#include "sim/workload.h"
#include "support/mutate.h"

namespace gw::sim {
namespace {

Expected<Scenario> Parse(const std::string& text) {
  return ParseScenario(text, "t.yaml", 1'700'000'000);
}

std::string ErrorOf(const Expected<Scenario>& result) {
  return result.ok() ? std::string("(parsed)") : result.error().message;
}

TEST(ScenarioMig, PlacementsGiveTheDriversInstanceIds) {
  const Expected<Scenario> s = Parse(R"(
gpus:
  - model: H100
    mig:
      instances: "1g.10gb, 2g.20gb,3g.40gb,1g.10gb"
      changes:
        - {at: 1m, instances: [7x1g.10gb]}
        - {at: 2m, mode: disabled, pending: enabled}
)");
  ASSERT_TRUE(s.ok()) << ErrorOf(s);
  const std::vector<MigLayout>& layouts = s->gpus[0].mig;
  ASSERT_EQ(layouts.size(), 3u);
  // 3g must take slices 4-7 for all four to fit: 2g at 0-1 (id 3), 1g at 2 and 3 (ids 9, 10).
  ASSERT_EQ(layouts[0].instances.size(), 4u);
  EXPECT_EQ(layouts[0].instances[0].profile->name, "3g.40gb");
  EXPECT_EQ(layouts[0].instances[0].gpu_instance_id, 2u);
  EXPECT_EQ(layouts[0].instances[1].gpu_instance_id, 3u);
  EXPECT_EQ(layouts[0].instances[2].gpu_instance_id, 9u);
  EXPECT_EQ(layouts[0].instances[3].gpu_instance_id, 10u);
  EXPECT_TRUE(layouts[0].enabled);
  ASSERT_EQ(layouts[1].instances.size(), 7u);
  EXPECT_EQ(layouts[1].at_us, 60'000'000);
  EXPECT_EQ(layouts[1].instances[6].gpu_instance_id, 13u);
  EXPECT_FALSE(layouts[2].enabled);
  EXPECT_TRUE(layouts[2].pending);
  EXPECT_TRUE(layouts[2].instances.empty());
  // UUIDs: "MIG-" and unique; id 9 and 10 are 1g.10gb in both layouts and keep theirs.
  EXPECT_EQ(layouts[0].instances[0].uuid.rfind("MIG-", 0), 0u);
  EXPECT_EQ(layouts[0].instances[0].uuid.size(), 40u);
  EXPECT_NE(layouts[0].instances[2].uuid, layouts[0].instances[3].uuid);
  EXPECT_EQ(layouts[1].instances[2].uuid, layouts[0].instances[2].uuid);  // id 9
  EXPECT_NE(layouts[1].instances[0].uuid, layouts[0].instances[0].uuid);  // id 7 is new
  // The instance of a process, by position, profile or UUID, against the layout in force.
  ProcessSpec p;
  p.mig_profile = "2g.20gb";
  EXPECT_EQ(MigInstanceOf(layouts[0], p), 1);
  EXPECT_EQ(MigInstanceOf(layouts[1], p), -1);
  EXPECT_EQ(MigLayoutAt(s->gpus[0], 59'999'999), &layouts[0]);
  EXPECT_EQ(MigLayoutAt(s->gpus[0], 60'000'000), &layouts[1]);
}

TEST(ScenarioMig, ReplicasGetTheirOwnMigUuids) {
  const Expected<Scenario> s = Parse(
      "seed: 3\ngpus:\n  - model: A100-40GB\n    count: 2\n    mig: {instances: [2x3g.20gb]}\n");
  ASSERT_TRUE(s.ok()) << ErrorOf(s);
  EXPECT_NE(s->gpus[0].mig[0].instances[0].uuid, s->gpus[1].mig[0].instances[0].uuid);
  const Expected<Scenario> again = Parse(
      "seed: 3\ngpus:\n  - model: A100-40GB\n    count: 2\n    mig: {instances: [2x3g.20gb]}\n");
  EXPECT_EQ(s->gpus[1].mig[0].instances[1].uuid, again->gpus[1].mig[0].instances[1].uuid);
}

TEST(ScenarioMig, BadInputNamesTheLine) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"gpus:\n  - model: L40S\n    mig: {instances: [1g.10gb]}\n",
       "t.yaml:3: gpus[0].mig: NVIDIA L40S has no MIG"},
      {"gpus:\n  - model: H100\n    mig:\n      instances: [1g.5gb]\n",
       "t.yaml:4: gpus[0].mig.instances[0]: unknown MIG profile '1g.5gb'"},
      {"gpus:\n  - model: H100\n    mig:\n      instances: [8x1g.10gb]\n",
       "between 1 and 7 instances"},
      {"gpus:\n  - model: H100\n    mig:\n      instances: [4g.40gb, 4g.40gb]\n",
       "t.yaml:4: gpus[0].mig.instances: the instances need 8 compute slices"},
      {"gpus:\n  - model: H100\n    mig:\n      instances: [3g.40gb, 3g.40gb, 1g.10gb]\n",
       "do not fit on the GPU's 8 memory slices"},
      {"gpus:\n  - model: H100\n    mig: {mode: off}\n", "mode: expected enabled or disabled"},
      {"gpus:\n  - model: H100\n    mig: {mode: disabled, instances: [1g.10gb]}\n",
       "MIG instances need mode: enabled"},
      {"gpus:\n  - model: H100\n    mig:\n      changes:\n        - {instances: [1g.10gb]}\n",
       "t.yaml:5: gpus[0].mig.changes[0]: missing key 'at'"},
      {"gpus:\n  - model: H100\n    mig:\n      changes:\n        - {at: 0s}\n",
       "must be later than the previous MIG layout's"},
      {"gpus:\n  - model: H100\n    mig:\n      instances: [{profile: 1g.10gb, uuid: GPU-1}]\n",
       "uuid: expected MIG-"},
      {"gpus:\n  - model: H100\n    count: 2\n    mig:\n      instances: [{profile: 1g.10gb, uuid: "
       "MIG-11111111-2222-4333-8444-555555555555}]\n",
       "not allowed with count > 1"},
      {"gpus:\n  - model: H100\n    processes:\n      - {pid: 1, mig_instance: 9}\n",
       "t.yaml:4: gpus[0].processes[0]: mig_instance: must be at most 6"},
      {"gpus:\n  - model: L40S\n    processes:\n      - {pid: 1, mig_instance: 0}\n",
       "mig_instance: NVIDIA L40S has no MIG"},
      {"gpus:\n  - model: L40S\n    faults:\n      - {type: nvlink_down, link: 0}\n",
       "t.yaml:4: gpus[0].faults[0]: NVIDIA L40S has no NVLink"},
      {"gpus:\n  - model: A100-80GB\n    faults:\n      - {type: nvlink_down, link: 12}\n",
       "link: must be at most 11"},
      {"gpus:\n  - model: H100\n    faults:\n      - {type: nvlink_down}\n",
       "nvlink_down needs 'link' (0-17)"},
      {"gpus:\n  - model: H100\n    faults:\n      - {type: nvlink_errors, rate_per_second: 0}\n",
       "rate_per_second: must be between"},
      {"nvlink: {topology: ring}\ngpus:\n  - model: H100\n",
       "t.yaml:1: nvlink: topology: expected hgx or none"},
      {"driver:\n  missing: [nvmlInit_v2]\ngpus:\n  - model: H100\n",
       "t.yaml:2: driver.missing[0]: 'nvmlInit_v2' is not an NVML function on a device or a GPM"},
      {"driver:\n  missing: [nvmlGpmNoSuch]\ngpus:\n  - model: H100\n", "'nvmlGpmNoSuch'"},
      {"gpus:\n  - model: H100\n    workload:\n      - {type: training, tensor_active: 120}\n",
       "tensor_active: must be between 0 and 100"},
      {"gpus:\n  - model: H100\n    workload:\n      - {type: busy_but_holow}\n",
       "unknown workload type 'busy_but_holow'"},
  };
  for (const Case& c : cases) {
    const std::string error = ErrorOf(Parse(c.text));
    EXPECT_NE(error.find(c.message), std::string::npos) << c.text << "\n=> " << error;
    EXPECT_TRUE(std::regex_search(error, std::regex("^t\\.yaml:[0-9]+: "))) << error;
  }
}

TEST(ScenarioMig, MutantsOfTheDatacenterScenariosAreAcceptedOrRefusedWithALine) {
  gw::testing::Mutator mutator(12);
  int tried = 0, refused = 0;
  for (const EmbeddedScenario& e : EmbeddedScenarios()) {
    if (e.name != "mig" && e.name != "hgx-nvlink" && e.name != "no-gpm" &&
        e.name != "busy-but-hollow")
      continue;
    for (int i = 0; i < 300; ++i, ++tried) {
      const std::string mutant = mutator.Mutate(std::string(e.text));
      const Expected<Scenario> parsed = ParseScenario(mutant, "fuzz.yaml", 1'700'000'000);
      if (parsed.ok()) continue;
      ++refused;
      EXPECT_TRUE(std::regex_search(parsed.error().message, std::regex("^fuzz\\.yaml:[0-9]+: ")))
          << parsed.error().message << "\n--- mutant of " << e.name << ":\n"
          << mutant;
    }
  }
  EXPECT_EQ(tried, 1200);
  EXPECT_GT(refused, tried / 10);
}

TEST(Profile, WorkloadsLoadThePipesTheirWay) {
  WorkloadSegment s;
  ASSERT_TRUE(DefaultWorkloadSegment("busy-but-hollow", &s));
  GpmPercents p = ProfileOf(s, s.util_pct, s.mem_util_pct);
  EXPECT_EQ(p[kGpmGraphics], s.util_pct);
  EXPECT_NEAR(p[kGpmSm], 5, 0.01);
  EXPECT_EQ(p[kGpmTensorAny], 0);
  ASSERT_TRUE(DefaultWorkloadSegment("memory_bound", &s));
  p = ProfileOf(s, s.util_pct, s.mem_util_pct);
  EXPECT_GT(p[kGpmDram], 80);
  EXPECT_LT(p[kGpmSm], 35);
  ASSERT_TRUE(DefaultWorkloadSegment("training", &s));
  p = ProfileOf(s, s.util_pct, s.mem_util_pct);
  EXPECT_GT(p[kGpmHmma], 50);
  EXPECT_EQ(p[kGpmTensorAny], p[kGpmHmma]);
  // Inference between bursts: everything scales with the lull.
  ASSERT_TRUE(DefaultWorkloadSegment("inference", &s));
  const GpmPercents burst = ProfileOf(s, s.util_pct, s.mem_util_pct);
  const GpmPercents lull = ProfileOf(s, s.base_util_pct, s.base_mem_util_pct);
  EXPECT_NEAR(lull[kGpmSm], burst[kGpmSm] * s.base_util_pct / s.util_pct, 1e-9);
  EXPECT_GT(burst[kGpmImma], 0);
  ASSERT_TRUE(DefaultWorkloadSegment("idle", &s));
  for (double v : ProfileOf(s, 0, 0)) EXPECT_EQ(v, 0);
}

}  // namespace
}  // namespace gw::sim
