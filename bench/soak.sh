#!/usr/bin/env bash
# A simulated day in minutes: `gpuwarden serve` on a stepped simulator (1,024 GPUs by default),
# its clock advanced through /-/sim/advance while the Prometheus API is queried, the built-in
# rule pack evaluates, chunks are flushed and compacted into SQLite and a short retention deletes
# old data — with restarts (SIGTERM and kill -9) along the way. It records the agent's RSS and the
# data directory's size over simulated time, and checks that no committed sample was lost: before
# each restart it counts the samples of a few series in hour-long windows, and counts them again
# after (windows retention could touch are left out).
#
#   bench/soak.sh [--gpus 1024] [--hours 24] [--interval 60] [--slow-interval 300]
#                 [--chunk 600] [--retention 6h] [--flush 10m]
#                 [--restarts "7:term 13:kill 19:term"] [--out DIR] [--build DIR]
#
# --interval/--slow-interval/--chunk are simulated seconds (collection schedules, and how far one
# /-/sim/advance request moves the clock). Restarts are "HOUR:term" or "HOUR:kill" at whole
# simulated hours. The agent's samples carry simulated time: the day is placed so that it ends
# about now (--sim-start), and each restart continues the timeline where the last run stopped.
# Output: DIR/soak.csv (one row per advance), DIR/summary.txt, the agents' logs. Exit 1 if a
# sample was lost, a query failed, or a stop went wrong.
set -euo pipefail
cd "$(dirname "$0")/.."

gpus=1024 hours=24 interval=60 slow=300 chunk=600 retention=6h flush=10m
restarts="7:term 13:kill 19:term" out="" build="build"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --gpus) gpus="$2"; shift 2 ;;
    --hours) hours="$2"; shift 2 ;;
    --interval) interval="$2"; shift 2 ;;
    --slow-interval) slow="$2"; shift 2 ;;
    --chunk) chunk="$2"; shift 2 ;;
    --retention) retention="$2"; shift 2 ;;
    --flush) flush="$2"; shift 2 ;;
    --restarts) restarts="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    *) echo "usage: $0 [--gpus N] [--hours H] [--interval S] [--slow-interval S] [--chunk S]" \
         "[--retention D] [--flush D] [--restarts \"H:term H:kill\"] [--out DIR] [--build DIR]" >&2
       exit 2 ;;
  esac
done
bin="$build/bin/gpuwarden"
[[ -x "$bin" ]] || { echo "soak: $bin not built" >&2; exit 2; }
if [[ -z "$out" ]]; then out="$(mktemp -d /tmp/gw-soak-XXXXXX)"; fi
mkdir -p "$out"
data="$out/data"
rm -rf "$data"
retention_h=$(( ${retention%h} ))
[[ "$retention" == *h && $retention_h -ge 3 ]] || { echo "soak: --retention must be whole hours >= 3h, e.g. 6h" >&2; exit 2; }
(( chunk % interval == 0 && 3600 % chunk == 0 )) || { echo "soak: --chunk must be a multiple of --interval and divide an hour" >&2; exit 2; }

# The fleet: N × H100 in steady training, one process each (as scenarios/fleet-1024.yaml).
scenario="$out/fleet.yaml"
cat >"$scenario" <<EOF
name: soak-fleet-$gpus
seed: 16
start_time: 1700000000
gpus:
  - model: H100
    count: $gpus
    workload:
      - {type: training}
    processes:
      - {pid: 30000, name: "python3 train.py", memory_mib: 70000}
    faults:
      - {type: ecc_correctable, at: 0s, rate_per_hour: 2}
EOF
config="$out/gpuwarden.yaml"
cat >"$config" <<EOF
storage:
  retention: $retention
  rollup_retention: $retention
  flush_interval: $flush
EOF

# A few series to count (first, middle and last GPU; a slow-schedule family; the agent's own).
last_gpu=$(( gpus - 1 ))
series=("gpu_up{gpu=\"0\"}" "gpu_temperature_celsius{gpu=\"$(( gpus / 2 ))\"}"
        "gpu_power_watts{gpu=\"$last_gpu\"}" "gpu_ecc_errors_total{gpu=\"$last_gpu\"}"
        "gpuwarden_gpus")
queries=('count(gpu_up == 1)'
         'max_over_time(gpu_temperature_celsius{gpu="0"}[1h])'
         'topk(5, avg_over_time(gpu_utilization_ratio[30m]))'
         'sum(rate(gpu_energy_joules_total[10m]))'
         'count(ALERTS) or vector(0)')

port=""
pid=""
run=0
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start_agent() {  # $1: Unix seconds of this run's simulated t = 0
  run=$(( run + 1 ))
  port=$(free_port)
  "$bin" serve --config "$config" --simulate "$scenario" --sim-clock stepped --sim-start "$1" \
    --interval "${interval}s" --slow-interval "${slow}s" --memory-peak-interval 0 \
    --data-dir "$data" --listen "127.0.0.1:$port" >"$out/agent-$run.log" 2>&1 &
  pid=$!
  local t0=$SECONDS
  until curl -sf -o /dev/null "http://127.0.0.1:$port/readyz"; do
    if ! kill -0 "$pid" 2>/dev/null || (( SECONDS - t0 > 300 )); then
      echo "soak: agent run $run did not become ready:" >&2; tail -20 "$out/agent-$run.log" >&2; exit 1
    fi
    sleep 0.2
  done
}
stop_agent() {  # $1: term | kill; sets stop_took (seconds) and stop_code (the exit status)
  local t0 t1
  stop_code=0
  t0=$(date +%s.%N)
  if [[ "$1" == kill ]]; then kill -9 "$pid"; else kill -TERM "$pid"; fi
  wait "$pid" || stop_code=$?
  t1=$(date +%s.%N)
  stop_took=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
}
trap '[[ -n "$pid" ]] && kill -9 "$pid" 2>/dev/null || true' EXIT

# count_over_time of each series over each hour ending at ENDS (Unix seconds): "series end count".
count_windows() {  # $@: end times
  local end s
  for end in "$@"; do
    for s in "${series[@]}"; do
      curl -sf -G "http://127.0.0.1:$port/api/v1/query" --data-urlencode "query=sum(count_over_time($s[1h]))" \
        --data-urlencode "time=$end" | echo "$s $end $(instant_value)"
    done
  done
}

# The value of a one-element instant-vector reply on stdin ("0" when empty); sed, not a JSON
# parser: python's start-up alone costs a second on a loaded 2-core machine.
instant_value() { sed -n 's/.*"value":\[[^,]*,"\([^"]*\)"\].*/\1/p' | grep . || echo 0; }
rss_mib() { awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$pid/status"; }
disk_mib() { du -sk "$data" | awk '{printf "%.1f", $1 / 1024}'; }
metric() {  # the sum of a self-metric's samples on /metrics
  curl -sf "http://127.0.0.1:$port/metrics" | awk -v m="$1" '$1 == m || index($1, m "{") == 1 { s += $2 } END { printf "%g", s }'
}

day_s=$(( hours * 3600 ))
now_unix=$(date +%s)
start_unix=$(( now_unix - day_s ))  # the simulated day ends about now
seg_start=$start_unix               # this run's simulated t = 0
virtual=0                           # simulated seconds since the day began
seg_virtual=0                       # ... since this run began
lost=0 query_errors=0 stop_problems=0 queries_run=0
wall0=$SECONDS
echo "sim_hour,wall_s,run,rss_mib,disk_mib,advance_s,query_max_ms" >"$out/soak.csv"
: >"$out/restarts.txt"
start_agent "$seg_start"
echo "soak: $gpus GPUs, ${hours} h simulated at ${interval} s (slow ${slow} s), chunks of ${chunk} s," \
     "retention $retention, flush $flush, restarts: $restarts; output in $out"

while (( virtual < day_s )); do
  t0=$(date +%s.%N)
  if ! curl -sf -o /dev/null -X POST --max-time 600 "http://127.0.0.1:$port/-/sim/advance?seconds=$chunk"; then
    echo "soak: /-/sim/advance failed at simulated hour $(( virtual / 3600 ))" >&2; tail -5 "$out/agent-$run.log" >&2; exit 1
  fi
  t1=$(date +%s.%N)
  virtual=$(( virtual + chunk )); seg_virtual=$(( seg_virtual + chunk ))
  data_now=$(( seg_start + seg_virtual ))  # the newest snapshot's time
  qmax=0
  for q in "${queries[@]}"; do
    queries_run=$(( queries_run + 1 ))
    ms=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' -G "http://127.0.0.1:$port/api/v1/query" \
           --data-urlencode "query=$q" --data-urlencode "time=$data_now" | awk '{ if ($1 != 200) print -1; else printf "%d", $2 * 1000 }')
    if (( ms < 0 )); then query_errors=$(( query_errors + 1 )); else (( ms > qmax )) && qmax=$ms; fi
  done
  # A range query over the last hour, as a dashboard would.
  queries_run=$(( queries_run + 1 ))
  code=$(curl -s -o /dev/null -w '%{http_code}' -G "http://127.0.0.1:$port/api/v1/query_range" \
           --data-urlencode 'query=avg by (gpu) (gpu_power_watts{gpu=~"1.?"})' \
           --data-urlencode "start=$(( data_now - 3600 ))" --data-urlencode "end=$data_now" --data-urlencode "step=60")
  [[ "$code" == 200 ]] || query_errors=$(( query_errors + 1 ))
  printf '%.2f,%d,%d,%s,%s,%s,%d\n' "$(awk -v v=$virtual 'BEGIN { print v / 3600 }')" $(( SECONDS - wall0 )) "$run" \
    "$(rss_mib)" "$(disk_mib)" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')" "$qmax" >>"$out/soak.csv"

  # A restart due at this simulated hour?
  for r in $restarts; do
    [[ $(( ${r%%:*} * 3600 )) -eq $virtual ]] || continue
    kind="${r##*:}"
    # Whole hours, newest first, that retention at the next start cannot reach.
    ends=(); for (( k = 0; k < retention_h - 2; k++ )); do ends+=($(( data_now - k * 3600 ))); done
    count_windows "${ends[@]}" >"$out/before-$run.txt"
    compactions=$(metric gpuwarden_tsdb_compactions_total)
    rss=$(rss_mib)
    stop_agent "$kind"; took=$stop_took code=$stop_code
    seg_start=$(( data_now + interval )); seg_virtual=0  # the next run continues the timeline
    start_agent "$seg_start"
    count_windows "${ends[@]}" >"$out/after-$run.txt"
    missing=$(paste -d' ' "$out/before-$(( run - 1 ))".txt "$out/after-$run.txt" |
              awk '{ d = $3 - $6; if (d > 0) m += d } END { print m + 0 }')
    lost=$(( lost + missing ))
    windows=$(wc -l <"$out/before-$(( run - 1 ))".txt)
    expected=0; [[ "$kind" == kill ]] && expected=137
    [[ "$code" == "$expected" ]] || stop_problems=$(( stop_problems + 1 ))
    echo "hour $(( virtual / 3600 )): $kind -> exit $code after ${took} s (RSS before ${rss} MiB, compactions in that run $compactions);" \
         "$windows window counts compared, $missing samples missing" | tee -a "$out/restarts.txt"
  done
done

final_compactions=$(metric gpuwarden_tsdb_compactions_total)
retained=$(curl -sf -G "http://127.0.0.1:$port/api/v1/query" --data-urlencode "query=count_over_time(gpu_up{gpu=\"0\"}[${hours}h])" \
             --data-urlencode "time=$data_now" | instant_value)
stop_agent term; took=$stop_took code=$stop_code
[[ "$code" == 0 ]] || stop_problems=$(( stop_problems + 1 ))
pid=""
{
  echo "gpus=$gpus simulated_hours=$hours interval_s=$interval slow_interval_s=$slow chunk_s=$chunk retention=$retention flush=$flush"
  echo "wall_seconds=$(( SECONDS - wall0 )) restarts=\"$restarts\" final_stop: exit $code after ${took} s"
  echo "rss_mib first/min/max/last: $(awk -F, 'NR > 1 { if (n == 0 || $4 < mn) mn = $4; if ($4 > mx) mx = $4; if (n == 0) f = $4; l = $4; n++ } END { print f "/" mn "/" mx "/" l }' "$out/soak.csv")"
  echo "disk_mib first/max/last: $(awk -F, 'NR > 1 { if ($5 > mx) mx = $5; if (n == 0) f = $5; l = $5; n++ } END { print f "/" mx "/" l }' "$out/soak.csv")"
  echo "gpu_up{gpu=\"0\"} samples kept at the end over ${hours} h: $retained (retention $retention at ${interval} s = $(( retention_h * 3600 / interval )))"
  echo "compactions in the last run: $final_compactions"
  echo "queries: $queries_run, failed: $query_errors; stops that went wrong: $stop_problems"
  echo "samples lost across restarts: $lost"
} | tee "$out/summary.txt"
(( lost == 0 && query_errors == 0 && stop_problems == 0 ))
