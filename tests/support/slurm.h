// Test support: a real Slurm 22.05 cluster of one node on this machine, with munge, started in a
// temporary run directory as docs/slurm-notes.md describes:
// fake GPU devices (mknod <dir>/nvidiaN c 195 N), slurmctld and slurmd on free loopback ports,
// SLURM_CONF set in this process's environment so that squeue/sbatch/scancel find the cluster.
// Needs root (slurmd, mknod). Every daemon runs in the foreground as a child and is stopped by its
// PID. One cluster per process at a time (SLURM_CONF is process-wide).
#ifndef GPUWARDEN_TESTS_SUPPORT_SLURM_H_
#define GPUWARDEN_TESTS_SUPPORT_SLURM_H_

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "support/process.h"

namespace gw::testing {

class SlurmCluster {
 public:
  // Writes the configuration; call Start() next. `gpus` fake GPU devices on the node.
  explicit SlurmCluster(unsigned gpus = 4) : gpus_(gpus) {
    const std::string& r = run_.path();
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    host_ = std::string(host).substr(0, std::string(host).find('.'));
    for (const char* sub : {"munge", "state", "spool", "dev", "jobs"})
      std::filesystem::create_directories(r + "/" + sub);
    chmod((r + "/munge").c_str(), 0700);
    for (unsigned i = 0; i < gpus_; ++i) {
      const std::string dev = r + "/dev/nvidia" + std::to_string(i);
      mknod(dev.c_str(), S_IFCHR | 0666, makedev(195, i));
    }
    std::random_device random;
    std::string key(1024, '\0');
    for (char& c : key) c = static_cast<char>(random());
    {
      std::ofstream out(r + "/munge/munge.key", std::ios::binary);
      out << key;
    }
    chmod((r + "/munge/munge.key").c_str(), 0600);
    const int ctld_port = FreePort(), slurmd_port = FreePort();
    std::string conf =
        "ClusterName=gwtest\nSlurmctldHost=" + host_ +
        "\nAuthType=auth/munge\nAuthInfo=socket=" + r + "/munge/munge.socket.2\n" +
        "CredType=cred/munge\nProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
        "MpiDefault=none\nSlurmUser=root\nSlurmdUser=root\n" +
        "StateSaveLocation=" + r + "/state\nSlurmdSpoolDir=" + r + "/spool\n" +
        "SlurmctldPidFile=" + r + "/slurmctld.pid\nSlurmdPidFile=" + r + "/slurmd.pid\n" +
        "SlurmctldLogFile=" + r + "/slurmctld.log\nSlurmdLogFile=" + r + "/slurmd.log\n" +
        "SlurmctldPort=" + std::to_string(ctld_port) +
        "\nSlurmdPort=" + std::to_string(slurmd_port) + "\n" +
        "SchedulerType=sched/backfill\nSelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n"
        "GresTypes=gpu\nAccountingStorageType=accounting_storage/none\n"
        "JobCompType=jobcomp/filetxt\nJobCompLoc=" +
        r + "/jobcomp.log\n" +
        "JobAcctGatherType=jobacct_gather/none\nMinJobAge=600\nReturnToService=2\n"
        "MailProg=/bin/true\nSchedulerParameters=sched_interval=1,bf_interval=1\n"
        "NodeName=" +
        host_ + " CPUs=" + std::to_string(std::max(2u, std::thread::hardware_concurrency())) +
        " RealMemory=2000 Gres=gpu:" + std::to_string(gpus_) + " State=UNKNOWN\n" +
        "PartitionName=gpu Nodes=" + host_ + " Default=YES MaxTime=INFINITE State=UP\n";
    WriteFile(r + "/slurm.conf", conf);
    WriteFile(r + "/gres.conf", "NodeName=" + host_ + " Name=gpu File=" + r + "/dev/nvidia[0-" +
                                    std::to_string(gpus_ - 1) + "]\n");
  }
  ~SlurmCluster() { Stop(); }
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  // Starts munged, slurmctld (clean state) and slurmd; true once the node is idle.
  bool Start(double timeout_s = 60) {
    setenv("SLURM_CONF", conf_path().c_str(), 1);
    const std::string& r = run_.path();
    munge_ = std::make_unique<Process>(
        std::vector<std::string>{
            "munged", "--foreground", "--force", "--socket=" + r + "/munge/munge.socket.2",
            "--key-file=" + r + "/munge/munge.key", "--pid-file=" + r + "/munge/munged.pid",
            "--log-file=" + r + "/munge/munged.log", "--seed-file=" + r + "/munge/munged.seed"},
        r + "/munged.out");
    if (!WaitFor([&] { return std::filesystem::exists(r + "/munge/munge.socket.2"); }, 20))
      return false;
    if (!StartController(/*clean=*/true)) return false;
    slurmd_ =
        std::make_unique<Process>(std::vector<std::string>{"slurmd", "-D"}, r + "/slurmd.out");
    return WaitFor([&] { return NodeState().rfind("idle", 0) == 0; }, timeout_s);
  }

  // slurmctld alone (outage tests). Restart keeps the saved state unless `clean`.
  bool StartController(bool clean = false) {
    std::vector<std::string> argv = {"slurmctld", "-D", "-i"};
    if (clean) argv.push_back("-c");
    ctld_ = std::make_unique<Process>(argv, run_.path() + "/slurmctld.out");
    return WaitFor([&] { return Run({"scontrol", "ping"}).find("UP") != std::string::npos; }, 30);
  }
  void StopController() {
    if (ctld_) ctld_->Stop(15);
    ctld_.reset();
  }

  void Stop() {
    if (ctld_) Run({"scancel", "--quiet", "--user=root"});
    if (slurmd_) slurmd_->Stop(15);
    StopController();
    if (munge_) munge_->Stop(5);
    slurmd_.reset();
    munge_.reset();
  }

  // Runs a Slurm client command; returns stdout+stderr.
  std::string Run(std::vector<std::string> argv, int* exit_code = nullptr, double timeout_s = 30) {
    std::string out;
    const int code = RunCommand(std::move(argv), &out, timeout_s);
    if (exit_code) *exit_code = code;
    return out;
  }

  // sbatch --parsable with `options`, the script being `command` (run through /bin/sh). Returns
  // the job id or "" (message in *error).
  std::string Submit(const std::vector<std::string>& options, const std::string& command,
                     std::string* error = nullptr) {
    std::vector<std::string> argv = {"sbatch", "--parsable",
                                     "-D",     run_.path() + "/jobs",
                                     "-o",     run_.path() + "/jobs/job-%j.out"};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.push_back("--wrap=" + command);
    int code = 0;
    std::string out = Run(argv, &code);
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    if (code != 0) {
      if (error) *error = out;
      return "";
    }
    return out.substr(0, out.find(';'));
  }

  // A job's state as squeue shows it ("RUNNING", "CANCELLED", ...; "" once squeue drops it).
  std::string JobState(const std::string& id) {
    std::string s = Run({"squeue", "-h", "-j", id, "-o", "%T"});
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  }

  std::string NodeState() {
    std::string s = Run({"sinfo", "-h", "-N", "-o", "%T"});
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  }

  const std::string& dir() const { return run_.path(); }
  std::string conf_path() const { return run_.path() + "/slurm.conf"; }
  std::string Log(const std::string& name) const { return ReadFile(run_.path() + "/" + name); }

 private:
  unsigned gpus_;
  TempDir run_;
  std::string host_;
  std::unique_ptr<Process> munge_, ctld_, slurmd_;
};

}  // namespace gw::testing

#endif  // GPUWARDEN_TESTS_SUPPORT_SLURM_H_
