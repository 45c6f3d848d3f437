#!/usr/bin/env python3
"""The remote-write deploy kit (deploy/remote-write/) against the real stores, and the sizing
figures of docs/fleet.md.

1. A simulated agent (`gpuwarden serve --simulate SCENARIO --sim-clock stepped`) records
   --minutes of 1 s history in its own store, its simulated clock set so that the history ends
   now. Its /metrics gives the series per GPU (families with a `gpu` label).
2. The store is exported (`gpuwarden tsdb export`) and pushed with Prometheus remote write 1.0
   (WriteRequest protobuf, snappy block format, encoded here) the way a sender streams it: in
   time order, up to 2,000 samples per request (the kit's queue_config). Bytes before and after
   snappy are counted: bytes on the wire per sample.
3. Into a real victoria-metrics started with the flags of
   deploy/remote-write/victoria-metrics/victoria-metrics.default (its storage path and address
   replaced): every series must come back from /api/v1/export with every sample and value.
   After a flush and a forced merge, its own figures (vm_data_size_bytes / vm_rows) give the
   bytes per sample on disk. A second victoria-metrics gets the history downsampled to 15 s by
   the agent itself while it records (its own remote_write with the kit's snippet and
   `downsample: {interval: 15s, aggregate: [max, avg]}`, restarted halfway, so a window spans
   the restart): every series must be exactly max and avg per window (t - 15 s, t], stamped t,
   of the agent's own 1 s data (the export), every complete window and nothing else; the same
   figures at 15 s, the wire bytes from the agent's own counters.
4. Unless --no-prometheus: into a real Prometheus 2.42 started with the flags of
   deploy/remote-write/prometheus/prometheus.default and the kit's prometheus.yml (rule files
   pointed at deploy/rules/, no Alertmanager): every sample arrives (count per series), and with
   the scenario one-spike the fleet spike rule (GpuMemorySpikeNearTotal) fires there for GPU 2
   only, evaluated over the remote-written per-cycle peaks. The agent's second downsampling
   endpoint sends it the families no rule of the pack names (so the rules see one series per
   GPU): each received series is again exactly max/avg per window of the 1 s data.

The numbers are printed as one JSON object at the end (docs/benchmarks.md quotes them).
Usage: remote_write_kit.py --gpuwarden build/bin/gpuwarden [--scenario one-spike]
           [--minutes 10] [--no-prometheus] [--keep DIR]
The benchmark: --scenario fleet-8 --minutes 180 --no-prometheus.
"""
import argparse
import ctypes
import json
import os
import re
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(HERE, "..", "deploy"))
import gwtest  # noqa: E402

import yaml  # noqa: E402

KIT = os.path.join(gwtest.SOURCE_DIR, "deploy", "remote-write")
MAX_SAMPLES_PER_SEND = 2000
SERIES_RE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: (\S+))?$')
LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def unescape(v):
    return v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")


def parse_labels(text):
    return [(n, unescape(v)) for n, v in LABEL_RE.findall(text or "")]


# ---- remote write 1.0 on the wire (docs/remote-write.md, "The protocol") -----------------------

def varint(n):
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_bytes(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def encode_labels(labels):
    """The repeated Label fields of a TimeSeries, sorted by name, __name__ among them."""
    return b"".join(field_bytes(1, field_bytes(1, n.encode()) + field_bytes(2, v.encode()))
                    for n, v in sorted(labels))


def encode_sample(t_ms, value):
    return field_bytes(2, b"\x09" + struct.pack("<d", value) + b"\x10" + varint(t_ms))


class Snappy:
    """snappy's block format through Debian's libsnappy (its C API)."""

    def __init__(self):
        self.lib = ctypes.CDLL("libsnappy.so.1")
        self.lib.snappy_max_compressed_length.restype = ctypes.c_size_t
        self.lib.snappy_max_compressed_length.argtypes = [ctypes.c_size_t]
        self.lib.snappy_compress.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                                             ctypes.POINTER(ctypes.c_size_t)]

    def compress(self, data):
        size = ctypes.c_size_t(self.lib.snappy_max_compressed_length(len(data)))
        out = ctypes.create_string_buffer(size.value)
        if self.lib.snappy_compress(data, len(data), out, ctypes.byref(size)) != 0:
            raise RuntimeError("snappy_compress failed")
        return out.raw[:size.value]


def post(url, body):
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Encoding": "snappy", "Content-Type": "application/x-protobuf",
        "X-Prometheus-Remote-Write-Version": "0.1.0", "User-Agent": "gpuwarden-kit-test"})
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


class Series:
    def __init__(self, labels):
        self.labels = labels
        self.key = tuple(sorted(labels))
        self.encoded_labels = encode_labels(labels)
        self.t, self.v = [], []


def push(series, urls, snappy):
    """Sends every sample in time order across series, MAX_SAMPLES_PER_SEND per request, to each
    url; returns {samples, requests, raw_bytes, wire_bytes}."""
    stats = {"samples": 0, "requests": 0, "raw_bytes": 0, "wire_bytes": 0}
    pending, count = {}, 0

    def flush():
        nonlocal pending, count
        if not count:
            return
        body = b"".join(field_bytes(1, series[i].encoded_labels + b"".join(samples))
                        for i, samples in pending.items())
        wire = snappy.compress(body)
        for url in urls:
            status, text = post(url, wire)
            if status // 100 != 2:
                raise RuntimeError("%s answered %d: %s" % (url, status, text[:300]))
        stats["requests"] += 1
        stats["raw_bytes"] += len(body)
        stats["wire_bytes"] += len(wire)
        stats["samples"] += count
        pending, count = {}, 0

    times = sorted({t for s in series for t in s.t})
    cursor = [0] * len(series)
    for t in times:
        for i, s in enumerate(series):
            c = cursor[i]
            if c < len(s.t) and s.t[c] == t:
                pending.setdefault(i, []).append(encode_sample(t, s.v[c]))
                cursor[i] = c + 1
                count += 1
                if count == MAX_SAMPLES_PER_SEND:
                    flush()
    flush()
    return stats


def downsample(series, through_ms, interval_ms=15000):
    """max and avg per window (t - interval, t], stamped t, labelled aggregate (the agent's
    downsample option), for the windows complete by through_ms (t <= through_ms)."""
    out = []
    for s in series:
        windows = {}
        for t, v in zip(s.t, s.v):
            end = -(-t // interval_ms) * interval_ms
            if end <= through_ms:
                windows.setdefault(end, []).append(v)
        if not windows:
            continue
        for name, fn in (("max", max), ("avg", lambda vs: sum(vs) / len(vs))):
            d = Series(s.labels + [("aggregate", name)])
            for end in sorted(windows):
                d.t.append(end)
                d.v.append(fn(windows[end]))
            out.append(d)
    return out


def agent_side(kit_file):
    """(external labels, write_relabel_configs) of one of the kit's agent snippets."""
    with open(os.path.join(KIT, kit_file)) as f:
        doc = yaml.safe_load(f)
    endpoints = doc["remote_write"]
    assert len(endpoints) == 1, kit_file
    return doc["rules"]["external_labels"], endpoints[0].get("write_relabel_configs", [])


# Inline secrets the agent's downsampling endpoints carry (the stores ignore them): its
# /api/v1/status/config must show <secret> instead.
SECRETS = ("kit-password-%d" % os.getpid(), "kit-api-key-%d" % os.getpid())


def downsampling_endpoint(name, url, extra_relabel):
    """The kit's remote_write entry with its `downsample` line taken (15 s max and avg), sending
    to `url`; a short batch_send_deadline so the test does not wait for it."""
    with open(os.path.join(KIT, "victoria-metrics/gpuwarden-remote-write.yaml")) as f:
        text = f.read()
    m = re.search(r"^\s*# (downsample: .*)$", text, re.M)
    if not m:
        raise SystemExit("the kit's snippet has no commented downsample line")
    endpoint = dict(yaml.safe_load(text)["remote_write"][0], url=url, name=name,
                    **yaml.safe_load(m.group(1)))
    endpoint["queue_config"] = dict(endpoint["queue_config"], batch_send_deadline="1s")
    endpoint["basic_auth"] = {"username": "gpuwarden", "password": SECRETS[0]}
    endpoint["headers"] = {"X-Api-Key": SECRETS[1]}
    endpoint["write_relabel_configs"] = endpoint.get("write_relabel_configs", []) + extra_relabel
    return endpoint


def rule_pack_names():
    """A regex of every name the rule pack's expressions use (deploy/rules/*.yml)."""
    names = set()
    rules_dir = os.path.join(gwtest.SOURCE_DIR, "deploy", "rules")
    for f in sorted(os.listdir(rules_dir)):
        if f.endswith(".yml"):
            with open(os.path.join(rules_dir, f)) as fh:
                for group in (yaml.safe_load(fh) or {}).get("groups", []):
                    for rule in group.get("rules", []):
                        names.update(re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", str(rule["expr"])))
    return "|".join(sorted(names))


def as_sender_sends(series, external, relabel):
    """What the sender sends of `series` under the snippet: external labels added where a
    series lacks them, then keep/drop by write_relabel_configs (Prometheus' semantics: the
    source label values joined by the separator, the regex anchored at both ends)."""
    out = []
    for s in series:
        labels = dict(s.labels)
        for name, value in external.items():
            labels.setdefault(name, value)
        keep = True
        for rule in relabel:
            joined = rule.get("separator", ";").join(
                labels.get(n, "") for n in rule.get("source_labels", []))
            matched = re.fullmatch(rule.get("regex", "(.*)"), joined) is not None
            if (rule.get("action", "replace") == "drop") == matched:
                keep = False
                break
        if keep:
            t = Series(sorted(labels.items()))
            t.t, t.v = s.t, s.v
            out.append(t)
    return out


# ---- the peers -------------------------------------------------------------------------------

def kit_args(path, variable="ARGS"):
    with open(path) as f:
        m = re.search(r'^%s="([^"]*)"' % variable, f.read(), re.M)
    if not m:
        raise SystemExit("%s: no %s=\"...\" line" % (path, variable))
    return m.group(1).split()


def start_victoria_metrics(workdir, name):
    port = gwtest.free_port()
    args = [a for a in kit_args(os.path.join(KIT, "victoria-metrics/victoria-metrics.default"))
            if not a.startswith(("-storageDataPath=", "-httpListenAddr="))]
    argv = ["victoria-metrics", "-storageDataPath=" + os.path.join(workdir, name + "-data"),
            "-httpListenAddr=127.0.0.1:%d" % port] + args
    proc = gwtest.Process(argv, os.path.join(workdir, name + ".log"))
    base = "http://127.0.0.1:%d" % port
    if not gwtest.wait_for(lambda: gwtest.http_get(base + "/health")[0] == 200, 60):
        raise RuntimeError("victoria-metrics did not start:\n" + proc.output()[-2000:])
    return proc, base


def vm_metric(base, name, type_re):
    status, text = gwtest.http_get(base + "/metrics")
    total = 0.0
    for line in text.splitlines():
        m = SERIES_RE.match(line)
        if m and m.group(1) == name:
            labels = dict(parse_labels(m.group(2)))
            if re.fullmatch(type_re, labels.get("type", "")):
                total += float(m.group(3))
    return total


def vm_settle(base):
    """Flush, merge every partition into as few parts as it will, and wait for the figures to
    hold still; returns (bytes on disk of the samples, rows, bytes of the index)."""
    gwtest.http_get(base + "/internal/force_flush")
    time.sleep(2)
    gwtest.http_get(base + "/internal/force_merge")
    last, still = None, 0
    for _ in range(120):
        time.sleep(1)
        now = (vm_metric(base, "vm_data_size_bytes", r"storage/.*"),
               vm_metric(base, "vm_rows", r"storage/.*"),
               vm_metric(base, "vm_data_size_bytes", r"indexdb.*"),
               vm_metric(base, "vm_active_merges", r".*"))
        still = still + 1 if now == last and now[3] == 0 else 0
        last = now
        if still >= 3:
            break
    return last[0], last[1], last[2]


def vm_exported(base):
    """{sorted label tuple: (timestamps, values)} of everything victoria-metrics holds."""
    status, text = gwtest.http_get(base + "/api/v1/export?match[]=" +
                                   urllib.parse.quote('{__name__!=""}'), timeout=300)
    if status != 200:
        raise RuntimeError("export answered %d: %s" % (status, text[:300]))
    out = {}
    for line in text.splitlines():
        doc = json.loads(line)
        key = tuple(sorted(doc["metric"].items()))
        out[key] = (doc["timestamps"], doc["values"])
    return out


def start_prometheus(workdir):
    port = gwtest.free_port()
    with open(os.path.join(KIT, "prometheus/prometheus.yml")) as f:
        config = yaml.safe_load(f)
    config["rule_files"] = [os.path.join(gwtest.SOURCE_DIR, "deploy/rules/*.yml")]
    config.pop("alerting", None)
    config["scrape_configs"] = []
    config["global"]["evaluation_interval"] = "5s"
    path = os.path.join(workdir, "prometheus.yml")
    gwtest.write(path, yaml.safe_dump(config))
    args = [a for a in kit_args(os.path.join(KIT, "prometheus/prometheus.default"))
            if not a.startswith(("--config.file=", "--web.listen-address="))]
    argv = ["prometheus", "--config.file=" + path,
            "--storage.tsdb.path=" + os.path.join(workdir, "prometheus-data"),
            "--web.listen-address=127.0.0.1:%d" % port] + args
    proc = gwtest.Process(argv, os.path.join(workdir, "prometheus.log"))
    base = "http://127.0.0.1:%d" % port
    if not gwtest.wait_for(lambda: gwtest.http_get(base + "/-/ready")[0] == 200, 60):
        raise RuntimeError("prometheus did not start:\n" + proc.output()[-2000:])
    return proc, base


# ---- the agent -------------------------------------------------------------------------------

def series_per_gpu(metrics_text):
    """{family: series per GPU} of the families with a gpu label, and the GPU count."""
    per_family, gpus = {}, set()
    for line in metrics_text.splitlines():
        if line.startswith("#"):
            continue
        m = SERIES_RE.match(line)
        if not m:
            continue
        labels = dict(parse_labels(m.group(2)))
        if "gpu" in labels:
            gpus.add(labels["gpu"])
            per_family[m.group(1)] = per_family.get(m.group(1), 0) + 1
    n = max(len(gpus), 1)
    return {k: v / n for k, v in sorted(per_family.items())}, len(gpus)


def remote_write_figures(base):
    """{(family, remote_name): value} of the agent's remote-write self-metrics."""
    status, text = gwtest.http_get(base + "/metrics")
    out = {}
    for line in text.splitlines():
        m = SERIES_RE.match(line)
        if m and m.group(1).startswith(("prometheus_remote_storage_", "gpuwarden_remote_write_")):
            labels = dict(parse_labels(m.group(2)))
            out[(m.group(1), labels.get("remote_name", ""))] = float(m.group(3))
    return out


def record_history(args, workdir, config):
    """Records --minutes of history with `config` (the agent's remote_write endpoints), in two
    runs of the agent on one data directory, each stopped once every endpoint sent what it can
    (the second run resumes from the progress files). Returns the history and, per endpoint, its figures summed over both runs plus
    the newest recorded time (ms)."""
    data = os.path.join(workdir, "agent-data")
    config_path = os.path.join(workdir, "agent.yaml")
    gwtest.write(config_path, yaml.safe_dump(config))
    # Windows of 15 s end on multiples of 15 s: starting 7 s past one, the restart at +300 s
    # (+1 s) falls inside a window, which the second run completes.
    start = (int(time.time()) - args.minutes * 60 - 60) // 15 * 15 + 7
    env = dict(os.environ, GPUWARDEN_SIM_MACHINE="rw-kit-%d" % os.getpid())
    names = [e["name"] for e in config.get("remote_write", [])]
    sent = {}  # (family, remote_name): summed over the runs
    last_ms = 0
    began = time.monotonic()
    left = args.minutes * 60
    run_start = start
    for run in (1, 2):
        port = gwtest.free_port()
        argv = [args.gpuwarden, "serve", "--listen", "127.0.0.1:%d" % port, "--data-dir", data,
                "--config", config_path, "--simulate", args.scenario, "--sim-clock", "stepped",
                "--sim-start", str(run_start)]
        agent = gwtest.Process(argv, os.path.join(workdir, "agent-%d.log" % run), env=env)
        base = "http://127.0.0.1:%d" % port
        try:
            if not gwtest.wait_for(lambda: gwtest.http_get(base + "/readyz")[0] == 200, 60):
                raise RuntimeError("the agent did not start:\n" + agent.output()[-2000:])
            todo = min(300, left) if run == 1 else left
            advanced = 0
            while advanced < todo:
                step = min(300, todo - advanced)
                request = urllib.request.Request(base + "/-/sim/advance?seconds=%d" % step,
                                                 method="POST")
                with urllib.request.urlopen(request, timeout=600) as r:
                    if r.status != 200:
                        raise RuntimeError("advance answered %d" % r.status)
                advanced += step
            left -= advanced
            if run == 2:
                # /api/v1/status/config shows the endpoints, never the inline secrets.
                status, text = gwtest.http_get(base + "/api/v1/status/config")
                shown = json.loads(text)["data"]["yaml"] if status == 200 else ""
                leaked = [v for v in SECRETS if v in text]
                config_ok = (status == 200 and not leaked and
                             shown.count("<secret>") == 2 * len(names) and
                             all("name: %s" % n in shown for n in names) and
                             "downsample:" in shown)
                if not config_ok:
                    raise RuntimeError("/api/v1/status/config: HTTP %d, secrets shown: %s\n%s" % (
                        status, leaked, text[:3000]))
                print("ok   /api/v1/status/config: the endpoints shown, the secrets not",
                      flush=True)
                status, text = gwtest.http_get(base + "/metrics")
                per_gpu, gpus = series_per_gpu(text)

            # Stopped once every endpoint sent what the store held: the 15 s window around the
            # restart is not complete yet, and the second run must send it, whole, once.
            # (The newest window complete by the newest snapshot sent: caught_up alone may still
            # be the figure of a pass before the advance ended.)
            def done():
                f = remote_write_figures(base)
                newest = f.get(("prometheus_remote_storage_highest_timestamp_in_seconds", ""), 0)
                return newest > 0 and all(
                    f.get(("prometheus_remote_storage_queue_highest_sent_timestamp_seconds", n), 0)
                    >= newest // 15 * 15 for n in names)
            if names and not gwtest.wait_for(done, 60, every_s=0.5):
                raise RuntimeError("the agent's endpoints did not catch up:\n" +
                                   agent.output()[-2000:])
            figures = remote_write_figures(base)
            last_ms = max(last_ms, int(figures.get(
                ("prometheus_remote_storage_highest_timestamp_in_seconds", ""), 0) * 1000))
            for key, v in figures.items():
                if key[0].endswith("_total"):
                    sent[key] = sent.get(key, 0) + v
            print("agent run %d: %s samples sent per endpoint" % (run, ", ".join(
                "%s %d" % (n, figures.get(("prometheus_remote_storage_samples_total", n), 0))
                for n in names)), flush=True)
        finally:
            agent.stop()
        run_start = run_start + advanced + 1
    recorded_s = time.monotonic() - began
    exported = subprocess.run([args.gpuwarden, "tsdb", "export", "--data-dir", data],
                              capture_output=True, text=True, timeout=1200)
    if exported.returncode != 0:
        raise RuntimeError("tsdb export failed: " + exported.stderr[-2000:])
    series, stale = {}, 0
    for line in exported.stdout.splitlines():
        if line.startswith("#"):
            continue
        m = SERIES_RE.match(line)
        if not m or m.group(4) is None:
            continue
        value = float(m.group(3))
        if value != value:  # NaN: a stale marker (or a NaN reading): not counted here
            stale += 1
            continue
        labels = [("__name__", m.group(1))] + parse_labels(m.group(2))
        key = tuple(sorted(labels))
        s = series.get(key)
        if s is None:
            s = series[key] = Series(labels)
        s.t.append(int(round(float(m.group(4)) * 1000)))
        s.v.append(value)
    return list(series.values()), per_gpu, gpus, stale, recorded_s, sent, last_ms


# ---- checks ----------------------------------------------------------------------------------

def check(label, ok, detail, failures):
    print("%-4s %s: %s" % ("ok" if ok else "FAIL", label, detail), flush=True)
    if not ok:
        failures.append("%s: %s" % (label, detail))


def compare_vm(series, held, failures, what):
    missing = [s for s in series if s.key not in held]
    wrong = []
    for s in series:
        got = held.get(s.key)
        if got is None:
            continue
        if got[0] != s.t or any(abs(a - b) > 1e-9 * max(1.0, abs(b)) for a, b in zip(got[1], s.v)):
            wrong.append(s)
    if wrong:
        got = held[wrong[0].key]
        print("  %s: %d samples expected, %d held; timestamps missing %s, not expected %s" % (
            dict(wrong[0].key), len(wrong[0].t), len(got[0]),
            sorted(set(wrong[0].t) - set(got[0]))[:10], sorted(set(got[0]) - set(wrong[0].t))[:10]))
    check(what + ": every series, every sample and value", not missing and not wrong,
          "%d series, %d missing, %d differing%s" % (
              len(series), len(missing), len(wrong),
              (" (first: %s)" % dict((missing or wrong)[0].key)) if missing or wrong else ""),
          failures)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpuwarden", required=True)
    ap.add_argument("--scenario", default="one-spike")
    ap.add_argument("--minutes", type=int, default=10)
    ap.add_argument("--no-prometheus", action="store_true")
    ap.add_argument("--keep", help="keep logs and data in this directory")
    args = ap.parse_args()
    work = None if args.keep else gwtest.TempDir("gw-rw-kit-")
    workdir = args.keep or work.path
    if args.keep and os.path.exists(args.keep) and os.listdir(args.keep):
        raise SystemExit("--keep %s: not empty (the stores would hold an earlier run)" % args.keep)
    os.makedirs(workdir, exist_ok=True)
    failures, procs, figures = [], [], {"scenario": args.scenario, "minutes": args.minutes}
    snappy = Snappy()
    try:
        began = time.monotonic()
        # What the kit's agent snippet sends (the same for every store: checked here).
        sides = {k: agent_side(k + "/gpuwarden-remote-write.yaml")
                 for k in ("victoria-metrics", "victoria-metrics-cluster", "prometheus", "mimir")}
        check("the kit's agent snippets name the node and drop the same series",
              all(v == sides["victoria-metrics"] for v in sides.values()),
              "%s" % (sides["victoria-metrics"],), failures)
        # The agent's own downsampling endpoints (the kit's snippet, downsample uncommented),
        # sending while it records: to a victoria-metrics, and to the Prometheus the rule pack
        # runs in, there only the families no rule names.
        vm15, vm15_base = start_victoria_metrics(workdir, "vm-15s")
        procs.append(vm15)
        endpoints = [downsampling_endpoint("vm-15s", vm15_base + "/api/v1/write", [])]
        prom_extra = [{"source_labels": ["__name__"], "regex": rule_pack_names(),
                       "action": "drop"}]
        if not args.no_prometheus:
            prom, prom_base = start_prometheus(workdir)
            procs.append(prom)
            endpoints.append(downsampling_endpoint("prom-15s", prom_base + "/api/v1/write",
                                                   prom_extra))
        with open(os.path.join(KIT, "victoria-metrics/gpuwarden-remote-write.yaml")) as f:
            agent_rules = yaml.safe_load(f)["rules"]
        stored, per_gpu, gpus, stale, recorded_s, agent_sent, last_ms = record_history(
            args, workdir, {"rules": agent_rules, "remote_write": endpoints})
        series = as_sender_sends(stored, *sides["victoria-metrics"])
        samples = sum(len(s.t) for s in series)
        gpu_series = sum(1 for s in series if any(n == "gpu" for n, _ in s.labels))
        figures.update({
            "gpus": gpus, "record_seconds": round(recorded_s, 1),
            "metrics_series_per_gpu": round(sum(per_gpu.values()), 2),
            "metrics_families_per_gpu": per_gpu,
            "stored_series": len(stored), "sent_series": len(series),
            "sent_series_per_gpu": round(gpu_series / max(gpus, 1), 2),
            "stored_samples": sum(len(s.t) for s in stored), "sent_samples": samples,
            "stale_markers_skipped": stale})
        print("history: %d series stored, %d sent (%d with a gpu label), %d samples sent; "
              "recorded in %.0f s" % (len(stored), len(series), gpu_series, samples, recorded_s),
              flush=True)
        check("the agent recorded history", samples > 0 and gpus > 0,
              "%d samples, %d GPUs" % (samples, gpus), failures)

        vm, vm_base = start_victoria_metrics(workdir, "vm-1s")
        procs.append(vm)
        urls = [vm_base + "/api/v1/write"]
        if not args.no_prometheus:
            urls.append(prom_base + "/api/v1/write")
        t0 = time.monotonic()
        sent = push(series, urls, snappy)
        figures["push_seconds"] = round(time.monotonic() - t0, 1)
        figures["wire"] = dict(sent, raw_bytes_per_sample=round(sent["raw_bytes"] / samples, 3),
                               wire_bytes_per_sample=round(sent["wire_bytes"] / samples, 3))
        print("sent %d requests: %.2f bytes/sample before snappy, %.2f on the wire" % (
            sent["requests"], sent["raw_bytes"] / samples, sent["wire_bytes"] / samples), flush=True)

        disk, rows, index = vm_settle(vm_base)
        compare_vm(series, vm_exported(vm_base), failures, "victoria-metrics 1 s")
        figures["vm_1s"] = {"rows": rows, "data_bytes": disk, "index_bytes": index,
                            "bytes_per_sample": round(disk / rows, 3) if rows else None,
                            "index_bytes_per_series": round(index / len(series), 1)}
        check("victoria-metrics counts every row", rows == samples, "%d rows, %d sent" % (
            rows, samples), failures)

        # The agent's downsampling: every window complete by its newest snapshot, computed here
        # from its own 1 s data.
        through_ms = last_ms // 15000 * 15000
        down = downsample(series, through_ms)
        down_samples = sum(len(d.t) for d in down)
        disk15, rows15, index15 = vm_settle(vm15_base)
        held15 = vm_exported(vm15_base)
        compare_vm(down, held15, failures, "agent downsampling to victoria-metrics 15 s max+avg")
        extra = sorted(set(held15) - {d.key for d in down})
        check("agent downsampling to victoria-metrics: nothing else, every row once",
              not extra and rows15 == down_samples,
              "%d rows, %d expected, %d series not expected%s" % (
                  rows15, down_samples, len(extra),
                  (" (first: %s)" % dict(extra[0])) if extra else ""), failures)
        sent15 = {k[0]: v for k, v in agent_sent.items() if k[1] == "vm-15s"}
        # (Counters as read when the newest window had arrived: the pass may still have been
        # sending other series, so they are no total, only a ratio for the wire figure.)
        check("agent downsampling: counted as sent, none refused by the receiver",
              sent15.get("prometheus_remote_storage_samples_failed_total") == 0 and
              sent15.get("prometheus_remote_storage_samples_total", 0) > 0,
              "%s" % sent15, failures)
        figures["vm_15s_max_avg"] = {
            "series": len(down), "rows": rows15, "data_bytes": disk15, "index_bytes": index15,
            "bytes_per_sample": round(disk15 / rows15, 3) if rows15 else None,
            "wire_bytes_per_sample": round(
                sent15.get("prometheus_remote_storage_bytes_total", 0) /
                max(sent15.get("prometheus_remote_storage_samples_total", 0), 1), 3),
            "agent_samples_dropped_by_relabel": sent15.get(
                "prometheus_remote_storage_samples_dropped_total")}

        if not args.no_prometheus:
            api = gwtest.PromApi(prom_base)
            window = "%ds" % (args.minutes * 60 + 600)
            counts = {}  # count_over_time drops the name: one query per name
            for name in sorted({dict(s.labels)["__name__"] for s in series}):
                for k, v in api.values('count_over_time({__name__="%s"}[%s])' % (
                        name, window)).items():
                    counts[tuple(sorted(k | {("__name__", name)}))] = v
            bad = [s for s in series if counts.get(s.key) != len(s.t)]
            for s in bad[:5]:
                print("  %s: %s in Prometheus, %d sent" % (dict(s.key), counts.get(s.key),
                                                           len(s.t)))
            check("prometheus receiver: every sample (count per series)", not bad,
                  "%d series, %d with a different count" % (len(series), len(bad)), failures)
            if args.scenario == "one-spike":
                firing = 'ALERTS{alertname="GpuMemorySpikeNearTotal",alertstate="firing"}'
                alerts = gwtest.wait_for(lambda: api.values(firing), 60, every_s=2) or {}
                gpus_firing = sorted(dict(k).get("gpu") for k in alerts)
                check("prometheus receiver: the fleet spike rule fires for GPU 2 only",
                      gpus_firing == ["2"], "firing for GPUs %s" % gpus_firing, failures)
                plain = api.values('max_over_time(gpu_memory_used_bytes{gpu="2"}[%s])' % window)
                peak = api.values('max_over_time(gpu_memory_used_peak_bytes{gpu="2"}[%s])' % window)
                check("prometheus receiver: the per-cycle peak has the spike, the gauge not",
                      list(peak.values()) == [80000 * 1048576.0] and
                      list(plain.values()) == [62000 * 1048576.0],
                      "peak %s, gauge %s" % (list(peak.values()), list(plain.values())), failures)
            # The agent's downsampled stream in Prometheus: raw samples of each series.
            down_prom = downsample(as_sender_sends(
                stored, sides["victoria-metrics"][0], sides["victoria-metrics"][1] + prom_extra),
                through_ms)
            doc = api.query('{aggregate=~"max|avg"}[%s]' % window, (last_ms + 1000) / 1000.0)
            held = {}
            for r in (doc.get("data") or {}).get("result", []):
                held[tuple(sorted(r["metric"].items()))] = (
                    [round(float(t) * 1000) for t, _ in r["values"]],
                    [float(v) for _, v in r["values"]])
            compare_vm(down_prom, held, failures, "agent downsampling to prometheus 15 s max+avg")
            extra = sorted(set(held) - {d.key for d in down_prom})
            check("agent downsampling to prometheus: some series, nothing else",
                  len(down_prom) > 0 and not extra,
                  "%d series expected, %d not expected" % (len(down_prom), len(extra)), failures)
        figures["total_seconds"] = round(time.monotonic() - began, 1)
    finally:
        for p in procs:
            p.stop()
        if work is not None and not failures:
            work.remove()
    print(json.dumps(figures, indent=1, sort_keys=True))
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        if work is not None:
            print("logs kept in " + workdir)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
