"""What the fabric's names say (:mod:`ncclctl.fabric.naming` finds the digit runs): the rail and group numbers
in leaf and host names, the groups' names and order, and the names that disagree with the cabling (FAB018).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from ncclctl.fabric.graph import FabricGraph, finding, switch_label
from ncclctl.fabric.hostlist import compress
from ncclctl.fabric.naming import NameField, find_field, mismatches
from ncclctl.fabric.sources import FabricInput
from ncclctl.findings import Finding
from ncclctl.names import natural_key
from ncclctl.fabric.structure import Group, Structure


_NAME_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass
class Numbering:
    """What the fabric's names say: the digit run of leaf names that numbers rails and groups, of host names that
    numbers groups (:mod:`ncclctl.fabric.naming`). Groups are labelled by their first host."""

    leaf_rail: NameField | None = None
    leaf_group: NameField | None = None
    host_group: NameField | None = None

    def group_number(self, grp: Group) -> str | None:
        for fld in (self.leaf_group, self.host_group):
            if fld is not None and grp.hosts and grp.hosts[0] in fld.printed:
                return fld.printed[grp.hosts[0]]
        return None

    def group_name(self, grp: Group) -> str | None:
        """The group's name in the fabric's own numbering: the field as its names print it when it has letters
        (``g003``), else ``su`` and the number (``su08``)."""
        for fld in (self.leaf_group, self.host_group):
            if fld is not None and grp.hosts and grp.hosts[0] in fld.printed:
                tok = fld.token[grp.hosts[0]]
                return tok if not tok.isdigit() else "su" + tok
        return None

    def rail_number(self, k: int) -> str | None:
        return self.leaf_rail.printed_for(k) if self.leaf_rail is not None else None

    def doc(self) -> dict:
        def one(fld: NameField | None) -> dict | None:
            if fld is None:
                return None
            return {"template": fld.template, "digit_run": fld.index, "names_agreeing": fld.agree,
                    "names": fld.total}
        return {"leaf_rail": one(self.leaf_rail), "leaf_group": one(self.leaf_group),
                "host_group": one(self.host_group)}


def _name_items(g: FabricGraph, st: Structure):
    rail_items = [(g.switches[L].desc, k) for grp in st.groups for k, L in enumerate(grp.leaves)
                  if L is not None and L in g.switches and g.switches[L].desc]
    group_items = [(g.switches[L].desc, grp.hosts[0]) for grp in st.groups for L in dict.fromkeys(grp.leaves)
                   if L is not None and L in g.switches and g.switches[L].desc]
    host_items = [(h, st.groups[st.host_group[h]].hosts[0]) for h in st.hosts if h in st.host_group]
    return rail_items, group_items, host_items


def numbering_of(g: FabricGraph, st: Structure) -> Numbering:
    rail_items, group_items, host_items = _name_items(g, st)
    num = Numbering()
    num.leaf_rail = find_field(rail_items)
    lg = find_field(group_items)
    if lg is not None and num.leaf_rail is not None and lg.index == num.leaf_rail.index:
        lg = None  # one digit run cannot number both
    num.leaf_group = lg
    num.host_group = find_field(host_items)
    return num


def name_findings(g: FabricGraph, st: Structure, num: Numbering, findings: list[Finding]) -> None:
    """FAB018: a leaf named for another rail or group than the one its hosts use it as; a host named for another
    group than the one it is cabled into."""
    src = g.source
    rail_items, group_items, host_items = _name_items(g, st)
    group_of: dict[object, Group] = {grp.hosts[0]: grp for grp in st.groups}
    by_desc: dict[str, str] = {}
    for grp in st.groups:
        for L in grp.leaves:
            if L is not None and L in g.switches:
                by_desc.setdefault(g.switches[L].desc, L)
    seen: set[str] = set()
    if num.leaf_rail is not None:
        for desc, k, named in mismatches(num.leaf_rail, rail_items):
            L = by_desc[desc]
            if L in seen:
                continue
            seen.add(L)
            findings.append(finding(
                "FAB018", f"leaf {switch_label(g, L)} is named for rail {named} "
                          f"(fabric rail {num.leaf_rail.printed_for(named)}), "
                          f"but its hosts use it as rail {k}: the switch is mislabelled, or its cables belong to "
                          "another leaf", subject=src, line=g.switches[L].line))
    if num.leaf_group is not None:
        for desc, gk, named in mismatches(num.leaf_group, group_items):
            L = by_desc[desc]
            if L in seen:
                continue
            seen.add(L)
            grp = group_of[gk]
            findings.append(finding(
                "FAB018", f"leaf {switch_label(g, L)} is named for group {num.leaf_group.printed_for(named)}, but it "
                          f"serves the hosts of {grp.name} ({compress(grp.hosts)})", subject=src,
                line=g.switches[L].line))
    if num.host_group is not None:
        for h, gk, named in mismatches(num.host_group, host_items):
            ep = next((e for e in st.host_rails[h] if e is not None), None)
            findings.append(finding(
                "FAB018", f"{h}: its name says group {num.host_group.printed_for(named)}, but its HCAs are cabled to "
                          f"the leaves of {group_of[gk].name}", subject=src, line=ep.line if ep else None, host=h))


def name_groups(inp: FabricInput, groups: list[Group], numbering: Numbering) -> None:
    """Group names and order: the fabric's own group numbers when every group has a distinct one (``su08`` is the
    group its names call 08, ``g003`` the group its leaves call g003), else ``su01``... in the order of the groups'
    first host names; an inventory group hint names a group all of whose hosts carry it."""
    numbers = [numbering.group_number(grp) for grp in groups]
    if groups and all(n is not None for n in numbers) and len(set(numbers)) == len(numbers):
        order = sorted(range(len(groups)), key=lambda i: (int(numbers[i] or 0), natural_key(groups[i].hosts[0])))
        for pos, i in enumerate(order):
            groups[i].name = numbering.group_name(groups[i]) or f"su{numbers[i]}"
            groups[i].index = pos
    else:
        width = max(2, len(str(len(groups))))
        for grp in groups:
            grp.name = f"su{grp.index + 1:0{width}d}"
    if inp.hosts:
        hints = [{inp.hosts[h].group if h in inp.hosts else None for h in grp.hosts} for grp in groups]
        names = [next(iter(hs)) if len(hs) == 1 else None for hs in hints]
        taken = Counter(n for n in names if n)
        for grp, name in zip(groups, names):
            if name and taken[name] == 1 and _NAME_OK.match(name):
                grp.name = name
