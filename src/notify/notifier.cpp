// The Notifier: one queue and one sender thread per target.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>

#include "http/client.h"
#include "notify/notify.h"
#include "notify/queue.h"

namespace gw::notify {
namespace {

std::string FormatSeconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return std::string(buf) + "s";
}

// Splits "http://host:port/prefix" into "http://host:port" and "/prefix".
bool SplitUrl(const std::string& url, std::string* base, std::string* path) {
  size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return false;
  std::string scheme = url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") return false;
  size_t path_start = url.find('/', scheme_end + 3);
  *base = url.substr(0, path_start);
  *path = path_start == std::string::npos ? "" : url.substr(path_start);
  return base->size() > scheme_end + 3;
}

}  // namespace

class Notifier::TargetQueue {
 public:
  TargetQueue(Target target, const Options& options, Logger* logger)
      : target_(std::move(target)),
        options_(options),
        logger_(logger),
        queue_(options.max_queue),
        name_(std::string(KindName(target_.kind)) + " " + target_.url) {
    SplitUrl(target_.url, &base_, &path_);
    if (target_.kind == Target::kAlertmanager) {
      while (!path_.empty() && path_.back() == '/') path_.pop_back();
      path_ += "/api/v2/alerts";
    } else if (path_.empty()) {
      path_ = "/";
    }
    if (!options_.queue_dir.empty()) file_path_ = QueueFilePath(options_.queue_dir, target_);
  }
  ~TargetQueue() { Stop(); }

  // Reloads the queue file; false (after logging) when it was corrupt.
  bool Load() {
    if (file_path_.empty() || !std::filesystem::exists(file_path_)) return true;
    auto file = ReadQueueFile(file_path_);
    if (!file.ok()) {
      logger_->Error("notify: " + file.error().message + "; moved aside to .corrupt, queue for " +
                     name_ + " starts empty");
      std::error_code ec;
      std::filesystem::rename(file_path_, file_path_ + ".corrupt", ec);
      return false;
    }
    std::lock_guard<std::mutex> lock(mu_);
    for (Alert& a : file->alerts) stats_.dropped += queue_.Put(std::move(a));
    stats_.queue_length = static_cast<int64_t>(queue_.size());
    if (!queue_.empty()) {
      logger_->Info("notify: " + name_ + ": " + std::to_string(queue_.size()) +
                    " alerts reloaded from " + file_path_);
    }
    return true;
  }

  void Start() {
    thread_ = std::thread([this] { Run(); });
  }

  void Put(const std::vector<Alert>& alerts) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      for (const Alert& a : alerts) stats_.dropped += queue_.Put(a);
      stats_.queue_length = static_cast<int64_t>(queue_.size());
      dirty_ = true;
    }
    cv_.notify_one();
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_ && !thread_.joinable()) return;
      stopping_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
    {
      std::lock_guard<std::mutex> lock(mu_);
      dirty_ = dirty_ || removals_unsaved_;
    }
    PersistIfDirty();
  }

  TargetStats stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    TargetStats s = stats_;
    s.name = name_;
    s.url = target_.url;
    return s;
  }

 private:
  using Clock = std::chrono::steady_clock;

  int64_t NowMs() const { return options_.clock->NowMs(); }

  void PersistIfDirty() {
    QueueFile file;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!dirty_) return;
      dirty_ = false;
      removals_unsaved_ = false;
      last_persist_ = Clock::now();
      if (file_path_.empty()) return;
      file.kind = KindName(target_.kind);
      file.target_url = target_.url;
      file.alerts = queue_.Snapshot();
    }
    Status st = WriteQueueFile(file_path_, file);
    if (!st.ok()) {
      logger_->Error("notify: " + name_ + ": cannot save queue: " + st.message());
      std::lock_guard<std::mutex> lock(mu_);
      dirty_ = true;  // try again on the next round
    }
  }

  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      auto wake = [&] {
        return stopping_ || dirty_ || (!queue_.empty() && Clock::now() >= retry_at_);
      };
      if (queue_.empty() || retry_at_ <= Clock::now()) {
        cv_.wait(lock, wake);
      } else {
        cv_.wait_until(lock, retry_at_, wake);
      }
      if (stopping_) return;
      if (dirty_) {
        lock.unlock();
        PersistIfDirty();
        lock.lock();
        continue;  // re-check: more may have arrived while writing
      }
      if (queue_.empty() || Clock::now() < retry_at_) continue;
      AlertQueue::Batch batch = queue_.Peek(static_cast<size_t>(std::max(1, options_.max_batch)));
      size_t queued = queue_.size();
      lock.unlock();
      std::string error;
      bool permanent = false;
      auto t0 = Clock::now();
      bool ok = Post(batch.alerts, &error, &permanent);
      double latency_s = std::chrono::duration<double>(Clock::now() - t0).count();
      lock.lock();
      Record(batch, ok, permanent, error, latency_s, queued);
    }
  }

  // Called with mu_ held.
  void Record(const AlertQueue::Batch& batch, bool ok, bool permanent, const std::string& error,
              double latency_s, size_t queued) {
    auto n = static_cast<int64_t>(batch.alerts.size());
    stats_.latency_sum_s += latency_s;
    stats_.latency_count++;
    if (ok) {
      if (stats_.consecutive_failures > 0) {
        logger_->Info("notify: " + name_ + ": delivering again after " +
                      std::to_string(stats_.consecutive_failures) + " failed attempts");
      }
      stats_.sent += n;
      stats_.consecutive_failures = 0;
      stats_.last_error.clear();
      stats_.last_success_ms = NowMs();
      queue_.Remove(batch);
      retry_at_ = Clock::time_point::min();
    } else if (permanent) {
      stats_.failed += n;
      stats_.dropped += static_cast<int64_t>(queue_.Remove(batch));
      stats_.last_error = error;
      logger_->Error("notify: " + name_ + ": " + error + "; " + std::to_string(n) +
                     " alerts dropped (the target refuses them)");
    } else {
      stats_.failed += n;
      stats_.consecutive_failures++;
      stats_.last_error = error;
      double wait_s = BackoffSeconds(stats_.consecutive_failures, options_.backoff_initial_s,
                                     options_.backoff_max_s);
      retry_at_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(wait_s));
      logger_->Warn("notify: " + name_ + ": " + error + "; " + std::to_string(queued) +
                    " alerts queued (retry in " + FormatSeconds(wait_s) + ")");
    }
    stats_.queue_length = static_cast<int64_t>(queue_.size());
    if (ok || permanent) {
      // Removals are saved lazily (at most once a second, when the queue empties, at Stop):
      // losing them in a crash only resends alerts, which receivers take idempotently, while
      // rewriting a 10,000-alert file after every 64-alert batch would dominate delivery time.
      removals_unsaved_ = true;
      if (queue_.empty() || Clock::now() - last_persist_ >= std::chrono::seconds(1)) dirty_ = true;
    }
  }

  // One POST; false with a one-line reason on failure. `permanent`: retrying cannot help.
  bool Post(const std::vector<Alert>& alerts, std::string* error, bool* permanent) {
    std::string body = target_.kind == Target::kAlertmanager
                           ? EncodeAlertmanagerV2(alerts)
                           : EncodeWebhook(alerts, target_.external_url, NowMs());
    if (!client_) {
      http::PostClientOptions o;
      o.headers = {{"User-Agent", "gpuwarden"}};
      o.basic_auth_user = target_.basic_auth_user;
      o.basic_auth_password = target_.basic_auth_password;
      o.bearer_token = target_.bearer_token;
      o.ca_file = target_.ca_file;
      o.insecure_skip_verify = target_.insecure_skip_verify;
      o.timeout_s = target_.timeout_s > 0 ? target_.timeout_s : options_.timeout_s;
      auto client = http::PostClient::Create(base_ + path_, std::move(o));
      if (!client.ok()) {
        *error = client.error().message;
        *permanent = true;
        return false;
      }
      client_ = std::move(*client);
    }
    auto res = client_->Post(body, "application/json");
    if (!res.ok()) {
      *error = res.error().message;
      return false;
    }
    if (res->status >= 200 && res->status < 300) return true;
    std::string text = res->body.substr(0, 200);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    *error = "HTTP " + std::to_string(res->status) + (text.empty() ? "" : ": " + text);
    *permanent =
        res->status >= 400 && res->status < 500 && res->status != 408 && res->status != 429;
    return false;
  }

  Target target_;
  const Options& options_;
  Logger* logger_;
  std::string base_, path_, file_path_;
  std::unique_ptr<http::PostClient> client_;  // kept alive between deliveries

  mutable std::mutex mu_;
  std::condition_variable cv_;
  AlertQueue queue_;
  bool dirty_ = false;             // the file is behind the queue: write it now
  bool removals_unsaved_ = false;  // delivered entries still in the file: write soon
  Clock::time_point last_persist_ = Clock::now();
  bool stopping_ = false;
  Clock::time_point retry_at_ = Clock::time_point::min();
  TargetStats stats_;
  const std::string name_;
  std::thread thread_;
};

Expected<std::unique_ptr<Notifier>> Notifier::Create(Options options, Logger* logger) {
  for (const Target& t : options.targets) {
    std::string base, path;
    if (!SplitUrl(t.url, &base, &path)) {
      return Error{std::string("notify: ") + KindName(t.kind) + " target '" + t.url +
                   "' is not an http(s) URL"};
    }
  }
  if (!options.queue_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options.queue_dir, ec);
    if (ec || !std::filesystem::is_directory(options.queue_dir)) {
      return Error{"notify: queue directory " + options.queue_dir + ": " +
                   (ec ? ec.message() : "not a directory")};
    }
    if (::access(options.queue_dir.c_str(), W_OK) != 0) {
      return Error{"notify: queue directory " + options.queue_dir + " is not writable"};
    }
  }
  std::unique_ptr<Notifier> n(new Notifier());
  n->options_ = std::move(options);
  for (const Target& t : n->options_.targets) {
    auto q = std::make_unique<TargetQueue>(t, n->options_, logger);
    if (!q->Load()) n->corrupt_files_++;
    n->queues_.push_back(std::move(q));
  }
  for (auto& q : n->queues_) q->Start();
  return n;
}

Notifier::~Notifier() {
  Stop();
}

void Notifier::Send(std::vector<Alert> alerts) {
  if (alerts.empty()) return;
  for (Alert& a : alerts) {
    std::sort(a.labels.begin(), a.labels.end());
    std::sort(a.annotations.begin(), a.annotations.end());
  }
  for (auto& q : queues_) q->Put(alerts);
}

void Notifier::Stop() {
  for (auto& q : queues_) q->Stop();
}

Notifier::Stats Notifier::stats() const {
  Stats s;
  for (const auto& q : queues_) s.targets.push_back(q->stats());
  s.corrupt_files = corrupt_files_;
  return s;
}

}  // namespace gw::notify
