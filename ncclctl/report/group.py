"""Grouping of repeated findings for the human formats (text, Nagios).

Findings of one rule and severity whose message and fix are the same except for device names (interfaces, RDMA
devices, GPUs, PCI bus ids, GUIDs) become one :class:`Group`: one line that names every location, shows the first
finding's message and says how many are alike. Seven ROCE001 findings "ensNnp0 (mlx5_N port 1): ... no PFC" on
seven interfaces are one line naming the seven interfaces; twenty NTS025 infos on twenty ``<gpu>`` elements are
one line with the twenty line numbers.

Only findings that really say the same thing are grouped: apart from its own subject, a finding may name at most
:data:`MAX_VARYING` devices (its RDMA device, say), besides lists of device pairs (``GPU0<->GPU1 (PIX), ...``).
Five PCI001 findings that each list the GPU pairs behind their switch port, with the same ACS state and the same
fix, are one line naming the five ports (each port's own pairs are in the machine formats); a finding whose words
differ (another ACS state) stays apart. A fix that names many devices is no obstacle when it names the same ones in
each finding: PCI007's ports with the same ACS state and required mask share one boot line listing every port, and
are one line. Machine formats (JSON, SARIF, JUnit) never group.
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

from ncclctl.findings import Finding
from ncclctl.record import record

#: Device names a finding may name besides its subject and still be grouped with its likes.
MAX_VARYING = 2

_DEVICE = re.compile(
    r"(?<![A-Za-z0-9_:.])(?:"
    r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F]"  # PCI bus id (domain:bus:device.function)
    r"|GPU\d+"  # GPU index label
    r"|[a-z][a-z0-9]*_[a-z0-9_]*\d"  # RDMA device: mlx5_0, mlx5_bond_0, bnxt_re0
    r"|(?:en|eth|ib|bond)[a-z0-9]*\d[a-z0-9]*(?:\.\d+)?"  # netdev: ens1np0, enp29s0f0np0, eth0, ib0, bond0.100
    r"|0x[0-9a-fA-F]{8,}"  # GUID
    r")(?![A-Za-z0-9_])"
)


@record
class Group:
    """Findings that say the same thing about different devices (or lines): ``members[0]`` is shown."""

    members: tuple[Finding, ...]
    #: The members differ in the device pairs they list (each its own), not only in their subject.
    lists: bool = False

    @property
    def first(self) -> Finding:
        return self.members[0]

    def __len__(self) -> int:
        return len(self.members)

    def location(self) -> str:
        """Every member's location; members in one file share the file name: ``f.xml:19:11,27:11``."""
        first = self.first
        if len(self.members) == 1:
            return first.location()
        if all(m.subject == first.subject and m.line is not None for m in self.members):
            return first.subject + ":" + ",".join(m.location()[len(first.subject) + 1:] for m in self.members)
        return ", ".join(dict.fromkeys(m.location() for m in self.members))

    def message(self) -> str:
        if len(self.members) == 1:
            return self.first.message
        if self.lists:
            return (f"{self.first.message} [{len(self.members)} alike, each with its own pairs "
                    f"({', '.join(dict.fromkeys(m.subject for m in self.members))}); shown for "
                    f"{self.first.location()}]")
        return f"{self.first.message} [{len(self.members)} alike; shown for {self.first.location()}]"


def _mask(text: str, subject: str) -> tuple[str, frozenset[str]]:
    """``text`` with device names (and the subject) replaced by a placeholder; the device names other than the
    subject."""
    names: set[str] = set()

    def repl(m: re.Match) -> str:
        if m.group(0) != subject:
            names.add(m.group(0))
        return "\0"

    if subject:
        text = re.sub(r"(?<![A-Za-z0-9_])" + re.escape(subject) + r"(?![A-Za-z0-9_])", "\0", text)
    return _DEVICE.sub(repl, text), frozenset(names)


#: A list of device pairs, masked: ``\0<->\0 (PIX), \0<->\0 (PXB) and 2 more``.
_PAIRS = re.compile(r"\0<->\0 \([A-Z0-9]+\)(?:, \0<->\0 \([A-Z0-9]+\))*(?: and \d+ more)?")


def _key(f: Finding) -> tuple | None:
    msg, names = _mask(f.message, f.subject)
    fix, fix_names = _mask(f.fix or "", f.subject)
    if len(names) <= MAX_VARYING and len(fix_names | {f.subject}) > MAX_VARYING + 1:
        # one fix that names many devices (PCI007's boot line lists every port's ACS mask): alike when the messages
        # are and the fix names the same devices besides the findings' own subjects (see group())
        return (f.rule, f.severity, msg, fix, "shared")
    if len(names | fix_names) > MAX_VARYING:
        lists, n = _PAIRS.subn("\1", msg)
        # only the pair lists vary: the statement (the ACS state, say) and the fix are the same, and besides the
        # subject and the lists a finding names no more devices than any other grouped finding
        subject = len(re.findall(r"(?<![A-Za-z0-9_])" + re.escape(f.subject) + r"(?![A-Za-z0-9_])",
                                 f.message + "\n" + (f.fix or ""))) if f.subject else 0
        if not n or lists.count("\0") + fix.count("\0") - subject > MAX_VARYING:
            return None
        return (f.rule, f.severity, lists, fix, "lists")
    return (f.rule, f.severity, msg, fix)


def group(findings: Sequence[Finding] | Iterable[Finding]) -> list[Group]:
    """``findings`` (in the order given) as groups, each at its first member's place."""
    order: list[tuple[list[Finding], bool]] = []
    by_key: dict[tuple, list[Finding]] = {}
    findings = list(findings)
    keys = [_key(f) for f in findings]
    subjects: dict[tuple, set[str]] = {}
    for f, key in zip(findings, keys):
        if key is not None and key[-1] == "shared":
            subjects.setdefault(key, set()).add(f.subject)
    for i, (f, key) in enumerate(zip(findings, keys)):
        if key is not None and key[-1] == "shared":  # the fix's devices besides the alike findings' subjects
            others = frozenset(m.group(0) for m in _DEVICE.finditer(f.fix or "")) - subjects[key]
            keys[i] = key[:-1] + (others, "shared")
    for f, key in zip(findings, keys):
        if key is not None and key in by_key:
            by_key[key].append(f)
            continue
        members = [f]
        order.append((members, key is not None and key[-1] == "lists"))
        if key is not None:
            by_key[key] = members
    return [Group(tuple(m), lists and len(m) > 1) for m, lists in order]
