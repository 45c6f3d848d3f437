#!/usr/bin/env bash
# Storage and query side by side: gpuwarden, Prometheus 2.42 and VictoriaMetrics 1.79 (Debian
# packages) on the same simulated GPU telemetry, all on loopback.
#   bench/storage_compare.sh [duration] [step]      (default 6h at 1s: ~10 M samples)
# Reports per system: bytes per sample on disk after compaction, import rate from text, RSS
# after the queries, and the latency (best of 3) of a fixed set of dashboard/alert queries.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${GW_BUILD_DIR:-build}/bin"  # the build to measure
duration="${1:-6h}"
step="${2:-1s}"
work="$(mktemp -d /tmp/gw-storage-bench.XXXXXX)"
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
command -v victoria-metrics >/dev/null || apt-get install -y -qq victoria-metrics >/dev/null
start=1700000000

echo "== data set: demo fleet, $duration at $step"
"$bin"/make_dataset --scenario demo --duration "$duration" --step "$step" --start "$start" \
  --out "$work/data.om"
samples=$(grep -vc '^#' "$work/data.om")
end=$(grep -v '^#' "$work/data.om" | tail -1 | awk '{print int($NF)}')
echo "samples=$samples"

now_ms() { date +%s%3N; }
rss_mib() { awk '/VmRSS/ {printf "%.0f", $2/1024}' /proc/"$1"/status; }
du_bytes() { du -sb "$1" | cut -f1; }

# --- gpuwarden
printf 'storage:\n  retention: 100y\n  rollup_retention: 100y\n' >"$work/gw.yaml"
t0=$(now_ms)
"$bin"/gpuwarden tsdb import "$work/data.om" --data-dir "$work/gw" --config "$work/gw.yaml" 2>"$work/gw-import.log"
t1=$(now_ms)
gw_import_s=$(awk "BEGIN {print ($t1-$t0)/1000}")
gw_bytes=$(du_bytes "$work/gw")
"$bin"/gpuwarden serve --data-dir "$work/gw" --config "$work/gw.yaml" --nvml-lib /nonexistent \
  --listen 127.0.0.1:19301 --log-level error &
gw_pid=$!

# --- Prometheus 2.42
t0=$(now_ms)
promtool tsdb create-blocks-from openmetrics "$work/data.om" "$work/prom" >/dev/null
t1=$(now_ms)
prom_import_s=$(awk "BEGIN {print ($t1-$t0)/1000}")
prometheus --config.file=/dev/null --storage.tsdb.path="$work/prom" \
  --storage.tsdb.retention.time=100y --web.listen-address=127.0.0.1:19302 --log.level=error &
prom_pid=$!

# --- VictoriaMetrics 1.79 (Prometheus text with millisecond timestamps)
victoria-metrics -storageDataPath="$work/vm" -httpListenAddr=127.0.0.1:19303 -retentionPeriod=100y \
  -search.latencyOffset=0s -loggerLevel=ERROR &
vm_pid=$!
for _ in $(seq 100); do curl -sf localhost:19303/health >/dev/null && break; sleep 0.1; done
grep -v '^#' "$work/data.om" | sed -E 's/ ([0-9]+)\.([0-9]{3})$/ \1\2/' >"$work/data.prom"
t0=$(now_ms)
curl -sf -X POST -T "$work/data.prom" localhost:19303/api/v1/import/prometheus
curl -sf localhost:19303/internal/force_flush >/dev/null
t1=$(now_ms)
vm_import_s=$(awk "BEGIN {print ($t1-$t0)/1000}")
sleep 2
curl -sf localhost:19303/internal/force_merge >/dev/null || true
sleep 5

for port in 19301 19302; do
  for _ in $(seq 100); do curl -sf "localhost:$port/api/v1/status/buildinfo" >/dev/null && break; sleep 0.2; done
done
prom_bytes=$(du_bytes "$work/prom")
vm_bytes=$(du_bytes "$work/vm")

queries=(
  "instant|max_over_time(gpu_temperature_celsius[1h])"
  "instant|sum by (gpu) (rate(gpu_energy_joules_total[5m]))"
  "instant|avg_over_time(gpu_utilization_ratio[1h]) < 0.2"
  "instant|gpu_memory_used_bytes / gpu_memory_total_bytes > 0.9"
  "range|max(gpu_temperature_celsius)"
  "range|sum by (gpu) (rate(gpu_energy_joules_total[5m]))"
  "range|gpu_power_watts / gpu_power_limit_watts"
  "range|quantile_over_time(0.99, gpu_power_watts[1h])"
)
q_end=$((end))
q_start=$((end - 5 * 3600))
[ "$q_start" -lt "$start" ] && q_start=$start
time_query() {  # port kind expr -> best of 3 seconds
  local port=$1 kind=$2 expr=$3 best=999 t
  for _ in 1 2 3; do
    if [ "$kind" = instant ]; then
      t=$(curl -s -o /dev/null -w '%{time_total}' -G "localhost:$port/api/v1/query" \
        --data-urlencode "query=$expr" --data-urlencode "time=$q_end")
    else
      t=$(curl -s -o /dev/null -w '%{time_total}' -G "localhost:$port/api/v1/query_range" \
        --data-urlencode "query=$expr" --data-urlencode "start=$q_start" \
        --data-urlencode "end=$q_end" --data-urlencode "step=60")
    fi
    best=$(awk "BEGIN {print ($t < $best) ? $t : $best}")
  done
  echo "$best"
}
echo
echo "| | gpuwarden | Prometheus 2.42 | VictoriaMetrics 1.79 |"
echo "|---|---|---|---|"
awk -v s="$samples" -v a="$gw_bytes" -v b="$prom_bytes" -v c="$vm_bytes" 'BEGIN {
  printf "| bytes per sample on disk | %.3f | %.3f | %.3f |\n", a/s, b/s, c/s }'
awk -v s="$samples" -v a="$gw_import_s" -v b="$prom_import_s" -v c="$vm_import_s" 'BEGIN {
  printf "| text import, M samples/s | %.2f | %.2f | %.2f |\n", s/a/1e6, s/b/1e6, s/c/1e6 }'
for q in "${queries[@]}"; do
  kind=${q%%|*}
  expr=${q#*|}
  a=$(time_query 19301 "$kind" "$expr")
  b=$(time_query 19302 "$kind" "$expr")
  c=$(time_query 19303 "$kind" "$expr")
  printf '| %s `%s` (s) | %s | %s | %s |\n' "$kind" "$expr" "$a" "$b" "$c"
done
printf '| RSS after the queries (MiB) | %s | %s | %s |\n' "$(rss_mib $gw_pid)" "$(rss_mib $prom_pid)" "$(rss_mib $vm_pid)"
echo
echo "samples=$samples, range queries over 5 h at 60 s steps; gpuwarden import log: $(cat "$work/gw-import.log")"
