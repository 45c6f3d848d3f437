#!/usr/bin/env bash
# Storage and query side by side: gpuwarden, Prometheus 2.42 and VictoriaMetrics 1.79 (Debian
# packages, VictoriaMetrics with its query cache off) on every data set in one run, all on
# loopback: the simulated demo fleet (bench/make_dataset.cpp) and the varied sets of
# bench/make_varied.cpp (walk, noise, counters, quantized, churn, telemetry).
#
#   bench/storage_compare.sh [duration] [step] [set...]     (default: 2h at 1s, every set)
#   GW_BUILD_DIR=build-rel bench/storage_compare.sh 30m     (the build to measure; default build)
#   SIZES_ONLY=1 bench/storage_compare.sh                   (bytes/sample and import only)
#   WARM_RUNS=7                                             (warm runs per query; default 5)
#   NO_PROM=1 bench/storage_compare.sh 7d 15s telemetry     (gpuwarden and VictoriaMetrics only:
#                                                            promtool takes most of a week's run)
#
# Per set, one table: bytes per sample on disk (gpuwarden's data dir after import; Prometheus'
# blocks from promtool before the server starts; VictoriaMetrics' data dir after a flush and a
# forced merge), text import rate, RSS after the queries, and per query:
#   warm: the median of WARM_RUNS runs over one persistent connection, after one untimed run;
#   cold: the median of COLD_RUNS (3) first runs of that query, each after all three servers
#         were restarted (process caches empty; the OS page cache is NOT dropped — that needs
#         root on the host) and left COLD_SETTLE seconds (1) to finish starting, so no server's
#         startup work lands on another's first query; each run asks the three in another order.
# Range queries cover the last 5 h of the set (all of it when shorter) at 60 s steps; "long"
# queries take the whole set as their window; "longrange" queries cover the whole set (from its
# first 10-minute boundary) at 10-minute steps, as a dashboard's 7-day panel does.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${GW_BUILD_DIR:-build}/bin"
duration="${1:-2h}"
step="${2:-1s}"
shift $(($# > 2 ? 2 : $#))
sets=("$@")
[ ${#sets[@]} -eq 0 ] && sets=(demo walk noise counters quantized churn telemetry)
warm_runs="${WARM_RUNS:-5}"
sizes_only="${SIZES_ONLY:-0}"
no_prom="${NO_PROM:-0}"
cold_settle="${COLD_SETTLE:-1}"
cold_runs="${COLD_RUNS:-3}"
work="$(mktemp -d /tmp/gw-storage-bench.XXXXXX)"
pids=()
stop_servers() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
trap 'stop_servers; rm -rf "$work"' EXIT
command -v victoria-metrics >/dev/null || apt-get install -y -qq victoria-metrics >/dev/null
start=1700000000
now_ms() { date +%s%3N; }
rss_mib() { awk '/VmRSS/ {printf "%.0f", $2/1024}' /proc/"$1"/status; }
du_bytes() { du -sb "$1" | cut -f1; }
wait_http() {  # url: until it answers (30 s at most)
  for _ in $(seq 300); do curl -sf "$1" >/dev/null && return 0; sleep 0.1; done
  echo "no answer from $1" >&2
  return 1
}

gw_port=19301 prom_port=19302 vm_port=19303
start_servers() {  # $1: set directory
  local d=$1
  "$bin"/gpuwarden serve --data-dir "$d/gw" --config "$d/gw.yaml" --nvml-lib /nonexistent \
    --listen 127.0.0.1:$gw_port --log-level error 2>>"$d/gw-serve.log" &
  pids+=($!)
  gw_pid=$!
  prom_pid=
  if [ "$no_prom" != 1 ]; then
    prometheus --config.file=/dev/null --storage.tsdb.path="$d/prom" \
      --storage.tsdb.retention.time=100y --web.listen-address=127.0.0.1:$prom_port \
      --log.level=error 2>/dev/null &
    pids+=($!)
    prom_pid=$!
  fi
  victoria-metrics -storageDataPath="$d/vm" -httpListenAddr=127.0.0.1:$vm_port \
    -retentionPeriod=100y -search.latencyOffset=0s -search.disableCache -loggerLevel=ERROR \
    >/dev/null 2>&1 &
  pids+=($!)
  vm_pid=$!
  wait_http localhost:$gw_port/api/v1/status/buildinfo
  [ "$no_prom" = 1 ] || wait_http localhost:$prom_port/-/ready
  wait_http localhost:$vm_port/health
}

# The queries, written over three names each set defines: G a gauge-like family, C a
# counter-like family (rate() of a gauge is computed too, just not meaningful), L a label to
# group by. "instant|..." or "range|..."; DUR is replaced by the set's duration.
query_templates=(
  "instant|max_over_time(G[1h])"
  "instant|quantile_over_time(0.99, G[1h])"
  "instant|sum by (L) (rate(C[5m]))"
  "instant|topk(5, G)"
  "instant|max_over_time(G[DUR])"
  "instant|avg_over_time(G[DUR])"
  "range|max(G)"
  "range|max_over_time(G[10m])"
  "range|sum by (L) (avg_over_time(G[5m]))"
  "range|sum by (L) (rate(C[5m]))"
  "range|increase(C[1h])"
  "range|avg_over_time(G[1h])"
  "range|G"
  "longrange|max(G)"
  "longrange|max_over_time(G[1h])"
)
set_names() {  # set -> "G C L [extra query]"
  case $1 in
    demo) echo "gpu_temperature_celsius gpu_energy_joules_total gpu" ;;
    walk) echo "walk_price walk_level instance" ;;
    noise) echo "noise_temp noise_latency_seconds instance" ;;
    counters) echo "cpu_seconds_total http_requests_total instance" ;;
    quantized) echo "sensor_temp_celsius sensor_fan_rpm instance" ;;
    churn) echo "process_resident_memory_bytes process_cpu_seconds_total job" ;;
    telemetry) echo "dcgm_gpu_temp dcgm_total_energy_consumption_total gpu" \
      "range|sum by (reason) (avg_over_time(dcgm_clock_throttle[5m]))" ;;
    *) return 1 ;;
  esac
}

urlenc() { jq -rn --arg x "$1" '$x|@uri'; }
query_url() {  # port kind expr
  local e
  e=$(urlenc "$3")
  if [ "$2" = instant ]; then
    echo "http://localhost:$1/api/v1/query?query=$e&time=$q_end"
  elif [ "$2" = longrange ]; then
    echo "http://localhost:$1/api/v1/query_range?query=$e&start=$l_start&end=$q_end&step=600"
  else
    echo "http://localhost:$1/api/v1/query_range?query=$e&start=$q_start&end=$q_end&step=60"
  fi
}
warm_ms() {  # url: one untimed run, then the median of warm_runs over one connection (ms)
  [[ "$no_prom" = 1 && "$1" = *":$prom_port/"* ]] && { echo -n "-"; return; }
  local args=(-s -o /dev/null "$1") i
  for ((i = 0; i < warm_runs; i++)); do args+=(-o /dev/null "$1"); done
  curl -w '%{time_total}\n' "${args[@]}" | tail -n "$warm_runs" | sort -g |
    awk '{a[NR] = $1} END {printf "%.1f", 1000 * a[int((NR + 1) / 2)]}'
}
median_of() {  # numbers (or "-") -> their median, or "-"
  [ "$1" = - ] && { echo -n "-"; return; }
  printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {printf "%.1f", a[int((NR + 1) / 2)]}'
}
once_ms() {
  [[ "$no_prom" = 1 && "$1" = *":$prom_port/"* ]] && { echo -n "-"; return; }
  curl -s -o /dev/null -w '%{time_total}' "$1" | awk '{printf "%.1f", 1000 * $1}'; }

run_set() {
  local set=$1 d="$work/$1"
  local G C L extra
  read -r G C L _ < <(set_names "$set") || {
    echo "unknown set $set" >&2
    return 1
  }
  extra=$(set_names "$set" | sed -E 's/^[^ ]+ [^ ]+ [^ ]+ ?//')
  mkdir -p "$d"
  if [ "$set" = demo ]; then
    "$bin"/make_dataset --scenario demo --duration "$duration" --step "$step" --start "$start" \
      --out "$d/data.om" 2>/dev/null
  else
    "$bin"/make_varied --set "$set" --duration "$duration" --step "$step" --start "$start" \
      --seed 1 --out "$d/data.om" 2>/dev/null
  fi
  local samples end
  samples=$(grep -vc '^#' "$d/data.om")
  end=$(grep -v '^#' "$d/data.om" | awk '{t = int($NF); if (t > m) m = t} END {print m}')

  # gpuwarden
  printf 'storage:\n  retention: 100y\n  rollup_retention: 100y\n' >"$d/gw.yaml"
  local t0 t1 gw_s prom_s vm_s
  t0=$(now_ms)
  "$bin"/gpuwarden tsdb import "$d/data.om" --data-dir "$d/gw" --config "$d/gw.yaml" 2>"$d/gw-import.log"
  t1=$(now_ms)
  gw_s=$(awk "BEGIN {print ($t1-$t0)/1000}")
  # Prometheus 2.42
  local gw_bytes prom_bytes=0 vm_bytes
  prom_s=0
  if [ "$no_prom" != 1 ]; then
    t0=$(now_ms)
    promtool tsdb create-blocks-from openmetrics "$d/data.om" "$d/prom" >/dev/null
    t1=$(now_ms)
    prom_s=$(awk "BEGIN {print ($t1-$t0)/1000}")
    prom_bytes=$(du_bytes "$d/prom")
  fi
  gw_bytes=$(du_bytes "$d/gw")
  # VictoriaMetrics 1.79 (Prometheus text with millisecond timestamps)
  grep -v '^#' "$d/data.om" | sed -E 's/ ([0-9]+)\.([0-9]{3})$/ \1\2/' >"$d/data.prom"
  start_servers "$d"
  t0=$(now_ms)
  curl -sf -X POST -T "$d/data.prom" localhost:$vm_port/api/v1/import/prometheus
  curl -sf localhost:$vm_port/internal/force_flush >/dev/null
  t1=$(now_ms)
  vm_s=$(awk "BEGIN {print ($t1-$t0)/1000}")
  rm -f "$d/data.prom"
  sleep 2
  curl -sf localhost:$vm_port/internal/force_merge >/dev/null || true
  sleep 5
  vm_bytes=$(du_bytes "$d/vm")

  echo
  echo "### $set: $samples samples, $duration at $step"
  echo
  echo "| | gpuwarden | Prometheus 2.42 | VictoriaMetrics 1.79 |"
  echo "|---|---|---|---|"
  awk -v s="$samples" -v a="$gw_bytes" -v b="$prom_bytes" -v c="$vm_bytes" 'BEGIN {
    printf "| bytes per sample on disk | %.3f | %s | %.3f |\n", a/s, (b > 0 ? sprintf("%.3f", b/s) : "-"), c/s }'
  awk -v s="$samples" -v a="$gw_s" -v b="$prom_s" -v c="$vm_s" 'BEGIN {
    printf "| text import, M samples/s | %.2f | %s | %.2f |\n", s/a/1e6, (b > 0 ? sprintf("%.2f", s/b/1e6) : "-"), s/c/1e6 }'
  if [ "$sizes_only" = 1 ]; then
    stop_servers
    rm -rf "$d"
    return 0
  fi

  local dur_s
  dur_s=$((end - start))
  q_end=$end
  q_start=$((end - 5 * 3600))
  [ "$q_start" -lt "$start" ] && q_start=$start
  l_start=$(((start + 599) / 600 * 600))
  local qs=() q
  for q in "${query_templates[@]}"; do
    q=${q//G/$G}
    q=${q//DUR/${dur_s}s}
    q=${q//(L)/($L)}
    q=${q//(C/($C}
    qs+=("$q")
  done
  [ -n "$extra" ] && qs+=("$extra")
  local -A cold
  for q in "${qs[@]}"; do  # cold first: restart, then this query's first run on each
    local kind=${q%%|*} expr=${q#*|} r i
    local -a ports=("$gw_port" "$prom_port" "$vm_port") runs=("" "" "")
    for ((r = 0; r < cold_runs; r++)); do
      stop_servers
      start_servers "$d"
      sleep "$cold_settle"
      for ((i = 0; i < 3; i++)); do  # each run starts with another system
        local k=$(((i + r) % 3))
        runs[k]+="$(once_ms "$(query_url "${ports[k]}" "$kind" "$expr")") "
      done
    done
    cold["$q"]="$(median_of ${runs[0]}) | $(median_of ${runs[1]}) | $(median_of ${runs[2]})"
  done
  echo
  echo "| query (ms, warm median / cold median of $cold_runs) | gpuwarden | Prometheus 2.42 | VictoriaMetrics 1.79 |"
  echo "|---|---|---|---|"
  for q in "${qs[@]}"; do
    local kind=${q%%|*} expr=${q#*|} a b c ca cb cc
    a=$(warm_ms "$(query_url $gw_port "$kind" "$expr")")
    b=$(warm_ms "$(query_url $prom_port "$kind" "$expr")")
    c=$(warm_ms "$(query_url $vm_port "$kind" "$expr")")
    IFS='|' read -r ca cb cc <<<"${cold[$q]}"
    printf '| %s `%s` | %s / %s | %s / %s | %s / %s |\n' "$kind" "$expr" "$a" "${ca// /}" \
      "$b" "${cb// /}" "$c" "${cc// /}"
  done
  printf '| RSS after the queries (MiB) | %s | %s | %s |\n' "$(rss_mib "$gw_pid")" \
    "$([ -n "$prom_pid" ] && rss_mib "$prom_pid" || echo -)" "$(rss_mib "$vm_pid")"
  stop_servers
  rm -rf "$d"
}

echo "storage_compare: ${sets[*]}; $duration at $step; build $bin ($(git rev-parse --short HEAD 2>/dev/null || echo '?'));" \
  "$(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%FT%TZ)"
for s in "${sets[@]}"; do run_set "$s"; done
