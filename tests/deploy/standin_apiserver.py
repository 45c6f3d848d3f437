"""A stand-in Kubernetes API server for `kubectl apply --dry-run=client` (check_deploy.py).

kubectl needs the API server even in client dry-run: discovery maps each document's apiVersion and
kind to a resource (and says whether it is namespaced), and apply reads the object first to know
whether it would create or patch it. This server answers exactly that, on 127.0.0.1:

- GET /version, /api, /apis and the resource lists of the groups the kit uses (core v1, apps/v1,
  rbac.authorization.k8s.io/v1, monitoring.coreos.com/v1): static discovery documents;
- GET of any object or list: 404 NotFound (an empty cluster), so apply would create everything;
- GET /openapi/v2, /openapi/v3: 404 (not served, see check_deploy.py);
- any write (POST, PUT, PATCH, DELETE): 405 and the request is recorded in `writes`, which the
  check asserts is empty (a client dry-run must not write).

Usage: with StandinApiServer() as api: api.kubeconfig (a file to pass as --kubeconfig).
"""
import http.server
import json
import os
import re
import shutil
import tempfile
import threading

# (group, version) -> [(plural, kind, namespaced)]
RESOURCES = {
    ("", "v1"): [("namespaces", "Namespace", False), ("configmaps", "ConfigMap", True),
                 ("services", "Service", True), ("serviceaccounts", "ServiceAccount", True),
                 ("pods", "Pod", True), ("secrets", "Secret", True)],
    ("apps", "v1"): [("daemonsets", "DaemonSet", True), ("deployments", "Deployment", True)],
    ("rbac.authorization.k8s.io", "v1"): [("clusterroles", "ClusterRole", False),
                                          ("clusterrolebindings", "ClusterRoleBinding", False),
                                          ("roles", "Role", True),
                                          ("rolebindings", "RoleBinding", True)],
    ("monitoring.coreos.com", "v1"): [("servicemonitors", "ServiceMonitor", True),
                                      ("prometheusrules", "PrometheusRule", True)],
}
VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]


def resource_list(group, version):
    gv = "%s/%s" % (group, version) if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
            "resources": [{"name": plural, "singularName": kind.lower(), "namespaced": namespaced,
                           "kind": kind, "verbs": VERBS}
                          for plural, kind, namespaced in RESOURCES[(group, version)]]}


def group_list():
    groups = []
    for group, version in RESOURCES:
        if group:
            gv = {"groupVersion": "%s/%s" % (group, version), "version": version}
            groups.append({"name": group, "versions": [gv], "preferredVersion": gv})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def not_found(path):
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound",
            "code": 404, "message": "the stand-in API server holds no objects (%s)" % path}


class Handler(http.server.BaseHTTPRequestHandler):
    server_version = "standin-apiserver"

    def log_message(self, fmt, *args):  # quiet: the check prints what matters
        pass

    def reply(self, code, doc):
        body = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path = self.path.split("?", 1)[0].rstrip("/")
        self.server.reads.append(path)
        if path == "/version":
            return self.reply(200, {"major": "1", "minor": "30", "gitVersion": "v1.30.0",
                                    "platform": "linux/amd64"})
        if path == "/api":
            return self.reply(200, {"kind": "APIVersions", "versions": ["v1"],
                                    "serverAddressByClientCIDRs": []})
        if path == "/apis":
            return self.reply(200, group_list())
        m = re.fullmatch(r"/api/(v1)|/apis/([^/]+)/([^/]+)", path)
        if m:
            group, version = ("", m.group(1)) if m.group(1) else (m.group(2), m.group(3))
            if (group, version) in RESOURCES:
                return self.reply(200, resource_list(group, version))
        return self.reply(404, not_found(path))

    def refuse(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self.server.writes.append("%s %s" % (self.command, self.path))
        self.reply(405, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                         "reason": "MethodNotAllowed", "code": 405,
                         "message": "the stand-in API server refuses every write"})

    do_POST = do_PUT = do_PATCH = do_DELETE = refuse


class StandinApiServer:
    def __enter__(self):
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.reads, self.httpd.writes = [], []
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.dir = tempfile.mkdtemp(prefix="gw-apiserver-")
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        server = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        with open(self.kubeconfig, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "standin",
                       "clusters": [{"name": "standin", "cluster": {"server": server}}],
                       "users": [{"name": "standin", "user": {}}],
                       "contexts": [{"name": "standin",
                                     "context": {"cluster": "standin", "user": "standin"}}]}, f)
        return self

    @property
    def writes(self):
        return list(self.httpd.writes)

    @property
    def reads(self):
        return list(self.httpd.reads)

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        shutil.rmtree(self.dir, ignore_errors=True)
