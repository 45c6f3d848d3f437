// Test support: start a real program (gpuwarden, prometheus, promtool) on loopback, read its
// output, stop it by PID. No shell is involved; arguments are passed as they are.
#ifndef GPUWARDEN_TESTS_SUPPORT_PROCESS_H_
#define GPUWARDEN_TESTS_SUPPORT_PROCESS_H_

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace gw::testing {

// This machine's host name up to its first dot (what Slurm calls the node, and `jobs.node_name`
// defaults to).
inline std::string ShortHost() {
  char name[256] = {0};
  gethostname(name, sizeof name - 1);
  std::string host = name;
  return host.substr(0, host.find('.'));
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

// A fresh directory under $TMPDIR, removed at destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gwtest-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A port that was free a moment ago on 127.0.0.1, drawn at random from 20000-32767: below
// Linux's ephemeral range (32768-60999), so that no outgoing connection and no listen(0) of a
// test running beside this one can take it between now and the moment its server binds it (a
// port from bind(0) came from that range, and CI once lost a VictoriaMetrics start to that race).
inline int FreePort() {
  static thread_local unsigned state =
      static_cast<unsigned>(getpid()) * 2654435761u ^
      static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count());
  for (int attempt = 0; attempt < 200; ++attempt) {
    state = state * 1103515245u + 12345u;
    int port = 20000 + static_cast<int>((state >> 8) % 12768);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    bool free = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    close(fd);
    if (free) return port;
  }
  return 0;
}

// Polls `ready` every 50 ms until it is true or `timeout_s` passes.
inline bool WaitFor(const std::function<bool()>& ready, double timeout_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return ready();
}

class Process {
 public:
  // Starts argv[0] (a path, or a name searched on PATH) with stdout and stderr to `log_path`.
  Process(std::vector<std::string> argv, const std::string& log_path) : log_path_(log_path) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    if (posix_spawnp(&pid_, args[0], &actions, nullptr, args.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~Process() { Stop(); }

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  std::string Output() const { return ReadFile(log_path_); }
  bool Running() {
    if (pid_ <= 0) return false;
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_status_ = status;
      pid_ = -1;
      return false;
    }
    return true;
  }
  // SIGTERM, then SIGKILL after `grace_s`; returns the wait status.
  int Stop(double grace_s = 10) {
    if (pid_ <= 0) return exit_status_;
    kill(pid_, SIGTERM);
    if (!WaitFor([&] { return !Running(); }, grace_s)) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &exit_status_, 0);
      pid_ = -1;
    }
    return exit_status_;
  }
  // Waits for a process that exits by itself; returns its exit code (or -1).
  int Wait(double timeout_s = 60) {
    if (!WaitFor([&] { return !Running(); }, timeout_s)) Stop(1);
    return WIFEXITED(exit_status_) ? WEXITSTATUS(exit_status_) : -1;
  }

 private:
  pid_t pid_ = -1;
  int exit_status_ = 0;
  std::string log_path_;
};

// Runs a command to completion; returns its exit code and fills `output` (stdout+stderr).
inline int RunCommand(std::vector<std::string> argv, std::string* output, double timeout_s = 120,
                      const std::string& stdin_path = "") {
  TempDir dir;
  std::string log = dir / "out.txt";
  if (!stdin_path.empty()) {
    // Wrap through sh only to redirect stdin from a file; the path is ours, not user input.
    std::string cmd;
    for (const auto& a : argv) cmd += "'" + a + "' ";
    argv = {"/bin/sh", "-c", cmd + "< '" + stdin_path + "'"};
  }
  Process p(argv, log);
  if (!p.started()) return -1;
  int code = p.Wait(timeout_s);
  if (output) *output = p.Output();
  return code;
}

}  // namespace gw::testing

#endif  // GPUWARDEN_TESTS_SUPPORT_PROCESS_H_
