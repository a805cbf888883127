#!/bin/bash
# Slurm prolog: is this node fit for NCCL jobs? Drain it, with ncclctl's one-line reason, when it is not.
#
#   slurm.conf:  Prolog=/etc/slurm/prolog.d/ncclctl.sh
#                PrologFlags=Alloc        # once per node at allocation, not at every step
#
# ncclctl lint --format slurm prints one line and exits 0 fit, 1 unfit, 2 unknown (it could not look). The line is
# the drain reason: `ncclctl: IB001 mlx5_3 ib-port-not-active (+1 more)` (root cause first, at most 64
# characters, its first 20 what `sinfo -R` shows). This script:
#   0 fit      -> exit 0
#   1 unfit    -> scontrol update NodeName=<node> State=DRAIN Reason="<the line>", exit 1
#                 (a failing prolog makes Slurm requeue the job on another node)
#   2 unknown  -> log, exit 0: a tool that cannot look (or a timeout) is no proof the node is bad; set
#                 NCCLCTL_DRAIN_ON_UNKNOWN=1 to drain anyway.
# Warnings do not drain; add "--fail-on warning" to NCCLCTL_ARGS to make them. For HealthCheckProgram, which
# slurmd runs without arguments and whose exit status it ignores, see healthcheck.sh beside this file.
# Prologs must be quick: the check runs under `timeout` (NCCLCTL_TIMEOUT, default 8 s).
#
# Settings (environment; e.g. in /etc/default/ncclctl-prolog, sourced below when it exists):
#   NCCLCTL                   the program            (default /opt/ncclctl/bin/ncclctl)
#   NCCLCTL_ARGS              more lint options, split on blanks (e.g. "--config /etc/ncclctl.yaml")
#   NCCLCTL_TIMEOUT           seconds                (default 8)
#   NCCLCTL_DRAIN_ON_UNKNOWN  1 = also drain on unknown (default 0)
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
    local reason=$1
    [ "${reason#ncclctl: }" = "$reason" ] && reason="ncclctl: $reason"
    # One line, and short: sinfo -R shows the first 20 characters.
    reason=${reason//$'\n'/ }
    reason=${reason:0:200}
    log "draining $NODE: $reason"
    "$SCONTROL" update NodeName="$NODE" State=DRAIN Reason="$reason"
}

out=$(timeout --kill-after=2 "$TIMEOUT" "$NCCLCTL" lint --format slurm ${EXTRA[@]+"${EXTRA[@]}"} 2>/dev/null)
rc=$?
status=${out%%$'\n'*}

case $rc in
    0)
        exit 0
        ;;
    1)
        drain "${status:-ncclctl: unfit}"
        exit 1
        ;;
    124 | 137)
        status="ncclctl: unknown: did not finish within ${TIMEOUT}s"
        ;;
    126 | 127)
        status="ncclctl: unknown: cannot run $NCCLCTL"
        ;;
    *)
        status=${status:-"ncclctl: unknown: exit status $rc"}
        ;;
esac

# Unknown (2), a timeout, or anything unexpected.
log "$NODE: $status"
if [ "$DRAIN_ON_UNKNOWN" = 1 ]; then
    drain "$status"
    exit 1
fi
exit 0
