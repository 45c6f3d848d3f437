#!/usr/bin/env python3
"""Fleet test: N `gpuwarden serve` agents (default 16), each a simulated node with 8 GPUs and its
own scenario, on loopback ports; a real Prometheus 2.42 scrapes them all through the shipped
deploy/prometheus/prometheus.yml (file_sd, one group per node with `instance` = the node's name)
with the rule pack loaded.

- The scenarios are generated here (fleet_scenarios.py): heterogeneous models, per-node
  training load, GPUs held idle by jobs, a free memory-bound GPU, an idle one; one node's GPU 7
  falls off the bus 20 s after its agent starts.
- Jobs come from a stand-in squeue (tests/deploy/standin_squeue.py): every node runs one busy
  job on GPUs 0-3 and one job holding GPUs 4-5 idle, for teams that differ from node to node;
  each agent takes its own jobs (jobs.node_name).
Checks, with expectations computed from the generated scenario definitions and the job plan:
- GpuFellOffBus fires in Prometheus for the faulty node's GPU, labelled with that node, and for
  no other node; the Slurm prolog example (deploy/slurm/prolog.sh) refuses that GPU and accepts
  a healthy one;
- fleet:gpus:count, fleet:gpus_lost:count, fleet:gpu_utilization:avg (within the simulator's
  utilization jitter), team:gpu_job_idle:ratio_rate5m and team:gpu_job_gpus:sum per team.

Light on a 2-core machine: agents collect every 2 s, without their own rule engine (Prometheus
evaluates the pack) and without memory-peak sub-sampling; Prometheus scrapes every 2 s.
Usage: fleet_test.py --gpuwarden build/bin/gpuwarden [--nodes 16] [--keep DIR] [--timeout 240]
"""
import argparse
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "deploy"))
import fleet_scenarios  # noqa: E402
import gwtest  # noqa: E402
import standin_squeue  # noqa: E402


def check(label, ok, detail, failures):
    print("%-4s %s: %s" % ("ok" if ok else "FAIL", label, detail))
    if not ok:
        failures.append("%s: %s" % (label, detail))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpuwarden", required=True)
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--fault-node", type=int, default=7)
    ap.add_argument("--keep", help="keep scenarios, logs and data in this directory")
    ap.add_argument("--timeout", type=float, default=240)
    args = ap.parse_args()
    began = time.monotonic()
    work = None if args.keep else gwtest.TempDir("gw-fleet-")
    workdir = args.keep or work.path
    os.makedirs(workdir, exist_ok=True)

    fleet = fleet_scenarios.Fleet(args.nodes, args.fault_node)
    paths = fleet.write_scenarios(workdir)
    expect = fleet.expectations()
    print("fleet: %d nodes, %d GPUs; expecting %s" % (args.nodes, expect["gpus"], expect))

    plan = {"started": int(time.time()), "jobs": fleet.jobs()}
    answer = os.path.join(workdir, "squeue.json")
    standin_squeue.write_answer(answer, plan)
    stop = threading.Event()

    def keep_answer_current():
        while not stop.wait(1.0):
            standin_squeue.write_answer(answer, plan)

    threading.Thread(target=keep_answer_current, daemon=True).start()

    agents, targets, ports = [], [], {}
    failures = []
    prom = None
    try:
        for node, path in zip(fleet.nodes, paths):
            config = {
                "collect": {"interval": "2s", "slow_interval": "10s", "memory_peak_interval": 0},
                "rules": {"builtin": False, "external_labels": {"node": node.name}},
                "jobs": {"scheduler": "slurm", "squeue_command": ["cat", answer],
                         "poll_interval": "5s", "node_name": node.name},
                "teams": {"accounts": fleet_scenarios.TEAM_OF_ACCOUNT},
                "storage": {"flush_interval": "10m"},
            }
            agent, port = gwtest.start_agent(args.gpuwarden, workdir, node.name,
                                             ["--simulate", path], config)
            agents.append(agent)
            ports[node.name] = port
            targets.append(("127.0.0.1:%d" % port, {"instance": node.name, "rack": node.rack}))
        prom, prom_port = gwtest.start_prometheus(workdir, targets)
        api = gwtest.PromApi("http://127.0.0.1:%d" % prom_port)

        up = gwtest.wait_for(lambda: len(api.values('up{job="gpuwarden"} == 1')) == args.nodes, 120,
                             every_s=2)
        dead = [a.argv for a in agents if not a.running()]
        if not up or dead:
            failures.append("not every agent is up in Prometheus (dead: %s)\n%s" %
                            (dead, prom.output()[-2000:]))
            raise RuntimeError
        print("all %d agents scraped after %.0f s" % (args.nodes, time.monotonic() - began))

        fault = fleet.nodes[args.fault_node - 1]
        fault_gpu = str(fleet_scenarios.FAULT_GPU)

        def fell_off_bus():
            v = api.values('ALERTS{alertname="GpuFellOffBus", alertstate="firing"}')
            return v if v else None

        deadline = began + args.timeout - 20

        def remaining():
            return max(5.0, deadline - time.monotonic())

        alerts = gwtest.wait_for(fell_off_bus, remaining(), every_s=2) or {}
        labels = [dict(k) for k in alerts]
        check("GpuFellOffBus fires for %s GPU %s only" % (fault.name, fault_gpu),
              len(labels) == 1 and labels[0].get("instance") == fault.name and
              labels[0].get("gpu") == fault_gpu and labels[0].get("severity") == "critical" and
              labels[0].get("layer") == "device", labels, failures)

        # Recording rules: wait until each holds the scenario's value (or time runs out), then judge.
        def scalar(expr):
            v = api.values(expr)
            return list(v.values())[0] if len(v) == 1 else None

        def close(value, want, tol):
            return value is not None and abs(value - want) <= tol

        tol = fleet_scenarios.UTIL_TOLERANCE
        for expr, want, tolerance in [
                ("fleet:gpus:count", expect["gpus"], 0),
                ("fleet:gpus_lost:count", expect["gpus_lost"], 0),
                ("fleet:gpu_utilization:avg", expect["utilization"], tol)]:
            got = gwtest.wait_for(lambda: close(scalar(expr), want, tolerance) and scalar(expr),
                                  remaining(), every_s=2)
            value = scalar(expr)
            check(expr, close(value, want, tolerance),
                  "got %s, scenarios imply %.4f (± %g)" % (value, want, tolerance), failures)

        def by_team(expr):
            return {dict(k).get("team"): v for k, v in api.values(expr).items()}

        def teams_match(expr, want, tolerance):
            got = by_team(expr)
            return set(got) == set(want) and all(close(got[t], want[t], tolerance) for t in want)

        for expr, want, tolerance in [
                ("team:gpu_job_gpus:sum", expect["team_gpus"], 0),
                ("team:gpu_job_idle:ratio_rate5m", expect["team_idle_ratio"], 0.02)]:
            gwtest.wait_for(lambda: teams_match(expr, want, tolerance), remaining(), every_s=2)
            check(expr, teams_match(expr, want, tolerance),
                  "got %s, scenarios imply %s (± %g)" % (by_team(expr), want, tolerance), failures)

        # The Slurm prolog example against the faulty node's agent.
        prolog = os.path.join(gwtest.SOURCE_DIR, "deploy/slurm/prolog.sh")
        for gpus, want_rc in [(fault_gpu, 1), ("0,1", 0)]:
            env = dict(os.environ, GPUWARDEN_URL="http://127.0.0.1:%d" % ports[fault.name],
                       SLURM_JOB_ID="4242", SLURM_JOB_GPUS=gpus)
            r = subprocess.run(["bash", prolog], env=env, capture_output=True, text=True, timeout=60)
            check("prolog with GPUs %s on %s" % (gpus, fault.name), r.returncode == want_rc,
                  "exit %d (want %d): %s" % (r.returncode, want_rc, r.stdout.strip()), failures)
    except RuntimeError:
        pass
    finally:
        stop.set()
        if prom:
            prom.stop()
        for a in agents:
            a.stop()
    print("fleet test took %.0f s" % (time.monotonic() - began))
    if failures:
        print("\nFAILED:\n" + "\n".join(failures))
        for a in agents[:1] + [a for a in agents if "exit" in a.output()[-500:]][:2]:
            print("\n%s log (tail):\n%s" % (a.argv[-1], a.output()[-1500:]))
        print("keeping %s" % workdir)
        return 1
    if work:
        work.remove()
    print("fleet: every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
