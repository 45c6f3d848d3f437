// The collector (collector.h): the worker thread that reads every GPU on the fast, slow and
// peak schedules and publishes snapshots, and the watchdog that abandons a worker stuck in an
// NVML call and starts a new one.
//
// Why one file of ~700 lines: nearly all of it is Collector::Impl, whose worker loop and
// watchdog share one state (the in-flight call, the worker generation, the schedules) under one
// mutex; the hand-over between an abandoned worker and its successor is only checkable with both
// sides in view. Reading one GPU (gpu_reader.h), the metric table (catalogue.h) and recording
// snapshots (recorder.h) are separate files.
#include "collect/collector.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "base/stopwatch.h"
#include "collect/gpu_reader.h"
#include "collect/process_details.h"

namespace gw::collect {

namespace {

using SteadyClock = std::chrono::steady_clock;

// Thrown inside an abandoned worker when its hung call finally returns, to unwind and exit.
struct Abandoned {};

thread_local uint64_t tls_worker_generation = 0;

double SteadySeconds() {
  return std::chrono::duration<double>(SteadyClock::now().time_since_epoch()).count();
}

// Moves a schedule forward by whole intervals, skipping the ones already missed.
double NextDue(double due, double interval, double now) {
  due += interval;
  if (due <= now) due = now + interval;
  return due;
}

}  // namespace

std::string_view CallName(Call call) {
  static constexpr std::string_view kNames[] = {
#define GW_CALL_NAME(id, name) name,
      GW_NVML_CALLS(GW_CALL_NAME)
#undef GW_CALL_NAME
  };
  return kNames[static_cast<size_t>(call)];
}

struct Collector::Impl : CallGuard, std::enable_shared_from_this<Collector::Impl> {
  nvml::Library* library;
  CollectorOptions options;
  Logger* log;

  // ---- owned by the active worker --------------------------------------------------------
  std::vector<GpuReader> gpus;
  CollectorStats stats;
  std::unique_ptr<ProcessEnricher> enricher;  // null with process_details off
  // Time inside NVML per call, in base/stopwatch.h ticks; turned into stats' seconds on publish.
  std::array<uint64_t, kCallCount> call_ticks{}, call_max_ticks{};
  std::array<uint64_t, kCallCount> call_ticks_published{};  // already in seconds_total
  TickRate tick_rate;
  bool discovered = false;
  double next_fast = 0, next_slow = 0, next_peak = 0;
  double sim_start_unix = 0;  // stepped mode: the wall clock of virtual time 0

  // ---- watchdog (guarded by own_mu) ------------------------------------------------------
  std::mutex own_mu;
  uint64_t worker_generation = 1;
  struct InFlight {
    bool active = false;
    size_t gpu = 0;
    Call call = Call::kUtilization;
    int64_t start_ns = 0;  // CoarseMonotonicNs: the watchdog counts in whole seconds
  } inflight;
  std::condition_variable watchdog_cv;             // with ctl_mu: wakes the watchdog to stop
  std::vector<std::array<bool, kCallCount>> hung;  // per GPU
  std::vector<std::pair<size_t, Call>> recovered;  // hung calls that came back
  std::vector<std::thread> abandoned;
  // Worker threads replaced by the watchdog (or left behind by Stop) that are still inside NVML.
  std::atomic<int> stuck_workers{0};

  // ---- control (guarded by ctl_mu) -------------------------------------------------------
  std::mutex ctl_mu;
  std::condition_variable ctl_cv;
  bool stopping = false;
  std::atomic<bool> stop_requested{false};  // read between GPUs, so a long cycle ends early
  uint64_t worker_exited_generation = 0;    // the generation of the last worker that left normally
  bool events_exited = false;
  bool first_cycle_done = false;
  uint64_t advance_requested = 0, advance_completed = 0;
  unsigned long long advance_delta_ms = 0;
  unsigned long long advance_target_ms = 0;
  bool advance_target_set = false;  // the worker fixes the target once per request

  // ---- events (xid_mu) -------------------------------------------------------------------
  std::mutex xid_mu;
  std::vector<std::vector<std::pair<unsigned, uint64_t>>> xids;  // per GPU
  std::vector<char> mig_changed;  // per GPU: a MigConfigChange event since the last cycle
  uint64_t xid_events = 0;
  nvmlEventSet_t event_set = nullptr;

  // ---- publishing (pub_mu) ---------------------------------------------------------------
  mutable std::mutex pub_mu;
  std::shared_ptr<const Snapshot> latest;
  std::vector<std::shared_ptr<Snapshot>> pool;
  uint64_t published = 0;

  std::thread worker, watchdog, events;
  // The listener runs under listener_mu; once Stop closes it, no worker (an abandoned one that
  // comes back from NVML included) calls it again, so what it calls may then be destroyed.
  std::mutex listener_mu;
  bool listener_closed = false;
  PublishListener listener;
  std::optional<Collector::StopOutcome> stop_outcome;  // the first Stop()'s (ctl_mu)

  Impl(nvml::Library* lib, std::string nvml_error, CollectorOptions opts, Logger* logger)
      : library(lib), options(opts), log(logger) {
    stats.nvml_up = false;
    stats.nvml_error = std::move(nvml_error);
    if (library) stats.library_path = library->path();
    latest = std::make_shared<Snapshot>();
  }

  // CallGuard: every NVML read of a GPU goes through here (see gpu_reader.h).
  bool Enter(size_t gpu, Call call) override {
    std::lock_guard<std::mutex> lock(own_mu);
    if (hung[gpu][static_cast<size_t>(call)]) return false;
    inflight = {true, gpu, call, CoarseMonotonicNs()};
    return true;
  }
  void Leave(size_t gpu, Call call, nvmlReturn_t status, uint64_t ticks) override {
    {
      std::lock_guard<std::mutex> lock(own_mu);
      inflight.active = false;
      if (tls_worker_generation != worker_generation) {
        recovered.emplace_back(gpu, call);
        throw Abandoned{};
      }
    }
    CallStats& cs = stats.calls[static_cast<size_t>(call)];
    ++cs.calls;
    call_ticks[static_cast<size_t>(call)] += ticks;
    call_max_ticks[static_cast<size_t>(call)] =
        std::max(call_max_ticks[static_cast<size_t>(call)], ticks);
    bool benign = status == NVML_SUCCESS || status == NVML_ERROR_NOT_SUPPORTED ||
                  status == NVML_ERROR_FUNCTION_NOT_FOUND || status == NVML_ERROR_NOT_FOUND;
    if (!benign) {
      ++cs.errors;
      auto it = std::find_if(cs.errors_by_code.begin(), cs.errors_by_code.end(),
                             [&](const auto& e) { return e.first == status; });
      if (it == cs.errors_by_code.end()) {
        cs.errors_by_code.emplace_back(status, 1);
        std::sort(cs.errors_by_code.begin(), cs.errors_by_code.end());
      } else {
        ++it->second;
      }
    }
  }

  // ---- discovery -------------------------------------------------------------------------
  void Discover() {
    discovered = true;
    nvml::System system(&library->api());
    auto count = system.DeviceCount();
    if (!count.ok()) {
      stats.nvml_error =
          std::string("nvmlDeviceGetCount failed: ") + nvml::ReturnName(count.status());
      log->Error(stats.nvml_error);
      return;
    }
    stats.nvml_up = true;
    stats.driver_version = system.DriverVersion().value_or("");
    stats.nvml_version = system.NvmlVersion().value_or("");
    auto cuda = system.CudaDriverVersion();
    if (cuda.ok())
      stats.cuda_driver_version =
          std::to_string(cuda.value() / 1000) + "." + std::to_string(cuda.value() % 1000 / 10);
    std::string summary;
    for (unsigned i = 0; i < count.value(); ++i) {
      auto device = system.DeviceByIndex(i);
      if (!device.ok()) {
        log->Warn("GPU " + std::to_string(i) + ": cannot get a handle (" +
                  nvml::ReturnName(device.status()) + "); skipping it");
        continue;
      }
      gpus.emplace_back(gpus.size(), device.value(), i, options, this);
      const GpuIdentity& id = gpus.back().snapshot().identity;
      summary += "\n  GPU " + std::to_string(id.index) + ": " + id.name + " " + id.uuid + " " +
                 id.pci_bus_id;
    }
    {
      std::lock_guard<std::mutex> lock(own_mu);
      hung.assign(gpus.size(), {});
    }
    {
      std::lock_guard<std::mutex> lock(xid_mu);
      xids.assign(gpus.size(), {});
      mig_changed.assign(gpus.size(), 0);
    }
    log->Info("NVML " + stats.nvml_version + ", driver " + stats.driver_version + " (" +
              library->path() + "): " + std::to_string(gpus.size()) + " GPU(s)" + summary);
    if (!library->missing_symbols().empty()) {
      std::string missing;
      for (const std::string& s : library->missing_symbols()) missing += " " + s;
      log->Info("this NVML lacks:" + missing + " (older fallbacks are used where they exist)");
    }
    RegisterEvents();
  }

  void RegisterEvents() {
    const nvml::Api& api = library->api();
    if (!api.nvmlEventSetCreate || !api.nvmlDeviceRegisterEvents ||
        (!api.nvmlEventSetWait_v2 && !api.nvmlEventSetWait)) {
      log->Warn("NVML events unavailable in this library: XIDs will not be counted");
      return;
    }
    if (api.nvmlEventSetCreate(&event_set) != NVML_SUCCESS) {
      event_set = nullptr;
      log->Warn("nvmlEventSetCreate failed: XIDs will not be counted");
      return;
    }
    const unsigned long long wanted = nvmlEventTypeXidCriticalError |
                                      nvmlEventTypeSingleBitEccError |
                                      nvmlEventTypeDoubleBitEccError | nvmlEventTypeMigConfigChange;
    for (GpuReader& g : gpus) {
      unsigned long long supported = wanted;
      if (api.nvmlDeviceGetSupportedEventTypes &&
          api.nvmlDeviceGetSupportedEventTypes(g.device().handle(), &supported) != NVML_SUCCESS)
        supported = wanted;
      nvmlReturn_t rc =
          api.nvmlDeviceRegisterEvents(g.device().handle(), supported & wanted, event_set);
      if (rc == NVML_ERROR_UNKNOWN) {
        log->Warn("nvmlDeviceRegisterEvents failed (UNKNOWN): XIDs will not be counted");
        if (api.nvmlEventSetFree) api.nvmlEventSetFree(event_set);
        event_set = nullptr;
        return;
      }
    }
  }

  // Waits up to timeout_ms for events, then drains what is queued without waiting.
  void DrainEvents(unsigned timeout_ms) {
    if (event_set == nullptr) return;
    const nvml::Api& api = library->api();
    auto wait = api.nvmlEventSetWait_v2 ? api.nvmlEventSetWait_v2 : api.nvmlEventSetWait;
    unsigned timeout = timeout_ms;
    for (int i = 0; i < 1000; ++i) {
      nvmlEventData_t data{};
      nvmlReturn_t rc = wait(event_set, &data, timeout);
      if (rc == NVML_ERROR_TIMEOUT) return;
      if (rc != NVML_SUCCESS) {
        if (timeout > 0) std::this_thread::sleep_for(std::chrono::milliseconds(timeout));
        return;
      }
      timeout = 0;
      OnEvent(data);
    }
  }

  void OnEvent(const nvmlEventData_t& data) {
    size_t gi = gpus.size();
    for (size_t i = 0; i < gpus.size(); ++i)
      if (gpus[i].device().handle() == data.device) gi = i;
    if (gi == gpus.size()) return;
    const GpuIdentity& id = gpus[gi].snapshot().identity;
    std::string who = "GPU " + std::to_string(id.index) + " (" + id.uuid + ")";
    if (data.eventType & nvmlEventTypeXidCriticalError) {
      unsigned xid = static_cast<unsigned>(data.eventData);
      {
        std::lock_guard<std::mutex> lock(xid_mu);
        auto& counts = xids[gi];
        auto it = std::lower_bound(counts.begin(), counts.end(), std::make_pair(xid, uint64_t{0}));
        if (it != counts.end() && it->first == xid) {
          ++it->second;
        } else {
          counts.insert(it, {xid, 1});
        }
        ++xid_events;
      }
      std::string meaning(XidMeaning(xid)), action(XidAction(xid));
      log->Warn(who + ": XID " + std::to_string(xid) +
                (meaning.empty() ? "" : " (" + meaning + ")") +
                (action.empty() ? "" : ": " + action));
    }
    if (data.eventType & nvmlEventTypeDoubleBitEccError)
      log->Error(who + ": uncorrectable (double-bit) ECC error");
    if (data.eventType & nvmlEventTypeMigConfigChange) {
      {
        std::lock_guard<std::mutex> lock(xid_mu);
        mig_changed[gi] = 1;
      }
      log->Info(who + ": MIG layout changed; enumerating its instances again");
    }
  }

  // GPUs whose MIG layout changed (events) are enumerated again before the next fast cycle.
  void RescanChangedMig() {
    for (size_t i = 0; i < gpus.size(); ++i) {
      bool changed;
      {
        std::lock_guard<std::mutex> lock(xid_mu);
        changed = mig_changed[i] != 0;
        mig_changed[i] = 0;
      }
      if (changed) gpus[i].RescanMig();
    }
  }

  // ---- the schedule ----------------------------------------------------------------------
  void ApplyRecoveries() {
    std::vector<std::pair<size_t, Call>> back;
    {
      std::lock_guard<std::mutex> lock(own_mu);
      back.swap(recovered);
      for (auto& [gpu, call] : back) hung[gpu][static_cast<size_t>(call)] = false;
    }
    for (auto& [gpu, call] : back)
      log->Info("GPU " + std::to_string(gpu) + ": " + std::string(CallName(call)) +
                " returned after all; collecting it again");
  }

  void RunDue(double now) {
    ApplyRecoveries();
    bool fast = now >= next_fast, slow = now >= next_slow;
    bool peak = options.memory_peak_interval_s > 0 && now >= next_peak;
    if (fast || slow) RescanChangedMig();
    if (slow) {
      auto t0 = SteadyClock::now();
      for (GpuReader& g : gpus) {
        if (stop_requested.load(std::memory_order_relaxed)) return;
        g.SlowCycle(now);
      }
      stats.last_slow_cycle_seconds =
          std::chrono::duration<double>(SteadyClock::now() - t0).count();
      ++stats.slow_cycles;
      next_slow = NextDue(next_slow, options.slow_interval_s, now);
    }
    if (fast) {
      auto t0 = SteadyClock::now();
      for (GpuReader& g : gpus) {
        if (stop_requested.load(std::memory_order_relaxed)) return;
        g.FastCycle(now);
      }
      stats.last_fast_cycle_seconds =
          std::chrono::duration<double>(SteadyClock::now() - t0).count();
      ++stats.fast_cycles;
      next_fast = NextDue(next_fast, options.fast_interval_s, now);
    } else if (peak) {
      for (GpuReader& g : gpus) g.PeakSample();
    }
    if (peak) next_peak = NextDue(next_peak, options.memory_peak_interval_s, now);
    if (options.stepped) DrainEvents(0);
    if (fast || slow) Publish(now);
  }

  double NextWake() const {
    double next = std::min(next_fast, next_slow);
    if (options.memory_peak_interval_s > 0) next = std::min(next, next_peak);
    return next;
  }

  double Now() {
    if (!options.stepped) return SteadySeconds();
    unsigned long long ms = 0;
    library->api().nvmlSimGetClock(&ms);
    return static_cast<double>(ms) / 1000.0;
  }

  void Publish(double now) {
    std::shared_ptr<Snapshot> next;
    {
      std::lock_guard<std::mutex> lock(pub_mu);
      for (auto& s : pool)
        if (s.use_count() == 1) next = s;
      if (!next && pool.size() < 4) {
        pool.push_back(std::make_shared<Snapshot>());
        next = pool.back();
      }
    }
    if (!next) next = std::make_shared<Snapshot>();  // every pooled one is still being read
    Snapshot& s = *next;
    s.generation = ++published;
    s.taken_unix_seconds = options.stepped ? sim_start_unix + now : options.clock->NowSeconds();
    s.gpus.resize(gpus.size());
    for (size_t i = 0; i < gpus.size(); ++i) s.gpus[i] = gpus[i].snapshot();
    if (options.process_details && !gpus.empty()) {
      if (!enricher)
        enricher = std::make_unique<ProcessEnricher>(
            ProcessEnricherOptions{options.proc_root, options.process_details_interval_s},
            library ? &library->api() : nullptr);
      enricher->Apply(SteadySeconds(), s.gpus);
    }
    {
      std::lock_guard<std::mutex> lock(xid_mu);
      for (size_t i = 0; i < gpus.size(); ++i) s.gpus[i].xid_counts = xids[i];
      stats.xid_events = xid_events;
    }
    {
      std::lock_guard<std::mutex> lock(own_mu);
      for (size_t i = 0; i < gpus.size(); ++i) s.gpus[i].hung = hung[i];
    }
    stats.last_success_unix_seconds = s.taken_unix_seconds;
    const double seconds_per_tick = tick_rate.SecondsPerTick();
    for (size_t c = 0; c < kCallCount; ++c) {
      // Only the ticks since the last publish are converted (with the rate known now), so the
      // counter never goes down when the rate's estimate moves in its last digits.
      stats.calls[c].seconds_total +=
          static_cast<double>(call_ticks[c] - call_ticks_published[c]) * seconds_per_tick;
      call_ticks_published[c] = call_ticks[c];
      stats.calls[c].max_seconds = static_cast<double>(call_max_ticks[c]) * seconds_per_tick;
    }
    s.stats = stats;
    {
      std::lock_guard<std::mutex> lock(pub_mu);
      latest = next;
    }
    {
      std::lock_guard<std::mutex> lock(listener_mu);
      if (listener_closed) throw Abandoned{};  // stopped (or left behind by Stop): unwind
      if (listener) listener(next);
    }
    {
      std::lock_guard<std::mutex> lock(ctl_mu);
      first_cycle_done = true;
    }
    ctl_cv.notify_all();
  }

  // ---- threads ---------------------------------------------------------------------------
  void RunWorker() {
    if (!discovered) {
      Discover();
      double now = Now();
      next_fast = next_slow = next_peak = now;
      if (options.stepped)
        sim_start_unix =
            options.sim_start_unix > 0 ? options.sim_start_unix : options.clock->NowSeconds() - now;
      std::lock_guard<std::mutex> lock(ctl_mu);
      if (stopping) return;
      if (!options.stepped && event_set != nullptr)
        events = std::thread([self = shared_from_this()] {
          self->EventLoop();
          {
            std::lock_guard<std::mutex> done(self->ctl_mu);
            self->events_exited = true;
          }
          self->ctl_cv.notify_all();
        });
    }
    if (!options.stepped) {
      RunDue(Now());
      while (true) {
        double wake = NextWake();
        std::unique_lock<std::mutex> lock(ctl_mu);
        auto deadline = SteadyClock::time_point(
            std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(wake)));
        ctl_cv.wait_until(lock, deadline, [&] { return stopping; });
        if (stopping) return;
        lock.unlock();
        RunDue(Now());
      }
    }
    // Stepped: run what is due now, then follow Advance() requests.
    RunDue(Now());
    while (true) {
      {
        std::unique_lock<std::mutex> lock(ctl_mu);
        ctl_cv.wait(lock, [&] { return stopping || advance_requested != advance_completed; });
        if (stopping) return;
      }
      unsigned long long now_ms = 0;
      library->api().nvmlSimGetClock(&now_ms);
      unsigned long long target_ms;
      {
        std::lock_guard<std::mutex> lock(ctl_mu);
        if (!advance_target_set) {
          advance_target_ms = now_ms + advance_delta_ms;
          advance_target_set = true;
        }
        target_ms = advance_target_ms;
      }
      while (now_ms < target_ms) {
        if (stop_requested.load(std::memory_order_relaxed)) return;
        double due_ms = NextWake() * 1000.0;
        unsigned long long step = target_ms - now_ms;
        if (due_ms > static_cast<double>(now_ms))
          step = std::min<unsigned long long>(
              step, static_cast<unsigned long long>(std::llround(due_ms)) - now_ms);
        if (step == 0) step = 1;
        library->api().nvmlSimAdvance(step);
        library->api().nvmlSimGetClock(&now_ms);
        RunDue(static_cast<double>(now_ms) / 1000.0);
      }
      {
        std::lock_guard<std::mutex> lock(ctl_mu);
        advance_completed = advance_requested;
        advance_target_set = false;
      }
      ctl_cv.notify_all();
    }
  }

  void EventLoop() {
    while (true) {
      {
        std::lock_guard<std::mutex> lock(ctl_mu);
        if (stopping) return;
      }
      DrainEvents(250);
    }
  }

  // The watchdog sleeps until the moment the call it last saw in flight would reach the timeout,
  // or half a timeout when it saw none. A call that starts right after a look is seen at the next
  // one (half a timeout later: it cannot have reached the timeout yet), and from then on the
  // watchdog wakes exactly when it would: hangs are caught at `call_timeout` as with fixed
  // polling, with a wake-up every 2.5 s (default timeout) instead of every 200 ms.
  void WatchdogLoop(std::shared_ptr<Impl> self) {
    // Capped at ~30 years so that the nanoseconds fit in 64 bits.
    const int64_t timeout_ns = static_cast<int64_t>(std::min(options.call_timeout_s, 1e9) * 1e9);
    const int64_t idle_ns = std::max<int64_t>(timeout_ns / 2, 10'000'000);
    int64_t sleep_ns = idle_ns;
    while (true) {
      {
        std::unique_lock<std::mutex> lock(ctl_mu);
        watchdog_cv.wait_for(lock, std::chrono::nanoseconds(sleep_ns), [&] { return stopping; });
        if (stopping) return;
      }
      std::lock_guard<std::mutex> lock(own_mu);
      const int64_t now = CoarseMonotonicNs();
      sleep_ns = idle_ns;
      if (!inflight.active) continue;
      if (now - inflight.start_ns < timeout_ns) {
        // At least 1 ms: the coarse clock moves in kernel ticks.
        sleep_ns = std::max<int64_t>(inflight.start_ns + timeout_ns - now, 1'000'000);
        continue;
      }
      // The worker is stuck inside NVML. Abandon it: it exits by itself if the call returns.
      size_t gpu = inflight.gpu;
      Call call = inflight.call;
      hung[gpu][static_cast<size_t>(call)] = true;
      inflight.active = false;
      ++worker_generation;
      ++stats.watchdog_trips;
      CallStats& cs = stats.calls[static_cast<size_t>(call)];
      ++cs.calls;
      ++cs.errors;
      log->Error("GPU " + std::to_string(gpu) + ": " + std::string(CallName(call)) +
                 " has not returned for " + FormatDuration(options.call_timeout_s) +
                 "; marking it hung and collecting the rest without it");
      abandoned.push_back(std::move(worker));
      ++stuck_workers;
      if (library) library->LeakOnDestruction();  // the stuck thread still runs library code
      uint64_t generation = worker_generation;
      worker = std::thread([self, generation] { WorkerMain(self, generation); });
    }
  }

  static void WorkerMain(std::shared_ptr<Impl> self, uint64_t generation) {
    tls_worker_generation = generation;
    try {
      self->RunWorker();
    } catch (const Abandoned&) {
      // A hung call returned after this worker was replaced (or the collector stopped without
      // it): leave without touching state.
    }
    bool was_current;
    {
      std::lock_guard<std::mutex> lock(self->own_mu);
      was_current = generation == self->worker_generation;
    }
    if (!was_current) {  // the watchdog or Stop counted it as stuck and forgot it
      --self->stuck_workers;
      return;
    }
    {
      std::lock_guard<std::mutex> lock(self->ctl_mu);
      self->worker_exited_generation = generation;
    }
    self->ctl_cv.notify_all();
  }
};

Collector::Collector(nvml::Library* library, std::string nvml_error, CollectorOptions options,
                     Logger* logger)
    : impl_(std::make_shared<Impl>(library, std::move(nvml_error), options, logger)),
      options_(options) {}

Collector::~Collector() {
  (void)Stop();
}

void Collector::OnPublish(PublishListener listener) {
  impl_->listener = std::move(listener);
}

void Collector::Start() {
  if (impl_->library == nullptr) {
    impl_->Publish(0);  // a snapshot that says why there is no NVML
    return;
  }
  std::shared_ptr<Impl> self = impl_;
  uint64_t generation = impl_->worker_generation;
  impl_->worker = std::thread([self, generation] { Impl::WorkerMain(self, generation); });
  impl_->watchdog = std::thread([self] { self->WatchdogLoop(self); });
}

Collector::StopOutcome Collector::Stop(double timeout_s) {
  Impl& im = *impl_;
  {
    std::lock_guard<std::mutex> lock(im.ctl_mu);
    if (im.stopping) return im.stop_outcome.value_or(StopOutcome{});
    im.stopping = true;
  }
  im.stop_requested = true;
  im.ctl_cv.notify_all();
  im.watchdog_cv.notify_all();
  const auto deadline = SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                                 std::chrono::duration<double>(timeout_s));
  // The watchdog never calls NVML: it leaves at once. After it, only Stop moves the generation.
  if (im.watchdog.joinable()) im.watchdog.join();
  StopOutcome outcome;
  std::thread worker, events;
  std::vector<std::thread> abandoned;
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(im.own_mu);
    worker = std::move(im.worker);
    abandoned = std::move(im.abandoned);
    generation = im.worker_generation;
  }
  // Never join a thread that may be inside NVML: wait for it to say it left, up to the deadline.
  bool worker_left = true, events_left = true;
  auto worker_exited = [&] { return im.worker_exited_generation == generation; };
  if (worker.joinable()) {
    std::unique_lock<std::mutex> lock(im.ctl_mu);
    worker_left = im.ctl_cv.wait_until(lock, deadline, worker_exited);
  }
  {
    // Waits for a listener call in progress (recording a snapshot: no NVML, bounded), then
    // shuts the door: no worker calls the listener after this.
    std::lock_guard<std::mutex> lock(im.listener_mu);
    im.listener_closed = true;
  }
  {
    std::unique_lock<std::mutex> lock(im.ctl_mu);
    // A worker that was recording rather than inside NVML leaves right after the listener.
    if (!worker_left)
      worker_left = im.ctl_cv.wait_for(lock, std::chrono::milliseconds(200), worker_exited);
    // The worker starts the event thread; once the worker is done (or given up), it is set.
    events = std::move(im.events);
    if (events.joinable())
      events_left = im.ctl_cv.wait_until(lock, deadline, [&] { return im.events_exited; });
  }
  if (worker_left) {
    if (worker.joinable()) worker.join();
  } else {
    std::lock_guard<std::mutex> lock(im.own_mu);
    std::string what = "the NVML worker";
    if (!im.inflight.active) {
      what += " (in an NVML call outside the GPU reads: discovery or the simulator's clock)";
    } else {
      const double for_s = static_cast<double>(CoarseMonotonicNs() - im.inflight.start_ns) / 1e9;
      char took[32];
      std::snprintf(took, sizeof took, "%.1f s", for_s);
      what += " (GPU " + std::to_string(im.inflight.gpu) + ", " +
              std::string(CallName(im.inflight.call)) + ", in the call for " + took + ")";
      im.inflight.active = false;
    }
    outcome.abandoned.push_back(what);
    ++im.worker_generation;  // if its call ever returns, it unwinds without touching anything
    ++im.stuck_workers;
    worker.detach();
  }
  if (events_left) {
    if (events.joinable()) events.join();
  } else {
    outcome.abandoned.push_back("the NVML event thread (in nvmlEventSetWait)");
    events.detach();
  }
  // Workers the watchdog replaced earlier: they hold `impl_` alive and unwind if they return.
  for (std::thread& t : abandoned) t.detach();
  const int earlier = im.stuck_workers.load() - (worker_left ? 0 : 1);
  if (earlier > 0)
    outcome.abandoned.push_back(std::to_string(earlier) +
                                " worker(s) the watchdog replaced earlier, still inside NVML");
  if (outcome.clean()) {
    if (im.event_set && im.library && im.library->api().nvmlEventSetFree)
      im.library->api().nvmlEventSetFree(im.event_set);
    im.event_set = nullptr;
  } else if (im.library) {
    // A thread is still inside the library: neither nvmlShutdown (it may block behind the stuck
    // call) nor dlclose (the thread runs its code) may happen.
    im.library->LeakOnDestruction();
  }
  {
    std::lock_guard<std::mutex> lock(im.ctl_mu);
    im.stop_outcome = outcome;
  }
  im.ctl_cv.notify_all();  // Advance() callers waiting on a step see `stopping`
  return outcome;
}

bool Collector::WaitForFirstCycle(double timeout_s) {
  std::unique_lock<std::mutex> lock(impl_->ctl_mu);
  return impl_->ctl_cv.wait_for(lock, std::chrono::duration<double>(timeout_s),
                                [&] { return impl_->first_cycle_done; });
}

std::shared_ptr<const Snapshot> Collector::Latest() const {
  std::lock_guard<std::mutex> lock(impl_->pub_mu);
  return impl_->latest;
}

Status Collector::Advance(double seconds, double timeout_s) {
  if (!options_.stepped || impl_->library == nullptr ||
      impl_->library->api().nvmlSimAdvance == nullptr)
    return Error{"advance needs the simulator with a stepped clock (--sim-clock stepped)"};
  if (seconds <= 0) return Error{"advance: seconds must be positive"};
  std::unique_lock<std::mutex> lock(impl_->ctl_mu);
  if (!impl_->ctl_cv.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] {
        return impl_->stopping ||
               (impl_->first_cycle_done && impl_->advance_requested == impl_->advance_completed);
      }))
    return Error{"advance: the collector is still busy with an earlier step"};
  if (impl_->stopping) return Error{"advance: the agent is stopping"};
  // Only the worker touches the simulator; it turns this delta into a target clock.
  impl_->advance_delta_ms = static_cast<unsigned long long>(std::llround(seconds * 1000));
  uint64_t ticket = ++impl_->advance_requested;
  impl_->ctl_cv.notify_all();
  if (!impl_->ctl_cv.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] {
        return impl_->stopping || impl_->advance_completed >= ticket;
      }))
    return Error{"advance: timed out waiting for the collector"};
  if (impl_->advance_completed < ticket) return Error{"advance: the agent is stopping"};
  return Status::Ok();
}

}  // namespace gw::collect
