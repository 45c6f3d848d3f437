#!/usr/bin/env bash
# storage_compare.sh's queries against servers that are already running, interleaved: each round
# asks every server each query once, so load from other processes hits all of them alike; prints
# the median per server and each server's median relative to the first one's. For busy machines,
# where single best-of-3 timings under ~10 ms are not reliable.
#   bench/query_interleaved.sh END_S ROUNDS NAME=PORT [NAME=PORT ...]
# END_S: the data set's last timestamp (seconds); range queries cover [END_S - 5 h, END_S] at 60 s.
# ONLY=REGEX (environment) keeps the queries whose "kind|expr" matches, e.g. ONLY='^instant'.
set -euo pipefail
end=$1
rounds=$2
shift 2
servers=("$@")
start=$((end - 5 * 3600))
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
ask() {  # port kind expr -> seconds
  if [ "$2" = instant ]; then
    curl -s -o /dev/null -w '%{time_total}' -G "localhost:$1/api/v1/query" \
      --data-urlencode "query=$3" --data-urlencode "time=$end"
  else
    curl -s -o /dev/null -w '%{time_total}' -G "localhost:$1/api/v1/query_range" \
      --data-urlencode "query=$3" --data-urlencode "start=$start" --data-urlencode "end=$end" \
      --data-urlencode "step=60"
  fi
}
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
header="| query (median of $rounds, ms)"
for s in "${servers[@]}"; do header+=" | ${s%%=*}"; done
echo "$header | ratios to ${servers[0]%%=*} |"
for q in "${queries[@]}"; do
  [[ "$q" =~ ${ONLY:-.} ]] || continue
  kind=${q%%|*}
  expr=${q#*|}
  tmp=$(mktemp -d)
  for s in "${servers[@]}"; do ask "${s#*=}" "$kind" "$expr" >/dev/null; done  # warm caches
  for _ in $(seq "$rounds"); do
    for s in "${servers[@]}"; do
      ask "${s#*=}" "$kind" "$expr" >>"$tmp/${s%%=*}"
      echo >>"$tmp/${s%%=*}"
    done
  done
  line="| $kind \`$expr\`"
  ratios=""
  first=""
  for s in "${servers[@]}"; do
    m=$(median <"$tmp/${s%%=*}")
    line+=" | $(awk "BEGIN {printf \"%.2f\", $m * 1000}")"
    if [ -z "$first" ]; then first=$m; else ratios+=" $(awk "BEGIN {printf \"%.2f\", $m / $first}")"; fi
  done
  echo "$line |$ratios |"
  rm -rf "$tmp"
done
