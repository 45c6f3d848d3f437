// dcgm-exporter compatibility through the real binary: `gpuwarden serve` on a simulated fleet with
// `exposition.names: both` answers /metrics with dcgm-exporter's names for every reading it has
// under its own; with `dcgm-exporter` the device families are dcgm-exporter's only.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "compat/dcgm_exporter_upstream.h"
#include "support/agent_process.h"
#include "support/process.h"

namespace gw::testing {
namespace {

// Upstream metric → the gpuwarden series it is written from, and the factor between the units.
struct Source {
  std::string_view dcgm;
  std::string_view family;  // gpuwarden family
  std::map<std::string, std::string> labels;
  double factor;  // dcgm = round?(gpuwarden × factor)
};
const std::vector<Source>& Sources() {
  static const std::vector<Source> s = {
      {"DCGM_FI_DEV_SM_CLOCK", "gpu_sm_clock_hertz", {}, 1e-6},
      {"DCGM_FI_DEV_MEM_CLOCK", "gpu_memory_clock_hertz", {}, 1e-6},
      {"DCGM_FI_DEV_MEMORY_TEMP", "gpu_memory_temperature_celsius", {}, 1},
      {"DCGM_FI_DEV_GPU_TEMP", "gpu_temperature_celsius", {}, 1},
      {"DCGM_FI_DEV_POWER_USAGE", "gpu_power_watts", {}, 1},
      {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "gpu_energy_joules_total", {}, 1000},
      {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "gpu_pcie_replays_total", {}, 1},
      {"DCGM_FI_DEV_GPU_UTIL", "gpu_utilization_ratio", {}, 100},
      {"DCGM_FI_DEV_MEM_COPY_UTIL", "gpu_memory_utilization_ratio", {}, 100},
      {"DCGM_FI_DEV_ENC_UTIL", "gpu_encoder_utilization_ratio", {}, 100},
      {"DCGM_FI_DEV_DEC_UTIL", "gpu_decoder_utilization_ratio", {}, 100},
      {"DCGM_FI_DEV_FB_FREE", "gpu_memory_free_bytes", {}, 1.0 / 1048576},
      {"DCGM_FI_DEV_FB_USED", "gpu_memory_used_bytes", {}, 1.0 / 1048576},
      {"DCGM_FI_DEV_FB_RESERVED", "gpu_memory_reserved_bytes", {}, 1.0 / 1048576},
      {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
       "gpu_remapped_rows",
       {{"type", "uncorrectable"}},
       1},
      {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "gpu_remapped_rows", {{"type", "correctable"}}, 1},
      {"DCGM_FI_DEV_ROW_REMAP_FAILURE", "gpu_remapped_rows_failure", {}, 1},
      {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gpu_graphics_active_ratio", {}, 1},
      {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gpu_tensor_active_ratio", {{"pipe", "any"}}, 1},
      {"DCGM_FI_PROF_DRAM_ACTIVE", "gpu_dram_active_ratio", {}, 1},
      {"DCGM_FI_PROF_PCIE_TX_BYTES", "gpu_pcie_transmit_bytes_per_second", {}, 1},
      {"DCGM_FI_PROF_PCIE_RX_BYTES", "gpu_pcie_receive_bytes_per_second", {}, 1},
      {"DCGM_FI_DEV_POWER_VIOLATION",
       "gpu_clock_event_seconds_total",
       {{"reason", "sw_power_cap"}},
       1e9},
      {"DCGM_FI_DEV_SYNC_BOOST_VIOLATION",
       "gpu_clock_event_seconds_total",
       {{"reason", "sync_boost"}},
       1e9},
      {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
       "gpu_ecc_errors_total",
       {{"type", "corrected"}, {"scope", "volatile"}},
       1},
      {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
       "gpu_ecc_errors_total",
       {{"type", "uncorrected"}, {"scope", "volatile"}},
       1},
      {"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",
       "gpu_ecc_errors_total",
       {{"type", "corrected"}, {"scope", "aggregate"}},
       1},
      {"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
       "gpu_ecc_errors_total",
       {{"type", "uncorrected"}, {"scope", "aggregate"}},
       1},
      {"DCGM_FI_DEV_RETIRED_SBE", "gpu_retired_pages", {{"cause", "multiple_single_bit"}}, 1},
      {"DCGM_FI_DEV_RETIRED_DBE", "gpu_retired_pages", {{"cause", "double_bit"}}, 1},
      {"DCGM_FI_DEV_RETIRED_PENDING", "gpu_retired_pages_pending", {}, 1},
      {"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
       "gpu_nvlink_errors_total",
       {{"type", "crc_flit"}},
       1},
      {"DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
       "gpu_nvlink_errors_total",
       {{"type", "crc_data"}},
       1},
      {"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
       "gpu_nvlink_errors_total",
       {{"type", "replay"}},
       1},
      {"DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
       "gpu_nvlink_errors_total",
       {{"type", "recovery"}},
       1},
      {"DCGM_FI_PROF_SM_ACTIVE", "gpu_sm_active_ratio", {}, 1},
      {"DCGM_FI_PROF_SM_OCCUPANCY", "gpu_sm_occupancy_ratio", {}, 1},
      {"DCGM_FI_PROF_PIPE_FP64_ACTIVE", "gpu_pipe_active_ratio", {{"pipe", "fp64"}}, 1},
      {"DCGM_FI_PROF_PIPE_FP32_ACTIVE", "gpu_pipe_active_ratio", {{"pipe", "fp32"}}, 1},
      {"DCGM_FI_PROF_PIPE_FP16_ACTIVE", "gpu_pipe_active_ratio", {{"pipe", "fp16"}}, 1},
  };
  return s;
}

// DCGM reports these as whole numbers.
bool Integer(std::string_view dcgm) {
  return dcgm.find("_UTIL") != std::string_view::npos ||
         dcgm.find("_CLOCK") != std::string_view::npos || dcgm.find("DCGM_FI_DEV_FB_") == 0 ||
         dcgm.find("ENERGY") != std::string_view::npos ||
         dcgm.find("VIOLATION") != std::string_view::npos;
}

std::string Scenario(const std::string& name) {
  return std::string(GW_SOURCE_DIR) + "/scenarios/" + name;
}

// Starts the agent with `names`, lets `seconds` of simulated time pass, and returns /metrics.
std::string MetricsWith(const std::string& scenario, const std::string& names,
                        double seconds = 30) {
  TempDir dir;
  WriteFile(dir / "gpuwarden.yaml", "exposition:\n  names: " + names + "\n");
  AgentProcess agent(
      {"--simulate", scenario, "--sim-clock", "stepped", "--config", dir / "gpuwarden.yaml"});
  if (agent.port() == 0) return "";
  agent.Advance(seconds);
  HttpReply page = agent.Get("/metrics");
  EXPECT_EQ(page.status, 200);
  return page.body;
}

// Every upstream metric gpuwarden has a reading for is written under dcgm-exporter's name, with
// the value in DCGM's unit; the dashboard's device (DEV) metrics on every fleet.
void CheckBoth(const std::string& body) {
  const std::vector<Sample> samples = ParseExposition(body);
  ASSERT_FALSE(samples.empty());
  int compared = 0;
  for (const Source& src : Sources()) {
    SCOPED_TRACE(std::string(src.dcgm));
    for (const Sample& ours : samples) {
      if (ours.name != src.family) continue;
      bool match = true;
      for (const auto& [k, v] : src.labels)
        if (!ours.labels.count(k) || ours.labels.at(k) != v) match = false;
      if (!match) continue;
      double theirs = Value(samples, std::string(src.dcgm), {{"gpu", ours.labels.at("gpu")}});
      ASSERT_FALSE(std::isnan(theirs))
          << "gpu " << ours.labels.at("gpu") << " has " << src.family << " but no " << src.dcgm;
      double want = ours.value * src.factor;
      if (Integer(src.dcgm)) want = std::round(want);
      EXPECT_NEAR(theirs, want, std::abs(want) * 1e-9 + 1e-9);
      ++compared;
    }
  }
  EXPECT_GE(compared, 8 * 10) << "the demo's eight GPUs, ten readings each at least";
  for (const auto& m : compat::kUpstreamMetrics) {
    if (m.listed != compat::Listed::kDefault || !m.not_provided.empty() || m.type == "label")
      continue;
    bool dashboard = false;
    for (std::string_view e : compat::kDashboardExpressions)
      dashboard |= e.find(std::string(m.name) + "{") != std::string_view::npos;
    // PROF fields need GPM (Hopper and newer): checked above wherever gpuwarden has the reading.
    if (dashboard && m.name.rfind("DCGM_FI_PROF_", 0) != 0) {
      EXPECT_FALSE(std::isnan(Value(samples, std::string(m.name)))) << m.name << " (dashboard)";
    }
  }
  // The labels dcgm-exporter writes, on a real page.
  for (const Sample& s : samples) {
    if (s.name.rfind("DCGM_FI_", 0) != 0) continue;
    for (std::string_view label : compat::kGpuLabels)
      EXPECT_TRUE(s.labels.count(std::string(label))) << s.name << " lacks " << label;
  }
}

TEST(DcgmExporterServe, BothNamesOnTheDemoFleet) {
  const std::string body = MetricsWith("demo", "both");
  CheckBoth(body);
  EXPECT_NE(body.find("\ngpu_temperature_celsius{"), std::string::npos);
}

TEST(DcgmExporterServe, BothNamesOnTheHgxNvlinkFleet) {
  if (!std::filesystem::exists(Scenario("hgx-nvlink.yaml")))
    GTEST_SKIP() << "scenarios/hgx-nvlink.yaml is not in this tree";
  // 110 s: GPU 3 has lost a link (60 s), GPU 5 is in a CRC error storm with XID 74 (90 s).
  const std::string body = MetricsWith(Scenario("hgx-nvlink.yaml"), "both", 110);
  CheckBoth(body);
  // An HGX node has GPM and NVLink: the profiling and NVLink fields are there.
  const std::vector<Sample> samples = ParseExposition(body);
  for (std::string_view name : {"DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
                                "DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"})
    EXPECT_FALSE(std::isnan(Value(samples, std::string(name)))) << name;
  EXPECT_EQ(Value(samples, "DCGM_FI_DEV_XID_ERRORS", {{"gpu", "5"}}), 74);
  EXPECT_EQ(Value(samples, "DCGM_FI_DEV_XID_ERRORS", {{"gpu", "0"}}), 0);
  EXPECT_GT(Value(samples, "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", {{"gpu", "5"}}) +
                Value(samples, "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", {{"gpu", "5"}}),
            1000);
  EXPECT_GT(Value(samples, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", {{"gpu", "0"}}), 0);
}

// A MIG-enabled GPU is written per MIG device, as dcgm-exporter's default device selection does:
// memory and profiling are each instance's, with GPU_I_ID and GPU_I_PROFILE; nothing of that GPU
// is written without them.
TEST(DcgmExporterServe, MigDevicesOnTheMigFleet) {
  const std::string body = MetricsWith(Scenario("mig.yaml"), "both");
  const std::vector<Sample> samples = ParseExposition(body);
  ASSERT_FALSE(samples.empty());
  std::set<std::string> mig_gpus;
  int instances = 0;
  for (const Sample& ours : samples) {
    if (ours.name != "gpu_mig_memory_used_bytes" && ours.name != "gpu_mig_sm_active_ratio")
      continue;
    const std::string gpu = ours.labels.at("gpu");
    mig_gpus.insert(gpu);
    const std::map<std::string, std::string> instance = {
        {"gpu", gpu},
        {"GPU_I_ID", ours.labels.at("mig_instance")},
        {"GPU_I_PROFILE", ours.labels.at("mig_profile")}};
    if (ours.name == "gpu_mig_memory_used_bytes") {
      ++instances;
      EXPECT_EQ(Value(samples, "DCGM_FI_DEV_FB_USED", instance), std::round(ours.value / 1048576))
          << gpu << "/" << ours.labels.at("mig_instance");
    } else {
      EXPECT_DOUBLE_EQ(Value(samples, "DCGM_FI_PROF_SM_ACTIVE", instance), ours.value)
          << gpu << "/" << ours.labels.at("mig_instance");
    }
  }
  EXPECT_GE(mig_gpus.size(), 2u) << "the scenario's two partitioned H100s";
  EXPECT_GE(instances, 7 + 4);
  for (const Sample& s : samples) {
    if (s.name.rfind("DCGM_FI_", 0) != 0) continue;
    EXPECT_EQ(s.labels.count("GPU_I_ID") != 0, mig_gpus.count(s.labels.at("gpu")) != 0)
        << s.name << " gpu " << s.labels.at("gpu");
  }
  // A device-wide reading repeats on each instance.
  const double temp = Value(samples, "gpu_temperature_celsius", {{"gpu", *mig_gpus.begin()}});
  int repeats = 0;
  for (const Sample& s : samples)
    if (s.name == "DCGM_FI_DEV_GPU_TEMP" && s.labels.at("gpu") == *mig_gpus.begin()) {
      EXPECT_EQ(s.value, temp);
      ++repeats;
    }
  EXPECT_GE(repeats, 4);
}

TEST(DcgmExporterServe, DcgmExporterNamesReplaceTheDeviceFamiliesOnly) {
  const std::string body = MetricsWith("demo", "dcgm-exporter");
  ASSERT_FALSE(body.empty());
  EXPECT_NE(body.find("\nDCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-"), std::string::npos);
  EXPECT_EQ(body.find("\ngpu_temperature_celsius{"), std::string::npos);
  EXPECT_EQ(body.find("\ngpu_up{"), std::string::npos);
  EXPECT_NE(body.find("\ngpuwarden_nvml_up 1"), std::string::npos) << "the agent's own stay";
  EXPECT_NE(body.find("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"), std::string::npos);
}

TEST(DcgmExporterServe, ABadNamesValueIsRefusedWithItsLine) {
  TempDir dir;
  WriteFile(dir / "gpuwarden.yaml", "exposition:\n  names: dcgm\n");
  std::string out;
  int code = RunCommand({GpuwardenBinary(), "serve", "--simulate", "demo", "--config",
                         dir / "gpuwarden.yaml", "--data-dir", dir / "data"},
                        &out, 30);
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("gpuwarden.yaml:2: exposition.names: expected gpuwarden, dcgm-exporter or "
                     "both, got 'dcgm'"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace gw::testing
