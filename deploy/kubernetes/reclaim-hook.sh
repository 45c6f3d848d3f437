#!/bin/sh
# Example reclaim hook for Kubernetes: deletes the pod that holds idle GPUs, so that the device
# plugin gives them to the next pod. gpuwarden runs it for a reclaim policy with
# `action: command` (docs/configuration.md, `governance.reclaim`; wiring in docs/operations.md,
# "Kubernetes"):
#
#   governance:
#     reclaim:
#       - {idle_for: 4h, grace: 30m, action: command,
#          command: [/etc/gpuwarden/hooks/reclaim-hook.sh]}      # add "--dry-run" to try it
#
# Usage: reclaim-hook.sh [--dry-run]
#   --dry-run   ask the API server to check the deletion (RBAC, admission) without deleting
#               anything: `kubectl delete --dry-run=server`.
# Environment (set by gpuwarden): GPUWARDEN_JOB_SOURCE (must be "kubernetes"),
#   GPUWARDEN_POD_NAMESPACE, GPUWARDEN_POD_NAME, GPUWARDEN_RECLAIM_STAGE (acts only on "action";
#   a notice is logged and left alone), GPUWARDEN_JOB_ID, GPUWARDEN_JOB_TEAM, GPUWARDEN_JOB_GPUS,
#   GPUWARDEN_IDLE_SECONDS, GPUWARDEN_RECLAIM_REASON, GPUWARDEN_RECLAIM_POLICY and
#   GPUWARDEN_RECLAIM_EVIDENCE (the decision's evidence, one JSON line).
#   KUBECTL: the kubectl to run (default: kubectl on PATH); GPUWARDEN_HOOK_KUBECTL_TIMEOUT (20s);
#   GPUWARDEN_HOOK_LOG: a file to append the log lines to (e.g. /var/lib/gpuwarden/reclaim.log).
# Needs delete on pods: deploy/kubernetes/reclaim/rbac.yaml.
# Logs one line with the evidence: on stderr (the agent shows it when the hook fails), to
# GPUWARDEN_HOOK_LOG when set, and to syslog where `logger` exists. The agent's own decisions log
# (governance.decisions_log) has the same evidence either way.
# Exit status: 0 deleted (or dry-run accepted, or nothing to do), 2 bad input, else kubectl's.
set -u

dry_run=0
for arg in "$@"; do
  case "$arg" in
    --dry-run) dry_run=1 ;;
    *)
      echo "reclaim-hook: unknown argument '$arg' (usage: reclaim-hook.sh [--dry-run])" >&2
      exit 2
      ;;
  esac
done

log() {
  echo "reclaim-hook: $*" >&2
  if [ -n "${GPUWARDEN_HOOK_LOG:-}" ]; then
    echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) reclaim-hook: $*" >>"$GPUWARDEN_HOOK_LOG" || true
  fi
  if command -v logger >/dev/null 2>&1; then
    logger -t gpuwarden-reclaim -- "$*" 2>/dev/null || true
  fi
}

source_="${GPUWARDEN_JOB_SOURCE:-}"
namespace="${GPUWARDEN_POD_NAMESPACE:-}"
pod="${GPUWARDEN_POD_NAME:-}"
stage="${GPUWARDEN_RECLAIM_STAGE:-action}"
evidence="${GPUWARDEN_RECLAIM_EVIDENCE:-}"
kubectl="${KUBECTL:-kubectl}"
timeout="${GPUWARDEN_HOOK_KUBECTL_TIMEOUT:-20s}"

if [ "$source_" != "kubernetes" ]; then
  log "job ${GPUWARDEN_JOB_ID:-?} comes from '${source_}', not kubernetes: nothing done"
  exit 2
fi
# Namespace and pod names are DNS labels / subdomains: anything else is not from the kubelet.
valid_name() {
  case "$1" in
    "" | *[!a-z0-9.-]* | [.-]* | *[.-]) return 1 ;;
  esac
  [ "${#1}" -le 253 ]
}
if ! valid_name "$namespace" || ! valid_name "$pod"; then
  log "refusing pod '${namespace}/${pod}': not a valid namespace/pod name"
  exit 2
fi

what="pod ${namespace}/${pod} (team ${GPUWARDEN_JOB_TEAM:-?}, GPUs ${GPUWARDEN_JOB_GPUS:-?}, idle ${GPUWARDEN_IDLE_SECONDS:-?}s, reason ${GPUWARDEN_RECLAIM_REASON:-?}, policy ${GPUWARDEN_RECLAIM_POLICY:-?})"
if [ "$stage" != "action" ]; then
  log "stage ${stage}: ${what}; evidence ${evidence:-none}; nothing done"
  exit 0
fi

set -- delete pod --namespace "$namespace" "$pod" --wait=false --ignore-not-found \
  --request-timeout="$timeout"
if [ "$dry_run" -eq 1 ]; then
  set -- "$@" --dry-run=server
  log "dry run: would delete ${what}; evidence ${evidence:-none}"
else
  log "deleting ${what}; evidence ${evidence:-none}"
fi
"$kubectl" "$@"
rc=$?
if [ "$rc" -ne 0 ]; then
  log "kubectl delete pod ${namespace}/${pod} failed with exit status ${rc}"
fi
exit "$rc"
