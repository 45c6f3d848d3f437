#!/usr/bin/env python3
"""End to end on Kubernetes: the real `gpuwarden serve --simulate scenarios/kubernetes.yaml` with
`jobs.scheduler: kubernetes` against the stand-in kubelet (gw-fake-kubelet: a gRPC server on a
unix socket that re-reads a JSON state file on every request), checked through /metrics and the
agent's HTTP API. The GPUs' UUIDs are fixed by the scenario, so the kubelet's device ids are too.

The scripted node (each step rewrites the state file; the pod list is a file read by `cat`):
1. ml-research/train-0 holds GPU 0 (training, a process), vision-prod/serve-0 GPU 1 (inference, a
   process), ml-research/notebook-0 GPU 2 (idle, no process); kube-system/dns-0 holds only a
   non-GPU device. Each GPU pod is a job with its GPU, pod/namespace/container labels and the team
   of its namespace (teams.namespaces, exact and /regex/); the pod list names users. notebook-0 is
   flagged idle and gets a dry-run reclaim decision whose evidence names GPU 2.
2. serve-0 ends, notebook-0 moves to GPU 3 (a new pod instance), vision-dev/jupyter-0 appears on
   GPU 2 running nothing: its team's policy runs deploy/kubernetes/reclaim-hook.sh, which calls a
   fake kubectl with the pod's namespace and name.
3. The kubelet restarts (killed, a new one started on the same socket).
4. A slow kubelet: answers late but within the timeout, then later than the timeout; then
   UNAVAILABLE answers with a text.
5. The socket disappears (kubelet killed) and returns.
6. Every pod ends: records (source kubernetes) for all of them, train-0 COMPLETED (the pod list
   said Succeeded).
Throughout 3-5: the agent reports the outage (gpuwarden_kubernetes_up, _staleness_seconds,
_poll_failures_total), keeps the last known pods, keeps collecting (the collector's cycle count
moves and /metrics answers) and recovers by itself.

Processes with pod UIDs (kubepods cgroups) cannot be made here; tests/k8s core tests cover that
matching with fixture /proc trees.

With --missing-module: the gRPC client module (libgpuwarden-k8s.so, k8s/grpc_module.h) cannot be
found (GPUWARDEN_K8S_MODULE names a path that does not exist) while the kubelet answers: the agent
logs an error naming where it looked, reports gpuwarden_kubernetes_up 0 and keeps collecting and
serving /metrics. The normal run proves the module is found beside the binary (build/bin).
Usage: agent_test.py --gpuwarden build/bin/gpuwarden --fake-kubelet build/bin/gw-fake-kubelet
       [--missing-module]
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(HERE, "..", "deploy"))
import gwtest  # noqa: E402

UUID = ["GPU-6b8e0000-0000-4000-8000-00000000000%d" % i for i in range(4)]
GPU = "nvidia.com/gpu"
failures = []


def check(label, ok, detail=""):
    print("%-4s %s%s" % ("ok" if ok else "FAIL", label, (": " + str(detail)) if detail else ""),
          flush=True)
    if not ok:
        failures.append("%s: %s" % (label, detail))
    return ok


def pod(namespace, name, container, gpus, resource=GPU):
    return {"namespace": namespace, "name": name,
            "containers": [{"name": container,
                            "devices": [{"resource": resource, "ids": [UUID[g] if resource == GPU
                                                                       else "dev-%d" % g
                                                                       for g in gpus],
                                         "numa": [0]}]}]}


def pod_info(namespace, name, owner, phase="Running", uid=None):
    """A v1 Pod as `kubectl get pods -o json` prints it (the fields the agent reads)."""
    status = {"phase": phase, "startTime": "2026-12-01T10:00:00Z"}
    if phase == "Succeeded":
        status["containerStatuses"] = [{"name": "main", "state": {
            "terminated": {"exitCode": 0, "reason": "Completed"}}}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"namespace": namespace, "name": name,
                         "uid": uid or "uid-%s-%s" % (namespace, name),
                         "labels": {"owner": owner},
                         "creationTimestamp": "2026-12-01T09:59:00Z"},
            "spec": {"nodeName": "k8s-node-1"}, "status": status}


def write_json(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, path)


class Kubelet:
    """gw-fake-kubelet on a socket; state() rewrites what it answers."""

    def __init__(self, binary, socket_path, state_path, log_path):
        self.binary, self.socket, self.state_path, self.log_path = (binary, socket_path, state_path,
                                                                    log_path)
        self.proc = None
        self.doc = {"pods": [], "allocatable": [{"resource": GPU, "ids": UUID}], "delay_ms": 0,
                    "fail": "", "allocatable_unimplemented": False}

    def start(self):
        self.proc = gwtest.Process([self.binary, "--socket", self.socket, "--state",
                                    self.state_path], self.log_path)
        ready = gwtest.wait_for(lambda: "ready" in self.proc.output().split("\n")[0] or
                                not self.proc.running(), 30, 0.05) and self.proc.running()
        return check("gw-fake-kubelet says ready", ready, self.proc.output()[-500:])

    def stop(self):
        """Stops it (SIGTERM); its exit status."""
        if not self.proc:
            return 0
        self.proc.stop()
        rc, self.proc = self.proc.proc.returncode, None
        return rc

    def state(self, **changes):
        self.doc.update(changes)
        write_json(self.state_path, self.doc)


def parse_metrics(text):
    """[(name, {labels}, value)] of a text exposition."""
    out = []
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        name, labels, rest = line, {}, ""
        if "{" in line:
            name, tail = line.split("{", 1)
            body, rest = tail.rsplit("}", 1)
            i = 0
            while i < len(body):
                eq = body.index("=", i)
                key = body[i:eq].strip().lstrip(",").strip()
                j, value = eq + 2, ""
                while body[j] != '"':
                    if body[j] == "\\":
                        j += 1
                        value += {"n": "\n"}.get(body[j], body[j])
                    else:
                        value += body[j]
                    j += 1
                labels[key] = value
                i = j + 1
                if i < len(body) and body[i] == ",":
                    i += 1
        else:
            name, rest = line.split(" ", 1)
        out.append((name, labels, float(rest.split()[0])))
    return out


class Agent:
    def __init__(self, port):
        self.base = "http://127.0.0.1:%d" % port

    def metrics(self):
        status, body = gwtest.http_get(self.base + "/metrics", timeout=10)
        return parse_metrics(body) if status == 200 else None

    def get_json(self, path):
        status, body = gwtest.http_get(self.base + path, timeout=10)
        try:
            return json.loads(body)
        except ValueError:
            return {"status": "error", "http": status, "body": body[:200]}


def value(samples, name, **labels):
    """The value of the one series of `name` with these labels; None if none."""
    found = [v for n, ls, v in samples or []
             if n == name and all(ls.get(k) == w for k, w in labels.items())]
    return found[0] if len(found) == 1 else None


def series(samples, name, **labels):
    return [ls for n, ls, v in samples or []
            if n == name and all(ls.get(k) == w for k, w in labels.items())]


def allocations(samples):
    """{job_id: [(gpu, uuid, pod, namespace, container, team, user)]} from gpu_allocation_info."""
    out = {}
    for ls in series(samples, "gpu_allocation_info"):
        out.setdefault(ls.get("job_id"), []).append(
            (ls.get("gpu"), ls.get("uuid"), ls.get("pod"), ls.get("namespace"),
             ls.get("container"), ls.get("team"), ls.get("user")))
    return {k: sorted(v) for k, v in out.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpuwarden", required=True)
    ap.add_argument("--fake-kubelet", required=True)
    ap.add_argument("--keep", help="keep the work directory (logs, state, data) here")
    ap.add_argument("--missing-module", action="store_true",
                    help="only check an agent whose Kubernetes module cannot be found")
    args = ap.parse_args()
    work = None if args.keep else gwtest.TempDir("gw-k8s-e2e-")
    workdir = args.keep or work.path
    os.makedirs(workdir, exist_ok=True)
    socket_path = os.path.join(workdir, "pod-resources", "kubelet.sock")
    os.makedirs(os.path.dirname(socket_path), exist_ok=True)
    kubelet = Kubelet(args.fake_kubelet, socket_path, os.path.join(workdir, "kubelet.json"),
                      os.path.join(workdir, "kubelet.log"))
    pods_path = os.path.join(workdir, "pods.json")
    calls_path = os.path.join(workdir, "kubectl-calls")
    fake_kubectl = os.path.join(workdir, "kubectl")
    with open(fake_kubectl, "w") as f:
        f.write('#!/bin/sh\nprintf "%%s\\n" "$*" >> "%s"\n' % calls_path)
    os.chmod(fake_kubectl, 0o755)
    hook = os.path.join(SRC, "deploy/kubernetes/reclaim-hook.sh")

    config = {
        "collect": {"interval": "250ms", "slow_interval": "1s"},
        "jobs": {"scheduler": "kubernetes", "node_name": "k8s-node-1", "idle_window": "2s",
                 "kubernetes": {"socket": socket_path, "poll_interval": "500ms", "timeout": "2s",
                                "pod_list_command": ["cat", pods_path], "user_label": "owner"}},
        "teams": {"namespaces": {"ml-research": "research", "/vision-.*/": "vision"}},
        "governance": {"reclaim": [
            {"team": "research", "idle_for": "3s", "grace": "2s", "action": "dry-run"},
            {"team": "vision", "idle_for": "3s", "grace": "2s", "action": "command",
             "command": [hook]}]},
    }
    train = pod("ml-research", "train-0", "trainer", [0])
    serve = pod("vision-prod", "serve-0", "triton", [1])
    notebook = pod("ml-research", "notebook-0", "notebook", [2])
    dns = pod("kube-system", "dns-0", "coredns", [0], resource="example.com/nic")
    infos = [pod_info("ml-research", "train-0", "alice"), pod_info("vision-prod", "serve-0", "bob"),
             pod_info("ml-research", "notebook-0", "carol")]
    write_json(pods_path, {"apiVersion": "v1", "kind": "List", "items": infos})
    kubelet.state(pods=[train, serve, notebook, dns])
    agent_proc = None
    try:
        if not kubelet.start():
            return 1
        port = gwtest.free_port()
        config_path = os.path.join(workdir, "gpuwarden.yaml")
        gwtest.write(config_path, json.dumps(config))
        hook_log_path = os.path.join(workdir, "reclaim-hook.log")
        env = dict(os.environ, KUBECTL=fake_kubectl, GPUWARDEN_HOOK_LOG=hook_log_path)
        env.pop("GPUWARDEN_K8S_MODULE", None)
        missing_module = os.path.join(workdir, "no-such-dir", "libgpuwarden-k8s.so")
        if args.missing_module:
            env["GPUWARDEN_K8S_MODULE"] = missing_module
        agent_proc = gwtest.Process(
            [args.gpuwarden, "serve", "--listen", "127.0.0.1:%d" % port, "--data-dir",
             os.path.join(workdir, "data"), "--config", config_path, "--simulate",
             os.path.join(SRC, "scenarios/kubernetes.yaml")],
            os.path.join(workdir, "gpuwarden.log"), env=env)
        agent = Agent(port)
        if args.missing_module:
            run_missing_module(agent, agent_proc, missing_module)
        else:
            run_scenario(agent, agent_proc, kubelet, pods_path, calls_path, hook_log_path, infos)
    finally:
        if agent_proc:
            agent_proc.stop()
            log = agent_proc.output()
            if failures:
                print("--- gpuwarden log (last 6000 characters)\n" + log[-6000:])
            check("the agent stopped cleanly", agent_proc.proc.returncode == 0,
                  agent_proc.proc.returncode)
        kubelet.stop()
        if work:
            work.remove()
    for f in failures:
        print("FAILED: " + f)
    return 1 if failures else 0


def wait_metrics(agent, ready, timeout_s):
    """Polls /metrics until ready(samples) is true; returns the last samples."""
    last = [None]

    def probe():
        last[0] = agent.metrics()
        return last[0] is not None and ready(last[0])
    gwtest.wait_for(probe, timeout_s, 0.25)
    return last[0]


def cycles(samples):
    return value(samples, "gpuwarden_collect_cycles_total", schedule="fast")


def jobs_by_id(agent):
    doc = agent.get_json("/api/gw/v1/jobs")
    out = {}
    for j in (doc.get("data") or {}).get("jobs", []):
        out.setdefault(j.get("job_id"), []).append(j)
    return out


def decisions(agent):
    doc = agent.get_json("/api/gw/v1/reclaim")
    return (doc.get("data") or {}).get("decisions", [])


def collecting_through(agent, label, seconds):
    """While the kubelet is away or slow: /metrics answers and the collector keeps cycling."""
    before = agent.metrics()
    time.sleep(seconds)
    after = agent.metrics()
    ok = before is not None and after is not None and cycles(before) is not None and \
        cycles(after) is not None and cycles(after) >= cycles(before) + 2
    check("%s: /metrics answers and collection goes on" % label, ok,
          "fast cycles %s -> %s over %.1f s" % (before and cycles(before),
                                                after and cycles(after), seconds))
    return after


def run_missing_module(agent, agent_proc, missing_module):
    s = wait_metrics(agent, lambda s: value(s, "gpuwarden_kubernetes_up") is not None and
                     value(s, "gpuwarden_kubernetes_polls_total") not in (None, 0), 20)
    check("module missing: /metrics answers with gpuwarden_kubernetes_up 0",
          s is not None and value(s, "gpuwarden_kubernetes_up") == 0,
          s and value(s, "gpuwarden_kubernetes_up"))
    check("module missing: no pods attributed (the kubelet answers, but nothing reads it)",
          s is not None and not allocations(s), s and allocations(s))
    collecting_through(agent, "module missing", 2)
    log = agent_proc.output()
    check("module missing: the log says the module was not found and names the path",
          "libgpuwarden-k8s.so (the gRPC client) was not found" in log and missing_module in log
          and "runs without the Kubernetes source" in log,
          [line for line in log.splitlines() if "kubernetes:" in line][:3])


def run_scenario(agent, agent_proc, kubelet, pods_path, calls_path, hook_log_path, infos):
    # --- 1. three GPU pods.
    s = wait_metrics(agent, lambda s: value(s, "gpuwarden_kubernetes_up") == 1 and
                     len(allocations(s)) >= 3, 60)
    if not check("the agent is up with the kubelet's pods", s is not None and
                 value(s, "gpuwarden_kubernetes_up") == 1,
                 agent_proc.output()[-2000:] if s is None else allocations(s)):
        return
    want = {
        "ml-research/train-0": [("0", UUID[0], "train-0", "ml-research", "trainer", "research",
                                 "alice")],
        "vision-prod/serve-0": [("1", UUID[1], "serve-0", "vision-prod", "triton", "vision", "bob")],
        "ml-research/notebook-0": [("2", UUID[2], "notebook-0", "ml-research", "notebook",
                                    "research", "carol")],
    }
    # The pod list (users) may land a poll after the kubelet's answer.
    s = wait_metrics(agent, lambda s: allocations(s) == want, 10)
    check("gpu_allocation_info: each pod on its GPU with pod, namespace, container, team, user",
          allocations(s) == want, allocations(s))
    check("a pod holding no GPU is no job", "kube-system/dns-0" not in allocations(s))
    check("gpuwarden_kubernetes_allocatable_devices", value(
        s, "gpuwarden_kubernetes_allocatable_devices", resource=GPU) == 4,
        series(s, "gpuwarden_kubernetes_allocatable_devices"))
    check("gpuwarden_kubernetes_allocated_devices", value(
        s, "gpuwarden_kubernetes_allocated_devices", resource=GPU) == 3,
        series(s, "gpuwarden_kubernetes_allocated_devices"))
    check("gpuwarden_kubernetes_unknown_devices is 0",
          value(s, "gpuwarden_kubernetes_unknown_devices") == 0)
    check("gpuwarden_kubernetes_pod_list_up", value(s, "gpuwarden_kubernetes_pod_list_up") == 1)
    for family in ("gpu_job_gpus", "gpu_job_idle_streak_seconds"):
        got = {ls.get("job_id"): (ls.get("pod"), ls.get("namespace"))
               for ls in series(s, family)}
        check("%s carries pod and namespace" % family,
              got.get("ml-research/train-0") == ("train-0", "ml-research") and
              got.get("vision-prod/serve-0") == ("serve-0", "vision-prod"), got)
    running = jobs_by_id(agent)
    j = (running.get("ml-research/notebook-0") or [{}])[0]
    check("the jobs API: notebook-0 is a running kubernetes job of namespace ml-research",
          j.get("state") == "RUNNING" and j.get("source") == "kubernetes" and
          j.get("account") == "ml-research" and j.get("name") == "notebook-0" and
          j.get("team") == "research", j)
    # Device series carry no job labels (outside dcgm-exporter mode).
    check("device series carry no pod labels", not [
        n for n, ls, v in s if not n.startswith("gpu_job_") and n != "gpu_allocation_info" and
        ("pod" in ls and n.startswith("gpu_"))])

    # notebook-0 runs nothing: idle, then a dry-run reclaim decision with evidence; the busy pods
    # are left alone.
    s = wait_metrics(agent, lambda s: (value(s, "gpu_job_idle_streak_seconds",
                                             job_id="ml-research/notebook-0") or 0) >= 2 and
                     (value(s, "gpu_idle_allocated_gpus") or 0) >= 1, 30)
    check("notebook-0 flagged idle (gpu_job_idle_streak_seconds, gpu_idle_allocated_gpus)",
          (value(s, "gpu_job_idle_streak_seconds", job_id="ml-research/notebook-0") or 0) >= 2 and
          value(s, "gpu_idle_allocated_gpus") >= 1,
          (value(s, "gpu_job_idle_streak_seconds", job_id="ml-research/notebook-0"),
           value(s, "gpu_idle_allocated_gpus")))
    check("busy pods are not idle", value(s, "gpu_job_idle_streak_seconds",
                                          job_id="ml-research/train-0") == 0)
    actions = []
    gwtest.wait_for(lambda: actions.extend(
        d for d in decisions(agent) if d.get("job_id") == "ml-research/notebook-0" and
        d.get("stage") == "action") or actions, 30)
    d = actions[0] if actions else {}
    gpus = (d.get("evidence") or {}).get("gpus") or [{}]
    check("notebook-0: a dry-run reclaim decision with evidence naming GPU 2",
          d.get("action") == "dry-run" and d.get("team") == "research" and
          gpus[0].get("uuid") == UUID[2] and (d["evidence"].get("idle_s") or 0) >= 3, d)
    check("no decision for the busy pods", not [
        x for x in decisions(agent) if x.get("job_id") in ("ml-research/train-0",
                                                             "vision-prod/serve-0")])

    # --- 2. serve-0 ends, notebook-0 moves to GPU 3, jupyter-0 appears idle on GPU 2.
    jupyter = pod("vision-dev", "jupyter-0", "lab", [2])
    infos = [i for i in infos if i["metadata"]["name"] != "serve-0"] + [
        pod_info("vision-dev", "jupyter-0", "dave")]
    write_json(pods_path, {"apiVersion": "v1", "kind": "List", "items": infos})
    kubelet.state(pods=[pod("ml-research", "train-0", "trainer", [0]),
                        pod("ml-research", "notebook-0", "notebook", [3]), jupyter])
    s = wait_metrics(agent, lambda s: "vision-prod/serve-0" not in allocations(s) and
                     [a[0] for a in allocations(s).get("ml-research/notebook-0", [])] == ["3"] and
                     "vision-dev/jupyter-0" in allocations(s), 15)
    a = allocations(s)
    check("serve-0 gone, notebook-0 now on GPU 3, jupyter-0 on GPU 2 (team vision by /regex/)",
          "vision-prod/serve-0" not in a and
          [x[0] for x in a.get("ml-research/notebook-0", [])] == ["3"] and
          a.get("vision-dev/jupyter-0") == [("2", UUID[2], "jupyter-0", "vision-dev", "lab",
                                             "vision", "dave")], a)
    records = {}
    gwtest.wait_for(lambda: records.update(jobs_by_id(agent)) or
                    any(r.get("state") != "RUNNING"
                        for r in records.get("vision-prod/serve-0", [])), 10)
    ended = [r for r in records.get("vision-prod/serve-0", []) if r.get("state") != "RUNNING"]
    check("serve-0 has a record (source kubernetes, team vision, its GPU)",
          len(ended) == 1 and ended[0].get("source") == "kubernetes" and
          ended[0].get("team") == "vision" and ended[0].get("account") == "vision-prod", ended)
    # jupyter-0's team policy runs the example hook, which deletes the pod with (fake) kubectl.
    calls = []

    def hook_called():
        if os.path.exists(calls_path):
            with open(calls_path) as f:
                calls[:] = f.read().splitlines()
        return calls
    gwtest.wait_for(hook_called, 30)
    check("the reclaim hook ran kubectl delete for vision-dev/jupyter-0",
          len(calls) == 1 and calls[0].startswith(
              "delete pod --namespace vision-dev jupyter-0 --wait=false"), calls)
    hook_log = open(hook_log_path).read().splitlines() if os.path.exists(hook_log_path) else []
    check("the hook logged the pod and the decision's evidence (GPU 2's UUID)",
          any("vision-dev/jupyter-0" in line and UUID[2] in line for line in hook_log), hook_log)

    # --- 3. the kubelet restarts.
    failures_before = value(agent.metrics(), "gpuwarden_kubernetes_poll_failures_total") or 0
    check("gw-fake-kubelet stops with 0 on SIGTERM", kubelet.stop() == 0)
    check("the socket is gone with it", not os.path.exists(kubelet.socket))
    s = wait_metrics(agent, lambda s: value(s, "gpuwarden_kubernetes_up") == 0, 10)
    check("kubelet down: gpuwarden_kubernetes_up 0", value(s, "gpuwarden_kubernetes_up") == 0)
    s = collecting_through(agent, "kubelet down", 2.5)
    check("kubelet down: staleness grows, failures counted, pods kept",
          (value(s, "gpuwarden_kubernetes_staleness_seconds") or 0) >= 2 and
          value(s, "gpuwarden_kubernetes_poll_failures_total") > failures_before and
          "vision-dev/jupyter-0" in allocations(s) and "ml-research/train-0" in allocations(s),
          (value(s, "gpuwarden_kubernetes_staleness_seconds"),
           value(s, "gpuwarden_kubernetes_poll_failures_total"), sorted(allocations(s))))
    if not kubelet.start():
        return
    s = wait_metrics(agent, lambda s: value(s, "gpuwarden_kubernetes_up") == 1, 15)
    check("kubelet back: up 1, staleness small again",
          value(s, "gpuwarden_kubernetes_up") == 1 and
          value(s, "gpuwarden_kubernetes_staleness_seconds") < 2,
          value(s, "gpuwarden_kubernetes_staleness_seconds"))
    log = agent_proc.output()
    down_lines = [line for line in log.splitlines() if "kubernetes" in line and "keeps" in line]
    check("the outage was logged once", len(down_lines) == 1, down_lines)

    # --- 4. a slow kubelet: late answers within the timeout, then past it.
    kubelet.state(delay_ms=1000)
    time.sleep(0.5)
    s = collecting_through(agent, "slow kubelet (1 s, within the 2 s timeout)", 3)
    check("slow kubelet within the timeout: still up", value(s, "gpuwarden_kubernetes_up") == 1)
    failures_before = value(s, "gpuwarden_kubernetes_poll_failures_total")
    kubelet.state(delay_ms=5000)
    s = wait_metrics(agent, lambda s: value(s, "gpuwarden_kubernetes_up") == 0, 15)
    s = collecting_through(agent, "slow kubelet (5 s, past the 2 s timeout)", 2.5)
    check("answers past the timeout: up 0, failures counted, staleness grows, pods kept",
          value(s, "gpuwarden_kubernetes_up") == 0 and
          value(s, "gpuwarden_kubernetes_poll_failures_total") > failures_before and
          value(s, "gpuwarden_kubernetes_staleness_seconds") >= 2 and
          "ml-research/train-0" in allocations(s),
          (value(s, "gpuwarden_kubernetes_up"), value(s, "gpuwarden_kubernetes_poll_failures_total"),
           value(s, "gpuwarden_kubernetes_staleness_seconds")))
    kubelet.state(delay_ms=0)
    s = wait_metrics(agent, lambda s: value(s, "gpuwarden_kubernetes_up") == 1, 20)
    check("fast again: up 1", value(s, "gpuwarden_kubernetes_up") == 1)
    # An error answer (UNAVAILABLE with a text) is an outage too.
    kubelet.state(fail="kubelet is shutting down")
    s = wait_metrics(agent, lambda s: value(s, "gpuwarden_kubernetes_up") == 0, 10)
    check("UNAVAILABLE answers: up 0", value(s, "gpuwarden_kubernetes_up") == 0)
    check("... and the kubelet's error is in the log",
          "kubelet is shutting down" in agent_proc.output())
    kubelet.state(fail="")
    s = wait_metrics(agent, lambda s: value(s, "gpuwarden_kubernetes_up") == 1, 10)
    check("... recovered", value(s, "gpuwarden_kubernetes_up") == 1)

    # --- 5. the socket disappears and returns; a pod ends meanwhile.
    kubelet.stop()
    s = wait_metrics(agent, lambda s: value(s, "gpuwarden_kubernetes_up") == 0, 10)
    s = collecting_through(agent, "socket gone", 2)
    check("socket gone: pods kept", "ml-research/notebook-0" in allocations(s),
          sorted(allocations(s)))
    # train-0 finishes while the socket is away: the pod list says Succeeded, the kubelet no
    # longer lists it when it returns.
    for i in infos:
        if i["metadata"]["name"] == "train-0":
            i["status"] = pod_info("ml-research", "train-0", "alice", phase="Succeeded")["status"]
    write_json(pods_path, {"apiVersion": "v1", "kind": "List", "items": infos})
    kubelet.state(pods=[pod("ml-research", "notebook-0", "notebook", [3]), jupyter])
    if not kubelet.start():
        return
    s = wait_metrics(agent, lambda s: value(s, "gpuwarden_kubernetes_up") == 1 and
                     "ml-research/train-0" not in allocations(s), 15)
    check("socket back: up 1, train-0 (ended meanwhile) gone",
          value(s, "gpuwarden_kubernetes_up") == 1 and
          "ml-research/train-0" not in allocations(s), sorted(allocations(s)))

    # --- 6. every pod ends.
    kubelet.state(pods=[])
    s = wait_metrics(agent, lambda s: not allocations(s), 15)
    check("no pods: no gpu_allocation_info", not allocations(s), allocations(s))
    records = {}
    gwtest.wait_for(lambda: records.update(jobs_by_id(agent)) or all(
        any(r.get("state") != "RUNNING" for r in records.get(j, []))
        for j in ("ml-research/train-0", "vision-dev/jupyter-0", "ml-research/notebook-0")), 10)
    for job_id in ("ml-research/train-0", "vision-dev/jupyter-0", "ml-research/notebook-0"):
        ended = [r for r in records.get(job_id, []) if r.get("state") != "RUNNING"]
        check("%s has a record from kubernetes" % job_id,
              ended and all(r.get("source") == "kubernetes" for r in ended), ended)
    train = [r for r in records.get("ml-research/train-0", []) if r.get("state") != "RUNNING"]
    check("train-0 COMPLETED (the pod list said Succeeded), user alice",
          len(train) == 1 and train[0].get("state") == "COMPLETED" and
          train[0].get("user") == "alice", train)
    # notebook-0 moved: the instance on GPU 2 and the one on GPU 3 are two records.
    check("notebook-0: two records (it moved from GPU 2 to GPU 3)",
          len([r for r in records.get("ml-research/notebook-0", [])
               if r.get("state") != "RUNNING"]) == 2,
          records.get("ml-research/notebook-0"))


if __name__ == "__main__":
    sys.exit(main())
