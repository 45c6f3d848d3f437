#!/usr/bin/env python3
"""Every Grafana panel's PromQL (deploy/grafana/dashboards/*.json), run where Grafana would run it.

One `gpuwarden serve --simulate demo` (the 8-GPU demo, real time) with a stand-in squeue for a
busy Slurm cluster (standin_squeue.py: four jobs on this node, one of them starting 40 s in, a
stream of short jobs elsewhere, two pending), and a real Prometheus 2.42 scraping it with the
shipped deploy/prometheus/prometheus.yml (rule pack loaded, evaluation every 2 s).

Each query of every panel, annotation and variable, with the dashboard variables substituted as
Grafana does, goes to /api/v1/query_range of both:
- Prometheus: $node is the agent's instance label (demo-node), $gpu each GPU the variable lists;
- the agent itself: no `instance` label there, so $node is the variable's "All" value (.*).
Also: every alert Prometheus holds about a GPU names the node (instance).
A query passes when both answer "success" (so it parses in both) and both return at least one
series with a number (not only NaN) for some value of $gpu. The queries are retried until they
all pass or the time is up; the few that legitimately have no data on the demo are listed in
EXPECTED_EMPTY with the reason, and are still required to parse.

Usage: panels_test.py --gpuwarden build/bin/gpuwarden [--keep DIR] [--timeout 300]
"""
import argparse
import glob
import json
import math
import os
import re
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gwtest  # noqa: E402
import standin_squeue  # noqa: E402

NODE = "demo-node"
RATE_INTERVAL = "1m"
STEP_S = 5

# (substring of the query) -> why the demo has no data for it.
EXPECTED_EMPTY = {
    "gpu_fan_speed_ratio": "no GPU of the demo has a fan: H100/H200/A100 SXM and L40S boards are "
                           "passive (absent means unsupported, docs/metrics.md)",
    "gpu_retired_pages": "page retirement is a pre-Ampere (V100) feature; the demo's GPUs remap "
                         "rows instead (gpu_remapped_rows has data)",
    'alertstate="firing"}': "nothing fires on the demo's GPUs in its first minutes: the alert "
                            "annotation marks firing alerts only (GpuPowerSwings is pending for 10 m)",
}

PLAN_JOBS = [
    {"job_id": 1001, "name": "llm-pretrain", "user": "alice", "account": "ml-research",
     "partition": "gpu", "node": NODE, "gpus": [0, 1, 2, 3]},
    {"job_id": 1002, "name": "triton-serve", "user": "bob", "account": "inference",
     "partition": "gpu", "node": NODE, "gpus": [4, 5]},
    {"job_id": 1003, "name": "spark-etl", "user": "carol", "account": "analytics",
     "partition": "gpu", "node": NODE, "gpus": [6], "start_after": 40},
    {"job_id": 1004, "name": "notebook", "user": "dave", "account": "ml-research",
     "partition": "debug", "node": NODE, "gpus": [7]},
]
TEAMS = {"ml-research": "research", "inference": "serving", "analytics": "data", "batch": "batch"}


class Query:
    def __init__(self, board, where, expr):
        self.board, self.where, self.expr = board, where, expr
        self.status = {}  # backend -> "data" | "empty" | error text

    def expected_empty(self):
        for key, why in EXPECTED_EMPTY.items():
            if key in self.expr:
                return why
        return None

    def name(self):
        return "%s / %s" % (self.board, self.where)


def dashboard_queries(path):
    with open(path) as f:
        board = json.load(f)
    title = board["title"]
    out = []
    for p in board["panels"]:
        for t in p.get("targets", []):
            out.append(Query(title, "%s [%s]" % (p["title"], t["refId"]), t["expr"]))
    for a in board["annotations"]["list"]:
        if "expr" in a:
            out.append(Query(title, "annotation " + a["name"], a["expr"]))
    return board, out


def variable_queries(board):
    """The label_values(selector, label) variables: [(name, selector, label)]."""
    out = []
    for v in board["templating"]["list"]:
        if v["type"] != "query":
            continue
        m = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", v["definition"])
        assert m, "%s: variable %s is not label_values(...)" % (board["title"], v["name"])
        out.append((v["name"], m.group(1), m.group(2)))
    return out


def substitute(expr, values, range_s):
    expr = expr.replace("$__rate_interval", RATE_INTERVAL).replace("$__range", "%ds" % range_s)
    expr = expr.replace("$__interval", "%ds" % STEP_S)
    for name in sorted(values, key=len, reverse=True):
        expr = expr.replace("$" + name, values[name])
    assert "$" not in expr, "unsubstituted variable in " + expr
    return expr


def has_numbers(doc):
    if doc.get("status") != "success":
        return False
    for series in doc["data"]["result"]:
        for _, v in series.get("values", []):
            if not math.isnan(float(v)):
                return True
    return False


def run_once(queries, backends, start, end):
    for q in queries:
        for name, (api, values_list) in backends.items():
            if q.status.get(name) == "data":
                continue
            status = "empty"
            for values in values_list(q.expr):
                doc = api.query_range(substitute(q.expr, values, int(end - start)), start, end, STEP_S)
                if doc.get("status") != "success":
                    status = "error: %s" % doc.get("error")
                    break
                if has_numbers(doc):
                    status = "data"
                    break
            q.status[name] = status


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpuwarden", required=True)
    ap.add_argument("--keep", help="keep logs and data in this directory")
    ap.add_argument("--timeout", type=float, default=300)
    args = ap.parse_args()
    began = time.monotonic()
    work = gwtest.TempDir("gw-panels-") if not args.keep else None
    workdir = args.keep or work.path
    os.makedirs(workdir, exist_ok=True)

    boards = []
    for path in sorted(glob.glob(os.path.join(gwtest.SOURCE_DIR, "deploy/grafana/dashboards/*.json"))):
        boards.append(dashboard_queries(path))
    assert len(boards) >= 4, "expected the four dashboards"

    plan = {"started": int(time.time()), "jobs": PLAN_JOBS}
    answer = os.path.join(workdir, "squeue.json")
    standin_squeue.write_answer(answer, plan)
    stop = threading.Event()

    def keep_answer_current():
        while not stop.wait(1.0):
            standin_squeue.write_answer(answer, plan)

    writer = threading.Thread(target=keep_answer_current, daemon=True)
    writer.start()

    # Prometheus first, so it sees the agent's first samples and the job that starts later.
    agent_port = gwtest.free_port()
    prom, prom_port = gwtest.start_prometheus(
        workdir, [("127.0.0.1:%d" % agent_port, {"instance": NODE})])
    config = {
        "jobs": {"scheduler": "slurm", "squeue_command": ["cat", answer], "poll_interval": "2s",
                 "node_name": NODE},
        "teams": {"accounts": TEAMS},
        "rules": {"evaluation_interval": "5s"},
    }
    gwtest.write(os.path.join(workdir, "agent.yaml"), gwtest.yaml.safe_dump(config))
    agent = gwtest.Process([args.gpuwarden, "serve", "--simulate", "demo", "--listen",
                            "127.0.0.1:%d" % agent_port, "--data-dir",
                            os.path.join(workdir, "agent-data"), "--config",
                            os.path.join(workdir, "agent.yaml")],
                           os.path.join(workdir, "agent.log"))
    prom_api = gwtest.PromApi("http://127.0.0.1:%d" % prom_port)
    agent_api = gwtest.PromApi("http://127.0.0.1:%d" % agent_port)
    failures = []
    try:
        up = gwtest.wait_for(lambda: prom_api.values('up{job="gpuwarden", instance="%s"} == 1'
                                                     % NODE), 90)
        if not up:
            raise SystemExit("Prometheus never scraped the agent:\n" + prom.output()[-3000:] +
                             agent.output()[-3000:])
        start = time.time() - 5

        # Variables: Prometheus lists the node, the GPUs and the teams; the agent answers (no
        # instance label there: Grafana shows "All", .*).
        gpus_prom = gwtest.wait_for(
            lambda: prom_api.label_values("gpu", 'gpu_up{instance=~"%s"}' % NODE), 30)
        for board, _ in boards:
            for name, selector, label in variable_queries(board):
                sel = selector.replace("$node", NODE)
                got = gwtest.wait_for(lambda: prom_api.label_values(label, sel), 60)
                if not got:
                    failures.append("%s: variable %s: Prometheus lists no values for %s" %
                                    (board["title"], name, selector))
                if agent_api.label_values(label, selector.replace("$node", ".*")) is None:
                    failures.append("%s: variable %s: the agent refused label_values(%s, %s)" %
                                    (board["title"], name, selector, label))

        def prom_values(expr):
            gpus = gpus_prom if "$gpu" in expr else ["0"]
            return [{"node": NODE, "gpu": g, "team": ".*"} for g in gpus]

        def agent_values(expr):
            gpus = [str(i) for i in range(8)] if "$gpu" in expr else ["0"]
            return [{"node": ".*", "gpu": g, "team": ".*"} for g in gpus]

        backends = {"prometheus": (prom_api, prom_values), "gpuwarden": (agent_api, agent_values)}
        queries = [q for _, qs in boards for q in qs]
        deadline = began + args.timeout - 30
        while True:
            run_once(queries, backends, start, time.time())
            missing = [q for q in queries if not q.expected_empty() and
                       any(q.status.get(b) != "data" for b in backends)]
            errors = [q for q in queries if any(s.startswith("error") for s in q.status.values())]
            if (not missing and not errors) or time.monotonic() > deadline:
                break
            time.sleep(5)
        # In a fleet an alert about a GPU must name its node (instance): the pack's expressions
        # must not drop it (a one-to-one `on(gpu, uuid)` does), or Alertmanager cannot group or
        # route per node. The demo keeps GpuPowerSwings pending on its inference GPUs.
        gpu_alerts = gwtest.wait_for(lambda: prom_api.values('ALERTS{gpu!=""}'), 60)
        if not gpu_alerts:
            failures.append("no GPU alert is pending or firing in Prometheus to check")
        for labels in map(dict, gpu_alerts or {}):
            if labels.get("instance") != NODE:
                failures.append("Prometheus alert %s on GPU %s does not name the node: %s" %
                                (labels.get("alertname"), labels.get("gpu"), labels))
    finally:
        stop.set()
        agent.stop()
        prom.stop()

    print("%-90s %-12s %-12s" % ("query", "prometheus", "gpuwarden"))
    for q in queries:
        print("%-90s %-12s %-12s" % (q.name()[:90], q.status.get("prometheus", "-")[:12],
                                     q.status.get("gpuwarden", "-")[:12]))
    for q in queries:
        for backend, status in q.status.items():
            if status.startswith("error"):
                failures.append("%s: %s does not accept it: %s\n    %s" %
                                (q.name(), backend, status, q.expr))
            elif status != "data" and not q.expected_empty():
                failures.append("%s: no data from %s\n    %s" % (q.name(), backend, q.expr))
    empty = [q for q in queries if q.expected_empty()]
    print("\n%d queries in %d dashboards; expected without data on the demo:" %
          (len(queries), len(boards)))
    for q in empty:
        print("  %s (%s): %s" % (q.name(), ", ".join("%s %s" % kv for kv in q.status.items()),
                                 q.expected_empty()))
    if failures:
        print("\nFAILED:\n" + "\n".join(failures))
        print("\nagent log (tail):\n" + agent.output()[-2000:])
        return 1
    if work:
        work.remove()
    print("\nall panels answer from both Prometheus and gpuwarden")
    return 0


if __name__ == "__main__":
    sys.exit(main())
