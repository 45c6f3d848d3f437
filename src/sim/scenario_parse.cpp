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

namespace gw::sim {
namespace {

// Thrown inside the parser only; ParseScenario turns it into an Error value.
struct ParseFailure {
  int line;
  std::string message;
};

int LineOf(const YAML::Node& node, int fallback) {
  if (!node.IsDefined()) return fallback;  // a missing key: Mark() would throw
  const YAML::Mark mark = node.Mark();
  return mark.line >= 0 ? mark.line + 1 : fallback;
}

// A map node being read: remembers its line and path for messages, and rejects unknown keys.
class MapReader {
 public:
  MapReader(const YAML::Node& node, std::string path, int line,
            std::initializer_list<std::string_view> allowed)
      : node_(node), path_(std::move(path)), line_(LineOf(node, line)) {
    if (!node.IsMap()) Fail(line_, "expected a mapping");
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string key = it->first.as<std::string>();
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        std::string expected;
        for (std::string_view a : allowed)
          expected += (expected.empty() ? "" : ", ") + std::string(a);
        Fail(LineOf(it->first, line_),
             "unknown key '" + key + "' (expected one of: " + expected + ")");
      }
    }
  }

  [[noreturn]] void Fail(int line, const std::string& what) const {
    throw ParseFailure{line, (path_.empty() ? "" : path_ + ": ") + what};
  }
  [[noreturn]] void Fail(const std::string& key, const std::string& what) const {
    Fail(LineOf(node_[key], line_), key + ": " + what);
  }

  bool Has(const std::string& key) const { return static_cast<bool>(node_[key]); }
  YAML::Node Get(const std::string& key) const { return node_[key]; }
  int LineOfKey(const std::string& key) const { return LineOf(node_[key], line_); }
  int line() const { return line_; }
  const std::string& path() const { return path_; }

  std::string String(const std::string& key, std::string fallback) const {
    if (!Has(key)) return fallback;
    const YAML::Node value = node_[key];
    if (!value.IsScalar()) Fail(key, "expected a string");
    return value.Scalar();
  }

  double Number(const std::string& key, double fallback, double min, double max) const {
    if (!Has(key)) return fallback;
    const YAML::Node value = node_[key];
    double number = 0;
    if (!value.IsScalar() || !YAML::convert<double>::decode(value, number) ||
        !std::isfinite(number))
      Fail(key, "expected a number, got '" + (value.IsScalar() ? value.Scalar() : "?") + "'");
    if (number < min || number > max) {
      std::ostringstream range;
      range << "must be between " << min << " and " << max << ", got " << value.Scalar();
      Fail(key, range.str());
    }
    return number;
  }

  std::uint64_t Unsigned(const std::string& key, std::uint64_t fallback, std::uint64_t max) const {
    if (!Has(key)) return fallback;
    const YAML::Node value = node_[key];
    std::uint64_t number = 0;
    const std::string text = value.IsScalar() ? value.Scalar() : "";
    if (text.empty() || text[0] == '-' || !YAML::convert<std::uint64_t>::decode(value, number))
      Fail(key, "expected a non-negative integer, got '" + text + "'");
    if (number > max) Fail(key, "must be at most " + std::to_string(max) + ", got " + text);
    return number;
  }

  VirtualUs Duration(const std::string& key, VirtualUs fallback) const {
    if (!Has(key)) return fallback;
    const YAML::Node value = node_[key];
    VirtualUs us = 0;
    if (!value.IsScalar() || !ParseDurationUs(value.Scalar(), &us))
      Fail(key, "expected a duration such as 30s, 500ms, 2m or 1h30m, got '" +
                    (value.IsScalar() ? value.Scalar() : "?") + "'");
    return us;
  }

 private:
  YAML::Node node_;
  std::string path_;
  int line_;
};

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
};

WorkloadSegment ParseSegment(const YAML::Node& node, const std::string& path, int line) {
  MapReader r(node, path, line,
              {"at", "type", "util", "mem_util", "base_util", "base_mem_util", "enc_util",
               "dec_util", "duty", "period", "spike_duration", "spike_memory_mib"});
  if (!r.Has("type")) r.Fail(r.line(), "missing key 'type'");
  const std::string type = r.String("type", "");
  const WorkloadDefaults* defaults = nullptr;
  for (const WorkloadDefaults& d : kWorkloadTypes)
    if (d.name == type) defaults = &d;
  if (defaults == nullptr)
    r.Fail("type",
           "unknown workload type '" + type +
               "' (expected idle, idle_allocated, training, inference, memory_bound, spikes)");
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
  if (s.type == WorkloadType::kSpikes && (s.period_us <= 0 || s.spike_us >= s.period_us))
    r.Fail(r.line(), "spike_duration must be shorter than period");
  return s;
}

ProcessSpec ParseProcess(const YAML::Node& node, const std::string& path, int line) {
  MapReader r(node, path, line,
              {"pid", "name", "memory_mib", "start", "stop", "sm_util", "mem_util"});
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
  f.rate = r.Number(f.type == FaultType::kPcieReplays ? "rate_per_minute" : "rate_per_hour",
                    f.type == FaultType::kPcieReplays ? 6 : 10, 0.001, 3.6e6);
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
  f.xid = static_cast<unsigned>(r.Unsigned("code", 0, 1000));
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
  const std::uint64_t a = Mix(seed, index, 0x55, 1);
  const std::uint64_t b = Mix(seed, index, 0x55, 2);
  char text[64];
  std::snprintf(text, sizeof text, "GPU-%08x-%04x-%04x-%04x-%012llx",
                static_cast<unsigned>(a >> 32), static_cast<unsigned>((a >> 16) & 0xFFFF),
                static_cast<unsigned>(0x4000 | (a & 0x0FFF)), static_cast<unsigned>(b >> 48),
                static_cast<unsigned long long>(b & 0xFFFFFFFFFFFFULL));
  return text;
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
              Scenario* scenario) {
  MapReader r(node, path, line,
              {"model", "count", "uuid", "serial", "pci_bus_id", "power_limit_w", "ambient_c",
               "loop", "aggregate_ecc", "workload", "processes", "faults"});
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
    gpu.processes.push_back(ParseProcess(
        processes[i], path + ".processes[" + std::to_string(i) + "]", r.LineOfKey("processes")));
  const YAML::Node faults = sequence("faults");
  for (std::size_t i = 0; faults && i < faults.size(); ++i)
    gpu.faults.push_back(ParseFault(faults[i], path + ".faults[" + std::to_string(i) + "]",
                                    r.LineOfKey("faults"), model));
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
    scenario->gpus.push_back(std::move(replica));
  }
}

Scenario ParseDocument(const YAML::Node& root, const std::string& file_label,
                       std::int64_t default_start_s) {
  MapReader r(root, "", 1,
              {"name", "description", "seed", "start_time", "clock", "speed", "ambient_c", "driver",
               "gpus", "host_processes", "host_scan_interval", "host_proc_root"});
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
                {"version", "cuda_version", "process_info_v3_stride"});
    s.driver.version = d.String("version", s.driver.version);
    s.driver.cuda_version = static_cast<int>(d.Unsigned("cuda_version", 12040, 99999));
    s.driver.process_info_v3_stride =
        static_cast<unsigned>(d.Unsigned("process_info_v3_stride", 24, 32));
    if (s.driver.process_info_v3_stride != 24 && s.driver.process_info_v3_stride != 32)
      d.Fail("process_info_v3_stride", "must be 24 (correct) or 32 (the 535.43-535.86 bug)");
  }
  const YAML::Node gpus = r.Get("gpus");
  if (!gpus || !gpus.IsSequence() || gpus.size() == 0)
    r.Fail(r.LineOfKey("gpus"), "'gpus' must be a non-empty list");
  for (std::size_t i = 0; i < gpus.size(); ++i)
    ParseGpu(gpus[i], "gpus[" + std::to_string(i) + "]", r.LineOfKey("gpus"), ambient, &s);
  if (s.gpus.size() > 4096) r.Fail(r.LineOfKey("gpus"), "at most 4096 GPUs");
  return s;
}

}  // namespace

bool DefaultWorkloadSegment(std::string_view type, WorkloadSegment* segment) {
  std::string name(type);
  for (char& c : name)
    if (c == '-') c = '_';
  for (const WorkloadDefaults& d : kWorkloadTypes) {
    if (d.name != name) continue;
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
