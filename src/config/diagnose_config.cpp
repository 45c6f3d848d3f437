#include "config/diagnose_config.h"
#include "config/messages.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace gw::config {

namespace {

// What a threshold's value may be; each kind is one message.
enum class Kind {
  kRatio,     // a share or utilization: 0-1
  kPositive,  // a number above 0 (a count, a ratio that may pass 1)
  kFactor,    // a multiple above 1
  kCelsius,   // degrees, 0 or more
  kDuration,  // a duration above 0
};

struct ThresholdKey {
  const char* name;  // the key under diagnose.thresholds
  Kind kind;
  double diagnose::Thresholds::*field;
};

// In the order of diagnose::Thresholds. Durations drop the `_s` of their field, as every
// duration key of the file does (queue_wait_p90: 30m).
const ThresholdKey kThresholds[] = {
    {"busy_utilization", Kind::kRatio, &diagnose::Thresholds::busy_utilization},
    {"throttled_share", Kind::kRatio, &diagnose::Thresholds::throttled_share},
    {"power_cap_lowered", Kind::kRatio, &diagnose::Thresholds::power_cap_lowered},
    {"memory_bound_mem_util", Kind::kRatio, &diagnose::Thresholds::memory_bound_mem_util},
    {"memory_bound_factor", Kind::kPositive, &diagnose::Thresholds::memory_bound_factor},
    {"memory_pressure", Kind::kRatio, &diagnose::Thresholds::memory_pressure},
    {"memory_spike", Kind::kRatio, &diagnose::Thresholds::memory_spike},
    {"idle_utilization", Kind::kRatio, &diagnose::Thresholds::idle_utilization},
    {"starved_utilization", Kind::kRatio, &diagnose::Thresholds::starved_utilization},
    {"thermal_margin_c", Kind::kCelsius, &diagnose::Thresholds::thermal_margin_c},
    {"ecc_review_count", Kind::kPositive, &diagnose::Thresholds::ecc_review_count},
    {"ecc_horizon", Kind::kDuration, &diagnose::Thresholds::ecc_horizon_s},
    {"queue_wait_p90", Kind::kDuration, &diagnose::Thresholds::queue_wait_p90_s},
    {"congestion_ratio", Kind::kPositive, &diagnose::Thresholds::congestion_ratio},
    {"quota_over", Kind::kPositive, &diagnose::Thresholds::quota_over},
    {"quota_under", Kind::kRatio, &diagnose::Thresholds::quota_under},
    {"latency_factor", Kind::kFactor, &diagnose::Thresholds::latency_factor},
    {"hollow_utilization", Kind::kRatio, &diagnose::Thresholds::hollow_utilization},
    {"hollow_sm_active", Kind::kRatio, &diagnose::Thresholds::hollow_sm_active},
    {"hollow_occupancy", Kind::kRatio, &diagnose::Thresholds::hollow_occupancy},
    {"tensor_idle_sm_active", Kind::kRatio, &diagnose::Thresholds::tensor_idle_sm_active},
    {"tensor_idle_ratio", Kind::kRatio, &diagnose::Thresholds::tensor_idle_ratio},
    {"nvlink_error_rate", Kind::kPositive, &diagnose::Thresholds::nvlink_error_rate},
};

constexpr const char* kThresholdPrefix = "diagnose.thresholds.";

const char* Expected(Kind kind) {
  switch (kind) {
    case Kind::kRatio:
      return "a ratio 0-1";
    case Kind::kPositive:
      return "a number above 0";
    case Kind::kFactor:
      return "a factor above 1";
    case Kind::kCelsius:
      return "degrees Celsius, 0 or more";
    case Kind::kDuration:
      return "a duration such as 30m or 7d";
  }
  return "a number";
}

// Whether `text` is a value of `kind`; *out is set when it is.
bool ParseValue(const std::string& text, Kind kind, double* out) {
  double v = 0;
  if (kind == Kind::kDuration) {
    if (!ParseDurationSeconds(text, &v) || !(v > 0) || !std::isfinite(v)) return false;
    *out = v;
    return true;
  }
  char* end = nullptr;
  v = std::strtod(text.c_str(), &end);
  if (text.empty() || end == text.c_str() || *end != '\0' || !std::isfinite(v)) return false;
  const bool ok = (kind == Kind::kRatio && v >= 0 && v <= 1) ||
                  (kind == Kind::kPositive && v > 0) || (kind == Kind::kFactor && v > 1) ||
                  (kind == Kind::kCelsius && v >= 0);
  if (ok) *out = v;
  return ok;
}

std::string Number(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

// "FILE:LINE: " of the key, or "" when it kept its default.
std::string At(const DiagnoseConfig& c, const std::string& key) {
  auto it = c.origin.find(key);
  return it == c.origin.end() ? "" : it->second + ": ";
}

// The origin of whichever of the two keys a file set last (the one more likely mistyped).
std::string AtEither(const DiagnoseConfig& c, const std::string& a, const std::string& b) {
  const std::string at_b = At(c, b);
  return at_b.empty() ? At(c, a) : at_b;
}

}  // namespace

const std::vector<std::string>& DiagnoseKeys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k = {"diagnose.window", "diagnose.interval"};
    for (const ThresholdKey& t : kThresholds) k.push_back(kThresholdPrefix + std::string(t.name));
    return k;
  }();
  return keys;
}

Status ParseDiagnoseKey(const std::string& file, const std::string& key, const YAML::Node& n,
                        DiagnoseConfig* out) {
  if (!n.IsScalar()) return Error{Where(file, n) + ": " + key + ": expected a single value"};
  const std::string text = n.Scalar();
  if (key == "diagnose.window" || key == "diagnose.interval") {
    const bool window = key == "diagnose.window";
    double v = 0;
    const double least = window ? 60 : 1;
    if (!ParseDurationSeconds(text, &v) || !(v >= least) || !std::isfinite(v))
      return Error{Where(file, n) + ": " + key + ": expected a duration of at least " +
                   (window ? "1m" : "1s") + " such as " + (window ? "1h" : "1m") + ", got '" +
                   Printable(text) + "'"};
    (window ? out->window_s : out->interval_s) = v;
    out->origin[key] = Where(file, n);
    return Status::Ok();
  }
  for (const ThresholdKey& t : kThresholds) {
    if (key != kThresholdPrefix + std::string(t.name)) continue;
    if (!ParseValue(text, t.kind, &(out->thresholds.*t.field)))
      return Error{Where(file, n) + ": " + key + ": expected " + Expected(t.kind) + ", got '" +
                   Printable(text) + "'"};
    out->origin[key] = Where(file, n);
    return Status::Ok();
  }
  return Error{Where(file, n) + ": unknown key '" + Printable(key) +
               "' (see docs/configuration.md)"};
}

std::vector<ThresholdSetting> ThresholdSettings(const diagnose::Thresholds& t) {
  std::vector<ThresholdSetting> out;
  for (const ThresholdKey& k : kThresholds)
    out.push_back({k.name, t.*k.field, k.kind == Kind::kDuration});
  return out;
}

Status ValidateDiagnose(const DiagnoseConfig& c) {
  const diagnose::Thresholds& t = c.thresholds;
  const std::string idle = "diagnose.thresholds.idle_utilization",
                    starved = "diagnose.thresholds.starved_utilization";
  if (!(t.idle_utilization < t.starved_utilization))
    return Error{AtEither(c, idle, starved) + starved + " (" + Number(t.starved_utilization) +
                 ") must be above " + idle + " (" + Number(t.idle_utilization) +
                 "): a data-starved GPU is busier than an idle one"};
  const std::string under = "diagnose.thresholds.quota_under",
                    over = "diagnose.thresholds.quota_over";
  if (!(t.quota_under < t.quota_over))
    return Error{AtEither(c, under, over) + under + " (" + Number(t.quota_under) +
                 ") must be below " + over + " (" + Number(t.quota_over) + ")"};
  if (c.interval_s > c.window_s)
    return Error{AtEither(c, "diagnose.window", "diagnose.interval") + "diagnose.interval (" +
                 FormatDuration(c.interval_s) + ") must not be longer than diagnose.window (" +
                 FormatDuration(c.window_s) + "): time between evaluations would go unseen"};
  return Status::Ok();
}

}  // namespace gw::config
