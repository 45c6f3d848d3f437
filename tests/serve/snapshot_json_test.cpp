// GET /api/snapshot's JSON (serve/snapshot_json.h) for datacenter GPUs built by hand: profiling
// values under their metric names and absent ones left out, MIG instances with their memory,
// processes and own profiling values, NVLink links with their state, errors and throughput. Also
// the same snapshot as `gpuwarden snapshot`'s table (cli/snapshot_view.h).
#include "serve/snapshot_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/snapshot_view.h"
#include "top/datacenter_snapshot.h"
#include "top/test_frames.h"

namespace gw::serve {
namespace {

using nlohmann::json;

class SnapshotJsonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    snapshot_ = top::DatacenterSnapshot();
    root_ = json::parse(SnapshotJson(*snapshot_));
    ASSERT_EQ(root_["gpus"].size(), 3u);
  }
  const json& Gpu(size_t i) const { return root_["gpus"][i]; }

  std::shared_ptr<collect::Snapshot> snapshot_;
  json root_;
};

TEST_F(SnapshotJsonTest, ProfilingValuesAreMetricsAndAbsentOnesAreLeftOut) {
  const json& hgx = Gpu(1);
  EXPECT_TRUE(hgx["gpm_supported"].get<bool>());
  EXPECT_DOUBLE_EQ(hgx["metrics"]["gpu_sm_active_ratio"].get<double>(), 0.04);
  EXPECT_DOUBLE_EQ(hgx["metrics"]["gpu_sm_occupancy_ratio"].get<double>(), 0.02);
  EXPECT_DOUBLE_EQ(hgx["metrics"]["gpu_dram_active_ratio"].get<double>(), 0.03);
  // A measured zero stays; a pipe nobody measured is not there.
  EXPECT_EQ(hgx["metrics"]["gpu_tensor_active_ratio{pipe=\"any\"}"].get<double>(), 0.0);
  EXPECT_FALSE(hgx["metrics"].contains("gpu_tensor_active_ratio{pipe=\"hmma\"}"));
  EXPECT_FALSE(hgx["metrics"].contains("gpu_pipe_active_ratio{pipe=\"fp64\"}"));

  const json& old = Gpu(2);
  EXPECT_FALSE(old["gpm_supported"].get<bool>());
  for (const auto& item : old["metrics"].items()) {
    for (const char* gpm : {"_sm_active", "_sm_occupancy", "_tensor_active", "_pipe_active",
                            "_dram_active", "_graphics_active"})
      EXPECT_EQ(item.key().find(gpm), std::string::npos) << item.key();
  }
  EXPECT_TRUE(old["mig"].empty());
  EXPECT_TRUE(old["nvlinks"].empty());
}

TEST_F(SnapshotJsonTest, MigInstancesCarryProfileMemoryProcessesAndTheirOwnProfiling) {
  const json& gpu = Gpu(0);
  EXPECT_EQ(gpu["metrics"]["gpu_mig_enabled{state=\"current\"}"].get<double>(), 1);
  EXPECT_EQ(gpu["metrics"]["gpu_mig_enabled{state=\"pending\"}"].get<double>(), 0);
  const json& mig = gpu["mig"];
  ASSERT_EQ(mig.size(), 3u);
  const collect::MigInstanceSnapshot& want = snapshot_->gpus[0].mig[0];
  const json& big = mig[0];
  EXPECT_EQ(big["gpu_instance_id"].get<unsigned>(), want.gpu_instance_id);
  EXPECT_EQ(big["compute_instance_id"].get<unsigned>(), 0u);
  EXPECT_EQ(big["uuid"].get<std::string>(), want.uuid);
  EXPECT_EQ(big["profile"].get<std::string>(), "3g.40gb");
  EXPECT_DOUBLE_EQ(big["slice_ratio"].get<double>(), 3.0 / 7);
  EXPECT_DOUBLE_EQ(big["memory_total_bytes"].get<double>(), want.memory_total_bytes);
  EXPECT_DOUBLE_EQ(big["memory_used_bytes"].get<double>(), want.memory_used_bytes);
  EXPECT_DOUBLE_EQ(big["metrics"]["gpu_mig_sm_active_ratio"].get<double>(), 0.83);
  EXPECT_DOUBLE_EQ(big["metrics"]["gpu_mig_tensor_active_ratio{pipe=\"any\"}"].get<double>(), 0.61);
  EXPECT_DOUBLE_EQ(big["metrics"]["gpu_mig_pipe_active_ratio{pipe=\"fp16\"}"].get<double>(), 0.12);
  EXPECT_EQ(big["metrics"].size(), 4u) << big["metrics"].dump();
  ASSERT_EQ(big["processes"].size(), 2u);
  EXPECT_EQ(big["processes"][1]["pid"].get<unsigned>(), 5102u);
  EXPECT_EQ(big["processes"][1]["gpu_instance_id"].get<unsigned>(), 1u);
  // Without GPM values and with a failed memory read: the keys are not there.
  const json& small = mig[2];
  EXPECT_EQ(small["profile"].get<std::string>(), "1g.10gb");
  EXPECT_TRUE(small["metrics"].empty());
  EXPECT_TRUE(small.contains("memory_total_bytes"));
  EXPECT_FALSE(small.contains("memory_used_bytes"));
  EXPECT_FALSE(small.contains("memory_free_bytes"));
  EXPECT_TRUE(small["processes"].empty());
  // The GPU's own process list names the instance; a process outside MIG has no such key.
  EXPECT_EQ(gpu["processes"][0]["gpu_instance_id"].get<unsigned>(), 1u);
  const json plain = json::parse(SnapshotJson(*top::TestSnapshot()))["gpus"][1]["processes"];
  ASSERT_EQ(plain.size(), 2u);
  EXPECT_FALSE(plain[0].contains("gpu_instance_id")) << plain.dump();
}

// Who each process is (collect/process_details.h) under the contract's keys; what is unknown is
// left out.
TEST_F(SnapshotJsonTest, ProcessesCarryTheirDetailsAndHostFigures) {
  const json procs = json::parse(SnapshotJson(*top::TestSnapshot()))["gpus"][1]["processes"];
  ASSERT_EQ(procs.size(), 2u);
  EXPECT_EQ(procs[0]["pid"], 4242);
  EXPECT_EQ(procs[0]["name"], "python3");
  EXPECT_EQ(procs[0]["user"], "alice");
  EXPECT_EQ(procs[0]["command"], "python3 train.py --epochs 90");
  EXPECT_DOUBLE_EQ(procs[0]["host_cpu_ratio"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(procs[0]["host_memory_bytes"].get<double>(), 6.0 * (1 << 30));
  EXPECT_DOUBLE_EQ(procs[0]["sm_utilization_ratio"].get<double>(), 0.83);
  EXPECT_FALSE(procs[0].contains("job_id"));
  EXPECT_FALSE(procs[1].contains("command")) << procs[1].dump();  // its command line is unknown
  // A process with nothing known beyond NVML's figures: pid and memory only.
  const json mig = Gpu(0)["processes"][0];
  for (const char* key : {"name", "user", "command", "host_cpu_ratio", "host_memory_bytes"})
    EXPECT_FALSE(mig.contains(key)) << key << " " << mig.dump();
  // The task layer's job, where it attributed one.
  const std::map<unsigned, std::string> jobs = {{4243, "eval-3"}};
  const json with_jobs =
      json::parse(SnapshotJson(*top::TestSnapshot(), &jobs))["gpus"][1]["processes"];
  EXPECT_EQ(with_jobs[1]["job_id"], "eval-3");
  EXPECT_FALSE(with_jobs[0].contains("job_id"));
}

TEST_F(SnapshotJsonTest, NvLinksCarryStateErrorsAndThroughput) {
  const json& hgx = Gpu(1);
  EXPECT_EQ(hgx["metrics"]["gpu_nvlink_links"].get<double>(), 18);
  EXPECT_EQ(hgx["metrics"]["gpu_nvlink_links_down"].get<double>(), 1);
  EXPECT_EQ(hgx["metrics"]["gpu_nvlink_errors_total{type=\"crc_flit\"}"].get<double>(), 4096);
  const json& links = hgx["nvlinks"];
  ASSERT_EQ(links.size(), 18u);
  for (size_t l = 0; l < links.size(); ++l) {
    EXPECT_EQ(links[l]["link"].get<unsigned>(), l);
    EXPECT_EQ(links[l]["up"].get<bool>(), l != 3) << l;
  }
  EXPECT_EQ(links[5]["crc_errors"].get<double>(), 4096);
  EXPECT_EQ(links[5]["replay_errors"].get<double>(), 2);
  EXPECT_EQ(links[3]["recovery_errors"].get<double>(), 1);
  EXPECT_DOUBLE_EQ(links[0]["tx_bytes_per_second"].get<double>(), 120e9 / 17);
  EXPECT_DOUBLE_EQ(links[0]["rx_bytes_per_second"].get<double>(), 118e9 / 17);
  EXPECT_EQ(hgx["xid_counts"]["74"].get<unsigned>(), 3u);
}

TEST_F(SnapshotJsonTest, ALinkWithoutReadingsHasOnlyItsNumber) {
  snapshot_->gpus[1].nvlinks[7] = collect::NvLinkSnapshot{};
  snapshot_->gpus[1].nvlinks[7].link = 7;
  const json link = json::parse(SnapshotJson(*snapshot_))["gpus"][1]["nvlinks"][7];
  EXPECT_EQ(link, json({{"link", 7}})) << link.dump();
}

// The line of the table that contains `needle` ("" if none).
std::string LineWith(const std::string& text, const std::string& needle) {
  size_t at = text.find(needle);
  if (at == std::string::npos) return "";
  size_t from = text.rfind('\n', at);
  from = from == std::string::npos ? 0 : from + 1;
  return text.substr(from, text.find('\n', at) - from);
}

TEST_F(SnapshotJsonTest, TheTableShowsSmActiveMigInstancesAndNvLinks) {
  const std::string table = cli::SnapshotTable(*snapshot_);
  EXPECT_NE(table.find("UTIL  SM ACT  MEM"), std::string::npos) << table;
  // SM active under its header; "-" for the A100 without GPM, never 0.
  const size_t column = LineWith(table, "SM ACT").find("SM ACT");
  EXPECT_EQ(LineWith(table, "NVIDIA A100").substr(column, 2), "- ") << table;
  const std::string hgx = LineWith(table, "\n1    NVIDIA");
  EXPECT_EQ(hgx.substr(column, 3), "4% ") << table;
  // GPU 0's MIG mode and instances, in order, under it.
  EXPECT_NE(table.find("     MIG on, off after the next GPU reset\n"), std::string::npos) << table;
  const std::string big = LineWith(table, "mig 1 ");
  EXPECT_NE(big.find("3g.40gb"), std::string::npos) << big;
  EXPECT_NE(big.find("mem 20.0/39.5 GiB"), std::string::npos) << big;
  EXPECT_NE(big.find("sm act 83%"), std::string::npos) << big;
  EXPECT_NE(big.find("procs 2  MIG-10000000-1111-5222-8333-444444444444"), std::string::npos);
  EXPECT_NE(LineWith(table, "mig 13").find("mem -/9.8 GiB"), std::string::npos) << table;
  EXPECT_NE(LineWith(table, "mig 13").find("sm act -"), std::string::npos) << table;
  EXPECT_LT(table.find("mig 13"), table.find("\n1    NVIDIA"));
  // GPU 1's links: the down one named, the errors summed.
  EXPECT_NE(table.find("     NVLink 17/18 up, down: 3, errors 4099\n"), std::string::npos) << table;
  const size_t a100 = table.find("NVIDIA A100");
  const std::string a100_rows = table.substr(a100, table.find("\n\n", a100) - a100);
  EXPECT_EQ(a100_rows.find("NVLink"), std::string::npos) << table;  // it has none
  EXPECT_EQ(a100_rows.find("MIG"), std::string::npos) << table;
}

}  // namespace
}  // namespace gw::serve
