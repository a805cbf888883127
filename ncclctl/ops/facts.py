"""``ncclctl facts``: one JSON document about the node, for Ansible's ``/etc/ansible/facts.d/ncclctl.fact``.

The contract (what a fact file must do so that ``setup`` never breaks on a host):

* always one valid JSON object, and the command exits 0; when probing fails the document says so inside
  (``"ok": false``, ``"error": {...}``) and every section is ``null``;
* bounded run time: the probe (and lint) run in a forked child under a deadline; past it the child and every
  process under it are killed and the document says ``"timed_out": true``;
* nothing outlives it: tools that moved to their own session (``setsid``, daemons) are found through
  ``/proc`` (the child is their subreaper) and killed too, at the deadline, on SIGTERM/SIGINT/SIGHUP, and when
  the probe finishes; a signal still gives the error document (``"error": "Interrupted"``) and exit 0;
* stable snake_case keys, versioned by ``schema_version`` (:data:`FACTS_SCHEMA_VERSION`); schema:
  ``schemas/facts.schema.json``;
* deterministic: the same node gives byte-identical output (no timestamps), so ``facts -o FILE`` only rewrites
  the file, and Ansible only reports a change, when something about the node changed.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys
import time
from collections import Counter
from typing import Any, Callable

from ncclctl import __version__
from ncclctl.errors import ExitCode, NcclctlError
from ncclctl.model import Node
from ncclctl.names import natural_key

FACTS_SCHEMA_VERSION = 1

#: Top-level sections, in output order; an error document has them all, set to null.
SECTIONS = ("hostname", "kernel", "virtual_machine", "cpu", "gpu", "gpus", "nics", "netdevs", "rails", "nccl",
            "lint", "versions", "unavailable", "fleet")


def _transport(node: Node) -> dict:
    from ncclctl.nccl.transport import node_transport
    from ncclctl.nccl.version import DEFAULT

    tr = node_transport(node, DEFAULT)
    return {"name": tr.name, "why": tr.why, "interfaces": [sd.name for sd in tr.socket]}


def document(node: Node, *, source: dict, lint: bool = True) -> dict:
    """The facts of one probed node (pure, apart from running the lint rules over it)."""
    from ncclctl.nccl.settings import effective_setting
    from ncclctl.nccl.variables import REDACTED, sensitive_variable
    from ncclctl.plan.rails import plan_rails

    f = node.facts
    models = Counter(g.name for g in node.gpus)
    try:
        plan = plan_rails(node)
    except NcclctlError:
        plan = None
    rails = None
    if plan is not None:
        rails = {
            "count": len(plan.rails),
            "nccl_ib_hca": plan.nccl_ib_hca or None,
            "down": [plan.rails[k].hca for k in plan.down],
            "excluded": list(plan.excluded),
            "far_gpus": list(plan.far_gpus),
            "rails": [{"rail": r.rail, "hca": r.hca, "netdev": r.netdev, "numa_node": r.numa,
                       "link_layer": r.link_layer, "rate_gbps": r.rate_gbps, "active": r.active,
                       "gpus": list(r.gpus), "path": r.path} for r in plan.rails],
        }
    nccl_names = ("NCCL_TOPO_FILE", "NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "NCCL_IB_GID_INDEX", "NCCL_IB_TC",
                  "NCCL_GRAPH_FILE")
    summary, found, ran = _lint(node, source) if lint else (
        {"ran": False, "error": None, "summary": None, "rules": None}, None, None)
    doc: dict[str, Any] = {
        "schema_version": FACTS_SCHEMA_VERSION,
        "ok": True,
        "timed_out": False,
        "error": None,
        "ncclctl_version": __version__,
        "source": source,
        "hostname": node.hostname,
        "kernel": f.kernel,
        "virtual_machine": node.is_guest,
        "cpu": {"arch": node.cpu.arch, "vendor": node.cpu.vendor, "model_name": node.cpu.model_name,
                "sockets": node.cpu.sockets, "logical_cpus": node.cpu.logical_cpus, "numa_nodes": len(node.numa)},
        "gpu": {
            "count": len(node.gpus),
            "models": [{"name": name, "count": n} for name, n in sorted(models.items())],
            "driver_version": f.driver_version,
            "cuda_driver_version": f.cuda_driver_version,
            "kernel_module": f.nvidia_module,
            "peermem": list(f.peermem),
            "nvswitch_count": len(node.nvswitches),
            "fabric_manager": f.fabric_manager,
            "nvlink_domain": _nvlink_domain(node),
        },
        "gpus": [{"index": g.index, "bdf": g.bdf, "name": g.name, "numa_node": g.numa_node, "sm": g.sm,
                  "active_nvlinks": len(g.active_nvlinks), "persistence_mode": g.persistence_mode,
                  "mig": g.mig_current} for g in sorted(node.gpus, key=lambda g: g.index)],
        "nics": [{"name": n.name, "bdf": n.bdf, "hca_type": n.hca_type, "fw_ver": n.fw_ver, "board_id": n.board_id,
                  "link_layer": n.link_layer,
                  "ports": [{"port": p.num, "state": p.state, "phys_state": p.phys_state, "link_layer": p.link_layer,
                             "rate_gbps": p.rate_gbps, "active_mtu": p.active_mtu, "netdev": p.netdev}
                            for p in n.ports]}
                 for n in sorted(node.nics, key=lambda n: natural_key(n.name))],
        "netdevs": [{"name": d.name, "kind": d.kind, "state": d.operstate, "mtu": d.mtu, "speed_mbps": d.speed_mbps,
                     "bdf": d.bdf} for d in sorted(node.netdevs, key=lambda d: natural_key(d.name))],
        "rails": rails,
        "nccl": {
            # Variable names lower-cased like every other key (NCCL's names are all upper case); the values of
            # the variables NCCL's registry marks SENSITIVE are not published.
            "env": {k.lower(): REDACTED if sensitive_variable(k) else v for k, v in sorted(f.nccl_env)},
            "conf_files": sorted(c.path for c in f.conf_files),
            "effective": {name.lower(): _published(name, effective_setting(node, name)) for name in nccl_names},
            "virtual_topology_file": f.virtual_topology.path if f.virtual_topology else None,
            "libraries": (None if f.nccl_libraries is None else
                          [{"path": lib.path, "version": lib.version, "cuda": lib.cuda, "where": lib.where}
                           for lib in f.nccl_libraries]),
            "transport": _transport(node),
        },
        "lint": summary,
        "versions": {
            "ncclctl": __version__,
            "python": ".".join(map(str, sys.version_info[:3])),
            "kernel": f.kernel,
            "nvidia_driver": f.driver_version,
            "cuda_driver": f.cuda_driver_version,
            "nic_firmware": sorted({n.fw_ver for n in node.nics if n.fw_ver}, key=natural_key),
        },
        "unavailable": [{"source": u.source, "reason": u.reason} for u in node.unavailable],
        "fleet": {"facts": published_fleet_facts(node, plan),
                  "findings": None if found is None else [f.to_dict() for f in found],
                  "rules_run": ran},
    }
    return doc


def published_fleet_facts(node: Node, plan=None) -> dict:
    """What ``fleet lint --facts`` compares across hosts (:func:`ncclctl.lint.rules_fleet.fleet_facts`), as JSON with
    snake_case keys (:func:`ncclctl.lint.fleet.facts_to_json`): the values of sensitive NCCL variables are not published (hosts then compare equal on them).
    ``lint --format prom`` writes the same facts into its textfile. ``plan``: the node's rail plan when known."""
    from ncclctl.lint.fleet import facts_to_json
    from ncclctl.lint.rules_fleet import fleet_facts
    from ncclctl.nccl.variables import REDACTED, sensitive_variable

    facts = fleet_facts(node, plan) if plan is not None else fleet_facts(node)
    facts["nccl"] = {k: REDACTED if sensitive_variable(k) else v for k, v in sorted(facts["nccl"].items())}
    return facts_to_json(facts)


def _published(name: str, value: str | None) -> str | None:
    """``value`` of NCCL variable ``name`` as the facts publish it: REDACTED for a sensitive variable."""
    from ncclctl.nccl.variables import REDACTED, sensitive_variable

    return REDACTED if value is not None and sensitive_variable(name) else value


def _lint(node: Node, source: dict) -> tuple[dict, list | None, list[str] | None]:
    """The default rule set over the node: (the ``lint`` section: counts per severity and the ids of the rules that
    fired; the findings, sorted; the ids of the rules that ran), or the error and two Nones."""
    try:
        from ncclctl import report
        from ncclctl.findings import sort_key
        from ncclctl.lint.context import Ctx
        from ncclctl.lint.engine import DEFAULT_CONFIG, run, selected

        found = sorted(run(Ctx(node=node, source=source.get("path"))), key=sort_key)
        ran = [r.id for r in selected(DEFAULT_CONFIG, host=node.hostname)]
        return ({"ran": True, "error": None, "summary": report.summary(found),
                 "rules": sorted({f.rule for f in found})}, found, ran)
    except Exception as exc:  # the facts must survive a broken rule; say what happened instead
        return {"ran": False, "error": f"{type(exc).__name__}: {exc}", "summary": None, "rules": None}, None, None


def error_document(error: dict, *, source: dict, timed_out: bool = False) -> dict:
    """The document when the node could not be probed: same keys, sections null, the error inside."""
    hostname = socket.gethostname() if source.get("kind") == "live" else None
    doc: dict[str, Any] = {"schema_version": FACTS_SCHEMA_VERSION, "ok": False, "timed_out": timed_out,
                           "error": error, "ncclctl_version": __version__, "source": source}
    doc.update({k: None for k in SECTIONS})
    doc["hostname"] = hostname
    return doc


def _error(name: str, message: str, code: ExitCode, fix: str | None = None) -> dict:
    return {"error": name, "message": message, "path": None, "line": None, "column": None, "fix": fix,
            "exit_code": int(code)}


def build(load: Callable[[], Node], *, source: dict, lint: bool = True) -> dict:
    """Probe and describe, turning every failure into an error document (never raises, except interrupts)."""
    try:
        return document(load(), source=source, lint=lint)
    except NcclctlError as exc:
        return error_document(exc.to_dict(), source=source)
    except Exception as exc:  # a bug must still leave valid JSON behind
        return error_document(_error("InternalError", f"{type(exc).__name__}: {exc}", ExitCode.INTERNAL,
                                     "this is a bug in ncclctl; report it"), source=source)


#: Signals that end ``facts`` early: the child tree is killed and the error document still printed (exit 0).
INTERRUPT_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP")
#: How long the clean-up may spend freezing and reaping the child tree (a process stuck in an uninterruptible
#: read cannot be stopped or reaped; it is SIGKILLed and left for init rather than holding ``facts`` up).
_CLEANUP_S = 2.0


def collect(load: Callable[[], Node], *, source: dict, timeout: float, lint: bool = True) -> dict:
    """:func:`build` under a hard deadline, in a forked child; nothing the child started outlives this call.

    The child ("worker") runs in its own process group, as a child subreaper (Linux), with stdin/stdout on
    /dev/null. Past the deadline, or when this process gets SIGTERM, SIGINT or SIGHUP while waiting, the worker's
    whole tree is frozen (SIGSTOP) and killed (SIGKILL), whatever session or group its members moved to, and an
    error document says why (``timed_out``, or ``"error": "Interrupted"``). A worker that finishes kills what it
    left running itself before it exits.
    """
    if not hasattr(os, "fork"):  # pragma: no cover - not Linux
        return build(load, source=source, lint=lint)
    import threading

    received: list[int] = []
    rfd, wfd = os.pipe()
    sig_r, sig_w = os.pipe()
    os.set_blocking(sig_w, False)

    def on_signal(signum: int, _frame: object) -> None:
        received.append(signum)
        try:
            os.write(sig_w, b"\0")  # wakes the select below (PEP 475 would otherwise just retry it)
        except OSError:
            pass

    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for name in INTERRUPT_SIGNALS:
            signum = getattr(signal, name, None)
            if signum is not None:
                previous[signum] = signal.signal(signum, on_signal)
    try:
        try:
            pid = os.fork()
        except OSError as exc:
            return error_document(_error("SourceUnavailable", f"cannot start the probing process: {exc.strerror}",
                                         ExitCode.UNAVAILABLE, "the host is out of processes or memory"),
                                  source=source)
        if pid == 0:  # pragma: no cover - runs in the child (coverage cannot see it)
            _worker(load, source, lint, keep=wfd, close=(rfd, sig_r, sig_w), signals=tuple(previous))
        os.close(wfd)
        wfd = -1
        try:
            os.setpgid(pid, pid)  # also from this side: no window in which a kill would miss the child's commands
        except OSError:
            pass
        outcome = "error"
        chunks: list[bytes] = []
        try:
            outcome, chunks = _wait(rfd, sig_r, received, time.monotonic() + timeout)
        finally:
            if outcome != "done":
                _kill_tree(pid)
            _kill_group(pid)  # stragglers of the worker's group (unreaped, so the group id cannot be reused yet)
            _reap(pid)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for fd in (rfd, wfd, sig_r, sig_w):
            if fd >= 0:
                os.close(fd)
    if outcome == "timeout":
        return error_document(_error("Timeout", f"probing did not finish within {timeout:g} s", ExitCode.UNAVAILABLE,
                                     "a hung sysfs read, NVML call or command (ibv_devinfo, mlnx_qos); run "
                                     "'ncclctl probe' by hand to see which, or raise --timeout"),
                              source=source, timed_out=True)
    if outcome == "signal":
        name = signal.Signals(received[0]).name
        return error_document(_error("Interrupted", f"{name} arrived before probing finished; the probe was stopped",
                                     ExitCode.INTERRUPTED, "let it run, or give a smaller --timeout than the "
                                     "caller's own limit (e.g. 'timeout 60 ncclctl facts --timeout 50')"),
                              source=source)
    try:
        doc = json.loads(b"".join(chunks))
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        return error_document(_error("InternalError", "the probing process died without an answer",
                                     ExitCode.INTERNAL, "rerun with NCCLCTL_DEBUG=1 'ncclctl probe'"), source=source)
    return doc


def _wait(rfd: int, sig_r: int, received: list[int], deadline: float) -> tuple[str, list[bytes]]:
    """Read the worker's answer: ("done" | "timeout" | "signal", the bytes read)."""
    chunks: list[bytes] = []
    while True:
        if received:
            return "signal", chunks
        left = deadline - time.monotonic()
        if left <= 0:
            return "timeout", chunks
        ready, _, _ = select.select([rfd, sig_r], [], [], left)
        if sig_r in ready or received:
            return "signal", chunks
        if not ready:
            return "timeout", chunks
        chunk = os.read(rfd, 1 << 16)
        if not chunk:
            return "done", chunks
        chunks.append(chunk)


def _worker(load: Callable[[], Node], source: dict, lint: bool, *, keep: int, close: tuple[int, ...],
            signals: tuple[int, ...]) -> None:  # pragma: no cover - runs in the child
    """The forked child: build the document, send it down ``keep``, kill whatever it left running, exit."""
    status = 0
    try:
        for signum in signals:
            signal.signal(signum, signal.SIG_DFL)
        for fd in close:
            os.close(fd)
        try:
            os.setpgid(0, 0)  # own process group, so its command runners die with it
        except OSError:
            pass
        _prctl_child_setup()
        _detach_stdio()
        data = json.dumps(build(load, source=source, lint=lint)).encode()
        view = memoryview(data)
        while view:
            view = view[os.write(keep, view):]
    except BaseException:
        status = 1
    finally:
        try:
            _kill_descendants(os.getpid())
        finally:
            os._exit(status)


def _prctl_child_setup() -> None:  # pragma: no cover - runs in the child
    """Linux: become a child subreaper (orphans of the tools the probe starts, daemons and ``setsid`` ones
    included, are re-parented here instead of to init, so they stay in the tree that is killed), and die with
    the ``facts`` process if it is killed outright."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _detach_stdio() -> None:  # pragma: no cover - runs in the child
    """stdin and stdout on /dev/null (stderr too, unless NCCLCTL_DEBUG): a worker that cannot be killed (stuck
    in an uninterruptible read) must not hold the caller's pipes open after ``facts`` has answered."""
    null = os.open(os.devnull, os.O_RDWR)
    fds = (0, 1) if os.environ.get("NCCLCTL_DEBUG") else (0, 1, 2)
    for fd in fds:
        os.dup2(null, fd)
    if null not in fds:
        os.close(null)


def _process_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state letter) of every visible process, from /proc/<pid>/stat (empty without /proc)."""
    table: dict[int, tuple[int, str]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                raw = fh.read()
            fields = raw[raw.rindex(b")") + 2:].split()  # the command name may hold spaces and parentheses
            table[int(name)] = (int(fields[1]), fields[0].decode("ascii", "replace"))
        except (OSError, ValueError, IndexError):
            continue
    return table


def _has_children(pid: int) -> bool:
    """Whether ``pid`` has a child (then maybe more descendants); True when /proc cannot say."""
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children", "rb") as fh:
                if fh.read().strip():
                    return True
    except OSError:  # no /proc, or a kernel without CONFIG_PROC_CHILDREN: scan
        return True
    return False


def _descendants(root: int, table: dict[int, tuple[int, str]]) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: list[int] = []
    stack = [root]
    while stack:
        for pid in children.get(stack.pop(), ()):
            found.append(pid)
            stack.append(pid)
    return found


def _kill_descendants(root: int) -> None:
    """Freeze every descendant of ``root`` (SIGSTOP, repeated until a scan finds none still running: a stopped
    process forks nothing and orphans nobody), then SIGKILL them all. Bounded by :data:`_CLEANUP_S`; processes
    that cannot be signalled (another user's) are skipped."""
    if not _has_children(root):
        return
    frozen: set[int] = set()
    denied: set[int] = set()
    give_up = time.monotonic() + _CLEANUP_S
    delay = 0.001
    while time.monotonic() < give_up:
        table = _process_table()
        running = [p for p in _descendants(root, table) if table[p][1] not in "TtZX" and p not in denied]
        if not running:
            break
        for pid in running:
            try:
                os.kill(pid, signal.SIGSTOP)
                frozen.add(pid)
            except ProcessLookupError:
                pass
            except PermissionError:
                denied.add(pid)
        time.sleep(delay)  # SIGSTOP is asynchronous: let it land before the next scan
        delay = min(delay * 2, 0.05)
    table = _process_table()
    for pid in frozen.union(_descendants(root, table)) - denied:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _kill_tree(pid: int) -> None:
    """The worker and everything under it: stop the worker (it starts nothing more and, as the subreaper, stays
    there to adopt orphans), kill its descendants, then it."""
    try:
        os.kill(pid, signal.SIGSTOP)
    except OSError:
        pass
    _kill_descendants(pid)
    _kill_group(pid)


def _kill_group(pid: int) -> None:
    for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            kill()
            return
        except (ProcessLookupError, PermissionError):
            continue


def _reap(pid: int) -> None:
    """Wait for the worker, at most :data:`_CLEANUP_S` (one stuck in the kernel is SIGKILLed; init reaps it)."""
    give_up = time.monotonic() + _CLEANUP_S
    delay = 0.0005
    while True:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if done or time.monotonic() > give_up:
            return
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def dumps(doc: dict) -> bytes:
    from ncclctl.render import dumps as _dumps

    return _dumps(doc).encode()


def _nvlink_domain(node: Node) -> dict[str, Any] | None:
    """The node's multi-node NVLink domain facts (GB200/GB300 NVL): cluster UUIDs, cliques, fabric states, health
    masks and VBIOS versions of its GPUs, and IMEX; None on a node whose GPUs report no such domain."""
    from ncclctl.model import FABRIC_STATE_NAMES, nvlink_domain_gpus  # noqa: PLC0415

    gpus = nvlink_domain_gpus(node)
    if not gpus:
        return None
    imex = node.facts.imex
    imex_doc = None
    if imex is not None:
        own = set(imex.local_addresses or ()) | {node.hostname}
        imex_doc = {"service": imex.service, "nodes": None if imex.nodes is None else len(imex.nodes),
                    "in_node_list": None if imex.nodes is None or imex.local_addresses is None
                    else bool(own & set(imex.nodes)),
                    "channels": None if imex.channels is None else list(imex.channels),
                    "domain_state": imex.domain_state}
    return {
        "cluster_uuids": sorted({g.fabric_cluster_uuid for g in gpus if g.fabric_cluster_uuid}),
        "clique_ids": sorted({g.fabric_clique_id for g in gpus if g.fabric_clique_id is not None}),
        "fabric_states": sorted({FABRIC_STATE_NAMES.get(g.fabric_state, str(g.fabric_state))
                                 for g in gpus if g.fabric_state is not None}),
        "health_masks": sorted({f"0x{g.fabric_health_mask:x}" for g in gpus if g.fabric_health_mask is not None}),
        "vbios_versions": sorted({g.vbios_version for g in gpus if g.vbios_version}),
        "imex": imex_doc,
    }
