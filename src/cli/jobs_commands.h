// cli/jobs_commands.h — `gpuwarden jobs` and `gpuwarden jobs show ID`: the task layer's jobs, as a
// table (like `snapshot`'s) or JSON.
//
// Without --url they read the job records `serve` wrote (jobs.records_dir, default
// STORAGE_PATH/jobs/jobs.jsonl — jobs/job_records.h): finished jobs only. With --url they ask a
// running agent's GET /api/gw/v1/jobs[/<id>], which adds the jobs running now. Exit codes: 0 ok,
// 1 failure (unreadable records, agent unreachable, unknown job), 2 bad arguments.
#ifndef GPUWARDEN_CLI_JOBS_COMMANDS_H_
#define GPUWARDEN_CLI_JOBS_COMMANDS_H_

#include <string>
#include <vector>

#include "base/log.h"
#include "config/config.h"
#include "jobs/job_records.h"

namespace gw::cli {

struct JobsArgs {
  bool running = false;  // only jobs running now (needs --url)
  std::string since;     // a duration: jobs that ended within it (running ones are kept)
  std::string team;      // only this team's jobs
  bool json = false;     // the API's JSON instead of a table
  std::string url;       // a running gpuwarden, e.g. http://node7:9966
  std::string id;        // `jobs show ID`
};

// `gpuwarden jobs [--running | --since D] [--team T] [--json] [--url U]`.
int RunJobs(const config::Config& config, const JobsArgs& args, Logger* logger);
// `gpuwarden jobs show ID [--json] [--url U]`.
int RunJobsShow(const config::Config& config, const JobsArgs& args, Logger* logger);

// The table: one line per job, newest first as given.
std::string JobsTable(const std::vector<jobs::JobRecord>& records);
// One job in detail (`jobs show`).
std::string JobDetail(const jobs::JobRecord& record);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_JOBS_COMMANDS_H_
