// Test support for tests/diagnose: diagnosing a store and picking findings out of the result.
#ifndef GPUWARDEN_TESTS_DIAGNOSE_FINDINGS_UTIL_H_
#define GPUWARDEN_TESTS_DIAGNOSE_FINDINGS_UTIL_H_

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <tuple>

#include "diagnose/diagnose.h"

namespace gw::diagnose::testutil {

// Diagnoses [time_ms - window_s, time_ms] of `querier` with `thresholds`; a failure or a check
// that could not run fails the test.
inline Diagnosis DiagnoseStore(tsdb::Querier& querier, int64_t time_ms, double window_s,
                               const Thresholds& thresholds = {}) {
  promql::Engine engine;
  Options options;
  options.time_ms = time_ms;
  options.window_s = window_s;
  options.thresholds = thresholds;
  auto d = Diagnose(querier, engine, options);
  EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.error().message);
  if (!d.ok()) return {};
  EXPECT_TRUE(d->errors.empty()) << d->errors.front();
  return *d;
}

// (kind, cause, gpu) of every finding.
using Key = std::tuple<std::string, std::string, std::string>;
inline std::set<Key> Keys(const Diagnosis& d) {
  std::set<Key> keys;
  for (const Finding& f : d.findings) keys.insert({f.kind, f.cause, f.subject.gpu});
  return keys;
}

inline const Finding* Find(const Diagnosis& d, const std::string& kind, const std::string& cause,
                           const std::string& gpu) {
  for (const Finding& f : d.findings)
    if (f.kind == kind && f.cause == cause && f.subject.gpu == gpu) return &f;
  return nullptr;
}

// The value of the first evidence whose description starts with `what_prefix`, NaN if none.
inline double EvidenceValue(const Finding& f, const std::string& what_prefix) {
  for (const Evidence& e : f.evidence)
    if (e.what.rfind(what_prefix, 0) == 0) return e.value;
  return std::nan("");
}

}  // namespace gw::diagnose::testutil

#endif  // GPUWARDEN_TESTS_DIAGNOSE_FINDINGS_UTIL_H_
