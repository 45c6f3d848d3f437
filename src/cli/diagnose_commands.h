// cli/diagnose_commands.h — `gpuwarden diagnose`, `gpuwarden report`, and the findings that
// `serve` keeps for GET /api/gw/v1/findings.
//
//   gpuwarden diagnose [--gpu G | --job J | --team T] [--since D] [--time T] [--json]
//                      [--url U | --data-dir DIR]
//   gpuwarden report [--period D] [--time T] [--out FILE] [--json] [--data-dir DIR]
//
// diagnose reads the data directory (offline) or asks a running agent (--url); report reads the
// data directory. Both evaluate at --time (Unix seconds or RFC 3339; default now). Exit codes: 0
// ok, 1 failure (store unreadable, agent unreachable, file not written), 2 bad arguments.
//
// FindingsService (serve): evaluates the findings over the last hour every minute of recorded
// time, off the request path — on its own thread, or synchronously after each recorded snapshot
// with a stepped simulator (so that tests see them when /-/sim/advance returns). Requests with
// the default window are answered from that cache (filters applied to it); a request with
// another `since` or a `time` is evaluated then, through the store's normal read path.
#ifndef GPUWARDEN_CLI_DIAGNOSE_COMMANDS_H_
#define GPUWARDEN_CLI_DIAGNOSE_COMMANDS_H_

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "base/log.h"
#include "cli/config.h"
#include "diagnose/diagnose.h"
#include "http/server.h"
#include "tsdb/db.h"

namespace gw::cli {

struct DiagnoseArgs {
  std::string gpu, job, team;  // at most one
  std::string since = "1h";
  std::string time;  // empty: now
  bool json = false;
  std::string url;  // a running gpuwarden
};
int RunDiagnose(const Config& config, const DiagnoseArgs& args, Logger* logger);

struct ReportArgs {
  std::string period = "7d";
  std::string time;  // empty: now
  std::string out;   // file to write; empty: stdout
  bool json = false;
};
int RunReport(const Config& config, const ReportArgs& args, Logger* logger);

class FindingsService {
 public:
  static constexpr double kIntervalS = 60;  // recorded time between evaluations
  static constexpr double kWindowS = 3600;  // the default window

  // `db` may be null (no history: the endpoint answers with an error). `synchronous`: evaluate
  // inside Tick (stepped simulator) instead of on the service's thread.
  FindingsService(tsdb::DB* db, bool synchronous, Logger* log);
  ~FindingsService();  // Stop()s
  FindingsService(const FindingsService&) = delete;
  FindingsService& operator=(const FindingsService&) = delete;

  void Start();
  void Stop();
  // After each recorded snapshot, with its time; cheap unless an evaluation is due and the
  // service is synchronous.
  void Tick(int64_t t_ms);
  // GET /api/gw/v1/findings?gpu=&job=&team=&since=&time=
  void RegisterRoutes(http::Server* server);

 private:
  void Run();
  void Evaluate(int64_t t_ms);

  tsdb::DB* db_;
  bool synchronous_;
  Logger* log_;
  promql::Engine engine_;
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t last_eval_ms_ = 0, pending_ms_ = 0, latest_ms_ = 0;
  bool stopping_ = false;
  std::shared_ptr<const diagnose::Diagnosis> cached_;
  std::thread thread_;
};

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_DIAGNOSE_COMMANDS_H_
