#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target into tests/fuzz/corpus/<target>/ from the repo's
own data: the PromQL compatibility suite, the rule pack and its tests, the scenarios, the
configuration examples in docs/, and a few hand-written pages and requests. The binary seeds
(WAL segments, chunks, blocks) come from build-fuzz/bin/fuzz_binary_seeds, which encodes samples
with the store's own encoders, and the kubelet answers from build-fuzz/bin/fuzz_pod_resources_seeds
with the pod-resources client's encoder (build both in build-fuzz/ first: `cmake --build build-fuzz
--target fuzz_binary_seeds fuzz_pod_resources_seeds`); each is skipped with a note when missing.

Run from anywhere: python3 tests/fuzz/make_seeds.py. It replaces the corpus directories, so the
result depends only on the repo. PromQL, rule and template seeds stay under 2 KB (one rule per
seed), which keeps the corpus small and the fuzzer's inputs short to start with.
"""
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")
SHORT = 2048  # the longest PromQL, rule or template seed


def read(path):
    with open(os.path.join(ROOT, path), "rb") as f:
        return f.read()


class Corpus:
    def __init__(self, target, limit=None):
        self.dir = os.path.join(CORPUS, target)
        self.limit = limit
        self.seen = set()
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)

    def add(self, data):
        if isinstance(data, str):
            data = data.encode()
        if self.limit is not None and len(data) > self.limit:
            return
        digest = hashlib.sha1(data).hexdigest()
        if digest in self.seen:
            return
        self.seen.add(digest)
        with open(os.path.join(self.dir, digest[:16]), "wb") as f:
            f.write(data)


def expressions():
    out = []
    for line in read("tests/compat/expressions.txt").decode().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


def rule_files():
    paths = sorted(glob.glob(os.path.join(ROOT, "deploy/rules/*.yml")))
    paths += sorted(glob.glob(os.path.join(ROOT, "deploy/prometheus/rules/*.yml")))
    paths += [os.path.join(ROOT, "tests/rules/testdata/rules_chain.yml")]
    return paths


def rules():
    """Every rule of the rule pack, with the name of its group."""
    for path in rule_files():
        doc = yaml.safe_load(open(path)) or {}
        for group in doc.get("groups", []):
            for rule in group.get("rules", []):
                yield group, rule


def promql_seeds():
    exprs = expressions()
    exprs += [r["expr"].strip() for _, r in rules()]
    return [e for e in exprs if len(e) < SHORT]


def main():
    exprs = promql_seeds()
    c = Corpus("promql_parse", SHORT)
    for e in exprs:
        c.add(e)
    for d in ["5m", "1h30m", "1y2w3d4h5m6s7ms", "300", "1.5"]:
        c.add(d)

    # promql_eval: byte 0 is the evaluation time (byte - 32 steps of 15 s after the data's start).
    c = Corpus("promql_eval", SHORT)
    for i, e in enumerate(exprs):
        c.add(bytes([[112, 80, 40, 200][i % 4]]) + e.encode())

    # rule_file: one group with one rule per seed (whole files would make long, slow seeds).
    c = Corpus("rule_file", SHORT)
    for group, rule in rules():
        doc = {"groups": [{k: v for k, v in group.items() if k != "rules"}]}
        doc["groups"][0]["rules"] = [rule]
        c.add(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
    c.add("groups: []\n")
    c.add("groups:\n  - name: g\n    interval: 30s\n    limit: 5\n    rules:\n"
          "      - record: job:x:sum\n        expr: sum(x)\n"
          "      - alert: A\n        expr: x > 1\n        for: 5m\n        keep_firing_for: 1m\n"
          "        labels: {severity: page}\n        annotations: {summary: '{{ $value }}'}\n")

    # template: every label and annotation that holds template syntax.
    c = Corpus("template", SHORT)
    for _, rule in rules():
        for section in ("labels", "annotations"):
            for value in (rule.get(section) or {}).values():
                if "{{" in str(value):
                    c.add(str(value))
    for t in [
        '{{ range query "up" }}{{ .Labels.instance }}={{ .Value | humanize }} {{ end }}',
        '{{ with query "x" }}{{ . | first | value | humanizePercentage }}{{ else }}none{{ end }}',
        '{{ if gt $value 80.0 }}hot{{ else if lt $value 10.0 }}cold{{ else }}ok{{ end }}',
        '{{ printf "%.2f %s %q %v %x" $value "a" "b" 1e6 255 }}',
        '{{- $x := 1 -}}{{ $x = 2 }}{{ $x }}{{/* comment */}}',
        '{{ reReplaceAll "(a+)" "$1-" "aaa" }} {{ "1h" | parseDuration }} {{ 86400 | humanizeDuration }}',
        '{{ index $labels "gpu" }} {{ len $labels }} {{ and 1 0 }} {{ or 0 2 }} {{ not true }}',
        '{{ $externalURL }} {{ externalURL }} {{ pathPrefix }} {{ graphLink "up" }} {{ tableLink "up" }}',
        '{{ humanizeTimestamp 1700000000 }} {{ title "a b" }} {{ toUpper "x" }} {{ stripPort "h:1" }}',
        '{{ "<b>" | html }} {{ "a b&c" | urlquery }} {{ safeHtml "<i>" }} {{ args 1 "a" }}',
    ]:
        c.add(t)

    # config: the documented example, each of its sections alone, the tests' files.
    c = Corpus("config")
    example = None
    for block in re.findall(r"```yaml\n(.*?)```", read("docs/configuration.md").decode(), re.S):
        example = block
        c.add(block)
    if example:
        sections = re.split(r"\n(?=[a-z_]+:)", example)
        for s in sections:
            c.add(s + "\n")
    c.add("listen: 127.0.0.1:9000\nlog_level: info\nweb_config_file: \"\"\nnvml:\n"
          "  library: libnvidia-ml.so.1\n  call_timeout: 2s\nsimulate:\n  scenario: demo\n"
          "  clock: stepped\n  speed: 10\ncollect:\n  interval: 500ms\n  slow_interval: 1m\n"
          "  memory_peak_interval: 0\n  per_process_metrics: true\n")
    c.add("scrape:\n  targets:\n    - name: llm\n      url: http://127.0.0.1:8000/metrics\n"
          "      interval: 15s\n      gpus: [0, 1]\n      outputs: 'tokens_total{kind=\"out\"}'\n")
    c.add("governance:\n  reclaim:\n    - {partition: gpu, idle_for: 1h, grace: 15m, action: dry-run}\n"
          "  quotas: {vision: {gpus: 4}, nlp: {gpu_hours: 500, period: 7d}}\n"
          "  prices: {gpu_hour: {A100: 3.2, default: 1.0}, energy_kwh: 0.2}\n"
          "teams:\n  accounts: {acct1: vision}\n  users: {alice: nlp}\n"
          "jobs:\n  scheduler: slurm\n  squeue_command: [squeue, --json]\n  poll_interval: 10s\n"
          "alerting:\n  alertmanagers: [http://127.0.0.1:9093, {url: 'http://h:9093', timeout: 5s}]\n"
          "diagnose:\n  thresholds: {busy_utilization: 0.7, thermal_margin_c: 3}\n")

    c = Corpus("web_config")
    for doc in ("docs/web-config.md", "docs/operations.md"):
        for block in re.findall(r"```yaml\n(.*?)```", read(doc).decode(), re.S):
            if "tls_server_config" in block or "basic_auth_users" in block:
                c.add(block)
    c.add("tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n  min_version: TLS13\n"
          "  max_version: TLS13\n  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]\n"
          "  curve_preferences: [X25519, CurveP256]\n  prefer_server_cipher_suites: false\n")
    c.add("http_server_config:\n  http2: false\n  headers:\n    Strict-Transport-Security: max-age=1\n"
          "    X-XSS-Protection: '1'\n")
    c.add("basic_auth_users: {}\n")

    c = Corpus("scenario")
    for path in sorted(glob.glob(os.path.join(ROOT, "scenarios/*.yaml"))):
        c.add(open(path, "rb").read())
    for path in sorted(glob.glob(os.path.join(ROOT, "tests/sim/data/*.yaml"))):
        c.add(open(path, "rb").read())

    # text_import: byte 0 bit 0 = OpenMetrics (float-second timestamps), bit 1 = a refusing sink.
    c = Corpus("text_import")
    prom = (
        "# HELP gpu_temperature_celsius GPU temperature.\n"
        "# TYPE gpu_temperature_celsius gauge\n"
        'gpu_temperature_celsius{gpu="0",uuid="GPU-0"} 41\n'
        'gpu_temperature_celsius{gpu="1",uuid="GPU-1"} 43.5 1700000000000\n'
        "# TYPE req_seconds histogram\n"
        'req_seconds_bucket{le="0.1"} 3\nreq_seconds_bucket{le="+Inf"} 5\n'
        "req_seconds_sum 0.73\nreq_seconds_count 5\n"
        'odd{path="a\\"b\\\\c\\nd"} NaN\nodd{x="y"} +Inf\nodd{x="z"} -Inf\n'
    )
    om = (
        "# TYPE gpu_energy_joules counter\n# UNIT gpu_energy_joules joules\n"
        "# HELP gpu_energy_joules Energy.\n"
        'gpu_energy_joules_total{gpu="0"} 1.5e6 1700000000.250\n'
        'gpu_energy_joules_total{gpu="0"} 1.6e6 1700000015.250\n'
        "# TYPE info info\ninfo_info{version=\"1\"} 1\n# EOF\n"
    )
    for mode in range(4):
        c.add(bytes([mode]) + prom.encode())
        c.add(bytes([mode]) + om.encode())

    c = Corpus("http_request")
    for q in [
        "query=rate(gpu_energy_joules_total%5B5m%5D)&time=1700000000.5",
        "query=up&start=2023-11-14T22:13:20Z&end=2023-11-14T23:13:20.5%2B01:00&step=15s&timeout=2m",
        "match%5B%5D=%7Bgpu%3D%220%22%7D&match[]=up&start=-1e9&end=+Inf",
        "metric=gpu_temperature_celsius&gpu=3&start=1700000000&end=1700086400&points=600",
        "metric=gpu_power_watts&points=4000&start=0&end=34560000",
        "gzip;q=0.5, deflate, *;q=0",
        "x-gzip;q=1.0, identity;q=0",
        "cHJvbWV0aGV1czpzZWNyZXQ=",
        "1h30m",
        "1700000000.123",
    ]:
        c.add(q)

    tool = os.path.join(ROOT, "build-fuzz", "bin", "fuzz_binary_seeds")
    if os.access(tool, os.X_OK):
        subprocess.run([tool, CORPUS], check=True)
    else:
        print("note: %s missing: WAL and chunk seeds not regenerated" % tool, file=sys.stderr)

    tool = os.path.join(ROOT, "build-fuzz", "bin", "fuzz_pod_resources_seeds")
    if os.access(tool, os.X_OK):
        subprocess.run([tool, os.path.join(CORPUS, "pod_resources")], check=True)
    else:
        print("note: %s missing: pod_resources seeds not regenerated" % tool, file=sys.stderr)


if __name__ == "__main__":
    main()
