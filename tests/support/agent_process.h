// Test support: the real gpuwarden binary, started as a separate process on 127.0.0.1.
#ifndef GPUWARDEN_TESTS_SUPPORT_AGENT_PROCESS_H_
#define GPUWARDEN_TESTS_SUPPORT_AGENT_PROCESS_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <regex>
#include <sstream>

#include "support/http_client.h"
#include "support/process.h"

namespace gw::testing {

inline std::string GpuwardenBinary() {
  return std::string(GW_BINARY_DIR) + "/bin/gpuwarden";
}

class AgentProcess {
 public:
  // Starts `gpuwarden serve ARGS --listen 127.0.0.1:0` and waits until it says its port.
  explicit AgentProcess(std::vector<std::string> args) {
    std::vector<std::string> argv = {GpuwardenBinary(), "serve", "--listen", "127.0.0.1:0"};
    // Each agent gets its own history directory unless the test names one.
    if (std::find(args.begin(), args.end(), "--data-dir") == args.end()) {
      argv.push_back("--data-dir");
      argv.push_back(dir_ / "data");
    }
    argv.insert(argv.end(), args.begin(), args.end());
    process_ = std::make_unique<Process>(argv, dir_ / "gpuwarden.log");
    const std::regex port_re(R"(\(port ([0-9]+)\))");
    WaitFor(
        [&] {
          std::smatch m;
          std::string out = process_->Output();
          if (std::regex_search(out, m, port_re)) port_ = std::stoi(m[1]);
          return port_ != 0 || !process_->Running();
        },
        30);
    if (port_ == 0) ADD_FAILURE() << "gpuwarden did not start:\n" << process_->Output();
  }

  int port() const { return port_; }
  std::string Log() const { return process_->Output(); }
  Process& process() { return *process_; }
  HttpReply Get(const std::string& path, const std::string& accept = "") const {
    return HttpGet(port_, path, accept);
  }
  // Waits until /readyz answers 200: the first collection cycle is done, so /api/snapshot has
  // its time (the listener opens before it; a snapshot read earlier says taken_at 0).
  bool WaitReady(double timeout_s = 30) const {
    return WaitFor([&] { return Get("/readyz").status == 200; }, timeout_s);
  }
  // Stepped simulator: moves time and waits for the collector to catch up.
  void Advance(double seconds) {
    HttpReply r = HttpPost(port_, "/-/sim/advance?seconds=" + std::to_string(seconds));
    ASSERT_EQ(r.status, 200) << r.body;
  }

 private:
  TempDir dir_;
  std::unique_ptr<Process> process_;
  int port_ = 0;
};

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Parses the sample lines of a text exposition (comments skipped).
inline std::vector<Sample> ParseExposition(const std::string& text) {
  std::vector<Sample> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    size_t i = line.find_first_of("{ ");
    s.name = line.substr(0, i);
    if (line[i] == '{') {
      ++i;
      while (line[i] != '}') {
        size_t eq = line.find('=', i);
        std::string key = line.substr(i, eq - i);
        std::string value;
        size_t j = eq + 2;
        for (; line[j] != '"'; ++j) {
          if (line[j] == '\\') ++j;
          value += line[j];
        }
        s.labels[key] = value;
        i = j + 1;
        if (line[i] == ',') ++i;
      }
      ++i;
    }
    s.value = std::stod(line.substr(i + 1));
    out.push_back(s);
  }
  return out;
}

// The value of the one sample of `name` whose labels include `labels`; NaN if none.
inline double Value(const std::vector<Sample>& samples, const std::string& name,
                    const std::map<std::string, std::string>& labels = {}) {
  for (const Sample& s : samples) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [k, v] : labels) {
      auto it = s.labels.find(k);
      if (it == s.labels.end() || it->second != v) match = false;
    }
    if (match) return s.value;
  }
  return std::nan("");
}

}  // namespace gw::testing

#endif  // GPUWARDEN_TESTS_SUPPORT_AGENT_PROCESS_H_
