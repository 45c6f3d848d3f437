#!/usr/bin/env python3
"""A data directory written by the previous release opens in this build and answers the same
queries (docs/packaging.md, "Upgrades"). The fixture (tests/dist/testdata/release-0.1.0) was
written by release 0.1.0 with make_release_fixture.py; the expected answers are computed here
from the same formulas, never read back from the fixture.

1. Read-only (`gpuwarden query --data-dir`, `gpuwarden jobs --data-dir --json`) on a copy: every
   raw sample, the 1 h rollup answers (max/avg_over_time over windows) and increase() across the
   counter reset; the job record with its utilization (written in percent then, ratios now).
2. `gpuwarden serve` on a copy (a writable open, which upgrades the directory in place), then the
   same queries over its HTTP API, and again read-only after it stopped.
"""
import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from make_release_fixture import COUNT, START_S, STEP_S, energy, temp  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "deploy"))
from gwtest import free_port  # noqa: E402  (ports below the ephemeral range)

FAILURES = []


def problem(text):
    FAILURES.append(text)
    print("FAIL: " + text, flush=True)


def close(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def expected():
    """(expr, time, value) triples from the formulas."""
    out = []
    for i in (0, 99, 101, 2000, COUNT - 1):
        out.append((f'gpu_temperature_celsius{{gpu="0"}}', START_S + i * STEP_S, temp(i)))
    # max/avg over a whole hour, [t-1h, t] as Prometheus 2.42 selects it (both ends included).
    hour = 360
    for h in (3, 8):
        end = h * hour
        idx = [i for i in range(end - hour, end + 1) if i != 100]
        vals = [temp(i) for i in idx]
        t = START_S + end * STEP_S
        out.append(('max_over_time(gpu_temperature_celsius{gpu="0"}[1h])', t, max(vals)))
        out.append(('avg_over_time(gpu_temperature_celsius{gpu="0"}[1h])', t, sum(vals) / len(vals)))
    # The counter: raw samples around its reset, and the reset counted in a window holding it.
    for i in (2999, 3000, 3001):
        out.append(('gpu_energy_joules_total{gpu="0"}', START_S + i * STEP_S, energy(i)))
    out.append(('resets(gpu_energy_joules_total{gpu="0"}[2h])', START_S + 3220 * STEP_S, 1))
    out.append(('resets(gpu_energy_joules_total{gpu="0"}[2h])', START_S + 2900 * STEP_S, 0))
    return out


def query_cli(binary, data, expr, t, config=None):
    cmd = [binary, "query", expr, "--time", str(t), "--data-dir", data, "--json"]
    if config:
        cmd += ["--config", config]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return None, r.stderr.strip() or r.stdout.strip()
    return json.loads(r.stdout), None


def query_http(port, expr, t):
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr, "time": t})
    with urllib.request.urlopen(url, timeout=10) as res:
        return json.loads(res.read())


def value_of(doc):
    result = doc.get("data", {}).get("result", [])
    if len(result) != 1:
        return None
    return float(result[0]["value"][1])


def check_queries(ask, where):
    cases = expected()
    for expr, t, want in cases:
        doc, err = ask(expr, t)
        if err:
            problem(f"{where}: {expr} @ {t}: {err}")
            continue
        got = value_of(doc)
        if got is None or not close(got, want):
            problem(f"{where}: {expr} @ {t}: got {got}, want {want}")
    # The NaN sample reads as NaN, not as a gap or a number.
    doc, err = ask('gpu_temperature_celsius{gpu="0"}', START_S + 100 * STEP_S)
    got = value_of(doc) if doc else None
    if err or got is None or not math.isnan(got):
        problem(f"{where}: the NaN sample at i=100 reads {got} ({err})")


def check_job(binary, data, where):
    r = subprocess.run([binary, "jobs", "--data-dir", data, "--json", "--since", "3650d"],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        problem(f"{where}: gpuwarden jobs: {r.stderr.strip()}")
        return
    text = r.stdout
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        problem(f"{where}: gpuwarden jobs --json is not JSON: {text[:200]}")
        return
    jobs = doc if isinstance(doc, list) else doc.get("jobs", doc.get("data", {}).get("jobs", []))
    job = next((j for j in jobs if j.get("job_id") == "4242"), None)
    if job is None:
        problem(f"{where}: job 4242 of release 0.1.0 is not listed: {text[:300]}")
        return
    gpu = job.get("gpu", {})
    if not close(gpu.get("util_avg", -1), 0.40) or not close(gpu.get("util_max", -1), 0.90):
        problem(f"{where}: job 4242's utilization reads {gpu.get('util_avg')}/{gpu.get('util_max')}, "
                "want 0.40/0.90 (0.1.0 wrote percent)")
    if job.get("cost", {}).get("currency") != "USD":
        problem(f"{where}: job 4242's cost is lost: {job.get('cost')}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpuwarden", required=True)
    ap.add_argument("--fixture", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="gw-upgrade-") as tmp:
        ro = os.path.join(tmp, "ro")
        shutil.copytree(args.fixture, ro)
        check_queries(lambda e, t: query_cli(args.gpuwarden, ro, e, t), "read-only")
        check_job(args.gpuwarden, ro, "read-only")

        rw = os.path.join(tmp, "rw")
        shutil.copytree(args.fixture, rw)
        port = free_port()
        log_path = os.path.join(tmp, "serve.log")
        # The fixture's history is from 2026-01-01: under the default 15-day retention a writable
        # open may age it into rollups (that is retention, not the upgrade). Keep it all.
        config = os.path.join(tmp, "gpuwarden.yaml")
        with open(config, "w") as f:
            f.write("storage:\n  retention: 87600h\n  rollup_retention: 87600h\n")
        with open(log_path, "w") as log:
            proc = subprocess.Popen([args.gpuwarden, "serve", "--simulate", "demo", "--data-dir", rw,
                                     "--config", config, "--listen", f"127.0.0.1:{port}"],
                                    stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.time() + 60
            ready = False
            while time.time() < deadline and proc.poll() is None:
                try:
                    query_http(port, "1", START_S)
                    ready = True
                    break
                except OSError:
                    time.sleep(0.3)
            if not ready:
                problem("serve did not answer on the 0.1.0 data directory: " + open(log_path).read()[-2000:])
            else:
                check_queries(lambda e, t: (query_http(port, e, t), None), "serve")
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
        if proc.returncode not in (0, -signal.SIGTERM):
            problem(f"serve exited with {proc.returncode}: " + open(log_path).read()[-2000:])
        check_queries(lambda e, t: query_cli(args.gpuwarden, rw, e, t, config), "after serve")
        check_job(args.gpuwarden, rw, "after serve")
    if FAILURES:
        print(f"{len(FAILURES)} problem(s)")
        return 1
    print("OK: release 0.1.0's data directory opens and answers the same")
    return 0


if __name__ == "__main__":
    sys.exit(main())
