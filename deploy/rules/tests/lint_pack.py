#!/usr/bin/env python3
"""Checks the rule pack beyond what promtool checks, and that its tests and docs keep up.

  * every alert has `severity` (critical|warning|info) and `layer`
    (device|task|scheduling|governance|business), and non-empty annotations `summary`,
    `description` (templated with the values: `$value` or `$labels`) and `runbook`;
  * recording rules are named level:metric:operations;
  * every metric a rule reads is listed in docs/metrics.md (no typo reaches production silently);
  * every alert rule (alert name + severity) fires in a hand-written unit test, and every alert
    name has a hand-written assertion that it does not fire (exp_alerts: []);
  * docs/alerts.md lists every alert of the pack and no other in its table.

Usage: lint_pack.py --docs docs/alerts.md --metrics docs/metrics.md
Exit 0 when clean, 1 with one line per problem, 77 (skipped) without PyYAML.
"""
import argparse
import glob
import os
import re
import sys

try:
    import yaml
except ImportError:  # pragma: no cover
    print("PyYAML is not installed: skipped")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
RULES_DIR = os.path.dirname(HERE)
SEVERITIES = {"critical", "warning", "info"}
LAYERS = {"device", "task", "scheduling", "governance", "business"}
RECORD_NAME = re.compile(r'^[a-z][a-z0-9_]*:[a-z][a-z0-9_]*:[a-z0-9][a-z0-9_]*$')  # ops may be a window (1h)
METRIC = re.compile(r'\b((?:gpu|gpuwarden)_[a-z0-9_]+)\b')


def load_rules():
    alerts, records = [], []
    for path in sorted(glob.glob(os.path.join(RULES_DIR, "*.yml"))):
        with open(path) as f:
            doc = yaml.safe_load(f)
        for group in doc["groups"]:
            for rule in group["rules"]:
                rule["_file"] = os.path.basename(path)
                (alerts if "alert" in rule else records).append(rule)
    return alerts, records


def load_hand_tests():
    fires, quiet = set(), set()
    for path in sorted(glob.glob(os.path.join(HERE, "*_test.yml"))):
        if os.path.basename(path).startswith("scenario_"):
            continue  # generated; see gen_scenario_tests.py
        with open(path) as f:
            doc = yaml.safe_load(f)
        for test in doc.get("tests", []):
            for art in test.get("alert_rule_test", []) or []:
                exp = art.get("exp_alerts") or []
                if not exp:
                    quiet.add(art["alertname"])
                for e in exp:
                    fires.add((art["alertname"], e.get("exp_labels", {}).get("severity")))
    return fires, quiet


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", required=True)
    ap.add_argument("--metrics", required=True)
    args = ap.parse_args()
    problems = []
    alerts, records = load_rules()
    with open(args.metrics) as f:
        documented = set(re.findall(r'`((?:gpu|gpuwarden)_[a-z0-9_]+)`', f.read()))

    for r in alerts:
        where = "%s: %s" % (r["_file"], r["alert"])
        labels, ann = r.get("labels", {}), r.get("annotations", {})
        if labels.get("severity") not in SEVERITIES:
            problems.append("%s: severity %r not in %s" % (where, labels.get("severity"),
                                                          sorted(SEVERITIES)))
        if labels.get("layer") not in LAYERS:
            problems.append("%s: layer %r not in %s" % (where, labels.get("layer"), sorted(LAYERS)))
        for key in ("summary", "description", "runbook"):
            if not str(ann.get(key, "")).strip():
                problems.append("%s: annotation %s missing" % (where, key))
        if not re.search(r'\$(value|labels)', str(ann.get("description", ""))):
            problems.append("%s: description does not show the values ($value / $labels)" % where)
    for r in records:
        if not RECORD_NAME.match(r["record"]):
            problems.append("%s: recording rule %s is not level:metric:operations" %
                            (r["_file"], r["record"]))
    for r in alerts + records:
        expr = re.sub(r'"[^"]*"', '""', str(r["expr"]))  # label values are not metrics
        for m in sorted(set(METRIC.findall(expr))):
            if m not in documented:
                problems.append("%s: %s reads %s, which docs/metrics.md does not list" %
                                (r["_file"], r.get("alert") or r.get("record"), m))

    fires, quiet = load_hand_tests()
    for r in alerts:
        key = (r["alert"], r["labels"]["severity"])
        if key not in fires:
            problems.append("no hand-written test fires %s (severity %s)" % key)
        if r["alert"] not in quiet:
            problems.append("no hand-written test shows %s not firing" % r["alert"])

    with open(args.docs) as f:
        table = set(re.findall(r'^\|\s*`?([A-Z][A-Za-z]+)`?\s*\|', f.read(), re.M))
    names = {r["alert"] for r in alerts}
    for n in sorted(names - table):
        problems.append("docs/alerts.md: %s is not in the table" % n)
    for n in sorted(table - names - {"Alert"}):
        problems.append("docs/alerts.md: the table lists %s, which the pack does not have" % n)

    for p in problems:
        print(p)
    if problems:
        return 1
    print("%d alert rules, %d recording rules: clean" % (len(alerts), len(records)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
