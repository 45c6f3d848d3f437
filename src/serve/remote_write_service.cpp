#include "serve/remote_write_service.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/secret_file.h"
#include "remote/client.h"
#include "remote/queue.h"
#include "serve/jobs_series.h"

namespace gw::serve {

namespace {

// config -> remote::Endpoint, with the secret files read once, here (at start, not per request).
Expected<remote::Endpoint> EndpointOf(const config::RemoteWriteConfig& c) {
  remote::Endpoint e;
  e.url = c.url;
  e.headers = c.headers;
  e.basic_auth_user = c.basic_auth_username;
  e.basic_auth_password = c.basic_auth_password;
  if (!c.basic_auth_password_file.empty()) {
    auto pw = ReadSecretFile(c.basic_auth_password_file);
    if (!pw.ok()) return pw.error();
    e.basic_auth_password = *pw;
  }
  std::string credentials = c.authorization_credentials;
  if (!c.authorization_credentials_file.empty()) {
    auto cr = ReadSecretFile(c.authorization_credentials_file);
    if (!cr.ok()) return cr.error();
    credentials = *cr;
  }
  if (!credentials.empty()) {
    if (c.authorization_type == "Bearer")
      e.bearer_token = credentials;
    else
      e.headers["Authorization"] = c.authorization_type + " " + credentials;
  }
  e.ca_file = c.tls_ca_file;
  e.insecure_skip_verify = c.tls_insecure_skip_verify;
  e.timeout_s = c.remote_timeout_s;
  return e;
}

Expected<remote::QueueOptions> QueueOptionsOf(const config::Config& config,
                                              const config::RemoteWriteConfig& c,
                                              const std::string& dir) {
  remote::QueueOptions o;
  o.name = config::RemoteWriteName(c);
  o.progress_file = dir + "/" + o.name + ".progress";
  o.capacity = static_cast<size_t>(c.capacity);
  o.max_samples_per_send = static_cast<size_t>(c.max_samples_per_send);
  o.batch_send_deadline_s = c.batch_send_deadline_s;
  o.min_backoff_s = c.min_backoff_s;
  o.max_backoff_s = c.max_backoff_s;
  for (const config::WriteRelabelRule& r : c.write_relabel_configs) {
    auto m = tsdb::Matcher::Make(tsdb::MatchType::kRegexMatch, "relabel", r.regex);
    if (!m.ok()) return m.error();
    o.relabel.push_back({r.keep, r.source_labels, r.separator, std::move(*m)});
  }
  // Prometheus adds its external labels to what it remote-writes; ours are rules.external_labels.
  for (const auto& [name, value] : config.rules.external_labels)
    o.external_labels.push_back({name, value});
  std::sort(o.external_labels.begin(), o.external_labels.end());
  o.downsample_ms = static_cast<int64_t>(c.downsample_interval_s * 1000 + 0.5);
  for (const std::string& name : c.downsample_aggregate) {
    remote::Aggregate a;
    if (remote::ParseAggregate(name, &a)) o.aggregates.push_back(a);
  }
  return o;
}

struct Endpoint {
  std::string name, url;
  std::unique_ptr<remote::Client> client;
  std::unique_ptr<remote::Queue> queue;
};

class RemoteWriteService : public Service {
 public:
  RemoteWriteService(const config::Config& config, tsdb::DB* db, Logger* log) : log_(log) {
    if (config.remote_write.empty()) return;
    if (db == nullptr) {
      log->Error("remote_write: no store, so nothing to send; the endpoints are not served");
      return;
    }
    const std::string dir = config.storage.path + "/remote_write";
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      log->Error("remote_write: cannot create " + dir + ": " + std::strerror(errno) +
                 "; the endpoints are not served");
      return;
    }
    for (const config::RemoteWriteConfig& c : config.remote_write) {
      const std::string name = config::RemoteWriteName(c);
      auto endpoint = EndpointOf(c);
      auto options = QueueOptionsOf(config, c, dir);
      if (!endpoint.ok() || !options.ok()) {
        log->Error("remote_write " + name + ": " +
                   (endpoint.ok() ? options.error() : endpoint.error()).message +
                   "; this endpoint is not served");
        continue;
      }
      auto client = remote::Client::Create(std::move(*endpoint));
      if (!client.ok()) {
        log->Error("remote_write " + name + ": " + client.error().message +
                   "; this endpoint is not served");
        continue;
      }
      auto e = std::make_unique<Endpoint>();
      e->name = name;
      e->url = c.url;
      e->client = std::move(*client);
      remote::Client* raw = e->client.get();
      e->queue = std::make_unique<remote::Queue>(
          std::move(*options), db,
          [raw](const std::vector<remote::TimeSeries>& batch) { return raw->Send(batch); }, log);
      endpoints_.push_back(std::move(e));
    }
  }
  const char* name() const override { return "remote_write"; }
  void Start() override {
    for (auto& e : endpoints_) {
      e->queue->Start();
      log_->Info("remote_write " + e->name + ": sending to " + e->url);
    }
  }
  void OnSnapshot(const collect::Snapshot&, int64_t t_ms) override {
    for (auto& e : endpoints_) e->queue->Notify(t_ms);
  }
  void RenderMetrics(collect::Format format, std::string* out) override {
    if (endpoints_.empty()) return;
    std::vector<remote::Queue::Figures> f;
    for (auto& e : endpoints_) f.push_back(e->queue->figures());
    ExpositionSink sink(format, out);
    using F = remote::Queue::Figures;
    struct Family {
      const char *name, *type, *help;
      double (*value)(const F&);
    };
    static constexpr Family kFamilies[] = {
        {"prometheus_remote_storage_samples_total", "counter",
         "Samples sent to remote storage (accepted by the receiver).",
         [](const F& x) { return static_cast<double>(x.samples_sent); }},
        {"prometheus_remote_storage_samples_failed_total", "counter",
         "Samples the receiver refused for good (HTTP 4xx other than 429); not resent.",
         [](const F& x) { return static_cast<double>(x.samples_failed); }},
        {"prometheus_remote_storage_samples_dropped_total", "counter",
         "Samples of series write_relabel_configs drops: read from the store, never sent.",
         [](const F& x) { return static_cast<double>(x.samples_dropped); }},
        {"gpuwarden_remote_write_samples_already_stored_total", "counter",
         "Samples of a request whose answer was lost, refused as out of order when resent: the "
         "lost attempt stored them.",
         [](const F& x) { return static_cast<double>(x.samples_already_stored); }},
        {"prometheus_remote_storage_samples_retried_total", "counter",
         "Samples in requests that failed recoverably (5xx, 429, no answer) and were retried.",
         [](const F& x) { return static_cast<double>(x.samples_retried); }},
        {"prometheus_remote_storage_samples_pending", "gauge",
         "Samples read from the store and not yet sent.",
         [](const F& x) { return static_cast<double>(x.pending); }},
        {"prometheus_remote_storage_bytes_total", "counter",
         "Compressed request bytes sent (accepted requests).",
         [](const F& x) { return static_cast<double>(x.bytes_sent); }},
        {"prometheus_remote_storage_queue_highest_sent_timestamp_seconds", "gauge",
         "Timestamp of the newest sample the receiver accepted.",
         [](const F& x) { return static_cast<double>(x.highest_sent_ms) / 1000; }},
        {"prometheus_remote_storage_shards", "gauge",
         "Parallel senders per endpoint (one: sent in time order).", [](const F&) { return 1.0; }},
        {"gpuwarden_remote_write_requests_failed_total", "counter",
         "Requests that did not succeed (retried or refused).",
         [](const F& x) { return static_cast<double>(x.requests_failed); }},
        {"gpuwarden_remote_write_series_dropped", "gauge",
         "Series write_relabel_configs keeps from this endpoint (never sent).",
         [](const F& x) { return static_cast<double>(x.series_dropped); }},
        {"gpuwarden_remote_write_caught_up", "gauge",
         "1 when the last pass sent everything the store held up to the newest snapshot.",
         [](const F& x) { return x.caught_up ? 1.0 : 0.0; }},
        {"gpuwarden_remote_write_progress_write_failures_total", "counter",
         "Failed writes of the endpoint's progress file (data directory).",
         [](const F& x) { return static_cast<double>(x.progress_write_failures); }},
    };
    for (const Family& family : kFamilies) {
      sink.Family(family.name, family.type, "", family.help);
      for (size_t i = 0; i < endpoints_.size(); ++i) {
        TaskLabel labels[] = {{"remote_name", endpoints_[i]->name}, {"url", endpoints_[i]->url}};
        sink.Sample(family.name, labels, family.value(f[i]));
      }
    }
    int64_t newest = 0;
    for (const F& x : f) newest = std::max(newest, x.now_ms);
    sink.Family(
        "prometheus_remote_storage_highest_timestamp_in_seconds", "gauge", "",
        "Timestamp of the newest recorded snapshot: the store holds every sample up to it.");
    sink.Sample("prometheus_remote_storage_highest_timestamp_in_seconds", {},
                static_cast<double>(newest) / 1000);
  }
  void Stop() override {
    for (auto& e : endpoints_) e->queue->Stop();
  }

 private:
  Logger* log_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
};

}  // namespace

std::unique_ptr<Service> MakeRemoteWriteService(const config::Config& config, tsdb::DB* db,
                                                Logger* logger) {
  return std::make_unique<RemoteWriteService>(config, db, logger);
}

}  // namespace gw::serve
