#include "serve/training_service.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "jobs/gpu_unit.h"
#include "serve/jobs_service.h"

namespace gw::serve {

namespace {

// A job's own endpoint (GPUWARDEN_METRICS_PORT): scraped this often, counting whichever of these
// counters its page has (docs/jobs.md, "Training throughput").
constexpr double kFoundIntervalS = 15;
constexpr const char* kFoundCounters = "training_(samples|tokens|steps)_total";
constexpr std::array<const char*, 3> kFoundUnits = {"samples", "tokens", "steps"};
// A found target's figures are kept this long after its job ended (for the job's record).
constexpr double kFoundKeepS = 600;

}  // namespace

TrainingService::TrainingService(const config::Config& config, scrape::Scraper* scraper,
                                 const JobsService* jobs, tsdb::Appender* appender, Logger* logger)
    : scraper_(scraper),
      jobs_(jobs),
      appender_(appender),
      log_(logger),
      prices_(config.governance.settings.prices) {
  priced_ = prices_.default_gpu_hour > 0 || prices_.energy_per_kwh > 0 ||
            std::any_of(prices_.gpu_hour_by_model.begin(), prices_.gpu_hour_by_model.end(),
                        [](const auto& p) { return p.second > 0; });
  for (std::size_t i = 0; i < config.scrape.targets.size(); ++i) {
    const scrape::TargetConfig& t = config.scrape.targets[i];
    if (t.job_id.empty() || t.outputs.empty()) continue;
    Bound b;
    b.target = i;
    b.job_id = t.job_id;
    b.unit = t.output_unit;
    b.metric = t.outputs;
    bound_.push_back(std::move(b));
    configured_jobs_.insert(t.job_id);
  }
}

void TrainingService::Discover(const std::vector<JobsService::HeldGpus>& held) {
  for (const JobsService::HeldGpus& h : held) {
    if (h.metrics_port <= 0 || configured_jobs_.count(h.job_id)) continue;
    const auto b = std::find_if(bound_.begin(), bound_.end(), [&h](const Bound& x) {
      return x.found && !x.released && x.job_id == h.job_id;
    });
    if (b != bound_.end()) {
      if (b->port == h.metrics_port) continue;
      scraper_->ReleaseJobTarget(b->target);  // the job moved its endpoint: a new target
      b->released = true;
      b->released_s = now_s_;
    }
    scrape::TargetConfig t;
    t.name = "job:" + h.job_id;
    t.url = "http://127.0.0.1:" + std::to_string(h.metrics_port) + "/metrics";
    t.interval_s = kFoundIntervalS;
    t.job_id = h.job_id;
    t.outputs = std::string("{__name__=~\"") + kFoundCounters + "\"}";
    auto matcher = tsdb::Matcher::Make(tsdb::MatchType::kRegexMatch, "__name__", kFoundCounters);
    if (!matcher.ok()) return;  // a constant pattern: cannot happen
    t.output_matchers = {*matcher};
    const std::size_t index = scraper_->ClaimJobTarget(std::move(t));
    if (index == scrape::Scraper::kNoSlot) {
      if (unplaced_.insert(h.job_id).second)
        log_->Warn("training: job " + h.job_id +
                   " declares GPUWARDEN_METRICS_PORT=" + std::to_string(h.metrics_port) +
                   " but every slot for job endpoints is taken; not scraped");
      continue;
    }
    unplaced_.erase(h.job_id);
    log_->Info("training: job " + h.job_id + " declares its counter on 127.0.0.1:" +
               std::to_string(h.metrics_port) + " (GPUWARDEN_METRICS_PORT): scraped as target '" +
               "job:" + h.job_id + "' while it runs");
    Bound found;
    found.target = index;
    found.job_id = h.job_id;
    found.found = true;
    found.port = h.metrics_port;
    bound_.push_back(std::move(found));
  }
}

void TrainingService::LearnUnit(Bound* b) {
  // The counter the page declares (# TYPE training_<unit>_total counter) names the unit.
  const std::vector<std::string> descriptors = scraper_->Descriptors();
  if (b->target >= descriptors.size()) return;
  for (const char* unit : kFoundUnits) {
    const std::string metric = std::string("training_") + unit + "_total";
    if (descriptors[b->target].find("# TYPE " + metric + " counter") == std::string::npos) continue;
    b->unit = unit;
    b->metric = metric;
    return;
  }
  b->unit = "units";  // the page does not say which: counted all the same
  b->metric = kFoundCounters;
}

void TrainingService::OnSnapshot(const collect::Snapshot& snapshot, int64_t t_ms) {
  using collect::Slot;
  // Who runs (the jobs service's lock, not under ours).
  const std::vector<JobsService::HeldGpus> held = jobs_->AllocatedJobs();
  bool any = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    now_s_ = snapshot.taken_unix_seconds;
    Discover(held);
    // Found targets of jobs that ended long ago (their records are written).
    std::erase_if(bound_, [this](const Bound& b) {
      return b.released && now_s_ - b.released_s > kFoundKeepS;
    });
    for (Bound& b : bound_) {
      b.live = false;
      if (b.released) continue;  // its slot may be another job's now
      double total = 0;
      int64_t scraped_ms = 0;
      if (scraper_->Outputs(b.target, &total, &scraped_ms)) {
        b.history.Observe(scraped_ms, total);
        b.counted = true;
        b.total = total;
        if (b.found && b.unit.empty()) LearnUnit(&b);
      }
      const auto job = std::find_if(held.begin(), held.end(),
                                    [&b](const auto& h) { return h.job_id == b.job_id; });
      // The target lives with its job: scraped while it runs here, not "down" once it ended.
      if (!b.found) {
        scraper_->SetJobRunning(b.target, job != held.end());
      } else if (job == held.end()) {
        scraper_->ReleaseJobTarget(b.target);
        b.released = true;
        b.released_s = now_s_;
      }
      if (job == held.end() || b.unit.empty() || !b.history.Rate(t_ms, &b.rate)) continue;
      b.live = true;
      b.team = job->team;
      b.gpus = 0;
      b.power_w = 0;
      b.cost_per_hour = 0;
      b.has_power = true;
      for (unsigned unit : job->gpus) {
        const unsigned index = jobs::UnitGpu(unit);
        const auto gpu = std::find_if(
            snapshot.gpus.begin(), snapshot.gpus.end(),
            [index](const collect::GpuSnapshot& g) { return g.identity.index == index; });
        double share = 1;
        if (jobs::IsMigUnit(unit) && gpu != snapshot.gpus.end()) {
          for (const collect::MigInstanceSnapshot& m : gpu->mig)
            if (m.gpu_instance_id == jobs::UnitMigInstance(unit) &&
                !collect::IsAbsent(m.slice_ratio))
              share = m.slice_ratio;
        }
        b.gpus += share;
        const double power =
            gpu == snapshot.gpus.end() ? collect::kAbsent : gpu->value(Slot::kPower);
        if (collect::IsAbsent(power)) {
          b.has_power = false;
        } else {
          b.power_w += power * share;
        }
        if (gpu != snapshot.gpus.end())
          b.cost_per_hour += prices_.GpuHourPrice(gpu->identity.name) * share;
      }
      b.has_cost = priced_ && b.has_power;
      if (b.has_cost) b.cost_per_hour += b.power_w / 1000 * prices_.energy_per_kwh;
      b.has_cost = b.has_cost && b.cost_per_hour > 0;
      b.has_power = b.has_power && b.power_w > 0;
    }
    any = !bound_.empty();
  }
  // Nothing bound yet: nothing to store (once something was, every cycle: its series end too).
  if (!appender_ || (!any && !series_)) return;
  if (!series_) series_ = std::make_unique<TaskSeriesRecorder>(appender_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    series_->BeginCycle(t_ms);
    Walk(series_.get());
    series_->EndCycle();
  }
  if (Status s = series_->Commit(); !s.ok())
    log_->Warn("training: the throughput series could not be appended to the store: " +
               s.message());
}

void TrainingService::Walk(TaskFamilySink* sink) const {
  TaskLabel labels[4] = {{"job_id", ""}, {"team", ""}, {"unit", ""}, {"currency", ""}};
  auto each = [&](auto&& emit) {
    for (const Bound& b : bound_) {
      if (!b.live) continue;
      labels[0].value = b.job_id;
      labels[1].value = b.team;
      labels[2].value = b.unit;
      emit(b);
    }
  };
  sink->Family("gpu_job_training_throughput", "gauge", "",
               "Units per second of the job's own progress counter over the last minute "
               "(scrape.targets[].job_id).");
  each([&](const Bound& b) {
    sink->Sample("gpu_job_training_throughput", std::span(labels, 3), b.rate);
  });
  sink->Family("gpu_job_training_throughput_per_gpu", "gauge", "",
               "The job's throughput per GPU it holds (MIG instances by their share).");
  each([&](const Bound& b) {
    if (b.gpus > 0)
      sink->Sample("gpu_job_training_throughput_per_gpu", std::span(labels, 3), b.rate / b.gpus);
  });
  sink->Family("gpu_job_training_throughput_per_watt", "gauge", "",
               "The job's throughput per watt its GPUs draw (units per joule).");
  each([&](const Bound& b) {
    if (b.has_power)
      sink->Sample("gpu_job_training_throughput_per_watt", std::span(labels, 3),
                   b.rate / b.power_w);
  });
  sink->Family("gpu_job_training_units_per_cost", "gauge", "",
               "Units the job makes per unit of money at its current cost rate "
               "(governance.prices: GPU-hours + energy).");
  labels[3].value = prices_.currency;
  each([&](const Bound& b) {
    if (b.has_cost)
      sink->Sample("gpu_job_training_units_per_cost", std::span(labels, 4),
                   b.rate * 3600 / b.cost_per_hour);
  });
  sink->Family("gpu_job_training_units_total", "counter", "",
               "Units the job's progress counter has counted (from 0, reset-aware).");
  each([&](const Bound& b) {
    sink->Sample("gpu_job_training_units_total", std::span(labels, 3), b.total);
  });
}

void TrainingService::RenderMetrics(collect::Format format, std::string* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (bound_.empty()) return;
  ExpositionSink sink(format, out);
  Walk(&sink);
}

std::optional<jobs::JobThroughputRecord> TrainingService::Throughput(
    const jobs::JobRecord& record) const {
  std::lock_guard<std::mutex> lock(mu_);
  // The newest target of the job (one found at run time may have been replaced by another).
  const auto b = std::find_if(bound_.rbegin(), bound_.rend(),
                              [&record](const Bound& x) { return x.job_id == record.job_id; });
  if (b == bound_.rend() || !b->counted || b->unit.empty()) return std::nullopt;
  jobs::JobThroughputRecord t;
  t.unit = b->unit;
  t.metric = b->metric;
  t.total = b->total;
  const double end_s = record.end_time > 0 ? static_cast<double>(record.end_time) : now_s_;
  const double run_s = end_s - static_cast<double>(record.start_time);
  if (record.start_time > 0 && run_s > 0) t.avg_per_s = t.total / run_s;
  if (record.gpu && record.gpu->gpu_seconds > 0)
    t.per_gpu_hour = t.total / (record.gpu->gpu_seconds / 3600);
  if (record.gpu && record.gpu->energy_j > 0) t.per_kwh = t.total / (record.gpu->energy_j / 3.6e6);
  if (record.cost && record.cost->Total() > 0) t.per_cost = t.total / record.cost->Total();
  return t;
}

namespace {

class TrainingPart : public Service {
 public:
  TrainingPart(const config::Config& config, scrape::Scraper* scraper, JobsService* jobs,
               tsdb::Appender* appender, Logger* logger)
      : training_(config, scraper, jobs, appender, logger) {
    // Always: a job may declare its endpoint at run time (GPUWARDEN_METRICS_PORT).
    jobs->SetJobThroughputLookup(
        [this](const jobs::JobRecord& r) { return training_.Throughput(r); });
  }
  const char* name() const override { return "training"; }
  void OnSnapshot(const collect::Snapshot& snapshot, int64_t t_ms) override {
    training_.OnSnapshot(snapshot, t_ms);
  }
  void RenderMetrics(collect::Format format, std::string* out) override {
    training_.RenderMetrics(format, out);
  }

 private:
  TrainingService training_;
};

}  // namespace

std::unique_ptr<Service> MakeTrainingService(const config::Config& config, scrape::Scraper* scraper,
                                             JobsService* jobs, tsdb::Appender* appender,
                                             Logger* logger) {
  return std::make_unique<TrainingPart>(config, scraper, jobs, appender, logger);
}

}  // namespace gw::serve
