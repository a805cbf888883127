"""Prometheus: findings as node_exporter textfile-collector metrics (``--format prom``).

A site points node_exporter's ``--collector.textfile.directory`` at a folder and has each node write one file
there per check (``ncclctl lint --format prom --output /var/lib/node_exporter/textfile/ncclctl-lint.prom``, from
cron, a systemd timer or the scheduler's health check). The file is written atomically (temp file in the same
folder, then rename), so node_exporter never reads half of it.

The metrics, every family with the same ``# HELP`` and ``# TYPE`` whatever the command, so that several
commands' files in one folder merge into one family (node_exporter refuses a family whose help differs between
files):

* ``ncclctl_up{command}``: 1 when the run could read its input and run its rules, 0 when it could not (the
  file is still written, with only this, the timestamp and no findings: an alert on ``ncclctl_up == 0`` sees it).
* ``ncclctl_last_run_timestamp_seconds{command}``: when the run ended (Unix time; ``SOURCE_DATE_EPOCH`` when set).
* ``ncclctl_ok{command}``: 1 when no finding reached ``--fail-on``.
* ``ncclctl_rules_run{command}``: how many rules ran (commands that run a rule set).
* ``ncclctl_fleet_hosts{command,state}`` (fleet lint): hosts linted, unreadable, and silent (named by the
  inventory, no facts: ``fleet lint --facts --inventory``).
* ``ncclctl_findings{command,severity}``: findings per severity; all three severities always present.
* ``ncclctl_rule_findings{command,rule,severity,device}``: findings per rule, severity and device (the finding's
  subject: ``mlx5_3``, ``GPU2``, ``/etc/nccl.conf``). A series exists only while its finding does; when the fault
  is fixed the next run drops it and Prometheus marks it stale.

``lint`` also writes the node's fleet facts (what ``fleet lint`` compares across hosts, so that ``fleet lint
--facts DIR`` can read a folder of these files), as info metrics (value 1, the fact in the labels) and gauges:

* ``ncclctl_node_info{command,hostname,driver,gpus,rail_layout}``;
* ``ncclctl_rdma_devices{command}``: RDMA devices on the node;
* ``ncclctl_nic_firmware_info{command,nic_group,fw_ver}``: per HCA type and board id;
* ``ncclctl_rail_info{command,rail,hca,link_layer,width}``, ``ncclctl_rail_up{command,rail}``,
  ``ncclctl_rail_rate_gbps{command,rail}``, ``ncclctl_rail_mtu_bytes{command,rail}`` (the RDMA active MTU),
  ``ncclctl_rail_netdev_mtu_bytes{command,rail}`` (the interface's MTU);
* ``ncclctl_nccl_setting_info{command,name,value}``: each NCCL_* variable's effective value (sensitive ones
  REDACTED, as in the facts document);
* ``ncclctl_rdma_port_up{command,nic,port}``: the InfiniBand/Ethernet ports and whether they are ACTIVE;
* ``ncclctl_fact_series{command,fact}``: how many series each fact above has in this file (0 for an empty one),
  so that a reader tells "none" from "not written" (an older ncclctl, or a fact over :data:`MAX_FACT_SERIES`).

Not written: the RoCE v2 addresses and the multi-node NVLink domain (IMEX node lists): per-host addresses and
lists of other hosts, which ``fleet lint`` reads from facts documents or snapshots only.

Cardinality is bounded: label values come from fixed vocabularies (commands, rule ids of the registry,
severities) or from device names; a subject that does not look like a device name (free text, over 64
characters) is counted under ``device="other"``, and past :data:`MAX_DEVICE_SERIES` series per file the rest
is counted per rule and severity under ``device="more"`` (and ``host="more"``). No message text ever becomes a label.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Iterable

from ncclctl.findings import Finding, Severity

#: ``rule_findings`` series per file at most (a node has tens of devices; a fleet file one host per series).
MAX_DEVICE_SERIES = 500
#: Series of one fact per file at most (rails, ports, NCCL variables: tens on a node); a fact past it is not written.
MAX_FACT_SERIES = 256
#: The longest fact label value written as it is; a longer one, or one with bytes outside printable ASCII, is written
#: as its digest (``sha256:`` and 16 hex digits): bounded, and hosts still compare equal exactly when the values do.
FACT_VALUE_MAX = 128

_DEVICE_OK = re.compile(r"[A-Za-z0-9_.:/@+\-\[\],]{1,64}")

HELP = {
    "ncclctl_up": "1 when the last ncclctl run could read its input and run its checks, 0 when it could not.",
    "ncclctl_last_run_timestamp_seconds": "When the last ncclctl run ended, in seconds since the Unix epoch.",
    "ncclctl_ok": "1 when no finding of the last ncclctl run reached its --fail-on severity, else 0.",
    "ncclctl_rules_run": "Rules the last ncclctl run ran.",
    "ncclctl_findings": "Findings of the last ncclctl run, per severity.",
    "ncclctl_rule_findings": "Findings of the last ncclctl run, per rule, severity and device.",
    "ncclctl_fleet_hosts": "Hosts of the last ncclctl fleet run: linted, unreadable (their snapshot, model or facts could not be used), or silent (named by the inventory, no facts).",
    "ncclctl_node_info": "The node as ncclctl lint saw it: host name, NVIDIA driver, GPUs, rail layout (value 1).",
    "ncclctl_rdma_devices": "RDMA devices on the node.",
    "ncclctl_nic_firmware_info": "HCA firmware per HCA type and board id (value 1).",
    "ncclctl_rail_info": "The node's rails: RDMA device and port, link layer, width (value 1).",
    "ncclctl_rail_up": "1 when the rail's port is ACTIVE, else 0.",
    "ncclctl_rail_rate_gbps": "The rail's link rate in Gb/s.",
    "ncclctl_rail_mtu_bytes": "The rail's RDMA active MTU in bytes.",
    "ncclctl_rail_netdev_mtu_bytes": "The MTU of the rail's network interface in bytes.",
    "ncclctl_nccl_setting_info": "Effective value of an NCCL_* variable on the node (value 1; sensitive values REDACTED).",
    "ncclctl_rdma_port_up": "1 when the RDMA port (InfiniBand or Ethernet) is ACTIVE, else 0.",
    "ncclctl_fact_series": "Series each fleet fact has in this file (0: none on the node); a fact not listed was not written.",
}

#: The facts a ``lint`` textfile carries (the ``fact`` label of ``ncclctl_fact_series``), with their families.
FACT_FAMILIES = {
    "node": ("ncclctl_node_info",),
    "nics": ("ncclctl_rdma_devices",),
    "firmware": ("ncclctl_nic_firmware_info",),
    "rails": ("ncclctl_rail_info", "ncclctl_rail_up", "ncclctl_rail_rate_gbps", "ncclctl_rail_mtu_bytes",
              "ncclctl_rail_netdev_mtu_bytes"),
    "nccl": ("ncclctl_nccl_setting_info",),
    "net_ports": ("ncclctl_rdma_port_up",),
}

_SEVERITIES = (Severity.ERROR, Severity.WARNING, Severity.INFO)


def device_label(subject: str) -> str:
    """The ``device`` label of a finding's subject: the subject when it is a device-like name, else ``other``."""
    return subject if _DEVICE_OK.fullmatch(subject) else "other"


def _escape(value: str) -> str:
    # The exposition format's label value escapes.
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(pairs: Iterable[tuple[str, str]]) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in pairs) + "}"


def _number(value: float) -> str:
    if float(value).is_integer():
        return str(int(value))
    return repr(float(value))


def _family(name: str, samples: list[tuple[tuple[tuple[str, str], ...], float]]) -> list[str]:
    lines = [f"# HELP {name} {HELP[name]}", f"# TYPE {name} gauge"]
    lines += [f"{name}{_labels(labels)} {_number(value)}" for labels, value in samples]
    return lines


def fact_value(value: object) -> str:
    """A fact as a label value: itself when it is printable ASCII of at most :data:`FACT_VALUE_MAX` characters, else
    ``sha256:`` and the first 16 hex digits of its UTF-8 digest."""
    text = "" if value is None else str(value)
    if len(text) <= FACT_VALUE_MAX and all(" " <= c <= "~" for c in text):
        return text
    import hashlib

    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


Samples = list[tuple[tuple[tuple[str, str], ...], float]]


def fact_samples(command: str, hostname: str, facts: dict[str, Any]) -> dict[str, Samples]:
    """The fact families of one node (see the module's docstring), from its fleet facts as the facts document
    publishes them (:func:`ncclctl.lint.fleet.facts_to_json`: snake_case keys, the firmware as a list)."""
    cmd = (("command", command),)
    v = fact_value
    rails = sorted(facts.get("rails") or (), key=lambda r: r["rail"])
    out: dict[str, Samples] = {
        "ncclctl_node_info": [(cmd + (("hostname", v(hostname)), ("driver", v(facts.get("driver"))),
                                      ("gpus", v(facts.get("gpus"))), ("rail_layout", v(facts.get("rail_layout")))), 1)],
        "ncclctl_rdma_devices": [(cmd, int(facts.get("nics") or 0))],
        "ncclctl_nic_firmware_info": [(cmd + (("nic_group", v(d["nic"])), ("fw_ver", v(d["fw_ver"]))), 1)
                                      for d in facts.get("firmware") or ()],
        "ncclctl_rail_info": [(cmd + (("rail", str(r["rail"])), ("hca", v(r.get("hca"))),
                                      ("link_layer", v(r.get("link_layer"))), ("width", v(r.get("width")))), 1)
                              for r in rails],
        "ncclctl_rail_up": [(cmd + (("rail", str(r["rail"])),), 1 if r.get("active", True) else 0) for r in rails],
        "ncclctl_rail_rate_gbps": [(cmd + (("rail", str(r["rail"])),), r["rate_gbps"]) for r in rails
                                   if r.get("rate_gbps") is not None],
        "ncclctl_rail_mtu_bytes": [(cmd + (("rail", str(r["rail"])),), r["mtu"]) for r in rails
                                   if r.get("mtu") is not None],
        "ncclctl_rail_netdev_mtu_bytes": [(cmd + (("rail", str(r["rail"])),), r["netdev_mtu"]) for r in rails
                                          if r.get("netdev_mtu") is not None],
        "ncclctl_nccl_setting_info": [(cmd + (("name", v(k.upper())), ("value", v(val))), 1)
                                      for k, val in sorted((facts.get("nccl") or {}).items())],
        "ncclctl_rdma_port_up": [(cmd + (("nic", v(nic)), ("port", str(port))), 1 if up else 0)
                                 for nic, port, up in facts.get("net_ports") or ()],
    }
    # A fact whose series would pass the cap is left out whole (and so unlisted in ncclctl_fact_series): a reader
    # then says it is not in the source, never compares half of it.
    for fact, names in FACT_FAMILIES.items():
        if any(len(out[n]) > MAX_FACT_SERIES for n in names):
            for n in names:
                del out[n]
    out["ncclctl_fact_series"] = [(cmd + (("fact", fact),), sum(len(out[n]) for n in names))
                                  for fact, names in FACT_FAMILIES.items() if all(n in out for n in names)]
    return out


def textfile(command: str, *, now: float, findings: Iterable[Finding] = (), up: bool = True, ok: bool = True,
             rules_run: int | None = None, host_label: bool = False,
             hosts: tuple[int, int, int] | None = None, facts: tuple[str, dict[str, Any]] | None = None) -> str:
    """The textfile for one run of ``command`` (``lint``, ``fleet lint``, ``log check``, ``perf check``).

    ``host_label`` (fleet lint): the rule series also carry each finding's ``host`` (its :attr:`Finding.host`);
    they stay bounded by :data:`MAX_DEVICE_SERIES`. ``facts`` (lint): (host name, the node's fleet facts as
    JSON), written as the fact families (:func:`fact_samples`)."""
    findings = list(findings)
    cmd = (("command", command),)
    out: list[str] = []
    out += _family("ncclctl_up", [(cmd, 1 if up else 0)])
    out += _family("ncclctl_last_run_timestamp_seconds", [(cmd, round(now, 3))])
    if up:
        out += _family("ncclctl_ok", [(cmd, 1 if ok else 0)])
        if rules_run is not None:
            out += _family("ncclctl_rules_run", [(cmd, rules_run)])
        if hosts is not None:
            out += _family("ncclctl_fleet_hosts", [(cmd + (("state", "linted"),), hosts[0]),
                                                   (cmd + (("state", "unreadable"),), hosts[1]),
                                                   (cmd + (("state", "silent"),), hosts[2])])
        per_severity = Counter(f.severity for f in findings)
        out += _family("ncclctl_findings", [(cmd + (("severity", s.value),), per_severity[s]) for s in _SEVERITIES])
        keyed: Counter = Counter()
        for f in findings:
            keyed[((f.host or "") if host_label else "", f.rule, f.severity.rank, f.severity.value, device_label(f.subject))] += 1
        if keyed:
            from ncclctl.names import natural_key

            ordered = sorted(keyed, key=lambda k: (natural_key(k[0]), natural_key(k[1]), -k[2], natural_key(k[4])))
            samples: list[tuple[tuple[tuple[str, str], ...], float]] = []
            spill: Counter = Counter()
            for key in ordered:
                host, rule, _, severity, device = key
                base = cmd + ((("host", host),) if host_label else ()) + (("rule", rule), ("severity", severity))
                if len(samples) < MAX_DEVICE_SERIES:
                    samples.append((base + (("device", device),), keyed[key]))
                else:  # past the cap: one series per rule and severity (host "more" too: a fleet's hosts)
                    spill[cmd + ((("host", "more"),) if host_label else ()) + (("rule", rule), ("severity", severity))] += keyed[key]
            samples += [(base + (("device", "more"),), n) for base, n in spill.items()]
            out += _family("ncclctl_rule_findings", samples)
        if facts is not None:
            for name, fact in fact_samples(command, *facts).items():
                if fact:
                    out += _family(name, fact)
    return "\n".join(out) + "\n"


def fleet_textfile(result: Any, fail_on: Severity, *, now: float) -> str:
    """``fleet lint --format prom``: one file for the fleet (the admin node's node_exporter), every rule series
    with its ``host`` label; ``ncclctl_ok`` is 0 when a finding reaches ``fail_on`` or a host is unreadable or
    silent."""
    from dataclasses import replace

    from ncclctl.report.fleet import FLEET

    findings = [replace(f, host=h.host) for h in result.hosts for f in h.findings]
    findings += [replace(f, host=FLEET) for f in result.fleet]
    unreadable = sum(1 for h in result.hosts if h.error is not None and not h.silent)
    silent = sum(1 for h in result.hosts if h.silent)
    ok = not unreadable and not silent and not any(f.severity.rank >= fail_on.rank for f in findings)
    return textfile("fleet lint", now=now, findings=findings, ok=ok, host_label=True,
                    hosts=(len(result.hosts) - unreadable - silent, unreadable, silent))
