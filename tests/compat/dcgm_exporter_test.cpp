// dcgm-exporter compatibility (exposition.names: dcgm-exporter), from hand-built snapshots:
// every metric dcgm-exporter exports by default or lists muted, and that NVML can provide, is
// written under its name, type, labels and unit convention; its dashboard's queries parse and
// name only what is written. The upstream list is data in dcgm_exporter_upstream.h.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "collect/dcgm_exposition.h"
#include "collect/exposition.h"
#include "compat/dcgm_exporter_upstream.h"
#include "promql/ast.h"
#include "promql/parser.h"
#include "top/alloc_count.h"

namespace gw::collect {
namespace {

using compat::kUpstreamMetrics;
using compat::Listed;

// A reading gpuwarden holds and the value dcgm-exporter would show for it, worked out by hand
// from the units (gpuwarden: hertz, joules, bytes, ratios; DCGM: MHz, mJ, MiB, percent …).
struct Expectation {
  std::string_view name;
  Slot slot;
  double gpuwarden;  // the slot's value in the snapshot
  double dcgm;       // what DCGM_FI_… must read
};
const Expectation kExpectations[] = {
    {"DCGM_FI_DEV_SM_CLOCK", Slot::kSmClock, 1410e6, 1410},
    {"DCGM_FI_DEV_MEM_CLOCK", Slot::kMemoryClock, 2619e6, 2619},
    {"DCGM_FI_DEV_MEMORY_TEMP", Slot::kMemoryTemperature, 52, 52},
    {"DCGM_FI_DEV_GPU_TEMP", Slot::kTemperature, 47, 47},
    {"DCGM_FI_DEV_POWER_USAGE", Slot::kPower, 312.25, 312.25},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", Slot::kEnergy, 123456.789, 123456789},
    {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", Slot::kPcieReplays, 3, 3},
    {"DCGM_FI_DEV_GPU_UTIL", Slot::kUtilization, 0.37, 37},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", Slot::kMemoryUtilization, 0.21, 21},
    {"DCGM_FI_DEV_ENC_UTIL", Slot::kEncoderUtilization, 0.05, 5},
    {"DCGM_FI_DEV_DEC_UTIL", Slot::kDecoderUtilization, 0.12, 12},
    {"DCGM_FI_DEV_FB_FREE", Slot::kMemoryFree, 40.0 * (1 << 30), 40960},
    {"DCGM_FI_DEV_FB_USED", Slot::kMemoryUsed, 39.5 * (1 << 30), 40448},
    {"DCGM_FI_DEV_FB_RESERVED", Slot::kMemoryReserved, 512.0 * (1 << 20), 512},
    // NVLink bandwidth: transmitted + received bytes (the rx half is set below).
    {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", Slot::kNvlinkTxBytes, 7e12, 7e12 + 5e12},
    {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", Slot::kRemappedUncorrectable, 1, 1},
    {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", Slot::kRemappedCorrectable, 4, 4},
    {"DCGM_FI_DEV_ROW_REMAP_FAILURE", Slot::kRemappedFailure, 0, 0},
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", Slot::kGraphicsActive, 0.91, 0.91},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", Slot::kTensorAny, 0.44, 0.44},
    {"DCGM_FI_PROF_DRAM_ACTIVE", Slot::kDramActive, 0.63, 0.63},
    {"DCGM_FI_PROF_PCIE_TX_BYTES", Slot::kPcieTx, 1.5e9, 1.5e9},
    {"DCGM_FI_PROF_PCIE_RX_BYTES", Slot::kPcieRx, 2.5e9, 2.5e9},
    // Violations: seconds held down → nanoseconds (thermal: sw + hw, the hw half set below).
    {"DCGM_FI_DEV_POWER_VIOLATION", Slot::kSecondsSwPowerCap, 12.5, 12.5e9},
    {"DCGM_FI_DEV_THERMAL_VIOLATION", Slot::kSecondsSwThermal, 2, 2e9 + 0.25e9},
    {"DCGM_FI_DEV_SYNC_BOOST_VIOLATION", Slot::kSecondsSyncBoost, 0.5, 0.5e9},
    {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", Slot::kEccCorrectedVolatile, 11, 11},
    {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", Slot::kEccUncorrectedVolatile, 1, 1},
    {"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", Slot::kEccCorrectedAggregate, 120, 120},
    {"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", Slot::kEccUncorrectedAggregate, 2, 2},
    {"DCGM_FI_DEV_RETIRED_SBE", Slot::kRetiredSingleBit, 6, 6},
    {"DCGM_FI_DEV_RETIRED_DBE", Slot::kRetiredDoubleBit, 7, 7},
    {"DCGM_FI_DEV_RETIRED_PENDING", Slot::kRetiredPending, 1, 1},
    {"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", Slot::kNvlinkCrcFlitErrors, 9, 9},
    {"DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", Slot::kNvlinkCrcDataErrors, 8, 8},
    {"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", Slot::kNvlinkReplayErrors, 13, 13},
    {"DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", Slot::kNvlinkRecoveryErrors, 2, 2},
    {"DCGM_FI_PROF_SM_ACTIVE", Slot::kSmActive, 0.05, 0.05},
    {"DCGM_FI_PROF_SM_OCCUPANCY", Slot::kSmOccupancy, 0.03, 0.03},
    {"DCGM_FI_PROF_PIPE_FP64_ACTIVE", Slot::kPipeFp64, 0.01, 0.01},
    {"DCGM_FI_PROF_PIPE_FP32_ACTIVE", Slot::kPipeFp32, 0.17, 0.17},
    {"DCGM_FI_PROF_PIPE_FP16_ACTIVE", Slot::kPipeFp16, 0.29, 0.29},
    // Beyond dcgm-exporter's CSV: DCGM profiling fields GPM measures too.
    {"DCGM_FI_PROF_PIPE_TENSOR_HMMA_ACTIVE", Slot::kTensorHmma, 0.4, 0.4},
    {"DCGM_FI_PROF_PIPE_TENSOR_IMMA_ACTIVE", Slot::kTensorImma, 0.02, 0.02},
    {"DCGM_FI_PROF_PIPE_TENSOR_DFMA_ACTIVE", Slot::kTensorDfma, 0.001, 0.001},
    {"DCGM_FI_PROF_PIPE_INT_ACTIVE", Slot::kPipeInteger, 0.08, 0.08},
    {"DCGM_FI_PROF_NVLINK_TX_BYTES", Slot::kNvlinkTxRate, 3e10, 3e10},
    {"DCGM_FI_PROF_NVLINK_RX_BYTES", Slot::kNvlinkRxRate, 2e10, 2e10},
};

Snapshot Fleet(unsigned gpus = 2) {
  Snapshot s;
  s.generation = 1;
  s.stats.nvml_up = true;
  s.stats.driver_version = "550.54.15";
  for (unsigned i = 0; i < gpus; ++i) {
    GpuSnapshot g;
    g.identity.index = i;
    g.identity.uuid = "GPU-" + std::to_string(i) + "a2b3c4d-0000-1111-2222-333344445555";
    g.identity.name = "NVIDIA H100 80GB HBM3";
    g.identity.pci_bus_id = "00000000:1" + std::to_string(i) + ":00.0";
    g.identity.label_text = "gpu=\"" + std::to_string(i) + "\",uuid=\"" + g.identity.uuid + "\"";
    g.values.fill(kAbsent);
    g.values[static_cast<size_t>(Slot::kUp)] = 1;
    for (const Expectation& e : kExpectations) g.values[static_cast<size_t>(e.slot)] = e.gpuwarden;
    g.values[static_cast<size_t>(Slot::kNvlinkRxBytes)] = 5e12;
    g.values[static_cast<size_t>(Slot::kSecondsHwThermal)] = 0.25;
    s.gpus.push_back(g);
  }
  return s;
}

struct Line {
  std::string name;
  std::map<std::string, std::string> labels;
  std::vector<std::string> label_order;
  double value = 0;
};
struct Page {
  std::map<std::string, std::string> types;  // # TYPE
  std::vector<Line> lines;
  std::vector<const Line*> Of(std::string_view name) const {
    std::vector<const Line*> out;
    for (const Line& l : lines)
      if (l.name == name) out.push_back(&l);
    return out;
  }
};

Page Parse(const std::string& text) {
  Page page;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream t(line.substr(7));
      std::string name, type;
      t >> name >> type;
      page.types[name] = type;
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    Line l;
    size_t i = line.find_first_of("{ ");
    l.name = line.substr(0, i);
    if (line[i] == '{') {
      ++i;
      while (line[i] != '}') {
        size_t eq = line.find('=', i);
        std::string key = line.substr(i, eq - i), value;
        size_t j = eq + 2;
        for (; line[j] != '"'; ++j) {
          if (line[j] == '\\') ++j;
          value += line[j];
        }
        l.labels[key] = value;
        l.label_order.push_back(key);
        i = j + 1;
        if (line[i] == ',') ++i;
      }
      ++i;
    }
    l.value = std::stod(line.substr(i + 1));
    page.lines.push_back(l);
  }
  return page;
}

std::string RenderDcgm(DcgmExposition* dcgm, const Snapshot& s,
                       expo::Format format = expo::Format::kText) {
  std::string out;
  expo::Writer w(format, &out);
  dcgm->Write(s, &w);
  return out;
}

const Expectation* ExpectationFor(std::string_view name) {
  for (const Expectation& e : kExpectations)
    if (e.name == name) return &e;
  return nullptr;
}

TEST(DcgmExporterCompat, EveryProvidableUpstreamMetricIsWrittenWithItsTypeUnitAndLabels) {
  DcgmExposition dcgm({.hostname = "node7", .pod_of = nullptr});
  const Snapshot snap = Fleet();
  const Page page = Parse(RenderDcgm(&dcgm, snap));
  int checked = 0;
  for (const compat::UpstreamMetric& m : kUpstreamMetrics) {
    SCOPED_TRACE(std::string(m.name));
    if (!m.not_provided.empty()) {
      EXPECT_TRUE(page.Of(m.name).empty()) << "listed as not provided, but written";
      continue;
    }
    if (m.type == "label") {
      // A label field: on every series, with the driver's value.
      for (const Line& l : page.lines) EXPECT_EQ(l.labels.at(std::string(m.name)), "550.54.15");
      ++checked;
      continue;
    }
    ASSERT_TRUE(page.types.count(std::string(m.name))) << "not written";
    EXPECT_EQ(page.types.at(std::string(m.name)), m.type);
    const auto lines = page.Of(m.name);
    ASSERT_EQ(lines.size(), 2u);
    for (unsigned g = 0; g < 2; ++g) {
      const Line& l = *lines[g];
      EXPECT_EQ(l.labels.at("gpu"), std::to_string(g));
      EXPECT_EQ(l.labels.at("UUID"), snap.gpus[g].identity.uuid);
      EXPECT_EQ(l.labels.at("pci_bus_id"), snap.gpus[g].identity.pci_bus_id);
      EXPECT_EQ(l.labels.at("device"), "nvidia" + std::to_string(g));
      EXPECT_EQ(l.labels.at("modelName"), "NVIDIA H100 80GB HBM3");
      EXPECT_EQ(l.labels.at("Hostname"), "node7");
      EXPECT_EQ(l.label_order, std::vector<std::string>(std::begin(compat::kGpuLabels),
                                                        std::end(compat::kGpuLabels)));
      if (m.name == "DCGM_FI_DEV_XID_ERRORS") {
        EXPECT_EQ(l.value, 0) << "no XID yet";
        continue;
      }
      const Expectation* e = ExpectationFor(m.name);
      ASSERT_NE(e, nullptr) << "the test has no expected value for it";
      EXPECT_DOUBLE_EQ(l.value, e->dcgm) << "unit convention (" << m.unit << ")";
    }
    ++checked;
  }
  EXPECT_EQ(checked, 44) << "the upstream list shrank or grew";
}

TEST(DcgmExporterCompat, WritesTheExtraProfilingFieldsWithTheirUnits) {
  DcgmExposition dcgm({});
  const Page page = Parse(RenderDcgm(&dcgm, Fleet(1)));
  for (std::string_view name :
       {"DCGM_FI_PROF_PIPE_TENSOR_HMMA_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_IMMA_ACTIVE",
        "DCGM_FI_PROF_PIPE_TENSOR_DFMA_ACTIVE", "DCGM_FI_PROF_PIPE_INT_ACTIVE",
        "DCGM_FI_PROF_NVLINK_TX_BYTES", "DCGM_FI_PROF_NVLINK_RX_BYTES"}) {
    SCOPED_TRACE(std::string(name));
    auto lines = page.Of(name);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(page.types.at(std::string(name)), "gauge");
    EXPECT_DOUBLE_EQ(lines[0]->value, ExpectationFor(name)->dcgm);
    EXPECT_EQ(lines[0]->labels.count("Hostname"), 0u) << "no hostname configured";
  }
}

TEST(DcgmExporterCompat, TheImplementationsTableHasNoFieldTheTestDoesNotKnow) {
  // Every field written is either upstream's or one of the expected extras, and typed as listed.
  for (const DcgmField& f : DcgmFields()) {
    SCOPED_TRACE(std::string(f.name));
    const compat::UpstreamMetric* up = nullptr;
    for (const auto& m : kUpstreamMetrics)
      if (m.name == f.name) up = &m;
    if (up != nullptr) {
      EXPECT_EQ(up->type, f.type == MetricType::kCounter ? "counter" : "gauge");
      EXPECT_EQ(up->unit, f.unit);
      EXPECT_TRUE(up->not_provided.empty());
    } else {
      EXPECT_EQ(f.name.rfind("DCGM_FI_PROF_", 0), 0u) << "an extra that is not a PROF field";
    }
    EXPECT_TRUE(f.name == "DCGM_FI_DEV_XID_ERRORS" || ExpectationFor(f.name) != nullptr);
  }
}

TEST(DcgmExporterCompat, AbsentReadingsAreLeftOutNotZero) {
  Snapshot s = Fleet(1);
  s.gpus[0].values.fill(kAbsent);
  DcgmExposition dcgm({});
  const Page page = Parse(RenderDcgm(&dcgm, s));
  ASSERT_EQ(page.lines.size(), 1u);
  EXPECT_EQ(page.lines[0].name, "DCGM_FI_DEV_XID_ERRORS");  // DCGM's "none yet" is 0
  // Only some absent: the rest is written.
  s = Fleet(2);
  s.gpus[1].values[static_cast<size_t>(Slot::kSmActive)] = kAbsent;
  const Page partial = Parse(RenderDcgm(&dcgm, s));
  ASSERT_EQ(partial.Of("DCGM_FI_PROF_SM_ACTIVE").size(), 1u);
  EXPECT_EQ(partial.Of("DCGM_FI_PROF_SM_ACTIVE")[0]->labels.at("gpu"), "0");
}

TEST(DcgmExporterCompat, XidErrorsIsTheCodeSeenLast) {
  Snapshot s = Fleet(1);
  DcgmExposition dcgm({});
  auto last = [&] { return Parse(RenderDcgm(&dcgm, s)).Of("DCGM_FI_DEV_XID_ERRORS")[0]->value; };
  EXPECT_EQ(last(), 0);
  s.gpus[0].xid_counts = {{79, 1}};
  EXPECT_EQ(last(), 79);
  s.gpus[0].xid_counts = {{48, 1}, {79, 1}};  // a 48 arrived after the 79
  EXPECT_EQ(last(), 48);
  EXPECT_EQ(last(), 48) << "a second render of the same counts changes nothing";
  s.gpus[0].xid_counts = {{48, 1}, {79, 2}};
  EXPECT_EQ(last(), 79);
  // Another GPU in that place (hot-plug, re-enumeration): its own history.
  s.gpus[0].identity.uuid = "GPU-other";
  s.gpus[0].xid_counts = {};
  EXPECT_EQ(last(), 0);
}

Snapshot MigFleet() {
  Snapshot s = Fleet(2);
  GpuSnapshot& g = s.gpus[1];
  for (unsigned i = 0; i < 2; ++i) {
    MigInstanceSnapshot m;
    m.gpu_instance_id = i == 0 ? 1 : 5;
    m.compute_instance_id = 0;
    m.uuid = "MIG-" + std::to_string(i) + "ffffff-0000-1111-2222-333344445555";
    m.profile = i == 0 ? "3g.40gb" : "1g.10gb";
    m.memory_used_bytes = (i == 0 ? 30.0 : 2.0) * (1 << 30);
    m.memory_free_bytes = (i == 0 ? 10.0 : 8.0) * (1 << 30);
    m.gpm[static_cast<size_t>(Gpm::kSmActive)] = i == 0 ? 0.7 : 0.1;
    m.gpm[static_cast<size_t>(Gpm::kTensorAny)] = i == 0 ? 0.5 : 0.0;
    g.mig.push_back(m);
  }
  return s;
}

TEST(DcgmExporterCompat, MigDevicesAreWrittenOnePerInstanceWithGpuInstanceLabels) {
  DcgmExposition dcgm({.hostname = "node7", .pod_of = nullptr});
  const Page page = Parse(RenderDcgm(&dcgm, MigFleet()));
  auto of_gpu1 = [&](std::string_view name) {
    std::vector<const Line*> out;
    for (const Line* l : page.Of(name))
      if (l->labels.at("gpu") == "1") out.push_back(l);
    return out;
  };
  // Memory and profiling: the instance's own.
  auto used = of_gpu1("DCGM_FI_DEV_FB_USED");
  ASSERT_EQ(used.size(), 2u);
  EXPECT_EQ(used[0]->labels.at("GPU_I_ID"), "1");
  EXPECT_EQ(used[0]->labels.at("GPU_I_PROFILE"), "3g.40gb");
  EXPECT_EQ(used[0]->value, 30720);
  EXPECT_EQ(used[1]->labels.at("GPU_I_ID"), "5");
  EXPECT_EQ(used[1]->labels.at("GPU_I_PROFILE"), "1g.10gb");
  EXPECT_EQ(used[1]->value, 2048);
  EXPECT_EQ(used[0]->labels.at("UUID"), MigFleet().gpus[1].identity.uuid) << "the parent GPU's";
  EXPECT_EQ(
      used[0]->label_order,
      (std::vector<std::string>{"gpu", "UUID", "pci_bus_id", "device", "modelName", "GPU_I_PROFILE",
                                "GPU_I_ID", "Hostname", "DCGM_FI_DRIVER_VERSION"}));
  auto sm = of_gpu1("DCGM_FI_PROF_SM_ACTIVE");
  ASSERT_EQ(sm.size(), 2u);
  EXPECT_DOUBLE_EQ(sm[0]->value, 0.7);
  EXPECT_DOUBLE_EQ(sm[1]->value, 0.1);
  auto tensor = of_gpu1("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE");
  ASSERT_EQ(tensor.size(), 2u);
  EXPECT_EQ(tensor[1]->value, 0) << "a measured 0 is written";
  EXPECT_TRUE(of_gpu1("DCGM_FI_PROF_DRAM_ACTIVE").empty()) << "no instance reading: absent";
  EXPECT_TRUE(of_gpu1("DCGM_FI_DEV_FB_RESERVED").empty()) << "no per-instance reading";
  // Device-wide readings repeat on each instance, as dcgm-exporter does; none without GPU_I_ID.
  auto temp = of_gpu1("DCGM_FI_DEV_GPU_TEMP");
  ASSERT_EQ(temp.size(), 2u);
  EXPECT_EQ(temp[0]->value, 47);
  EXPECT_EQ(temp[1]->value, 47);
  for (const Line& l : page.lines)
    if (l.labels.at("gpu") == "1")
      EXPECT_TRUE(l.labels.count("GPU_I_ID")) << l.name;
    else
      EXPECT_FALSE(l.labels.count("GPU_I_ID")) << l.name;
}

TEST(DcgmExporterCompat, PodLabelsComeFromTheHookByGpuOrMigUuid) {
  Snapshot s = MigFleet();
  std::vector<std::string> asked;
  DcgmOptions options;
  options.pod_of = [&](std::string_view uuid, DcgmPodLabels* out) {
    asked.emplace_back(uuid);
    if (uuid.rfind("MIG-0", 0) != 0 && uuid != s.gpus[0].identity.uuid) return false;
    *out = {.pod = "trainer-0", .pod_namespace = "ml", .container = "pytorch"};
    return true;
  };
  DcgmExposition dcgm(std::move(options));
  const Page page = Parse(RenderDcgm(&dcgm, s));
  EXPECT_EQ(asked.size(), 3u) << "once per GPU without MIG, or MIG device, and render";
  for (const Line* l : page.Of("DCGM_FI_DEV_FB_USED")) {
    const bool attributed = l->labels.at("gpu") == "0" ||
                            (l->labels.count("GPU_I_ID") != 0 && l->labels.at("GPU_I_ID") == "1");
    if (attributed) {
      EXPECT_EQ(l->labels.at("pod"), "trainer-0");
      EXPECT_EQ(l->labels.at("namespace"), "ml");
      EXPECT_EQ(l->labels.at("container"), "pytorch");
    } else {
      EXPECT_EQ(l->labels.count("pod"), 0u);
    }
  }
}

TEST(DcgmExporterCompat, OpenMetricsTypesCountersUnknownBecauseTheirNamesLackTotal) {
  DcgmExposition dcgm({});
  const std::string om = RenderDcgm(&dcgm, Fleet(1), expo::Format::kOpenMetrics);
  EXPECT_NE(om.find("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION unknown\n"), std::string::npos);
  EXPECT_NE(om.find("# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"), std::string::npos);
  EXPECT_EQ(om.find(" counter\n"), std::string::npos);
}

TEST(DcgmExporterCompat, ExpositionNamesChooseTheDeviceFamilies) {
  const Snapshot s = Fleet(1);
  auto render = [&](ExpositionNames names) {
    RenderOptions o;
    o.names = names;
    o.dcgm = std::make_shared<DcgmExposition>(DcgmOptions{});
    std::string out;
    Render(s, expo::Format::kText, o, ProcessFigures{}, &out);
    return out;
  };
  const std::string ours = render(ExpositionNames::kGpuwarden);
  const std::string theirs = render(ExpositionNames::kDcgmExporter);
  const std::string both = render(ExpositionNames::kBoth);
  EXPECT_NE(ours.find("\ngpu_temperature_celsius{"), std::string::npos);
  EXPECT_EQ(ours.find("DCGM_FI_"), std::string::npos);
  EXPECT_EQ(theirs.find("\ngpu_temperature_celsius{"), std::string::npos);
  EXPECT_NE(theirs.find("\nDCGM_FI_DEV_GPU_TEMP{"), std::string::npos);
  EXPECT_NE(theirs.find("\ngpuwarden_nvml_up "), std::string::npos) << "the agent's own stay";
  EXPECT_NE(both.find("\ngpu_temperature_celsius{"), std::string::npos);
  EXPECT_NE(both.find("\nDCGM_FI_DEV_GPU_TEMP{"), std::string::npos);

  ExpositionNames parsed;
  EXPECT_TRUE(ParseExpositionNames("dcgm-exporter", &parsed));
  EXPECT_EQ(parsed, ExpositionNames::kDcgmExporter);
  EXPECT_EQ(ExpositionNamesText(parsed), "dcgm-exporter");
  EXPECT_FALSE(ParseExpositionNames("dcgm", &parsed));
}

// The metric names a PromQL expression selects.
void SelectedNames(const promql::Expr& e, std::set<std::string>* out) {
  using promql::ExprKind;
  switch (e.kind) {
    case ExprKind::kVectorSelector:
      out->insert(static_cast<const promql::VectorSelector&>(e).name);
      break;
    case ExprKind::kMatrixSelector:
      out->insert(static_cast<const promql::MatrixSelector&>(e).selector->name);
      break;
    case ExprKind::kSubquery:
      SelectedNames(*static_cast<const promql::Subquery&>(e).expr, out);
      break;
    case ExprKind::kParen:
      SelectedNames(*static_cast<const promql::ParenExpr&>(e).expr, out);
      break;
    case ExprKind::kUnary:
      SelectedNames(*static_cast<const promql::UnaryExpr&>(e).expr, out);
      break;
    case ExprKind::kBinary:
      SelectedNames(*static_cast<const promql::BinaryExpr&>(e).lhs, out);
      SelectedNames(*static_cast<const promql::BinaryExpr&>(e).rhs, out);
      break;
    case ExprKind::kAggregate:
      SelectedNames(*static_cast<const promql::AggregateExpr&>(e).expr, out);
      break;
    case ExprKind::kCall:
      for (const auto& a : static_cast<const promql::Call&>(e).args) SelectedNames(*a, out);
      break;
    case ExprKind::kNumber:
    case ExprKind::kString:
      break;
  }
}

std::string SubstituteDashboardVariables(std::string_view expr) {
  std::string out(expr);
  for (std::string_view var : {"$instance", "$gpu"})
    for (size_t at; (at = out.find(var)) != std::string::npos;) out.replace(at, var.size(), ".+");
  return out;
}

TEST(DcgmExporterCompat, DashboardQueriesParseAndNameOnlyWrittenMetrics) {
  DcgmExposition dcgm({.hostname = "node7", .pod_of = nullptr});
  const Page page = Parse(RenderDcgm(&dcgm, Fleet()));
  std::set<std::string> names;
  for (std::string_view expr : compat::kDashboardExpressions) {
    SCOPED_TRACE(std::string(expr));
    auto parsed = promql::Parse(SubstituteDashboardVariables(expr));
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    SelectedNames(**parsed, &names);
  }
  EXPECT_EQ(names.size(), 6u);
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    EXPECT_FALSE(page.Of(name).empty()) << "the dashboard reads it; not written";
    for (const Line* l : page.Of(name)) EXPECT_TRUE(l->labels.count("gpu"));
  }
  for (const auto& v : compat::kDashboardVariables) {
    ASSERT_FALSE(page.Of(v.metric).empty());
    if (v.label != "instance") {
      EXPECT_TRUE(page.Of(v.metric)[0]->labels.count(std::string(v.label)));
    }
  }
}

TEST(DcgmExporterCompat, SteadyStateRenderingAllocatesNothing) {
  Snapshot s = MigFleet();
  s.gpus[0].xid_counts = {{48, 1}, {79, 3}};
  DcgmExposition dcgm({.hostname = "node7", .pod_of = nullptr});
  std::string out;
  for (int i = 0; i < 2; ++i) {  // warm: label buffers and the page's capacity
    out.clear();
    expo::Writer w(expo::Format::kText, &out);
    dcgm.Write(s, &w);
  }
  top::StartCountingAllocations();
  for (int i = 0; i < 5; ++i) {
    out.clear();
    expo::Writer w(expo::Format::kText, &out);
    dcgm.Write(s, &w);
  }
  EXPECT_EQ(top::StopCountingAllocations(), 0);
  EXPECT_NE(out.find("DCGM_FI_DEV_XID_ERRORS{gpu=\"0\""), std::string::npos);
}

}  // namespace
}  // namespace gw::collect
