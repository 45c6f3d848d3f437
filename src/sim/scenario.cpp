#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>

#include "nvml/abi.h"
#include "sim/scenario.h"

namespace gw::sim {

bool ParseDurationUs(std::string_view text, VirtualUs* out) {
  struct Unit {
    std::string_view name;
    double us;
  };
  constexpr Unit kUnits[] = {{"d", 86400e6}, {"h", 3600e6}, {"m", 60e6}, {"s", 1e6}, {"ms", 1e3}};
  if (text.empty()) return false;
  double total = 0;
  std::size_t i = 0;
  int last_unit = -1;
  while (i < text.size()) {
    const std::size_t start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
      ++i;
    if (i == start) return false;
    const std::string digits(text.substr(start, i - start));
    char* end = nullptr;
    const double number = std::strtod(digits.c_str(), &end);
    if (end != digits.c_str() + digits.size()) return false;  // such as 1.2.3 or a lone dot
    const std::size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    const std::string_view unit = text.substr(unit_start, i - unit_start);
    if (unit.empty()) {  // a bare number means seconds, and only on its own
      if (start != 0 || i != text.size()) return false;
      total = number * 1e6;
      break;
    }
    int found = -1;
    for (int u = 0; u < static_cast<int>(std::size(kUnits)); ++u)
      if (unit == kUnits[u].name) found = u;
    if (found <= last_unit) return false;  // unknown, repeated or out of order
    last_unit = found;
    total += number * kUnits[found].us;
  }
  if (!std::isfinite(total) || total > 1e17) return false;
  *out = static_cast<VirtualUs>(std::llround(total));
  return true;
}

bool IsKnownNvmlFunction(std::string_view name) {
#define GW_SIM_FUNCTION_NAME(function, params) #function,
  static constexpr std::string_view kNames[] = {GW_NVML_FUNCTIONS(GW_SIM_FUNCTION_NAME)};
#undef GW_SIM_FUNCTION_NAME
  for (std::string_view known : kNames)
    if (known == name) return true;
  return false;
}

}  // namespace gw::sim

namespace gw::sim {

const MigLayout* MigLayoutAt(const GpuSpec& gpu, VirtualUs t_us) {
  const MigLayout* found = nullptr;
  for (const MigLayout& layout : gpu.mig) {
    if (layout.at_us > t_us) break;
    found = &layout;
  }
  return found;
}

int MigInstanceOf(const MigLayout& layout, const ProcessSpec& process) {
  const auto n = static_cast<int>(layout.instances.size());
  if (process.mig_index)
    return *process.mig_index < layout.instances.size() ? static_cast<int>(*process.mig_index) : -1;
  for (int i = 0; i < n; ++i) {
    const MigInstanceSpec& instance = layout.instances[static_cast<std::size_t>(i)];
    if (!process.mig_profile.empty() && instance.profile->name == process.mig_profile) return i;
    if (!process.mig_uuid.empty() && instance.uuid == process.mig_uuid) return i;
  }
  return -1;
}

}  // namespace gw::sim
