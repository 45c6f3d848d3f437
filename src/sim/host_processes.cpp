#include "sim/host_processes.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <optional>

namespace gw::sim {
namespace {

constexpr std::size_t kMaxValue = 512;

struct DeclaredEnv {
  std::optional<std::string> workload, cuda_visible, slurm_gpus, machine, memory_mib;
};

// Reads environ through a fixed buffer, copying out only the five keys' values.
bool ReadDeclaredEnv(const std::string& path, DeclaredEnv* env) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  static constexpr std::string_view kKeys[] = {"GPUWARDEN_SIM_WORKLOAD", "CUDA_VISIBLE_DEVICES",
                                               "SLURM_JOB_GPUS", "GPUWARDEN_SIM_MACHINE",
                                               "GPUWARDEN_SIM_MEMORY_MIB"};
  std::optional<std::string>* slots[] = {&env->workload, &env->cuda_visible, &env->slurm_gpus,
                                         &env->machine, &env->memory_mib};
  char buf[4096];
  char key[32];
  std::size_t key_len = 0;
  enum { kKey, kValue, kSkip } phase = kKey;
  int slot = -1;
  std::string value;
  auto finish = [&] {
    if (phase == kValue && slot >= 0) *slots[slot] = value;
    phase = kKey;
    key_len = 0;
    slot = -1;
    value.clear();
  };
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      const char c = buf[i];
      if (c == '\0') {
        finish();
      } else if (phase == kKey) {
        if (c == '=') {
          for (int k = 0; k < 5; ++k)
            if (std::string_view(key, key_len) == kKeys[k]) slot = k;
          phase = slot >= 0 ? kValue : kSkip;
        } else if (key_len < sizeof key) {
          key[key_len++] = c;
        } else {
          phase = kSkip;  // longer than any key we read
        }
      } else if (phase == kValue && value.size() < kMaxValue) {
        value.push_back(c);
      }
    }
  }
  finish();
  explicit_bzero(buf, sizeof buf);
  explicit_bzero(key, sizeof key);
  close(fd);
  return true;
}

std::string ReadComm(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  char buf[64];
  const ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  std::string name(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
  while (!name.empty() && (name.back() == '\n' || name.back() == '\0')) name.pop_back();
  return name;
}

using Placement = std::pair<unsigned, std::string>;  // (gpu, MIG uuid or "")

std::vector<Placement> ResolveDevices(std::string_view list, const std::vector<GpuSpec>& gpus,
                                      const std::vector<HostMigDevice>& mig) {
  std::vector<Placement> out;
  while (!list.empty()) {
    const std::size_t comma = std::min(list.find(','), list.size());
    std::string_view item = list.substr(0, comma);
    list.remove_prefix(std::min(comma + 1, list.size()));
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.empty()) continue;
    unsigned index = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), index);
    if (ec == std::errc() && ptr == item.data() + item.size()) {
      if (index < gpus.size()) out.emplace_back(index, "");
      continue;
    }
    if (item.substr(0, 4) == "MIG-") {
      const HostMigDevice* match = nullptr;
      bool ambiguous = false;
      for (const HostMigDevice& m : mig) {
        if (m.uuid.compare(0, item.size(), item) != 0) continue;
        ambiguous = match != nullptr;
        match = &m;
      }
      if (match != nullptr && !ambiguous) out.emplace_back(match->gpu, match->uuid);
      continue;
    }
    if (item.substr(0, 4) != "GPU-") continue;
    std::optional<unsigned> match;
    bool ambiguous = false;
    for (const GpuSpec& g : gpus) {
      if (g.uuid.compare(0, item.size(), item) != 0) continue;
      ambiguous = match.has_value();
      match = g.index;
    }
    if (match && !ambiguous) out.emplace_back(*match, "");
  }
  // One entry per GPU: the first that names it.
  std::stable_sort(out.begin(), out.end(),
                   [](const Placement& a, const Placement& b) { return a.first < b.first; });
  out.erase(std::unique(out.begin(), out.end(),
                        [](const Placement& a, const Placement& b) { return a.first == b.first; }),
            out.end());
  return out;
}

}  // namespace

double HostProcessMemoryMib(WorkloadType type) {
  switch (type) {
    case WorkloadType::kTraining:
      return 30'720;
    case WorkloadType::kInference:
      return 18'432;
    case WorkloadType::kMemoryBound:
      return 40'960;
    case WorkloadType::kSpikes:
      return 8'192;
    case WorkloadType::kBusyHollow:
      return 6'144;
    case WorkloadType::kIdle:
      return 512;  // a CUDA context and nothing else
    case WorkloadType::kIdleAllocated:
      return 0;
  }
  return 0;
}

std::vector<HostProcess> ScanHostProcesses(const std::string& proc_root,
                                           const std::vector<GpuSpec>& gpus,
                                           std::string_view machine,
                                           const std::vector<HostMigDevice>& mig) {
  std::vector<HostProcess> found;
  DIR* dir = opendir(proc_root.c_str());
  if (dir == nullptr) return found;
  while (dirent* entry = readdir(dir)) {
    unsigned pid = 0;
    const std::string_view name(entry->d_name);
    auto [ptr, ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (ec != std::errc() || ptr != name.data() + name.size() || pid == 0) continue;
    const std::string base = proc_root + "/" + std::string(name);
    DeclaredEnv env;
    if (!ReadDeclaredEnv(base + "/environ", &env) || !env.workload) continue;
    if (env.machine.value_or("") != machine) continue;  // another simulated machine's process
    HostProcess p;
    if (!DefaultWorkloadSegment(*env.workload, &p.workload)) continue;
    const std::string& list = env.cuda_visible ? *env.cuda_visible : env.slurm_gpus.value_or("");
    for (auto& [gpu, mig_uuid] : ResolveDevices(list, gpus, mig)) {
      p.gpus.push_back(gpu);
      p.mig_uuids.push_back(std::move(mig_uuid));
    }
    if (p.gpus.empty()) continue;
    p.pid = pid;
    p.name = ReadComm(base + "/comm");
    p.memory_mib = HostProcessMemoryMib(p.workload.type);
    if (env.memory_mib) {  // a whole number of MiB, as declared; anything else keeps the default
      const std::string& text = *env.memory_mib;
      unsigned long mib = 0;
      auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), mib);
      if (err == std::errc() && end == text.data() + text.size() && mib <= 1u << 24)
        p.memory_mib = static_cast<double>(mib);
    }
    found.push_back(std::move(p));
  }
  closedir(dir);
  std::sort(found.begin(), found.end(),
            [](const HostProcess& a, const HostProcess& b) { return a.pid < b.pid; });
  return found;
}

}  // namespace gw::sim
