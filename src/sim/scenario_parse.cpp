// YAML -> Scenario. Every rejection names the line: unknown keys, unknown models, unknown fault
// or workload types, malformed durations, out-of-range numbers.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <sstream>

#include "base/yaml_error.h"
#include "base/yaml_keys.h"
#include "sim/noise.h"
#include "sim/scenario.h"
#include "sim/scenario_reader.h"

namespace gw::sim {
namespace {

using parse::LineOf;
using parse::MapReader;
using parse::ParseFailure;

struct WorkloadDefaults {
  std::string_view name;
  WorkloadType type;
  double util, mem_util, base_util, base_mem_util, duty;
};

constexpr WorkloadDefaults kWorkloadTypes[] = {
    {"idle", WorkloadType::kIdle, 0, 0, 0, 0, 0},
    {"idle_allocated", WorkloadType::kIdleAllocated, 0, 0, 0, 0, 0},
    {"training", WorkloadType::kTraining, 95, 45, 0, 0, 0},
    {"inference", WorkloadType::kInference, 85, 40, 3, 2, 0.4},
    {"memory_bound", WorkloadType::kMemoryBound, 35, 90, 0, 0, 0},
    {"spikes", WorkloadType::kSpikes, 100, 95, 10, 8, 0},
    {"busy_but_hollow", WorkloadType::kBusyHollow, 99, 4, 0, 0, 0},
};

const WorkloadDefaults* FindWorkloadType(std::string name) {
  for (char& c : name)
    if (c == '-') c = '_';
  for (const WorkloadDefaults& d : kWorkloadTypes)
    if (d.name == name) return &d;
  return nullptr;
}

WorkloadSegment ParseSegment(const YAML::Node& node, const std::string& path, int line) {
  MapReader r(node, path, line,
              {"at", "type", "util", "mem_util", "base_util", "base_mem_util", "enc_util",
               "dec_util", "duty", "period", "spike_duration", "spike_memory_mib", "sm_active",
               "sm_occupancy", "tensor_active", "dram_active", "nvlink_util"});
  if (!r.Has("type")) r.Fail(r.line(), "missing key 'type'");
  const std::string type = r.String("type", "");
  const WorkloadDefaults* defaults = FindWorkloadType(type);
  if (defaults == nullptr)
    r.Fail("type", "unknown workload type '" + type +
                       "' (expected idle, idle_allocated, training, inference, memory_bound, "
                       "spikes, busy_but_hollow)");
  WorkloadSegment s;
  s.type = defaults->type;
  s.start_us = r.Duration("at", 0);
  s.util_pct = r.Number("util", defaults->util, 0, 100);
  s.mem_util_pct = r.Number("mem_util", defaults->mem_util, 0, 100);
  s.base_util_pct = r.Number("base_util", defaults->base_util, 0, 100);
  s.base_mem_util_pct = r.Number("base_mem_util", defaults->base_mem_util, 0, 100);
  s.enc_util_pct = r.Number("enc_util", 0, 0, 100);
  s.dec_util_pct = r.Number("dec_util", 0, 0, 100);
  s.duty = r.Number("duty", defaults->duty, 0, 1);
  s.period_us = r.Duration("period", 5'000'000);
  s.spike_us = r.Duration("spike_duration", 300'000);
  s.spike_memory_mib = r.Number("spike_memory_mib", 4096, 0, 1e7);
  s.sm_active_pct = r.Number("sm_active", -1, 0, 100);
  s.sm_occupancy_pct = r.Number("sm_occupancy", -1, 0, 100);
  s.tensor_pct = r.Number("tensor_active", -1, 0, 100);
  s.dram_pct = r.Number("dram_active", -1, 0, 100);
  s.nvlink_pct = r.Number("nvlink_util", -1, 0, 100);
  if (s.type == WorkloadType::kSpikes && (s.period_us <= 0 || s.spike_us >= s.period_us))
    r.Fail(r.line(), "spike_duration must be shorter than period");
  return s;
}

ProcessSpec ParseProcess(const YAML::Node& node, const std::string& path, int line,
                         const GpuModel& model) {
  MapReader r(
      node, path, line,
      {"pid", "name", "memory_mib", "start", "stop", "sm_util", "mem_util", "mig_instance"});
  if (!r.Has("pid")) r.Fail(r.line(), "missing key 'pid'");
  ProcessSpec p;
  p.pid = static_cast<unsigned>(r.Unsigned("pid", 0, 4'000'000'000U));
  p.name = r.String("name", "python3");
  p.memory_mib = r.Number("memory_mib", 0, 0, 1e7);
  p.start_us = r.Duration("start", 0);
  p.stop_us = r.Duration("stop", kForever);
  if (p.stop_us <= p.start_us) r.Fail("stop", "must be later than start");
  if (r.Has("sm_util")) p.sm_util_pct = r.Number("sm_util", 0, 0, 100);
  if (r.Has("mem_util")) p.mem_util_pct = r.Number("mem_util", 0, 0, 100);
  if (r.Has("mig_instance")) {
    const std::string where = r.String("mig_instance", "");
    if (model.max_mig_devices == 0)
      r.Fail("mig_instance", std::string(model.nvml_name) + " has no MIG");
    if (where.rfind("MIG-", 0) == 0)
      p.mig_uuid = where;
    else if (FindMigProfile(model, where) != nullptr)
      p.mig_profile = where;
    else
      p.mig_index = static_cast<unsigned>(r.Unsigned("mig_instance", 0, model.max_mig_devices - 1));
  }
  return p;
}

struct FaultKind {
  std::string_view name;
  FaultType type;
  std::initializer_list<std::string_view> keys;
};

const FaultKind kFaultKinds[] = {
    {"ecc_correctable", FaultType::kEccCorrectable, {"type", "at", "duration", "rate_per_hour"}},
    {"ecc_uncorrectable", FaultType::kEccUncorrectable, {"type", "at", "count"}},
    {"row_remap", FaultType::kRowRemap, {"type", "at", "rows", "cause", "pending_for"}},
    {"remap_failure", FaultType::kRemapFailure, {"type", "at"}},
    {"page_retirement",
     FaultType::kPageRetirement,
     {"type", "at", "pages", "cause", "pending_for"}},
    {"cooling_failure", FaultType::kCoolingFailure, {"type", "at", "duration", "factor"}},
    {"power_brake", FaultType::kPowerBrake, {"type", "at", "duration"}},
    {"power_cap", FaultType::kPowerCap, {"type", "at", "limit_w"}},
    {"pcie_replays", FaultType::kPcieReplays, {"type", "at", "duration", "rate_per_minute"}},
    {"fall_off_bus", FaultType::kFallOffBus, {"type", "at"}},
    {"xid", FaultType::kXid, {"type", "at", "code"}},
    {"hang", FaultType::kHang, {"type", "at", "function", "seconds"}},
    {"nvlink_down", FaultType::kNvLinkDown, {"type", "at", "duration", "link", "xid"}},
    {"nvlink_errors",
     FaultType::kNvLinkErrors,
     {"type", "at", "duration", "link", "rate_per_second", "xid_every"}},
};

FaultSpec ParseFault(const YAML::Node& node, const std::string& path, int line,
                     const GpuModel& model) {
  if (!node.IsMap() || !node["type"] || !node["type"].IsScalar())
    throw ParseFailure{LineOf(node, line), path + ": a fault needs a 'type'"};
  const std::string type = node["type"].Scalar();
  const FaultKind* kind = nullptr;
  for (const FaultKind& k : kFaultKinds)
    if (k.name == type) kind = &k;
  if (kind == nullptr) {
    std::string known;
    for (const FaultKind& k : kFaultKinds)
      known += (known.empty() ? "" : ", ") + std::string(k.name);
    throw ParseFailure{LineOf(node["type"], line), path + ": unknown fault type '" + type +
                                                       "' (expected one of: " + known + ")"};
  }
  MapReader r(node, path, line, kind->keys);
  FaultSpec f;
  f.type = kind->type;
  f.line = r.line();
  f.at_us = r.Duration("at", 0);
  f.duration_us = r.Duration(r.Has("pending_for") ? "pending_for" : "duration", kForever);
  if (r.Has("duration") && f.duration_us == 0) f.duration_us = kForever;  // 0 = forever
  f.rate = r.Number(f.type == FaultType::kPcieReplays    ? "rate_per_minute"
                    : f.type == FaultType::kNvLinkErrors ? "rate_per_second"
                                                         : "rate_per_hour",
                    f.type == FaultType::kPcieReplays    ? 6
                    : f.type == FaultType::kNvLinkErrors ? 100
                                                         : 10,
                    0.001, 3.6e6);
  f.count = static_cast<unsigned>(r.Unsigned(r.Has("rows")    ? "rows"
                                             : r.Has("pages") ? "pages"
                                                              : "count",
                                             1, 1000));
  const std::string cause = r.String("cause", "double_bit");
  if (cause != "double_bit" && cause != "single_bit")
    r.Fail("cause", "expected double_bit or single_bit, got '" + cause + "'");
  f.double_bit = cause == "double_bit";
  f.factor = r.Number("factor", 3.0, 1.0, 100.0);
  f.limit_w = static_cast<unsigned>(r.Unsigned("limit_w", model.power_min_w, model.power_max_w));
  if (f.type == FaultType::kPowerCap && (!r.Has("limit_w") || f.limit_w < model.power_min_w))
    r.Fail(r.LineOfKey("limit_w"),
           "power_cap needs limit_w between " + std::to_string(model.power_min_w) + " and " +
               std::to_string(model.power_max_w) + " W for " + std::string(model.nvml_name));
  f.xid = static_cast<unsigned>(r.Unsigned(r.Has("xid") ? "xid" : "code", 0, 1000));
  if (f.type == FaultType::kNvLinkDown || f.type == FaultType::kNvLinkErrors) {
    if (model.nvlinks == 0) r.Fail(r.line(), std::string(model.nvml_name) + " has no NVLink");
    if (f.type == FaultType::kNvLinkDown && !r.Has("link"))
      r.Fail(r.line(), "nvlink_down needs 'link' (0-" + std::to_string(model.nvlinks - 1) + ")");
    if (r.Has("link")) f.link = static_cast<int>(r.Unsigned("link", 0, model.nvlinks - 1));
    f.xid_period_us = r.Duration("xid_every", 10'000'000);
  }
  if (f.type == FaultType::kXid && f.xid == 0) r.Fail(r.line(), "xid needs a 'code' (1-1000)");
  f.function = r.String("function", "");
  if (f.type == FaultType::kHang && !IsKnownNvmlFunction(f.function))
    r.Fail(r.LineOfKey("function"),
           "hang needs 'function' naming an NVML function, got '" + f.function + "'");
  f.hang_seconds = r.Number("seconds", 0, 0, 86400);
  if (f.type == FaultType::kRowRemap || f.type == FaultType::kRemapFailure) {
    if (!model.row_remapping)
      r.Fail(r.line(),
             std::string(model.nvml_name) + " has no row remapping (use page_retirement)");
  }
  if (f.type == FaultType::kPageRetirement && !model.page_retirement)
    r.Fail(r.line(), std::string(model.nvml_name) + " has no page retirement (use row_remap)");
  if ((f.type == FaultType::kEccCorrectable || f.type == FaultType::kEccUncorrectable) &&
      !model.ecc)
    r.Fail(r.line(), std::string(model.nvml_name) + " has no ECC memory");
  return f;
}

// Default PCI addresses: the bus numbers of an 8-GPU HGX board, one PCI domain per 8 GPUs.
constexpr unsigned kHgxBuses[8] = {0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB};

std::string MakeUuid(std::uint64_t seed, unsigned index) {
  return parse::MakeUuid("GPU-", Mix(seed, index, 0x55, 1), Mix(seed, index, 0x55, 2));
}

std::string MakeSerial(std::uint64_t seed, unsigned index) {
  char text[32];
  std::snprintf(text, sizeof text, "1654%09llu",
                static_cast<unsigned long long>(Mix(seed, index, 0x5e, 0) % 1'000'000'000ULL));
  return text;
}

bool ParsePciBusId(const std::string& text, unsigned* domain, unsigned* bus) {
  unsigned device = 0, function = 0;
  char tail = 0;
  return std::sscanf(text.c_str(), "%x:%x:%x.%x%c", domain, bus, &device, &function, &tail) == 4 &&
         *bus <= 0xFF && device == 0 && function == 0;
}

void ParseGpu(const YAML::Node& node, const std::string& path, int line, double fleet_ambient,
              bool nvlink_connected, Scenario* scenario) {
  MapReader r(node, path, line,
              {"model", "count", "uuid", "serial", "pci_bus_id", "power_limit_w", "ambient_c",
               "loop", "aggregate_ecc", "workload", "processes", "faults", "mig"});
  if (!r.Has("model")) r.Fail(r.line(), "missing key 'model'");
  const std::string model_name = r.String("model", "");
  GpuSpec gpu;
  gpu.model = FindGpuModel(model_name);
  if (gpu.model == nullptr) {
    std::string known;
    for (const GpuModel& m : AllGpuModels())
      known += (known.empty() ? "" : ", ") + std::string(m.short_name);
    r.Fail("model",
           "unknown GPU model '" + model_name + "' (known: " + known + ", or their NVML names)");
  }
  const GpuModel& model = *gpu.model;
  const unsigned count = static_cast<unsigned>(r.Unsigned("count", 1, 4096));
  if (count == 0) r.Fail("count", "must be at least 1");
  if (count > 1 && (r.Has("uuid") || r.Has("serial") || r.Has("pci_bus_id")))
    r.Fail(r.line(), "uuid, serial and pci_bus_id are per GPU: not allowed with count > 1");
  gpu.power_limit_w = static_cast<unsigned>(
      r.Number("power_limit_w", model.power_default_w, model.power_min_w, model.power_max_w));
  gpu.ambient_c = r.Number("ambient_c", fleet_ambient, -20, 60);
  gpu.loop_us = r.Duration("loop", 0);
  if (r.Has("aggregate_ecc")) {
    MapReader ecc(r.Get("aggregate_ecc"), path + ".aggregate_ecc", r.line(),
                  {"correctable", "uncorrectable"});
    gpu.aggregate_sbe = ecc.Unsigned("correctable", 0, 1ULL << 40);
    gpu.aggregate_dbe = ecc.Unsigned("uncorrectable", 0, 1ULL << 40);
  }
  auto sequence = [&](const char* key) {
    YAML::Node list = r.Get(key);
    if (list && !list.IsSequence()) r.Fail(key, "expected a list");
    return list;
  };
  const YAML::Node workload = sequence("workload");
  for (std::size_t i = 0; workload && i < workload.size(); ++i) {
    WorkloadSegment s = ParseSegment(workload[i], path + ".workload[" + std::to_string(i) + "]",
                                     r.LineOfKey("workload"));
    if (!gpu.workload.empty() && s.start_us <= gpu.workload.back().start_us)
      r.Fail(LineOf(workload[i], r.line()),
             "workload[" + std::to_string(i) + "]: 'at' must be later than the previous segment's");
    gpu.workload.push_back(s);
  }
  if (gpu.workload.empty() || gpu.workload.front().start_us > 0)
    gpu.workload.insert(gpu.workload.begin(), WorkloadSegment{});  // idle until the first segment
  if (gpu.loop_us > 0 && gpu.loop_us <= gpu.workload.back().start_us)
    r.Fail("loop", "must be longer than the last workload segment's start");
  const YAML::Node processes = sequence("processes");
  for (std::size_t i = 0; processes && i < processes.size(); ++i)
    gpu.processes.push_back(ParseProcess(processes[i],
                                         path + ".processes[" + std::to_string(i) + "]",
                                         r.LineOfKey("processes"), model));
  const YAML::Node faults = sequence("faults");
  for (std::size_t i = 0; faults && i < faults.size(); ++i)
    gpu.faults.push_back(ParseFault(faults[i], path + ".faults[" + std::to_string(i) + "]",
                                    r.LineOfKey("faults"), model));
  if (r.Has("mig")) gpu.mig = parse::ParseMig(r.Get("mig"), path + ".mig", r.line(), model);
  gpu.nvlink_connected = nvlink_connected;
  bool explicit_mig_uuid = false;
  for (const MigLayout& layout : gpu.mig)
    for (const MigInstanceSpec& m : layout.instances) explicit_mig_uuid |= !m.uuid.empty();
  if (count > 1 && explicit_mig_uuid)
    r.Fail("mig", "MIG uuids are per GPU: not allowed with count > 1");
  const std::string uuid = r.String("uuid", "");
  if (r.Has("uuid") && (uuid.rfind("GPU-", 0) != 0 || uuid.size() < 8))
    r.Fail("uuid", "expected GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx");
  unsigned domain = 0, bus = 0;
  if (r.Has("pci_bus_id") && !ParsePciBusId(r.String("pci_bus_id", ""), &domain, &bus))
    r.Fail("pci_bus_id", "expected DDDDDDDD:BB:00.0");
  for (unsigned k = 0; k < count; ++k) {
    GpuSpec replica = gpu;
    replica.index = static_cast<unsigned>(scenario->gpus.size());
    replica.uuid = r.Has("uuid") ? uuid : MakeUuid(scenario->seed, replica.index);
    replica.serial = r.String("serial", MakeSerial(scenario->seed, replica.index));
    replica.pci_domain = r.Has("pci_bus_id") ? domain : replica.index / 8;
    replica.pci_bus = r.Has("pci_bus_id") ? bus : kHgxBuses[replica.index % 8];
    for (ProcessSpec& p : replica.processes) p.pid += k;
    parse::AssignMigUuids(scenario->seed, &replica);
    scenario->gpus.push_back(std::move(replica));
  }
}

// driver.missing: NVML functions this driver lacks. Only calls on a device and the GPM calls
// can be missing (the others are needed to reach a device at all).
std::vector<std::string> ParseMissing(const MapReader& d) {
  const YAML::Node list = d.Get("missing");
  if (!list.IsSequence()) d.Fail("missing", "expected a list of NVML function names");
  std::vector<std::string> names;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string name = list[i].IsScalar() ? list[i].Scalar() : "";
    const bool reachable =
        name.rfind("nvmlGpm", 0) == 0 ||
        (name.rfind("nvmlDevice", 0) == 0 && name.rfind("nvmlDeviceGetCount", 0) != 0 &&
         name.rfind("nvmlDeviceGetHandleByIndex", 0) != 0);
    if (!IsKnownNvmlFunction(name) || !reachable)
      throw ParseFailure{LineOf(list[i], d.line()),
                         "driver.missing[" + std::to_string(i) + "]: '" + name +
                             "' is not an NVML function on a device or a GPM function"};
    names.push_back(name);
  }
  return names;
}

Scenario ParseDocument(const YAML::Node& root, const std::string& file_label,
                       std::int64_t default_start_s) {
  MapReader r(root, "", 1,
              {"name", "description", "seed", "start_time", "clock", "speed", "ambient_c", "driver",
               "gpus", "host_processes", "host_scan_interval", "host_proc_root", "nvlink"});
  Scenario s;
  const std::string stem = file_label.substr(file_label.find_last_of('/') + 1);
  s.name = r.String("name", stem.substr(0, stem.rfind(".yaml")));
  s.description = r.String("description", "");
  s.seed = r.Unsigned("seed", 1, UINT64_MAX);
  s.start_time_s = static_cast<std::int64_t>(
      r.Unsigned("start_time", static_cast<std::uint64_t>(default_start_s), 1ULL << 40));
  const std::string clock = r.String("clock", "realtime");
  if (clock != "realtime" && clock != "stepped")
    r.Fail("clock", "expected realtime or stepped, got '" + clock + "'");
  s.clock = clock == "stepped" ? ClockMode::kStepped : ClockMode::kRealtime;
  s.speed = r.Number("speed", 1.0, 0.001, 10000);
  const double ambient = r.Number("ambient_c", 30, -20, 60);
  if (r.Has("host_processes")) {
    const std::string on = r.String("host_processes", "false");
    if (on != "true" && on != "false")
      r.Fail("host_processes", "expected true or false, got '" + on + "'");
    s.host_processes = on == "true";
  }
  const VirtualUs scan_us = r.Duration("host_scan_interval", 1'000'000);
  if (scan_us < 10'000) r.Fail("host_scan_interval", "must be at least 10ms");
  s.host_scan_interval_s = static_cast<double>(scan_us) / 1e6;
  s.host_proc_root = r.String("host_proc_root", "/proc");
  if (r.Has("driver")) {
    MapReader d(r.Get("driver"), "driver", r.LineOfKey("driver"),
                {"version", "cuda_version", "process_info_v3_stride", "missing"});
    s.driver.version = d.String("version", s.driver.version);
    s.driver.cuda_version = static_cast<int>(d.Unsigned("cuda_version", 12040, 99999));
    s.driver.process_info_v3_stride =
        static_cast<unsigned>(d.Unsigned("process_info_v3_stride", 24, 32));
    if (s.driver.process_info_v3_stride != 24 && s.driver.process_info_v3_stride != 32)
      d.Fail("process_info_v3_stride", "must be 24 (correct) or 32 (the 535.43-535.86 bug)");
    if (d.Has("missing")) s.driver.missing = ParseMissing(d);
  }
  bool nvlink_connected = true;
  if (r.Has("nvlink")) {
    MapReader n(r.Get("nvlink"), "nvlink", r.LineOfKey("nvlink"), {"topology"});
    const std::string topology = n.String("topology", "hgx");
    if (topology != "hgx" && topology != "none")
      n.Fail("topology", "expected hgx or none, got '" + topology + "'");
    nvlink_connected = topology == "hgx";
  }
  const YAML::Node gpus = r.Get("gpus");
  if (!gpus || !gpus.IsSequence() || gpus.size() == 0)
    r.Fail(r.LineOfKey("gpus"), "'gpus' must be a non-empty list");
  for (std::size_t i = 0; i < gpus.size(); ++i)
    ParseGpu(gpus[i], "gpus[" + std::to_string(i) + "]", r.LineOfKey("gpus"), ambient,
             nvlink_connected, &s);
  if (s.gpus.size() > 4096) r.Fail(r.LineOfKey("gpus"), "at most 4096 GPUs");
  return s;
}

}  // namespace

bool DefaultWorkloadSegment(std::string_view type, WorkloadSegment* segment) {
  if (const WorkloadDefaults* found = FindWorkloadType(std::string(type))) {
    const WorkloadDefaults& d = *found;
    WorkloadSegment s;
    s.type = d.type;
    s.util_pct = d.util;
    s.mem_util_pct = d.mem_util;
    s.base_util_pct = d.base_util;
    s.base_mem_util_pct = d.base_mem_util;
    s.duty = d.duty;
    s.period_us = 5'000'000;
    s.spike_us = 300'000;
    s.spike_memory_mib = 4096;
    *segment = s;
    return true;
  }
  return false;
}

Expected<Scenario> ParseScenario(std::string_view text, const std::string& file_label,
                                 std::int64_t default_start_s) {
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    // yaml-cpp keeps both pairs of a repeated key; the walk would let one of them win silently.
    if (auto dup = FindDuplicateYamlKey(text))
      return Error{DescribeDuplicateYamlKey(file_label, *dup)};
    return ParseDocument(root, file_label, default_start_s);
  } catch (const ParseFailure& failure) {
    return Error{file_label + ":" + std::to_string(failure.line) + ": " + failure.message};
  } catch (const YAML::Exception& e) {
    return Error{file_label + ":" + std::to_string(e.mark.line + 1) + ": " + YamlErrorMessage(e)};
  }
}

Expected<Scenario> LoadScenario(const std::string& name_or_path, std::int64_t default_start_s) {
  const bool is_path =
      name_or_path.find('/') != std::string::npos ||
      (name_or_path.size() > 5 && name_or_path.compare(name_or_path.size() - 5, 5, ".yaml") == 0);
  if (is_path) {
    std::ifstream file(name_or_path);
    if (!file) return Error{name_or_path + ":0: cannot open the scenario file"};
    std::ostringstream text;
    text << file.rdbuf();
    return ParseScenario(text.str(), name_or_path, default_start_s);
  }
  std::string known;
  for (const EmbeddedScenario& embedded : EmbeddedScenarios()) {
    if (embedded.name == name_or_path)
      return ParseScenario(embedded.text, name_or_path + ".yaml", default_start_s);
    known += (known.empty() ? "" : ", ") + std::string(embedded.name);
  }
  return Error{name_or_path + ":0: no embedded scenario of that name (embedded: " + known +
               "; a path must contain '/' or end in .yaml)"};
}

}  // namespace gw::sim
