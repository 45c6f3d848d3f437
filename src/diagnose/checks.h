// diagnose/checks.h — the checks behind findings, as data: condition and evidence queries
// (queries.cpp holds every PromQL text of the module, in one table) and how each kind is
// described (describe.cpp). Internal to diagnose/ and report/.
//
// Query templates use ${name} placeholders, replaced before evaluation:
//   ${w}     the sub-window of a condition (max(5m, 2 × step)), e.g. "5m"
//   ${long}  the trend window (the diagnosis window, at least ${w}, at most 6h)
//   ${sel}   the subject's label matchers, e.g. gpu="0",uuid="GPU-…" (evidence queries only)
//   ${cause} the raw value of the check's cause label for this subject (evidence queries only)
//   ${<threshold>} a Thresholds field by its name in docs/diagnose.md, e.g. ${busy_utilization}
#ifndef GPUWARDEN_DIAGNOSE_CHECKS_H_
#define GPUWARDEN_DIAGNOSE_CHECKS_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "diagnose/diagnose.h"

namespace gw::diagnose {

// How the points of a range result are summarized into one evidence value.
enum class Stat { kAvg, kMax, kMin, kLast };

struct EvidenceSpec {
  const char* key;   // for describe functions: "util", "limit", ...
  const char* what;  // for people
  const char* unit;
  Stat stat;
  const char* query;  // template
};

// Values of a finding's evidence by key (what describe functions read).
using EvidenceValues = std::map<std::string, double, std::less<>>;

struct Check {
  const char* kind;
  const char* cause;        // fixed cause, or nullptr: the value of `cause_label`
  const char* cause_label;  // label of the condition's result naming the cause, or nullptr
  Layer layer;
  std::vector<std::string> subject_labels;  // labels identifying the subject in the result
  const char* condition;                    // template; an instant vector
  EvidenceSpec condition_evidence;          // what the condition's value is (query: condition)
  std::vector<EvidenceSpec> evidence;       // supporting queries (templates with ${sel})
  double min_held_s;                        // raise when it held at least
  double min_held_fraction;                 //   min(min_held_s, fraction × window)
  // Sets severity, title and action from the cause and the evidence values.
  void (*describe)(Finding* finding, const EvidenceValues& values, const Thresholds& t);
  // The held time is the longest unbroken run of steps, not their sum: for conditions that
  // describe a steady state (a starving job), so that a recurring phase does not add up.
  bool contiguous = false;
};

// Every generic check, in the order findings are built.
const std::vector<Check>& Checks();

// The business checks (business.cpp) and the report read these.
namespace queries {
extern const char* const kLatencyP95;   // per target, over ${w}
extern const char* const kErrorRatio;   // per target, over ${w}
extern const char* const kServiceGpus;  // gpu_service_info over ${long}
extern const char* const kAllocations;  // gpu_allocation_info over the window
}  // namespace queries

// Describe functions (describe.cpp).
void DescribeThrottled(Finding* f, const EvidenceValues& v, const Thresholds& t);
void DescribeMemoryBound(Finding* f, const EvidenceValues& v, const Thresholds& t);
void DescribeMemoryPressure(Finding* f, const EvidenceValues& v, const Thresholds& t);
void DescribeDataStarved(Finding* f, const EvidenceValues& v, const Thresholds& t);
void DescribeIdleAllocation(Finding* f, const EvidenceValues& v, const Thresholds& t);
void DescribeEcc(Finding* f, const EvidenceValues& v, const Thresholds& t);
void DescribeNearThermal(Finding* f, const EvidenceValues& v, const Thresholds& t);
void DescribeQueueCongestion(Finding* f, const EvidenceValues& v, const Thresholds& t);
void DescribeQuotaDrift(Finding* f, const EvidenceValues& v, const Thresholds& t);
void DescribeNvLink(Finding* f, const EvidenceValues& v, const Thresholds& t);
void DescribeHollow(Finding* f, const EvidenceValues& v, const Thresholds& t);
void DescribeTensorIdle(Finding* f, const EvidenceValues& v, const Thresholds& t);

// "${name}" → vars[name]; unknown names are left as they are.
std::string Substitute(std::string_view text, const std::map<std::string, std::string>& vars);
// The threshold values by name, formatted for PromQL (for Substitute).
std::map<std::string, std::string> ThresholdVars(const Thresholds& t);
// A duration in PromQL syntax ("5m", "90s").
std::string PromDuration(double seconds);
// Human-friendly value with its unit ("87 °C", "71.2 GiB", "43 %", "2m30s").
std::string FormatValue(double value, std::string_view unit);

}  // namespace gw::diagnose

#endif  // GPUWARDEN_DIAGNOSE_CHECKS_H_
