#include "collect/process_details.h"

#include <fcntl.h>
#include <pwd.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>

#include "nvml/device.h"

namespace gw::collect {

namespace {

// Reads up to size - 1 bytes of `path` into `buffer`; the length read, -1 if unreadable.
ssize_t ReadSmall(const char* path, char* buffer, size_t size) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t used = 0;
  while (used + 1 < size) {
    ssize_t n = ::read(fd, buffer + used, size - 1 - used);
    if (n < 0) {
      ::close(fd);
      return -1;
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  ::close(fd);
  buffer[used] = '\0';
  return static_cast<ssize_t>(used);
}

bool ParseU64(std::string_view text, uint64_t* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

// The real uid from status text ("Uid:\t1000\t1000\t1000\t1000"); -1 if absent.
long long StatusUid(std::string_view status) {
  size_t at = status.find("\nUid:");
  if (at == std::string_view::npos) return -1;
  std::string_view rest = status.substr(at + 5);
  size_t begin = rest.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return -1;
  rest.remove_prefix(begin);
  long long uid = -1;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), uid);
  return ec == std::errc() ? uid : -1;
}

// VmRSS from status text ("VmRSS:\t  1724 kB"), bytes; NaN if absent (a kernel thread).
double StatusRssBytes(std::string_view status) {
  size_t at = status.find("\nVmRSS:");
  if (at == std::string_view::npos) return kAbsent;
  std::string_view rest = status.substr(at + 7);
  size_t begin = rest.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return kAbsent;
  rest.remove_prefix(begin);
  uint64_t kib = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), kib);
  return ec == std::errc() ? static_cast<double>(kib) * 1024 : kAbsent;
}

std::string UserName(long long uid) {
  if (uid < 0) return "";
  passwd pw{};
  passwd* found = nullptr;
  char buffer[1024];
  if (getpwuid_r(static_cast<uid_t>(uid), &pw, buffer, sizeof buffer, &found) == 0 &&
      found != nullptr)
    return found->pw_name;
  return std::to_string(uid);
}

}  // namespace

bool ParseProcStat(std::string_view line, ProcStat* out) {
  size_t open = line.find('(');
  size_t close = line.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open)
    return false;
  out->comm = line.substr(open + 1, close - open - 1);
  // After ") ": field 3 (state) onwards, separated by single spaces.
  std::string_view rest = line.substr(close + 1);
  int field = 2;
  size_t pos = 0;
  bool got_rss = false;
  while (pos < rest.size()) {
    while (pos < rest.size() && rest[pos] == ' ') ++pos;
    size_t end = rest.find(' ', pos);
    if (end == std::string_view::npos) end = rest.size();
    std::string_view token = rest.substr(pos, end - pos);
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.remove_suffix(1);
    if (token.empty()) break;
    ++field;
    bool ok = true;
    switch (field) {
      case 14:
        ok = ParseU64(token, &out->utime);
        break;
      case 15:
        ok = ParseU64(token, &out->stime);
        break;
      case 22:
        ok = ParseU64(token, &out->start_ticks);
        break;
      case 24: {
        long long rss = 0;
        auto [p, ec] = std::from_chars(token.data(), token.data() + token.size(), rss);
        ok = ec == std::errc() && p == token.data() + token.size();
        out->rss_pages = rss > 0 ? static_cast<uint64_t>(rss) : 0;
        got_rss = ok;
        break;
      }
      default:
        break;
    }
    if (!ok) return false;
    if (got_rss) return true;
    pos = end;
  }
  return false;
}

ProcessEnricher::ProcessEnricher(ProcessEnricherOptions options, const nvml::Api* api)
    : options_(std::move(options)), api_(api) {
  long ticks = sysconf(_SC_CLK_TCK);
  if (ticks > 0) ticks_per_s_ = static_cast<double>(ticks);
  long page = sysconf(_SC_PAGESIZE);
  if (page > 0) page_bytes_ = static_cast<double>(page);
}

std::shared_ptr<const ProcessDetails> ProcessEnricher::ReadDetails(unsigned pid, bool in_proc,
                                                                   std::string_view comm) {
  ++detail_reads_;
  auto d = std::make_shared<ProcessDetails>();
  char path[512];
  char buffer[4096];
  if (in_proc) {
    d->name = std::string(comm);
    std::snprintf(path, sizeof path, "%s/%u/status", options_.proc_root.c_str(), pid);
    if (ssize_t n = ReadSmall(path, buffer + 1, sizeof buffer - 1); n > 0) {
      buffer[0] = '\n';  // so that a first-line "Uid:" is found like the others
      d->user = UserName(StatusUid(std::string_view(buffer, static_cast<size_t>(n) + 1)));
    }
    std::snprintf(path, sizeof path, "%s/%u/cmdline", options_.proc_root.c_str(), pid);
    if (ssize_t n = ReadSmall(path, buffer, kCommandBytes + 1); n > 0) {
      size_t len = std::min(static_cast<size_t>(n), kCommandBytes);
      while (len > 0 && buffer[len - 1] == '\0') --len;  // the last argument's terminator
      for (size_t i = 0; i < len; ++i)
        if (buffer[i] == '\0' || buffer[i] == '\n') buffer[i] = ' ';
      d->command.assign(buffer, len);
    }
  }
  if (d->name.empty() && api_ != nullptr) {
    char name[256];
    if (nvml::System(api_).ProcessName(pid, name, sizeof name).ok()) d->name = name;
  }
  return d;
}

void ProcessEnricher::Refresh(double now_s, unsigned pid) {
  Entry& e = cache_[pid];
  if (e.pass == pass_) return;  // listed on several GPUs: read once per pass
  e.pass = pass_;
  char path[512];
  char line[1024];
  std::snprintf(path, sizeof path, "%s/%u/stat", options_.proc_root.c_str(), pid);
  ProcStat st;
  ssize_t n = ReadSmall(path, line, sizeof line);
  const bool in_proc = n > 0 && ParseProcStat(std::string_view(line, static_cast<size_t>(n)), &st);
  if (!in_proc) {
    if (!e.details || e.in_proc) {  // new, or the process behind the pid left /proc
      e = Entry{};
      e.pass = pass_;
      e.details = ReadDetails(pid, false, {});
    }
    return;
  }
  if (!e.details || !e.in_proc || e.start_ticks != st.start_ticks) {
    e = Entry{};
    e.pass = pass_;
    e.in_proc = true;
    e.start_ticks = st.start_ticks;
    e.details = ReadDetails(pid, true, st.comm);
  }
  const uint64_t cpu = st.utime + st.stime;
  if (e.cpu_at_s >= 0 && now_s > e.cpu_at_s && cpu >= e.cpu_ticks)
    e.cpu_ratio = static_cast<double>(cpu - e.cpu_ticks) / ticks_per_s_ / (now_s - e.cpu_at_s);
  e.cpu_ticks = cpu;
  e.cpu_at_s = now_s;
  // Resident memory as status' VmRSS says it: exact, where stat's rss field (an approximate
  // per-CPU counter on recent kernels) can lag by a hundred kilobytes.
  char status[4096];
  std::snprintf(path, sizeof path, "%s/%u/status", options_.proc_root.c_str(), pid);
  ssize_t got = ReadSmall(path, status + 1, sizeof status - 1);
  status[0] = '\n';
  e.rss_bytes =
      got > 0 ? StatusRssBytes(std::string_view(status, static_cast<size_t>(got) + 1)) : kAbsent;
  if (IsAbsent(e.rss_bytes)) e.rss_bytes = static_cast<double>(st.rss_pages) * page_bytes_;
}

void ProcessEnricher::Fill(ProcessSample& sample) const {
  auto it = cache_.find(sample.pid);
  if (it == cache_.end()) return;
  const Entry& e = it->second;
  sample.details = e.details;
  sample.host_cpu_ratio = e.cpu_ratio;
  sample.host_memory_bytes = e.rss_bytes;
}

void ProcessEnricher::Apply(double now_s, std::vector<GpuSnapshot>& gpus) {
  bool due = last_refresh_s_ < 0 || now_s - last_refresh_s_ >= options_.interval_s;
  // A pid not seen yet is read at once (its name should not wait for the next refresh).
  if (!due) {
    for (const GpuSnapshot& g : gpus) {
      for (const ProcessSample& p : g.processes) due |= !cache_.contains(p.pid);
      for (const MigInstanceSnapshot& m : g.mig)
        for (const ProcessSample& p : m.processes) due |= !cache_.contains(p.pid);
    }
  }
  if (due) {
    last_refresh_s_ = now_s;
    ++pass_;
    for (const GpuSnapshot& g : gpus) {
      for (const ProcessSample& p : g.processes) Refresh(now_s, p.pid);
      for (const MigInstanceSnapshot& m : g.mig)
        for (const ProcessSample& p : m.processes) Refresh(now_s, p.pid);
    }
    std::erase_if(cache_, [this](const auto& kv) { return kv.second.pass != pass_; });
  }
  for (GpuSnapshot& g : gpus) {
    for (ProcessSample& p : g.processes) Fill(p);
    for (MigInstanceSnapshot& m : g.mig)
      for (ProcessSample& p : m.processes) Fill(p);
  }
}

}  // namespace gw::collect
