// YAML -> MIG layouts (`gpus[i].mig`): profiles checked against the model, instances placed on
// the GPU's memory slices as the driver places them, GPU instance ids from the placement.
#include <cstdio>

#include "sim/noise.h"
#include "sim/scenario_reader.h"

namespace gw::sim::parse {
namespace {

constexpr unsigned kMemorySlices = 8;

// GPU instance id of an instance starting at memory slice `start`: the node of the binary tree
// over the 8 slices that its placement fills (0: the whole GPU; 1-2: halves; 3-6: quarters;
// 7-14: eighths), which is how the driver numbers them (7 x 1g gives ids 7-13).
unsigned GpuInstanceId(unsigned memory_slices, unsigned start) {
  if (memory_slices > 4) return 0;
  if (memory_slices > 2) return 1 + start / 4;
  if (memory_slices > 1) return 3 + start / 2;
  return 7 + start;
}

unsigned BlockOf(unsigned memory_slices) {
  unsigned block = 1;
  while (block < memory_slices) block *= 2;
  return block;
}

// Finds a start for every instance, in order, backtracking (at most 7 instances).
bool Place(std::vector<MigInstanceSpec>& instances, std::size_t i, unsigned used) {
  if (i == instances.size()) return true;
  const MigProfile& p = *instances[i].profile;
  const unsigned block = BlockOf(p.memory_slices);
  const unsigned mask = ((1u << block) - 1);
  for (unsigned start = 0; start + block <= kMemorySlices; ++start) {
    if ((p.placement_mask & (1u << start)) == 0 || (used & (mask << start)) != 0) continue;
    instances[i].gpu_instance_id = GpuInstanceId(p.memory_slices, start);
    if (Place(instances, i + 1, used | (mask << start))) return true;
  }
  return false;
}

std::string KnownProfiles(const GpuModel& model) {
  std::string known;
  for (const MigProfile& p : model.mig_profiles)
    known += (known.empty() ? "" : ", ") + std::string(p.name);
  return known;
}

// One entry of `instances`: "1g.10gb", "7x1g.10gb", or {profile, uuid, workload}.
void ParseInstance(const YAML::Node& node, const std::string& path, int line, const GpuModel& model,
                   std::vector<MigInstanceSpec>* out) {
  std::string profile_name;
  MigInstanceSpec instance;
  unsigned repeat = 1;
  const int here = LineOf(node, line);
  if (node.IsScalar()) {
    profile_name = node.Scalar();
    const std::size_t x = profile_name.find('x');
    if (x != std::string::npos && x > 0 && profile_name.find('.') > x) {
      const std::string count = profile_name.substr(0, x);
      if (count.find_first_not_of("0123456789") != std::string::npos || count.size() > 2)
        throw ParseFailure{
            here, path + ": expected COUNTxPROFILE such as 7x1g.10gb, got '" + profile_name + "'"};
      repeat = static_cast<unsigned>(std::stoul(count));
      profile_name = profile_name.substr(x + 1);
    }
  } else {
    MapReader r(node, path, line, {"profile", "uuid", "workload"});
    if (!r.Has("profile")) r.Fail(r.line(), "missing key 'profile'");
    profile_name = r.String("profile", "");
    instance.uuid = r.String("uuid", "");
    if (r.Has("uuid") && (instance.uuid.rfind("MIG-", 0) != 0 || instance.uuid.size() < 8))
      r.Fail("uuid", "expected MIG-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx");
    if (r.Has("workload")) {
      WorkloadSegment segment;
      const std::string type = r.String("workload", "");
      if (!DefaultWorkloadSegment(type, &segment))
        r.Fail("workload", "unknown workload type '" + type + "'");
      instance.workload = segment;
    }
  }
  instance.profile = FindMigProfile(model, profile_name);
  if (instance.profile == nullptr)
    throw ParseFailure{here, path + ": unknown MIG profile '" + profile_name + "' for " +
                                 std::string(model.nvml_name) + " (known: " + KnownProfiles(model) +
                                 ")"};
  if (repeat == 0 || repeat > model.max_mig_devices)
    throw ParseFailure{here, path + ": between 1 and " + std::to_string(model.max_mig_devices) +
                                 " instances, got " + std::to_string(repeat)};
  for (unsigned k = 0; k < repeat; ++k) out->push_back(instance);
}

std::vector<MigInstanceSpec> ParseInstances(const YAML::Node& node, const std::string& path,
                                            int line, const GpuModel& model) {
  std::vector<MigInstanceSpec> instances;
  if (node.IsScalar()) {  // "3g.40gb,2g.20gb,1g.10gb,1g.10gb"
    std::string list = node.Scalar();
    std::size_t from = 0;
    while (from <= list.size()) {
      const std::size_t comma = std::min(list.find(',', from), list.size());
      std::string item = list.substr(from, comma - from);
      item.erase(0, item.find_first_not_of(' '));
      item.erase(item.find_last_not_of(' ') + 1);
      if (!item.empty())
        ParseInstance(YAML::Node(item), path, LineOf(node, line), model, &instances);
      from = comma + 1;
    }
  } else if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i)
      ParseInstance(node[i], path + "[" + std::to_string(i) + "]", LineOf(node, line), model,
                    &instances);
  } else if (node.IsDefined() && !node.IsNull()) {
    throw ParseFailure{LineOf(node, line), path + ": expected a list of MIG profiles"};
  }
  const int here = LineOf(node, line);
  if (instances.size() > model.max_mig_devices)
    throw ParseFailure{here, path + ": at most " + std::to_string(model.max_mig_devices) +
                                 " MIG instances on " + std::string(model.nvml_name)};
  unsigned compute = 0;
  for (const MigInstanceSpec& m : instances) compute += m.profile->compute_slices;
  if (compute > model.max_mig_devices)
    throw ParseFailure{here, path + ": the instances need " + std::to_string(compute) +
                                 " compute slices, the GPU has " +
                                 std::to_string(model.max_mig_devices)};
  // The larger instances first, each at its lowest free placement (backtracking when the
  // smaller ones would not fit): the same ids whatever order the scenario lists them in.
  std::stable_sort(instances.begin(), instances.end(),
                   [](const MigInstanceSpec& a, const MigInstanceSpec& b) {
                     return a.profile->memory_slices > b.profile->memory_slices;
                   });
  if (!Place(instances, 0, 0))
    throw ParseFailure{here, path + ": these instances do not fit on the GPU's 8 memory slices"};
  std::stable_sort(instances.begin(), instances.end(),
                   [](const MigInstanceSpec& a, const MigInstanceSpec& b) {
                     return a.gpu_instance_id < b.gpu_instance_id;
                   });
  return instances;
}

bool Mode(const MapReader& r, const std::string& key, bool fallback) {
  if (!r.Has(key)) return fallback;
  const std::string mode = r.String(key, "");
  if (mode != "enabled" && mode != "disabled")
    r.Fail(key, "expected enabled or disabled, got '" + mode + "'");
  return mode == "enabled";
}

MigLayout ParseLayout(const MapReader& r, const GpuModel& model, const MigLayout* previous) {
  MigLayout layout;
  layout.enabled = Mode(r, "mode", previous != nullptr ? previous->enabled : true);
  layout.pending = Mode(r, "pending", layout.enabled);
  if (r.Has("instances"))
    layout.instances = ParseInstances(r.Get("instances"), r.path() + ".instances",
                                      r.LineOfKey("instances"), model);
  else if (previous != nullptr && layout.enabled)
    layout.instances = previous->instances;
  if (!layout.enabled && !layout.instances.empty())
    r.Fail(r.line(), "MIG instances need mode: enabled");
  return layout;
}

}  // namespace

std::string MakeUuid(std::string_view prefix, std::uint64_t a, std::uint64_t b) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*s%08x-%04x-%04x-%04x-%012llx",
                static_cast<int>(prefix.size()), prefix.data(), static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xFFFF),
                static_cast<unsigned>(0x4000 | (a & 0x0FFF)), static_cast<unsigned>(b >> 48),
                static_cast<unsigned long long>(b & 0xFFFFFFFFFFFFULL));
  return text;
}

std::vector<MigLayout> ParseMig(const YAML::Node& node, const std::string& path, int line,
                                const GpuModel& model) {
  MapReader r(node, path, line, {"mode", "pending", "instances", "changes"});
  if (model.max_mig_devices == 0)
    r.Fail(r.line(), std::string(model.nvml_name) + " has no MIG (A100, H100 and H200 do)");
  std::vector<MigLayout> layouts;
  layouts.push_back(ParseLayout(r, model, nullptr));
  const YAML::Node changes = r.Get("changes");
  if (changes && !changes.IsSequence()) r.Fail("changes", "expected a list");
  for (std::size_t i = 0; changes && i < changes.size(); ++i) {
    MapReader c(changes[i], path + ".changes[" + std::to_string(i) + "]", r.LineOfKey("changes"),
                {"at", "mode", "pending", "instances"});
    if (!c.Has("at")) c.Fail(c.line(), "missing key 'at'");
    MigLayout layout = ParseLayout(c, model, &layouts.back());
    layout.at_us = c.Duration("at", 0);
    if (layout.at_us <= layouts.back().at_us)
      c.Fail("at", "must be later than the previous MIG layout's");
    layouts.push_back(std::move(layout));
  }
  if (layouts.size() > kMaxMigLayouts)
    r.Fail("changes", "at most " + std::to_string(kMaxMigLayouts - 1) + " changes");
  return layouts;
}

void AssignMigUuids(std::uint64_t seed, GpuSpec* gpu) {
  for (std::size_t l = 0; l < gpu->mig.size(); ++l) {
    for (MigInstanceSpec& m : gpu->mig[l].instances) {
      if (!m.uuid.empty()) continue;
      if (l > 0) {
        for (const MigInstanceSpec& before : gpu->mig[l - 1].instances)
          if (before.gpu_instance_id == m.gpu_instance_id && before.profile == m.profile)
            m.uuid = before.uuid;
        if (!m.uuid.empty()) continue;
      }
      const std::uint64_t which = l * 256 + m.gpu_instance_id;
      m.uuid = MakeUuid("MIG-", Mix(seed, gpu->index, 0x419, which),
                        Mix(seed, gpu->index, 0x41A, which));
    }
  }
}

}  // namespace gw::sim::parse
