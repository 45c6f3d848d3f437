// collect/process_details.h — who each GPU process is and what it uses of the host: its name,
// user and command line, the CPU cores it uses and its resident memory (the process table of
// `gpuwarden top`, the console's GPU page, /api/snapshot; docs/metrics.md, "snapshot --json").
//
//   ProcessEnricher enricher({.proc_root = "/proc", .interval_s = 2}, &library->api());
//   enricher.Apply(steady_now_s, snapshot.gpus);   // on the collector's thread, at each publish
//
// For each pid NVML lists (on a GPU or a MIG instance), at most every `interval_s`:
//   <root>/<pid>/stat     start time (field 22: with the pid, the cache key), utime + stime (14,
//                         15: the CPU used, turned into cores by the change between two reads over
//                         the real time between them)
//   <root>/<pid>/status   VmRSS (resident memory; stat's rss field 24 where status has none)
//   once per pid and start time: <root>/<pid>/comm (name), status "Uid:" (user, through
//                         getpwuid_r), cmdline (the command, arguments joined by spaces, cut at
//                         kCommandBytes)
// A pid that is not under the root (a container without the host's pid namespace, or the
// simulator's scenario processes) gets the driver's name (nvmlSystemGetProcessName) and no user
// or host figures. A reused pid (another start time) is read afresh; pids no longer listed are
// forgotten. Between refreshes Apply only copies what it holds into the samples.
//
// Cost: the stat reads go through a stack buffer, the cache is keyed by pid; in steady state (the
// same processes) Apply allocates nothing. The details strings are shared (ProcessDetails is
// immutable), so publishing a snapshot copies pointers.
//
// Threading: one thread (the collector's worker). The NVML call is made on that thread.
#ifndef GPUWARDEN_COLLECT_PROCESS_DETAILS_H_
#define GPUWARDEN_COLLECT_PROCESS_DETAILS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "collect/snapshot.h"
#include "nvml/library.h"

namespace gw::collect {

inline constexpr size_t kCommandBytes = 256;

struct ProcessEnricherOptions {
  std::string proc_root = "/proc";
  double interval_s = 2.0;  // between /proc reads of the same pid; 0 = at every Apply
};

class ProcessEnricher {
 public:
  // `api` may be null (no NVML: no driver names).
  ProcessEnricher(ProcessEnricherOptions options, const nvml::Api* api);

  // Refreshes what is due (`now_s`: a steady clock, seconds) and fills `details`,
  // `host_cpu_ratio` and `host_memory_bytes` of every process sample of `gpus` (their MIG
  // instances' included).
  void Apply(double now_s, std::vector<GpuSnapshot>& gpus);

  size_t cache_size() const { return cache_.size(); }
  // How many times a pid's comm/status/cmdline were read (new pids), for tests.
  uint64_t detail_reads() const { return detail_reads_; }

 private:
  struct Entry {
    uint64_t start_ticks = 0;
    bool in_proc = false;
    std::shared_ptr<const ProcessDetails> details;
    uint64_t cpu_ticks = 0;  // utime + stime at cpu_at_s
    double cpu_at_s = -1;
    double cpu_ratio = kAbsent;
    double rss_bytes = kAbsent;
    uint64_t pass = 0;  // the refresh pass that last saw it
  };
  void Refresh(double now_s, unsigned pid);
  std::shared_ptr<const ProcessDetails> ReadDetails(unsigned pid, bool in_proc,
                                                    std::string_view comm);
  void Fill(ProcessSample& sample) const;

  ProcessEnricherOptions options_;
  const nvml::Api* api_;
  std::unordered_map<unsigned, Entry> cache_;
  double last_refresh_s_ = -1;
  uint64_t pass_ = 0;
  uint64_t detail_reads_ = 0;
  double ticks_per_s_ = 100;
  double page_bytes_ = 4096;
};

// The fields of a /proc/<pid>/stat line gpuwarden reads; false if malformed. The comm field may
// hold spaces and ')' — fields are counted after the last ')'.
struct ProcStat {
  std::string_view comm;  // inside the parentheses (a view into the line)
  uint64_t utime = 0, stime = 0, start_ticks = 0, rss_pages = 0;
};
bool ParseProcStat(std::string_view line, ProcStat* out);

}  // namespace gw::collect

#endif  // GPUWARDEN_COLLECT_PROCESS_DETAILS_H_
