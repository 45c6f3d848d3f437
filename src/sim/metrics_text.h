// sim/metrics_text.h — numbers in the Prometheus text pages of the simulator's stand-in programs
// (gw-inference-sim, gw-training-sim).
#ifndef GPUWARDEN_SIM_METRICS_TEXT_H_
#define GPUWARDEN_SIM_METRICS_TEXT_H_

#include <charconv>
#include <string>

namespace gw::sim {

// Appends the shortest text that reads back as `v` ("0.005", "12", "1e+21").
inline void AppendNumber(std::string* out, double v) {
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  out->append(buffer, ec == std::errc() ? end : buffer);
}

}  // namespace gw::sim

#endif  // GPUWARDEN_SIM_METRICS_TEXT_H_
