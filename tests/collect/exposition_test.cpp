#include "collect/exposition.h"

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "full_snapshot.h"

namespace gw::collect {
namespace {

std::string RenderOf(const Snapshot& s, Format f, bool per_process = true, bool per_link = true) {
  RenderOptions o;
  o.per_process_metrics = per_process;
  o.nvlink_link_metrics = per_link;
  o.version = "test";
  std::string out;
  Render(s, f, o, ProcessFigures{1.5, 1e7, 1764441000}, &out);
  return out;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

TEST(Exposition, TextFormatIsWellFormed) {
  std::string text = RenderOf(FullSnapshot(), Format::kText);
  const std::regex sample(
      R"(^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? (NaN|[+-]Inf|-?[0-9.eE+-]+)$)");
  std::map<std::string, int> type_lines, help_lines;
  std::set<std::string> seen_sample_families;
  std::string current;
  for (const std::string& line : Lines(text)) {
    if (line.rfind("# HELP ", 0) == 0) {
      current = line.substr(7, line.find(' ', 7) - 7);
      ++help_lines[current];
      EXPECT_EQ(seen_sample_families.count(current), 0u) << "family split: " << current;
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      ++type_lines[line.substr(7, line.find(' ', 7) - 7)];
      continue;
    }
    ASSERT_TRUE(std::regex_match(line, sample)) << line;
    std::string name = line.substr(0, line.find_first_of("{ "));
    EXPECT_EQ(name, current) << "sample outside its family block";
    seen_sample_families.insert(name);
  }
  for (auto& [name, n] : type_lines) EXPECT_EQ(n, 1) << name;
  for (auto& [name, n] : help_lines) EXPECT_EQ(n, 1) << name;
  EXPECT_NE(text.find("gpu_xid_errors_total{gpu=\"0\",uuid=\"GPU-00000000-aaaa-bbbb-cccc-"
                      "dddddddddddd\",xid=\"48\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("gpu_process_memory_bytes{gpu=\"1\""), std::string::npos);
  EXPECT_NE(text.find("gpuwarden_nvml_call_errors_total{call=\"nvmlDeviceGetUtilizationRates\","
                      "error=\"UNKNOWN\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("gpuwarden_nvml_call_hung{gpu=\"0\""), std::string::npos);
}

TEST(Exposition, AbsentValuesAreLeftOutNotZero) {
  Snapshot s = FullSnapshot(1);
  s.gpus[0].values[static_cast<size_t>(Slot::kFanSpeed)] = kAbsent;
  s.gpus[0].values[static_cast<size_t>(Slot::kThresholdMemoryMax)] = kAbsent;
  std::string text = RenderOf(s, Format::kText);
  EXPECT_EQ(text.find("gpu_fan_speed_ratio"), std::string::npos);  // the whole family goes
  EXPECT_EQ(text.find("gpu_temperature_threshold_celsius{gpu=\"0\",uuid=\"GPU-00000000-aaaa-bbbb-"
                      "cccc-dddddddddddd\",threshold=\"memory_max\"}"),
            std::string::npos);
  EXPECT_NE(text.find("threshold=\"slowdown\""), std::string::npos);
}

TEST(Exposition, PerProcessSeriesAreOptIn) {
  std::string text = RenderOf(FullSnapshot(), Format::kText, /*per_process=*/false);
  EXPECT_EQ(text.find("pid=\""), std::string::npos);
  EXPECT_NE(text.find("gpu_processes{"), std::string::npos);
}

TEST(Exposition, OpenMetricsNamesCounterFamiliesWithoutTotalAndEnds) {
  std::string text = RenderOf(FullSnapshot(), Format::kOpenMetrics);
  EXPECT_NE(text.find("# TYPE gpu_energy_joules counter\n"), std::string::npos);
  EXPECT_NE(text.find("# UNIT gpu_energy_joules joules\n"), std::string::npos);
  EXPECT_NE(text.find("\ngpu_energy_joules_total{"), std::string::npos);
  EXPECT_EQ(text.find("# TYPE gpu_energy_joules_total"), std::string::npos);
  ASSERT_GE(text.size(), 6u);
  EXPECT_EQ(text.substr(text.size() - 6), "# EOF\n");
}

TEST(Exposition, EscapesLabelValues) {
  std::string out;
  AppendEscapedLabelValue(&out, "a\"b\\c\nd");
  EXPECT_EQ(out, "a\\\"b\\\\c\\nd");
}

TEST(Exposition, FormatsValuesLikePrometheus) {
  auto v = [](double d) {
    std::string s;
    AppendValue(&s, d);
    return s;
  };
  EXPECT_EQ(v(1), "1");
  EXPECT_EQ(v(0.25), "0.25");
  EXPECT_EQ(v(700), "700");
  EXPECT_EQ(v(85899345920.0), "85899345920");
  EXPECT_EQ(v(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(v(std::nan("")), "NaN");
}

TEST(Exposition, NegotiatesByAcceptHeader) {
  EXPECT_EQ(NegotiateFormat("application/openmetrics-text;version=1.0.0,text/plain;q=0.5"),
            Format::kOpenMetrics);
  EXPECT_EQ(NegotiateFormat("text/plain"), Format::kText);
  EXPECT_EQ(NegotiateFormat(""), Format::kText);
}

TEST(Exposition, PageRendersOncePerGeneration) {
  MetricsPage page(RenderOptions{});
  Snapshot s = FullSnapshot(1);
  std::string a = page.Get(s, Format::kText);
  s.gpus[0].values[static_cast<size_t>(Slot::kTemperature)] = 99;  // same generation: cached
  EXPECT_EQ(page.Get(s, Format::kText), a);
  s.generation++;
  EXPECT_NE(page.Get(s, Format::kText), a);
}

TEST(Exposition, ProcessFiguresComeFromProc) {
  ProcessFigures f = ReadProcessFigures();
  EXPECT_GT(f.resident_bytes, 0);
  EXPECT_GE(f.cpu_seconds, 0);
  EXPECT_GT(f.start_unix_seconds, 1.6e9);
}

}  // namespace
}  // namespace gw::collect

namespace gw::collect {
namespace {

TEST(Exposition, StoreFiguresAreCurrentEvenWithinOneSnapshot) {
  double recorded = 1;
  MetricsPage page(RenderOptions{}, [&] {
    StoreFigures f;
    f.present = true;
    f.snapshots_recorded = recorded;
    return f;
  });
  Snapshot s = FullSnapshot(1);
  EXPECT_NE(page.Get(s, Format::kText).find("gpuwarden_recorder_snapshots_recorded_total 1\n"),
            std::string::npos);
  recorded = 2;  // the recorder caught up; the snapshot did not change
  EXPECT_NE(page.Get(s, Format::kText).find("gpuwarden_recorder_snapshots_recorded_total 2\n"),
            std::string::npos);
  std::string om = page.Get(s, Format::kOpenMetrics);
  EXPECT_EQ(om.substr(om.size() - 6), "# EOF\n");
  EXPECT_EQ(om.find("# EOF"), om.size() - 6);  // once, at the very end
}

}  // namespace
}  // namespace gw::collect

namespace gw::collect {
namespace {

TEST(Exposition, MigInstancesHaveTheirOwnFamilies) {
  Snapshot s = FullSnapshot(1);
  for (Format f : {Format::kText, Format::kOpenMetrics}) {
    std::string text = RenderOf(s, f);
    const std::string labels =
        "gpu=\"0\",uuid=\"GPU-00000000-aaaa-bbbb-cccc-dddddddddddd\",mig_instance=\"5\","
        "mig_profile=\"1g.10gb\"";
    EXPECT_NE(text.find("gpu_mig_info{" + labels +
                        ",mig_uuid=\"MIG-01000000-1111-2222-3333-444444444444\","
                        "compute_instance=\"0\"} 1\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("gpu_mig_slice_ratio{" + labels + "} 0.14285714285714285\n"),
              std::string::npos);
    EXPECT_NE(text.find("gpu_mig_memory_total_bytes{" + labels + "} 1e+10\n"), std::string::npos);
    EXPECT_NE(text.find("gpu_mig_processes{" + labels + "} 1\n"), std::string::npos);
    EXPECT_NE(text.find("gpu_mig_sm_active_ratio{" + labels + "} 0.25\n"), std::string::npos);
    EXPECT_NE(text.find("gpu_mig_tensor_active_ratio{" + labels + ",pipe=\"hmma\"} 0.25\n"),
              std::string::npos);
    EXPECT_NE(text.find("gpu_mig_pipe_active_ratio{" + labels + ",pipe=\"fp64\"} 0.25\n"),
              std::string::npos);
    // PCIe and NVLink rates have no per-instance family.
    EXPECT_EQ(text.find("gpu_mig_nvlink"), std::string::npos);
    EXPECT_EQ(text.find("gpu_mig_pcie"), std::string::npos);
  }
  EXPECT_NE(RenderOf(s, Format::kOpenMetrics).find("# TYPE gpu_mig_info gauge\n"),
            std::string::npos);
  // Absent per-instance values are left out, family and all.
  for (MigInstanceSnapshot& m : s.gpus[0].mig) m.gpm.fill(kAbsent);
  std::string text = RenderOf(s, Format::kText);
  EXPECT_EQ(text.find("gpu_mig_sm_active_ratio"), std::string::npos);
  EXPECT_NE(text.find("gpu_mig_memory_used_bytes"), std::string::npos);
  s.gpus[0].mig.clear();
  text = RenderOf(s, Format::kText);
  EXPECT_EQ(text.find("gpu_mig_info"), std::string::npos);
  EXPECT_EQ(text.find("gpu_mig_memory_"), std::string::npos);
  EXPECT_NE(text.find("gpu_mig_enabled{"), std::string::npos);  // a slot of the GPU itself
}

TEST(Exposition, NvLinkLinksAreNamedByIndex) {
  Snapshot s = FullSnapshot(1);
  std::string text = RenderOf(s, Format::kText);
  const std::string gpu = "gpu=\"0\",uuid=\"GPU-00000000-aaaa-bbbb-cccc-dddddddddddd\"";
  EXPECT_NE(text.find("gpu_nvlink_link_up{" + gpu + ",link=\"1\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("gpu_nvlink_link_up{" + gpu + ",link=\"0\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("gpu_nvlink_link_errors_total{" + gpu + ",link=\"1\",type=\"crc\"} 3\n"),
            std::string::npos);
  EXPECT_NE(text.find("gpu_nvlink_link_transmit_bytes_per_second{" + gpu + ",link=\"0\"} 1e+09\n"),
            std::string::npos)
      << text;
  std::string om = RenderOf(s, Format::kOpenMetrics);
  EXPECT_NE(om.find("# TYPE gpu_nvlink_link_errors counter\n"), std::string::npos);
  // collect.nvlink_link_metrics off (the default): per link only the state.
  text = RenderOf(s, Format::kText, true, false);
  EXPECT_NE(text.find("gpu_nvlink_link_up{" + gpu + ",link=\"1\"} 0\n"), std::string::npos);
  EXPECT_EQ(text.find("gpu_nvlink_link_errors"), std::string::npos);
  EXPECT_EQ(text.find("gpu_nvlink_link_transmit"), std::string::npos);
  EXPECT_NE(text.find("gpu_nvlink_errors_total{" + gpu + ",type=\"replay\"}"), std::string::npos);
  s.gpus[0].nvlinks.clear();
  text = RenderOf(s, Format::kText);
  EXPECT_EQ(text.find("gpu_nvlink_link_up{"), std::string::npos);
  EXPECT_EQ(text.find("gpu_nvlink_link_errors"), std::string::npos);
}

}  // namespace
}  // namespace gw::collect
