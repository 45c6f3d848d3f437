// serve/governance_commands.h — the governance service's worker thread: it runs the reclaim
// commands (scontrol requeue, scancel, hooks, notify commands) one at a time, as child processes
// without a shell and with governance.command_timeout, and — when asked to — calls a poll (the
// partitions' capacity) every interval. Nothing it runs is ever on the recorder's or a request's
// thread.
//
//   CommandWorker worker(timeout_s, poll_interval_s, poll_or_null, on_done);
//   worker.Start();
//   worker.Enqueue(std::move(commands));   // from OnSnapshot
//   ...                                    // on_done(command, error) on the worker per command
//   worker.Stop();                         // waits for the command running now
//
// A command's failure ("" on success) goes to on_done; it is never retried.
//
// Threading: Enqueue, Start and Stop from any thread; on_done and poll run on the worker.
#ifndef GPUWARDEN_SERVE_GOVERNANCE_COMMANDS_H_
#define GPUWARDEN_SERVE_GOVERNANCE_COMMANDS_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "governance/reclaim.h"

namespace gw::serve {

class CommandWorker {
 public:
  using Done = std::function<void(const governance::ReclaimCommand&, const std::string& error)>;
  // `poll` (may be empty: no polling) runs first at Start, then every `poll_interval_s`.
  CommandWorker(double command_timeout_s, double poll_interval_s, std::function<void()> poll,
                Done on_done);
  ~CommandWorker();
  CommandWorker(const CommandWorker&) = delete;
  CommandWorker& operator=(const CommandWorker&) = delete;

  void Start();
  void Stop();  // safe to call twice
  void Enqueue(std::vector<governance::ReclaimCommand> commands);

 private:
  void Loop();

  const double timeout_s_, poll_interval_s_;
  const std::function<void()> poll_;
  const Done on_done_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<governance::ReclaimCommand> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace gw::serve

#endif  // GPUWARDEN_SERVE_GOVERNANCE_COMMANDS_H_
