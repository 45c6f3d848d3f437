#include "serve/training_service.h"

#include <algorithm>
#include <cmath>

#include "jobs/gpu_unit.h"
#include "serve/jobs_service.h"

namespace gw::serve {

TrainingService::TrainingService(const config::Config& config, const scrape::Scraper* scraper,
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
  }
}

void TrainingService::OnSnapshot(const collect::Snapshot& snapshot, int64_t t_ms) {
  if (bound_.empty()) return;
  using collect::Slot;
  // Who runs (the jobs service's lock, not under ours).
  const std::vector<JobsService::HeldGpus> held = jobs_->AllocatedJobs();
  {
    std::lock_guard<std::mutex> lock(mu_);
    now_s_ = snapshot.taken_unix_seconds;
    for (Bound& b : bound_) {
      double total = 0;
      int64_t scraped_ms = 0;
      if (scraper_->Outputs(b.target, &total, &scraped_ms)) {
        b.history.Observe(scraped_ms, total);
        b.counted = true;
        b.total = total;
      }
      b.live = false;
      const auto job = std::find_if(held.begin(), held.end(),
                                    [&b](const auto& h) { return h.job_id == b.job_id; });
      if (job == held.end() || !b.history.Rate(t_ms, &b.rate)) continue;
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
  }
  if (!appender_) return;
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
  if (bound_.empty()) return;
  ExpositionSink sink(format, out);
  std::lock_guard<std::mutex> lock(mu_);
  Walk(&sink);
}

std::optional<jobs::JobThroughputRecord> TrainingService::Throughput(
    const jobs::JobRecord& record) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto b = std::find_if(bound_.begin(), bound_.end(),
                              [&record](const Bound& x) { return x.job_id == record.job_id; });
  if (b == bound_.end() || !b->counted) return std::nullopt;
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
  TrainingPart(const config::Config& config, const scrape::Scraper* scraper, JobsService* jobs,
               tsdb::Appender* appender, Logger* logger)
      : training_(config, scraper, jobs, appender, logger) {
    if (!training_.empty())
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

std::unique_ptr<Service> MakeTrainingService(const config::Config& config,
                                             const scrape::Scraper* scraper, JobsService* jobs,
                                             tsdb::Appender* appender, Logger* logger) {
  return std::make_unique<TrainingPart>(config, scraper, jobs, appender, logger);
}

}  // namespace gw::serve
