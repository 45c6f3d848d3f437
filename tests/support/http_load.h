// Test support: the HTTP load of issue 16 against a running agent on 127.0.0.1 — well-formed
// clients mixing /metrics and query_range on kept-alive connections, slow-header sockets,
// costly queries, and probes of /metrics and /healthz on fresh connections (as a kubelet or a
// blackbox prober would) — with what it measured. Used by tests/integration/http_load_test.cpp
// (bounded, asserted) and bench/http_load.cpp (numbers for docs/benchmarks.md).
#ifndef GPUWARDEN_TESTS_SUPPORT_HTTP_LOAD_H_
#define GPUWARDEN_TESTS_SUPPORT_HTTP_LOAD_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "http/client.h"
#include "support/raw_http.h"

namespace gw::testing {

struct LoadOptions {
  int port = 0;
  int clients = 50;        // kept-alive clients, half /metrics, half query_range
  int slow_sockets = 8;    // connections that send a head one byte a second, never finishing
  int costly_queries = 8;  // sent once each at the start, all at the same time
  std::string costly_query = "count_over_time(gpu_up[30d:1ms])";
  // Their `timeout` parameter: how long each holds a worker (the engine's default is 2 min).
  std::string costly_timeout = "20s";
  double duration_s = 10;  // how long clients and probes run
  double probe_interval_s = 0.1;
  double probe_deadline_s = 5;     // a probe not answered within this counts as failed
  double request_timeout_s = 150;  // a client request not answered within this is an error
  double costly_wait_s = 15;       // after the run, how long costly queries may still take
  std::string auth_header;         // e.g. "Authorization: Basic ...\r\n"
};

struct LoadReport {
  uint64_t requests = 0;  // answered client requests
  uint64_t metrics_requests = 0, range_requests = 0;
  uint64_t errors = 0;                     // client requests not answered 200
  std::vector<std::string> error_samples;  // the first few, for messages
  uint64_t probes = 0, probe_failures = 0;
  std::vector<double> metrics_probe_ms, healthz_probe_ms;  // sorted after the run
  std::map<int, int> costly_statuses;                      // status (0: none yet) -> count
  uint64_t slow_reconnects = 0;  // slow sockets the server cut off (and we opened again)
  double seconds = 0;

  static double Percentile(const std::vector<double>& sorted, double p) {
    if (sorted.empty()) return 0;
    size_t i = static_cast<size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
    return sorted[std::min(i, sorted.size() - 1)];
  }
};

inline std::string RangeQueryPath() {
  const long now = static_cast<long>(std::time(nullptr));
  return "/api/v1/query_range?query=" + gw::http::UrlEncode("avg by (gpu) (gpu_power_watts)") +
         "&start=" + std::to_string(now - 600) + "&end=" + std::to_string(now) + "&step=15";
}

inline LoadReport RunLoad(const LoadOptions& o) {
  LoadReport report;
  std::mutex mu;
  std::atomic<bool> stop{false};
  auto note_error = [&](const std::string& what) {
    std::lock_guard<std::mutex> lock(mu);
    ++report.errors;
    if (report.error_samples.size() < 5) report.error_samples.push_back(what);
  };
  const auto start = RawClock::now();
  std::vector<std::thread> threads;

  // Costly queries: all at once, answered whenever the engine is done (or times them out).
  for (int i = 0; i < o.costly_queries; ++i) {
    threads.emplace_back([&, i] {
      const std::string body = "query=" + gw::http::UrlEncode(o.costly_query) +
                               (o.costly_timeout.empty() ? "" : "&timeout=" + o.costly_timeout);
      const std::string request =
          "POST /api/v1/query HTTP/1.1\r\nHost: x\r\n" + o.auth_header +
          "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: " +
          std::to_string(body.size()) + "\r\n\r\n" + body;
      RawResponse r = RawExchange(o.port, request, o.duration_s + o.costly_wait_s);
      std::lock_guard<std::mutex> lock(mu);
      ++report.costly_statuses[r.status];
    });
  }

  // Slow heads: one byte a second, reopened whenever the server cuts one off.
  threads.emplace_back([&] {
    std::vector<int> fds(static_cast<size_t>(o.slow_sockets), -1);
    auto open = [&](int& fd) {
      fd = RawConnect(o.port);
      if (fd >= 0 && !RawSend(fd, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ", RawAfter(1))) {
        close(fd);
        fd = -1;
      }
    };
    for (int& fd : fds) open(fd);
    while (!stop) {
      for (int& fd : fds) {
        char c;
        bool gone = fd < 0 || recv(fd, &c, 1, MSG_DONTWAIT | MSG_PEEK) >= 0 ||
                    !RawSend(fd, "s", RawAfter(0.5));
        if (gone) {
          if (fd >= 0) close(fd);
          open(fd);
          std::lock_guard<std::mutex> lock(mu);
          ++report.slow_reconnects;
        }
      }
      for (int i = 0; i < 10 && !stop; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    for (int fd : fds) {
      if (fd >= 0) close(fd);
    }
  });

  // Well-formed clients on kept-alive connections.
  for (int i = 0; i < o.clients; ++i) {
    threads.emplace_back([&, i] {
      const bool metrics = i % 2 == 0;
      int fd = -1;
      std::string buffer;
      while (!stop) {
        if (fd < 0) {
          fd = RawConnect(o.port);
          buffer.clear();
          if (fd < 0) {
            note_error("connect failed");
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            continue;
          }
        }
        const std::string path = metrics ? "/metrics" : RangeQueryPath();
        const auto deadline = RawAfter(o.request_timeout_s);
        RawResponse r;
        if (RawSend(fd, RawGet(path, o.auth_header), deadline)) r = RawRead(fd, deadline, &buffer);
        if (r.status != 200) {
          note_error(path.substr(0, 40) + ": " +
                     (r.status ? std::to_string(r.status) + " " + r.body.substr(0, 160)
                               : std::string("no answer")));
        } else {
          std::lock_guard<std::mutex> lock(mu);
          ++report.requests;
          ++(metrics ? report.metrics_requests : report.range_requests);
        }
        if (r.status == 0 || r.closed) {
          close(fd);
          fd = -1;
        }
      }
      if (fd >= 0) close(fd);
    });
  }

  // Probes: a fresh connection each time.
  for (const char* path : {"/metrics", "/healthz"}) {
    threads.emplace_back([&, path] {
      std::vector<double> latencies;
      uint64_t failures = 0;
      while (!stop) {
        const auto t0 = RawClock::now();
        RawResponse r = RawExchange(o.port, RawGet(path, o.auth_header), o.probe_deadline_s);
        const double ms = std::chrono::duration<double, std::milli>(RawClock::now() - t0).count();
        if (r.status != 200) ++failures;
        latencies.push_back(ms);
        std::this_thread::sleep_for(std::chrono::duration<double>(o.probe_interval_s));
      }
      std::sort(latencies.begin(), latencies.end());
      std::lock_guard<std::mutex> lock(mu);
      report.probes += latencies.size();
      report.probe_failures += failures;
      (std::string(path) == "/metrics" ? report.metrics_probe_ms : report.healthz_probe_ms) =
          std::move(latencies);
    });
  }

  std::this_thread::sleep_for(std::chrono::duration<double>(o.duration_s));
  stop = true;
  for (auto& t : threads) t.join();
  report.seconds = std::chrono::duration<double>(RawClock::now() - start).count();
  return report;
}

// Resident and peak resident memory of a process, in bytes, from /proc/PID/status.
inline std::pair<uint64_t, uint64_t> RssOf(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  uint64_t rss = 0, hwm = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) rss = std::strtoull(line.c_str() + 6, nullptr, 10) * 1024;
    if (line.rfind("VmHWM:", 0) == 0) hwm = std::strtoull(line.c_str() + 6, nullptr, 10) * 1024;
  }
  return {rss, hwm};
}

}  // namespace gw::testing

#endif  // GPUWARDEN_TESTS_SUPPORT_HTTP_LOAD_H_
