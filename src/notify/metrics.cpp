// The notifier's own metrics, written through the one family writer (expo/expo.h).
#include "notify/notify.h"

namespace gw::notify {

void WriteMetrics(const Notifier::Stats& stats, int64_t max_queue, expo::Writer* w) {
  using expo::Type;
  using T = Notifier::TargetStats;
  auto per_target = [&](std::string_view name, Type type, std::string_view help,
                        double (*value)(const T&)) {
    w->Family(name, type, help);
    for (const T& t : stats.targets) w->Sample().Label("target", t.url).Value(value(t));
  };
  per_target("gpuwarden_notifications_sent_total", Type::kCounter,
             "Alerts accepted by a notification target.",
             [](const T& t) { return static_cast<double>(t.sent); });
  per_target("gpuwarden_notifications_failed_total", Type::kCounter,
             "Alerts in failed delivery attempts (each retry counts again).",
             [](const T& t) { return static_cast<double>(t.failed); });
  int64_t dropped = 0;
  for (const T& t : stats.targets) dropped += t.dropped;
  w->Family("gpuwarden_notifications_dropped_total", Type::kCounter,
            "Alerts removed unsent: queue full or refused by the target.");
  w->Sample(static_cast<double>(dropped));
  per_target("gpuwarden_notification_queue_length", Type::kGauge,
             "Alerts waiting for delivery to a target.",
             [](const T& t) { return static_cast<double>(t.queue_length); });
  w->Family("gpuwarden_notification_queue_capacity", Type::kGauge,
            "Most alerts a target's queue holds.");
  w->Sample(static_cast<double>(max_queue));
  w->Family("gpuwarden_notification_latency_seconds", Type::kSummary,
            "Duration of delivery requests to a target.", "seconds");
  for (const T& t : stats.targets) {
    w->Sample("_sum").Label("target", t.url).Value(t.latency_sum_s);
    w->Sample("_count").Label("target", t.url).Value(static_cast<double>(t.latency_count));
  }
  w->Family("gpuwarden_notification_queue_corrupt_files_total", Type::kCounter,
            "Queue files found unreadable at start and set aside.");
  w->Sample(static_cast<double>(stats.corrupt_files));
}

void AppendMetrics(const Notifier::Stats& stats, int64_t max_queue, std::string* out) {
  expo::Writer writer(expo::Format::kText, out);
  WriteMetrics(stats, max_queue, &writer);
}

}  // namespace gw::notify
