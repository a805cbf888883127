"""One log line: the launcher's prefix, NCCL's ``host:pid:tid [dev]`` prefix, the level and the message.

NCCL prints (``src/debug.cc``; every release from 2.4 to 2.30 uses these shapes)::

    host:pid:tid [cudaDev] NCCL INFO message
    \\nhost:pid:tid [cudaDev] file.cc:123 NCCL WARN message             (2.30: "file.cc:123 (function) NCCL WARN")
    [2025-01-31 12:00:00] host:pid:tid [cudaDev] ... NCCL WARN ...     (NCCL_DEBUG_TIMESTAMP_FORMAT, 2.26+)
    NCCL version 2.18.3+cuda12.2                                     (rank 0 on stdout, without a prefix)

``[cudaDev]`` is the process's CUDA device, not the rank. Launchers put their own prefix in front of the whole
line (``srun -l``: ``0: ``; Open MPI ``--tag-output``: ``[1,0]<stdout>:``; torchrun ``--tee``: ``[rank0]:`` or
``[default0]:``; log collectors: a timestamp), and people paste lines quoted (``> ``) or without any prefix. This
module finds NCCL's marker (`` NCCL INFO ``/`` NCCL WARN ``) wherever it is and reads the prefix backwards from it,
so anything in front of the host name is ignored.
"""

from __future__ import annotations

import re

INFO, WARN, TRACE = "INFO", "WARN", "TRACE"

#: (host, pid, tid, dev) of a prefix that could not be read (a pasted line that starts at ``NCCL INFO``).
NO_PREFIX = ("", None, None, None)

_WARN_HEAD = re.compile(r"(?:^|\s)(?:\[\d+\] )?(?:[\d.]+ )?(\S+?:\d+)(?: \([^)]*\))?$")

#: Launcher prefixes at the start of a line (the part before the application's own text).
_LAUNCHER = re.compile(
    r"^(?:\s*(?:"
    r"\d+: ?"                                   # srun -l / pdsh-style "0: "
    r"|\[\d+,\d+\]<std(?:out|err)>: ?"          # Open MPI --tag-output
    r"|\[(?:rank|default)\d+\]: ?"              # torchrun --tee / -t
    r"|\[\d{4}-\d\d-\d\d[ T][\d:.,]+\] ?"       # [2025-01-31 12:00:00] timestamps
    r"|\d{4}-\d\d-\d\dT[\d:.]+Z? "              # ISO timestamps of log collectors
    r"|> ?"                                     # quoted in a Markdown reply
    r"))+")


def strip_launcher(line: str) -> str:
    """``line`` without launcher prefixes, timestamps or quote marks at its start (and without surrounding blanks)."""
    m = _LAUNCHER.match(line)
    return (line[m.end():] if m else line).strip()


def parse_head(head: str) -> tuple[str, int | None, int | None, int | None]:
    """``(host, pid, tid, dev)`` from the text in front of `` NCCL INFO`` (``...host:pid:tid [dev]``).

    The host is the last whitespace-separated word before ``:pid:tid`` (after a launcher's ``...:``), so a
    timestamp or launcher prefix in front of it does not matter. Parts that are not there are None (a pasted line
    may start at ``[0] NCCL INFO``)."""
    head = head.rstrip()
    dev = None
    if head.endswith("]"):
        lb = head.rfind("[")
        d = head[lb + 1:-1]
        if d.isdigit() and len(d) < 10:
            dev = int(d)
            head = head[:lb].rstrip()
    c2 = head.rfind(":")
    c1 = head.rfind(":", 0, c2) if c2 > 0 else -1
    if c1 < 0 and c2 == 0:
        c1 = -2
    tid_s = head[c2 + 1:] if c2 >= 0 else ""
    pid_s = head[c1 + 1:c2] if c1 >= -1 and c2 >= 0 else ""
    if not (tid_s.isdigit() and pid_s.isdigit()) or len(tid_s) > 12 or len(pid_s) > 12:
        return ("", None, None, dev)
    hostpart = head[:c1] if c1 >= 0 else ""
    parts = hostpart.split()
    host = parts[-1] if parts else ""
    if ":" in host:
        host = host.rsplit(":", 1)[1]
    return (host, int(pid_s), int(tid_s), dev)


def split_warn_head(head: str) -> tuple[str, str]:
    """A WARN line's text in front of ``NCCL WARN`` as (prefix, ``file.cc:123``): NCCL puts the source location
    between ``[dev]`` and the level."""
    m = _WARN_HEAD.search(head)
    if not m:
        return head, ""
    return head[:m.start(1)].rstrip(), m.group(1)


__all__ = ["INFO", "NO_PREFIX", "TRACE", "WARN", "parse_head", "split_warn_head", "strip_launcher"]
