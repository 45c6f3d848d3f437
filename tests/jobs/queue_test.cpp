// The queue as a list (jobs/queue.h): which pending jobs, their waits, GPUs asked for and their
// position in Slurm's order, from squeue --json documents as 22.05 and later versions write them.
#include "jobs/queue.h"

#include <gtest/gtest.h>

#include <map>

namespace gw::jobs {
namespace {

// Pending jobs on two partitions, one running job and one not yet eligible (--begin), polled at
// t = 5000.
constexpr const char* kQueue = R"json({"meta": {}, "errors": [], "jobs": [
  {"job_id": 31, "name": "run", "job_state": "RUNNING", "user_name": "alice", "account": "physics",
   "partition": "gpu", "nodes": "n1", "submit_time": 1000, "eligible_time": 1000,
   "start_time": 1200, "end_time": 99999999, "priority": 0, "tres_per_node": "gres:gpu:2"},
  {"job_id": 32, "name": "big", "job_state": "PENDING", "state_reason": "Resources",
   "user_name": "bob", "account": "bio", "partition": "gpu", "nodes": "", "submit_time": 1500,
   "eligible_time": 1600, "start_time": 0, "end_time": 0, "priority": 4294901000,
   "tres_per_job": "gres:gpu:4", "tres_req_str": "cpu=1,node=1,billing=1,gres/gpu=4"},
  {"job_id": 33, "name": "small", "job_state": "PENDING", "state_reason": "Priority",
   "user_name": "carol", "account": "ml", "partition": "gpu", "nodes": "", "submit_time": 1000,
   "eligible_time": 1000, "start_time": 7000, "end_time": 0, "priority": 4294900000,
   "tres_per_node": "gres:gpu:1"},
  {"job_id": 9, "name": "tie", "job_state": "PENDING", "state_reason": "Priority",
   "user_name": "carol", "account": "ml", "partition": "gpu,debug", "nodes": "",
   "submit_time": 1000, "eligible_time": 1000, "start_time": 0, "end_time": 0,
   "priority": {"set": true, "infinite": false, "number": 4294900000},
   "tres_per_job": "gres/gpu=2"},
  {"job_id": 40, "name": "later", "job_state": "PENDING", "state_reason": "BeginTime",
   "user_name": "dan", "account": "bio", "partition": "debug", "nodes": "",
   "submit_time": 4000, "eligible_time": 9000, "start_time": 0, "end_time": 0, "priority": 1,
   "tres_per_node": "gres:gpu:a100:3"},
  {"job_id": 41, "name": "debugjob", "job_state": "PENDING", "state_reason": "QOSMaxGRESPerUser",
   "user_name": "erin", "account": "bio", "partition": "debug", "nodes": "",
   "submit_time": 4500, "eligible_time": 4500, "start_time": 0, "end_time": 0, "priority": 7}
]})json";

TEST(Queue, PriorityParsedInBothForms) {
  auto jobs = ParseSqueueJson(kQueue);
  ASSERT_TRUE(jobs.ok()) << jobs.error().message;
  std::map<std::string, SlurmJob> by_id;
  for (const SlurmJob& j : *jobs) by_id[j.id] = j;
  EXPECT_EQ(by_id["32"].priority, 4294901000);
  EXPECT_EQ(by_id["9"].priority, 4294900000);
  EXPECT_EQ(by_id["41"].priority, 7);
}

TEST(Queue, RequestedGpusFromEachWayOfAsking) {
  auto jobs = ParseSqueueJson(kQueue);
  ASSERT_TRUE(jobs.ok());
  std::map<std::string, unsigned> gpus;
  for (const SlurmJob& j : *jobs) gpus[j.id] = j.RequestedGpus();
  EXPECT_EQ(gpus["32"], 4u);  // --gpus=4 (tres_req_str)
  EXPECT_EQ(gpus["33"], 1u);  // --gres=gpu:1
  EXPECT_EQ(gpus["9"], 2u);   // tres_per_job gres/gpu=2
  EXPECT_EQ(gpus["40"], 3u);  // typed --gres
  EXPECT_EQ(gpus["41"], 0u);  // no GPU asked for
}

TEST(Queue, PendingJobsByWaitWithPositionsPerPartition) {
  auto jobs = ParseSqueueJson(kQueue);
  ASSERT_TRUE(jobs.ok());
  std::vector<QueuedJob> queue = PendingQueue(*jobs, 5000.4);
  ASSERT_EQ(queue.size(), 5u);  // the running job is not queued
  std::vector<std::string> order;
  for (const QueuedJob& q : queue) order.push_back(q.job.id);
  // Waits (poll − eligible): 33 and 9 4000 s, 32 3400 s, 41 500 s, 40 not eligible yet (0).
  // 33 and 9 tie on wait, priority and submit time: 9 is Slurm's first (lower id).
  EXPECT_EQ(order, (std::vector<std::string>{"9", "33", "32", "41", "40"}));
  std::map<std::string, QueuedJob> by_id;
  for (const QueuedJob& q : queue) by_id[q.job.id] = q;
  EXPECT_EQ(by_id["33"].wait_s, 4000);
  EXPECT_EQ(by_id["33"].submit_wait_s, 4000);
  EXPECT_EQ(by_id["32"].wait_s, 3400);
  EXPECT_EQ(by_id["32"].submit_wait_s, 3500);
  EXPECT_TRUE(by_id["32"].eligible);
  EXPECT_FALSE(by_id["40"].eligible);
  EXPECT_EQ(by_id["40"].wait_s, 0);
  EXPECT_EQ(by_id["40"].submit_wait_s, 1000);
  // Partition gpu by priority: 32, then 9 and 33 (same priority and submission: lower id first);
  // 9 pends on "gpu,debug" and ranks in gpu. Partition debug: 41 (priority 7), then 40.
  EXPECT_EQ(by_id["32"].position, 1u);
  EXPECT_EQ(by_id["9"].position, 2u);
  EXPECT_EQ(by_id["33"].position, 3u);
  EXPECT_EQ(by_id["41"].position, 1u);
  EXPECT_EQ(by_id["40"].position, 2u);
  EXPECT_EQ(by_id["32"].gpus, 4u);
  EXPECT_EQ(by_id["41"].job.state_reason, "QOSMaxGRESPerUser");
  EXPECT_EQ(by_id["33"].job.start_time, 7000);  // the backfill estimate is kept as such
  EXPECT_EQ(FirstPartition("gpu,debug"), "gpu");
}

TEST(Queue, EmptyWithoutPendingJobs) {
  SlurmJob running;
  running.id = "1";
  running.state = JobState::kRunning;
  EXPECT_TRUE(PendingQueue({running}, 100).empty());
  EXPECT_TRUE(PendingQueue({}, 100).empty());
}

}  // namespace
}  // namespace gw::jobs
