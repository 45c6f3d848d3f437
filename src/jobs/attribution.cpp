#include "jobs/attribution.h"

#include <fcntl.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <unordered_set>

#include "jobs/cgroup.h"
#include "jobs/environ.h"

namespace gw::jobs {
namespace {

// Reads a small /proc file whole (these are a few hundred bytes to a few KiB).
Expected<std::string> ReadSmallFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error{path + ": " + std::strerror(errno)};
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return Error{path + ": " + std::strerror(err)};
    }
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > (1 << 20)) break;
  }
  close(fd);
  return text;
}

std::string Value(const std::optional<std::string>& v) {
  return v.value_or("");
}

// GPUWARDEN_METRICS_PORT's value as a port: 1-65535 in decimal digits only, else 0.
int MetricsPort(const std::string& text) {
  if (text.empty() || text.size() > 5 || text.find_first_not_of("0123456789") != std::string::npos)
    return 0;
  const int port = std::stoi(text);
  return port <= 65535 ? port : 0;
}

}  // namespace

bool ParseStatStartTicks(std::string_view stat, std::uint64_t* ticks) {
  const std::size_t close_paren = stat.rfind(')');
  if (close_paren == std::string_view::npos) return false;
  std::string_view rest = stat.substr(close_paren + 1);
  // After ')' come field 3 (state) onwards; field 22 is the 20th of them.
  int field = 2;
  while (!rest.empty()) {
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    if (rest.empty()) break;
    const std::size_t end = std::min(rest.find(' '), rest.size());
    ++field;
    if (field == 22) {
      const std::string_view token = rest.substr(0, end);
      auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), *ticks);
      return ec == std::errc() && ptr == token.data() + token.size();
    }
    rest.remove_prefix(end);
  }
  return false;
}

std::int64_t ParseStatusUid(std::string_view status) {
  std::size_t at = 0;
  while (at < status.size()) {
    const std::size_t eol = std::min(status.find('\n', at), status.size());
    std::string_view line = status.substr(at, eol - at);
    if (line.substr(0, 4) == "Uid:") {
      line.remove_prefix(4);
      while (!line.empty() && (line.front() == '\t' || line.front() == ' ')) line.remove_prefix(1);
      std::int64_t uid = -1;
      auto [ptr, ec] = std::from_chars(line.data(), line.data() + line.size(), uid);
      return ec == std::errc() ? uid : -1;
    }
    at = eol + 1;
  }
  return -1;
}

std::vector<std::string> SplitDeviceList(std::string_view list) {
  std::vector<std::string> items;
  while (!list.empty()) {
    const std::size_t comma = std::min(list.find(','), list.size());
    std::string_view item = list.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) items.emplace_back(item);
    list.remove_prefix(std::min(comma + 1, list.size()));
  }
  return items;
}

Attributor::Attributor(AttributorOptions options) : options_(std::move(options)) {}

void Attributor::AddSource(std::unique_ptr<AttributionSource> source) {
  sources_.push_back(std::move(source));
}

std::string Attributor::UserName(std::int64_t uid) {
  if (uid < 0) return "";
  auto known = users_.find(uid);
  if (known != users_.end()) return known->second;
  std::string name = std::to_string(uid);
  passwd entry;
  passwd* result = nullptr;
  char buf[2048];
  if (getpwuid_r(static_cast<uid_t>(uid), &entry, buf, sizeof buf, &result) == 0 &&
      result != nullptr && result->pw_name != nullptr)
    name = result->pw_name;
  users_.emplace(uid, name);
  return name;
}

Expected<ProcessAttribution> Attributor::ReadProcess(pid_t pid, std::uint64_t start_ticks) {
  const std::string dir = options_.proc_root + "/" + std::to_string(pid);
  ProcessAttribution p;
  p.pid = pid;
  p.start_ticks = start_ticks;
  Expected<std::string> status = ReadSmallFile(dir + "/status");
  if (!status.ok()) return status.error();
  p.uid = ParseStatusUid(*status);
  p.user = UserName(p.uid);
  // cgroup and environ may be unreadable (another user's process without privileges): keep what
  // we have rather than failing the whole process.
  if (Expected<std::string> cgroup = ReadSmallFile(dir + "/cgroup"); cgroup.ok()) {
    CgroupIdentity id = ParseCgroup(*cgroup);
    p.slurm_job_id_cgroup = std::move(id.slurm_job_id);
    p.slurm_step = std::move(id.slurm_step);
    p.pod_uid = std::move(id.pod_uid);
    p.container_id = std::move(id.container_id);
    p.container_runtime = std::move(id.container_runtime);
  }
  if (Expected<AllowedEnv> env = ReadAllowedEnv(dir + "/environ"); env.ok()) {
    p.slurm_job_id_env = Value(env->Get(EnvKey::kSlurmJobId));
    p.slurm_user = Value(env->Get(EnvKey::kSlurmJobUser));
    p.slurm_account = Value(env->Get(EnvKey::kSlurmJobAccount));
    p.slurm_partition = Value(env->Get(EnvKey::kSlurmJobPartition));
    p.slurm_job_gpus = Value(env->Get(EnvKey::kSlurmJobGpus));
    p.cuda_visible_devices = Value(env->Get(EnvKey::kCudaVisibleDevices));
    p.gpuwarden_job = Value(env->Get(EnvKey::kGpuwardenJob));
    p.gpuwarden_team = Value(env->Get(EnvKey::kGpuwardenTeam));
    p.gpuwarden_metrics_port = MetricsPort(Value(env->Get(EnvKey::kGpuwardenMetricsPort)));
  }
  if (!p.slurm_job_id_cgroup.empty()) {
    p.job_id = p.slurm_job_id_cgroup;
    p.job_source = "slurm-cgroup";
  } else if (!p.slurm_job_id_env.empty()) {
    p.job_id = p.slurm_job_id_env;
    p.job_source = "slurm-env";
  } else if (!p.gpuwarden_job.empty()) {
    p.job_id = p.gpuwarden_job;
    p.job_source = "gpuwarden-env";
  }
  ++misses_;
  return p;
}

Expected<ProcessAttribution> Attributor::Attribute(pid_t pid, const std::string& gpu_uuid) {
  const std::string stat_path = options_.proc_root + "/" + std::to_string(pid) + "/stat";
  Expected<std::string> stat = ReadSmallFile(stat_path);
  if (!stat.ok()) {
    cache_.erase(pid);
    return stat.error();
  }
  std::uint64_t ticks = 0;
  if (!ParseStatStartTicks(*stat, &ticks)) return Error{stat_path + ": malformed stat line"};
  auto cached = cache_.find(pid);
  if (cached == cache_.end() || cached->second.start_ticks != ticks) {
    Expected<ProcessAttribution> fresh = ReadProcess(pid, ticks);
    if (!fresh.ok()) {
      cache_.erase(pid);
      return fresh.error();
    }
    cached = cache_.insert_or_assign(pid, std::move(fresh.value())).first;
  }
  ProcessAttribution result = cached->second;
  for (const auto& source : sources_) source->Refine(gpu_uuid, &result);
  return result;
}

std::vector<ProcessAttribution> Attributor::AttributeAll(std::span<const GpuProcessRef> processes) {
  std::vector<ProcessAttribution> out;
  out.reserve(processes.size());
  std::unordered_set<pid_t> seen;
  for (const GpuProcessRef& ref : processes) {
    seen.insert(ref.pid);
    Expected<ProcessAttribution> a = Attribute(ref.pid, ref.gpu_uuid);
    if (a.ok()) out.push_back(std::move(a.value()));
  }
  for (auto it = cache_.begin(); it != cache_.end();)
    it = seen.count(it->first) ? std::next(it) : cache_.erase(it);
  return out;
}

bool Attributor::StillCached(std::span<const pid_t> pids) const {
  char path[4096];
  char stat[1024];  // field 22 comes well within: comm is at most 64 bytes
  for (const pid_t pid : pids) {
    auto cached = cache_.find(pid);
    if (cached == cache_.end()) return false;
    const int n = std::snprintf(path, sizeof path, "%s/%d/stat", options_.proc_root.c_str(),
                                static_cast<int>(pid));
    if (n < 0 || static_cast<std::size_t>(n) >= sizeof path) return false;
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t got = 0;
    do {
      got = read(fd, stat, sizeof stat);
    } while (got < 0 && errno == EINTR);
    close(fd);
    std::uint64_t ticks = 0;
    if (got <= 0 ||
        !ParseStatStartTicks(std::string_view(stat, static_cast<std::size_t>(got)), &ticks) ||
        ticks != cached->second.start_ticks)
      return false;
  }
  return true;
}

}  // namespace gw::jobs
