#!/bin/bash
# Slurm prolog: is this node fit for NCCL jobs? Drain it when ncclctl says CRITICAL.
#
#   slurm.conf:  Prolog=/etc/slurm/prolog.d/ncclctl.sh
#                PrologFlags=Alloc        # once per node at allocation, not at every step
#
# ncclctl lint --nagios answers like a Nagios plugin: exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN, and a one-line
# status on stdout. This script:
#   OK        -> exit 0
#   WARNING   -> log the status, exit 0 (the job runs)
#   CRITICAL  -> scontrol update NodeName=<node> State=DRAIN Reason="ncclctl: <status>", exit 1
#                (a failing prolog makes Slurm requeue the job on another node)
#   UNKNOWN   -> log, exit 0: a tool that cannot look (or a timeout) is no proof the node is bad; set
#                NCCLCTL_DRAIN_ON_UNKNOWN=1 to drain anyway.
# Prologs must be quick: the check runs under `timeout` (NCCLCTL_TIMEOUT, default 8 s).
#
# Settings (environment; e.g. in /etc/default/ncclctl-prolog, sourced below when it exists):
#   NCCLCTL                   the program            (default /opt/ncclctl/bin/ncclctl)
#   NCCLCTL_ARGS              more lint options, split on blanks (e.g. "--config /etc/ncclctl.yaml")
#   NCCLCTL_TIMEOUT           seconds                (default 8)
#   NCCLCTL_DRAIN_ON_UNKNOWN  1 = also drain on UNKNOWN (default 0)
#   SCONTROL                  the scontrol program   (default scontrol)

set -u
if [ -r /etc/default/ncclctl-prolog ]; then
    # shellcheck disable=SC1091
    . /etc/default/ncclctl-prolog
fi

NCCLCTL=${NCCLCTL:-/opt/ncclctl/bin/ncclctl}
TIMEOUT=${NCCLCTL_TIMEOUT:-8}
DRAIN_ON_UNKNOWN=${NCCLCTL_DRAIN_ON_UNKNOWN:-0}
SCONTROL=${SCONTROL:-scontrol}
NODE=${SLURMD_NODENAME:-$(hostname -s)}
read -r -a EXTRA <<< "${NCCLCTL_ARGS:-}"

log() {
    logger -t ncclctl-prolog -- "$*" 2>/dev/null || echo "ncclctl-prolog: $*" >&2
}

drain() {
    local reason="ncclctl: $1"
    # Slurm keeps the reason short in sinfo -R; cut it, and keep it on one line.
    reason=${reason//$'\n'/ }
    reason=${reason:0:200}
    log "draining $NODE: $reason"
    "$SCONTROL" update NodeName="$NODE" State=DRAIN Reason="$reason"
}

out=$(timeout --kill-after=2 "$TIMEOUT" "$NCCLCTL" lint --nagios ${EXTRA[@]+"${EXTRA[@]}"} 2>/dev/null)
rc=$?
status=${out%%$'\n'*}

case $rc in
    0)
        exit 0
        ;;
    1)
        log "$NODE: ${status:-WARNING}"
        exit 0
        ;;
    2)
        drain "${status:-CRITICAL}"
        exit 1
        ;;
    124 | 137)
        status="UNKNOWN - ncclctl lint did not finish within ${TIMEOUT}s"
        ;;
    126 | 127)
        status="UNKNOWN - cannot run $NCCLCTL"
        ;;
    *)
        status=${status:-"UNKNOWN - ncclctl lint exit status $rc"}
        ;;
esac

# UNKNOWN (3), a timeout, or anything unexpected.
log "$NODE: $status"
if [ "$DRAIN_ON_UNKNOWN" = 1 ]; then
    drain "$status"
    exit 1
fi
exit 0
