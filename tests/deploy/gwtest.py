"""Test support for the deploy and fleet tests (Python): real gpuwarden agents, a real
Prometheus 2.42 on loopback, the Prometheus HTTP API of either, and waiting without sleeping
blindly. Processes are started without a shell and stopped by their own pid.
"""
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def free_port():
    """A port free a moment ago on 127.0.0.1, drawn from 20000-32767: below Linux's ephemeral
    range, so no outgoing connection or listen(0) beside this test takes it before its server
    binds it (a bind(0) port comes from that range; CI once lost a server start to that race)."""
    for _ in range(200):
        port = random.randrange(20000, 32768)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 20000-32767")


def wait_for(ready, timeout_s, every_s=0.5):
    """Calls ready() until it returns something true or timeout_s passes; returns the last value."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = ready()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(every_s)


def http_get(url, timeout=10):
    """(status, body text); status 0 when nothing answered."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except (urllib.error.URLError, OSError):
        return 0, ""


class Process:
    """A child process with its output in a log file."""

    def __init__(self, argv, log_path, env=None):
        self.argv, self.log_path = argv, log_path
        self.log = open(log_path, "wb")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=env)

    def running(self):
        return self.proc.poll() is None

    def output(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def stop(self):
        if self.running():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class PromApi:
    """The Prometheus query API of a base URL (Prometheus itself or a gpuwarden agent)."""

    def __init__(self, base):
        self.base = base

    def call(self, path, **params):
        query = urllib.parse.urlencode(params, doseq=True)
        status, body = http_get(self.base + path + ("?" + query if query else ""))
        try:
            doc = json.loads(body)
        except ValueError:
            doc = {"status": "error", "error": "HTTP %d: %s" % (status, body[:200])}
        return doc

    def query(self, expr, at=None):
        params = {"query": expr}
        if at is not None:
            params["time"] = "%.3f" % at
        return self.call("/api/v1/query", **params)

    def query_range(self, expr, start, end, step):
        return self.call("/api/v1/query_range", query=expr, start="%.3f" % start,
                         end="%.3f" % end, step=str(step))

    def values(self, expr):
        """The instant vector of expr now as {frozenset(labels): float}; {} on error."""
        doc = self.query(expr)
        if doc.get("status") != "success":
            return {}
        return {frozenset(r["metric"].items()): float(r["value"][1])
                for r in doc["data"]["result"]}

    def label_values(self, label, match):
        doc = self.call("/api/v1/label/%s/values" % label, **{"match[]": match})
        return doc.get("data") or [] if doc.get("status") == "success" else None


class TempDir:
    def __init__(self, prefix):
        self.path = tempfile.mkdtemp(prefix=prefix)

    def __truediv__(self, name):
        return os.path.join(self.path, name)

    def remove(self):
        shutil.rmtree(self.path, ignore_errors=True)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def start_agent(binary, workdir, name, args, config=None):
    """`gpuwarden serve` on a free loopback port; returns (Process, port)."""
    port = free_port()
    argv = [binary, "serve", "--listen", "127.0.0.1:%d" % port,
            "--data-dir", os.path.join(workdir, name + "-data")]
    if config is not None:
        path = os.path.join(workdir, name + "-gpuwarden.yaml")
        write(path, yaml.safe_dump(config))
        argv += ["--config", path]
    return Process(argv + list(args), os.path.join(workdir, name + ".log")), port


def prometheus_config(targets, scrape_interval="2s", evaluation_interval="2s"):
    """The shipped deploy/prometheus/prometheus.yml, pointed at the given targets.

    targets: [(address, {labels})], written to a file_sd file as the shipped config reads them.
    Everything else of the shipped file stays (rule pack, relabelling); the Alertmanager and
    the self-scrape, which have nothing to talk to here, go.
    """
    with open(os.path.join(SOURCE_DIR, "deploy/prometheus/prometheus.yml")) as f:
        config = yaml.safe_load(f)
    config["global"]["scrape_interval"] = scrape_interval
    config["global"]["scrape_timeout"] = scrape_interval
    config["global"]["evaluation_interval"] = evaluation_interval
    shipped = os.path.join(SOURCE_DIR, "deploy/prometheus")
    config["rule_files"] = [os.path.normpath(os.path.join(shipped, f)) for f in config["rule_files"]]
    config.pop("alerting", None)
    jobs = [j for j in config["scrape_configs"] if j["job_name"] == "gpuwarden"]
    assert jobs, "deploy/prometheus/prometheus.yml has no gpuwarden job"
    job = jobs[0]
    job.pop("static_configs", None)
    groups = [{"targets": [address], "labels": labels} for address, labels in targets]
    return config, job, groups


def start_prometheus(workdir, targets, **intervals):
    config, job, groups = prometheus_config(targets, **intervals)
    sd_dir = os.path.join(workdir, "targets")
    os.makedirs(sd_dir, exist_ok=True)
    write(os.path.join(sd_dir, "agents.yml"), yaml.safe_dump(groups))
    job["file_sd_configs"] = [{"files": [os.path.join(sd_dir, "*.yml")], "refresh_interval": "5s"}]
    config["scrape_configs"] = [job]
    path = os.path.join(workdir, "prometheus.yml")
    write(path, yaml.safe_dump(config))
    port = free_port()
    proc = Process(["prometheus", "--config.file=" + path,
                    "--storage.tsdb.path=" + os.path.join(workdir, "prometheus-data"),
                    "--web.listen-address=127.0.0.1:%d" % port],
                   os.path.join(workdir, "prometheus.log"))
    return proc, port
