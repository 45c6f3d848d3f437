#include "collect/health.h"

#include <algorithm>

#include "nvml/library.h"

namespace gw::collect {

namespace {

bool Positive(double v) {
  return !IsAbsent(v) && v > 0;
}

std::string Count(double v) {
  return std::to_string(static_cast<long long>(v));
}

}  // namespace

std::string_view SeverityName(Severity s) {
  switch (s) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kCritical:
      return "critical";
  }
  return "info";
}

std::vector<std::string> ThrottleReasons(const GpuSnapshot& gpu) {
  std::vector<std::string> out;
  for (size_t r = 0; r < kClockEventReasons.size(); ++r) {
    if (!kClockEventReasons[r].is_throttle) continue;
    if (gpu.value(ClockEventActiveSlot(r)) == 1)
      out.emplace_back(kClockEventReasons[r].description);
  }
  return out;
}

std::vector<HealthProblem> HealthProblems(const GpuSnapshot& gpu) {
  std::vector<HealthProblem> out;
  if (gpu.lost) {
    out.push_back({Severity::kCritical, "GPU is lost (GPU_IS_LOST): it fell off the bus",
                   std::string(XidAction(79))});
  }
  double dbe = gpu.value(Slot::kEccUncorrectedVolatile);
  if (Positive(dbe))
    out.push_back({Severity::kCritical,
                   Count(dbe) + " uncorrectable ECC error(s) since the last reset",
                   std::string(XidAction(48))});
  if (gpu.value(Slot::kRemappedFailure) == 1)
    out.push_back({Severity::kCritical, "a memory row remap failed", std::string(XidAction(64))});
  if (gpu.value(Slot::kRemappedPending) == 1)
    out.push_back(
        {Severity::kWarning, "a memory row remap is pending", "reset the GPU when convenient"});
  if (gpu.value(Slot::kRetiredPending) == 1)
    out.push_back(
        {Severity::kWarning, "a page retirement is pending", "reset the GPU when convenient"});
  double retired = 0;
  for (Slot s : {Slot::kRetiredSingleBit, Slot::kRetiredDoubleBit})
    if (Positive(gpu.value(s))) retired += gpu.value(s);
  if (retired > 0) out.push_back({Severity::kInfo, Count(retired) + " memory page(s) retired", ""});
  double unc_rows = gpu.value(Slot::kRemappedUncorrectable);
  double cor_rows = gpu.value(Slot::kRemappedCorrectable);
  if (Positive(unc_rows) || Positive(cor_rows))
    out.push_back({Severity::kInfo,
                   Count(Positive(unc_rows) ? unc_rows : 0) +
                       " row(s) remapped for uncorrectable and " +
                       Count(Positive(cor_rows) ? cor_rows : 0) + " for correctable errors",
                   ""});
  double sbe = gpu.value(Slot::kEccCorrectedVolatile);
  if (Positive(sbe))
    out.push_back({Severity::kInfo, Count(sbe) + " corrected ECC error(s) since the last reset",
                   "watch the trend; one error is no reason to replace a GPU"});
  for (const auto& [xid, count] : gpu.xid_counts) {
    std::string meaning(XidMeaning(xid));
    bool application = xid == 13 || xid == 31 || xid == 43 || xid == 45 || xid == 68;
    out.push_back({application ? Severity::kWarning : Severity::kCritical,
                   "XID " + std::to_string(xid) + (meaning.empty() ? "" : " (" + meaning + ")") +
                       " x" + std::to_string(count),
                   std::string(XidAction(xid))});
  }
  std::string down;
  for (const NvLinkSnapshot& l : gpu.nvlinks)
    if (l.up == 0) down += (down.empty() ? "" : ", ") + std::to_string(l.link);
  if (!down.empty())
    out.push_back({Severity::kCritical, "NVLink link(s) down: " + down,
                   "check the NVLink cabling or NVSwitch; reset the GPU; contact support"});
  const double mig_now = gpu.value(Slot::kMigEnabledCurrent);
  const double mig_next = gpu.value(Slot::kMigEnabledPending);
  if (!IsAbsent(mig_now) && !IsAbsent(mig_next) && mig_now != mig_next)
    out.push_back(
        {Severity::kInfo,
         std::string("MIG mode turns ") + (mig_next == 1 ? "on" : "off") + " at the next GPU reset",
         ""});
  std::vector<std::string> throttle = ThrottleReasons(gpu);
  if (!throttle.empty()) {
    std::string what = "clocks held down: ";
    for (size_t i = 0; i < throttle.size(); ++i) what += (i ? ", " : "") + throttle[i];
    bool thermal = gpu.value(Slot::kEventHwThermal) == 1 || gpu.value(Slot::kEventSwThermal) == 1;
    out.push_back({thermal ? Severity::kWarning : Severity::kInfo, what,
                   thermal ? "check cooling (fans, airflow, inlet temperature)" : ""});
  }
  for (size_t c = 0; c < kCallCount; ++c)
    if (gpu.hung[c])
      out.push_back({Severity::kWarning,
                     std::string(CallName(static_cast<Call>(c))) + " hung; it is being skipped",
                     "check the driver (dmesg); a GPU reset may be needed"});
  if (!gpu.lost && gpu.last_error_code != 0 && gpu.value(Slot::kUp) == 0)
    out.push_back({Severity::kCritical,
                   std::string("every NVML read failed (last error ") +
                       nvml::ReturnName(gpu.last_error_code) + ")",
                   "check the driver (dmesg)"});
  std::stable_sort(out.begin(), out.end(), [](const HealthProblem& a, const HealthProblem& b) {
    return static_cast<int>(a.severity) > static_cast<int>(b.severity);
  });
  return out;
}

}  // namespace gw::collect
