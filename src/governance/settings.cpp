#include "governance/settings.h"

#include <algorithm>
#include <cctype>

namespace gw::governance {

const char* ReclaimActionName(ReclaimAction action) {
  switch (action) {
    case ReclaimAction::kDryRun:
      return "dry-run";
    case ReclaimAction::kRequeue:
      return "requeue";
    case ReclaimAction::kCancel:
      return "cancel";
    case ReclaimAction::kCommand:
      return "command";
  }
  return "dry-run";
}

const char* MemoryFilterName(MemoryFilter filter) {
  switch (filter) {
    case MemoryFilter::kAny:
      return "any";
    case MemoryFilter::kHeld:
      return "held";
    case MemoryFilter::kFree:
      return "free";
  }
  return "any";
}

std::string ReclaimPolicy::Describe() const {
  return "partition=" + (partition.empty() ? std::string("*") : partition) +
         ",team=" + (team.empty() ? std::string("*") : team);
}

namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

double PriceSettings::GpuHourPrice(const std::string& model) const {
  const std::string name = Lower(model);
  size_t best_len = 0;
  double best = default_gpu_hour;
  for (const auto& [key, price] : gpu_hour_by_model) {
    const std::string k = Lower(key);
    if (k.empty() || k.size() <= best_len) continue;
    if (name.find(k) != std::string::npos) {
      best_len = k.size();
      best = price;
    }
  }
  return best;
}

bool Settings::MemoryHeld(bool has_processes, double used_bytes, double total_bytes) const {
  return has_processes || (total_bytes > 0 && used_bytes >= memory_held_ratio * total_bytes);
}

}  // namespace gw::governance
