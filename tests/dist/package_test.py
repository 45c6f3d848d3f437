#!/usr/bin/env python3
"""The Debian packages, built and used as an operator would (docs/packaging.md):

1. scripts/package.sh builds gpuwarden, gpuwarden-k8s, gpuwarden-sim (and their -dbgsym) from
   the source tree; lintian reports no error (the script fails otherwise).
2. Each package holds what it should and nothing it should not: the expected paths are derived
   from the source tree (every rule file, every deploy-kit file, every doc, every scenario), the
   agent package has no simulator and no gRPC, the configuration is a conffile, the maintainer
   scripts are there, the man page documents every subcommand.
3. The agent and the simulator, unpacked with `dpkg-deb -x` into a temporary root, start from
   there on the simulated demo fleet with the packaged configuration, and answer /metrics with
   the build's revision in gpuwarden_build_info; `--version` names the same revision.
4. `systemd-analyze verify` passes on the packaged unit (ExecStart pointed at the unpacked binary).
"""
import argparse
import glob
import gzip
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "deploy"))
from gwtest import free_port  # noqa: E402  (ports below the ephemeral range)

FAILURES = []


def problem(text):
    FAILURES.append(text)
    print("FAIL: " + text, flush=True)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def deb_paths(deb):
    """The files and links a .deb installs, as absolute paths."""
    r = run(["dpkg-deb", "-c", deb])
    if r.returncode != 0:
        problem(f"dpkg-deb -c {deb}: {r.stderr}")
        return set()
    paths = set()
    for line in r.stdout.splitlines():
        if line.startswith("d"):
            continue
        name = line.split(None, 5)[5].split(" -> ")[0]
        paths.add(name[1:] if name.startswith(".") else name)
    return paths


def find_deb(out, package, ext="deb"):
    found = glob.glob(os.path.join(out, f"{package}_*_*.{ext}"))
    if len(found) != 1:
        problem(f"expected one {package} .{ext} in {out}, found {found}")
        return None
    return found[0]


def check_contents(source, debs):
    agent = deb_paths(debs["gpuwarden"])
    k8s = deb_paths(debs["gpuwarden-k8s"])
    sim = deb_paths(debs["gpuwarden-sim"])
    want_agent = {
        "/usr/bin/gpuwarden",
        "/usr/share/man/man1/gpuwarden.1.gz",
        "/etc/gpuwarden/gpuwarden.yaml",
        "/lib/systemd/system/gpuwarden.service",
        "/usr/share/doc/gpuwarden/copyright",
        "/usr/share/doc/gpuwarden/changelog.gz",
    }
    for f in glob.glob(os.path.join(source, "deploy/rules/*.yml")):
        want_agent.add("/usr/share/gpuwarden/rules/" + os.path.basename(f))
    for kit in ("alertmanager", "grafana", "kubernetes", "prometheus", "slurm", "systemd"):
        for f in glob.glob(os.path.join(source, "deploy", kit, "**"), recursive=True):
            if os.path.isfile(f) and not f.endswith(".py") and "__pycache__" not in f:
                want_agent.add("/usr/share/gpuwarden/deploy/" + os.path.relpath(f, os.path.join(source, "deploy")))
    for f in glob.glob(os.path.join(source, "docs/*.md")):
        base = os.path.basename(f)
        # dh_compress gzips docs larger than 4 KiB.
        want_agent.add(f"/usr/share/doc/gpuwarden/{base}" if os.path.getsize(f) < 4096
                       else f"/usr/share/doc/gpuwarden/{base}.gz")
    for p in sorted(want_agent - agent):
        problem(f"gpuwarden package lacks {p}")
    for p in sorted(agent):
        if "nvml-sim" in p or "gw-inference-sim" in p or "gw-training-sim" in p or "k8s.so" in p:
            problem(f"gpuwarden package holds {p}, which belongs to -sim or -k8s")
    if "/usr/lib/gpuwarden/libgpuwarden-k8s.so" not in k8s:
        problem("gpuwarden-k8s lacks /usr/lib/gpuwarden/libgpuwarden-k8s.so")
    want_sim = {"/usr/lib/gpuwarden/libnvml-sim.so", "/usr/lib/gpuwarden/gw-inference-sim",
                "/usr/lib/gpuwarden/gw-training-sim"}
    for f in glob.glob(os.path.join(source, "scenarios/*.yaml")):
        want_sim.add("/usr/share/gpuwarden/scenarios/" + os.path.basename(f))
    for p in sorted(want_sim - sim):
        problem(f"gpuwarden-sim lacks {p}")

    fields = run(["dpkg-deb", "-f", debs["gpuwarden"], "Depends"]).stdout
    if re.search(r"grpc|protobuf", fields):
        problem(f"gpuwarden depends on gRPC/protobuf (only -k8s may): {fields.strip()}")
    if "adduser" not in fields:
        problem(f"gpuwarden does not depend on adduser: {fields.strip()}")
    with tempfile.TemporaryDirectory() as ctrl:
        run(["dpkg-deb", "-e", debs["gpuwarden"], ctrl])
        conffiles = open(os.path.join(ctrl, "conffiles")).read() if os.path.exists(os.path.join(ctrl, "conffiles")) else ""
        if "/etc/gpuwarden/gpuwarden.yaml" not in conffiles.split():
            problem(f"/etc/gpuwarden/gpuwarden.yaml is not a conffile: {conffiles!r}")
        for script in ("postinst", "postrm"):
            path = os.path.join(ctrl, script)
            if not os.path.exists(path):
                problem(f"gpuwarden has no {script}")
                continue
            text = open(path).read()
            r = run(["sh", "-n", path])
            if r.returncode != 0:
                problem(f"{script}: {r.stderr}")
            if script == "postinst" and "adduser --system" not in text:
                problem("postinst does not create the system user")
            if script == "postinst" and "deb-systemd-helper" not in text:
                problem("postinst does not enable the unit (dh_installsystemd's part is missing)")
            if script == "postrm" and "GPUWARDEN_PURGE_DATA" not in text:
                problem("postrm removes data without being asked, or never")


def check_unpacked(debs, source_revision):
    with tempfile.TemporaryDirectory(prefix="gw-pkg-") as tmp:
        root = os.path.join(tmp, "root")
        for name in ("gpuwarden", "gpuwarden-sim"):
            r = run(["dpkg-deb", "-x", debs[name], root])
            if r.returncode != 0:
                problem(f"dpkg-deb -x {name}: {r.stderr}")
                return
        binary = os.path.join(root, "usr/bin/gpuwarden")
        version = run([binary, "--version"]).stdout
        print("packaged --version:", version.strip())
        if source_revision not in version:
            problem(f"--version does not name revision {source_revision}: {version!r}")

        # The man page documents every subcommand the binary lists.
        with gzip.open(os.path.join(root, "usr/share/man/man1/gpuwarden.1.gz"), "rt") as f:
            man = f.read()
        helptext = run([binary, "--help"]).stdout
        commands = re.findall(r"^  (\w[\w-]*)\s", helptext.split("Subcommands:")[-1], re.M)
        if not commands:
            problem("gpuwarden --help lists no subcommand")
        for c in commands:
            if f'.SS "{c}' not in man:
                problem(f"the man page has no section for `{c}`")
        r = run(["man", "--warnings", "-l", "-Tutf8", os.path.join(root, "usr/share/man/man1/gpuwarden.1.gz")])
        if shutil.which("man") and (r.returncode != 0 or r.stderr.strip()):
            problem(f"man -l: rc {r.returncode}: {r.stderr.strip()[:400]}")

        # Started from the unpacked root, on the simulator, with the packaged configuration.
        port = free_port()
        data = os.path.join(tmp, "data")
        log = open(os.path.join(tmp, "serve.log"), "w+")
        proc = subprocess.Popen(
            [binary, "serve", "--simulate", "demo",
             "--config", os.path.join(root, "etc/gpuwarden/gpuwarden.yaml"),
             "--data-dir", data, "--listen", f"127.0.0.1:{port}"],
            stdout=log, stderr=subprocess.STDOUT)
        try:
            body = ""
            deadline = time.time() + 60
            while time.time() < deadline and proc.poll() is None:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as res:
                        body = res.read().decode()
                    if "gpu_temperature_celsius" in body or "DCGM_FI_DEV_GPU_TEMP" in body:
                        break
                except OSError:
                    pass
                time.sleep(0.5)
            log.seek(0)
            if proc.poll() is not None:
                problem(f"the packaged agent exited with {proc.returncode}: {log.read()[-2000:]}")
                return
            m = re.search(r'^gpuwarden_build_info\{[^}]*revision="([^"]*)"', body, re.M)
            if not m or m.group(1) != source_revision:
                problem(f"/metrics gpuwarden_build_info revision is {m.group(1) if m else None!r}, "
                        f"not {source_revision}")
            if "DCGM_FI_DEV_GPU_TEMP" not in body and "gpu_temperature_celsius" not in body:
                problem("the packaged agent's /metrics has no GPU temperature: " + body[:300])
            else:
                print(f"packaged agent answered /metrics ({len(body)} bytes) from {root}")
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()

        # The packaged unit, with ExecStart pointed at the unpacked binary.
        unit = os.path.join(root, "lib/systemd/system/gpuwarden.service")
        if not shutil.which("systemd-analyze"):
            problem("systemd-analyze is not installed")
            return
        text = open(unit).read()
        if "ExecStart=/usr/bin/gpuwarden serve" not in text:
            problem("the packaged unit does not run /usr/bin/gpuwarden serve")
        copy = os.path.join(tmp, "gpuwarden.service")
        with open(copy, "w") as f:
            f.write(text.replace("/usr/bin/gpuwarden", binary))
        # Documentation=man:gpuwarden(1) is checked by running man: point it at the unpacked page.
        env = dict(os.environ, MANPATH=os.path.join(root, "usr/share/man"))
        r = run(["systemd-analyze", "verify", copy], env=env)
        out = (r.stdout + r.stderr).strip()
        if r.returncode != 0 or "gpuwarden.service" in out:
            problem(f"systemd-analyze verify: rc {r.returncode}: {out}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    start = time.time()
    r = subprocess.run(["bash", os.path.join(args.source, "scripts/package.sh"), args.out])
    if r.returncode != 0:
        print(f"FAIL: scripts/package.sh exited with {r.returncode}")
        return 1
    print(f"packages built and linted in {time.time() - start:.0f} s")
    debs = {}
    for name in ("gpuwarden", "gpuwarden-k8s", "gpuwarden-sim"):
        debs[name] = find_deb(args.out, name)
        find_deb(args.out, name + "-dbgsym")
    if FAILURES:
        return 1
    revision = run(["git", "-C", args.source, "rev-parse", "HEAD"]).stdout.strip()
    check_contents(args.source, debs)
    check_unpacked(debs, revision)
    if FAILURES:
        print(f"{len(FAILURES)} problem(s)")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
