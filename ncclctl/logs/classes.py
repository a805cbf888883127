"""Log checks of failure classes found on logs from public threads (issue 27): each class its own rule, with the cause
NCCL's wording (or the framework's) names, the lines as evidence, and the fix of that class.

LOG032: the CUDA driver is older than the CUDA runtime NCCL was built for ("CUDA driver version is insufficient for
CUDA runtime version", "API call is not supported in the installed CUDA driver"), with the driver version
('cudaDriverVersion') and the CUDA NCCL was built with ('NCCL version X+cudaY') when the log prints them.

LOG033: NCCL's IB plugin could not register GPU memory through DMA-BUF ("Call to ibv_reg_dmabuf_mr failed with error
Operation not supported"): a kernel or OFED/rdma-core without DMA-BUF support, or a driver without it.

LOG034: the framework reports ncclRemoteError ("remote process exited or there was a network error"): this rank saw a
peer or the network between nodes fail; the cause is in another rank's log or on the fabric.

LOG035: the framework's watchdog timed out a collective ("Watchdog caught collective operation timeout"): a hang
after initialisation; which rank stopped is not in this rank's log (NCCL's RAS report, the flight recorder).

LOG036: the text report of NCCL's RAS client (``ncclras``, 2.24+): communicator groups not RUNNING/OK, and the blocks
of its Errors and Warnings sections (ranks missing, operation counts that disagree, ranks that are dead or aborted);
a report with every group RUNNING and OK is said so (info). Its JSON report (``ncclras -f json``, 2.28.9+ at least) comes as the
same blocks (``ncclctl.logs.parse.Parser._ras_json``).

Only what the parser already keeps is read (WARN lines by class, the application's error lines, the RAS report).
"""

from __future__ import annotations

import re
from typing import Any

from ncclctl.findings import Severity

#: The log checker (ncclctl.logs.check.Checker, which calls this module): its lines and ``add``.
Checker = Any

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

_BUILD_CUDA = re.compile(r"\+cuda(\d+)\.(\d+)")
_REMOTE = ("ncclRemoteError", "remote process exited or there was a network error")
_WATCHDOG = "Watchdog caught collective operation timeout"


def _hosts(procs: Any) -> str:
    from ncclctl.logs.show import hostlist

    named = {p.host for p in procs if p.host}
    return hostlist(named) if named else "the application"


def _text(ev: Any) -> str:
    t = ev.text.split("NCCL WARN", 1)[-1].strip()
    return t.split(":Got completion", 1)[-1] if ":Got completion" in t else t


def _cuda_of(code: int | None) -> str:
    return f"{code // 1000}.{code % 1000 // 10}" if code else "?"


def failure_classes(ck: Checker) -> None:
    """LOG032-LOG036 (see the module's doc)."""
    by_kind: dict[str, list[tuple[Any, Any]]] = {}
    for p in ck.ls.procs.values():
        for k, ev in p.warns:
            if k in ("driver-old", "dmabuf"):
                by_kind.setdefault(k, []).append((p, ev))
    items = by_kind.get("driver-old", [])
    if items:
        procs = [p for p, _ in items]
        drv = next((p.cuda_driver for p in ck.ls.procs.values() if p.cuda_driver), None)
        build = next((m for p in ck.ls.procs.values() if p.version_ev is not None
                      for m in [_BUILD_CUDA.search(p.version_ev.text)] if m), None)
        if build is None:
            build = next((m for ev in ck.ls.bare_versions for m in [_BUILD_CUDA.search(ev.text)] if m), None)
        facts = []
        if drv:
            facts.append(f"the driver supports CUDA {_cuda_of(drv)} (cudaDriverVersion {drv})")
        if build is not None:
            facts.append(f"NCCL was built with CUDA {build.group(1)}.{build.group(2)}")
        cause = ("the NVIDIA driver is older than the CUDA runtime NCCL (or the framework) was built for"
                 + (f": {', '.join(facts)}" if facts else ""))
        ck.add("LOG032", f"{_hosts(procs)}: {_text(items[0][1])}; cause: {cause}",
               [ev for _, ev in items[:2]] + ck.ls.app_errors[:1], hosts={p.host for p in procs if p.host})
    items = by_kind.get("dmabuf", [])
    if items:
        procs = [p for p, _ in items]
        ck.add("LOG033", f"{_hosts(procs)}: NCCL could not register GPU memory with the NIC through DMA-BUF: "
               f"{_text(items[0][1])}; cause: the kernel, rdma-core/OFED or the GPU driver lacks DMA-BUF support "
               "(NCCL then needs nvidia-peermem for GPUDirect RDMA)",
               [ev for _, ev in items[:2]] + ck.ls.app_errors[:1], hosts={p.host for p in procs if p.host})
    remote = [ev for ev in ck.ls.app_errors if any(x in ev.text for x in _REMOTE)]
    if remote:
        socket_evs = [ev for p in ck.ls.procs.values() for k, ev in p.warns if k in ("socket", "socket-other")][:1]
        ck.add("LOG034", "the application reports ncclRemoteError: a peer process exited or the network between the "
               "nodes failed while this rank talked to it; this rank's log shows the consequence, the cause is in "
               "another rank's log (its first WARN) or on the fabric", remote[:2] + socket_evs)
    dog = [ev for ev in ck.ls.app_errors if _WATCHDOG in ev.text]
    if dog:
        ck.add("LOG035", f"the framework's watchdog timed out a collective ({len(dog)} line"
               f"{'s' if len(dog) != 1 else ''}): a rank stopped calling collectives or a transfer stalled after "
               "initialisation; this log does not say which rank", dog[:2])
    _ras(ck)


def _ras(ck: Checker) -> None:
    ls = ck.ls
    if not ls.ras_rows and not ls.ras:
        return
    if not ls.ras:
        ck.add("LOG036", f"NCCL's RAS report: {ls.ras_rows} communicator group{'s' if ls.ras_rows != 1 else ''}, "
               "every one RUNNING with no errors (a hang elsewhere: the application, or before or after NCCL's "
               "calls)", [], severity=I,
               fix="Nothing in NCCL's communicators to fix: look for the rank stuck outside NCCL (a data loader, an "
               "exception on one rank, a different code path) with the framework's own tools (py-spy dump, the flight "
               "recorder).")
        return
    sections = ("Errors", "Warnings") if any(b[0] != "row" for b in ls.ras) else ("row",)
    for sec in sections:  # the groups' rows only when the report has no Errors/Warnings blocks to say why
        blocks = [b for b in ls.ras if b[0] == sec]
        if not blocks:
            continue
        words = "; ".join(b[1] + (": " + " / ".join(b[2][:4]) if b[2] else "") for b in blocks[:3])
        what = {"Errors": "errors", "Warnings": "warnings", "row": "communicator groups not RUNNING/OK"}[sec]
        ck.add("LOG036", f"NCCL's RAS report lists {what}: {words[:600]}", [b[3] for b in blocks[:4]],
               severity=W if sec == "Warnings" else E)
