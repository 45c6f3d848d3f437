// The Kubernetes job source (k8s/poller.h): the kubelet's pod-resources API and an optional pod
// list, polled on one thread into a PodTable.
#include "k8s/poller.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <utility>

#include "base/utc_time.h"
#include "jobs/slurm.h"  // RunCommandCapture

namespace gw::k8s {

namespace {

constexpr std::size_t kMaxRememberedWarnings = 100;
constexpr std::size_t kMaxPodListBytes = 64u << 20;

std::string Substitute(std::string arg, const std::string& node) {
  for (std::size_t pos = arg.find("{node}"); pos != std::string::npos;
       pos = arg.find("{node}", pos + node.size()))
    arg.replace(pos, 6, node);
  return arg;
}

std::string Rfc3339(double epoch_s) {
  const UtcTime u = ToUtc(static_cast<std::int64_t>(epoch_s * 1000));
  char buf[80];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02dZ", u.tm.tm_year + 1900,
                u.tm.tm_mon + 1, u.tm.tm_mday, u.tm.tm_hour, u.tm.tm_min, u.tm.tm_sec);
  return buf;
}

std::string Seconds(double s) {
  return FormatDuration(std::max(0.0, std::round(s)));
}

}  // namespace

KubernetesPoller::KubernetesPoller(KubernetesPollerOptions options,
                                   std::unique_ptr<PodResourcesApi> api, Logger* logger,
                                   const Clock* clock)
    : options_(std::move(options)),
      api_(std::move(api)),
      log_(logger),
      clock_(clock),
      table_(options_.table),
      index_(std::make_shared<const PodIndex>()) {
  status_.endpoint = api_ ? api_->Endpoint() : "";
  status_.pod_list_configured = !options_.pod_list_command.empty();
}

KubernetesPoller::~KubernetesPoller() {
  Stop();
}

void KubernetesPoller::Start() {
  thread_.Start(options_.interval_s, [this] { PollOnce(); });
}

void KubernetesPoller::Stop() {
  thread_.Stop();
}

void KubernetesPoller::PollOnce() {
  // Every call that may block (the kubelet, the pod-list command) runs without the lock: readers
  // keep the last known state meanwhile. Only this thread touches api_ and the flags read here.
  bool skip_allocatable;
  {
    std::lock_guard<std::mutex> lock(mu_);
    skip_allocatable = allocatable_unimplemented_;
  }
  // List and GetAllocatableResources share one deadline: a slow kubelet costs a poll at most
  // timeout_s for both (the pod-list command has its own timeout_s).
  const auto started = std::chrono::steady_clock::now();
  Expected<std::vector<PodResources>> pods =
      api_ ? api_->List(options_.timeout_s)
           : Expected<std::vector<PodResources>>(Error{"no pod-resources API"});
  std::optional<Expected<Allocatable>> allocatable;
  const double left =
      options_.timeout_s -
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (pods.ok() && !skip_allocatable && left > 0) allocatable = api_->GetAllocatable(left);
  std::optional<Expected<std::vector<PodInfo>>> pod_list;
  if (pods.ok() && !options_.pod_list_command.empty()) {
    std::vector<std::string> argv;
    argv.reserve(options_.pod_list_command.size());
    for (const std::string& arg : options_.pod_list_command)
      argv.push_back(Substitute(arg, options_.table.node_name));
    Expected<std::string> out =
        jobs::RunCommandCapture(argv, options_.pod_list_env, options_.timeout_s, kMaxPodListBytes);
    pod_list = out.ok() ? ParsePodListJson(*out) : Expected<std::vector<PodInfo>>(out.error());
  }
  const double now = clock_->NowSeconds();

  std::vector<std::pair<LogLevel, std::string>> lines;  // logged once the lock is released
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!pods.ok()) {
      const jobs::SlurmHealth before = table_.health();  // a copy: Failed() moves it
      const bool first_failure = before.up || before.polls_total == 0;
      if (first_failure) down_since_s_ = now;
      table_.Failed(pods.error().message, now);
      if (!down_logged_) {
        down_logged_ = true;
        std::string kept = before.ever_succeeded
                               ? "jobs as of " + Rfc3339(before.last_success_s) + " are kept"
                               : "no jobs known yet";
        lines.emplace_back(LogLevel::kWarn,
                           "kubernetes: pod-resources API unavailable: " + pods.error().message +
                               "; the agent keeps collecting; " + kept + "; retrying every " +
                               Seconds(options_.interval_s));
      }
    } else {
      if (down_logged_) {
        down_logged_ = false;
        lines.emplace_back(LogLevel::kInfo, "kubernetes: pod-resources API at " + status_.endpoint +
                                                " answers again after " +
                                                Seconds(now - down_since_s_) + " down");
      }
      if (allocatable) {
        if (allocatable->ok()) {
          allocatable_failure_logged_ = false;
          status_.allocatable_known = true;
          status_.allocatable.clear();
          status_.allocatable_ids.clear();
          for (const DeviceGroup& group : (*allocatable)->devices) {
            if (!ResourceMatches(options_.table.resources, group.resource_name)) continue;
            double& n = status_.allocatable[group.resource_name];
            for (const std::string& id : group.device_ids) {
              if (id.empty() || !status_.allocatable_ids.insert(id).second) continue;
              n += 1;
            }
          }
        } else if (const std::string& m = allocatable->error().message;
                   m.find("UNIMPLEMENTED") != std::string::npos ||
                   m.find("GetAllocatableResources disabled") != std::string::npos) {
          // Too old a kubelet, or 1.21-1.22 with its feature gate off (a plain error there:
          // docs/kubernetes.md): asking again would only repeat the answer.
          allocatable_unimplemented_ = true;
          lines.emplace_back(LogLevel::kInfo,
                             "kubernetes: this kubelet does not offer GetAllocatableResources (" +
                                 allocatable->error().message +
                                 "); allocatable devices stay unknown");
        } else if (!allocatable_failure_logged_) {
          // Logged once per run of failures: List works, so the poll goes on without it.
          allocatable_failure_logged_ = true;
          lines.emplace_back(LogLevel::kWarn, "kubernetes: GetAllocatableResources failed: " +
                                                  allocatable->error().message +
                                                  "; allocatable devices keep their last value");
        }
      }
      const std::vector<PodInfo>* infos = nullptr;
      if (pod_list) {
        if (pod_list->ok()) {
          infos = &**pod_list;
          if (!status_.pod_list_up && pod_list_down_logged_)
            lines.emplace_back(LogLevel::kInfo, "kubernetes: the pod list answers again");
          pod_list_down_logged_ = false;
          status_.pod_list_up = true;
        } else {
          ++status_.pod_list_failures_total;
          status_.pod_list_up = false;
          if (!pod_list_down_logged_) {
            pod_list_down_logged_ = true;
            lines.emplace_back(LogLevel::kWarn,
                               "kubernetes: pod list command failed: " + pod_list->error().message +
                                   "; pods keep their last known users and UIDs, final states "
                                   "unknown meanwhile");
          }
        }
      }
      std::vector<std::string> warnings;
      const std::uint64_t changes = table_.changes();
      std::vector<jobs::JobEvent> events = table_.Apply(*pods, infos, now, &warnings);
      status_.answer_warnings_total += warnings.size();
      for (std::string& w : warnings) {
        if (warned_.count(w) || warned_.size() >= kMaxRememberedWarnings) continue;
        warned_.insert(w);
        lines.emplace_back(LogLevel::kWarn, "kubernetes: " + w);
      }
      // Only a changed table moves the version: readers (the serve layer's join) skip the rest.
      const bool changed = table_.changes() != changes || version_ == 0;
      if (changed) ++version_;
      for (jobs::JobEvent& e : events) events_.push_back(std::move(e));
      if (events_.size() > options_.max_queued_events)
        events_.erase(events_.begin(),
                      events_.begin() +
                          static_cast<std::ptrdiff_t>(events_.size() - options_.max_queued_events));
      // The index and the allocated counts follow the table: rebuilt only when it changed.
      if (changed) {
        auto index = std::make_shared<PodIndex>();
        status_.allocated.clear();
        for (const auto& [id, job] : table_.jobs()) {
          PodRef ref{job.pod_namespace, job.pod_name};
          for (const jobs::SlurmJob::Device& d : job.devices) {
            // Keyed by the GPU: replicas of a time-sliced GPU are one device for attribution.
            std::vector<PodRef>& holders = index->by_device[std::string(DeviceBaseId(d.id))];
            // Only this job pushes while its devices are walked: a repeat is the last entry.
            if (holders.empty() || !(holders.back() == ref)) holders.push_back(ref);
            status_.allocated[d.resource] += 1;
          }
          if (!job.pod_uid.empty()) index->by_uid.emplace(job.pod_uid, ref);
        }
        index_ = std::move(index);
      }
    }
  }
  if (log_)
    for (const auto& [level, line] : lines) log_->Log(level, line);
}

std::map<std::string, jobs::SlurmJob> KubernetesPoller::Jobs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return table_.jobs();
}

std::uint64_t KubernetesPoller::JobsVersion() const {
  std::lock_guard<std::mutex> lock(mu_);
  return version_;
}

jobs::SlurmHealth KubernetesPoller::Health() const {
  std::lock_guard<std::mutex> lock(mu_);
  return table_.health();
}

std::vector<jobs::SlurmJob> KubernetesPoller::PendingJobs(jobs::SlurmHealth* health) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (health) *health = table_.health();
  return {};
}

std::vector<jobs::JobEvent> KubernetesPoller::TakeEvents() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<jobs::JobEvent> out;
  out.swap(events_);
  return out;
}

KubernetesStatus KubernetesPoller::Status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

std::shared_ptr<const PodIndex> KubernetesPoller::Index() const {
  std::lock_guard<std::mutex> lock(mu_);
  return index_;
}

}  // namespace gw::k8s
