#!/usr/bin/env python3
"""Writes gpuwarden's Grafana dashboards (deploy/grafana/dashboards/*.json).

The JSON files are what users import; this script is how they are kept consistent (one datasource
variable, node/gpu/team variables with an "All" of .*, the same throttle-reason set, ids and grid
positions computed). Edit here, run it, commit both. `--check` fails when a JSON file differs
from what this script writes (tests/deploy runs it).

Every query must answer both from a Prometheus scraping the agents (label `instance` = the node)
and from one agent's own API (no `instance` label: the "All" value .* matches its absence):
tests/deploy/panels_test.py runs each one against both.
"""
import argparse
import json
import os
import sys
DS = {"type": "prometheus", "uid": "${datasource}"}
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dashboards")
WRITTEN = {}
THROTTLE = 'sw_power_cap|hw_slowdown|sw_thermal_slowdown|hw_thermal_slowdown|hw_power_brake_slowdown'

def var_ds():
    return {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
            "current": {}, "hide": 0, "refresh": 1, "regex": "", "options": []}

def var_q(name, label, query, multi=True, include_all=True, all_value=".*"):
    v = {"name": name, "label": label, "type": "query", "datasource": DS,
         "definition": query, "query": {"query": query, "refId": name},
         "refresh": 2, "sort": 3 if name == "gpu" else 1, "multi": multi, "includeAll": include_all,
         "current": {"text": "All", "value": "$__all"} if include_all else {},
         "options": [], "hide": 0, "regex": ""}
    if include_all:
        v["allValue"] = all_value
    return v

class Board:
    def __init__(self, uid, title, description, variables, tags):
        self.uid, self.title, self.description = uid, title, description
        self.variables, self.tags = variables, tags
        self.panels, self.annotations = [], []
        self.x = self.y = 0
        self.row_h = 0
        self.next_id = 1

    def row(self, title):
        if self.x:
            self.y += self.row_h
        self.x, self.row_h = 0, 0
        self.panels.append({"id": self.next_id, "type": "row", "title": title, "collapsed": False,
                            "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y}, "panels": []})
        self.next_id += 1
        self.y += 1

    def panel(self, ptype, title, targets, w=8, h=8, unit=None, description="", options=None,
              field=None, instant=False, table=False, stack=False, minv=None, maxv=None):
        if self.x + w > 24:
            self.x, self.y = 0, self.y + self.row_h
            self.row_h = 0
        ts = []
        for i, t in enumerate(targets):
            expr, legend = (t if isinstance(t, tuple) else (t, ""))
            tgt = {"refId": chr(ord("A") + i), "datasource": DS, "expr": expr,
                   "legendFormat": legend or "__auto", "range": not instant, "instant": instant}
            if table:
                tgt["format"] = "table"
            ts.append(tgt)
        defaults = {}
        if unit:
            defaults["unit"] = unit
        if minv is not None:
            defaults["min"] = minv
        if maxv is not None:
            defaults["max"] = maxv
        if stack:
            defaults["custom"] = {"stacking": {"mode": "normal", "group": "A"}, "fillOpacity": 40}
        if field:
            defaults.update(field)
        p = {"id": self.next_id, "type": ptype, "title": title, "description": description,
             "datasource": DS, "gridPos": {"h": h, "w": w, "x": self.x, "y": self.y},
             "targets": ts, "fieldConfig": {"defaults": defaults, "overrides": []},
             "options": options or {}}
        if table:
            p["transformations"] = [{"id": "merge", "options": {}}]
        self.next_id += 1
        self.panels.append(p)
        self.x += w
        self.row_h = max(self.row_h, h)
        return p

    def stat(self, title, expr, unit=None, description="", thresholds=None, w=3):
        field = {}
        if thresholds:
            field["thresholds"] = {"mode": "absolute", "steps": thresholds}
            field["color"] = {"mode": "thresholds"}
        return self.panel("stat", title, [expr], w=w, h=4, unit=unit, description=description,
                          field=field, options={"reduceOptions": {"calcs": ["lastNotNull"]},
                                                "colorMode": "background" if thresholds else "value",
                                                "graphMode": "area"})

    def annotation(self, name, expr, title, text, color):
        self.annotations.append({"name": name, "datasource": DS, "enable": True, "expr": expr,
                                 "iconColor": color, "step": "15s", "titleFormat": title,
                                 "textFormat": text, "useValueForTime": False})

    def json(self):
        annotations = [{"builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"},
                        "enable": True, "hide": True, "iconColor": "rgba(0, 211, 255, 1)",
                        "name": "Annotations & Alerts", "type": "dashboard"}] + self.annotations
        links = [{"title": "gpuwarden dashboards", "type": "dashboards", "tags": ["gpuwarden"],
                  "asDropdown": True, "includeVars": True, "keepTime": True}]
        return {"uid": self.uid, "title": self.title, "description": self.description,
                "tags": ["gpuwarden"] + self.tags, "timezone": "browser", "editable": True,
                "graphTooltip": 1, "refresh": "30s", "schemaVersion": 38, "version": 1,
                "time": {"from": "now-6h", "to": "now"}, "links": links,
                "annotations": {"list": annotations},
                "templating": {"list": self.variables}, "panels": self.panels}

def write(board, name):
    WRITTEN[name] = json.dumps(board.json(), indent=2) + "\n"

N = 'instance=~"$node"'
RI = "$__rate_interval"

# ---------------------------------------------------------------- fleet overview
b = Board("gpuwarden-fleet", "GPU fleet overview",
          "Every GPU of the fleet at a glance: health, utilization, power, temperature headroom, "
          "throttling and alerts, from gpuwarden agents (one per node). docs/operations.md.",
          [var_ds(), var_q("node", "Node", "label_values(gpu_up, instance)")], ["fleet"])
b.row("Now")
b.stat("GPUs", f'count(gpu_up{{{N}}})', description="GPUs the agents report (gpu_up).")
b.stat("GPUs lost", f'count(gpu_up{{{N}}} == 0) or vector(0)',
       description="GPUs that stopped answering NVML (fell off the bus, or every read fails).",
       thresholds=[{"color": "green", "value": None}, {"color": "red", "value": 1}])
b.stat("Utilization", f'avg(gpu_utilization_ratio{{{N}}})', unit="percentunit",
       description="Mean GPU utilization (share of time a kernel ran) over the GPUs shown.")
b.stat("Memory in use", f'sum(gpu_memory_used_bytes{{{N}}}) / sum(gpu_memory_total_bytes{{{N}}})',
       unit="percentunit")
b.stat("Power", f'sum(gpu_power_watts{{{N}}})', unit="watt")
b.stat("Throttled GPUs",
       f'count(max by (instance, gpu, uuid) (gpu_clock_event_active{{{N}, reason=~"{THROTTLE}"}}) == 1) or vector(0)',
       description="GPUs whose clocks a power or thermal limit holds down now.",
       thresholds=[{"color": "green", "value": None}, {"color": "orange", "value": 1}])
b.stat("Alerts firing", f'count(ALERTS{{alertstate="firing", {N}}}) or vector(0)',
       thresholds=[{"color": "green", "value": None}, {"color": "red", "value": 1}])
b.stat("Idle but allocated", f'sum(gpu_idle_allocated_gpus{{{N}}}) or vector(0)',
       description="Allocated GPUs idle for at least jobs.idle_window (30 m by default).",
       thresholds=[{"color": "green", "value": None}, {"color": "orange", "value": 1}])
b.row("Utilization and power")
b.panel("timeseries", "Utilization by node", [(f'avg by (instance) (gpu_utilization_ratio{{{N}}})', "{{instance}}")],
        w=12, unit="percentunit", minv=0, maxv=1)
b.panel("timeseries", "Fleet utilization (recording rules)",
        [("fleet:gpu_utilization:avg", "GPU"), ("fleet:gpu_memory_utilization:avg", "memory controller")],
        w=12, unit="percentunit", minv=0, maxv=1,
        description="fleet:* recording rules of deploy/rules/fleet.yml: every GPU this data source sees.")
b.panel("timeseries", "Power drawn and allowed (fleet)",
        [("fleet:gpu_power_watts:sum", "drawn"), ("fleet:gpu_power_limit_watts:sum", "enforced limits"),
         ("fleet:gpu_energy_joules:rate5m", "from the energy counter (5m)")], w=12, unit="watt", minv=0)
b.panel("timeseries", "Temperature headroom to slowdown (coolest margin per node)",
        [(f'min by (instance) (gpu_temperature_threshold_celsius{{{N}, threshold="slowdown"}} - ignoring(threshold) gpu_temperature_celsius{{{N}}})', "{{instance}}")],
        w=12, unit="celsius",
        description="Degrees left before the hottest GPU of each node reaches its own slowdown threshold.")
b.row("Every GPU")
b.panel("bargauge", "Utilization per GPU", [(f'gpu_utilization_ratio{{{N}}}', "{{instance}} GPU {{gpu}}")],
        w=12, h=10, unit="percentunit", instant=True, minv=0, maxv=1,
        options={"orientation": "horizontal", "displayMode": "gradient",
                 "reduceOptions": {"calcs": ["lastNotNull"]}})
b.panel("bargauge", "Temperature against each GPU's slowdown threshold",
        [(f'gpu_temperature_celsius{{{N}}} / ignoring(threshold) gpu_temperature_threshold_celsius{{{N}, threshold="slowdown"}}', "{{instance}} GPU {{gpu}}")],
        w=12, h=10, unit="percentunit", instant=True, minv=0, maxv=1,
        field={"thresholds": {"mode": "absolute", "steps": [
            {"color": "green", "value": None}, {"color": "orange", "value": 0.9}, {"color": "red", "value": 0.97}]}},
        options={"orientation": "horizontal", "displayMode": "gradient",
                 "reduceOptions": {"calcs": ["lastNotNull"]}})
b.row("Health")
b.panel("timeseries", "Throttle reasons active (GPUs)",
        [(f'sum by (reason) (gpu_clock_event_active{{{N}}})', "{{reason}}")], w=8, stack=True)
b.panel("timeseries", "Lost GPUs, uncorrectable ECC, XIDs",
        [("fleet:gpus_lost:count", "GPUs lost"), ("fleet:gpu_ecc_uncorrected_errors:sum", "uncorrectable ECC errors"),
         (f'sum(increase(gpu_xid_errors_total{{{N}}}[{RI}])) or vector(0)', "XID errors")], w=8)
b.panel("timeseries", "Agents: seconds since the last collection",
        [(f'time() - gpuwarden_collect_last_success_timestamp_seconds{{{N}}}', "{{instance}}")], w=8, unit="s",
        description="Above 30 s an agent has stopped collecting (GpuwardenCollectionStale).")
b.panel("table", "Alerts (firing and pending)",
        [f'sum by (alertname, alertstate, severity, layer, instance, gpu) (ALERTS{{{N}}})'],
        w=24, h=8, instant=True, table=True,
        description="Empty when nothing fires: the healthy demo fleet raises none in its first half hour.")
write(b, "fleet-overview.json")

# ---------------------------------------------------------------- GPU detail
G = 'instance=~"$node", gpu=~"$gpu"'
b = Board("gpuwarden-gpu", "GPU detail",
          "One GPU over time: every device signal gpuwarden reads from NVML, throttle reasons and "
          "alerts marked on the time axis, the job holding it.",
          [var_ds(), var_q("node", "Node", "label_values(gpu_up, instance)", multi=False),
           var_q("gpu", "GPU", 'label_values(gpu_up{instance=~"$node"}, gpu)', multi=False,
                 include_all=False)], ["gpu"])
b.annotation("Throttled", f'max by (reason) (gpu_clock_event_active{{{G}, reason=~"{THROTTLE}"}}) == 1',
             "Throttled: {{reason}}", "", "orange")
b.annotation("Alerts", f'ALERTS{{{G}, alertstate="firing"}}', "{{alertname}}", "{{severity}} ({{layer}})", "red")
b.row("Identity and state")
b.panel("table", "GPU", [f'gpu_info{{{G}}}'], w=12, h=4, instant=True, table=True)
b.panel("table", "Held by", [f'gpu_allocation_info{{{G}}}'], w=6, h=4, instant=True, table=True,
        description="The job(s) holding this GPU (Slurm or GPUWARDEN_JOB); empty when free.")
b.stat("XID errors since the agent started", f'sum(gpu_xid_errors_total{{{G}}}) or vector(0)', w=3,
       thresholds=[{"color": "green", "value": None}, {"color": "red", "value": 1}])
b.stat("Up", f'gpu_up{{{G}}}', w=3,
       thresholds=[{"color": "red", "value": None}, {"color": "green", "value": 1}])
b.row("Work")
b.panel("timeseries", "Utilization", [
    (f'gpu_utilization_ratio{{{G}}}', "GPU"), (f'gpu_memory_utilization_ratio{{{G}}}', "memory controller"),
    (f'gpu_utilization_peak_ratio{{{G}}}', "GPU, peak between reads")], w=12, unit="percentunit", minv=0, maxv=1)
b.panel("timeseries", "Memory", [
    (f'gpu_memory_used_bytes{{{G}}}', "used"), (f'gpu_memory_used_peak_bytes{{{G}}}', "used, peak between reads"),
    (f'gpu_memory_total_bytes{{{G}}}', "total")], w=12, unit="bytes", minv=0)
b.panel("timeseries", "Power", [
    (f'gpu_power_watts{{{G}}}', "drawn"), (f'gpu_power_peak_watts{{{G}}}', "peak between reads"),
    (f'gpu_power_limit_watts{{{G}}}', "enforced limit"), (f'gpu_power_default_limit_watts{{{G}}}', "default limit"),
    (f'rate(gpu_energy_joules_total{{{G}}}[{RI}])', "from the energy counter")], w=12, unit="watt", minv=0)
b.panel("timeseries", "Clocks", [
    (f'gpu_sm_clock_hertz{{{G}}}', "SM"), (f'gpu_sm_clock_max_hertz{{{G}}}', "SM max"),
    (f'gpu_memory_clock_hertz{{{G}}}', "memory")], w=12, unit="hertz", minv=0)
b.row("Heat and throttling")
b.panel("timeseries", "Temperature", [
    (f'gpu_temperature_celsius{{{G}}}', "GPU"), (f'gpu_memory_temperature_celsius{{{G}}}', "memory (HBM)"),
    (f'gpu_temperature_threshold_celsius{{{G}, threshold=~"gpu_max|slowdown|shutdown"}}', "{{threshold}} threshold")],
    w=12, unit="celsius")
b.panel("timeseries", "Time throttled, by reason", [
    (f'rate(gpu_clock_event_seconds_total{{{G}}}[{RI}])', "{{reason}}")], w=12, unit="percentunit", stack=True,
    description="Share of time each clock-event reason was active (integrated by the agent every cycle).")
b.panel("state-timeline", "Clock-event reasons", [
    (f'gpu_clock_event_active{{{G}}}', "{{reason}}")], w=12,
    field={"mappings": [{"type": "value", "options": {"0": {"text": "off", "color": "transparent"},
                                                      "1": {"text": "on", "color": "orange"}}}]})
b.panel("timeseries", "Fan and performance state", [
    (f'gpu_fan_speed_ratio{{{G}}}', "fan"), (f'gpu_performance_state{{{G}}}', "P-state")], w=12,
    description="Passive boards (H100 SXM, A100 SXM, L40S) have no fan series.")
b.row("Errors and PCIe")
b.panel("timeseries", "ECC errors since the last reset", [
    (f'gpu_ecc_errors_total{{{G}, scope="volatile"}}', "{{type}}")], w=8)
b.panel("timeseries", "Remapped rows / retired pages", [
    (f'gpu_remapped_rows{{{G}}}', "remapped ({{type}})"), (f'gpu_remapped_rows_pending{{{G}}}', "remap pending"),
    (f'gpu_retired_pages{{{G}}}', "retired ({{cause}})")], w=8)
b.panel("timeseries", "PCIe", [
    (f'gpu_pcie_receive_bytes_per_second{{{G}}}', "receive"), (f'gpu_pcie_transmit_bytes_per_second{{{G}}}', "transmit")],
    w=8, unit="Bps")
b.panel("timeseries", "PCIe replays", [(f'increase(gpu_pcie_replays_total{{{G}}}[{RI}])', "replays")], w=8)
b.panel("timeseries", "Processes", [(f'gpu_processes{{{G}}}', "processes"),
                                    (f'gpu_processes_memory_bytes{{{G}}} / gpu_memory_total_bytes{{{G}}}', "their share of memory")], w=8)
b.panel("table", "Alerts on this GPU", [f'sum by (alertname, alertstate, severity, layer) (ALERTS{{{G}}})'],
        w=8, instant=True, table=True, description="Empty when nothing fires or is pending for this GPU.")
write(b, "gpu-detail.json")

# ---------------------------------------------------------------- jobs and teams
T = 'team=~"$team"'
b = Board("gpuwarden-jobs", "Jobs and teams",
          "Who holds the GPUs and what they get out of them: jobs by team, utilization and idle "
          "time of allocated GPUs, energy, throttling, queue waits (Slurm) and start latency.",
          [var_ds(), var_q("node", "Node", "label_values(gpu_up, instance)"),
           var_q("team", "Team", "label_values(gpu_allocation_info, team)")], ["jobs"])
b.row("Now")
b.stat("Running jobs", 'max(gpu_jobs{state="RUNNING"})', w=4,
       description="As squeue shows them (every agent reports the cluster's figure: max, not sum).")
b.stat("Pending jobs", 'max(gpu_jobs{state="PENDING"})', w=4)
b.stat("Allocated GPUs", f'count(gpu_allocation_info{{{N}, {T}}}) or vector(0)', w=4)
b.stat("Allocated GPUs idle now", f'count(gpu_idle_streak_seconds{{{N}}} > 0 and on(instance, gpu, uuid) gpu_allocation_info{{{T}}}) or vector(0)', w=4,
       thresholds=[{"color": "green", "value": None}, {"color": "orange", "value": 1}])
b.stat("Utilization of allocated GPUs", f'avg(gpu_utilization_ratio{{{N}}} and on(instance, gpu, uuid) gpu_allocation_info{{{T}}})', w=4, unit="percentunit")
b.stat("Power of allocated GPUs", f'sum(gpu_power_watts{{{N}}} and on(instance, gpu, uuid) gpu_allocation_info{{{T}}})', w=4, unit="watt")
b.row("Teams")
b.panel("timeseries", "GPUs allocated by team", [(f'sum by (team) (gpu_job_gpus{{{N}, {T}}})', "{{team}}")], w=8, stack=True)
b.panel("timeseries", "Utilization of allocated GPUs by team",
        [(f'avg by (team) (gpu_utilization_ratio{{{N}}} * on(instance, gpu, uuid) group_left(team) max by (instance, gpu, uuid, team) (gpu_allocation_info{{{T}}}))', "{{team}}")],
        w=8, unit="percentunit", minv=0, maxv=1)
b.panel("timeseries", "Idle share of allocated GPU time by team",
        [(f'sum by (team) (rate(gpu_job_idle_gpu_seconds_total{{{N}, {T}}}[{RI}])) / sum by (team) (rate(gpu_job_gpu_seconds_total{{{N}, {T}}}[{RI}]))', "{{team}}")],
        w=8, unit="percentunit", minv=0, maxv=1,
        description="GPU time at or below jobs.idle_threshold over GPU time allocated (team:gpu_job_idle:ratio_rate5m for the whole fleet).")
b.panel("bargauge", "GPU-hours by team over the time range",
        [(f'sum by (team) (increase(gpu_job_gpu_seconds_total{{{N}, {T}}}[$__range])) / 3600', "{{team}}")],
        w=8, instant=True, options={"orientation": "horizontal", "reduceOptions": {"calcs": ["lastNotNull"]}})
b.panel("timeseries", "Power of each team's jobs", [(f'sum by (team) (rate(gpu_job_energy_joules_total{{{N}, {T}}}[{RI}]))', "{{team}}")],
        w=8, unit="watt", stack=True)
b.panel("timeseries", "Time throttled by team (per GPU)",
        [(f'sum by (team) (rate(gpu_job_throttle_seconds_total{{{N}, {T}, reason=~"{THROTTLE}"}}[{RI}])) / sum by (team) (gpu_job_gpus{{{N}, {T}}})', "{{team}}")],
        w=8, unit="percentunit", minv=0)
b.row("Running jobs")
b.panel("table", "Running jobs on the nodes shown", [
    (f'sum by (instance, job_id, user, team, partition) (gpu_job_gpus{{{N}, {T}}})', "GPUs"),
    (f'max by (instance, job_id, user, team, partition) (gpu_job_sm_utilization_ratio{{{N}, {T}, stat="avg"}})', "avg utilization"),
    (f'max by (instance, job_id, user, team, partition) (gpu_job_memory_peak_bytes{{{N}, {T}}})', "memory peak"),
    (f'max by (instance, job_id, user, team, partition) (gpu_job_idle_streak_seconds{{{N}, {T}}})', "idle for")],
    w=24, h=8, instant=True, table=True)
b.row("Scheduling (Slurm)")
b.panel("timeseries", "Queue wait by partition (p50, p90)", [
    ('histogram_quantile(0.5, max by (partition, le) (rate(gpu_job_queue_wait_seconds_bucket[$__rate_interval])))', "p50 {{partition}}"),
    ('histogram_quantile(0.9, max by (partition, le) (rate(gpu_job_queue_wait_seconds_bucket[$__rate_interval])))', "p90 {{partition}}")],
    w=8, unit="s", description="Eligible to start. Every agent polling Slurm reports the same histogram: max by, not sum by.")
b.panel("timeseries", "Jobs started per minute by partition",
        [('max by (partition) (rate(gpu_job_queue_wait_seconds_count[$__rate_interval])) * 60', "{{partition}}")], w=8)
b.panel("timeseries", "Job run time by partition (p50)",
        [('histogram_quantile(0.5, max by (partition, le) (rate(gpu_job_run_seconds_bucket[$__rate_interval])))', "{{partition}}")], w=8, unit="s")
b.panel("timeseries", "Start latency: allocation to first work (p90)",
        [(f'histogram_quantile(0.9, sum by (le) (increase(gpu_job_start_latency_seconds_bucket{{{N}}}[$__range])))', "p90")],
        w=8, unit="s", description="This node's jobs: from the allocation to the first sample above the idle threshold.")
b.panel("timeseries", "Jobs by state", [('max by (state) (gpu_jobs)', "{{state}}")], w=8)
b.panel("timeseries", "Slurm polling", [(f'gpuwarden_slurm_up{{{N}}}', "up {{instance}}"),
                                        (f'time() - gpuwarden_slurm_last_success_timestamp_seconds{{{N}}}', "seconds since squeue answered {{instance}}")], w=8)
write(b, "jobs-teams.json")

# ---------------------------------------------------------------- governance
b = Board("gpuwarden-governance", "GPU governance",
          "Capacity won back and lost: idle-but-allocated GPUs, idle GPU-hours by team, allocation "
          "against use, queue pressure and energy by team. Quota, cost and reclaim panels come with "
          "the governance metrics.",
          [var_ds(), var_q("node", "Node", "label_values(gpu_up, instance)"),
           var_q("team", "Team", "label_values(gpu_allocation_info, team)")], ["governance"])
b.row("Allocation against use")
b.stat("Share of GPUs allocated",
       f'count(count by (instance, gpu, uuid) (gpu_allocation_info{{{N}}})) / count(gpu_up{{{N}}})', w=6, unit="percentunit")
b.stat("Busy GPU-equivalents in allocated GPUs",
       f'sum(gpu_utilization_ratio{{{N}}} and on(instance, gpu, uuid) gpu_allocation_info{{{T}}})', w=6,
       description="Sum of utilization over the allocated GPUs: what the allocation actually uses.")
b.stat("Idle but allocated (idle window)", f'sum(gpu_idle_allocated_gpus{{{N}}}) or vector(0)', w=6,
       thresholds=[{"color": "green", "value": None}, {"color": "orange", "value": 1}])
b.stat("Fleet idle share of allocated time", f'sum(team:gpu_job_idle:ratio_rate5m * team:gpu_job_gpus:sum) / sum(team:gpu_job_gpus:sum)',
       w=6, unit="percentunit", description="Recording rules team:* (deploy/rules/fleet.yml), weighted by GPUs.")
b.panel("timeseries", "Allocated and busy GPUs", [
    (f'count(count by (instance, gpu, uuid) (gpu_allocation_info{{{N}}}))', "allocated"),
    (f'sum(gpu_utilization_ratio{{{N}}} and on(instance, gpu, uuid) gpu_allocation_info)', "busy equivalent"),
    (f'count(gpu_up{{{N}}} == 1)', "in service")], w=12)
b.panel("timeseries", "Idle share of allocated GPU time by team (recording rule)",
        [(f'team:gpu_job_idle:ratio_rate5m{{{T}}}', "{{team}}")], w=12, unit="percentunit", minv=0, maxv=1)
b.row("Waste and pressure")
b.panel("bargauge", "Idle GPU-hours by team over the time range",
        [(f'sum by (team) (increase(gpu_job_idle_gpu_seconds_total{{{N}, {T}}}[$__range])) / 3600', "{{team}}")],
        w=8, instant=True, options={"orientation": "horizontal", "reduceOptions": {"calcs": ["lastNotNull"]}})
b.panel("table", "Longest idle allocations", [
    (f'topk(10, max by (instance, job_id, user, team) (gpu_job_idle_streak_seconds{{{N}, {T}}}))', "idle for")],
    w=8, instant=True, table=True, description="Jobs whose every GPU has been idle this long (0: working).")
b.panel("timeseries", "Queue pressure: p90 wait to start",
        [('histogram_quantile(0.9, max by (le) (rate(gpu_job_queue_wait_seconds_bucket[$__rate_interval])))', "p90 wait"),
         ('max(gpu_jobs{state="PENDING"})', "pending jobs")], w=8, unit="s")
b.panel("bargauge", "Energy by team over the time range (kWh)",
        [(f'sum by (team) (increase(gpu_job_energy_joules_total{{{N}, {T}}}[$__range])) / 3.6e6', "{{team}}")],
        w=12, instant=True, options={"orientation": "horizontal", "reduceOptions": {"calcs": ["lastNotNull"]}})
b.panel("timeseries", "GPUs allocated by team (recording rule)", [(f'team:gpu_job_gpus:sum{{{T}}}', "{{team}}")], w=12, stack=True)
b.panels.append({"id": b.next_id, "type": "text", "title": "Coming with the governance metrics",
                 "gridPos": {"h": 4, "w": 24, "x": 0, "y": b.y + b.row_h},
                 "options": {"mode": "markdown", "content":
                             "Team quota against use, cost per team and per idle GPU-hour, and reclaim "
                             "actions are added here when gpuwarden exports the governance metrics "
                             "(docs/metrics.md). The panels above use the task layer only."}})
write(b, "governance.json")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="compare instead of writing")
    args = ap.parse_args()
    stale = []
    for name, text in sorted(WRITTEN.items()):
        path = os.path.join(OUT, name)
        if args.check:
            try:
                with open(path) as f:
                    if f.read() == text:
                        continue
            except OSError:
                pass
            stale.append(path)
        else:
            with open(path, "w") as f:
                f.write(text)
    for path in stale:
        print("%s differs from what %s writes: run it" % (path, os.path.basename(__file__)))
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
