#!/usr/bin/env python3
"""Remote write acceptance test (issue 18): N simulated agents (default 16, stepped clocks, a few
GPUs each) remote-write to a real VictoriaMetrics 1.79 and a real Prometheus 2.42
(--web.enable-remote-write-receiver), both on loopback, and one agent also to a stand-in that
answers every request with HTTP 400.

1. Every agent advances its simulated clock; the stores receive everything.
2. Both stores stop (the outage). The agents advance 5 simulated minutes; one agent is restarted
   in the middle of the outage (SIGTERM, then the same data directory, its clock continued).
3. The stores start again on the same data; the agents advance a little more.
Checks, per agent and per series: the raw samples of the whole run in the agent's own query API
(`{__name__=~".+"}[W]`) equal each store's — the same count (every sample arrives, none twice),
timestamps and values; no sample was refused by either store (anything out of order would be); the 400 endpoint's samples are counted in
prometheus_remote_storage_samples_failed_total, each request tried once, none retried.

Light on a 2-core machine: --gpus GPUs per agent (default 1), collection every second.
Usage: remote_write_fleet_test.py --gpuwarden build/bin/gpuwarden [--nodes 16] [--gpus 1]
       [--keep DIR] [--timeout 240]
"""
import argparse
import concurrent.futures
import http.server
import os
import re
import sys
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(HERE, "..", "deploy"))
import gwtest  # noqa: E402

MODELS = ["H100", "A100-80GB", "H200", "L40S"]
BEFORE_S, OUTAGE_S, AFTER_S = 120, 300, 30
RESTARTED = 3  # the agent restarted during the outage (1-based)


def post(url, timeout=60):
    """(status, body) of an empty POST; 0 when nothing answered."""
    try:
        req = urllib.request.Request(url, data=b"", method="POST")
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except (urllib.error.URLError, OSError) as e:
        return 0, str(e)


def check(label, ok, detail, failures):
    print("%-4s %s: %s" % ("ok" if ok else "FAIL", label, detail), flush=True)
    if not ok:
        failures.append("%s: %s" % (label, detail))


class Refuser:
    """A loopback HTTP server answering every POST with 400, counting them."""

    def __init__(self):
        self.requests = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length", "0"))
                self.rfile.read(length)
                outer.requests += 1
                body = b"refused by the test: bad labels\n"
                self.send_response(400)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()


class Stores:
    """VictoriaMetrics and Prometheus with its receiver, restartable on the same data and ports."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.vm_port, self.prom_port = gwtest.free_port(), gwtest.free_port()
        gwtest.write(os.path.join(workdir, "prometheus.yml"), "global: {}\n")
        self.vm = self.prom = None
        self.starts = 0

    def start(self):
        self.starts += 1
        self.vm = gwtest.Process(
            ["victoria-metrics", "-httpListenAddr=127.0.0.1:%d" % self.vm_port,
             "-storageDataPath=" + os.path.join(self.workdir, "vm-data"), "-retentionPeriod=100y",
             "-search.latencyOffset=0s", "-search.disableCache"],
            os.path.join(self.workdir, "vm-%d.log" % self.starts))
        self.prom = gwtest.Process(
            ["prometheus", "--config.file=" + os.path.join(self.workdir, "prometheus.yml"),
             "--web.enable-remote-write-receiver",
             "--storage.tsdb.path=" + os.path.join(self.workdir, "prom-data"),
             "--web.listen-address=127.0.0.1:%d" % self.prom_port],
            os.path.join(self.workdir, "prom-%d.log" % self.starts))
        ok = gwtest.wait_for(
            lambda: gwtest.http_get("http://127.0.0.1:%d/health" % self.vm_port)[0] == 200 and
            gwtest.http_get("http://127.0.0.1:%d/-/ready" % self.prom_port)[0] == 200, 60)
        if not ok:
            raise RuntimeError("stores did not start:\n" + self.vm.output()[-1500:] +
                               self.prom.output()[-1500:])

    def stop(self):
        for p in (self.vm, self.prom):
            if p:
                p.stop()

    def apis(self):
        return {"vm": gwtest.PromApi("http://127.0.0.1:%d" % self.vm_port),
                "prom": gwtest.PromApi("http://127.0.0.1:%d" % self.prom_port)}


class Agent:
    def __init__(self, args, workdir, k, sim_start, endpoints):
        self.args, self.workdir, self.k = args, workdir, k
        self.name = "node-%02d" % k
        self.scenario = os.path.join(workdir, self.name + ".yaml")
        gwtest.write(self.scenario, (
            "name: %s\ndescription: remote write test node\nseed: %d\ngpus:\n"
            "  - model: %s\n    count: %d\n"
            "    workload:\n      - {type: training, util: %d, mem_util: 40}\n") %
            (self.name, 2000 + k, MODELS[k % len(MODELS)], args.gpus, 60 + 5 * (k % 8)))
        self.config = {
            "collect": {"interval": "1s", "slow_interval": "10s", "memory_peak_interval": 0},
            "rules": {"builtin": False, "external_labels": {"node": self.name}},
            "storage": {"flush_interval": "2m"},  # WAL checkpoints during the run
            "remote_write": endpoints,
        }
        self.sim_start = sim_start
        self.virtual_s = 0  # simulated seconds advanced in this process
        self.last_t = 0.0   # the newest snapshot's time
        self.start()

    def start(self):
        self.proc, self.port = gwtest.start_agent(
            self.args.gpuwarden, self.workdir, self.name,
            ["--simulate", self.scenario, "--sim-clock", "stepped", "--sim-start",
             "%d" % self.sim_start], self.config)
        self.api = gwtest.PromApi("http://127.0.0.1:%d" % self.port)
        if not gwtest.wait_for(lambda: gwtest.http_get(self.url("/readyz"))[0] == 200, 60):
            raise RuntimeError("%s did not start:\n%s" % (self.name, self.proc.output()[-2000:]))

    def url(self, path):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def advance(self, seconds):
        # In steps of 30 s, so the queues' threads send while time moves.
        done = 0
        while done < seconds:
            step = min(30, seconds - done)
            status, body = post(self.url("/-/sim/advance?seconds=%d" % step), timeout=120)
            if status != 200:
                raise RuntimeError("%s: advance: HTTP %d %s" % (self.name, status, body))
            done += step
        self.virtual_s += seconds
        self.last_t = self.sim_start + self.virtual_s

    def restart(self):
        """SIGTERM, then the same data directory with the clock continued a second later."""
        self.proc.stop()
        self.sim_start = self.sim_start + self.virtual_s + 1
        self.virtual_s = 0
        self.start()

    def metrics(self):
        status, body = gwtest.http_get(self.url("/metrics"))
        out = {}
        for line in body.splitlines():
            if line.startswith("prometheus_remote_storage_") or line.startswith(
                    "gpuwarden_remote_write_"):
                name_labels, value = line.rsplit(" ", 1)
                out[name_labels] = float(value)
        return out

    def figure(self, family, remote):
        for key, v in self.metrics().items():
            if key.startswith(family + "{") and 'remote_name="%s"' % remote in key:
                return v
        return None


def series_samples(api, expr, at):
    """{labels without node: [(t_ms, value text)]} of a range-vector selector, raw samples."""
    doc = api.query(expr, at)
    if doc.get("status") != "success":
        return None
    out = {}
    for r in doc["data"]["result"]:
        labels = {k: v for k, v in r["metric"].items() if k != "node"}
        out[frozenset(labels.items())] = [(round(float(t) * 1000), v) for t, v in r["values"]]
    return out


def same(mine, got, exact):
    """Whether two series' raw samples match: timestamps exactly; values exactly, or for
    VictoriaMetrics (which stores a value as a decimal mantissa and exponent, rounding beyond ~12
    significant digits: 0.5295499999999999 comes back 0.52955) within a relative 1e-9."""
    if len(mine) != len(got):
        return False
    for (t1, v1), (t2, v2) in zip(mine, got):
        if t1 != t2:
            return False
        if v1 == v2:
            continue
        if exact:
            return False
        a, b = float(v1), float(v2)
        if not (a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))):
            return False
    return True


def matches(mine, got, exact):
    return set(mine) == set(got) and all(same(v, got[k], exact) for k, v in mine.items())


def documented_families():
    """The family names in docs/metrics.md's "## Remote write" tables."""
    names, inside = [], False
    with open(os.path.join(HERE, "..", "..", "docs", "metrics.md")) as f:
        for line in f:
            if line.startswith("## "):
                inside = line.startswith("## Remote write")
            m = re.match(r"^\| `([a-z_:]+)` \| ([a-z]+) \|", line)
            if inside and m:
                names.append(m.group(1))
    return names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpuwarden", required=True)
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--gpus", type=int, default=1)
    ap.add_argument("--keep", help="keep scenarios, logs and data in this directory")
    ap.add_argument("--timeout", type=float, default=240)
    args = ap.parse_args()
    began = time.monotonic()
    work = None if args.keep else gwtest.TempDir("gw-rw-")
    workdir = args.keep or work.path
    os.makedirs(workdir, exist_ok=True)
    failures = []
    stores = Stores(workdir)
    refuser = Refuser()
    agents = []
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=args.nodes)

    def all_agents(fn):
        for f in [pool.submit(fn, a) for a in agents]:
            f.result()

    try:
        stores.start()
        queue = {"batch_send_deadline": "1s", "max_samples_per_send": 2000,
                 "min_backoff": "50ms", "max_backoff": "2s"}
        endpoints = [
            {"name": "vm", "url": "http://127.0.0.1:%d/api/v1/write" % stores.vm_port,
             "queue_config": queue},
            {"name": "prom", "url": "http://127.0.0.1:%d/api/v1/write" % stores.prom_port,
             "queue_config": queue}]
        bad = {"name": "bad", "url": "http://127.0.0.1:%d/api/v1/write" % refuser.port,
               "queue_config": queue}
        sim_start = int(time.time()) - 3600
        for k in range(1, args.nodes + 1):
            agents.append(Agent(args, workdir, k, sim_start, endpoints + ([bad] if k == 1 else [])))
        print("%d agents up after %.0f s" % (args.nodes, time.monotonic() - began), flush=True)

        all_agents(lambda a: a.advance(BEFORE_S))
        print("advanced %d s after %.0f s" % (BEFORE_S, time.monotonic() - began), flush=True)

        stores.stop()  # the outage
        all_agents(lambda a: a.advance(OUTAGE_S // 2))
        agents[RESTARTED - 1].restart()
        all_agents(lambda a: a.advance(OUTAGE_S - OUTAGE_S // 2))
        retried = agents[1].figure("prometheus_remote_storage_samples_retried_total", "vm")
        check("the outage is retried, not dropped", retried is not None and retried > 0,
              "node-02 retried %s samples to vm" % retried, failures)
        stores.start()
        all_agents(lambda a: a.advance(AFTER_S))
        print("outage over, advanced %d s after %.0f s" % (AFTER_S, time.monotonic() - began),
              flush=True)

        def caught_up(a):
            return all(a.figure("gpuwarden_remote_write_caught_up", r) == 1 and
                       a.figure("prometheus_remote_storage_queue_highest_sent_timestamp_seconds",
                                r) == a.last_t
                       for r in ("vm", "prom"))

        deadline = began + args.timeout - 30
        ok = gwtest.wait_for(lambda: all(caught_up(a) for a in agents),
                             max(10, deadline - time.monotonic()), every_s=1)
        check("every queue caught up", ok, "after %.0f s" % (time.monotonic() - began), failures)

        # Every sample, once, in order: per agent and per series, the raw samples (timestamps and
        # values) of the whole run in the agent's own query API against each store's.
        at = max(a.last_t for a in agents)
        window = "%ds" % (at - sim_start + 60)
        apis = stores.apis()
        for a in agents:
            mine = series_samples(a.api, '{__name__=~".+"}[%s]' % window, at) or {}
            total = sum(len(v) for v in mine.values())
            for store, api in apis.items():
                expr = '{__name__=~".+", node="%s"}[%s]' % (a.name, window)
                exact = store == "prom"
                got = gwtest.wait_for(
                    lambda: (lambda g: g if g is not None and matches(mine, g, exact) else None)(
                        series_samples(api, expr, at)), 10, every_s=2) or series_samples(
                            api, expr, at) or {}
                counts_differ = {dict(k).get("__name__"): (len(v), len(got.get(k, [])))
                                 for k, v in mine.items() if len(got.get(k, [])) != len(v)}
                values_differ = [dict(k).get("__name__") for k, v in mine.items()
                                 if len(got.get(k, [])) == len(v) and not same(v, got[k], exact)]
                extra = len(set(got) - set(mine))
                check("%s -> %s: every sample once, timestamps and values" % (a.name, store),
                      bool(mine) and matches(mine, got, exact),
                      "%d series, %d samples; counts differ (agent, store): %s; values differ: %s;"
                      " extra series: %d" % (len(mine), total, dict(list(counts_differ.items())[:3]),
                                             values_differ[:3], extra), failures)
            failed = [a.figure("prometheus_remote_storage_samples_failed_total", r)
                      for r in ("vm", "prom")]
            check("%s: nothing refused by the stores" % a.name, failed == [0, 0],
                  "samples_failed_total vm, prom = %s" % failed, failures)

        # The 400 endpoint: counted as failed, each request tried once, nothing retried.
        one = agents[0]
        sent = one.figure("prometheus_remote_storage_samples_total", "prom")
        gwtest.wait_for(lambda: one.figure("prometheus_remote_storage_samples_failed_total",
                                           "bad") == sent, 30)
        failed = one.figure("prometheus_remote_storage_samples_failed_total", "bad")
        requests = one.figure("gpuwarden_remote_write_requests_failed_total", "bad")
        retried = one.figure("prometheus_remote_storage_samples_retried_total", "bad")
        check("4xx counted in samples_failed_total, not retried",
              failed == sent and sent > 0 and retried == 0 and requests == refuser.requests,
              "failed %s of %s samples; %s requests counted, %d received; retried %s" %
              (failed, sent, requests, refuser.requests, retried), failures)
        # docs/metrics.md's "Remote write" section and the agent's /metrics agree.
        documented = documented_families()
        status, page = gwtest.http_get(one.url("/metrics"))
        exported = {line.split("{")[0].split(" ")[0] for line in page.splitlines()
                    if line and not line.startswith("#")}
        check("docs/metrics.md's Remote write families are on /metrics",
              documented and set(documented) <= exported,
              "documented %d, missing: %s" % (len(documented),
                                              sorted(set(documented) - exported)), failures)
    except Exception as e:  # noqa: BLE001
        failures.append("%s: %s" % (type(e).__name__, e))
    finally:
        pool.shutdown(wait=False)
        for a in agents:
            a.proc.stop()
        stores.stop()
        refuser.stop()
        if failures and not args.keep:
            for a in agents[:2]:
                print("---- %s log (tail)\n%s" % (a.name, a.proc.output()[-1500:]))
        if work and not failures:
            work.remove()
    print("%s in %.0f s" % ("FAIL" if failures else "PASS", time.monotonic() - began))
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
