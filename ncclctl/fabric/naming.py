"""Numbers in switch and host names: which digit run of a name carries the rail or the group.

Fabrics are named by people: ``MF0;A09-P1-IBLEAF-04-02:MQM9701/U1`` is the rail-4 leaf of group 2 (1-based),
``MF0;g000-rail1-leaf`` the rail-1 leaf of group 0, ``a06-p1-dgx-02-c01`` host 1 of group 2. A name is split into
its template (digit runs replaced by ``#``) and its digit runs; among the names that share the commonest template,
a digit run *carries* a label (a rail, a group) when each label has one value there, each a different one, for at
least three quarters of the names. The detected structure decides what the labels are; the names only number
them, and a name whose number says another label is a finding (:func:`mismatches`).
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from operator import itemgetter

from ncclctl.record import record

#: a number with the letters glued before it (``A09``, ``c01``, ``g000``, ``04``): one field of a name. The letters
#: belong to the field, so ``A09-...`` and ``B09-...`` (two rows of racks) share a template.
_FIELD = re.compile(r"[A-Za-z]*([0-9]+)")
#: names sharing a template must be at least this share of all names for a field to be looked for
_MIN_SHARE = 0.5
#: share of those names whose digit run must agree with the label's value
_MIN_AGREE = 0.75


@lru_cache(maxsize=1 << 17)  # a fabric's names are split several times (field search, then every name's label)
def template(name: str) -> tuple[str, tuple[str, ...]]:
    """``("MF0;A09-P1-IBLEAF-04-02:MQM9701/U1")`` -> ``("#;#-#-IBLEAF-#-#:#/#", ("0", "09", "1", "04", ...))``."""
    return _FIELD.sub("#", name), tuple(_FIELD.findall(name))


def tokens(name: str) -> tuple[str, ...]:
    """The fields of ``name`` with their letters: ``("MF0", "A09", "P1", "04", ...)``."""
    return tuple(m.group(0) for m in _FIELD.finditer(name))


def with_number(name: str, index: int, text: str) -> str:
    """``name`` with the digits of field ``index`` replaced by ``text`` (the letters before them kept)."""
    i = -1

    def repl(m: re.Match) -> str:
        nonlocal i
        i += 1
        if i != index:
            return m.group(0)
        return m.group(0)[: m.start(1) - m.start(0)] + text

    return _FIELD.sub(repl, name)


@record
class NameField:
    """The digit run ``index`` of names with ``template`` numbers the labels: ``printed[label]`` is the number as
    the names print it (``"04"``), ``label_of[value]`` the label a number stands for."""

    template: str
    index: int
    printed: dict
    label_of: dict
    agree: int
    total: int
    #: the whole field as the names print it, letters included (``"g003"``, ``"02"``)
    token: dict

    def number(self, name: str) -> int | None:
        """The number this field reads in ``name`` (None when the name does not follow the template)."""
        t, digits = template(name)
        if t != self.template or self.index >= len(digits) or len(digits[self.index]) > 9:
            return None
        return int(digits[self.index])

    def label(self, name: str):
        """The label the name's number stands for (None: other template, or a number no label has)."""
        n = self.number(name)
        return None if n is None else self.label_of.get(n)

    def printed_for(self, label) -> str | None:
        """How the names print the number of ``label``; for a label no name has, extrapolated when the numbers are
        the labels plus a constant (``rail 2`` -> ``"03"`` beside ``"01"``, ``"02"``, ``"04"``)."""
        if label in self.printed:
            return self.printed[label]
        if not isinstance(label, int):
            return None
        offsets = {int(v) - lab for lab, v in self.printed.items() if isinstance(lab, int)}
        if len(offsets) != 1:
            return None
        width = max((len(v) for v in self.printed.values()), default=1)
        value = label + offsets.pop()
        return str(value).zfill(width) if value >= 0 else None

    def rename(self, name: str, label) -> str | None:
        """``name`` with this field set to the number of ``label`` (the name a sibling would have)."""
        t, _digits = template(name)
        text = self.printed_for(label)
        if t != self.template or text is None:
            return None
        return with_number(name, self.index, text)


def find_field(items: list[tuple[str, object]], *, min_labels: int = 2) -> NameField | None:
    """The digit run that numbers the labels of ``items`` (``(name, label)`` pairs), or None."""
    by_template: dict[str, list[tuple[str, object, tuple[str, ...]]]] = {}
    for name, label in items:
        t, runs = template(name)
        if runs:
            bucket = by_template.get(t)
            if bucket is None:
                bucket = by_template[t] = []
            bucket.append((name, label, runs))
    if not by_template:
        return None
    t, named = max(by_template.items(), key=lambda kv: (len(kv[1]), kv[0]))
    if len(named) < _MIN_SHARE * len(items):
        return None
    rows: list[tuple[tuple[int, ...], object, str]] = []
    for name, label, runs in named:  # (a run of 10+ digits numbers nothing: -1)
        nums = tuple(map(int, runs)) if max(map(len, runs)) < 10 else tuple(int(d) if len(d) < 10 else -1 for d in runs)
        rows.append((nums, label, name))
    if len({label for _, label, _n in rows}) < min_labels:
        return None
    best: tuple[int, int, dict[object, int]] | None = None
    labels = [label for _, label, _n in rows]
    numbers = [nums for nums, _, _n in rows]
    for i in range(len(rows[0][0])):  # (names of one template have the same number of digit runs)
        column = list(map(itemgetter(i), numbers))
        if -1 in column:
            continue
        # label -> {value: names}, labels and values in the order the names first show them
        per: dict[object, dict[int, int]] = {}
        for (label, v), n in Counter(zip(labels, column)).items():
            c = per.get(label)
            if c is None:
                c = per[label] = {}
            c[v] = n
        mapping: dict[object, int] = {}
        for label, c in per.items():
            mapping[label] = min(c, key=lambda v, c=c: (-c[v], v))  # type: ignore[misc]
        if len(set(mapping.values())) != len(mapping):
            continue
        agree = sum(per[label][v] for label, v in mapping.items())
        if agree < _MIN_AGREE * len(rows):
            continue
        if best is None or agree > best[0]:
            best = (agree, i, mapping)
    if best is None:
        return None
    agree, i, mapping = best
    printed: dict = {}
    token: dict = {}
    for nums, label, name in rows:
        if label not in printed and nums[i] == mapping[label]:
            m = list(_FIELD.finditer(name))[i]
            printed[label] = m.group(1)
            token[label] = m.group(0)
    return NameField(template=t, index=i, printed=printed, label_of={v: lab for lab, v in mapping.items()},
                     agree=agree, total=len(rows), token=token)


def mismatches(field: NameField, items: list[tuple[str, object]]) -> list[tuple[str, object, object]]:
    """``(name, label, named_label)`` for the items whose name numbers another label than theirs."""
    out = []
    for name, label in items:
        named = field.label(name)
        if named is not None and named != label:
            out.append((name, label, named))
    return out
