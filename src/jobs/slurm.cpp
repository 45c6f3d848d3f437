// SlurmJobTable (poll -> events) and SlurmPoller (the squeue child process on its own thread).
#include "jobs/slurm.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>

extern char** environ;

namespace gw::jobs {

std::string_view JobEventKindName(JobEventKind kind) {
  switch (kind) {
    case JobEventKind::kSubmitted:
      return "submitted";
    case JobEventKind::kEligible:
      return "eligible";
    case JobEventKind::kStarted:
      return "started";
    case JobEventKind::kFinished:
      return "finished";
    case JobEventKind::kVanished:
      return "vanished";
  }
  return "?";
}

double SlurmHealth::StalenessS(double now_s) const {
  if (up) return 0;
  return std::max(0.0, now_s - (ever_succeeded ? last_success_s : first_attempt_s));
}

std::vector<JobEvent> SlurmJobTable::Apply(const std::vector<SlurmJob>& jobs, double now_s) {
  std::vector<JobEvent> events;
  std::set<std::string> present;
  auto emit = [&](JobEventKind kind, const SlurmJob& job, std::int64_t time) {
    events.push_back(JobEvent{kind, job.id, time, job.state, job});
  };
  for (const SlurmJob& job : jobs) {
    present.insert(job.id);
    Seen& seen = seen_[job.id];
    const bool finished = IsFinished(job.state);
    if (!seen.submitted && job.submit_time > 0) {
      seen.submitted = true;
      emit(JobEventKind::kSubmitted, job, job.submit_time);
    }
    // A future eligible_time (--begin) is a promise, not an event yet.
    if (!seen.eligible && job.eligible_time > 0 &&
        (job.started() || finished || static_cast<double>(job.eligible_time) <= now_s)) {
      seen.eligible = true;
      emit(JobEventKind::kEligible, job, job.eligible_time);
    }
    if (!seen.started && job.started()) {
      seen.started = true;
      emit(JobEventKind::kStarted, job, job.start_time);
    }
    if (!seen.finished && finished) {
      seen.finished = true;
      emit(JobEventKind::kFinished, job,
           job.end_time > 0 ? job.end_time : static_cast<std::int64_t>(now_s));
    }
    jobs_[job.id] = job;
  }
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    if (present.count(it->first)) {
      ++it;
      continue;
    }
    // Gone from squeue: finished ones aged out (MinJobAge); others vanished unseen.
    if (!seen_[it->first].finished)
      emit(JobEventKind::kVanished, it->second, static_cast<std::int64_t>(now_s));
    seen_.erase(it->first);
    it = jobs_.erase(it);
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const JobEvent& a, const JobEvent& b) { return a.time < b.time; });
  health_.NoteSuccess(now_s);
  return events;
}

void SlurmJobTable::Failed(const std::string& error, double now_s) {
  health_.NoteFailure(error, now_s);
}

Expected<std::string> RunCommandCapture(const std::vector<std::string>& argv,
                                        const std::vector<std::string>& extra_env, double timeout_s,
                                        std::size_t max_output_bytes) {
  if (argv.empty()) return Error{"empty command"};
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return Error{std::string("pipe: ") + std::strerror(errno)};
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return Error{std::string("pipe: ") + std::strerror(errno)};
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  std::vector<std::string> args_copy = argv;
  std::vector<char*> args;
  for (std::string& a : args_copy) args.push_back(a.data());
  args.push_back(nullptr);
  // The child's environment: ours, with extra_env overriding same-named entries.
  std::vector<std::string> env_copy = extra_env;
  std::vector<char*> env;
  for (std::string& e : env_copy) env.push_back(e.data());
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string_view key = entry.substr(0, entry.find('='));
    bool overridden = false;
    for (const std::string& x : extra_env)
      if (std::string_view(x).substr(0, x.find('=')) == key) overridden = true;
    if (!overridden) env.push_back(*e);
  }
  env.push_back(nullptr);
  pid_t pid = -1;
  const int spawn_rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (spawn_rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    return Error{argv[0] + ": cannot start: " + std::strerror(spawn_rc)};
  }
  std::string out, err;
  bool too_big = false, timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    const int ready = poll(fds, 2, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        if (n < 0 && errno == EINTR) continue;
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      std::string& sink = i == 0 ? out : err;
      if (i == 1 && err.size() > 4096) continue;  // only the start of stderr is reported
      sink.append(buf, static_cast<std::size_t>(n));
      if (out.size() > max_output_bytes) too_big = true;
    }
    if (too_big) break;
  }
  for (pollfd& f : fds)
    if (f.fd >= 0) close(f.fd);
  if (timed_out || too_big) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return Error{argv[0] + ": timed out after " + std::to_string(timeout_s) + " s"};
  if (too_big) return Error{argv[0] + ": output larger than the limit"};
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
    const std::string code = WIFEXITED(status) ? "exit code " + std::to_string(WEXITSTATUS(status))
                                               : "signal " + std::to_string(WTERMSIG(status));
    return Error{argv[0] + ": " + code + (err.empty() ? "" : ": " + err.substr(0, 512))};
  }
  return out;
}

namespace {
constexpr std::size_t kMaxQueuedEvents = 100000;
}  // namespace

SlurmPoller::SlurmPoller(SlurmPollerOptions options, Logger* logger, const Clock* clock)
    : options_(std::move(options)), logger_(logger), clock_(clock) {}

SlurmPoller::~SlurmPoller() {
  Stop();
}

void SlurmPoller::Start() {
  thread_.Start(options_.interval_s, [this] { PollOnce(); });
}

void SlurmPoller::Stop() {
  thread_.Stop();
}

void SlurmPoller::PollOnce() {
  // The child runs without the lock: readers keep the last known state meanwhile.
  Expected<std::string> out = RunCommandCapture(options_.command, options_.extra_env,
                                                options_.timeout_s, options_.max_output_bytes);
  Expected<std::vector<SlurmJob>> jobs =
      out.ok() ? ParseSqueueJson(*out) : Expected<std::vector<SlurmJob>>(out.error());
  const double now = clock_->NowSeconds();
  std::lock_guard<std::mutex> lock(mu_);
  if (!jobs.ok()) {
    const bool was_up = table_.health().up || table_.health().polls_total == 0;
    table_.Failed(jobs.error().message, now);
    if (was_up && logger_)
      logger_->Warn("slurm: poll failed, keeping the last known jobs: " + jobs.error().message);
    return;
  }
  const bool was_down = !table_.health().up && table_.health().failures_total > 0;
  std::vector<JobEvent> events = table_.Apply(*jobs, now);
  ++jobs_version_;
  if (was_down && logger_) logger_->Info("slurm: squeue answers again");
  for (JobEvent& e : events) events_.push_back(std::move(e));
  if (events_.size() > kMaxQueuedEvents)
    events_.erase(events_.begin(),
                  events_.begin() + static_cast<std::ptrdiff_t>(events_.size() - kMaxQueuedEvents));
}

std::map<std::string, SlurmJob> SlurmPoller::Jobs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return table_.jobs();
}

std::uint64_t SlurmPoller::JobsVersion() const {
  std::lock_guard<std::mutex> lock(mu_);
  return jobs_version_;
}

SlurmHealth SlurmPoller::Health() const {
  std::lock_guard<std::mutex> lock(mu_);
  return table_.health();
}

std::vector<SlurmJob> SlurmPoller::PendingJobs(SlurmHealth* health) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<SlurmJob> out;
  for (const auto& [id, job] : table_.jobs())
    if (job.state == JobState::kPending) out.push_back(job);
  if (health) *health = table_.health();
  return out;
}

std::vector<JobEvent> SlurmPoller::TakeEvents() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<JobEvent> out;
  out.swap(events_);
  return out;
}

}  // namespace gw::jobs
