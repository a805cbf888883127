"""``fleet lint --facts`` over Prometheus textfiles: the ``.prom`` file ``ncclctl lint --format prom`` writes on each
node (node_exporter's textfile collector folder), collected per host.

What a textfile gives, and what it cannot:

* the node findings as counts per rule, severity and device (``ncclctl_rule_findings``): each becomes a finding of
  that rule on that device, titled by the rule, with the rule's documented fix; the run's own messages and
  evidence are not in the file;
* the fleet facts the file lists in ``ncclctl_fact_series`` (driver, GPUs, rail layout, RDMA device count, HCA
  firmware, rails with rate and MTUs, NCCL settings, RDMA ports), compared as facts documents' are;
* never the RoCE v2 addresses nor the multi-node NVLink domain (not written into textfiles), nor any fact the file
  does not list (an ncclctl older than the fact families, or a fact over the writer's cap): a fleet rule that
  needs one of them leaves the host out, and the report says so ("not in the source"), never counts it as agreeing.

The host is the ``hostname`` of ``ncclctl_node_info``; in a file without it, the ``host`` or ``instance`` label
every sample carries (a port after ``:`` dropped); else the file's name without ``.prom``.
"""

from __future__ import annotations

import os
import re
from typing import Any

from ncclctl.errors import InputError, NcclctlError
from ncclctl.findings import Finding, Severity
from ncclctl.parsers.promtext import FIX, Sample, parse_textfile

#: The one command whose textfile ``fleet lint`` reads (``log check`` and ``perf check`` files hold no node facts).
COMMAND = "lint"

#: Facts (``ncclctl_fact_series``'s ``fact`` label) -> the fleet-facts keys they fill.
FACT_KEYS = {
    "node": ("driver", "gpus", "rail_layout"),
    "nics": ("nics",),
    "firmware": ("firmware",),
    "rails": ("rails",),
    "nccl": ("nccl",),
    "net_ports": ("net_ports",),
}

#: How many bytes of a file found in a folder are looked at to tell an ncclctl lint textfile from node_exporter's
#: other textfiles (ours start with the ncclctl_up family).
SNIFF_BYTES = 64 << 10
_MARK = re.compile(rb'(?m)^[ \t]*ncclctl_up\{[^}\n]*\bcommand="lint"')


def is_lint_textfile(path: str) -> bool:
    """Whether the file (found in a folder) is an ``ncclctl lint`` textfile; other collectors' files, and other
    ncclctl commands' (``log check``, ``fleet lint``), are left out of the walk. Unreadable files are kept, to be
    reported by name."""
    from ncclctl.inputs import read_bytes

    try:
        head = read_bytes(path, "textfile", limit=SNIFF_BYTES)
    except NcclctlError:
        return True
    return head is not None and _MARK.search(head) is not None


def _severity(s: Sample, source: str) -> Severity:
    try:
        return Severity(s.label("severity") or "")
    except ValueError:
        raise InputError(f"{s.name}: severity {s.label('severity')!r} is none of error, warning, info", path=source,
                         line=s.line, fix=FIX) from None


def _count(s: Sample, source: str) -> int:
    v = s.value
    if not (v == v and 0 <= v <= 1_000_000 and float(v).is_integer()):
        raise InputError(f"{s.name}: {v!r} is not a count", path=source, line=s.line, fix=FIX)
    return int(v)


def _host_label(samples: list[Sample]) -> str | None:
    """The ``host`` or ``instance`` label all samples share (an exported or relabelled file), port dropped."""
    for key in ("host", "instance"):
        values = {s.label(key) for s in samples}
        if len(values) == 1:
            v = values.pop()
            if v:
                if v.count(":") == 1 and v.rsplit(":", 1)[1].isdigit():  # host:9100, not an IPv6 address
                    v = v.rsplit(":", 1)[0]
                return v
    return None


def read_textfile(path: str) -> dict[str, Any]:
    """The host named by one ``ncclctl lint`` textfile: ``{"host", "up", "findings": [(rule, severity, device,
    count, line)], "facts": {...} (the keys it has), "absent": (fleet-facts keys not in the source)}``.
    Errors (:class:`InputError`, exit 3) name the file and line."""
    from ncclctl.inputs import decode, read_bytes

    data = read_bytes(path, "textfile")
    assert data is not None
    if b"\0" in data[:8192]:
        raise InputError("a binary file (NUL bytes), not a Prometheus textfile", path=path, fix=FIX)
    text = decode(data, path, fix=FIX)
    parsed = parse_textfile(text, source=path)
    samples = [s for s in parsed.samples if s.name.startswith("ncclctl_")]
    if not samples:
        raise InputError("no ncclctl_* metrics: not a textfile written by 'ncclctl lint --format prom'", path=path,
                         fix=FIX)
    commands = {s.label("command") for s in samples}
    if commands != {COMMAND}:
        other = ", ".join(sorted(repr(c) for c in commands if c != COMMAND)) or "none"
        hint = (" (a 'fleet lint' file holds many hosts: give the nodes' own files)" if "fleet lint" in commands
                else "")
        raise InputError(f"the metrics are of command {other}, not 'lint'{hint}", path=path,
                         fix="give the files 'ncclctl lint --format prom' writes on each node")
    by_name: dict[str, list[Sample]] = {}
    for s in samples:
        by_name.setdefault(s.name, []).append(s)
    up = by_name.get("ncclctl_up")
    if not up:
        raise InputError("no ncclctl_up sample: a cut or edited textfile", path=path, fix=FIX)
    info = by_name.get("ncclctl_node_info", [])
    if len(info) > 1:
        raise InputError("more than one ncclctl_node_info sample: one file per host", path=path, line=info[1].line,
                         fix=FIX)
    host = info[0].label("hostname") if info else None
    if not host:
        host = _host_label(samples)
    if not host:
        stem = os.path.basename(path)
        stem = stem[:-5] if stem.endswith(".prom") else stem
        if not stem or stem.startswith("ncclctl"):
            raise InputError("cannot tell which host wrote this textfile (no ncclctl_node_info, no host or instance "
                             "label, and the file is not named after a host)", path=path,
                             fix="name each host's file HOST.prom when collecting them, or write them with this "
                                 "ncclctl (it records the host name)")
        host = stem
    out: dict[str, Any] = {"host": host, "up": up[0].value == 1, "findings": [], "facts": {}, "absent": ()}
    if not out["up"]:
        return out
    for s in by_name.get("ncclctl_rule_findings", []):
        rule, device = s.label("rule"), s.label("device")
        if not rule or device is None:
            raise InputError("ncclctl_rule_findings without its rule or device label", path=path, line=s.line,
                             fix=FIX)
        out["findings"].append((rule, _severity(s, path), device, _count(s, path), s.line))
    out["facts"], out["absent"] = _facts(by_name, path)
    return out


def _facts(by_name: dict[str, list[Sample]], path: str) -> tuple[dict[str, Any], tuple[str, ...]]:
    from ncclctl.report.prom import FACT_FAMILIES

    listed: dict[str, int] = {}
    for s in by_name.get("ncclctl_fact_series", []):
        fact = s.label("fact") or ""
        if fact in FACT_FAMILIES:
            listed[fact] = _count(s, path)
    facts: dict[str, Any] = {}
    for fact, names in FACT_FAMILIES.items():
        if fact not in listed:
            continue
        have = sum(len(by_name.get(n, ())) for n in names)
        if have != listed[fact]:
            raise InputError(f"ncclctl_fact_series says fact {fact!r} has {listed[fact]} series, the file has {have}: "
                             f"a cut or edited textfile", path=path, fix=FIX)
        facts.update(_fact(fact, by_name, path))
    absent = tuple(k for fact, keys in FACT_KEYS.items() if fact not in listed for k in keys)
    return facts, absent + ("roce_addresses", "nvlink")


def _need(s: Sample, key: str, path: str) -> str:
    v = s.label(key)
    if v is None:
        raise InputError(f"{s.name} without its {key!r} label", path=path, line=s.line, fix=FIX)
    return v


def _int_label(s: Sample, key: str, path: str) -> int:
    v = _need(s, key, path)
    if not v.isdigit() or len(v) > 9:
        raise InputError(f"{s.name}: label {key}={v!r} is not a number", path=path, line=s.line, fix=FIX)
    return int(v)


def _num(v: float) -> int | float:
    return int(v) if float(v).is_integer() else float(v)


def _fact(fact: str, by_name: dict[str, list[Sample]], path: str) -> dict[str, Any]:
    """The fleet-facts keys of one listed fact, as :func:`ncclctl.lint.fleet.facts_from_json` gives them."""
    if fact == "node":
        info = by_name.get("ncclctl_node_info") or []
        if len(info) != 1:
            raise InputError("fact 'node' listed without one ncclctl_node_info sample", path=path, fix=FIX)
        s = info[0]
        return {"driver": _need(s, "driver", path) or None, "gpus": _need(s, "gpus", path),
                "rail_layout": _need(s, "rail_layout", path)}
    if fact == "nics":
        s = by_name["ncclctl_rdma_devices"][0]
        return {"nics": _count(s, path)}
    if fact == "firmware":
        fw = {}
        for s in by_name.get("ncclctl_nic_firmware_info", []):
            fw[_need(s, "nic_group", path)] = _need(s, "fw_ver", path)
        return {"firmware": dict(sorted(fw.items()))}
    if fact == "rails":
        rails: dict[int, dict[str, Any]] = {}
        for s in by_name.get("ncclctl_rail_info", []):
            r = _int_label(s, "rail", path)
            rails[r] = {"rail": r, "hca": _need(s, "hca", path), "link_layer": _need(s, "link_layer", path),
                        "active": True}
            width = _need(s, "width", path)
            rails[r]["_width"] = width or None
        for name, key in (("ncclctl_rail_up", "active"), ("ncclctl_rail_rate_gbps", "rate_gbps"),
                          ("ncclctl_rail_mtu_bytes", "mtu"), ("ncclctl_rail_netdev_mtu_bytes", "netdev_mtu")):
            for s in by_name.get(name, []):
                r = _int_label(s, "rail", path)
                if r not in rails:
                    raise InputError(f"{name}: rail {r} has no ncclctl_rail_info", path=path, line=s.line, fix=FIX)
                rails[r][key] = s.value == 1 if key == "active" else _num(s.value)
        out = []
        for r in sorted(rails):
            d = rails[r]
            width = d.pop("_width")
            # the key order of rail_facts (equal dicts either way; the order keeps JSON output alike)
            entry = {k: d[k] for k in ("rail", "hca", "link_layer", "active")}
            if "rate_gbps" in d:
                entry["rate_gbps"] = d["rate_gbps"]
            if width:
                entry["width"] = width
            for k in ("mtu", "netdev_mtu"):
                if k in d:
                    entry[k] = d[k]
            out.append(entry)
        return {"rails": out}
    if fact == "nccl":
        return {"nccl": {_need(s, "name", path).upper(): _need(s, "value", path)
                         for s in by_name.get("ncclctl_nccl_setting_info", [])}}
    if fact == "net_ports":
        return {"net_ports": [(_need(s, "nic", path), _int_label(s, "port", path), s.value == 1)
                              for s in by_name.get("ncclctl_rdma_port_up", [])]}
    raise AssertionError(fact)  # pragma: no cover - FACT_FAMILIES and this function list the same facts


def textfile_host(src: Any, config: Any, wanted: dict[str, Any]) -> Any:
    """A host from its textfile (:class:`ncclctl.report.fleet.HostResult`): its recorded findings (the rules this run
    selects, with their configured severities) and the facts the file holds; an unreadable file, or one whose
    run could not look (``ncclctl_up 0``), is an unreadable host naming the file. ``wanted``: rule id -> configured
    severity (or None) of the node rules this run selects."""
    from ncclctl.registry import get
    from ncclctl.report.fleet import HostResult

    try:
        got = read_textfile(src.path)
        host = src.name or got["host"]
        if not got["up"]:
            raise InputError("the host's textfile says its last 'ncclctl lint' could not run (ncclctl_up 0)",
                             path=src.path, fix="run 'ncclctl lint' on the host and read its error")
    except NcclctlError as exc:
        return HostResult(host=src.name or src.path, source=src.path, error=exc.to_dict())
    if config.ignores:
        wanted = {rid: sev for rid, sev in wanted.items() if not config.ignored(host, rid)}
    findings = []
    for rule_id, severity, device, count, line in got["findings"]:
        if rule_id not in wanted:
            continue
        rule = get(rule_id)
        title = rule.title if rule is not None else rule_id
        f = Finding(rule=rule_id, severity=wanted[rule_id] or severity,
                    message=f"{title} (from the host's textfile: counts only; 'ncclctl lint' on the host gives the "
                            f"message)",
                    subject=device, fix=rule.fix if rule is not None else None,
                    evidence=(f"{src.path}:{line}",))
        findings.extend([f] * count)
    facts = dict(got["facts"])
    facts["_absent"] = got["absent"]
    return HostResult(host=host, source=src.path, findings=findings, rules=sorted({f.rule for f in findings}),
                      facts=facts)
