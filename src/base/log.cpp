#include "base/log.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace gw {

namespace {
const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}
}  // namespace

bool ParseLogLevel(std::string_view text, LogLevel* level) {
  for (LogLevel l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    if (text == LevelName(l)) {
      *level = l;
      return true;
    }
  }
  return false;
}

Logger::Logger(LogLevel min_level) : min_level_(min_level) {}
Logger::Logger(LogLevel min_level, Sink sink, const Clock* clock)
    : min_level_(min_level), sink_(std::move(sink)), clock_(clock) {}

void Logger::Log(LogLevel level, std::string_view message) {
  if (level < min_level_) return;
  const Clock::TimePoint now = clock_->Now();
  std::time_t secs = std::chrono::system_clock::to_time_t(now);
  int ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char stamp[96];
  std::snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
  std::string line = std::string(stamp) + " level=" + LevelName(level) + " " + std::string(message);
  std::lock_guard<std::mutex> lock(mu_);
  if (sink_) {
    sink_(level, line);
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

}  // namespace gw
