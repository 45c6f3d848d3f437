#!/bin/bash
# Slurm Prolog (slurm.conf: Prolog=/etc/slurm/prolog.d/gpuwarden-prolog.sh): before a job starts
# on this node, ask the local gpuwarden agent whether the GPUs the job was given are healthy. A GPU
# that is lost (fell off the bus) or has a critical health finding (uncorrectable ECC, a failed row
# remap, a hung NVML call) fails the prolog: Slurm then drains the node with this message as the
# reason and requeues the job, instead of handing it a broken GPU.
#
# Never blocks a job because of gpuwarden itself: if the agent does not answer, the prolog passes.
# Needs curl and python3. Environment: SLURM_JOB_ID, SLURM_JOB_GPUS (indices, set by Slurm with
# gres/gpu); GPUWARDEN_URL overrides the agent's address (with TLS: https://..., and
# GPUWARDEN_CURL_OPTS="--cacert /etc/gpuwarden/ca.crt -u prolog:secret").
set -u
url="${GPUWARDEN_URL:-http://127.0.0.1:9966}"
gpus="${SLURM_JOB_GPUS:-${CUDA_VISIBLE_DEVICES:-}}"
[ -n "$gpus" ] || exit 0  # a job without GPUs

# shellcheck disable=SC2086  # the options are words on purpose
snapshot="$(curl -sf --max-time 5 ${GPUWARDEN_CURL_OPTS:-} "$url/api/snapshot")" || {
  logger -t gpuwarden-prolog "job ${SLURM_JOB_ID:-?}: gpuwarden at $url did not answer; not checking GPUs"
  exit 0
}

problems="$(GPUS="$gpus" python3 -c '
import json, os, sys
doc = json.load(sys.stdin)
wanted = {g.strip() for g in os.environ["GPUS"].split(",") if g.strip()}
for gpu in doc.get("gpus", []):
    index, uuid = str(gpu.get("index")), gpu.get("uuid", "")
    if index not in wanted and uuid not in wanted:
        continue
    if gpu.get("lost"):
        print("GPU %s (%s) is lost" % (index, uuid))
    for h in gpu.get("health", []):
        if h.get("severity") == "critical":
            print("GPU %s (%s): %s" % (index, uuid, h.get("problem")))
' <<<"$snapshot")" || exit 0  # unparsable answer: do not block the job

if [ -n "$problems" ]; then
  # Slurm shows the prolog's stdout as the drain reason in some versions, logs it in all.
  echo "gpuwarden: ${problems//$'\n'/; }"
  logger -t gpuwarden-prolog "job ${SLURM_JOB_ID:-?}: failing the prolog: ${problems//$'\n'/; }"
  exit 1
fi
exit 0
