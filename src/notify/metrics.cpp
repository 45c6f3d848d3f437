// The notifier's own metrics in Prometheus text exposition format.
#include <cstdio>

#include "notify/notify.h"

namespace gw::notify {
namespace {

std::string EscapeLabelValue(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

void Header(const char* name, const char* type, const char* help, std::string* out) {
  *out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void PerTarget(const Notifier::Stats& stats, const std::string& name,
               double (*value)(const Notifier::TargetStats&), std::string* out) {
  for (const auto& t : stats.targets) {
    *out += name + "{target=\"" + EscapeLabelValue(t.url) + "\"} " + Number(value(t)) + "\n";
  }
}

}  // namespace

void AppendMetrics(const Notifier::Stats& stats, int64_t max_queue, std::string* out) {
  using T = Notifier::TargetStats;
  Header("gpuwarden_notifications_sent_total", "counter",
         "Alerts accepted by a notification target.", out);
  PerTarget(
      stats, "gpuwarden_notifications_sent_total",
      [](const T& t) { return static_cast<double>(t.sent); }, out);
  Header("gpuwarden_notifications_failed_total", "counter",
         "Alerts in failed delivery attempts (each retry counts again).", out);
  PerTarget(
      stats, "gpuwarden_notifications_failed_total",
      [](const T& t) { return static_cast<double>(t.failed); }, out);
  int64_t dropped = 0;
  for (const auto& t : stats.targets) dropped += t.dropped;
  Header("gpuwarden_notifications_dropped_total", "counter",
         "Alerts removed unsent: queue full or refused by the target.", out);
  *out += "gpuwarden_notifications_dropped_total " + Number(static_cast<double>(dropped)) + "\n";
  Header("gpuwarden_notification_queue_length", "gauge", "Alerts waiting for delivery to a target.",
         out);
  PerTarget(
      stats, "gpuwarden_notification_queue_length",
      [](const T& t) { return static_cast<double>(t.queue_length); }, out);
  Header("gpuwarden_notification_queue_capacity", "gauge", "Most alerts a target's queue holds.",
         out);
  *out += "gpuwarden_notification_queue_capacity " + Number(static_cast<double>(max_queue)) + "\n";
  Header("gpuwarden_notification_latency_seconds", "summary",
         "Duration of delivery requests to a target.", out);
  for (const auto& t : stats.targets) {
    std::string label = "{target=\"" + EscapeLabelValue(t.url) + "\"} ";
    *out += "gpuwarden_notification_latency_seconds_sum" + label + Number(t.latency_sum_s) + "\n";
    *out += "gpuwarden_notification_latency_seconds_count" + label +
            Number(static_cast<double>(t.latency_count)) + "\n";
  }
  Header("gpuwarden_notification_queue_corrupt_files_total", "counter",
         "Queue files found unreadable at start and set aside.", out);
  *out += "gpuwarden_notification_queue_corrupt_files_total " +
          Number(static_cast<double>(stats.corrupt_files)) + "\n";
}

}  // namespace gw::notify
