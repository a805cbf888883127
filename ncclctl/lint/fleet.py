"""Fleet lint, the runner: the node rules on every host (forked workers, a deadline per host), then the fleet
rules (:mod:`ncclctl.lint.rules_fleet`) once across the hosts' facts, through the engine's one rule loop.

Each host is loaded (snapshot folder/tarball or node-model JSON), linted with the node rules and reduced to a
small record of comparable facts in a worker process. Workers are forked (``--jobs``, default: the CPU count): the
parent has already imported the probe, the model and every rule module, so a worker starts without importing
anything.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator

from ncclctl.findings import Finding, Severity, sort_key
from ncclctl.lint.rules_fleet import FleetCtx, fleet_facts
from ncclctl.record import record
from ncclctl.report.fleet import FleetResult, HostResult


# --------------------------------------------------------------------------------------------------
# Running a fleet


@record
class Source:
    """One host to lint: its snapshot (folder or .tar.gz) or node-model JSON; ``name`` from an inventory."""

    path: str
    kind: str  # "snapshot" or "model"
    name: str | None = None
    labels: tuple[tuple[str, str], ...] = ()  # Kubernetes node labels from the inventory


def sources_from_paths(paths: Iterable[str]) -> list[Source]:
    out = []
    for p in paths:
        kind = "model" if p.endswith(".json") and os.path.isfile(p) else "snapshot"
        out.append(Source(path=p, kind=kind))
    return out


def sources_from_inventory(path: str) -> list[Source]:
    from ncclctl.inventory import load_inventory

    inv = load_inventory(path)
    return [Source(path=h.model or h.snapshot or "", kind="model" if h.model else "snapshot", name=h.name,
                   labels=h.labels) for h in inv.hosts]


#: Names of facts files in a folder: ``*.fact`` (Ansible's facts.d), ``*.json``, names without a suffix (Ansible's
#: jsonfile fact cache names each file after its host), and ``*.prom`` (Prometheus textfiles, :mod:`.fleet_prom`).
FACTS_SUFFIXES = (".fact", ".json")
TEXTFILE_SUFFIX = ".prom"


def sources_from_facts(paths: Iterable[str]) -> list[Source]:
    """One source per facts document or textfile: each file given, and every facts file under each folder given
    (recursively, hidden names left out; in name order), as Ansible's ``fetch`` lays them out (``DEST/HOST/etc/
    ansible/facts.d/ncclctl.fact``) or its jsonfile fact cache does (``CACHE/HOST``), or a folder of the nodes'
    ``.prom`` textfiles (``HOST.prom``; a folder's other textfiles, node_exporter's or other ncclctl commands',
    are left out)."""
    from ncclctl.errors import InputError
    from ncclctl.names import natural_key

    out = []
    for p in paths:
        if not os.path.isdir(p):
            out.append(Source(path=p, kind="prom" if p.endswith(TEXTFILE_SUFFIX) else "facts"))
            continue
        found = []
        for top, dirs, files in os.walk(p):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for name in files:
                if name.startswith("."):
                    continue
                if name.endswith(FACTS_SUFFIXES) or "." not in name:
                    found.append((os.path.join(top, name), "facts"))
                elif name.endswith(TEXTFILE_SUFFIX):
                    found.append((os.path.join(top, name), "prom"))
        if any(kind == "prom" for _, kind in found):
            from ncclctl.lint.fleet_prom import is_lint_textfile

            found = [(f, kind) for f, kind in found if kind != "prom" or is_lint_textfile(f)]
        if not found:
            raise InputError("no facts files in this folder (*.fact, *.json, fact-cache files named after hosts, or "
                             "ncclctl lint textfiles *.prom)",
                             path=p, fix="fetch each host's /etc/ansible/facts.d/ncclctl.fact here (ansible -m fetch), "
                                         "or give the files written by 'ncclctl facts -o FILE' or 'ncclctl lint "
                                         "--format prom -o HOST.prom'")
        out.extend(Source(path=f, kind=kind) for f, kind in sorted(found, key=lambda fk: natural_key(fk[0])))
    return out


def load_facts(path: str) -> dict[str, Any]:
    """The ``ncclctl facts`` document in ``path``: the document itself, Ansible's ``setup`` output
    (``ansible_facts.ansible_local.ncclctl``) or a jsonfile fact-cache entry (``ansible_local.ncclctl``)."""
    from ncclctl.errors import InputError
    from ncclctl.inputs import read_json

    fix = ("give the JSON that 'ncclctl facts' writes (the role installs it as /etc/ansible/facts.d/ncclctl.fact)")
    doc = read_json(path, "facts")
    if isinstance(doc, dict) and isinstance(doc.get("ansible_facts"), dict):
        doc = doc["ansible_facts"]
    if isinstance(doc, dict) and "ansible_local" in doc:
        local = doc["ansible_local"]
        if not isinstance(local, dict) or not isinstance(local.get("ncclctl"), dict):
            raise InputError("Ansible facts without ansible_local.ncclctl: this host has no ncclctl.fact", path=path,
                             fix="install the fact file on the host (examples/ansible role), then gather facts again")
        doc = local["ncclctl"]
    if not isinstance(doc, dict) or "schema_version" not in doc or "ok" not in doc:
        raise InputError("not an ncclctl facts document (no schema_version and ok keys)", path=path, fix=fix)
    if doc["schema_version"] != 1:
        raise InputError(f"facts schema_version {doc['schema_version']!r}; this ncclctl reads version 1", path=path,
                         fix="gather the facts with the same ncclctl release on the hosts and here")
    return doc


def _facts_host(src: Source, config, only: tuple[str, ...] | None) -> HostResult:
    """A host from its facts document: its recorded node findings (the rules this run selects) and its fleet facts."""
    from ncclctl.errors import ExitCode, InputError, NcclctlError
    from ncclctl.findings import Severity

    try:
        doc = load_facts(src.path)
        host = src.name or doc.get("hostname") or src.path
        if not doc["ok"]:
            err: dict[str, Any] = doc["error"] if isinstance(doc.get("error"), dict) else {}
            what = "timed out" if doc.get("timed_out") else "failed"
            raise InputError(f"the host's facts say its probe {what}: {err.get('error', '?')}: "
                             f"{err.get('message', '')}".rstrip(": "), path=src.path,
                             fix=err.get("fix") or "run 'ncclctl facts' on the host and read its error")
        fleet = doc.get("fleet")
        if not isinstance(fleet, dict) or not isinstance(fleet.get("facts"), dict):
            raise InputError(f"facts written by ncclctl {doc.get('ncclctl_version', '?')} have no 'fleet' section "
                             "(the values the fleet rules compare)", path=src.path,
                             fix="upgrade ncclctl on the hosts and gather the facts again")
        # The host ran the default rule set; this run's selection (--rule, the config's off and per-host ignores)
        # and configured severities apply to what it recorded. A rule off by default was not run there.
        wanted = _wanted(config, only)
        if config.ignores:
            wanted = {rid: sev for rid, sev in wanted.items() if not config.ignored(host, rid)}
        findings = []
        for d in fleet.get("findings") or ():
            if d["rule"] in wanted:
                sev = wanted[d["rule"]] or Severity(d["severity"])
                findings.append(Finding(rule=d["rule"], severity=sev, message=d["message"],
                                        subject=d["subject"], line=d.get("line"), column=d.get("column"),
                                        fix=d.get("fix"), evidence=tuple(d.get("evidence") or ())))
        ran = tuple(fleet.get("rules_run") or ())
        kept = _RAN.get((id(wanted), ran))
        if kept is None:  # hosts of one fleet ran the same rules: filtered once per distinct list
            kept = _RAN[(id(wanted), ran)] = [r for r in ran if r in wanted]
        rules = list(kept)
        return HostResult(host=host, source=src.path, findings=findings, rules=rules,
                          facts=facts_from_json(fleet["facts"]))
    except NcclctlError as exc:
        return HostResult(host=src.name or src.path, source=src.path, error=exc.to_dict())
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        bad = InputError(f"a facts document whose 'fleet' section is malformed ({type(exc).__name__}: {exc})",
                         path=src.path, fix="gather the facts again with 'ncclctl facts'")
        doc_err = bad.to_dict()
        doc_err["exit_code"] = int(ExitCode.INVALID_INPUT)
        return HostResult(host=src.name or src.path, source=src.path, error=doc_err)


_WANTED: dict[tuple, dict] = {}
#: (id of the wanted map, a host's recorded rules_run) -> the rules of it this run selects
_RAN: dict[tuple, list[str]] = {}


def _wanted(config, only: tuple[str, ...] | None) -> dict[str, Any]:
    """Rule id -> configured severity (or None) of the node rules this run selects, computed once a run."""
    from ncclctl.lint.engine import selected

    key = (id(config), only)
    if key not in _WANTED:
        _WANTED.clear()
        _RAN.clear()
        _WANTED[key] = {r.id: config.severity(r) for r in selected(config, only=only)}
    return _WANTED[key]


def facts_to_json(facts: dict[str, Any]) -> dict[str, Any]:
    """:func:`fleet_facts` as the facts document's ``fleet.facts`` publishes them: JSON, every key snake_case (NCCL
    variable names lower-cased, as the document's ``nccl.env`` has them; the firmware map as a list of
    ``{"nic", "fw_ver"}``). :func:`facts_from_json` reads them back."""
    import json

    out = json.loads(json.dumps(facts))
    out["nccl"] = {k.lower(): v for k, v in sorted(facts["nccl"].items())}
    out["firmware"] = [{"nic": k, "fw_ver": v} for k, v in sorted(facts["firmware"].items())]
    return out


def facts_from_json(facts: dict[str, Any]) -> dict[str, Any]:
    """Fleet facts read back from a facts document as :func:`fleet_facts` makes them, so the fleet rules see what
    they see from a snapshot: NCCL names upper case, the firmware map, the pairs and triples it keeps as tuples
    (RoCE addresses, network ports)."""
    out = dict(facts)
    out["nccl"] = {k.upper(): v for k, v in facts["nccl"].items()}
    out["firmware"] = {d["nic"]: d["fw_ver"] for d in facts["firmware"]}
    out["roce_addresses"] = [tuple(x) for x in facts.get("roce_addresses") or ()]
    out["net_ports"] = [tuple(x) for x in facts.get("net_ports") or ()]
    return out


# Worker state, set before forking (or by the initializer): the config and the expected-state profile.
_STATE: dict[str, Any] = {}

#: Seconds one host may take to load and lint (``fleet lint --host-timeout``). A host normally takes ~15 ms.
HOST_TIMEOUT = 60.0


class HostTimeout(BaseException):
    """Raised inside a host's load/lint by the per-host timer.

    A ``BaseException``, as ``KeyboardInterrupt`` is: the guards that keep one broken rule or source from hiding
    the rest (``except Exception`` in the rule loop, the rails plan, the model's fallbacks) must not catch the
    deadline and turn it into "the check crashed (HostTimeout)" (exit 1); only :func:`lint_host` catches it, and
    the host is reported as a ``Timeout`` (exit 4)."""


@contextmanager
def host_deadline(seconds: float | None) -> Iterator[None]:
    """Raise :class:`HostTimeout` in this (main) thread when the block runs past ``seconds``.

    A real-time interval timer: its SIGALRM interrupts Python code and blocking system calls alike (PEP 475
    retries a call only when the handler returns; ours raises). Inert when ``seconds`` is falsy or when not on
    the main thread (signals are only delivered there), which is where the forked workers run hosts."""
    import signal
    import threading

    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def _expired(signum, frame):  # noqa: ARG001
        raise HostTimeout

    old = signal.signal(signal.SIGALRM, _expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _init(config, expect, only=None, timeout: float | None = HOST_TIMEOUT) -> None:
    _STATE["config"] = config
    _STATE["expect"] = expect
    _STATE["only"] = only
    _STATE["timeout"] = timeout


#: Node models read in this process, by file identity (device, inode, size, mtime): an inventory may name one model
#: for thousands of hosts (each was read and checked again: 10,000 hosts 120 s, 1.2 GB); each is now read once per
#: worker. A node is immutable, and a host's own name is set on a copy (:func:`_lint_host`).
_MODELS: dict[tuple[int, int, int, int], Any] = {}
_MODELS_MAX = 64


def _load(src: Source):
    from ncclctl.inventory import load_model, load_snapshot

    if src.kind == "model":
        try:
            st = os.stat(src.path)
        except OSError:
            return load_model(src.path)  # says what is wrong with the path
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        node = _MODELS.get(key)
        if node is None:
            node = load_model(src.path)
            if len(_MODELS) >= _MODELS_MAX:
                _MODELS.clear()
            _MODELS[key] = node
        return node
    if not os.path.exists(src.path):
        from ncclctl.errors import InputError

        raise InputError("no such snapshot", path=src.path, fix="give snapshot folders, .tar.gz files or model JSONs")
    return load_snapshot(src.path)


def lint_host(src: Source, config=None, expect=None, only: tuple[str, ...] | None = None,
              timeout: float | None = None) -> HostResult:
    """Load one host and run the node rules on it (in a worker, or inline) within ``timeout`` seconds (a host past
    it is reported as such, the others go on). ``only``: rule ids to run."""
    if config is None:  # in a worker: what lint_fleet set before forking
        config, expect, only = _STATE["config"], _STATE.get("expect"), _STATE.get("only")
        timeout = _STATE.get("timeout")
    if src.kind == "facts":
        return _facts_host(src, config, only)
    if src.kind == "prom":
        from ncclctl.lint.fleet_prom import textfile_host

        return textfile_host(src, config, _wanted(config, only))
    try:
        with host_deadline(timeout):
            return _lint_host(src, config, expect, only)
    except HostTimeout:
        from ncclctl.errors import SourceUnavailable

        err = SourceUnavailable(f"host not loaded and linted within {timeout:g} s: its snapshot or model is too big "
                                f"or a read hangs", path=src.path,
                                fix="check the snapshot (ncclctl probe --root PATH), or raise --host-timeout")
        doc = err.to_dict()
        doc["error"] = "Timeout"
        return HostResult(host=src.name or src.path, source=src.path, error=doc)


def _lint_host(src: Source, config, expect, only: tuple[str, ...] | None) -> HostResult:
    from ncclctl.errors import NcclctlError
    from ncclctl.lint.context import Ctx
    from ncclctl.lint.engine import run, selected

    try:
        node = _load(src)
    except NcclctlError as exc:
        return HostResult(host=src.name or src.path, source=src.path, error=exc.to_dict())
    host = src.name or node.hostname
    if src.name and node.hostname != src.name:
        # Findings name the host as the inventory does; rules that fall back to the hostname get it too.
        import dataclasses

        node = dataclasses.replace(node, hostname=src.name)
    ctx = Ctx(node=node, expect=expect, source=src.path)
    findings = run(ctx, config, only=only)
    rules = [r.id for r in selected(config, only=only, has_expect=expect is not None, host=host)]
    plan = ctx.rails  # computed once for the node rules and the fleet facts
    facts = fleet_facts(node, plan) if plan is not None else fleet_facts(node)
    if src.labels:
        facts["labels"] = dict(src.labels)
    return HostResult(host=host, source=src.path, findings=findings, rules=rules, facts=facts)


def _lint_chunk(chunk: list[tuple[int, Source]]) -> list[tuple[int, HostResult]]:
    return [(i, lint_host(src)) for i, src in chunk]


def lint_fleet(sources: list[Source], config, *, expect=None, jobs: int | None = None,
               only: tuple[str, ...] | None = None,
               progress: Callable[[int, int], None] | None = None,
               host_timeout: float | None = HOST_TIMEOUT) -> FleetResult:
    """Lint every host (in ``jobs`` forked workers), then run the FLT rules across them.
    ``only``: run just these rule ids (node and fleet rules alike). ``host_timeout``: seconds per host."""
    from ncclctl.registry import all_rules

    all_rules()  # import every rule module before forking, so workers start warm
    _init(config, expect, only, host_timeout)
    total = len(sources)
    jobs = max(1, jobs or os.cpu_count() or 1)
    results: list[HostResult | None] = [None] * total
    shared = _Shared()
    done = 0
    if jobs == 1 or total < 4 or all(s.kind in ("facts", "prom") for s in sources):
        # facts documents are read, not probed (~1 ms a host): no workers to fork and results to pickle back
        for i, src in enumerate(sources):
            results[i] = shared.host(lint_host(src, config, expect, only, host_timeout))
            done += 1
            if progress:
                progress(done, total)
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        jobs = min(jobs, total)
        size = max(1, min(16, total // (jobs * 8) or 1))
        indexed = list(enumerate(sources))
        chunks = [indexed[i:i + size] for i in range(0, total, size)]
        ctx = multiprocessing.get_context("fork") if sys.platform.startswith("linux") else None
        with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init,
                                 initargs=(config, expect, only, host_timeout)) as pool:
            futures = [pool.submit(_lint_chunk, c) for c in chunks]
            for fut in as_completed(futures):
                for i, res in fut.result():
                    results[i] = shared.host(res)  # each came unpickled: its own copy of what hosts share
                    done += 1
                if progress:
                    progress(done, total)
    hosts = [r for r in results if r is not None]
    _disambiguate(hosts)
    notes: list[str] = []
    fleet = _run_fleet_rules(hosts, config, only, notes, shared)
    for h in hosts:
        h.findings.sort(key=sort_key)
    return FleetResult(hosts=hosts, fleet=sorted(fleet, key=sort_key), notes=notes)


class _Shared:
    """What the hosts' results hold alike, held once for the run (10,000 hosts of one model held 21 KB a host):
    the list of rule ids that ran (one list per distinct list: nothing writes one in place, a host that runs more
    rules is given another) and each fleet fact's value (a dict or list) equal to another host's, compared by its
    ``repr`` (JSON-like data: equal text, equal value). Facts are read, never written, once a host is linted."""

    #: distinct fact values kept for sharing (beyond it, values are left as they came)
    MAX_FACTS = 1 << 16

    def __init__(self) -> None:
        self._rules: dict[tuple[str, ...], list[str]] = {}
        self._facts: dict[tuple[str, str], Any] = {}

    def rules(self, ids: Iterable[str]) -> list[str]:
        key = tuple(ids)
        got = self._rules.get(key)
        if got is None:
            got = self._rules[key] = [sys.intern(r) for r in key]
        return got

    def host(self, h: HostResult) -> HostResult:
        h.rules = self.rules(h.rules)
        h.source = sys.intern(h.source)  # the model file every host of an inventory names
        if h.facts:
            memo = self._facts
            facts: dict[str, Any] = {}
            for k, v in h.facts.items():
                k = sys.intern(k)
                if isinstance(v, (dict, list)) and v:
                    key = (k, repr(v))
                    got = memo.get(key)
                    if got is not None:
                        v = got
                    elif len(memo) < self.MAX_FACTS:
                        memo[key] = v
                facts[k] = v
            h.facts = facts
        return h


def _disambiguate(hosts: list[HostResult]) -> None:
    """Two snapshots of one host name (copies, re-captures) stay apart: name@source."""
    counts = Counter(h.host for h in hosts)
    for h in hosts:
        if counts[h.host] > 1:
            old = h.host
            h.host = f"{old}@{h.source}"
            h.findings = [f if f.subject != old else _resubject(f, h.host) for f in h.findings]




def _resubject(f: Finding, subject: str) -> Finding:
    import dataclasses

    return dataclasses.replace(f, subject=subject)


def _run_fleet_rules(hosts: list[HostResult], config, only: tuple[str, ...] | None = None,
                     notes: list[str] | None = None, shared: _Shared | None = None) -> list[Finding]:
    """The fleet rules once over the loaded hosts' facts (the engine's rule loop); each finding goes to the host it
    names; the findings about the fleet as a whole (no majority) are returned. Every host lists every fleet rule as
    run (JUnit testcases), unless ignored for it, or its source lacks a fact the rule needs (:data:`NEEDS`): then
    the rule leaves the host out, and ``notes`` gets a line naming the hosts, the facts and the rules."""
    from ncclctl.lint.rules_fleet import NEEDS
    from ncclctl.report.fleet import FLEET
    from ncclctl.lint.engine import run_each, selected

    loaded = [h for h in hosts if h.facts is not None]
    by_host = {h.host: h for h in loaded}
    rules = selected(config, scope="fleet", only=only)
    absent = {h.host: set(h.facts.get("_absent") or ()) for h in loaded if h.facts is not None and h.facts.get("_absent")}
    skipped: dict[tuple[str, ...], dict[str, set[str]]] = {}  # missing facts -> rule -> hosts
    ids = [r.id for r in rules]
    shared = shared or _Shared()
    for h in loaded:
        lacking = absent.get(h.host)
        ran = list(h.rules)  # a new list: a host's list may be shared (_Shared)
        if config.ignores or lacking:
            for rid in ids:
                lacks = lacking & set(NEEDS.get(rid, ())) if lacking else None
                if lacks:
                    skipped.setdefault(tuple(sorted(lacks)), {}).setdefault(rid, set()).add(h.host)
                elif not config.ignored(h.host, rid):
                    ran.append(rid)
        else:
            ran.extend(ids)
        h.rules = shared.rules(ran)
    if notes is not None and skipped:
        notes.extend(_absent_notes(skipped))
    fleet: list[Finding] = []
    if len(loaded) < 2:
        return fleet
    every = [(h.host, h.facts) for h in loaded if h.facts is not None]
    fctx = FleetCtx(hosts=every)
    for r in rules:
        need = NEEDS.get(r.id, ())
        ctx = fctx
        if absent and need:
            ctx = FleetCtx(hosts=[(host, f) for host, f in every if not absent.get(host, set()) & set(need)])
            if len(ctx.hosts) < 2:
                continue
        crash = [host for host, _ in ctx.hosts]
        for _, found in run_each([r], ctx, config, "", crash_hosts=crash):
            for f in found:
                if f.subject == FLEET and FLEET not in by_host:
                    fleet.append(f)
                    continue
                owner = by_host.get(f.subject)
                if owner is not None and not config.ignored(owner.host, r.id):
                    owner.findings.append(f)
    return fleet


#: How the fleet facts are named when a source lacks them.
FACT_NAMES = {"driver": "NVIDIA driver", "gpus": "GPUs", "rail_layout": "rail layout", "nics": "RDMA device count",
              "firmware": "HCA firmware", "rails": "rails (rate, MTU)", "nccl": "NCCL settings",
              "net_ports": "RDMA ports", "roce_addresses": "RoCE addresses", "nvlink": "NVLink domain (IMEX)"}


def _absent_notes(skipped: dict[tuple[str, ...], dict[str, set[str]]]) -> list[str]:
    """One line per group of hosts whose sources lack the same facts: the hosts (hostlist form), the facts, the rules
    that left them out."""
    from ncclctl.names import hostlist, natural_key

    per_host: dict[str, tuple[set[str], set[str]]] = {}
    for lacks, per_rule in skipped.items():
        for rule_id, hosts in per_rule.items():
            for h in hosts:
                facts, rules = per_host.setdefault(h, (set(), set()))
                facts.update(lacks)
                rules.add(rule_id)
    groups: dict[tuple[tuple[str, ...], tuple[str, ...]], list[str]] = {}
    for h, (facts, rules) in per_host.items():
        order = list(FACT_NAMES)
        key = (tuple(sorted(facts, key=lambda k: order.index(k) if k in order else len(order))), tuple(sorted(rules)))
        groups.setdefault(key, []).append(h)
    lines = []
    for (facts_t, rules_t), names in sorted(groups.items(), key=lambda kv: natural_key(min(kv[1], key=natural_key))):
        names.sort(key=natural_key)
        what = ", ".join(FACT_NAMES.get(k, k) for k in facts_t)
        lines.append(f"{hostlist(names)}: not in the source (Prometheus textfile): {what}; {', '.join(rules_t)} did "
                     f"not compare {'this host' if len(names) == 1 else 'these hosts'} (not counted as agreeing)")
    return lines


def account_for(result: FleetResult, names: list[str], inventory: str) -> None:
    """Hold the hosts read against the inventory's ``names``: each named host no source spoke for is added as a
    silent host (an error, exit 3); hosts read that the inventory does not name get one note. A name matches a
    host exactly, or by its short name (``gpu001`` and ``gpu001.cluster.local``)."""
    from ncclctl.errors import ExitCode
    from ncclctl.names import hostlist, natural_key
    from ncclctl.report.fleet import SILENT

    def short(n: str) -> str:
        return n.split(".", 1)[0]

    read = [h.host.split("@", 1)[0] for h in result.hosts]
    for h in result.hosts:  # an unreadable file is named by its path: DEST/HOST/etc/ansible/... or HOST.prom
        if h.error is not None and h.source:
            parts = h.source.replace("\\", "/").split("/")
            read += parts + [os.path.splitext(parts[-1])[0]]
    exact = set(read)
    shorts = {short(n) for n in read}
    wanted = set(names)
    wanted_short = {short(n) for n in names}
    silent = [n for n in names if n not in exact and short(n) not in shorts]
    for n in sorted(silent, key=natural_key):
        result.hosts.append(HostResult(host=n, source=inventory, error={
            "error": SILENT, "message": f"named by the inventory ({inventory}), no facts document or textfile: "
                                        f"facts not collected",
            "path": None, "line": None, "column": None,
            "fix": "run the facts play (or the textfile timer) on the host / check the host (down, unreachable, "
                   "ncclctl not installed)",
            "exit_code": int(ExitCode.INVALID_INPUT)}))
    extra = sorted({h.host for h in result.hosts if h.error is None
                    and h.host.split("@", 1)[0] not in wanted and short(h.host.split("@", 1)[0]) not in wanted_short},
                   key=natural_key)
    if extra:
        result.notes.append(f"{hostlist(extra)}: not named by the inventory ({inventory}), but facts were read for "
                            f"{'it' if len(extra) == 1 else 'them'}: linted and compared; add "
                            f"{'it' if len(extra) == 1 else 'them'} to the inventory, or remove the stale facts")


def exit_code(result: FleetResult, fail_on: Severity) -> int:
    """``fleet lint``'s exit status: 3 when a host could not be read, else 4 when a host ran past its deadline,
    else 1 when a finding reaches ``fail_on``, else 0."""
    from ncclctl import report
    from ncclctl.errors import ExitCode

    codes = {int(h.error.get("exit_code", ExitCode.INVALID_INPUT)) for h in result.hosts if h.error is not None}
    if codes:
        return int(ExitCode.INVALID_INPUT) if int(ExitCode.INVALID_INPUT) in codes else max(codes)
    return int(ExitCode.FINDINGS) if report.fails(result.findings(), fail_on) else int(ExitCode.OK)
