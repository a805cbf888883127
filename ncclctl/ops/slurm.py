"""Slurm: drain this node with a reason (``ncclctl lint --format slurm --drain``).

The one thing ncclctl does to a scheduler, and only when asked: ``scontrol update nodename=NODE state=drain
reason=REASON``, run without a shell (the reason is one argument, nothing in it is interpreted), under a timeout.
The node is ``--node``, else ``$SLURMD_NODENAME`` (set for prologs and HealthCheckProgram), else the short host
name; the program is ``$SCONTROL`` or ``scontrol`` on the PATH.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess

from ncclctl.errors import SourceUnavailable

TIMEOUT_S = 15


def node_name(explicit: str | None = None) -> str:
    """The Slurm node name of this host."""
    if explicit:
        return explicit
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def drain_command(node: str, reason: str, scontrol: str | None = None) -> list[str]:
    return [scontrol or os.environ.get("SCONTROL") or "scontrol", "update", f"nodename={node}", "state=drain",
            f"reason={reason}"]


def drain(node: str, reason: str) -> list[str]:
    """Drain ``node`` with ``reason``; the command run. :class:`SourceUnavailable` when scontrol is missing, fails
    or hangs."""
    cmd = drain_command(node, reason)
    if shutil.which(cmd[0]) is None:
        raise SourceUnavailable(f"cannot drain {node}: {cmd[0]} not found",
                                fix="install the Slurm client, or set SCONTROL to its path")
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SourceUnavailable(f"cannot drain {node}: {exc}") from None
    if done.returncode != 0:
        said = " ".join((done.stderr or done.stdout or "").split())[:200]
        raise SourceUnavailable(f"cannot drain {node}: scontrol exit status {done.returncode}: {said}")
    return cmd
