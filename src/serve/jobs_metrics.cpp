// The task layer's families (docs/metrics.md "Task layer"), walked once for each use: rendered on
// /metrics and appended to the store (serve/jobs_series.h). The walk builds no strings: labels are
// views of the service's own state, GPU indices are formatted into a stack buffer.
#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>

#include "base/clock.h"
#include "jobs/gpu_unit.h"
#include "serve/jobs_service.h"

namespace gw::serve {

namespace {

// Labels of one sample, up to twelve, without allocating.
class LabelList {
 public:
  LabelList& Add(std::string_view name, std::string_view value) {
    labels_[size_++] = TaskLabel{name, value};
    return *this;
  }
  LabelList& Add(std::span<const TaskLabel> more) {
    for (const TaskLabel& l : more) Add(l.name, l.value);
    return *this;
  }
  std::span<const TaskLabel> span() const { return {labels_.data(), size_}; }

 private:
  std::array<TaskLabel, 12> labels_{};
  size_t size_ = 0;
};

// A GPU index as label text, in a buffer the caller keeps alive.
struct IndexText {
  explicit IndexText(unsigned index) {
    size = static_cast<size_t>(std::to_chars(text, text + sizeof text, index).ptr - text);
  }
  std::string_view view() const { return {text, size}; }
  char text[16];
  size_t size = 0;
};

double WallNowS() {
  return SystemClock().NowSeconds();
}

// The throttle reason labels in name order (the order a std::map of reasons has), for merging
// with a job's reasons.
const std::array<std::string_view, collect::kClockEventReasons.size()>& SortedReasonLabels() {
  static const auto sorted = [] {
    std::array<std::string_view, collect::kClockEventReasons.size()> out{};
    for (size_t i = 0; i < out.size(); ++i) out[i] = collect::kClockEventReasons[i].label;
    std::sort(out.begin(), out.end());
    return out;
  }();
  return sorted;
}

struct PerJobFamily {
  const char* name;
  const char* type;
  const char* unit;
  const char* help;
};
enum PerJobId {
  kGpus,
  kGpuSeconds,
  kEnergy,
  kUtilization,
  kSmActive,
  kTensorActive,
  kMemoryPeak,
  kMemoryRatio,
  kThrottle,
  kEcc,
  kXid,
  kIdleGpuSeconds,
  kIdleStreak,
  kPerJobCount,
};
constexpr PerJobFamily kPerJob[kPerJobCount] = {
    {"gpu_job_gpus", "gauge", "",
     "GPUs allocated to the job; a MIG instance counts as its share of the GPU."},
    {"gpu_job_gpu_seconds_total", "counter", "", "Allocated GPUs x run time so far."},
    {"gpu_job_energy_joules_total", "counter", "joules",
     "Energy used by the job's GPUs since it started."},
    {"gpu_job_sm_utilization_ratio", "gauge", "ratio",
     "SM utilization over the job's GPUs and lifetime: time-weighted avg, or max (stat label)."},
    {"gpu_job_sm_active_ratio", "gauge", "ratio",
     "GPM SM activity over the job's GPUs and lifetime: time-weighted avg, or max (stat label); "
     "absent without GPM."},
    {"gpu_job_tensor_active_ratio", "gauge", "ratio",
     "GPM tensor-pipe activity (any pipe) over the job's GPUs and lifetime: time-weighted avg, or "
     "max (stat label); absent without GPM."},
    {"gpu_job_memory_peak_bytes", "gauge", "bytes", "Peak device memory used on any job GPU."},
    {"gpu_job_memory_used_ratio", "gauge", "ratio",
     "Device memory used / total now, highest over the job's GPUs."},
    {"gpu_job_throttle_seconds_total", "counter", "",
     "GPU-seconds during which each clock-event reason was active on the job's GPUs."},
    {"gpu_job_ecc_errors_total", "counter", "", "ECC errors on the job's GPUs during the job."},
    {"gpu_job_xid_errors_total", "counter", "", "XID events on the job's GPUs during the job."},
    {"gpu_job_idle_gpu_seconds_total", "counter", "",
     "GPU-seconds the job's GPUs spent at or below jobs.idle_threshold."},
    {"gpu_job_idle_streak_seconds", "gauge", "seconds",
     "How long all of the job's GPUs have been idle; 0 when any is active."},
};

}  // namespace

std::string_view JobsService::VisibleJobId(std::string_view key) {
  constexpr std::string_view kProcessPrefix = "process:";
  return key.substr(0, kProcessPrefix.size()) == kProcessPrefix ? key.substr(kProcessPrefix.size())
                                                                : key;
}

void JobsService::RenderMetrics(collect::Format format, std::string* out) const {
  std::optional<jobs::SlurmHealth> health;
  if (poller_) health = poller_->Health();
  std::optional<k8s::KubernetesStatus> kubernetes;
  if (kubernetes_) kubernetes = kubernetes_->Status();
  std::lock_guard<std::mutex> lock(mu_);
  ExpositionSink sink(format, out);
  EmitFamilies(&sink, NowS(), health ? &*health : nullptr, kubernetes ? &*kubernetes : nullptr);
}

void JobsService::EmitFamilies(TaskFamilySink* sink, double now, const jobs::SlurmHealth* health,
                               const k8s::KubernetesStatus* kubernetes) const {
  // gpu and uuid (the GPU's), and for a MIG instance mig_instance and mig_profile.
  // `index` keeps the fallback text alive (a unit no snapshot showed yet: its GPU's index).
  auto unit_labels = [this](unsigned unit, const IndexText& index, LabelList* l) {
    auto it = gpu_ids_.find(unit);
    if (it == gpu_ids_.end()) {
      l->Add("gpu", index.view()).Add("uuid", "");
      return;
    }
    l->Add("gpu", it->second.gpu).Add("uuid", it->second.uuid);
    if (jobs::IsMigUnit(unit))
      l->Add("mig_instance", it->second.mig_instance).Add("mig_profile", it->second.mig_profile);
  };
  auto share_of = [this](unsigned unit) {
    auto it = gpu_ids_.find(unit);
    return it == gpu_ids_.end() ? 1.0 : it->second.share;
  };
  // job_id, user, team, partition; a pod's also pod, namespace and (`unit` given) the container
  // the unit was handed to.
  auto job_labels = [this](const std::string& key, LabelList* l, const unsigned* unit) {
    auto m = meta_.find(key);
    static const JobMeta kNone;
    const JobMeta& meta = m == meta_.end() ? kNone : m->second;
    l->Add("job_id", VisibleJobId(key))
        .Add("user", meta.user)
        .Add("team", meta.team.empty() ? jobs::kUnassignedTeam : std::string_view(meta.team))
        .Add("partition", meta.partition);
    if (meta.source != "kubernetes") return;
    l->Add("pod", meta.pod_name).Add("namespace", meta.pod_namespace);
    if (unit == nullptr) return;
    std::string_view container;
    if (auto c = containers_.find(*unit); c != containers_.end())
      if (auto k = c->second.find(key); k != c->second.end()) container = k->second;
    l->Add("container", container);
  };

  sink->Family("gpu_allocation_info", "gauge", "",
               "1 for each GPU and the job holding it (job labels live here, not on device "
               "series).");
  for (const auto& [gpu, keys] : allocations_) {
    const IndexText index(jobs::UnitGpu(gpu));
    for (const std::string& key : keys) {
      LabelList l;
      unit_labels(gpu, index, &l);
      job_labels(key, &l, &gpu);
      sink->Sample("gpu_allocation_info", l.span(), 1);
    }
  }

  sink->Family("gpu_idle_allocated_gpus", "gauge", "",
               "Allocated GPUs idle (utilization at or below jobs.idle_threshold) for at least "
               "jobs.idle_window.");
  double idle_gpus = 0;
  for (const auto& [gpu, since] : idle_.since())
    if (now - since >= config_.jobs.idle_window_s) idle_gpus += share_of(gpu);
  sink->Sample("gpu_idle_allocated_gpus", {}, idle_gpus);
  sink->Family("gpu_idle_streak_seconds", "gauge", "seconds",
               "How long an allocated GPU has been idle; 0 when active.");
  for (const auto& [gpu, keys] : allocations_) {
    auto it = idle_.since().find(gpu);
    const IndexText index(jobs::UnitGpu(gpu));
    LabelList l;
    unit_labels(gpu, index, &l);
    sink->Sample("gpu_idle_streak_seconds", l.span(),
                 it == idle_.since().end() ? 0 : now - it->second);
  }

  sink->Family("gpu_jobs", "gauge", "", "Jobs by state (Slurm's states; process jobs RUNNING).");
  double process_jobs = 0;
  for (const auto& [key, meta] : meta_)
    if (meta.source == "process") process_jobs += 1;
  for (const auto& [state, n] : jobs_by_state_) {
    LabelList l;
    l.Add("state", state);
    sink->Sample("gpu_jobs", l.span(), state == "RUNNING" ? n + process_jobs : n);
  }

  EmitPerJob(sink, now, job_labels);
  EmitHistogram(sink, queue_wait_, "Jobs that started, by partition: start - eligible time.");
  EmitHistogram(sink, submit_wait_, "Jobs that started, by partition: start - submit time.");
  EmitHistogram(sink, start_latency_,
                "Allocation start to the first activity on an allocated GPU.");
  EmitHistogram(sink, run_time_, "Jobs that ended, by partition: end - start.");

  sink->Family("gpu_job_outcomes_total", "counter", "",
               "Jobs that ended on this node, by outcome and cause (docs/jobs.md \"Outcomes\"); "
               "continued from the job records after a restart.");
  for (const auto& [key, n] : outcomes_total_) {
    LabelList l;
    l.Add("outcome", key[0]).Add("cause", key[1]).Add("team", key[2]).Add("partition", key[3]);
    sink->Sample("gpu_job_outcomes_total", l.span(), n);
  }

  sink->Family("gpuwarden_job_record_errors_total", "counter", "",
               "Job records that could not be written.");
  sink->Sample("gpuwarden_job_record_errors_total", {}, double(record_errors_));
  if (health != nullptr) EmitSourceHealth(sink, *health, kubernetes);
}

void JobsService::EmitSourceHealth(TaskFamilySink* sink, const jobs::SlurmHealth& health,
                                   const k8s::KubernetesStatus* kubernetes) const {
  const SourceFamilies& f = source_families_;  // gpuwarden_slurm_*, gpuwarden_kubernetes_*
  sink->Family(f.up, "gauge", "", f.up_help);
  sink->Sample(f.up, {}, health.up ? 1 : 0);
  sink->Family(f.last_success, "gauge", "seconds", f.last_success_help);
  sink->Sample(f.last_success, {}, health.ever_succeeded ? health.last_success_s : 0);
  sink->Family(f.staleness, "gauge", "seconds", f.staleness_help);
  sink->Sample(f.staleness, {}, health.StalenessS(WallNowS()));
  sink->Family(f.polls, "counter", "", f.polls_help);
  sink->Sample(f.polls, {}, double(health.polls_total));
  sink->Family(f.failures, "counter", "", f.failures_help);
  sink->Sample(f.failures, {}, double(health.failures_total));
  if (!pod_source_) return;
  // Device ids of pods that match no GPU or MIG instance here (known without the poller's status).
  sink->Family("gpuwarden_kubernetes_unknown_devices", "gauge", "",
               "Device ids the kubelet gave pods that match no GPU UUID, MIG UUID or GPU index of "
               "this node.");
  sink->Sample("gpuwarden_kubernetes_unknown_devices", {}, double(unknown_devices_.size()));
  if (kubernetes == nullptr) return;
  auto per_resource = [sink](std::string_view name, std::string_view help,
                             const std::map<std::string, double>& devices) {
    sink->Family(name, "gauge", "", help);
    for (const auto& [resource, n] : devices) {
      LabelList l;
      l.Add("resource", resource);
      sink->Sample(name, l.span(), n);
    }
  };
  per_resource("gpuwarden_kubernetes_allocatable_devices",
               "Devices of each GPU resource the kubelet offers on this node (absent when "
               "GetAllocatableResources is not served).",
               kubernetes->allocatable);
  per_resource("gpuwarden_kubernetes_allocated_devices",
               "Devices of each GPU resource held by pods on this node.", kubernetes->allocated);
  sink->Family("gpuwarden_kubernetes_answer_warnings_total", "counter", "",
               "Oddities in the kubelet's answers (duplicate pods, empty ids, too many pods).");
  sink->Sample("gpuwarden_kubernetes_answer_warnings_total", {},
               double(kubernetes->answer_warnings_total));
  if (!kubernetes->pod_list_configured) return;
  sink->Family("gpuwarden_kubernetes_pod_list_up", "gauge", "",
               "1 if the last jobs.kubernetes.pod_list_command succeeded.");
  sink->Sample("gpuwarden_kubernetes_pod_list_up", {}, kubernetes->pod_list_up ? 1 : 0);
}

template <typename JobLabels>
void JobsService::EmitPerJob(TaskFamilySink* sink, double now, const JobLabels& job_labels) const {
  for (int f = 0; f < kPerJobCount; ++f) {
    const PerJobFamily& family = kPerJob[f];
    sink->Family(family.name, family.type, family.unit, family.help);
    for (const jobs::JobGpuStats& s : running_) {
      LabelList job;
      job_labels(s.job_id, &job, nullptr);
      auto sample = [&](double v) { sink->Sample(family.name, job.span(), v); };
      auto sample_with = [&](std::string_view name, std::string_view value, double v) {
        LabelList l;
        l.Add(job.span()).Add(name, value);
        sink->Sample(family.name, l.span(), v);
      };
      switch (f) {
        case kGpus:
          sample(jobs::GpuEquivalents(s));
          break;
        case kGpuSeconds:
          sample(s.gpu_seconds);
          break;
        case kEnergy:
          sample(s.energy_j);
          break;
        case kUtilization:
          sample_with("stat", "avg", s.util_avg);
          sample_with("stat", "max", s.util_max);
          break;
        case kSmActive:
          if (s.sm_active_avg) sample_with("stat", "avg", *s.sm_active_avg);
          if (s.sm_active_max) sample_with("stat", "max", *s.sm_active_max);
          break;
        case kTensorActive:
          if (s.tensor_active_avg) sample_with("stat", "avg", *s.tensor_active_avg);
          if (s.tensor_active_max) sample_with("stat", "max", *s.tensor_active_max);
          break;
        case kMemoryPeak:
          sample(double(s.memory_peak_bytes));
          break;
        case kMemoryRatio: {
          double ratio = 0;
          for (unsigned g : s.gpus)
            if (auto it = memory_used_ratio_.find(g); it != memory_used_ratio_.end())
              ratio = std::max(ratio, it->second);
          sample(ratio);
          break;
        }
        case kThrottle: {
          // Every reason from the job's start (0 until seen), so that rate() sees the first one;
          // the union of the known reasons and the job's, in name order.
          const auto& known = SortedReasonLabels();
          auto k = known.begin();
          auto j = s.throttle_s.begin();
          while (k != known.end() || j != s.throttle_s.end()) {
            if (j == s.throttle_s.end() || (k != known.end() && *k < j->first)) {
              sample_with("reason", *k++, 0);
            } else {
              if (k != known.end() && *k == j->first) ++k;
              sample_with("reason", j->first, j->second);
              ++j;
            }
          }
          break;
        }
        case kEcc:
          sample_with("type", "corrected", double(s.ecc_corrected));
          sample_with("type", "uncorrected", double(s.ecc_uncorrected));
          break;
        case kXid:
          sample(double(s.xid_count));
          break;
        case kIdleGpuSeconds:
          sample(s.idle_gpu_seconds);
          break;
        case kIdleStreak: {
          double streak = s.gpus.empty() ? 0 : 1e300;
          for (unsigned g : s.gpus) {
            auto it = idle_.since().find(g);
            streak = std::min(streak, it == idle_.since().end() ? 0 : now - it->second);
          }
          sample(streak);
          break;
        }
        default:
          break;
      }
    }
  }
}

void JobsService::EmitHistogram(TaskFamilySink* sink, const Histogram& h,
                                std::string_view help) const {
  sink->Family(h.name, "histogram", "seconds", help);
  for (const auto& [partition, counts] : h.counts) {
    std::uint64_t cumulative = 0;
    for (size_t i = 0; i <= h.bounds.size(); ++i) {
      cumulative += counts[i];
      LabelList l;
      l.Add("partition", partition).Add("le", h.le[i]);
      sink->Sample(h.bucket_name, l.span(), double(cumulative));
    }
    LabelList l;
    l.Add("partition", partition);
    sink->Sample(h.sum_name, l.span(), h.sums.at(partition));
    sink->Sample(h.count_name, l.span(), double(cumulative));
  }
}

void JobsService::Histogram::Init(std::string family, std::vector<double> bucket_bounds) {
  name = std::move(family);
  bucket_name = name + "_bucket";
  sum_name = name + "_sum";
  count_name = name + "_count";
  bounds = std::move(bucket_bounds);
  le.clear();
  for (double b : bounds) {
    std::string text;
    collect::AppendValue(&text, b);
    // OpenMetrics wants canonical floats in le ("1.0"); text 0.0.4 accepts either.
    if (text.find_first_of(".e") == std::string::npos) text += ".0";
    le.push_back(std::move(text));
  }
  le.push_back("+Inf");
}

void JobsService::Histogram::Observe(const std::string& partition, double v) {
  auto& c = counts[partition];
  if (c.empty()) c.assign(bounds.size() + 1, 0);
  size_t i = 0;
  while (i < bounds.size() && v > bounds[i]) ++i;
  ++c[i];
  sums[partition] += v;
}

}  // namespace gw::serve
