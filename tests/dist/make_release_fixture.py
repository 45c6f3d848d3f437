#!/usr/bin/env python3
"""Writes tests/dist/testdata/release-<VERSION>: a data directory as a released gpuwarden leaves
it, for tests/dist/upgrade_test.py. Run it once per release with THAT release's binary, commit
the result, and never regenerate an old one (it stands for what is on operators' disks).

    make_release_fixture.py GPUWARDEN_BINARY OUTPUT_DIR

It holds 12 h of two series at 10 s (a gauge with a NaN and a counter with a reset) imported
through `gpuwarden tsdb import`, so the history is in blocks and rollups, and the job records as
that release wrote them (jobs/jobs.jsonl). The values come from the formulas in upgrade_test.py.
"""
import json
import os
import subprocess
import sys
import tempfile

START_S = 1767225600  # 2026-01-01T00:00:00Z
STEP_S = 10
COUNT = 12 * 360


def temp(i):
    return 40 + ((i * 7) % 23) / 4


def energy(i):
    return (i % 3000) * 1.5  # resets once, at i = 3000


def main():
    binary, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=False)
    with tempfile.NamedTemporaryFile("w", suffix=".om", delete=False) as f:
        f.write("# TYPE gpu_temperature_celsius gauge\n")
        for i in range(COUNT):
            v = "NaN" if i == 100 else repr(temp(i))
            f.write(f'gpu_temperature_celsius{{gpu="0",uuid="GPU-fixture-0"}} {v} {START_S + i * STEP_S}\n')
        f.write("# TYPE gpu_energy_joules counter\n")
        for i in range(COUNT):
            f.write(f'gpu_energy_joules_total{{gpu="0",uuid="GPU-fixture-0"}} {energy(i)!r} {START_S + i * STEP_S}\n')
        f.write("# EOF\n")
        om = f.name
    subprocess.run([binary, "tsdb", "import", om, "--data-dir", out], check=True)
    os.unlink(om)
    # A finished job's record exactly as release 0.1.0 wrote it (utilization in percent).
    os.makedirs(os.path.join(out, "jobs"), exist_ok=True)
    record = {
        "job_id": "4242", "source": "slurm", "name": "resnet-fixture", "user": "alice",
        "account": "research", "partition": "gpu", "team": "research", "state": "COMPLETED",
        "state_reason": "None", "submit_time": START_S, "eligible_time": START_S,
        "start_time": START_S + 60, "end_time": START_S + 3660, "exit_code": 0,
        "queue_wait_s": 60, "submit_wait_s": 60,
        "gpu": {"gpus": [0], "start_s": START_S + 60, "end_s": START_S + 3660,
                "gpu_seconds": 3600, "observed_gpu_seconds": 3600, "energy_j": 1.08e6,
                "power_integral_j": 1.08e6, "util_avg_pct": 40, "util_max_pct": 90,
                "memory_peak_bytes": 17179869184, "throttle_s": {"sw_power_cap": 12},
                "ecc_corrected": 0, "ecc_uncorrected": 0, "xid_count": 0,
                "idle_gpu_seconds": 300, "idle_while_allocated": False},
        "cost": {"currency": "USD", "allocated_gpu_hours": 1.0, "energy_kwh": 0.3,
                 "allocation_cost": 3.59, "energy_cost": 0.045, "idle_allocated_cost": 0.3,
                 "total_cost": 3.635},
    }
    with open(os.path.join(out, "jobs", "jobs.jsonl"), "w") as f:
        f.write(json.dumps(record, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
