// serve/governance_service.cpp — the governance service: wires the snapshot adapter, the domain's
// trackers, the decisions log, the worker, the checkpoint, the families and the API.
#include "serve/governance_service.h"

#include <algorithm>

#include "serve/governance_api.h"

namespace gw::serve {

GovernanceService::GovernanceService(const config::Config& config, const JobsService* jobs,
                                     tsdb::Appender* appender, Logger* logger, const Clock* clock)
    : config_(config),
      log_(logger),
      clock_(clock),
      slurm_(config.jobs.scheduler == "slurm"),
      appender_(appender),
      state_(config),
      decisions_(DecisionsLogPath(config)),
      checkpoint_(UsageCheckpointPath(config), slurm_, logger),
      cycles_(jobs, slurm_, config.governance.settings),
      worker_(config.governance.command_timeout_s, config.jobs.poll_interval_s,
              slurm_ && !config.governance.capacity_command.empty()
                  ? std::function<void()>([this] { PollCapacity(); })
                  : std::function<void()>(),
              [this](const governance::ReclaimCommand& c, const std::string& error) {
                CommandDone(c, error);
              }) {
  checkpoint_.Load(&state_);
  for (const governance::ReclaimPolicy& p : state_.reclaim.policies())
    log_->Info(std::string("governance: reclaim policy ") + p.Describe() + ": idle " +
               governance::FormatSeconds(p.idle_for_s) + " (" + MemoryFilterName(p.memory) +
               " memory) -> notice, grace " + governance::FormatSeconds(p.grace_s) + " -> " +
               ReclaimActionName(p.action));
}

GovernanceService::~GovernanceService() {
  Stop();
}

void GovernanceService::Start() {
  worker_.Start();
}

void GovernanceService::Stop() {
  worker_.Stop();
  checkpoint_.Write(&mu_, &state_);
}

void GovernanceService::CommandDone(const governance::ReclaimCommand& command,
                                    const std::string& error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const double now = state_.last_now_s > 0 ? state_.last_now_s : clock_->NowSeconds();
    governance::Decision d = state_.reclaim.Completed(command, error, now);
    if (!error.empty()) state_.failures[command.is_notice ? "notify" : d.action] += 1;
    Record(d);
  }
  decisions_.Flush(log_);
}

void GovernanceService::PollCapacity() {
  const double timeout = std::min(10.0, std::max(1.0, config_.jobs.poll_interval_s));
  auto text = jobs::RunCommandCapture(config_.governance.capacity_command, {}, timeout, 4 << 20);
  std::lock_guard<std::mutex> lock(mu_);
  if (text.ok()) {
    state_.pools.SetCapacity(governance::ParsePartitionCapacity(*text));
    state_.capacity_known = state_.capacity_up = true;
    state_.capacity_error.clear();
    return;
  }
  state_.capacity_up = false;
  if (state_.capacity_error != text.error().message) {
    state_.capacity_error = text.error().message;
    log_->Error("governance: reading the partitions' capacity: " + state_.capacity_error +
                " (set governance.pools.capacity to configure it)");
  }
}

void GovernanceService::Record(const governance::Decision& d) {
  state_.Count(d);
  if ((d.stage == "action" || d.stage == "done") &&
      (d.action == "cancel" || d.action == "requeue" || d.action == "command")) {
    auto [it, inserted] = reclaimed_.try_emplace(d.job_id);
    // A decision of an earlier run (a requeued job acted on again) gives way to the new one.
    if (inserted || d.stage == "action") it->second = {d.time_s, d.action, d.policy, d.detail};
    if (inserted) reclaimed_order_.push_back(d.job_id);
    while (reclaimed_order_.size() > 10000) {
      reclaimed_.erase(reclaimed_order_.front());
      reclaimed_order_.pop_front();
    }
  }
  decisions_.Add(d);
  const std::string message = "governance: reclaim " + d.stage + ": " + d.detail + " [policy " +
                              d.policy + ", idle " + governance::FormatSeconds(d.idle_s) + "]";
  if (d.stage == "failed")
    log_->Error(message);
  else
    log_->Info(message);
}

void GovernanceService::OnSnapshot(const collect::Snapshot& snapshot, int64_t t_ms) {
  const governance::Cycle cycle = cycles_.Build(snapshot);
  std::vector<governance::ReclaimCommand> commands;
  bool checkpoint_due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    state_.last_now_s = cycle.now_s;
    state_.idle.Observe(cycle);
    std::vector<governance::Decision> decisions;
    commands = state_.reclaim.Evaluate(cycle, state_.idle, &decisions);
    for (const governance::Decision& d : decisions) Record(d);
    state_.usage.Observe(cycle);
    if (slurm_) state_.pools.Observe(cycles_.slurm_jobs(), cycle.now_s, cycles_.slurm_version());
    GovernanceFigureInputs inputs;
    inputs.capacity_polled = slurm_ && !config_.governance.capacity_command.empty();
    inputs.log_errors = decisions_.errors();
    figures_ = BuildGovernanceFigures(state_, cycle, inputs);
    checkpoint_due = GovernanceCheckpoint::Due(state_, cycle.now_s);
  }
  decisions_.Flush(log_);
  if (checkpoint_due) checkpoint_.Write(&mu_, &state_);
  worker_.Enqueue(std::move(commands));
  AppendToStore(t_ms);
}

void GovernanceService::AppendToStore(int64_t t_ms) {
  if (!appender_) return;
  if (!series_) series_ = std::make_unique<TaskSeriesRecorder>(appender_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    series_->BeginCycle(t_ms);
    for (const GovernanceFigure& f : figures_) {
      labels_.clear();
      for (const tsdb::Label& l : f.labels)
        if (l.name != "__name__") labels_.push_back({l.name, l.value});
      series_->Sample(f.family, labels_, f.value);
    }
    series_->EndCycle();  // series no longer present (a job ended) get a stale marker
  }
  (void)series_->Commit();  // the WAL write, outside the lock /metrics waits on
  if (series_->stats().errors > store_errors_seen_) {
    store_errors_seen_ = series_->stats().errors;
    log_->Warn("governance: some figures could not be appended to the store");
  }
}

void GovernanceService::RenderMetrics(collect::Format format, std::string* out) {
  std::lock_guard<std::mutex> lock(mu_);
  expo::Writer writer(format, out);
  WriteGovernanceFamilies(figures_, &writer);
}

std::string GovernanceService::TeamsJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  return serve::TeamsJson(state_);
}

std::string GovernanceService::ReclaimJson(const ReclaimQuery& query) const {
  std::lock_guard<std::mutex> lock(mu_);
  return serve::ReclaimJson(state_, decisions_, query);
}

std::optional<jobs::JobCostRecord> GovernanceService::FinalJobCost(
    const std::string& job_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_.usage.JobCostRecordOf(job_id);
}

std::optional<jobs::ReclaimNote> GovernanceService::ReclaimOf(const std::string& job_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = reclaimed_.find(job_id);
  if (it == reclaimed_.end()) return std::nullopt;
  return it->second;
}

void GovernanceService::RegisterRoutes(http::Server* server) {
  RegisterGovernanceRoutes(
      server, [this] { return TeamsJson(); },
      [this](const ReclaimQuery& q) { return ReclaimJson(q); });
}

}  // namespace gw::serve
