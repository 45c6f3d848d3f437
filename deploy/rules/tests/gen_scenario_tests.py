#!/usr/bin/env python3
"""Builds promtool unit tests for the rule pack from the simulator's scenarios.

For each scenario in SCENARIOS below, runs

    make_dataset --scenario NAME --duration D --step 15s --start 1700000000 --out FILE

(the collector over libnvml-sim.so in stepped time, one collection cycle per 15 s step), keeps the
series of the metric families the rules read, and writes them as promtool `input_series` in its
expanding notation (`VxN`, `V+DxN`, `_`, `stale`) to scenario_NAME_test.yml (dashes in NAME
become underscores), with:

  * promql_expr_test entries over the ALERTS series the rule evaluations write: each expected
    alert (all its labels, severity and layer included) is absent at a time before the fault and
    firing at a time the scenario implies (docs/scenarios.md), and every other alert of the pack
    is absent at those times (annotations are checked by the hand-written tests);
  * a promql_expr_test over ALERTS: the exact set of alerts that fired at any evaluation in the
    whole run, so an alert that should not fire is caught whenever it fires.

make_dataset writes the device slots and gpu_info only (so the NVLink rules see the GPU's count of
down links, not the per-link series). Series it does not write are derived from
the scenario's faults (the extra-series items of SCENARIOS, facts from docs/scenarios.md) unless
the dataset has them:
gpu_xid_errors_total (XID events) and gpuwarden_nvml_call_hung (the hang fault).

Usage:
  gen_scenario_tests.py --make-dataset PATH [--out-dir DIR] [--scenario NAME ...]
  gen_scenario_tests.py --make-dataset PATH --check     regenerate into a temporary directory and
                                                        fail if the committed files differ
Only the Python standard library is used. Output is deterministic.
"""
import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
RULES_DIR = os.path.dirname(HERE)
RULE_FILES = ["gpu-device.yml", "gpuwarden-agent.yml", "fleet.yml"]
STEP_S = 15
START_S = 1700000000


class Expect:
    """An alert the scenario must raise: absent at `before` (seconds), firing from `at` until
    `until` (None: to the end of the run), absent again from `gone` (None: never checked)."""

    def __init__(self, alert, gpu, severity, layer, before, at, until=None, gone=None, **labels):
        self.alert, self.gpu, self.severity, self.layer = alert, gpu, severity, layer
        self.before, self.at, self.until, self.gone = before, at, until, gone
        self.labels = labels


# name: (duration, extra series, expected alerts). Times in seconds of simulated time.
# Extra series: ("xid", gpu, code, [event times]) or ("hung", gpu, call, from time).
SCENARIOS = {
    "demo": ("2h", [("xid", 5, 13, [35 * 60])], None),  # expectations: DEMO_EXPECTED below
    "power-cap": ("30m", [], [
        # Limit 700 -> 300 W at 60 s: sw_power_cap from 75 s; rate[5m] > 0.5 from ~4 min, +2m.
        Expect("GpuBusyButSlowed", 0, "warning", "device", 60, 420, reason="sw_power_cap"),
        # 290-300 W of 300 W: avg[10m] > 95 % from ~10 min, + for 15m.
        Expect("GpuPowerAtLimit", 0, "info", "device", 60, 1620),
    ]),
    "cooling-failure": ("30m", [], [
        # R x3 at 60 s: median T above gpu_max (87) from ~4 min, + 2m.
        Expect("GpuTemperatureNearSlowdown", 0, "warning", "device", 60, 480),
        Expect("GpuTemperatureHigh", 0, "info", "device", 60, 1200),
        # SW thermal slowdown most of the time from 72 s; HW slowdown ~17 % of the time.
        Expect("GpuBusyButSlowed", 0, "info", "device", 60, 600, reason="sw_thermal_slowdown"),
        Expect("GpuBusyButSlowed", 0, "warning", "device", 60, 600,
               reason="hw_thermal_slowdown"),
    ]),
    "power-brake": ("30m", [], [
        # Brake 30-90 s: 60 s of the 5-minute window > 10 % from ~60 s, + for 1m; the window
        # forgets it 5 minutes after the brake ends.
        Expect("GpuBusyButSlowed", 0, "critical", "device", 15, 180, until=360, gone=420,
               reason="hw_power_brake_slowdown"),
    ]),
    "ecc-uncorrectable": ("30m", [("xid", 0, 48, [45])], [
        Expect("GpuUncorrectableEccError", 0, "critical", "device", 30, 45,
               type="uncorrected", scope="volatile"),
        # XID 48 at 45 s: new series, firing for 10 minutes.
        Expect("GpuXidHardwareError", 0, "critical", "device", 30, 45, until=600, gone=660,
               xid="48"),
        # One SBE every 30 s (120/h): rate[15m] > 60/h, + 5m.
        Expect("GpuCorrectableEccRateHigh", 0, "warning", "device", 30, 900,
               type="corrected", scope="volatile"),
        # 100 + 120/h, a week ahead: far beyond 5000; + for 15m.
        Expect("GpuCorrectableEccTrend", 0, "warning", "device", 30, 1200,
               type="corrected", scope="aggregate"),
    ]),
    "row-remap": ("30m", [("xid", 0, 63, [20]), ("xid", 0, 64, [90])], [
        # isPending 20-60 s (seen at 30 and 45 s).
        Expect("GpuRowRemapPending", 0, "warning", "device", 15, 30, until=60, gone=60),
        Expect("GpuRowRemapFailed", 0, "critical", "device", 75, 90),
        Expect("GpuXidHardwareWarning", 0, "warning", "device", 15, 30, until=600, gone=660,
               xid="63"),
        Expect("GpuXidHardwareError", 0, "critical", "device", 75, 90, until=690, gone=750,
               xid="64"),
    ]),
    "page-retirement": ("30m", [("xid", 0, 48, [20]), ("xid", 0, 63, [20, 40]),
                                ("xid", 0, 64, [100])], [
        Expect("GpuUncorrectableEccError", 0, "critical", "device", 15, 30,
               type="uncorrected", scope="volatile"),
        Expect("GpuRetiredPagesPending", 0, "warning", "device", 15, 30, until=90, gone=90),
        Expect("GpuXidHardwareError", 0, "critical", "device", 15, 30, until=600, gone=960,
               xid="48"),
        Expect("GpuXidHardwareWarning", 0, "warning", "device", 15, 30, until=600, gone=900,
               xid="63"),
        Expect("GpuXidHardwareError", 0, "critical", "device", 90, 105, until=690, gone=960,
               xid="64"),
        # The V100's 32 GiB hold a 30000 MiB process: 91.5 % used from the start, + for 15m.
        Expect("GpuMemoryHigh", 0, "warning", "device", None, 960),
    ]),
    "fall-off-bus": ("30m", [("xid", 1, 79, [30])], [
        Expect("GpuFellOffBus", 1, "critical", "device", 15, 30, until=600, gone=660, xid="79"),
        # gpu_up 0 from 30 s, + for 1m.
        Expect("GpuLost", 1, "critical", "device", 15, 90),
    ]),
    "hang": ("30m", [("hung", 1, "nvmlDeviceGetPowerUsage", 10)], [
        # Quarantined from the first cycle after 10 s (15 s), + for 1m.
        Expect("GpuwardenNvmlCallHung", 1, "warning", "device", 0, 75,
               call="nvmlDeviceGetPowerUsage"),
    ]),
    "spikes": ("30m", [], [
        # 300 ms spikes every 5 s: the 15 s peaks always see 100 %, ~700 W; averages ~10 %.
        Expect("GpuSubSecondSpikes", 0, "info", "device", None, 900),
        Expect("GpuPowerSwings", 0, "info", "device", None, 900),
    ]),
    "idle-allocated": ("30m", [], []),
    "hgx-nvlink": ("10m", [("xid", 5, 74, list(range(90, 601, 10)))], [
        # Link 5 of GPU 3 down at 60 s. make_dataset writes the GPU's count of down links
        # (gpu_nvlink_links_down), not the per-link series: the rule's fallback, + for 1m.
        Expect("GpuNvLinkLinkDown", 3, "warning", "device", 45, 180),
        # XID 74 every 10 s from 90 s on GPU 5: a new series at 90 s.
        Expect("GpuNvLinkXidError", 5, "critical", "device", 75, 105, xid="74"),
        # The storm on link 2 from 90 s raises every NVLink counter of GPU 5 far above its
        # threshold (CRC and replay 200/s; retrains every few seconds): + for 2m.
        Expect("GpuNvLinkErrorRateHigh", 5, "warning", "device", 75, 300, type="crc_flit"),
        Expect("GpuNvLinkErrorRateHigh", 5, "warning", "device", 75, 300, type="crc_data"),
        Expect("GpuNvLinkErrorRateHigh", 5, "warning", "device", 75, 300, type="replay"),
        Expect("GpuNvLinkErrorRateHigh", 5, "warning", "device", 75, 300, type="ecc_data"),
        Expect("GpuNvLinkErrorRateHigh", 5, "warning", "device", 75, 300, type="recovery"),
    ]),
}

# The healthy demo, 2 simulated hours: no critical alert and no device-layer warning. These are
# the info alerts its designed behaviour raises (docs/scenarios.md, demo.yaml), found by running
# it; each is what the demo is meant to show.
DEMO_EXPECTED = [
    ("GpuPowerAtLimit", 0, "info", "device", {}),  # sits on its 700 W cap (SwPowerCap)
    # Airflow degraded 20-32 min: held at its 87 °C target by SW thermal slowdown, never above.
    ("GpuBusyButSlowed", 3, "info", "device", {"reason": "sw_thermal_slowdown"}),
    ("GpuPowerSwings", 4, "info", "device", {}),  # bursty inference, ~355 W bursts, ~65 W lulls
    ("GpuPowerSwings", 5, "info", "device", {}),
    ("GpuSubSecondSpikes", 4, "info", "device", {}),  # duty 0.35: peaks 88 %, average ~30 %
    ("GpuPcieReplaysGrowing", 5, "info", "device", {}),  # one replay every 2 min from 7 min
    ("GpuXidApplicationError", 5, "info", "task", {"xid": "13"}),  # XID 13 at 35 min
    ("GpuPowerSwings", 6, "info", "device", {}),  # 5 s spikes to 700 W, 8 min of every 20
]

SERIES_RE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+) (\S+)$')
LABEL_RE = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def rule_alerts_and_metrics():
    """Alert names (in file order) and every gpu_/gpuwarden_ metric name the rules mention."""
    alerts, metrics = [], set()
    for name in RULE_FILES:
        with open(os.path.join(RULES_DIR, name)) as f:
            text = f.read()
        for m in re.finditer(r'^\s*- alert: (\w+)', text, re.M):
            if m.group(1) not in alerts:
                alerts.append(m.group(1))
        body = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("#"))
        metrics.update(re.findall(r'\b((?:gpu|gpuwarden)_[a-z0-9_]+)\b', body))
    return alerts, metrics


def parse_duration(text):
    total, units = 0, {"s": 1, "m": 60, "h": 3600, "d": 86400}
    for num, unit in re.findall(r'(\d+)([smhd])', text):
        total += int(num) * units[unit]
    return total


def load_dataset(path, wanted):
    """{series text: {step index: value text}} for the wanted families, plus gpu -> uuid."""
    series, uuids = {}, {}
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            m = SERIES_RE.match(line.rstrip("\n"))
            if not m:
                continue
            name, labels, value, ts = m.groups()
            labels = labels or ""
            if name == "gpu_info":
                lab = dict(LABEL_RE.findall(labels))
                uuids[int(lab["gpu"])] = lab["uuid"]
            if name not in wanted:
                continue
            k = round((float(ts) - START_S) / STEP_S)
            series.setdefault(name + labels, {})[k] = value
    return series, uuids


def add_extra_series(series, extra, uuids, steps):
    has_xid = any(s.startswith("gpu_xid_errors_total{") for s in series)
    for item in extra:
        kind, gpu = item[0], item[1]
        ident = 'gpu="%d",uuid="%s"' % (gpu, uuids[gpu])
        if kind == "xid":
            name = 'gpu_xid_errors_total{%s,xid="%d"}' % (ident, item[2])
            if has_xid:
                continue  # the dataset has the real counters
            values, count = {}, 0
            times = sorted(item[3])
            for k in range(steps + 1):
                while times and times[0] <= k * STEP_S:
                    times.pop(0)
                    count += 1
                if count:
                    values[k] = str(count)
            series[name] = values
        elif kind == "hung":
            name = 'gpuwarden_nvml_call_hung{%s,call="%s"}' % (ident, item[2])
            first = -(-item[3] // STEP_S)  # the first cycle at or after the hang
            series[name] = {k: "1" for k in range(first, steps + 1)}


def is_int(text):
    return re.fullmatch(r'-?\d+', text) is not None


def expand(values, steps):
    """promtool's expanding notation for samples at indices 0..steps; `stale` after a series
    that ends early (as Prometheus marks a series that disappears from the scrape)."""
    items, k = [], 0
    last = max(values)
    while k <= steps:
        if k not in values:
            n = 0
            while k + n + 1 <= steps and k + n + 1 not in values:
                n += 1
            if k > last:
                items.append("stale")
                break
            items.append("_" if n == 0 else "_x%d" % (n + 1))
            k += n + 1
            continue
        v = values[k]
        n = 0
        while k + n + 1 in values and values[k + n + 1] == v:
            n += 1
        if n > 0:
            items.append("%sx%d" % (v, n))
            k += n + 1
            continue
        # An integer progression (counters): V+DxN.
        if is_int(v) and k + 1 in values and is_int(values[k + 1]):
            d = int(values[k + 1]) - int(v)
            n = 1
            while k + n + 1 in values and is_int(values[k + n + 1]) and \
                    int(values[k + n + 1]) - int(values[k + n]) == d:
                n += 1
            if n >= 2:
                items.append("%s%s%dx%d" % (v, "+" if d >= 0 else "-", abs(d), n))
                k += n + 1
                continue
        items.append(v)
        k += 1
    return " ".join(items)


def fmt_duration(seconds):
    if seconds % 3600 == 0 and seconds:
        return "%dh" % (seconds // 3600)
    if seconds % 60 == 0 and seconds:
        return "%dm" % (seconds // 60)
    return "%ds" % seconds


def labels_yaml(labels, indent):
    pad = " " * indent
    return "".join('%s%s: "%s"\n' % (pad, k, labels[k]) for k in sorted(labels))


def alert_labels(e, uuids):
    labels = {"gpu": str(e.gpu), "uuid": uuids[e.gpu], "severity": e.severity, "layer": e.layer}
    labels.update(e.labels)
    return labels


def firing_at(e, t):
    """True/False when the expectation says, None in the window it leaves open."""
    if e.before is not None and t <= e.before:
        return False
    if e.at <= t and (e.until is None or t < e.until):
        return True
    if e.gone is not None and t >= e.gone:
        return False
    return None


def render(name, duration_s, series, expects, demo_set, alerts, uuids):
    steps = duration_s // STEP_S
    out = []
    out.append("# Generated by gen_scenario_tests.py from the simulator scenario '%s'\n" % name)
    out.append("# (make_dataset --scenario %s --duration %s --step %ds --start %d). Do not edit:\n"
               % (name, fmt_duration(duration_s), STEP_S, START_S))
    out.append("# change the generator or the rules and run it again (docs/alerts.md).\n")
    out.append("rule_files:\n")
    for f in RULE_FILES:
        out.append("  - ../%s\n" % f)
    out.append("evaluation_interval: %ds\n" % STEP_S)
    out.append("tests:\n")
    out.append("  - name: scenario %s\n" % name)
    out.append("    interval: %ds\n" % STEP_S)
    out.append("    input_series:\n")
    for s in sorted(series):
        if not series[s]:
            continue
        out.append("      - series: '%s'\n" % s)
        out.append("        values: '%s'\n" % expand(series[s], steps))

    # Checks through the ALERTS series the rule evaluations write (labels, severity, layer and
    # state; annotations are checked by the hand-written tests).
    out.append("    promql_expr_test:\n")
    if expects:
        times = sorted({t for e in expects for t in (e.before, e.at, e.until, e.gone)
                        if t is not None and t <= duration_s})
        for t in times:
            for alert in alerts:
                mine = [e for e in expects if e.alert == alert]
                states = [firing_at(e, t) for e in mine]
                if any(s is None for s in states):
                    continue  # inside a window the scenario leaves open
                if not mine and t not in {e.at for e in expects}:
                    continue  # other alerts: checked at the firing times only
                out.append("      - expr: 'ALERTS{alertname=\"%s\", alertstate=\"firing\"}'\n"
                           % alert)
                out.append("        eval_time: %s\n" % fmt_duration(t))
                firing = [e for e, s in zip(mine, states) if s]
                if not firing:
                    out.append("        exp_samples: []\n")
                    continue
                out.append("        exp_samples:\n")
                for e in sorted(firing, key=lambda e: (e.gpu, sorted(e.labels.items()))):
                    labels = alert_labels(e, uuids)
                    labels.update({"alertname": alert, "alertstate": "firing"})
                    text = ", ".join('%s="%s"' % (k, labels[k]) for k in sorted(labels))
                    out.append("          - labels: 'ALERTS{%s}'\n" % text)
                    out.append("            value: 1\n")

    # Every alert that fired at any evaluation of the run, and nothing else.
    fired = demo_set if demo_set is not None else sorted(
        {(e.alert, e.gpu, e.severity, e.layer, tuple(sorted(e.labels.items()))) for e in expects})
    by = "alertname, gpu, severity, layer, reason, xid, call, type, scope"
    out.append("      - expr: 'group by (%s) (count_over_time(ALERTS{alertstate=\"firing\"}[%s]))'\n"
               % (by, fmt_duration(duration_s)))
    out.append("        eval_time: %s\n" % fmt_duration(duration_s))
    if not fired:
        out.append("        exp_samples: []\n")
    else:
        out.append("        exp_samples:\n")
        for alert, gpu, severity, layer, extra in fired:
            labels = {"alertname": alert, "gpu": str(gpu), "severity": severity, "layer": layer}
            labels.update(dict(extra))
            text = ", ".join('%s="%s"' % (k, labels[k]) for k in sorted(labels))
            out.append("          - labels: '{%s}'\n" % text)
            out.append("            value: 1\n")
    if demo_set is not None:
        for what in ('severity="critical"', 'severity="warning", layer="device"'):
            out.append("      - expr: 'count_over_time(ALERTS{alertstate=\"firing\", %s}[%s])'\n"
                       % (what, fmt_duration(duration_s)))
            out.append("        eval_time: %s\n" % fmt_duration(duration_s))
            out.append("        exp_samples: []\n")
    return "".join(out)


def generate(make_dataset, out_dir, names, work):
    alerts, metrics = rule_alerts_and_metrics()
    wanted = metrics | {"gpu_info"}
    written = []
    for name in names:
        duration, extra, expects = SCENARIOS[name]
        duration_s = parse_duration(duration)
        om = os.path.join(work, name + ".om")
        subprocess.run([make_dataset, "--scenario", name, "--duration", duration,
                        "--step", "%ds" % STEP_S, "--start", str(START_S), "--out", om],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        series, uuids = load_dataset(om, wanted)
        series = {s: v for s, v in series.items() if not s.startswith("gpu_info{")}
        add_extra_series(series, extra, uuids, duration_s // STEP_S)
        demo_set = None
        if expects is None:
            demo_set = sorted((a, g, s, l, tuple(sorted(x.items())))
                              for a, g, s, l, x in DEMO_EXPECTED)
            expects = []
        text = render(name, duration_s, series, expects, demo_set, alerts, uuids)
        path = os.path.join(out_dir, "scenario_%s_test.yml" % name.replace("-", "_"))
        with open(path, "w") as f:
            f.write(text)
        written.append(path)
    return written


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--make-dataset", required=True)
    ap.add_argument("--out-dir", default=HERE)
    ap.add_argument("--scenario", action="append", choices=sorted(SCENARIOS))
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    names = args.scenario or sorted(SCENARIOS)
    with tempfile.TemporaryDirectory() as work:
        if not args.check:
            for p in generate(args.make_dataset, args.out_dir, names, work):
                print(p)
            return 0
        fresh = os.path.join(work, "fresh")
        os.mkdir(fresh)
        failed = False
        for p in generate(args.make_dataset, fresh, names, work):
            committed = os.path.join(HERE, os.path.basename(p))
            new = open(p).read().splitlines(keepends=True)
            old = open(committed).read().splitlines(keepends=True) \
                if os.path.exists(committed) else []
            if new != old:
                failed = True
                diff = list(difflib.unified_diff(old, new, committed, "regenerated"))
                sys.stdout.writelines(diff[:40])
                print("%s is out of date: run %s --make-dataset %s" %
                      (committed, sys.argv[0], args.make_dataset))
        if failed:
            return 1
        print("%d generated test files are up to date" % len(names))
        return 0


if __name__ == "__main__":
    sys.exit(main())
