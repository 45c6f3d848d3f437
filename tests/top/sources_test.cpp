// The remote source's parsers: the agent's snapshot JSON round-trips into the same frame as the
// snapshot itself; alerts and jobs documents; bad documents are refused with a reason.
#include <gtest/gtest.h>

#include "datacenter_snapshot.h"
#include "serve/snapshot_json.h"
#include "test_frames.h"
#include "top/sources.h"

namespace gw::top {
namespace {

// The task layer's job of a process travels as its "job_id" and lands in top's process row.
TEST(TopSnapshotJson, AProcessCarriesItsJob) {
  auto snap = TestSnapshot();
  const std::map<unsigned, std::string> jobs = {{4242, "train-7"}};
  const std::string body = serve::SnapshotJson(*snap, &jobs);
  auto parsed = ParseSnapshotJson(body, nullptr);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  std::vector<ProcessView> rows;
  AppendProcessViews((*parsed)->gpus[1], {}, &rows);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].job, "train-7");
  EXPECT_EQ(rows[0].name, "python3");
  EXPECT_EQ(rows[1].job, "");  // not attributed: no key
  EXPECT_EQ(serve::SnapshotJson(*snap).find("job_id"), std::string::npos);
  // A local view's attributions name the job where the details do not.
  rows.clear();
  AppendProcessViews(snap->gpus[1], {{4243, "eval-3"}}, &rows);
  EXPECT_EQ(rows[1].job, "eval-3");
}

TEST(TopSnapshotJson, RoundTripsIntoTheSameView) {
  auto snap = TestSnapshot();
  std::map<unsigned, std::vector<collect::HealthProblem>> health;
  auto parsed = ParseSnapshotJson(serve::SnapshotJson(*snap), &health);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  ASSERT_EQ((*parsed)->gpus.size(), snap->gpus.size());
  EXPECT_EQ((*parsed)->stats.driver_version, "550.127.08");
  EXPECT_DOUBLE_EQ((*parsed)->taken_unix_seconds, 1700000090);
  for (size_t i = 0; i < snap->gpus.size(); ++i) {
    GpuView want = ViewOf(snap->gpus[i]);
    GpuView got = ViewOf((*parsed)->gpus[i]);
    SCOPED_TRACE(i);
    EXPECT_EQ(got.index, want.index);
    EXPECT_EQ(got.uuid, want.uuid);
    EXPECT_EQ(got.lost, want.lost);
    EXPECT_EQ(got.throttle, want.throttle);
    EXPECT_EQ(got.xids, want.xids);
    // Every process with its details and host figures.
    std::vector<ProcessView> want_procs, got_procs;
    AppendProcessViews(snap->gpus[i], {}, &want_procs);
    AppendProcessViews((*parsed)->gpus[i], {}, &got_procs);
    ASSERT_EQ(got_procs.size(), want_procs.size());
    for (size_t k = 0; k < want_procs.size(); ++k) {
      EXPECT_EQ(got_procs[k].pid, want_procs[k].pid);
      EXPECT_EQ(got_procs[k].name, want_procs[k].name);
      EXPECT_EQ(got_procs[k].user, want_procs[k].user);
      EXPECT_EQ(got_procs[k].command, want_procs[k].command);
      EXPECT_DOUBLE_EQ(got_procs[k].memory_bytes, want_procs[k].memory_bytes);
      EXPECT_DOUBLE_EQ(got_procs[k].sm_ratio, want_procs[k].sm_ratio);
      EXPECT_DOUBLE_EQ(got_procs[k].cpu_ratio, want_procs[k].cpu_ratio);
      EXPECT_DOUBLE_EQ(got_procs[k].host_memory_bytes, want_procs[k].host_memory_bytes);
    }
    EXPECT_EQ(std::isnan(got.power_w), std::isnan(want.power_w));
    if (!std::isnan(want.power_w)) {
      EXPECT_DOUBLE_EQ(got.power_w, want.power_w);
    }
    EXPECT_EQ(got.ecc_uncorrected == want.ecc_uncorrected, !std::isnan(want.ecc_uncorrected));
    // The agent's health verdict comes along.
    EXPECT_EQ(health[want.index].size(), collect::HealthProblems(snap->gpus[i]).size());
  }
  EXPECT_EQ(ViewOf((*parsed)->gpus[1]).throttle, "power cap");
  EXPECT_EQ(health[2].front().severity, collect::Severity::kCritical);
}

// What top shows of MIG instances, NVLink links and profiling values comes through the agent's
// JSON unchanged (absent stays absent).
TEST(TopSnapshotJson, RoundTripsMigNvLinkAndProfiling) {
  auto snap = DatacenterSnapshot();
  auto parsed = ParseSnapshotJson(serve::SnapshotJson(*snap), nullptr);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  ASSERT_EQ((*parsed)->gpus.size(), 3u);
  auto same = [](double a, double b) { return std::isnan(a) ? std::isnan(b) : a == b; };
  for (size_t i = 0; i < snap->gpus.size(); ++i) {
    SCOPED_TRACE(i);
    GpuView want = ViewOf(snap->gpus[i]);
    GpuView got = ViewOf((*parsed)->gpus[i]);
    EXPECT_EQ((*parsed)->gpus[i].gpm_supported, snap->gpus[i].gpm_supported);
    EXPECT_TRUE(same(got.sm_active, want.sm_active)) << got.sm_active;
    EXPECT_TRUE(same(got.tensor_active, want.tensor_active));
    EXPECT_EQ(got.hollow, want.hollow);
    EXPECT_TRUE(same(got.mig_current, want.mig_current));
    EXPECT_TRUE(same(got.mig_pending, want.mig_pending));
    ASSERT_EQ(got.mig.size(), want.mig.size());
    for (size_t m = 0; m < want.mig.size(); ++m) {
      EXPECT_EQ(got.mig[m].gpu_instance_id, want.mig[m].gpu_instance_id);
      EXPECT_EQ(got.mig[m].profile, want.mig[m].profile);
      EXPECT_EQ(got.mig[m].uuid, want.mig[m].uuid);
      EXPECT_EQ(got.mig[m].processes, want.mig[m].processes);
      EXPECT_TRUE(same(got.mig[m].sm_active, want.mig[m].sm_active)) << m;
      EXPECT_TRUE(same(got.mig[m].memory_used_bytes, want.mig[m].memory_used_bytes)) << m;
    }
    EXPECT_EQ(got.nvlinks, want.nvlinks);
    EXPECT_EQ(got.nvlinks_up, want.nvlinks_up);
    EXPECT_EQ(got.nvlinks_down, want.nvlinks_down);
    EXPECT_TRUE(same(got.nvlink_errors, want.nvlink_errors));
  }
  EXPECT_EQ((*parsed)->gpus[0].processes[0].gpu_instance_id, 1u);
  EXPECT_EQ(ViewOf((*parsed)->gpus[1]).nvlinks_down, "3");
}

TEST(TopSnapshotJson, RefusesWhatIsNotASnapshot) {
  for (const char* bad : {"", "not json", "[]", "{\"gpus\": 3}", "{\"status\":\"success\"}"}) {
    auto parsed = ParseSnapshotJson(bad, nullptr);
    EXPECT_FALSE(parsed.ok()) << bad;
    if (!parsed.ok()) {
      EXPECT_NE(parsed.error().message.find("snapshot"), std::string::npos);
    }
  }
  auto wrong_type = ParseSnapshotJson(R"js({"gpus":[{"index":"zero"}]})js", nullptr);
  EXPECT_FALSE(wrong_type.ok());
}

TEST(TopAlertsJson, KeepsFiringAndPending) {
  auto alerts = ParseAlertsJson(R"js({"status":"success","data":{"alerts":[
    {"labels":{"alertname":"GpuFellOffBus","severity":"critical","gpu":"1"},
     "annotations":{"summary":"GPU 1 fell off the bus (XID 79)"},"state":"firing"},
    {"labels":{"alertname":"GpuLost","severity":"critical","gpu":"1"},"state":"pending"},
    {"labels":{"alertname":"Old"},"state":"inactive"}]}})js");
  ASSERT_TRUE(alerts.ok());
  ASSERT_EQ(alerts->size(), 2u);
  EXPECT_EQ((*alerts)[0].name, "GpuFellOffBus");
  EXPECT_EQ((*alerts)[0].gpu, "1");
  EXPECT_EQ((*alerts)[0].summary, "GPU 1 fell off the bus (XID 79)");
  EXPECT_EQ((*alerts)[1].state, "pending");
  EXPECT_FALSE(ParseAlertsJson(R"js({"data":{}})js").ok());
  EXPECT_FALSE(ParseAlertsJson("<html>").ok());
}

TEST(TopJobsJson, NamesTheHoldersOfEachGpu) {
  auto holders = ParseJobsJson(R"js({"status":"success","data":{"jobs":[
    {"job_id":"train-7","team":"vision","user":"alice","state":"RUNNING","gpu":{"gpus":[1]}},
    {"job_id":"11","team":"sim","user":"bob","state":"RUNNING","gpu":{"gpus":[0,1]}},
    {"job_id":"12","team":"bio","state":"PENDING"}]}})js");
  ASSERT_TRUE(holders.ok());
  ASSERT_EQ(holders->size(), 2u);
  EXPECT_EQ((*holders)[0].job, "11");
  EXPECT_EQ((*holders)[1].job, "train-7,11");
  EXPECT_EQ((*holders)[1].team, "vision,sim");
  EXPECT_FALSE(ParseJobsJson(R"js({"data":{"jobs":{}}})js").ok());
}

TEST(TopQueueJson, CountsWaitingJobsAndTheLongestWait) {
  auto q = ParseQueueJson(R"js({"status":"success","data":{"known":true,"up":true,
    "scheduler":"slurm","jobs":[{"job_id":"12","wait_s":900},{"job_id":"15","wait_s":3600},
    {"job_id":"16","wait_s":0}]}})js");
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_TRUE(q->shown);
  EXPECT_TRUE(q->up);
  EXPECT_EQ(q->jobs, 3u);
  EXPECT_EQ(q->longest_wait_s, 3600);
  auto none = ParseQueueJson(
      R"js({"status":"success","data":{"known":false,"up":false,"scheduler":"none","jobs":[]}})js");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->shown);
  auto stale = ParseQueueJson(R"js({"data":{"known":true,"up":false,"jobs":[{"wait_s":5}]}})js");
  ASSERT_TRUE(stale.ok());
  EXPECT_TRUE(stale->shown);
  EXPECT_FALSE(stale->up);
  EXPECT_FALSE(ParseQueueJson(R"js({"data":{"jobs":{}}})js").ok());
  EXPECT_FALSE(ParseQueueJson("<html>").ok());
}

// The shape cli/service_cost_service.h documents: a priced target with outputs in the window, one
// whose outputs are not counted yet, and one without GPUs.
TEST(TopServicesJson, TakesCostPer1kAndOutputsPerSecond) {
  auto services = ParseServicesJson(R"js({"status":"success","data":{"currency":"EUR",
    "window_seconds":3600,"services":[
    {"target":"llm","gpus":[0],"outputs_selector":"inference_requests_total","output_unit":"request",
     "gpu_hours":0.5,"energy_kwh":0.2,"allocation_cost":1.8,"energy_cost":0.05,"cost":1.85,
     "outputs":144000,"window":{"seconds":1800,"cost":1.85,"outputs":144000},
     "cost_per_output":1.2847222222222223e-05,"cost_per_1k_outputs":0.012847222222222223},
    {"target":"embed","gpus":[1],"outputs_selector":"x_total","output_unit":"token",
     "gpu_hours":0.5,"energy_kwh":0.2,"allocation_cost":1.8,"energy_cost":0.05,"cost":1.85,
     "outputs":null,"window":{"seconds":1800,"cost":1.85,"outputs":null},
     "cost_per_output":null,"cost_per_1k_outputs":null},
    {"target":"web","gpus":[],"outputs_selector":"y_total","output_unit":"page",
     "outputs":10,"window":{"seconds":1800,"cost":0,"outputs":0},
     "cost_per_output":null,"cost_per_1k_outputs":null}]}})js");
  ASSERT_TRUE(services.ok()) << services.error().message;
  ASSERT_EQ(services->size(), 3u);
  const ServiceView& llm = (*services)[0];
  EXPECT_EQ(llm.target, "llm");
  EXPECT_EQ(llm.unit, "request");
  EXPECT_EQ(llm.currency, "EUR");
  EXPECT_TRUE(llm.has_gpus);
  EXPECT_TRUE(llm.outputs_known);
  EXPECT_DOUBLE_EQ(llm.cost_per_1k, 0.012847222222222223);
  EXPECT_DOUBLE_EQ(llm.outputs_per_s, 80);
  EXPECT_EQ(llm.window_s, 1800);
  const ServiceView& embed = (*services)[1];
  EXPECT_FALSE(embed.outputs_known);
  EXPECT_TRUE(std::isnan(embed.cost_per_1k));
  EXPECT_TRUE(std::isnan(embed.outputs_per_s));
  EXPECT_FALSE((*services)[2].has_gpus);
  EXPECT_EQ((*services)[2].outputs_per_s, 0);

  auto none = ParseServicesJson(R"js({"status":"success","data":{"currency":"USD",
    "window_seconds":3600,"services":[]}})js");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_FALSE(ParseServicesJson(R"js({"data":{"services":{}}})js").ok());
  EXPECT_FALSE(ParseServicesJson("<html>").ok());
}

}  // namespace
}  // namespace gw::top
