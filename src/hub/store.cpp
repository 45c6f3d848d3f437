#include "hub/store.h"

#include <atomic>
#include <future>

namespace gw::hub {

namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr size_t kMaxCacheEntries = 4096;

}  // namespace

struct FanOut::Batch {
  std::vector<std::function<void()>> tasks;
  std::atomic<size_t> next{0};  // the next task nobody has taken
  std::mutex mu;
  std::condition_variable done_cv;
  size_t done = 0;

  // Takes and runs tasks until none is left.
  void Drain() {
    for (size_t i = next++; i < tasks.size(); i = next++) {
      tasks[i]();
      std::lock_guard<std::mutex> lock(mu);
      if (++done == tasks.size()) done_cv.notify_all();
    }
  }
};

FanOut::FanOut(size_t threads) {
  for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
}

FanOut::~FanOut() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void FanOut::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    std::shared_ptr<Batch> batch = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    batch->Drain();  // nothing left when the caller took the rest already
    lock.lock();
  }
}

void FanOut::Run(std::vector<std::function<void()>> tasks) {
  if (tasks.empty()) return;
  auto batch = std::make_shared<Batch>();
  batch->tasks = std::move(tasks);
  const size_t helpers = std::min(threads_.size(), batch->tasks.size() - 1);
  if (helpers > 0) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (size_t i = 0; i < helpers; ++i) queue_.push_back(batch);
    }
    if (helpers == 1)
      wake_.notify_one();
    else
      wake_.notify_all();
  }
  batch->Drain();
  std::unique_lock<std::mutex> lock(batch->mu);
  batch->done_cv.wait(lock, [&] { return batch->done == batch->tasks.size(); });
}

struct Store::Entry {
  std::shared_future<Expected<StoreReply>> answer;
  SteadyClock::time_point expires = SteadyClock::time_point::max();  // set once answered
};

std::string Form(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string out;
  for (const auto& [name, value] : fields) {
    if (!out.empty()) out += '&';
    out += http::UrlEncode(name) + "=" + http::UrlEncode(value);
  }
  return out;
}

std::string StoreErrorMessage(const StoreReply& reply) {
  nlohmann::json j = nlohmann::json::parse(reply.body, nullptr, false);
  if (j.is_object() && j.contains("error") && j["error"].is_string())
    return j["error"].get<std::string>();
  std::string snippet = reply.body.substr(0, 200);
  while (!snippet.empty() && (snippet.back() == '\n' || snippet.back() == ' ')) snippet.pop_back();
  return "HTTP " + std::to_string(reply.status) + (snippet.empty() ? "" : ": " + snippet);
}

Expected<std::unique_ptr<Store>> Store::Create(StoreOptions options) {
  while (!options.url.empty() && options.url.back() == '/') options.url.pop_back();
  if (!options.url.starts_with("http://") && !options.url.starts_with("https://"))
    return Error{"--store: expected an http:// or https:// URL, got '" + options.url + "'"};
  if (options.url.find('?') != std::string::npos)
    return Error{"--store: the URL must not carry a query string: '" + options.url + "'"};
  // Checks the URL's shape once (a PostClient parses it).
  auto probe = http::PostClient::Create(options.url + "/api/v1/query", {});
  if (!probe.ok()) return Error{"--store: " + probe.error().message};
  return std::unique_ptr<Store>(new Store(std::move(options)));
}

Store::Store(StoreOptions options)
    : options_(std::move(options)),
      fanout_(std::make_unique<FanOut>(std::max<size_t>(options_.max_parallel, 1) - 1)) {}
Store::~Store() = default;

Expected<StoreReply> Store::Send(const std::string& path, const std::string& form) {
  std::unique_ptr<http::PostClient> client;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++sent_;
    auto& pool = idle_[path];
    if (!pool.empty()) {
      client = std::move(pool.back());
      pool.pop_back();
    }
  }
  if (!client) {
    http::PostClientOptions o;
    o.timeout_s = options_.timeout_s;
    auto made = http::PostClient::Create(options_.url + path, std::move(o));
    if (!made.ok()) return Error{"the store at " + options_.url + ": " + made.error().message};
    client = std::move(*made);
  }
  const auto sent_at = SteadyClock::now();
  auto reply = client->Post(form, "application/x-www-form-urlencoded");
  if (options_.on_request)
    options_.on_request(std::chrono::duration<double>(SteadyClock::now() - sent_at).count(),
                        !reply.ok() || reply->status < 200 || reply->status > 299);
  std::lock_guard<std::mutex> lock(mu_);
  if (!reply.ok()) {
    last_error_ = "the store at " + options_.url + " did not answer: " + reply.error().message;
    return Error{last_error_};  // the client is dropped: its connection may be broken
  }
  last_error_.clear();
  idle_[path].push_back(std::move(client));
  return StoreReply{reply->status, std::move(reply->body)};
}

Expected<StoreReply> Store::Post(const std::string& path, const std::string& form) {
  const std::string key = path + "?" + form;
  std::shared_ptr<Entry> entry;
  std::promise<Expected<StoreReply>> promise;
  bool mine = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto now = SteadyClock::now();
    auto it = cache_.find(key);
    if (it != cache_.end() && it->second->expires > now) {
      entry = it->second;  // answered and fresh, or being fetched (expires = max)
    } else {
      if (cache_.size() >= kMaxCacheEntries) {
        for (auto e = cache_.begin(); e != cache_.end();)
          e = e->second->expires <= now ? cache_.erase(e) : std::next(e);
      }
      entry = std::make_shared<Entry>();
      entry->answer = promise.get_future().share();
      cache_[key] = entry;
      mine = true;
    }
  }
  if (options_.on_lookup) options_.on_lookup(!mine);
  if (mine) {
    Expected<StoreReply> reply = Send(path, form);
    {
      std::lock_guard<std::mutex> lock(mu_);
      entry->expires =
          SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                   std::chrono::duration<double>(options_.cache_ttl_s));
    }
    promise.set_value(std::move(reply));
  }
  return entry->answer.get();
}

Expected<nlohmann::json> Store::Query(const std::string& expr, double time_s) {
  std::vector<std::pair<std::string, std::string>> fields = {{"query", expr}};
  if (time_s > 0) {
    char t[48];
    std::snprintf(t, sizeof t, "%.3f", time_s);
    fields.emplace_back("time", t);
  }
  auto reply = Post("/api/v1/query", Form(fields));
  if (!reply.ok()) return reply.error();
  nlohmann::json j = nlohmann::json::parse(reply->body, nullptr, false);
  if (reply->status != 200 || !j.is_object() || j.value("status", "") != "success" ||
      !j.contains("data"))
    return Error{"the store at " + options_.url + " refused `" + expr +
                 "`: " + StoreErrorMessage(*reply)};
  return std::move(j["data"]);
}

Expected<std::vector<Store::Sample>> Store::Vector(const std::string& expr, double time_s) {
  auto data = Query(expr, time_s);
  if (!data.ok()) return data.error();
  std::vector<Sample> out;
  if (data->value("resultType", "") != "vector") return out;
  for (const auto& r : (*data)["result"]) {
    Sample s;
    if (r.contains("metric") && r["metric"].is_object())
      for (const auto& [name, value] : r["metric"].items())
        if (value.is_string()) s.labels[name] = value.get<std::string>();
    const auto& v = r["value"];
    if (!v.is_array() || v.size() != 2 || !v[1].is_string()) continue;
    s.t_s = v[0].is_number() ? v[0].get<double>() : 0;
    s.value = std::strtod(v[1].get<std::string>().c_str(), nullptr);
    out.push_back(std::move(s));
  }
  return out;
}

void Store::RunAll(std::vector<std::function<void()>> tasks) {
  fanout_->Run(std::move(tasks));
}

std::vector<Expected<std::vector<Store::Sample>>> Store::Vectors(
    const std::vector<std::string>& exprs, double time_s) {
  std::vector<Expected<std::vector<Sample>>> out(exprs.size(), Error{"not run"});
  std::vector<std::function<void()>> tasks;
  for (size_t i = 0; i < exprs.size(); ++i)
    tasks.push_back([this, &out, &exprs, i, time_s] { out[i] = Vector(exprs[i], time_s); });
  RunAll(std::move(tasks));
  return out;
}

std::string Store::LastError() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_error_;
}

uint64_t Store::requests_sent() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sent_;
}

}  // namespace gw::hub
