#include "base/clock.h"

namespace gw {
namespace {

class RealTimeClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::system_clock::now(); }
};

}  // namespace

const Clock& SystemClock() {
  static const RealTimeClock clock;
  return clock;
}

}  // namespace gw
