// Makes OpenMetrics data sets that are NOT the simulated demo fleet, so the codec and the storage
// comparison are measured on shapes the project was not tuned on (issue 15). Each set is seeded
// and deterministic; the output follows make_dataset's conventions (families together, a series'
// samples together in time order, "value seconds.millis" lines, "# EOF"), so `gpuwarden tsdb
// import`, `promtool tsdb create-blocks-from openmetrics` and VictoriaMetrics' text import all
// take it.
//
//   make_varied --set NAME --duration 2h --step 1s --start 1700000000 --seed 1 --out FILE
//
// Sets (docs/benchmarks.md, "Storage on varied data"):
//   walk       random walks rounded to 2 or 3 decimals (prices, levels)
//   noise      float noise at full precision (uniform ratios, log-normal latencies, noisy sines)
//   counters   counters with varying rates and occasional resets to 0; scrape-like timestamp
//              jitter of 0-15 ms per instance
//   quantized  sensors: integers, steps of 0.5 and 0.125, long flat runs, 0/1 states
//   churn      process- and job-like series that appear and disappear (each simply ends, as a
//              scrape target's series do; the store marks it stale), with scrape jitter
//   telemetry  8 GPUs of DCGM-style telemetry: ~20 series per GPU driven by a workload model of
//              its own (idle / training / inference / copy phases), not by libnvml-sim
// The model constants below are picked to look plausible, not measured from real machines.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace {

struct Args {
  std::string set, out = "data.om";
  double duration_s = 7200, step_s = 1;
  int64_t start_s = 1700000000;
  uint64_t seed = 1;
};

bool ParseDuration(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  const std::string unit = end;
  const double mult = unit == "ms"  ? 0.001
                      : unit == "s" ? 1
                      : unit == "m" ? 60
                      : unit == "h" ? 3600
                      : unit == "d" ? 86400
                                    : -1;
  if (mult < 0 || !(v > 0)) return false;
  *out = v * mult;
  return true;
}

bool Parse(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (k == "--set") {
      a->set = next();
    } else if (k == "--out") {
      a->out = next();
    } else if (k == "--duration") {
      if (!ParseDuration(next(), &a->duration_s)) return false;
    } else if (k == "--step") {
      if (!ParseDuration(next(), &a->step_s)) return false;
    } else if (k == "--start") {
      a->start_s = std::atoll(next().c_str());
    } else if (k == "--seed") {
      a->seed = std::strtoull(next().c_str(), nullptr, 10);
    } else {
      return false;
    }
  }
  return !a->set.empty();
}

// splitmix64: small, portable and the same on every platform (std's distributions are not).
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t Next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1p-53; }  // [0, 1)
  double Range(double lo, double hi) { return lo + (hi - lo) * Uniform(); }
  int Int(int lo, int hi) {
    return lo + static_cast<int>(Next() % static_cast<uint64_t>(hi - lo + 1));
  }
  bool Chance(double p) { return Uniform() < p; }
  double Normal() {  // Box-Muller
    const double u = 1.0 - Uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * Uniform());
  }
  // Poisson counts: exact for small means, the normal approximation above 30.
  int64_t Poisson(double mean) {
    if (mean <= 0) return 0;
    if (mean > 30) return std::max<int64_t>(0, std::llround(mean + std::sqrt(mean) * Normal()));
    const double limit = std::exp(-mean);
    int64_t k = 0;
    for (double p = Uniform(); p > limit; p *= Uniform()) ++k;
    return k;
  }

 private:
  uint64_t s_;
};

// The value k / 10^d as the double a text parser reads for that decimal (correctly rounded).
double Decimal(double x, int d) {
  const double scale = d == 0 ? 1 : d == 1 ? 10 : d == 2 ? 100 : 1000;
  return static_cast<double>(std::llround(x * scale)) / scale;
}
double Step(double x, double q) {
  return std::round(x / q) * q;
}

struct Family {
  bool counter = false;
  std::map<std::string, std::string> series;  // series text -> its lines
};

class Output {
 public:
  explicit Output(const Args& a) : args_(a) {
    steps_ = static_cast<int64_t>(a.duration_s / a.step_s);
    step_ms_ = static_cast<int64_t>(std::llround(a.step_s * 1000));
  }
  int64_t steps() const { return steps_; }
  int64_t step_ms() const { return step_ms_; }
  double step_s() const { return args_.step_s; }
  int64_t TimeMs(int64_t k) const { return args_.start_s * 1000 + k * step_ms_; }

  // One sample of `name{labels}` at `t_ms`.
  void Add(const std::string& name, bool counter, const std::string& labels, int64_t t_ms,
           double v) {
    Family& f = families_[name];
    f.counter = counter;
    const std::string key = name + "{" + labels + "}";
    std::string& lines = f.series[key];
    lines += key;
    lines += ' ';
    char buf[40];
    if (std::isnan(v)) {
      lines += "NaN";
    } else if (std::isinf(v)) {
      lines += v > 0 ? "+Inf" : "-Inf";
    } else {
      auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
      lines.append(buf, r.ptr);
    }
    std::snprintf(buf, sizeof buf, " %lld.%03lld\n", static_cast<long long>(t_ms / 1000),
                  static_cast<long long>(t_ms % 1000));
    lines += buf;
    ++samples_;
  }

  bool Write() const {
    FILE* f = std::fopen(args_.out.c_str(), "w");
    if (f == nullptr) return false;
    for (const auto& [name, fam] : families_) {
      const std::string family = fam.counter ? name.substr(0, name.size() - 6) : name;
      std::fprintf(f, "# TYPE %s %s\n", family.c_str(), fam.counter ? "counter" : "gauge");
      for (const auto& [key, lines] : fam.series) std::fwrite(lines.data(), 1, lines.size(), f);
    }
    std::fprintf(f, "# EOF\n");
    const bool ok = std::ferror(f) == 0;
    return std::fclose(f) == 0 && ok;
  }
  uint64_t samples() const { return samples_; }
  size_t families() const { return families_.size(); }

 private:
  const Args& args_;
  int64_t steps_ = 0, step_ms_ = 1000;
  std::map<std::string, Family> families_;
  uint64_t samples_ = 0;
};

std::string Inst(int i) {
  return "instance=\"host-" + std::to_string(i) + ":9100\"";
}

// ---- walk: 60 series at 2 decimals, 40 at 3 decimals.
void Walk(Output* o, Rng* rng) {
  for (int s = 0; s < 100; ++s) {
    const bool two = s < 60;
    double x = two ? rng->Range(5, 2000) : rng->Range(-5, 50);
    const double sigma = (two ? 0.02 : 0.002) * std::pow(10.0, rng->Range(0, 2));
    const double hold = rng->Range(0, 0.6);  // chance the value does not move this step
    const std::string labels =
        Inst(s % 10) + (two ? ",symbol=\"S" : ",sensor=\"L") + std::to_string(s) + "\"";
    for (int64_t k = 0; k <= o->steps(); ++k) {
      if (!rng->Chance(hold)) x += sigma * rng->Normal();
      o->Add(two ? "walk_price" : "walk_level", false, labels, o->TimeMs(k),
             Decimal(x, two ? 2 : 3));
    }
  }
}

// ---- noise: every bit of the mantissa is random.
void Noise(Output* o, Rng* rng) {
  for (int s = 0; s < 100; ++s) {
    const int kind = s % 3;
    const double mu = rng->Range(-7, -1), sd = rng->Range(0.1, 1.0);
    const double base = rng->Range(20, 80), amp = rng->Range(1, 10);
    const double period = rng->Range(600, 7200);
    const std::string labels = Inst(s % 10) + ",shard=\"" + std::to_string(s) + "\"";
    const char* name = kind == 0   ? "noise_ratio"
                       : kind == 1 ? "noise_latency_seconds"
                                   : "noise_temp";
    for (int64_t k = 0; k <= o->steps(); ++k) {
      const double t = static_cast<double>(k) * o->step_s();
      double v = kind == 0 ? rng->Uniform()
                 : kind == 1
                     ? std::exp(mu + sd * rng->Normal())
                     : base + amp * std::sin(6.283185307179586 * t / period) + 0.3 * rng->Normal();
      o->Add(name, false, labels, o->TimeMs(k), v);
    }
  }
}

// Scrape jitter: one offset per instance per scrape, 0-15 ms, like a scraper's timer.
int64_t Jitter(uint64_t seed, int instance, int64_t k) {
  Rng r(seed ^ (static_cast<uint64_t>(instance) << 40) ^ static_cast<uint64_t>(k) * 0x9e37ULL);
  return static_cast<int64_t>(r.Next() % 16);
}

// ---- counters: integer request counts, byte counts, centisecond CPU time; resets to 0.
void Counters(Output* o, Rng* rng, uint64_t seed) {
  for (int s = 0; s < 100; ++s) {
    const int kind = s % 3, inst = s % 10;
    double rate = kind == 0   ? std::pow(10.0, rng->Range(-1, 2.7))  // requests/s
                  : kind == 1 ? std::pow(10.0, rng->Range(3, 8))     // bytes/s
                              : rng->Range(0.01, 0.95);              // CPU s/s
    const double reset_p = 1.0 / rng->Range(2000, 20000);
    const double period = rng->Range(900, 5400);
    double total = kind == 1 ? std::floor(rng->Range(0, 1e12)) : 0;
    const std::string labels =
        Inst(inst) + (kind == 0 ? ",code=\"" + std::to_string(200 + 100 * (s % 4)) +
                                      "\",handler=\"/api/" + std::to_string(s) + "\""
                      : kind == 1 ? ",device=\"eth" + std::to_string(s) + "\""
                                  : ",cpu=\"" + std::to_string(s / 3) + "\",mode=\"user\"");
    const char* name = kind == 0   ? "http_requests_total"
                       : kind == 1 ? "net_received_bytes_total"
                                   : "cpu_seconds_total";
    for (int64_t k = 0; k <= o->steps(); ++k) {
      const double t = static_cast<double>(k) * o->step_s();
      if (rng->Chance(0.001)) rate *= rng->Range(0.5, 2.0);  // load shifts
      const double r = rate * (1 + 0.5 * std::sin(6.283185307179586 * t / period));
      if (k > 0 && rng->Chance(reset_p)) {
        total = 0;
      } else if (kind == 2) {
        total = Decimal(total + std::clamp(r + 0.05 * rng->Normal(), 0.0, 1.0) * o->step_s(), 2);
      } else {
        total += static_cast<double>(rng->Poisson(r * o->step_s()));
      }
      o->Add(name, true, labels, o->TimeMs(k) + Jitter(seed, inst, k), total);
    }
  }
}

// ---- quantized: integers, halves, eighths, 0/1 states; values that rarely move.
void Quantized(Output* o, Rng* rng) {
  for (int s = 0; s < 100; ++s) {
    const int kind = s % 5;
    const double move_p = std::pow(10.0, rng->Range(-3, -0.5));
    double x = kind == 0   ? rng->Int(25, 70)
               : kind == 1 ? rng->Range(30, 60)
               : kind == 2 ? rng->Range(11, 13)
               : kind == 3 ? rng->Int(20, 100) * 30
                           : 0;
    const std::string labels = Inst(s % 10) + ",sensor=\"" + std::to_string(s) + "\"";
    const char* names[] = {"sensor_temp_celsius", "sensor_humidity_percent", "sensor_volts",
                           "sensor_fan_rpm", "sensor_door_open"};
    for (int64_t k = 0; k <= o->steps(); ++k) {
      if (rng->Chance(move_p)) {
        switch (kind) {
          case 0:
            x += rng->Chance(0.5) ? 1 : -1;
            break;
          case 1:
            x = std::clamp(x + rng->Normal(), 5.0, 95.0);
            break;
          case 2:
            x += 0.05 * rng->Normal();
            break;
          case 3:
            x = std::max(0.0, x + 30.0 * rng->Int(-3, 3));
            break;
          default:
            x = 1 - x;
            break;
        }
      }
      const double v = kind == 1 ? Step(x, 0.5) : kind == 2 ? Step(x, 0.125) : x;
      o->Add(names[kind], false, labels, o->TimeMs(k), v);
    }
  }
}

// ---- churn: processes of jobs that start and end; ~60 alive at a time.
void Churn(Output* o, Rng* rng, uint64_t seed) {
  struct Proc {
    std::string labels;
    int inst;
    int64_t end_k;
    double cpu = 0, rate, rss, threads;
  };
  std::vector<Proc> alive;
  int pid = 1000, job = 0;
  const double mean_life_s = 1200;
  const double arrivals_per_step = 60.0 / mean_life_s * o->step_s();
  auto spawn = [&](int64_t k) {
    const int inst = rng->Int(0, 9);
    if (rng->Chance(0.3)) ++job;
    pid += rng->Int(1, 40);
    const double life_s = std::min(4 * 3600.0, -mean_life_s * std::log(1 - rng->Uniform()));
    Proc p{Inst(inst) + ",job=\"batch-" + std::to_string(job) + "\",pid=\"" + std::to_string(pid) +
               "\"",
           inst,
           k + std::max<int64_t>(1, std::llround(life_s / o->step_s())),
           0,
           rng->Range(0.05, 4),
           std::floor(rng->Range(1e6, 4e9) / 4096) * 4096,
           static_cast<double>(rng->Int(1, 64))};
    alive.push_back(std::move(p));
  };
  for (int i = 0; i < 60; ++i) spawn(0);
  for (int64_t k = 0; k <= o->steps(); ++k) {
    for (int64_t n = rng->Poisson(arrivals_per_step); n > 0; --n) spawn(k);
    const int64_t t = o->TimeMs(k);
    for (Proc& p : alive) {
      const int64_t tj = t + Jitter(seed, p.inst, k);
      p.cpu = Decimal(p.cpu + p.rate * o->step_s() * rng->Range(0.7, 1.0), 2);
      if (rng->Chance(0.05))
        p.rss = std::max(4096.0, p.rss + 4096 * std::round(rng->Normal() * 500));
      if (rng->Chance(0.002)) p.threads = std::max(1.0, p.threads + rng->Int(-2, 2));
      o->Add("process_cpu_seconds_total", true, p.labels, tj, p.cpu);
      o->Add("process_resident_memory_bytes", false, p.labels, tj, p.rss);
      o->Add("process_threads", false, p.labels, tj, p.threads);
    }
    std::erase_if(alive, [&](const Proc& p) { return p.end_k <= k; });
  }
}

// ---- telemetry: 8 GPUs, DCGM-style names, a workload model per GPU.
void Telemetry(Output* o, Rng* rng) {
  struct Phase {
    double util, mem_util, fb_gib, pcie;
  };
  const Phase phases[] = {{0, 0, 0.5, 0.2}, {96, 45, 70, 2}, {55, 20, 30, 6}, {15, 85, 40, 24}};
  const char* reasons[] = {"power_cap", "thermal", "sw_slowdown", "idle"};
  for (int g = 0; g < 8; ++g) {
    const std::string labels = "gpu=\"" + std::to_string(g) + "\",UUID=\"GPU-5f1c0de" +
                               std::to_string(g) + "-71aa-4e2b-9d3c-00000000000" +
                               std::to_string(g) + "\",Hostname=\"node-7\",modelName=\"H100 SXM\"";
    int phase = 0;
    int64_t phase_end = 0;
    double temp = 33, mem_temp = 38, energy_mj = std::floor(rng->Range(1e9, 9e10));
    double nvlink = std::floor(rng->Range(0, 1e13)), sbe = rng->Int(0, 4);
    double fb = 512, clock = 1980;
    for (int64_t k = 0; k <= o->steps(); ++k) {
      if (k >= phase_end) {
        phase = rng->Chance(0.3) ? 0 : rng->Int(1, 3);
        phase_end = k + std::llround(rng->Range(300, 3600) / o->step_s());
      }
      const Phase& ph = phases[phase];
      const double util =
          std::clamp(std::round(ph.util + (phase ? 4 : 0.3) * rng->Normal()), 0.0, 100.0);
      const double mem_util = std::clamp(std::round(ph.mem_util + 3 * rng->Normal()), 0.0, 100.0);
      const double power = std::max(60.0, 70 + util * 5.9 + 12 * rng->Normal());
      const bool power_cap = power > 640;
      temp += (28 + power * 0.075 - temp) * (1 - std::exp(-o->step_s() / 90));
      mem_temp +=
          (33 + power * 0.06 + mem_util * 0.05 - mem_temp) * (1 - std::exp(-o->step_s() / 60));
      const bool thermal = temp > 78;
      if (phase == 0) {
        clock = 345;
      } else {
        const double target = thermal || power_cap ? 1755 : 1980;
        if (clock < target) clock = std::min(target, clock + 105);
        if (clock > target) clock -= 15;
      }
      const double fb_target = ph.fb_gib * 1024;
      if (std::fabs(fb - fb_target) > 1) fb += (fb_target - fb) * 0.2;
      fb = std::round(fb);
      energy_mj += std::round(power * 1000 * o->step_s());
      nvlink += phase == 1 ? std::round(rng->Range(2e10, 3e10) * o->step_s()) : 0;
      if (rng->Chance(1e-4)) sbe += 1;
      const int64_t t = o->TimeMs(k);
      o->Add("dcgm_gpu_temp", false, labels, t, std::round(temp));
      o->Add("dcgm_memory_temp", false, labels, t, std::round(mem_temp));
      o->Add("dcgm_power_usage", false, labels, t, Decimal(power, 3));
      o->Add("dcgm_gpu_utilization", false, labels, t, util);
      o->Add("dcgm_mem_copy_utilization", false, labels, t, mem_util);
      o->Add("dcgm_enc_utilization", false, labels, t, 0);
      o->Add("dcgm_dec_utilization", false, labels, t,
             phase == 2 && rng->Chance(0.2) ? rng->Int(1, 9) : 0);
      o->Add("dcgm_sm_clock", false, labels, t, clock);
      o->Add("dcgm_mem_clock", false, labels, t, phase == 0 ? 1593 : 2619);
      o->Add("dcgm_fb_used", false, labels, t, fb);
      o->Add("dcgm_fb_free", false, labels, t, 81559 - fb);
      o->Add("dcgm_pcie_tx_throughput", false, labels, t,
             std::max(0.0, std::round(ph.pcie * 1e6 * rng->Range(0.5, 1.5))));
      o->Add("dcgm_pcie_rx_throughput", false, labels, t,
             std::max(0.0, std::round(ph.pcie * 0.3e6 * rng->Range(0.5, 1.5))));
      o->Add("dcgm_total_energy_consumption_total", true, labels, t, energy_mj);
      o->Add("dcgm_nvlink_bandwidth_total", true, labels, t, nvlink);
      o->Add("dcgm_ecc_sbe_volatile_total", true, labels, t, sbe);
      o->Add("dcgm_xid_errors", false, labels, t, 0);
      const bool on[] = {power_cap, thermal, rng->Chance(0.001), phase == 0};
      for (int r = 0; r < 4; ++r)
        o->Add("dcgm_clock_throttle", false, labels + ",reason=\"" + reasons[r] + "\"", t,
               on[r] ? 1 : 0);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!Parse(argc, argv, &args)) {
    std::fprintf(stderr,
                 "usage: make_varied --set walk|noise|counters|quantized|churn|telemetry"
                 " [--duration D] [--step D] [--start UNIX] [--seed N] [--out FILE]\n");
    return 2;
  }
  Output out(args);
  Rng rng(args.seed * 0x2545f4914f6cdd1dULL + 17);
  if (args.set == "walk") {
    Walk(&out, &rng);
  } else if (args.set == "noise") {
    Noise(&out, &rng);
  } else if (args.set == "counters") {
    Counters(&out, &rng, args.seed);
  } else if (args.set == "quantized") {
    Quantized(&out, &rng);
  } else if (args.set == "churn") {
    Churn(&out, &rng, args.seed);
  } else if (args.set == "telemetry") {
    Telemetry(&out, &rng);
  } else {
    std::fprintf(stderr, "unknown set %s\n", args.set.c_str());
    return 2;
  }
  if (!out.Write()) {
    std::fprintf(stderr, "cannot write %s\n", args.out.c_str());
    return 1;
  }
  std::fprintf(stderr, "%s: %llu samples, %zu families\n", args.out.c_str(),
               static_cast<unsigned long long>(out.samples()), out.families());
  return 0;
}
