// Test support: build/bin/gw-fake-kubelet (tests/k8s/fake_kubelet.cpp, the stand-in kubelet) as
// a child process on a socket in a temporary directory, and its state file.
//
//   FakeKubelet kubelet;                          // socket and state in a fresh temp dir
//   kubelet.SetState({{"pods", ...}});            // written to a temp file, renamed into place
//   ASSERT_TRUE(kubelet.Start());                 // waits for its "ready" line
//   auto api = gw::k8s::MakeGrpcPodResourcesApi(kubelet.socket());
//   kubelet.Stop();                               // SIGTERM: it removes the socket
//   kubelet.Kill();                               // SIGKILL: the socket file stays behind
//
// Needs GW_BINARY_DIR (gw_unit_test defines it) and nlohmann/json.
#ifndef GPUWARDEN_TESTS_K8S_FAKE_KUBELET_PROCESS_H_
#define GPUWARDEN_TESTS_K8S_FAKE_KUBELET_PROCESS_H_

#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "support/process.h"

namespace gw::testing {

class FakeKubelet {
 public:
  FakeKubelet() : socket_(dir_ / "kubelet.sock"), state_(dir_ / "state.json") {
    SetState(nlohmann::json::object());
  }
  ~FakeKubelet() { Stop(); }

  static std::string Binary() { return std::string(GW_BINARY_DIR) + "/bin/gw-fake-kubelet"; }
  const std::string& socket() const { return socket_; }
  const std::string& state_path() const { return state_; }
  const TempDir& dir() const { return dir_; }

  // Replaces the state file at once (the kubelet re-reads it on every request).
  void SetState(const nlohmann::json& state) {
    const std::string tmp = state_ + ".tmp";
    WriteFile(tmp, state.dump());
    std::rename(tmp.c_str(), state_.c_str());
  }

  // Starts a kubelet on socket(); true once it printed "ready".
  bool Start(double timeout_s = 30) {
    Stop();
    const std::string log = dir_ / ("kubelet-" + std::to_string(++starts_) + ".log");
    process_ = std::make_unique<Process>(
        std::vector<std::string>{Binary(), "--socket", socket_, "--state", state_}, log);
    if (!process_->started()) return false;
    return WaitFor(
               [&] {
                 return process_->Output().find("ready\n") != std::string::npos ||
                        !process_->Running();
               },
               timeout_s) &&
           process_->Running();
  }

  // SIGTERM and wait: the kubelet removes its socket. Returns the wait status (0: clean exit).
  int Stop() {
    if (process_ == nullptr) return 0;
    const int status = process_->Stop();
    process_.reset();
    return status;
  }

  // SIGKILL and wait: a crash, the socket file stays.
  void Kill() {
    if (process_ == nullptr) return;
    kill(process_->pid(), SIGKILL);
    process_->Stop(5);
    process_.reset();
  }

  std::string Output() const { return process_ ? process_->Output() : ""; }

 private:
  TempDir dir_;
  std::string socket_, state_;
  std::unique_ptr<Process> process_;
  int starts_ = 0;
};

}  // namespace gw::testing

#endif  // GPUWARDEN_TESTS_K8S_FAKE_KUBELET_PROCESS_H_
