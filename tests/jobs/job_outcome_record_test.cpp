// A finished job's outcome and throughput in its record: written, read back identically, and
// absent from older records without breaking them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "jobs/job_records.h"

namespace gw::jobs {
namespace {

TEST(JobOutcomeRecord, RoundTripsThroughJson) {
  JobRecord r;
  r.job_id = "17";
  r.state = "FAILED";
  r.exit_code = 1;
  JobOutcomeRecord o;
  o.outcome = "failed";
  o.cause = "gpu_fault";
  o.summary = "XID 79 (GPU fell off the bus) on GPU 3, 4 s before the job ended";
  o.evidence.push_back({.time = 1000, .gpu = 3u, .kind = "xid", .value = 79, .detail = "XID 79"});
  o.evidence.push_back(
      {.time = 1004, .gpu = std::nullopt, .kind = "exit_code", .value = 1, .detail = "exit 1"});
  r.outcome = o;
  JobThroughputRecord t;
  t.unit = "samples";
  t.metric = "training_samples_total";
  t.total = 36000;
  t.avg_per_s = 120;
  t.per_gpu_hour = 72000;
  t.per_cost = 9000;
  r.throughput = t;

  const std::string line = JobRecordToJson(r);
  const nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["outcome"]["cause"], "gpu_fault");
  EXPECT_EQ(j["outcome"]["evidence"][0]["gpu"], 3);
  EXPECT_FALSE(j["outcome"]["evidence"][1].contains("gpu"));
  EXPECT_FALSE(j["throughput"].contains("per_kwh"));
  auto back = JobRecordFromJson(line);
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_TRUE(back->outcome.has_value());
  EXPECT_EQ(back->outcome->outcome, "failed");
  ASSERT_EQ(back->outcome->evidence.size(), 2u);
  EXPECT_EQ(back->outcome->evidence[0].gpu, 3u);
  EXPECT_FALSE(back->outcome->evidence[1].gpu.has_value());
  EXPECT_DOUBLE_EQ(back->outcome->evidence[0].value, 79);
  ASSERT_TRUE(back->throughput.has_value());
  EXPECT_DOUBLE_EQ(*back->throughput->per_gpu_hour, 72000);
  EXPECT_FALSE(back->throughput->per_kwh.has_value());
  EXPECT_EQ(JobRecordToJson(*back), line);
}

TEST(JobOutcomeRecord, OlderRecordsReadWithoutOutcomeAndUtilizationInPercent) {
  auto r = JobRecordFromJson(
      R"({"job_id":"7","state":"COMPLETED","gpu":{"gpus":[0],"util_avg_pct":40,"util_max_pct":90}})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->outcome.has_value());
  EXPECT_FALSE(r->throughput.has_value());
  ASSERT_TRUE(r->gpu.has_value());
  EXPECT_DOUBLE_EQ(r->gpu->util_avg, 0.40);
  EXPECT_DOUBLE_EQ(r->gpu->util_max, 0.90);
}

}  // namespace
}  // namespace gw::jobs
