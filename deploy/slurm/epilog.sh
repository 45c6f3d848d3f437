#!/bin/bash
# Slurm Epilog (slurm.conf: Epilog=/etc/slurm/epilog.d/gpuwarden-epilog.sh): after a job ends on
# this node, write what gpuwarden measured about it to syslog (GPU-hours, utilization, energy,
# peak memory, throttling, ECC and XID errors during the job), then check the job's GPUs as the
# prolog does, so a GPU the job broke (XID 79, uncorrectable ECC) drains the node before the next
# job lands on it.
#
# The agent learns job ends from squeue on its next poll and keeps the record in
# jobs.records_dir (`gpuwarden jobs show ID` works on the node at any later time).
# Environment: SLURM_JOB_ID, SLURM_JOB_GPUS; GPUWARDEN_URL, GPUWARDEN_CURL_OPTS as the prolog.
set -u
url="${GPUWARDEN_URL:-http://127.0.0.1:9966}"
here="$(dirname "$(readlink -f "$0")")"

if [ -n "${SLURM_JOB_ID:-}" ] && command -v gpuwarden >/dev/null; then
  # While the job is still listed as running the agent answers with its figures so far.
  summary="$(timeout 10 gpuwarden jobs show "$SLURM_JOB_ID" --url "$url" 2>&1 | tr '\n' ' ')"
  logger -t gpuwarden-epilog "job $SLURM_JOB_ID: ${summary:-no figures}"
fi

# The same health gate as the prolog (beside this file, or installed as gpuwarden-prolog.sh).
for gate in "$here/prolog.sh" "$here/gpuwarden-prolog.sh" /etc/slurm/prolog.d/gpuwarden-prolog.sh; do
  if [ -x "$gate" ]; then
    exec "$gate"
  fi
done
exit 0
