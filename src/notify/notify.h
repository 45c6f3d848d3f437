// notify/ — sends the alerts the rule engine produces to Alertmanagers (API v2) and to plain
// webhooks, through a per-target queue that survives restarts.
//
// Usage:
//   notify::Options opts;
//   opts.targets = {{notify::Target::kAlertmanager, "http://am:9093"}};
//   opts.queue_dir = "/var/lib/gpuwarden/notify";      // "" keeps the queue in memory only
//   auto notifier = notify::Notifier::Create(opts, &logger);
//   notifier.value()->Send(alerts);  // after every rule evaluation
//   ...
//   notifier.value()->Stop();        // at shutdown; the destructor does it too
//
// What to send (as Prometheus does): every evaluation, all firing alerts with ends_at_ms =
// now + 4 x max(resend interval, evaluation interval), so an Alertmanager that stops hearing from
// us resolves them by itself; and each resolved alert (ends_at_ms = resolution time) for a while
// after it resolved (Prometheus: 15 min). Sending the same state again costs one queue update.
//
// Model. Every target gets every alert (as Prometheus sends to every Alertmanager). Each target
// has its own queue and its own sender thread. The queue holds at most one entry per alert, keyed
// by the alert's label-set fingerprint (the same 64-bit FNV-1a as Alertmanager's): a newer state of
// an alert replaces the queued one, so a firing alert that resolves while its target is down is
// delivered once, as resolved. An entry leaves the queue only when the target accepted it (2xx),
// or when it is refused for good (4xx other than 408/429: logged, counted as failed and dropped).
// Network errors and 5xx keep the batch queued and retry after an exponential backoff
// (backoff_initial_s, doubling, capped at backoff_max_s); each failure logs one line such as
//   "notify: alertmanager http://127.0.0.1:9093: connection refused or unreachable; 12 alerts
//    queued (retry in 4s)"; the first success after failures logs "delivering again".
// A webhook gets every state it is sent, ungrouped and unthrottled (put an Alertmanager in front
// for grouping, silences and repeat intervals). Batches hold at most max_batch alerts, oldest
// first. A queue over max_queue drops its oldest entry (counted in `dropped`).
//
// Alert states. An alert whose ends_at_ms is 0 or in the future is firing; ends_at_ms <= now is
// resolved. Alertmanager receives the times as they are (0 = field omitted, so Alertmanager applies
// its resolve_timeout); the webhook body derives each alert's status from them.
//
// Durability. With queue_dir set, each target's queue is one file
//   <queue_dir>/<kind>-<fnv64(url) in hex>.json
// rewritten atomically (temp file, fsync, rename, fsync of the directory) by the sender thread:
// after every Send(), before it tries the network; after deliveries at most once a second and
// when the queue empties (a crash may resend delivered alerts, never lose queued ones); and once
// more by Stop(). Format:
//   {"format":"gpuwarden-notify-queue","version":1,"target":URL,"kind":"alertmanager|webhook",
//    "alerts":[{"labels":{..},"annotations":{..},"startsAt":ms,"endsAt":ms,"generatorURL":".."}],
//    "crc32":CRC32 of the compact dump of "alerts"}
// Create() reloads it; a file that does not parse, has the wrong shape or a wrong checksum is
// logged, counted in corrupt_files, renamed to *.corrupt and otherwise ignored — never fatal.
// A crash (not Stop) can lose the changes of the last few milliseconds before the thread wrote.
//
// Threading. Send() and stats() are thread-safe and never touch the network or the disk: Send
// merges into the in-memory queues and wakes the senders. Stop() joins the senders (waiting for
// an HTTP request in flight, at most timeout_s) and writes the queues; it is idempotent.
//
// Errors. Create() fails on an invalid target URL or an unusable queue_dir. Everything after is
// reported through the Logger and Stats, never returned.
#ifndef GPUWARDEN_NOTIFY_NOTIFY_H_
#define GPUWARDEN_NOTIFY_NOTIFY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "expo/expo.h"

namespace gw::notify {

using LabelPairs = std::vector<std::pair<std::string, std::string>>;

struct Alert {
  LabelPairs labels;         // identity; Send() sorts them by name
  LabelPairs annotations;    // description, summary, ...
  int64_t starts_at_ms = 0;  // 0: not sent
  int64_t ends_at_ms = 0;    // 0: not sent (firing); <= now: resolved
  std::string generator_url;
};

// A rule engine's alert (rules::Alert: labels and annotations of {name, value}, starts_at_ms,
// ends_at_ms, generator_url) as the notifier takes it. A template so notify/ needs no rules/.
template <typename RuleAlert>
Alert FromRuleAlert(RuleAlert a) {
  Alert n;
  for (auto& l : a.labels) n.labels.emplace_back(std::move(l.name), std::move(l.value));
  for (auto& l : a.annotations) n.annotations.emplace_back(std::move(l.name), std::move(l.value));
  n.starts_at_ms = a.starts_at_ms;
  n.ends_at_ms = a.ends_at_ms;
  n.generator_url = std::move(a.generator_url);
  return n;
}

struct Target {
  enum Kind { kAlertmanager, kWebhook };
  Kind kind = kAlertmanager;
  // kAlertmanager: the base URL ("http://am:9093" or with a path prefix "http://h/am");
  // alerts go to <url>/api/v2/alerts. kWebhook: the full URL the body is POSTed to.
  std::string url;
  std::string basic_auth_user, basic_auth_password;  // used when the user is non-empty
  std::string bearer_token;                          // "Authorization: Bearer ..." when non-empty
  std::string ca_file;                               // https: CA bundle; "" = system CAs
  bool insecure_skip_verify = false;                 // https: do not verify the certificate
  double timeout_s = 0;                              // 0: Options::timeout_s
  std::string external_url;                          // webhook: the body's "externalURL"
};

struct Options {
  std::vector<Target> targets;
  std::string queue_dir;      // durable queue files; "" = memory only
  double timeout_s = 10;      // per HTTP request (connect + read)
  int64_t max_queue = 10000;  // entries per target
  int max_batch = 64;         // alerts per request
  double backoff_initial_s = 1;
  double backoff_max_s = 60;
  // Wall time for "resolved" and stats; tests substitute a ManualClock. Must outlive the
  // Notifier.
  const Clock* clock = &SystemClock();
};

class Notifier {
 public:
  struct TargetStats {
    std::string name;  // "alertmanager http://..." or "webhook http://..."
    std::string url;
    int64_t sent = 0;     // alerts accepted by the target
    int64_t failed = 0;   // alerts in failed attempts (one alert failing twice counts twice)
    int64_t dropped = 0;  // alerts removed unsent (queue full or refused with 4xx)
    int64_t queue_length = 0;
    int64_t consecutive_failures = 0;
    std::string last_error;  // "" after a success
    int64_t last_success_ms = 0;
    double latency_sum_s = 0;  // over successful and failed requests
    int64_t latency_count = 0;
  };
  struct Stats {
    std::vector<TargetStats> targets;  // in Options::targets order
    int64_t corrupt_files = 0;         // queue files found unreadable at Create()
  };

  static Expected<std::unique_ptr<Notifier>> Create(Options options, Logger* logger);
  ~Notifier();
  Notifier(const Notifier&) = delete;
  Notifier& operator=(const Notifier&) = delete;

  // Queues every alert for every target (latest state per fingerprint wins). Never blocks on
  // the network or the disk. After Stop() it does nothing.
  void Send(std::vector<Alert> alerts);
  // Stops the senders and writes the queues to queue_dir. Idempotent.
  void Stop();
  Stats stats() const;

  class TargetQueue;  // implementation detail (queue.cpp)

 private:
  Notifier() = default;
  Options options_;  // the queues keep a reference
  std::vector<std::unique_ptr<TargetQueue>> queues_;
  int64_t corrupt_files_ = 0;
};

// Writes the notifier's own families into `writer` (any format; whoever exposes them calls this,
// nobody re-parses text): gpuwarden_notifications_sent_total{target},
// gpuwarden_notifications_failed_total{target}, gpuwarden_notifications_dropped_total,
// gpuwarden_notification_queue_length{target}, gpuwarden_notification_queue_capacity,
// gpuwarden_notification_latency_seconds{target} (summary: _sum and _count),
// gpuwarden_notification_queue_corrupt_files_total.
void WriteMetrics(const Notifier::Stats& stats, int64_t max_queue, expo::Writer* writer);
// The same families appended to `out` in Prometheus text 0.0.4.
void AppendMetrics(const Notifier::Stats& stats, int64_t max_queue, std::string* out);

// ---- Encoding, exposed for tests and for whoever needs the same wire format. ----

// "2026-11-29T18:56:44.123Z" (RFC 3339, UTC, milliseconds).
std::string FormatRfc3339Ms(int64_t ms);
// Alertmanager's label-set fingerprint: FNV-1a 64 over name,0xff,value,0xff for names in sorted
// order; as Alertmanager prints it, %016x.
uint64_t Fingerprint(const LabelPairs& labels);
std::string FingerprintHex(uint64_t fp);
// The body of POST /api/v2/alerts: a JSON array of postable alerts.
std::string EncodeAlertmanagerV2(const std::vector<Alert>& alerts);
// Alertmanager's webhook body (version "4"); now_ms decides firing/resolved.
std::string EncodeWebhook(const std::vector<Alert>& alerts, const std::string& external_url,
                          int64_t now_ms);
// Delay before retry number `failures` (1 = after the first failure).
double BackoffSeconds(int64_t failures, double initial_s, double max_s);

}  // namespace gw::notify

#endif  // GPUWARDEN_NOTIFY_NOTIFY_H_
