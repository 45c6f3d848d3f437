// A small leveled logger: one line per event, "2026-11-29T18:56:44.123Z level=warn msg" on
// stderr. Thread-safe. Passed around explicitly where tests need to see what was said; the
// process-wide instance exists for the CLI's own messages. The time stamp is UTC, read from a
// base/clock.h Clock (the system clock unless a test passes its own).
#ifndef GPUWARDEN_BASE_LOG_H_
#define GPUWARDEN_BASE_LOG_H_

#include <functional>
#include <mutex>
#include <string>
#include <string_view>

#include "base/clock.h"

namespace gw {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

// Parses "debug|info|warn|error"; false if unknown.
bool ParseLogLevel(std::string_view text, LogLevel* level);

class Logger {
 public:
  using Sink = std::function<void(LogLevel, const std::string& line)>;

  // Writes to stderr at `min_level` and above.
  explicit Logger(LogLevel min_level = LogLevel::kInfo);
  // Sends every line at or above `min_level` to `sink` instead (tests capture lines this way),
  // stamped with `clock`'s time (it must outlive the logger).
  Logger(LogLevel min_level, Sink sink, const Clock* clock = &SystemClock());

  void Log(LogLevel level, std::string_view message);
  void Debug(std::string_view m) { Log(LogLevel::kDebug, m); }
  void Info(std::string_view m) { Log(LogLevel::kInfo, m); }
  void Warn(std::string_view m) { Log(LogLevel::kWarn, m); }
  void Error(std::string_view m) { Log(LogLevel::kError, m); }
  void set_level(LogLevel level) { min_level_ = level; }

 private:
  LogLevel min_level_;
  Sink sink_;
  const Clock* clock_ = &SystemClock();
  std::mutex mu_;
};

}  // namespace gw

#endif  // GPUWARDEN_BASE_LOG_H_
