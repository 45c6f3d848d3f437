#!/usr/bin/env python3
"""A stand-in for `squeue --json` (Slurm 22.05's shape) describing a small, busy cluster.

Used by the panel and fleet tests in place of Slurm: gpuwarden's jobs.squeue_command runs it.
The job table is a function of the wall clock, so every poll can bring news:

- a stream of short jobs on other nodes: one starts every PERIOD seconds, alternating between the
  partitions `gpu` and `debug`, each after a queue wait taken from a fixed cycle (30 s .. 2 h), and
  completes 3 periods later; two more wait in the queue (PENDING);
- long-running jobs on the GPU nodes, from a plan file (--plan, JSON): a list of
  {"job_id", "name", "user", "account", "partition", "node", "gpus": [indices],
   "start_after": seconds after the plan's start (optional; PENDING until then),
   "end_after": seconds after the plan's start (optional; COMPLETED from then on)}.

The tests call write_answer() every second and point jobs.squeue_command at `cat ANSWER` (a
Python interpreter starting on every poll is too slow on a loaded 2-core CI machine). By hand:
  standin_squeue.py --plan PLAN.json [--period 20]          # prints one answer
  standin_squeue.py --plan PLAN.json --out ANSWER --every 1  # keeps ANSWER current
PLAN.json: {"started": UNIX_SECONDS, "jobs": [...]}.
"""
import argparse
import json
import os
import sys
import time

WAITS = [30, 45, 90, 240, 600, 1800, 7200, 75]  # seconds from eligible to start, cycled


def gres(gpus):
    if not gpus:
        return []
    runs, first = [], None  # Slurm writes index ranges: 0-3,6
    for i, g in enumerate(gpus):
        if first is None:
            first = g
        if i + 1 == len(gpus) or gpus[i + 1] != g + 1:
            runs.append(str(first) if first == g else "%d-%d" % (first, g))
            first = None
    return ["gpu:%d(IDX:%s)" % (len(gpus), ",".join(runs))]


def job(job_id, name, state, user, account, partition, nodes, submit, eligible, start, end,
        gpus=(), reason="None"):
    return {
        "job_id": job_id, "name": name, "job_state": state, "state_reason": reason,
        "user_name": user, "account": account, "partition": partition, "nodes": nodes,
        "submit_time": submit, "eligible_time": eligible, "start_time": start, "end_time": end,
        "exit_code": 0, "gres_detail": gres(list(gpus)),
        "tres_per_node": "gres:gpu:%d" % len(gpus) if gpus else "",
    }


def table(now, period, plan, started):
    jobs = []
    for p in plan:
        # "start_after": the job waits in the queue (eligible at `started`) until then.
        start = started + int(p.get("start_after", 0))
        if now < start:
            jobs.append(job(p["job_id"], p["name"], "PENDING", p["user"], p["account"],
                            p["partition"], "", started - 60, started, 0, 0, reason="Resources"))
            continue
        if "end_after" in p and now >= started + int(p["end_after"]):
            jobs.append(job(p["job_id"], p["name"], "COMPLETED", p["user"], p["account"],
                            p["partition"], p["node"], started - 600, started - 300, start,
                            started + int(p["end_after"]), p["gpus"]))
            continue
        jobs.append(job(p["job_id"], p["name"], "RUNNING", p["user"], p["account"], p["partition"],
                        p["node"], started - 600, started - 300, start, start + 86400, p["gpus"]))
    k_now = now // period
    for k in range(k_now - 5, k_now + 1):
        wait = WAITS[k % len(WAITS)]
        start = k * period
        partition = "gpu" if k % 2 == 0 else "debug"
        state = "RUNNING" if k > k_now - 3 else "COMPLETED"
        end = start + 3 * period if state == "COMPLETED" else start + 86400
        jobs.append(job(100000 + k % 900000, "batch-%d" % k, state, "eve", "batch", partition,
                        "other%02d" % (k % 4 + 1), start - wait - 10, start - wait, start, end,
                        [k % 8]))
    for i in range(2):
        jobs.append(job(900000 + i, "waiting-%d" % i, "PENDING", "frank", "batch", "gpu", "",
                        now - 120, now - 120, 0, 0, reason="Resources"))
    return {"meta": {"plugin": {"type": "openapi/v0.0.38"}}, "errors": [], "jobs": jobs}


def write_answer(path, plan, period=20):
    """Writes the answer for now to PATH atomically (a poll never reads half a file)."""
    doc = table(int(time.time()), period, plan["jobs"], int(plan["started"]))
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f)
    os.replace(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plan", required=True)
    ap.add_argument("--period", type=int, default=20)
    ap.add_argument("--out", help="keep this file current instead of printing")
    ap.add_argument("--every", type=float, default=1.0)
    ap.add_argument("--json", action="store_true")  # squeue's own flag, accepted and implied
    a = ap.parse_args()
    with open(a.plan) as f:
        plan = json.load(f)
    if not a.out:
        json.dump(table(int(time.time()), a.period, plan["jobs"], int(plan["started"])), sys.stdout)
        return
    while True:
        write_answer(a.out, plan, a.period)
        time.sleep(a.every)


if __name__ == "__main__":
    main()
