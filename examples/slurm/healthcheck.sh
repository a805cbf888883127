#!/bin/bash
# Slurm HealthCheckProgram: slurmd runs it every HealthCheckInterval seconds, without arguments, and ignores its
# exit status: a health check drains the node itself. ncclctl does: with --drain it runs
#   scontrol update nodename=<node> state=drain reason="ncclctl: IB001 mlx5_3 ib-port-not-active (+1 more)"
# when the node is unfit (the node: $SLURMD_NODENAME, else the short host name), and nothing when it is fit or
# when it cannot look.
#
#   slurm.conf:  HealthCheckProgram=/etc/slurm/ncclctl-healthcheck.sh
#                HealthCheckInterval=300
#                HealthCheckNodeState=IDLE        # not while jobs run
#
# Resuming a node once it is fixed stays a person's decision: scontrol update nodename=<node> state=resume.
# Settings (environment, or /etc/default/ncclctl-prolog as for prolog.sh): NCCLCTL, NCCLCTL_ARGS, NCCLCTL_TIMEOUT.
set -u
if [ -r /etc/default/ncclctl-prolog ]; then
    # shellcheck disable=SC1091
    . /etc/default/ncclctl-prolog
fi
NCCLCTL=${NCCLCTL:-/opt/ncclctl/bin/ncclctl}
read -r -a EXTRA <<< "${NCCLCTL_ARGS:-}"
timeout --kill-after=2 "${NCCLCTL_TIMEOUT:-30}" "$NCCLCTL" lint --format slurm --drain ${EXTRA[@]+"${EXTRA[@]}"}
exit 0
