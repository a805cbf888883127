"""``ncclctl facts``: one JSON document about the node, for Ansible's ``/etc/ansible/facts.d/ncclctl.fact``.

The contract (what a fact file must do so that ``setup`` never breaks on a host):

* always one valid JSON object, and the command exits 0; when probing fails the document says so inside
  (``"ok": false``, ``"error": {...}``) and every section is ``null``;
* bounded run time: the probe (and lint) run in a forked child under a deadline; past it the child and its
  process group are killed and the document says ``"timed_out": true``;
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
from ncclctl.paths import natural_key

FACTS_SCHEMA_VERSION = 1

#: Top-level sections, in output order; an error document has them all, set to null.
SECTIONS = ("hostname", "kernel", "virtual_machine", "cpu", "gpu", "gpus", "nics", "netdevs", "rails", "nccl",
            "lint", "versions", "unavailable")


def document(node: Node, *, source: dict, lint: bool = True) -> dict:
    """The facts of one probed node (pure, apart from running the lint rules over it)."""
    from ncclctl.nccl.settings import effective_setting
    from ncclctl.rails import plan_rails

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
            # Variable names lower-cased like every other key (NCCL's names are all upper case).
            "env": {k.lower(): v for k, v in sorted(f.nccl_env)},
            "conf_files": sorted(c.path for c in f.conf_files),
            "effective": {name.lower(): effective_setting(node, name) for name in nccl_names},
            "virtual_topology_file": f.virtual_topology.path if f.virtual_topology else None,
        },
        "lint": _lint_summary(node, source) if lint else {"ran": False, "error": None, "summary": None,
                                                          "rules": None},
        "versions": {
            "ncclctl": __version__,
            "python": ".".join(map(str, sys.version_info[:3])),
            "kernel": f.kernel,
            "nvidia_driver": f.driver_version,
            "cuda_driver": f.cuda_driver_version,
            "nic_firmware": sorted({n.fw_ver for n in node.nics if n.fw_ver}, key=natural_key),
        },
        "unavailable": [{"source": u.source, "reason": u.reason} for u in node.unavailable],
    }
    return doc


def _lint_summary(node: Node, source: dict) -> dict:
    """Counts per severity and the ids of the rules that fired, from the default rule set."""
    try:
        from ncclctl import report
        from ncclctl.lint.context import Ctx
        from ncclctl.lint.engine import run

        found = run(Ctx(node=node, source=source.get("path"), offline=source.get("kind") != "live"))
        return {"ran": True, "error": None, "summary": report.summary(found),
                "rules": sorted({f.rule for f in found})}
    except Exception as exc:  # the facts must survive a broken rule; say what happened instead
        return {"ran": False, "error": f"{type(exc).__name__}: {exc}", "summary": None, "rules": None}


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


def collect(load: Callable[[], Node], *, source: dict, timeout: float, lint: bool = True) -> dict:
    """:func:`build` under a hard deadline: run it in a forked child, kill the child's group when late."""
    if not hasattr(os, "fork"):  # pragma: no cover - not Linux
        return build(load, source=source, lint=lint)
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: own process group, so its command runners die with it
        status = 0
        try:
            os.close(rfd)
            try:
                os.setpgid(0, 0)
            except OSError:
                pass
            data = json.dumps(build(load, source=source, lint=lint)).encode()
            view = memoryview(data)
            while view:
                view = view[os.write(wfd, view):]
        except BaseException:
            status = 1
        finally:
            os._exit(status)
    os.close(wfd)
    try:
        os.setpgid(pid, pid)  # also from this side: no window in which a kill would miss the child's commands
    except OSError:
        pass
    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    done = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select([rfd], [], [], left)
            if not ready:
                break
            chunk = os.read(rfd, 1 << 16)
            if not chunk:
                done = True
                break
            chunks.append(chunk)
    finally:
        if not done:
            _kill_group(pid)
        os.waitpid(pid, 0)
        os.close(rfd)
    if not done:
        return error_document(_error("Timeout", f"probing did not finish within {timeout:g} s", ExitCode.UNAVAILABLE,
                                     "a hung sysfs read, NVML call or command (ibv_devinfo, mlnx_qos); run "
                                     "'ncclctl probe' by hand to see which, or raise --timeout"),
                              source=source, timed_out=True)
    try:
        doc = json.loads(b"".join(chunks))
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        return error_document(_error("InternalError", "the probing process died without an answer",
                                     ExitCode.INTERNAL, "rerun with NCCLCTL_DEBUG=1 'ncclctl probe'"), source=source)
    return doc


def _kill_group(pid: int) -> None:
    for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            kill()
            return
        except (ProcessLookupError, PermissionError):
            continue


def dumps(doc: dict) -> bytes:
    from ncclctl.render import dumps as _dumps

    return _dumps(doc).encode()
