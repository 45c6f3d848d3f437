#include "tsdb/failure_log.h"

#include <cmath>

namespace gw::tsdb {
namespace {

std::string Seconds(std::chrono::steady_clock::duration d) {
  return std::to_string(std::llround(std::chrono::duration<double>(d).count())) + "s";
}

}  // namespace

FailureLog::FailureLog(std::string what, std::string first_note, double interval_s, Logger* logger)
    : what_(std::move(what)),
      first_note_(std::move(first_note)),
      interval_(std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(interval_s > 0 ? interval_s : 0))),
      logger_(logger) {}

void FailureLog::Failed(const std::string& error, Clock::time_point now) {
  failures_.fetch_add(1, std::memory_order_relaxed);
  last_error_ = error;
  if (!failing()) {
    failing_ = true;
    episode_start_ = last_summary_ = now;
    episode_failures_ = 1;
    since_summary_ = 0;
    if (logger_)
      logger_->Error(what_ + " failed: " + error + (first_note_.empty() ? "" : "; " + first_note_) +
                     "; while it keeps failing, one summary every " + Seconds(interval_));
    return;
  }
  ++episode_failures_;
  ++since_summary_;
  if (now - last_summary_ >= interval_) {
    if (logger_)
      logger_->Warn(what_ + " still failing: " + std::to_string(since_summary_) +
                    " more failures in the last " + Seconds(now - last_summary_) + ", " +
                    std::to_string(episode_failures_) + " since it started " +
                    Seconds(now - episode_start_) + " ago; last error: " + error);
    last_summary_ = now;
    since_summary_ = 0;
  }
}

void FailureLog::Succeeded(Clock::time_point now) {
  if (!failing()) return;
  failing_ = false;
  if (logger_)
    logger_->Info(what_ + " works again after " + std::to_string(episode_failures_) +
                  " failures over " + Seconds(now - episode_start_) +
                  " (last error: " + last_error_ + ")");
}

}  // namespace gw::tsdb
