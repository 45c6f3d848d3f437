#!/usr/bin/env python3
"""Checks the deployment kit in deploy/ with the tools that will read it, as far as they are
installed here, and its structure where no tool is:

- every YAML file parses; the file_sd example is a list of {targets, labels} groups;
- prometheus.yml: `promtool check config` (which also checks the rule files it loads), and
  `promtool test rules` over the Prometheus-only rules' tests;
- alertmanager.yml: `amtool check-config`, and the route tree sends every (layer, severity) the
  pack uses to the receiver its comments promise (`amtool config routes test`);
- the systemd unit: `systemd-analyze verify` (with ExecStart pointed at the built binary), no
  warning allowed;
- the Slurm prolog/epilog: `bash -n`;
- Kubernetes manifests: the fields the API server requires, selectors that match, ports that
  exist, volumes that are defined; what the agent needs there (host PID, the kubelet's socket
  read-only, jobs.scheduler: kubernetes, the node name from the downward API, read-only RBAC);
  the ConfigMap's gpuwarden.yaml loads in gpuwarden; `kubectl apply --dry-run=client` against a
  stand-in API server (standin_apiserver.py); the reclaim hook with a fake kubectl;
- Grafana: dashboards parse, are what deploy/grafana/dashboards.py writes, have unique ids and
  uids, pick their data source through ${datasource}, and read only metrics docs/metrics.md
  documents or recording rules of the pack.
Usage: check_deploy.py --gpuwarden build/bin/gpuwarden
       check_deploy.py --self-test-kubectl   (the kubectl check fails broken manifests)
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEPLOY = os.path.join(SRC, "deploy")
LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
METRIC = re.compile(r"\b((?:gpu|gpuwarden)_[a-z0-9_]+|(?:fleet|team):[a-z0-9_:]+)\b")
problems = []


def problem(text):
    problems.append(text)


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, **kw)


def check_yaml():
    for path in sorted(glob.glob(os.path.join(DEPLOY, "**", "*.y*ml"), recursive=True)):
        try:
            with open(path) as f:
                list(yaml.safe_load_all(f))
        except yaml.YAMLError as e:
            problem("%s: does not parse: %s" % (path, e))
    for path in glob.glob(os.path.join(DEPLOY, "prometheus/targets/*.yml")):
        with open(path) as f:
            groups = yaml.safe_load(f)
        if not isinstance(groups, list) or not groups:
            problem("%s: file_sd wants a non-empty list of groups" % path)
            continue
        for g in groups:
            if not g.get("targets") or not all(re.match(r"^[^:/]+:\d+$", t) for t in g["targets"]):
                problem("%s: group %s: targets must be host:port" % (path, g))
            for name in (g.get("labels") or {}):
                if not LABEL_NAME.match(name) or name.startswith("__"):
                    problem("%s: label %s is not a valid target label" % (path, name))


def check_prometheus():
    r = run(["promtool", "check", "config", os.path.join(DEPLOY, "prometheus/prometheus.yml")])
    if r.returncode != 0:
        problem("promtool check config: %s%s" % (r.stdout, r.stderr))
    elif "rule files found" not in r.stdout + r.stderr:
        problem("prometheus.yml loads no rule files:\n" + r.stdout)
    tests = glob.glob(os.path.join(DEPLOY, "prometheus/rules/tests/*.yml"))
    r = run(["promtool", "test", "rules"] + tests, cwd=os.path.join(DEPLOY, "prometheus/rules/tests"))
    if not tests or r.returncode != 0:
        problem("promtool test rules deploy/prometheus/rules/tests: %s%s" % (r.stdout, r.stderr))


def pack_layers_and_severities():
    pairs = set()
    for path in glob.glob(os.path.join(DEPLOY, "rules/*.yml")) + \
            glob.glob(os.path.join(DEPLOY, "prometheus/rules/*.yml")):
        with open(path) as f:
            for group in yaml.safe_load(f)["groups"]:
                for rule in group["rules"]:
                    if "alert" in rule:
                        pairs.add((rule["labels"]["layer"], rule["labels"]["severity"]))
    return pairs


def check_alertmanager():
    config = os.path.join(DEPLOY, "alertmanager/alertmanager.yml")
    r = run(["amtool", "check-config", config])
    if r.returncode != 0:
        problem("amtool check-config: %s%s" % (r.stdout, r.stderr))
        return
    want = {("device", "critical"): "gpu-hardware-pager", ("device", "warning"): "gpu-hardware-tickets",
            ("task", "critical"): "ml-platform-pager", ("task", "warning"): "ml-platform-chat",
            ("scheduling", "warning"): "scheduler-admins", ("scheduling", "critical"): "scheduler-admins",
            ("governance", "warning"): "capacity-owners", ("business", "warning"): "capacity-owners"}
    for layer in ("device", "task", "scheduling", "governance", "business"):
        want[(layer, "info")] = "gpu-records"
    pairs = pack_layers_and_severities()
    missing = pairs - set(want)
    if missing:
        problem("the pack uses (layer, severity) pairs the route test does not cover: %s" % missing)
    for (layer, severity), receiver in sorted(want.items()):
        r = run(["amtool", "config", "routes", "test", "--config.file=" + config,
                 "layer=" + layer, "severity=" + severity, "alertname=Test", "instance=n1"])
        got = r.stdout.strip()
        if got != receiver:
            problem("alertmanager.yml routes layer=%s severity=%s to %r, not %r %s" %
                    (layer, severity, got, receiver, r.stderr.strip()))


def check_systemd(gpuwarden):
    unit = os.path.join(DEPLOY, "systemd/gpuwarden.service")
    if not shutil.which("systemd-analyze"):
        print("note: systemd-analyze is not installed; the unit is only parsed")
        with open(unit) as f:
            sections = re.findall(r"^\[(\w+)\]$", f.read(), re.M)
        if sections != ["Unit", "Service", "Install"]:
            problem("%s: sections %s" % (unit, sections))
        return
    tmp = tempfile.mkdtemp(prefix="gw-unit-")
    try:
        with open(unit) as f:
            text = f.read()
        if "ExecStart=/usr/bin/gpuwarden serve" not in text:
            problem("%s: ExecStart does not run /usr/bin/gpuwarden serve" % unit)
        copy = os.path.join(tmp, "gpuwarden.service")
        with open(copy, "w") as f:
            f.write(text.replace("/usr/bin/gpuwarden", os.path.abspath(gpuwarden)))
        # Documentation=man:gpuwarden(1): systemd-analyze runs man on it; the page is generated
        # beside the build (src/dist/gpuwarden.1), not installed on this machine.
        page = os.path.join(os.path.dirname(os.path.abspath(gpuwarden)), "..", "src", "dist", "gpuwarden.1")
        env = dict(os.environ)
        if os.path.exists(page):
            os.makedirs(os.path.join(tmp, "man", "man1"))
            shutil.copy(page, os.path.join(tmp, "man", "man1", "gpuwarden.1"))
            env["MANPATH"] = os.path.join(tmp, "man")
        else:
            problem("%s: no generated man page for Documentation=man:gpuwarden(1)" % page)
        r = run(["systemd-analyze", "verify", copy], env=env)
        out = (r.stdout + r.stderr).strip()
        if r.returncode != 0 or "gpuwarden.service" in out:
            problem("systemd-analyze verify: rc %d: %s" % (r.returncode, out))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_slurm():
    for path in glob.glob(os.path.join(DEPLOY, "slurm/*.sh")):
        r = run(["bash", "-n", path])
        if r.returncode != 0:
            problem("%s: %s" % (path, r.stderr))
        if not os.access(path, os.X_OK):
            problem("%s: not executable" % path)


def subset(small, big):
    return bool(small) and all(big.get(k) == v for k, v in small.items())


CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding"}


def check_kubernetes(gpuwarden):
    docs = []
    for path in sorted(glob.glob(os.path.join(DEPLOY, "kubernetes/*.yaml")) +
                       glob.glob(os.path.join(DEPLOY, "kubernetes/reclaim/*.yaml"))):
        with open(path) as f:
            docs += [(path, d) for d in yaml.safe_load_all(f) if d]
    by_kind = {}
    for path, d in docs:
        for key in ("apiVersion", "kind", "metadata"):
            if key not in d:
                problem("%s: a document has no %s" % (path, key))
        if not d.get("metadata", {}).get("name"):
            problem("%s: %s without metadata.name" % (path, d.get("kind")))
        scoped = d.get("kind") in CLUSTER_SCOPED
        if scoped == bool(d.get("metadata", {}).get("namespace")):
            problem("%s: %s %s %s" % (path, d.get("kind"), d["metadata"].get("name"),
                                      "is cluster-scoped: no namespace" if scoped else
                                      "has no namespace"))
        if "reclaim/" not in path:
            by_kind.setdefault(d.get("kind"), []).append(d)
    for kind, api in [("DaemonSet", "apps/v1"), ("Service", "v1"), ("ConfigMap", "v1"),
                      ("ServiceMonitor", "monitoring.coreos.com/v1"), ("ServiceAccount", "v1"),
                      ("ClusterRole", "rbac.authorization.k8s.io/v1"),
                      ("ClusterRoleBinding", "rbac.authorization.k8s.io/v1")]:
        if len(by_kind.get(kind, [])) != 1:
            problem("kubernetes/: want exactly one %s, found %d" % (kind, len(by_kind.get(kind, []))))
            return
        if by_kind[kind][0]["apiVersion"] != api:
            problem("%s: apiVersion %s, want %s" % (kind, by_kind[kind][0]["apiVersion"], api))
    ds, svc = by_kind["DaemonSet"][0], by_kind["Service"][0]
    cm, sm = by_kind["ConfigMap"][0], by_kind["ServiceMonitor"][0]
    spec = ds["spec"]
    pod_labels = spec["template"]["metadata"]["labels"]
    if not subset(spec["selector"]["matchLabels"], pod_labels):
        problem("DaemonSet: selector.matchLabels do not select its pod template")
    pod = spec["template"]["spec"]
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    ports = {}
    for c in pod["containers"]:
        for key in ("name", "image"):
            if not c.get(key):
                problem("DaemonSet container without %s" % key)
        if not c.get("args") or c["args"][0] != "serve":
            problem("DaemonSet container %s does not run `gpuwarden serve`" % c.get("name"))
        for p in c.get("ports", []):
            ports[p["name"]] = p["containerPort"]
        for m in c.get("volumeMounts", []):
            if m["name"] not in volumes:
                problem("DaemonSet: volumeMount %s has no volume" % m["name"])
        for probe in ("readinessProbe", "livenessProbe"):
            port = c.get(probe, {}).get("httpGet", {}).get("port")
            if port not in ports and port not in ports.values():
                problem("DaemonSet: %s port %s is not a container port" % (probe, port))
        listen = [a for a in c["args"] if a.startswith("--listen=")]
        if not listen or int(listen[0].rsplit(":", 1)[1]) != ports.get("metrics"):
            problem("DaemonSet: --listen does not match the metrics port")
    for v in volumes.values():
        if "configMap" in v and v["configMap"]["name"] != cm["metadata"]["name"]:
            problem("DaemonSet volume %s names ConfigMap %s, which is not defined" %
                    (v["name"], v["configMap"]["name"]))
    if not subset(svc["spec"]["selector"], pod_labels):
        problem("Service selector does not select the DaemonSet's pods")
    svc_ports = {p["name"]: p for p in svc["spec"]["ports"]}
    for p in svc_ports.values():
        if p["targetPort"] not in ports and p["targetPort"] not in ports.values():
            problem("Service port %s targets %s, which no container exposes" % (p["name"], p["targetPort"]))
    if not subset(sm["spec"]["selector"]["matchLabels"], svc["metadata"]["labels"]):
        problem("ServiceMonitor selector does not select the Service")
    if svc["metadata"]["namespace"] not in sm["spec"].get("namespaceSelector", {}).get("matchNames", []):
        problem("ServiceMonitor namespaceSelector does not include the Service's namespace")
    for e in sm["spec"]["endpoints"]:
        if e.get("port") not in svc_ports:
            problem("ServiceMonitor endpoint port %s is not a Service port" % e.get("port"))
    check_kubernetes_agent(by_kind, pod, cm)
    # The agent itself must accept the ConfigMap's configuration, as the init container writes it,
    # and with its commented examples switched on.
    text = cm["data"]["gpuwarden.yaml"].replace("@NODE_NAME@", "gpu-node-1")
    examples = uncomment_examples(text)
    try:
        loaded = yaml.safe_load(examples)
    except yaml.YAMLError as e:
        problem("ConfigMap: gpuwarden.yaml with its examples uncommented does not parse: %s" % e)
        loaded = {}
    for key in ("pod_list_command", "teams", "governance"):
        if key not in loaded.get("jobs", {}).get("kubernetes", {}) and key not in loaded:
            problem("ConfigMap: the commented example of %s is gone or does not uncomment" % key)
    tmp = tempfile.mkdtemp(prefix="gw-k8s-")
    try:
        for what, body in (("", text), (" with its examples uncommented", examples)):
            path = os.path.join(tmp, "gpuwarden.yaml")
            with open(path, "w") as f:
                f.write(body)
            r = run([gpuwarden, "snapshot", "--config", path, "--simulate", "demo"])
            if r.returncode != 0:
                problem("gpuwarden refuses the ConfigMap's gpuwarden.yaml%s: %s" %
                        (what, r.stderr.strip()))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# A commented line of the ConfigMap is an example (not prose) when the comment starts with a key
# ("key:"), a list item ("- "), a quoted key, or more indentation (a continued flow list).
EXAMPLE_LINE = re.compile(r'^(\s*)# ((?:[a-z_][a-z0-9_]*:|- |"|\s).*)$')


def uncomment_examples(text):
    return "\n".join(EXAMPLE_LINE.sub(r"\1\2", line) for line in text.split("\n"))


def check_kubernetes_agent(by_kind, pod, cm):
    """What the agent needs on Kubernetes (docs/operations.md, "Kubernetes"): host PID, the
    kubelet's pod-resources socket read-only, jobs from the kubelet, the node's name from the
    downward API, and RBAC that reads pods and does nothing else."""
    config = yaml.safe_load(cm["data"]["gpuwarden.yaml"])
    jobs = config.get("jobs") or {}
    if jobs.get("scheduler") != "kubernetes":
        problem("ConfigMap: jobs.scheduler is %r, not kubernetes" % jobs.get("scheduler"))
    socket = (jobs.get("kubernetes") or {}).get("socket", "")
    if not pod.get("hostPID"):
        problem("DaemonSet: no hostPID (NVML's pids are the host's)")
    agent = [c for c in pod["containers"] if c["args"][0] == "serve"][0]
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    mounts = [m for m in agent.get("volumeMounts", [])
              if volumes.get(m["name"], {}).get("hostPath", {}).get("path") ==
              "/var/lib/kubelet/pod-resources"]
    if not mounts:
        problem("DaemonSet: the kubelet's /var/lib/kubelet/pod-resources is not mounted")
    for m in mounts:
        if not m.get("readOnly"):
            problem("DaemonSet: the pod-resources mount is not read-only")
        if os.path.dirname(socket) != m["mountPath"]:
            problem("ConfigMap: jobs.kubernetes.socket %r is not in the mount %s" %
                    (socket, m["mountPath"]))
    security = agent.get("securityContext", {})
    if not security.get("readOnlyRootFilesystem") or \
            security.get("capabilities", {}).get("add") != ["SYS_PTRACE"]:
        problem("DaemonSet: want a read-only root filesystem and SYS_PTRACE only")
    if jobs.get("node_name") != "@NODE_NAME@":
        problem("ConfigMap: jobs.node_name is not the @NODE_NAME@ the init container fills in")
    for c in pod.get("initContainers", []) + [agent]:
        refs = [e["valueFrom"]["fieldRef"]["fieldPath"] for e in c.get("env", [])
                if e["name"] == "NODE_NAME" and "valueFrom" in e]
        if refs != ["spec.nodeName"]:
            problem("DaemonSet container %s: NODE_NAME does not come from spec.nodeName" % c["name"])
    init = pod.get("initContainers", [])
    if len(init) != 1 or "@NODE_NAME@" not in " ".join(init[0].get("command", [])):
        problem("DaemonSet: no init container writes the node name into the configuration")
    sa = by_kind["ServiceAccount"][0]["metadata"]
    if pod.get("serviceAccountName") != sa["name"]:
        problem("DaemonSet: serviceAccountName %r is not the kit's ServiceAccount" %
                pod.get("serviceAccountName"))
    role, binding = by_kind["ClusterRole"][0], by_kind["ClusterRoleBinding"][0]
    if role["rules"] != [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]:
        problem("ClusterRole %s: want get/list on pods and nothing else, have %s" %
                (role["metadata"]["name"], role["rules"]))
    if binding["roleRef"]["name"] != role["metadata"]["name"] or binding["subjects"] != [
            {"kind": "ServiceAccount", "name": sa["name"], "namespace": sa["namespace"]}]:
        problem("ClusterRoleBinding does not bind the ClusterRole to the agent's ServiceAccount")


# A client dry run needs an API server for discovery; the stand-in answers only that.
# --validate=false: schema validation needs the API server's OpenAPI documents of every built-in
# type (megabytes generated from Kubernetes' Go types, shipped with neither kubectl nor Debian);
# the fields the agent relies on are checked above instead.
def kubectl_dry_run(paths):
    """Problems `kubectl apply --dry-run=client` finds in the manifests at paths."""
    from standin_apiserver import StandinApiServer
    found = []
    kubectl = shutil.which("kubectl")
    if not kubectl:
        return ["kubectl is not installed (scripts/setup.sh installs kubernetes-client)"]
    with StandinApiServer() as api:
        env = dict(os.environ, HOME=api.dir, KUBECONFIG=api.kubeconfig)
        argv = [kubectl, "apply", "--dry-run=client", "--validate=false",
                "--cache-dir=" + os.path.join(api.dir, "cache")]
        for path in paths:
            argv += ["-f", path]
        r = run(argv, env=env)
        if r.returncode != 0:
            found.append("kubectl apply --dry-run=client: rc %d: %s" %
                         (r.returncode, (r.stderr.strip() + "\n" + r.stdout).strip()))
        elif "created (dry run)" not in r.stdout:
            found.append("kubectl apply --dry-run=client applied nothing: %s" % r.stdout)
        if api.writes:
            found.append("kubectl wrote to the API server in a client dry run: %s" % api.writes)
    return found


def check_kubectl():
    for p in kubectl_dry_run([os.path.join(DEPLOY, "kubernetes"),
                              os.path.join(DEPLOY, "kubernetes/reclaim")]):
        problem(p)


def broken_copies(tmp):
    """(what, directory) pairs: copies of deploy/kubernetes with one mistake each."""
    src = os.path.join(DEPLOY, "kubernetes/daemonset.yaml")
    with open(src) as f:
        text = f.read()
    breaks = [("DaemonSet in apps/v2", "apiVersion: apps/v1\nkind: DaemonSet",
               "apiVersion: apps/v2\nkind: DaemonSet"),
              ("a kind that does not exist", "kind: ServiceAccount", "kind: ServiceAcount"),
              ("YAML that does not parse", "  gpuwarden.yaml: |", "  gpuwarden.yaml: [|"),
              ("a document without a name", "  name: gpuwarden-config\n", "\n")]
    out = []
    for i, (what, old, new) in enumerate(breaks):
        if old not in text:
            raise SystemExit("self-test: %r is no longer in daemonset.yaml" % old)
        d = os.path.join(tmp, "broken%d" % i)
        shutil.copytree(os.path.join(DEPLOY, "kubernetes"), d)
        with open(os.path.join(d, "daemonset.yaml"), "w") as f:
            f.write(text.replace(old, new, 1))
        out.append((what, d))
    return out


def self_test_kubectl():
    """The kubectl check passes the kit and fails each broken copy of it."""
    failures = []
    ok = kubectl_dry_run([os.path.join(DEPLOY, "kubernetes")])
    if ok:
        failures.append("the shipped manifests fail: %s" % ok)
    tmp = tempfile.mkdtemp(prefix="gw-k8s-broken-")
    try:
        for what, d in broken_copies(tmp):
            found = kubectl_dry_run([d])
            print("%-28s %s" % (what, "caught: " + found[0][:120] if found else "NOT CAUGHT"))
            if not found:
                failures.append("kubectl check passes manifests with %s" % what)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for f in failures:
        print(f)
    return 1 if failures else 0


def check_reclaim_hook():
    """deploy/kubernetes/reclaim-hook.sh with a fake kubectl that records its arguments."""
    hook = os.path.join(DEPLOY, "kubernetes/reclaim-hook.sh")
    if not os.access(hook, os.X_OK):
        problem("%s: not executable" % hook)
        return
    if shutil.which("shellcheck"):
        r = run(["shellcheck", "-s", "sh", hook])
        if r.returncode != 0:
            problem("shellcheck %s: %s" % (hook, r.stdout))
    else:
        print("note: shellcheck is not installed; the hook is only run")
    tmp = tempfile.mkdtemp(prefix="gw-hook-")
    try:
        calls = os.path.join(tmp, "calls")
        fake = os.path.join(tmp, "bin", "kubectl")
        os.makedirs(os.path.dirname(fake))
        with open(fake, "w") as f:
            f.write('#!/bin/sh\nprintf "%%s\\n" "$*" >> "%s"\nexit "${FAKE_KUBECTL_RC:-0}"\n' % calls)
        os.chmod(fake, 0o755)
        evidence = '{"idle_s":7200,"gpus":[{"gpu":"2","uuid":"GPU-x","util_ratio":0}]}'
        base = {"PATH": os.path.dirname(fake) + ":/usr/bin:/bin", "GPUWARDEN_JOB_SOURCE": "kubernetes",
                "GPUWARDEN_POD_NAMESPACE": "ml-research", "GPUWARDEN_POD_NAME": "notebook-7f9c",
                "GPUWARDEN_JOB_ID": "ml-research/notebook-7f9c", "GPUWARDEN_RECLAIM_STAGE": "action",
                "GPUWARDEN_RECLAIM_EVIDENCE": evidence}
        delete = "delete pod --namespace ml-research notebook-7f9c --wait=false --ignore-not-found"
        cases = [  # (what, args, environment changes, exit status, kubectl call or None)
            ("action", [], {}, 0, delete),
            ("dry run", ["--dry-run"], {}, 0, delete + " --request-timeout=20s --dry-run=server"),
            ("notice", [], {"GPUWARDEN_RECLAIM_STAGE": "notice"}, 0, None),
            ("a Slurm job", [], {"GPUWARDEN_JOB_SOURCE": "slurm"}, 2, None),
            ("no pod name", [], {"GPUWARDEN_POD_NAME": ""}, 2, None),
            ("a name with a shell word", [], {"GPUWARDEN_POD_NAME": "x;reboot"}, 2, None),
            ("a name with an option", [], {"GPUWARDEN_POD_NAME": "--all"}, 2, None),
            ("an unknown argument", ["--force"], {}, 2, None),
            ("kubectl failing", [], {"FAKE_KUBECTL_RC": "5"}, 5, delete),
        ]
        for what, args, changes, want_rc, want_call in cases:
            if os.path.exists(calls):
                os.remove(calls)
            r = run([hook] + args, env=dict(base, **changes))
            made = open(calls).read().splitlines() if os.path.exists(calls) else []
            where = "reclaim-hook.sh (%s)" % what
            if r.returncode != want_rc:
                problem("%s: exit status %d, want %d: %s" % (where, r.returncode, want_rc, r.stderr))
            if want_call is None and made:
                problem("%s: ran kubectl %s" % (where, made))
            if want_call is not None and (len(made) != 1 or not made[0].startswith(want_call)):
                problem("%s: ran kubectl %s, want %r" % (where, made, want_call))
            if want_rc == 0 and want_call and evidence not in r.stderr:
                problem("%s: the evidence is not in its log: %s" % (where, r.stderr))
        # GPUWARDEN_HOOK_LOG gets the same lines.
        log = os.path.join(tmp, "hook.log")
        run([hook], env=dict(base, GPUWARDEN_HOOK_LOG=log))
        if not os.path.exists(log) or evidence not in open(log).read():
            problem("reclaim-hook.sh: GPUWARDEN_HOOK_LOG has no line with the evidence")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def known_names():
    with open(os.path.join(SRC, "docs/metrics.md")) as f:
        names = set(re.findall(r"`((?:gpu|gpuwarden)_[a-z0-9_]+)`", f.read()))
    for path in glob.glob(os.path.join(DEPLOY, "rules/*.yml")):
        with open(path) as f:
            for group in yaml.safe_load(f)["groups"]:
                names |= {r["record"] for r in group["rules"] if "record" in r}
    # Histograms are documented by family name.
    return names | {n + s for n in names for s in ("_bucket", "_sum", "_count")}


def check_grafana():
    r = run([sys.executable, os.path.join(DEPLOY, "grafana/dashboards.py"), "--check"])
    if r.returncode != 0:
        problem("deploy/grafana/dashboards.py --check: %s%s" % (r.stdout, r.stderr))
    names = known_names()
    uids = set()
    boards = sorted(glob.glob(os.path.join(DEPLOY, "grafana/dashboards/*.json")))
    if len(boards) < 4:
        problem("want the four dashboards (fleet, GPU, jobs and teams, governance), found %d" % len(boards))
    for path in boards:
        with open(path) as f:
            board = json.load(f)
        where = os.path.basename(path)
        for key in ("uid", "title", "panels", "templating", "schemaVersion"):
            if key not in board:
                problem("%s: no %s" % (where, key))
        if board["uid"] in uids:
            problem("%s: uid %s used twice" % (where, board["uid"]))
        uids.add(board["uid"])
        variables = {v["name"]: v for v in board["templating"]["list"]}
        if variables.get("datasource", {}).get("type") != "datasource":
            problem("%s: no datasource variable" % where)
        ids = [p["id"] for p in board["panels"]]
        if len(ids) != len(set(ids)):
            problem("%s: panel ids repeat" % where)
        exprs = [a["expr"] for a in board["annotations"]["list"] if "expr" in a]
        for p in board["panels"]:
            g = p["gridPos"]
            if g["x"] < 0 or g["w"] <= 0 or g["x"] + g["w"] > 24:
                problem("%s: panel %s is outside the 24-column grid" % (where, p["title"]))
            if p["type"] in ("row", "text"):
                continue
            if p.get("datasource", {}).get("uid") != "${datasource}":
                problem("%s: panel %s does not use ${datasource}" % (where, p["title"]))
            if not p.get("targets"):
                problem("%s: panel %s has no query" % (where, p["title"]))
            for t in p.get("targets", []):
                if t.get("datasource", {}).get("uid") != "${datasource}":
                    problem("%s: panel %s query %s does not use ${datasource}" %
                            (where, p["title"], t.get("refId")))
                exprs.append(t.get("expr", ""))
        for expr in exprs:
            for var in re.findall(r"\$(\w+)", expr):
                if var not in variables and not var.startswith("__"):
                    problem("%s: %s uses $%s, which is not a variable" % (where, expr, var))
            bare = re.sub(r'"[^"]*"', '""', expr)
            for m in sorted(set(METRIC.findall(bare))):
                if m not in names:
                    problem("%s: %s reads %s: not in docs/metrics.md nor a recording rule" %
                            (where, expr[:60], m))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpuwarden")
    ap.add_argument("--self-test-kubectl", action="store_true",
                    help="only check that the kubectl check catches broken manifests")
    args = ap.parse_args()
    if args.self_test_kubectl:
        return self_test_kubectl()
    if not args.gpuwarden:
        ap.error("--gpuwarden is required")
    for name, step in [("yaml", check_yaml), ("prometheus", check_prometheus),
                       ("alertmanager", check_alertmanager),
                       ("systemd", lambda: check_systemd(args.gpuwarden)),
                       ("slurm", check_slurm),
                       ("kubernetes", lambda: check_kubernetes(args.gpuwarden)),
                       ("kubectl", check_kubectl), ("reclaim-hook", check_reclaim_hook),
                       ("grafana", check_grafana)]:
        before = len(problems)
        step()
        print("%-12s %s" % (name, "ok" if len(problems) == before else "FAILED"))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
