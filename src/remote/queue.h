// remote/queue.h — one remote-write endpoint's sender: streams what the agent's store holds to
// the endpoint, in time order, from progress kept on disk (docs/remote-write.md, "The queue").
//
//   remote::Queue q(options, db, [&](const auto& batch) { return client->Send(batch); }, log);
//   q.Start();                 // its own thread
//   q.Notify(t_ms);            // after each recorded snapshot: the store holds everything to t_ms
//   q.Stop();                  // bounded by one request's timeout
//
// Progress is the newest timestamp sent per series (series ids are stable in a data directory),
// plus the time up to which every series was read (`cursor`). Appends to a series are strictly
// newer than its newest sample (tsdb rejects the rest), so "everything after last_sent" is exactly
// what is still to send, whether it is in the head, the WAL or a compacted block: the sender reads
// through DB::ReadSeries and never depends on WAL segments surviving a checkpoint. The file is
// rewritten (tmp + fsync + rename) after every request that succeeded or was refused for good, so
// a restart resends at most the one request in flight.
//
// Threading: Start/Notify/Stop/figures from any thread; the sender thread alone reads the store,
// builds requests, sends and writes the progress file (no disk I/O on anyone else's path).
#ifndef GPUWARDEN_REMOTE_QUEUE_H_
#define GPUWARDEN_REMOTE_QUEUE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/log.h"
#include "remote/client.h"
#include "tsdb/db.h"
#include "tsdb/storage.h"

namespace gw::remote {

// A write_relabel_configs rule: keep or drop by a regex over source label values (joined).
struct RelabelRule {
  bool keep = true;
  std::vector<std::string> source_labels;
  std::string separator = ";";
  tsdb::Matcher regex;  // kRegexMatch; fully anchored
};
// Whether `labels` passes every rule, in order (Prometheus' keep/drop semantics).
bool KeepSeries(const std::vector<RelabelRule>& rules, const tsdb::Labels& labels);

enum class Aggregate { kMin, kMax, kAvg, kSum, kCount, kLast };
// "max" -> kMax; false for an unknown name.
bool ParseAggregate(const std::string& name, Aggregate* out);
const char* AggregateName(Aggregate a);

struct QueueOptions {
  std::string name;           // remote_name
  std::string progress_file;  // rewritten atomically; its directory must exist
  size_t capacity = 10000;    // samples read from the store before they are sent
  size_t max_samples_per_send = 2000;
  double batch_send_deadline_s = 5;
  double min_backoff_s = 0.03, max_backoff_s = 5;
  std::vector<RelabelRule> relabel;
  tsdb::Labels external_labels;  // added to every series that lacks them (sorted by name)
  // Downsampling: 0 = every sample. Otherwise one sample per aggregate and window
  // (t - interval, t], t a multiple of the interval, stamped t, labelled aggregate="<name>".
  int64_t downsample_ms = 0;
  std::vector<Aggregate> aggregates;
  // An endpoint without a progress file starts this far before the first Notify's time.
  int64_t start_lookback_ms = 2LL * 3600 * 1000;
  // How far one pass reads ahead while catching up: keeps the sent data in time order across
  // series (receivers such as Prometheus refuse samples far behind their newest).
  int64_t catch_up_slice_ms = 5LL * 60 * 1000;
};

using SendFn = std::function<SendResult(const std::vector<TimeSeries>&)>;

class Queue {
 public:
  // `db` and `log` must outlive the queue.
  Queue(QueueOptions options, tsdb::DB* db, SendFn send, Logger* log);
  ~Queue();
  Queue(const Queue&) = delete;
  Queue& operator=(const Queue&) = delete;

  void Start();
  // The store holds every sample up to `t_ms` (the recorded snapshot's time). Wakes the sender
  // once enough has accumulated (max_samples_per_send) or batch_send_deadline passed.
  void Notify(int64_t t_ms);
  // Stops the thread: a retry wait ends at once, a request in flight ends within its timeout.
  // The progress file is current when it returns. Safe to call twice.
  void Stop();

  struct Figures {
    uint64_t samples_sent = 0;     // accepted by the receiver
    uint64_t samples_failed = 0;   // refused for good (4xx other than 429): never resent
    uint64_t samples_retried = 0;  // in requests that were retried (5xx, 429, no answer)
    // A request whose answer was lost (it went out whole, the connection dropped) and whose
    // resend the receiver then refused as out of order: the lost attempt stored it (a receiver
    // takes or refuses a request whole, and nothing else writes these series), so its samples
    // are counted here, not in samples_failed. docs/remote-write.md.
    uint64_t samples_already_stored = 0;
    uint64_t bytes_sent = 0;       // compressed request bodies accepted
    uint64_t requests_failed = 0;  // requests that did not succeed, retried or not
    uint64_t pending = 0;          // samples read from the store, not yet sent
    uint64_t series_dropped = 0;   // series write_relabel_configs drops
    // Samples of those series, counted as they reach the store (read, never sent), as
    // Prometheus counts prometheus_remote_storage_samples_dropped_total. Refusals are in
    // samples_failed, not here.
    uint64_t samples_dropped = 0;
    uint64_t progress_write_failures = 0;
    int64_t highest_sent_ms = 0;  // newest sample timestamp accepted (0: none)
    int64_t now_ms = 0;           // the newest Notify
    bool caught_up = false;       // the last pass sent everything up to now_ms
    int last_status = 0;          // HTTP status of the last answer (0: none)
  };
  Figures figures() const;

  // One pass over every series up to min(now, cursor + catch_up_slice) (the thread's loop body;
  // tests call it without Start). Returns false when stopped during it.
  bool Pass();

 private:
  struct SeriesState {
    bool known = false, keep = false;
    int64_t last_sent = INT64_MIN;
    std::vector<Label> labels;  // as sent (external labels merged)
  };
  struct Pending {
    tsdb::SeriesRef ref;
    int64_t last;
  };
  void Run();
  void LoadProgress();
  void SaveProgress();
  void RefreshSeries();
  // Adds `samples` of `ref` (in time order) to the batch, sending full batches.
  // Counts the samples of a series write_relabel_configs drops up to `through`, and moves its
  // progress past them (so a restart does not count them again).
  void CountDropped(tsdb::SeriesRef ref, int64_t through);
  bool AddSamples(tsdb::SeriesRef ref, const std::vector<Label>& labels,
                  const std::vector<Sample>& samples, int64_t new_last);
  bool AddDownsampled(tsdb::SeriesRef ref, const std::vector<tsdb::Sample>& samples,
                      int64_t through);
  // Sends the batch until it succeeds or is refused for good; false if stopped first.
  bool Flush();
  // Moves the series of the batch just sent (or refused) past it.
  void ApplyProgress();
  bool WaitStop(double seconds);

  QueueOptions options_;
  tsdb::DB* db_;
  SendFn send_;
  Logger* log_;

  // Sender thread only.
  std::vector<SeriesState> series_;  // by ref
  int64_t start_ms_ = INT64_MIN, cursor_ms_ = INT64_MIN, saved_cursor_ms_ = INT64_MIN;
  bool behind_ = false, progress_moved_ = false;
  std::vector<TimeSeries> batch_;
  std::vector<Pending> batch_progress_;
  size_t batch_samples_ = 0;
  std::vector<tsdb::Sample> read_;
  Backoff backoff_;
  double last_drop_log_ = -1e9, last_retry_log_ = -1e9;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false, wake_ = false;
  int64_t now_ms_ = 0, notified_ms_ = 0;
  Figures figures_;
  std::thread thread_;
};

}  // namespace gw::remote

#endif  // GPUWARDEN_REMOTE_QUEUE_H_
