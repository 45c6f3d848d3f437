"""The simulated fleet of the fleet test: one scenario file per node, the job plan for the
stand-in squeue, and what the pack's recording rules must then say — computed by reading the
written scenario files back (models, workloads, replica counts, faults), not from a run.

Node k (1..N), 8 GPUs of one model (H100, A100-80GB, H200, L40S in turn):
  GPUs 0-3  training at 60 + 5·(k mod 8) % SM utilization   job A (team cycles over 4 teams)
  GPUs 4-5  held idle (idle_allocated)                      job B (teams vision, vision, data)
  GPU 6     memory-bound at 35 %, no job
  GPU 7     idle, no job; on the fault node it falls off the bus 20 s after the agent starts
"""
import os

import yaml

MODELS = ["H100", "A100-80GB", "H200", "L40S"]
ACCOUNTS_A = ["ml-research", "vision-lab", "speech-lab", "analytics"]
ACCOUNTS_B = ["vision-lab", "vision-lab", "analytics"]
TEAM_OF_ACCOUNT = {"ml-research": "research", "vision-lab": "vision", "speech-lab": "speech",
                   "analytics": "data"}
FAULT_GPU = 7
FAULT_AT = "20s"
# Utilization read from the simulator: the nominal percentage ± the workload's jitter (training
# ±2, memory-bound ±3 points, docs/scenarios.md) ± 1 for NVML's integer percent. A mean over
# the fleet stays within the largest of these.
UTIL_TOLERANCE = 0.04
IDLE_THRESHOLD_PCT = 5  # jobs.idle_threshold (default 0.05)
# Nominal SM utilization (%) of each workload type, and the default when `util` is not given.
NOMINAL_UTIL = {"training": 95, "memory_bound": 35, "idle": 0, "idle_allocated": 0}


class Node:
    def __init__(self, k, fault):
        self.k, self.fault = k, fault
        self.name = "node-%02d" % k
        self.rack = "r%d" % ((k - 1) // 4 + 1)
        self.model = MODELS[(k - 1) % len(MODELS)]
        self.train_util = 60 + 5 * (k % 8)

    def scenario(self):
        idle = {"model": self.model, "workload": [{"type": "idle"}]}
        if self.fault:
            idle["faults"] = [{"type": "fall_off_bus", "at": FAULT_AT}]
        return {
            "name": self.name,
            "description": "fleet test node %d (tests/fleet/fleet_scenarios.py)" % self.k,
            "seed": 1000 + self.k,
            "clock": "realtime",
            "speed": 1,
            "gpus": [
                {"model": self.model, "count": 4,
                 "workload": [{"type": "training", "util": self.train_util, "mem_util": 40}]},
                {"model": self.model, "count": 2, "workload": [{"type": "idle_allocated"}]},
                {"model": self.model,
                 "workload": [{"type": "memory_bound", "util": 35, "mem_util": 90}]},
                idle,
            ],
        }

    def jobs(self):
        a = ACCOUNTS_A[(self.k - 1) % len(ACCOUNTS_A)]
        b = ACCOUNTS_B[(self.k - 1) % len(ACCOUNTS_B)]
        return [
            {"job_id": 10000 + self.k, "name": "train-%d" % self.k, "user": "u%d" % self.k,
             "account": a, "partition": "gpu", "node": self.name, "gpus": [0, 1, 2, 3]},
            {"job_id": 20000 + self.k, "name": "notebook-%d" % self.k, "user": "v%d" % self.k,
             "account": b, "partition": "interactive", "node": self.name, "gpus": [4, 5]},
        ]


class Fleet:
    def __init__(self, nodes, fault_node):
        self.nodes = [Node(k, k == fault_node) for k in range(1, nodes + 1)]
        self.paths = []

    def write_scenarios(self, directory):
        self.paths = []
        for node in self.nodes:
            path = os.path.join(directory, node.name + ".yaml")
            with open(path, "w") as f:
                yaml.safe_dump(node.scenario(), f, sort_keys=False)
            self.paths.append(path)
        return self.paths

    def jobs(self):
        return [j for n in self.nodes for j in n.jobs()]

    def expectations(self):
        """What the recording rules must show once every fault has happened."""
        gpus, lost, utils = 0, 0, []
        per_node = {}  # node name -> [nominal util % of GPU i]
        for node, path in zip(self.nodes, self.paths):
            with open(path) as f:
                scenario = yaml.safe_load(f)
            table = []
            for definition in scenario["gpus"]:
                segment = definition["workload"][0]
                util = segment.get("util", NOMINAL_UTIL[segment["type"]])
                if segment["type"] in ("idle", "idle_allocated"):
                    util = 0
                falls = any(f["type"] == "fall_off_bus" for f in definition.get("faults", []))
                for _ in range(definition.get("count", 1)):
                    gpus += 1
                    table.append(util)
                    if falls:
                        lost += 1
                    else:
                        utils.append(util / 100.0)
            per_node[scenario["name"]] = table
        team_gpus, team_idle = {}, {}
        for job in self.jobs():
            team = TEAM_OF_ACCOUNT[job["account"]]
            table = per_node[job["node"]]
            team_gpus[team] = team_gpus.get(team, 0) + len(job["gpus"])
            idle = sum(1 for g in job["gpus"] if table[g] <= IDLE_THRESHOLD_PCT)
            team_idle[team] = team_idle.get(team, 0) + idle
        return {
            "gpus": gpus,
            "gpus_lost": lost,
            "utilization": sum(utils) / len(utils),
            "team_gpus": team_gpus,
            "team_idle_ratio": {t: team_idle[t] / team_gpus[t] for t in team_gpus},
        }
