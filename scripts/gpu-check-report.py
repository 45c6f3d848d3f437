#!/usr/bin/env python3
"""The tables of scripts/gpu-check.sh: gpuwarden's readings next to nvidia-smi's.

Usage: gpu-check-report.py DIR   (DIR holds what gpu-check.sh wrote; any file may be missing or
empty: that column then shows "-").
"""
import csv
import json
import os
import re
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/gpu-check"


def read(name):
    try:
        with open(os.path.join(OUT, name), encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


SAMPLE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})? (\S+)')
LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text):
    """[(name, {labels}, value)] of an exposition text."""
    samples = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            continue
        labels = {k: v.replace('\\"', '"').replace("\\\\", "\\") for k, v in LABEL.findall(m.group(2) or "")}
        try:
            samples.append((m.group(1), labels, float(m.group(3))))
        except ValueError:
            pass
    return samples


def value(samples, name, **labels):
    for n, l, v in samples:
        if n == name and all(l.get(k) == str(w) for k, w in labels.items()):
            return v
    return None


def mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def fmt(v, scale=1.0, digits=1):
    if v is None or v == "":
        return "-"
    if isinstance(v, str):
        return v
    return f"{v * scale:.{digits}f}"


def table(title, header, rows):
    print(f"\n== {title}")
    if not rows:
        print("   (nothing to compare)")
        return
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    for r in [header] + rows:
        print("  " + "  ".join(str(c).rjust(w) for c, w in zip(r, widths)))


# --- gpuwarden -------------------------------------------------------------------------------
final = parse_metrics(read("metrics.txt"))
scrapes = [parse_metrics(read(f"metrics-{i}.txt")) for i in range(1, 11)]
scrapes = [s for s in scrapes if s]
gpus = sorted({int(l["gpu"]) for n, l, v in final if n == "gpu_up" and "gpu" in l})
bus_of = {int(l["gpu"]): l.get("pci_bus_id", "") for n, l, v in final if n == "gpu_info"}


def window_mean(name, gpu, **labels):
    return mean([value(s, name, gpu=gpu, **labels) for s in scrapes])


# --- nvidia-smi ------------------------------------------------------------------------------
def dmon(text):
    """{gpu: {column: [values]}} of `nvidia-smi dmon` output."""
    columns, data = [], {}
    for line in text.splitlines():
        if line.startswith("# gpu") or line.startswith("#gpu"):
            columns = line.lstrip("#").split()
            continue
        if line.startswith("#") or not line.strip() or not columns:
            continue
        cells = line.split()
        if len(cells) != len(columns) or not cells[0].isdigit():
            continue
        row = data.setdefault(int(cells[0]), {})
        for c, x in zip(columns[1:], cells[1:]):
            try:
                row.setdefault(c, []).append(float(x))
            except ValueError:
                pass
    return columns, data


def per_gpu_blocks(text):
    """{gpu index: [lines]} of nvidia-smi output with `GPU N: name (UUID: …)` headings."""
    blocks, current = {}, None
    for line in text.splitlines():
        m = re.match(r"^GPU (\d+):", line)
        if m:
            current = int(m.group(1))
            blocks[current] = []
        elif current is not None:
            blocks[current].append(line)
    return blocks


# Basics, from `gpuwarden snapshot --json` and nvidia-smi's query (as before).
try:
    snap = json.loads(read("snapshot.json") or "{}")
except json.JSONDecodeError:
    snap = {}
smi_rows = {}
for r in csv.reader(read("nvidia-smi.csv").splitlines()):
    r = [x.strip() for x in r]
    if r and r[0].isdigit():
        smi_rows[int(r[0])] = r
rows = []
for g in snap.get("gpus", []):
    r = smi_rows.get(g["index"], [""] * 14)
    m = g.get("metrics", {})
    def get(key, scale=1.0):
        return m[key] * scale if key in m else None
    for name, a, b in [
        ("memory.total MiB", r[3], get("gpu_memory_total_bytes", 2**-20)),
        ("memory.used MiB", r[4], get("gpu_memory_used_bytes", 2**-20)),
        ("temperature C", r[5], get("gpu_temperature_celsius")),
        ("power.draw W", r[6], get("gpu_power_watts")),
        ("power.limit W", r[7], get("gpu_power_limit_watts")),
        ("clocks.sm MHz", r[8], get("gpu_sm_clock_hertz", 1e-6)),
        ("clocks.max.sm MHz", r[9], get("gpu_sm_clock_max_hertz", 1e-6)),
        ("pstate", r[10], get("gpu_performance_state")),
    ]:
        rows.append([g["index"], name, a or "-", fmt(b)])
table("basics (gpuwarden snapshot)", ["gpu", "field", "nvidia-smi", "gpuwarden"], rows)
if snap.get("gpus") and smi_rows:
    print("  uuid match:", all(smi_rows.get(g["index"], ["", ""])[1] == g["uuid"] for g in snap["gpus"]))

# Utilization over the window: dmon -s u against the scrapes' mean.
_, util = dmon(read("dmon-u.txt"))
rows = []
for g in gpus:
    u = util.get(g, {})
    rows.append([g, fmt(mean(u.get("sm", []))), fmt(window_mean("gpu_utilization_ratio", g), 100),
                 fmt(mean(u.get("mem", []))), fmt(window_mean("gpu_memory_utilization_ratio", g), 100)])
table("utilization % (mean over the window)", ["gpu", "dmon sm", "gpuwarden", "dmon mem", "gpuwarden"], rows)

# GPM: dmon --gpm-metrics 2,3,5,10 (SM util, SM occupancy, any tensor, DRAM bandwidth), the last
# four columns of its table, against gpuwarden's ratios.
columns, gpm = dmon(read("dmon-gpm.txt"))
gpm_columns = columns[-4:] if len(columns) >= 9 else []
rows = []
for g in gpus:
    d = gpm.get(g, {})
    smi = [fmt(mean(d.get(c, []))) if gpm_columns else "-" for c in (gpm_columns or [None] * 4)]
    ours = [window_mean("gpu_sm_active_ratio", g), window_mean("gpu_sm_occupancy_ratio", g),
            window_mean("gpu_tensor_active_ratio", g, pipe="any"), window_mean("gpu_dram_active_ratio", g)]
    rows.append([g] + [f"{a} / {fmt(b, 100)}" for a, b in zip(smi, ours)])
table("GPM % (nvidia-smi dmon --gpm-metrics / gpuwarden)" + (f" columns {gpm_columns}" if gpm_columns else ""),
      ["gpu", "SM active", "SM occupancy", "tensor any", "DRAM active"], rows)

# MIG: mode and instances.
modes = {}
for r in csv.reader(read("mig-mode.csv").splitlines()):
    r = [x.strip() for x in r]
    if len(r) >= 3 and r[0].isdigit():
        modes[int(r[0])] = (r[1], r[2])
lgi = {}
for line in read("mig-lgi.txt").splitlines():
    m = re.match(r"^\|\s+(\d+)\s+MIG\s+(\S+)\s+(\d+)\s+(\d+)\s+\d+:\d+", line)
    if m:
        lgi.setdefault(int(m.group(1)), []).append(f"{m.group(4)}:{m.group(2)}")
ours_mig = {}
for n, l, v in final:
    if n == "gpu_mig_info":
        ours_mig.setdefault(int(l["gpu"]), []).append(f'{l.get("mig_instance")}:{l.get("mig_profile")}')
rows = []
for g in gpus:
    mode = modes.get(g, ("-", "-"))
    cur, pend = value(final, "gpu_mig_enabled", gpu=g, state="current"), value(final, "gpu_mig_enabled", gpu=g, state="pending")
    rows.append([g, f"{mode[0]}/{mode[1]}", f"{fmt(cur, 1, 0)}/{fmt(pend, 1, 0)}",
                 " ".join(sorted(lgi.get(g, []))) or "-", " ".join(sorted(ours_mig.get(g, []))) or "-"])
table("MIG (mode current/pending; instances id:profile)", ["gpu", "nvidia-smi", "gpuwarden", "mig -lgi", "gpuwarden"], rows)

# NVLink: active links (nvlink -s) and error sums by kind (nvlink -e).
status = per_gpu_blocks(read("nvlink-s.txt"))
errors = per_gpu_blocks(read("nvlink-e.txt"))
rows = []
for g in gpus:
    links = [l for l in status.get(g, []) if re.search(r"Link \d+:", l)]
    smi_active = sum(1 for l in links if "inactive" not in l.lower()) if links else None
    total = value(final, "gpu_nvlink_links", gpu=g)
    down = value(final, "gpu_nvlink_links_down", gpu=g)
    ours_active = total - down if total is not None and down is not None else None
    sums = {}
    for l in errors.get(g, []):
        m = re.search(r"Link \d+:\s*(.*?)\s*:\s*(\d+)\s*$", l)
        if m:
            kind = m.group(1).lower()
            key = "replay" if "replay" in kind else "recovery" if "recovery" in kind else "crc" if "crc" in kind else kind
            sums[key] = sums.get(key, 0) + int(m.group(2))
    crc = [value(final, "gpu_nvlink_errors_total", gpu=g, type=t) for t in ("crc_flit", "crc_data")]
    ours_crc = sum(c for c in crc if c is not None) if any(c is not None for c in crc) else None
    rows.append([g, fmt(smi_active, 1, 0), fmt(ours_active, 1, 0),
                 f'{fmt(sums.get("replay"), 1, 0)}/{fmt(value(final, "gpu_nvlink_errors_total", gpu=g, type="replay"), 1, 0)}',
                 f'{fmt(sums.get("recovery"), 1, 0)}/{fmt(value(final, "gpu_nvlink_errors_total", gpu=g, type="recovery"), 1, 0)}',
                 f'{fmt(sums.get("crc"), 1, 0)}/{fmt(ours_crc, 1, 0)}'])
table("NVLink (active links; errors nvidia-smi/gpuwarden)", ["gpu", "smi up", "gw up", "replay", "recovery", "crc"], rows)

# T.Limit: nvidia-smi -q -d TEMPERATURE, by PCI bus id.
tlimit, current = {}, None
for line in read("temperature.txt").splitlines():
    m = re.match(r"^GPU ([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-9A-Fa-f]+)", line)
    if m:
        current = m.group(1).upper()
        continue
    m = re.match(r"^\s+(.*T\.Limit Temp)\s*:\s*(-?\d+)", line)
    if m and current:
        tlimit.setdefault(current, {})[m.group(1).strip()] = int(m.group(2))
rows = []
for g in gpus:
    smi = tlimit.get(bus_of.get(g, "").upper(), {})
    ours = {l.get("threshold"): v for n, l, v in final if n == "gpu_temperature_limit_margin_celsius" and l.get("gpu") == str(g)}
    smi_text = ", ".join(f"{k.replace(' T.Limit Temp', '')}={v}" for k, v in smi.items()) or "-"
    ours_text = ", ".join(f"{k}={fmt(v, 1, 0)}" for k, v in sorted(ours.items())) or "-"
    rows.append([g, smi_text, ours_text])
table("T.Limit (nvidia-smi -q -d TEMPERATURE; gpuwarden gpu_temperature_limit_margin_celsius)", ["gpu", "nvidia-smi", "gpuwarden"], rows)

# dcgm-exporter names on the same page (exposition.names: both).
dcgm = sorted({n for n, l, v in final if n.startswith("DCGM_FI_")})
print(f"\n== dcgm-exporter names on /metrics: {len(dcgm)} families")
for name in ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_FB_USED", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
             "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"):
    print(f"  {name}: {'present' if name in dcgm else 'absent'}")
