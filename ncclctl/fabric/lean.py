"""A lean reader: ``ibnetdiscover`` output straight into a :class:`~ncclctl.fabric.graph.FabricGraph`.

The general path (:func:`ncclctl.parsers.ibnetdiscover.parse_ibnetdiscover`, then
:func:`ncclctl.fabric.graph.from_fabric`) builds one ``FabricPort`` object per port and one ``FabricNode`` per
node, then walks them again to build the graph: at 32,768 nodes x 8 rails that is two million objects and most of
the run time. The fabric commands only need the graph, so this module reads the tool's exact layout with a few
regular expressions applied to whole stretches of text (C loops, ``findall``) and fills the graph's dicts and
lists directly: no object per port beyond the graph's own tuples.

It is a fast path, never a second parser: it accepts only input in the tool's own layout (TABs where
infiniband-diags writes them, only ASCII, no odd control characters, every link listed consistently
from both ends, every node described once) and returns ``None`` for anything else, so the general path, with all
its checks and findings, handles every other input. On what it accepts it builds the same graph, field for field
and in the same order, as the general path's fast pass (``_from_fabric_fast``); ``tests/fabric/test_fabric_lean.py``
compares the two on the synthetic fabrics (both forms, several sizes) and on every fixture.

It builds on :mod:`ncclctl.fabric.graph` (the graph, its C accelerator), which never imports it: a file is read by
:func:`ncclctl.fabric.sources.load_fabric_file`, which tries this reader first.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any

import re
import sys

from ncclctl.errors import InputError
from ncclctl.fabric.graph import CLAIM_KEY as _K, FabricGraph, Switch, _rate, accelerator, claims
from ncclctl.parsers.ibnetdiscover import _SW_EXTRA, LANE_GBPS, MAX_PORTS

#: Characters some line splitters treat as line ends or that ``str.strip`` removes: input holding one takes the
#: general path (so that both paths always see the same lines). CRLF and a lone CR are line ends for both paths
#: (:func:`ncclctl.parsers._common.split_lines`): the fast path turns them into LF first.
_ODD = "\x0b\x0c\x1c\x1d\x1e\x1f\x00"
_ODD_BYTES = [c.encode("ascii") for c in _ODD]

#: Port numbers as written (up to 256, no leading zeros) -> int: a look-up takes a quarter of ``int()``'s time.
_SMALL_INTS = {str(i): i for i in range(257)}

# --- topology form --------------------------------------------------------------------------------------------
# The text is read with a "\n" before every line (one is prepended), so that the patterns start with a literal
# (the regex engine then skips to each line start with a fast scan). The node line, as the general parser's fast
# pattern (_FAST_NODE) reads it:
_NODE = re.compile(r'\n(Switch|Ca|Rt)\t([0-9]{1,9}) "[SHR]-([0-9a-f]{16})"\t\t# "([^"\t\n]*)"([^\t\n]*)(?![^\n])')
# Link lines: exactly the general parser's _FAST_SW / _FAST_CA. Every repeat here and in the other fast patterns is
# followed by a character it cannot take, so giving any back never helps a match: written possessive (``{1,9}+``,
# ``*+``, an optional part as a branch with an empty alternative), the regex engine runs its loops without keeping
# the positions to go back to (about 10% of a findall). Python 3.10 has no possessive repeats (3.11 added them): there
# the same patterns are compiled greedy (``_P`` is empty), which match exactly the same text, a little slower
# (tests/fabric/test_fabric_lean.py compares the two forms).
_P = "+" if sys.version_info >= (3, 11) else ""
_LINK_SW = re.compile(rf'\n\[([0-9]{{1,9}}{_P})\]\t"([SHR])-([0-9a-f]{{16}})"\[([0-9]{{1,9}}{_P})\]'
                      rf'(?:\([0-9a-f]{{1,16}}{_P}\) |)\t\t# "[^"\t\n]*{_P}" lid [0-9]{{1,9}}{_P} '
                      rf'([0-9]{{1,2}}{_P}x)(\w+{_P})(?![^\n])')
_LINK_CA = re.compile(r'\n\[([0-9]{1,9})\]\([0-9a-f]{1,16}\) \t"([SHR])-([0-9a-f]{16})"\[([0-9]{1,9})\]\t\t# '
                      r'lid [0-9]{1,9} lmc [0-9]{1,9} "[^"\t\n]*" lid [0-9]{1,9} ([0-9]{1,2}x)(\w+)(?![^\n])')
#: The link lines at the start of a block's body.
_LINKS = re.compile(r"(?:\n\[[^\n]*)*")
#: What may follow them up to the next node line: blank lines, comments, and attribute lines in the forms the
#: general parser's fast path takes as they are (sysimgguid with a plain hex value).
_REST = re.compile(r"(?:\n(?![^\n])|\n#[^\n]*|\n(?:vendid|devid|switchguid|caguid|rtguid)=[^\n]*"
                   r"|\nsysimgguid=0x[0-9a-fA-F]+(?![^\n]))*")
_SYSIMG = re.compile(r"\nsysimgguid=0x([0-9a-fA-F]+)(?![^\n])")
_KIND = {"S": "switch", "H": "ca", "R": "router", "Switch": "switch", "Ca": "ca", "Rt": "router",
         "SW": "switch", "CA": "ca", "RT": "router"}


def read_graph(path: str) -> FabricGraph | None:
    """The graph of the fabric file ``path``, or None when the file is anything but one tool's plain output in
    ASCII (the general path then reads it; read_bytes takes regular files only, so reading it again is safe)."""
    from ncclctl.fabric.graph import detect_kind
    from ncclctl.inputs import read_bytes
    from ncclctl.parsers._common import pasted_lines

    data = read_bytes(path, "fabric")
    if data is None or not data.isascii():
        return None
    if b"\r" in data:  # a Windows copy, or one stray CR: line ends as the general parser reads them, not a slow path
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    for c in _ODD_BYTES:  # one fast scan per character (a character-class search would look at every character)
        if c in data:
            return None
    if pasted_lines(data, ("ibnetdiscover", "iblinkinfo")):
        return None  # a pasted capture (prompts, command echoes)
    head = data[:65536].decode("ascii")
    try:  # the kind is read from the first meaningful line
        kind = detect_kind(head[:head.rfind("\n") + 1] if len(data) > len(head) else head, source=path)
    except InputError:
        return None
    del head
    if kind in ("ibnetdiscover", "ibnetdiscover-ports"):
        fast = accelerator()
        if fast is not None:  # the same readers in C (ncclctl/fabric/_fastread.c), on the bytes: the same graph or None
            return _from_fast(fast.topology if kind == "ibnetdiscover" else fast.ports, data, path, kind)
    text = data.decode("ascii")
    del data
    if kind == "ibnetdiscover":
        g = _topology_bulk(text, path)  # the usual layout, read from the text as it is (no copy)
        if g is not None:
            return g
    if kind == "ibnetdiscover-ports":
        g = _ports_cols(text, path)  # ibnetdiscover's own layout, read in columns (from the text as it is: no copy)
        if g is not _DECLINE:
            return g
    # Every line with a "\n" before it (see _NODE); handed over in a list so that the reader can let it go.
    box = ["\n" + text]
    del text
    if kind == "ibnetdiscover":
        return _topology(box, path)
    if kind == "ibnetdiscover-ports":
        return _ports(box, path)
    return None


def _from_fast(reader, text: bytes, source: str, kind: str) -> FabricGraph | None:
    """The graph from one of the C readers: they fill the graph's HCA and link tables and return the switches as
    rows, with the counts and the agreement of both ends' claims that :func:`_finish` checks (or None: the text is
    not in the layout they take, and the general path reads it)."""
    g = FabricGraph(source=source, kind=kind)
    res = reader(text, LANE_GBPS, _rate, g.hcas, g.hca_links, g.switch_links)
    if res is None:
        return None
    rows, ca_claims, sw_claims, fwd, bwd, agree, sysimgs = res
    switches = g.switches
    for guid, desc, nports, line, lid, skind in rows:
        switches[guid] = Switch(guid=guid, desc=desc, nports=nports, line=line, lid=lid, kind=skind)
    return _finish(g, 0 if agree else 1, ca_claims, sw_claims, fwd, bwd, sysimgs, switches)


def _topology(box: list[str], source: str) -> FabricGraph | None:
    parts = _NODE.split(box.pop())
    # parts: [preamble, kind, nports, guid, desc, rest, body, kind, ...]
    pre = parts[0]
    tails = [pre]
    g = FabricGraph(source=source, kind="ibnetdiscover")
    hcas = g.hcas
    switches = g.switches
    hca_links = g.hca_links
    switch_links = g.switch_links
    lanes = LANE_GBPS
    # One object per distinct GUID, width and speed text; port numbers -> ints; (width, speed) -> rate.
    strs: dict[str, str] = {}
    sget = strs.get
    ints: dict[str, int] = dict(_SMALL_INTS)
    rates: dict[tuple[str, str], tuple[Any, Any, float | None]] = {}
    port_lists: dict[int, tuple[int, ...]] = {}
    sysimgs: list[tuple[str, str]] = []  # (CA guid, its system image GUID) where they differ
    sysimg = _last_sysimg(pre) if "sysimgguid=" in pre else None
    lineno = pre.count("\n")  # the line of the current node line, less one (the text starts with a "\n")
    ca_claims = sw_claims = fwd = bwd = 0
    acc_ca = acc_sw = 0
    links_match = _LINKS.match
    sw_findall = _LINK_SW.findall
    ca_findall = _LINK_CA.findall
    kinds = _KIND
    for i in range(1, len(parts), 6):
        nkind, nports_s, guid, desc, rest, body = parts[i:i + 6]
        parts[i + 5] = None  # the body is read once: let it go
        lineno += 1
        nports = int(nports_s)
        if nports > MAX_PORTS and nkind == "Ca":
            return None  # the general parser refuses it
        lm = links_match(body)
        if lm is None:
            return None
        end = lm.end()
        links = body[:end]
        nlines = links.count("\n")
        recs = (sw_findall if nkind == "Switch" else ca_findall)(links) if nlines else ()
        if len(recs) != nlines:
            return None
        line = lineno + 1
        if nkind == "Ca":
            if guid in hcas or guid in switches:
                return None
            known = port_lists.get(nports)  # one tuple per port count, shared by the HCAs
            if known is None:
                known = port_lists[nports] = tuple(range(1, nports + 1))
            hcas[guid] = (desc, known, lineno)
            if sysimg is not None and sysimg != guid:
                sysimgs.append((guid, sysimg))
            for port, rk, rguid, rport, width, speed in recs:
                if rk == "H" or speed not in lanes:
                    return None
                p = ints.get(port)
                if p is None:
                    p = ints[port] = int(port)
                if nports and p > nports + 64:
                    return None
                rp = ints.get(rport)
                if rp is None:
                    rp = ints[rport] = int(rport)
                r = sget(rguid)
                if r is None:
                    r = strs[rguid] = rguid
                key = (width, speed)
                try:
                    w, sp, rate = rates[key]
                except KeyError:
                    w, sp, rate = rates[key] = (width, speed, _rate(width, speed))
                ca_claims += 1
                h = hash((_K, guid, p, r, rp))  # graph.claim, inline (a call per line costs a tenth of the run)
                acc_ca += h + (h * h << 128)
                hca_links[(guid, p)] = (r, rp, w, sp, rate, line)
                line += 1
        else:
            if guid in switches or guid in hcas:
                return None
            lid = None
            if nkind == "Switch" and rest:
                sm = _SW_EXTRA.search(rest)
                lid = int(sm.group(2)) if sm else None
            g_ = sget(guid)
            if g_ is None:
                g_ = strs[guid] = guid
            guid = g_
            switches[guid] = Switch(guid=guid, desc=desc, nports=nports, line=lineno, lid=lid, kind=kinds[nkind])
            for port, rk, rguid, rport, width, speed in recs:
                if speed not in lanes:
                    return None
                p = ints.get(port)
                if p is None:
                    p = ints[port] = int(port)
                if nports and p > nports + 64:
                    return None
                rp = ints.get(rport)
                if rp is None:
                    rp = ints[rport] = int(rport)
                if rk == "H":
                    sw_claims += 1
                    h = hash((_K, rguid, rp, guid, p))  # graph.claim, inline (a call per line costs a tenth of the run)
                    acc_ca -= h + (h * h << 128)
                elif guid < rguid or (guid == rguid and p < rp):
                    fwd += 1
                    h = hash((_K, guid, p, rguid, rp))  # graph.claim, inline (a call per line costs a tenth of the run)
                    acc_sw += h + (h * h << 128)
                    r = sget(rguid)
                    if r is None:
                        r = strs[rguid] = rguid
                    key = (width, speed)
                    try:
                        w, sp, rate = rates[key]
                    except KeyError:
                        w, sp, rate = rates[key] = (width, speed, _rate(width, speed))
                    switch_links.append((guid, p, r, rp, w, sp, rate, line))
                else:
                    bwd += 1
                    h = hash((_K, rguid, rp, guid, p))  # graph.claim, inline (a call per line costs a tenth of the run)
                    acc_sw -= h + (h * h << 128)
                line += 1
        lineno += body.count("\n")
        if end < len(body):
            tail = body[end:]
            tails.append(tail)
            k = tail.rfind("\nsysimgguid=0x")  # the last one wins; its form is checked with the tail's (_REST)
            if k < 0:
                sysimg = None
            else:
                e = tail.find("\n", k + 1)
                sysimg = (tail[k + 14:e] if e >= 0 else tail[k + 14:]).lower().rjust(16, "0")
        else:
            sysimg = None
    del parts
    if not hcas and not switches:
        return None  # no node: the general path says so
    # Every tail is a run of whole lines, so the tails are all valid exactly when their concatenation is.
    if _REST.fullmatch("".join(tails)) is None:
        return None
    del tails
    return _finish(g, acc_ca or acc_sw, ca_claims, sw_claims, fwd, bwd, sysimgs, switches)


# --- topology form, in bulk ----------------------------------------------------------------------------------
# ibnetdiscover prints the switches first, then the CAs, each CA block as the same six or seven lines (a blank line,
# its four attribute lines, its node line and, when its one port is linked, the link line). The bulk reader takes
# that case only: the switch blocks one at a time (a few thousand) with every link line of a block handled by C
# loops (zip, map, compress over the block's findall columns), and the CA blocks with one pattern over whole
# stretches of text, so no Python statement runs per CA port. Anything else (a CA with two links, a switch after
# the first CA, a router, odd attribute lines) returns None and the per-block reader above takes the file.
_CA_UNIT = re.compile(
    rf'\n\nvendid=0x[0-9a-fA-F]{{1,16}}{_P}\ndevid=0x[0-9a-fA-F]{{1,16}}{_P}\nsysimgguid=0x([0-9a-fA-F]{{1,16}}{_P})'
    rf'\ncaguid=0x[0-9a-fA-F]{{1,16}}{_P}\nCa\t([0-9]{{1,9}}{_P}) "H-([0-9a-f]{{16}})"\t\t# "([^"\t\n]*{_P})"'
    rf'(?:\n\[([0-9]{{1,9}}{_P})\]\([0-9a-f]{{1,16}}{_P}\) \t"S-([0-9a-f]{{16}})"\[([0-9]{{1,9}}{_P})\]\t\t# '
    rf'lid [0-9]{{1,9}}{_P} lmc [0-9]{{1,9}}{_P} "[^"\t\n]*{_P}" lid [0-9]{{1,9}}{_P} ([0-9]{{1,2}}{_P}x)(\w+{_P})|)'
    r'(?![^\n])')
_CHUNK = 1 << 22  # characters of CA blocks per findall: bounds the records held at once


def _rate_cols(rates: dict, widths, speeds, n: int) -> Any:
    """The (width, speed, rate) columns of ``n`` links from their width and speed columns (C loops); ``rates``
    caches (width, speed) -> (width, speed, rate), one tuple per distinct pair. The columns are read twice: an
    iterator (``compress``) is made a list first."""
    from itertools import repeat

    if not isinstance(widths, (list, tuple)):
        widths = list(widths)
    if not isinstance(speeds, (list, tuple)):
        speeds = list(speeds)
    pairs = set(zip(widths, speeds))
    for key in pairs:
        if key not in rates:
            rates[key] = (key[0], key[1], _rate(key[0], key[1]))
    if len(pairs) == 1:
        w, sp, r = rates[pairs.pop()]
        return repeat(w, n), repeat(sp, n), repeat(r, n)
    return zip(*map(rates.__getitem__, zip(widths, speeds)))


def _ints(col) -> list[int]:
    """A column of port numbers (digit strings) as ints: a look-up each (_SMALL_INTS), ``int()`` for a column
    holding any other number."""
    if not isinstance(col, (list, tuple)):
        col = tuple(col)
    try:
        return list(map(_SMALL_INTS.__getitem__, col))
    except KeyError:  # above 256, or written "01"
        return list(map(int, col))


def _topology_bulk(text: str, source: str) -> FabricGraph | None:
    """The graph of ``text`` (the file's text as it is: no "\\n" put before it) when it is in the usual layout,
    else None."""
    from itertools import accumulate, compress, repeat
    from operator import add, not_

    first_ca = text.find("\nCa\t")
    if first_ca < 0:
        return None
    u = text.rfind("\n\nvendid=", 0, first_ca)
    if u < 0:
        return None
    parts = _NODE.split(text[:u + 1])  # the switch blocks (up to the blank line before the first CA's attributes)
    g = FabricGraph(source=source, kind="ibnetdiscover")
    hcas = g.hcas
    switches = g.switches
    hca_links = g.hca_links
    switch_links = g.switch_links
    lanes = LANE_GBPS.keys()
    strs: dict[str, str] = {}
    intern = strs.setdefault
    rates: dict[tuple[str, str], tuple[Any, Any, float | None]] = {}
    tails = ["\n" + parts[0]]  # (the text's first line has no "\n" before it)
    lineno = parts[0].count("\n") + 1
    ca_claims = sw_claims = fwd = bwd = 0
    acc_ca = acc_sw = 0
    links_match = _LINKS.match
    sw_findall = _LINK_SW.findall
    is_h = "H".__eq__

    def rate_cols(widths, speeds, n):
        return _rate_cols(rates, widths, speeds, n)

    # a block's columns: tuples from findall, narrowed to lists or compress iterators (C loops all)
    ports: Any
    rports: Any
    rguids: Any
    widths: Any
    speeds: Any
    lines: Any
    h_rg: Any
    h_rp: Any
    h_p: Any
    b_rg: Any
    b_rp: Any
    b_p: Any
    for i in range(1, len(parts), 6):
        nkind, nports_s, guid, desc, rest, body = parts[i:i + 6]
        parts[i + 5] = None
        if nkind != "Switch":
            return None
        lineno += 1
        nports = int(nports_s)
        if nports > MAX_PORTS and nkind == "Ca":
            return None  # the general parser refuses it
        lm = links_match(body)
        if lm is None:
            return None
        end = lm.end()
        nlines = body.count("\n", 0, end)
        recs = sw_findall(body, 0, end) if nlines else ()
        if len(recs) != nlines:
            return None
        if guid in switches:
            return None
        lid = None
        if rest:
            sm = _SW_EXTRA.search(rest)
            lid = int(sm.group(2)) if sm else None
        guid = intern(guid, guid)
        switches[guid] = Switch(guid=guid, desc=desc, nports=nports, line=lineno, lid=lid, kind="switch")
        if recs:
            ports_s, rks, rguids, rports_s, widths, speeds = zip(*recs)
            if not lanes >= set(speeds):
                return None
            ports = _ints(ports_s)
            if nports and max(ports) > nports + 64:
                return None
            rports = _ints(rports_s)
            lines = range(lineno + 1, lineno + 1 + nlines)
            nh = rks.count("H")
            # a leaf lists its HCA ports first, usually: then both parts are slices, else masks
            prefix = 0 < nh < nlines and rks[nh - 1] == "H" and "H" not in rks[nh:]
            if nh:
                if nh == nlines:
                    h_rg, h_rp, h_p = rguids, rports, ports
                elif prefix:
                    h_rg, h_rp, h_p = rguids[:nh], rports[:nh], ports[:nh]
                else:
                    hm = list(map(is_h, rks))
                    h_rg, h_rp, h_p = compress(rguids, hm), compress(rports, hm), compress(ports, hm)
                sw_claims += nh
                acc_ca -= claims(zip(repeat(_K), h_rg, h_rp, repeat(guid), h_p))
            if nh < nlines:
                if prefix:
                    rguids, rports, ports = rguids[nh:], rports[nh:], ports[nh:]
                    widths, speeds, lines = widths[nh:], speeds[nh:], lines[nh:]
                elif nh:
                    sm_ = list(map(not_, hm))
                    rguids, rports, ports = (tuple(compress(rguids, sm_)), list(compress(rports, sm_)),
                                             list(compress(ports, sm_)))
                    widths, speeds = tuple(compress(widths, sm_)), tuple(compress(speeds, sm_))
                    lines = list(compress(lines, sm_))
                if guid in rguids:
                    return None  # a switch linked to itself: the per-block reader
                m = nlines - nh
                fm = list(map(guid.__lt__, rguids))
                nf = sum(fm)
                if nf == m:
                    f_rg, f_rp, f_p, f_w, f_s, f_l = rguids, rports, ports, widths, speeds, lines
                elif nf:
                    f_rg, f_rp, f_p = list(compress(rguids, fm)), list(compress(rports, fm)), list(compress(ports, fm))
                    f_w, f_s, f_l = list(compress(widths, fm)), list(compress(speeds, fm)), list(compress(lines, fm))
                    bm = list(map(not_, fm))
                    b_rg, b_rp, b_p = compress(rguids, bm), compress(rports, bm), compress(ports, bm)
                else:
                    b_rg, b_rp, b_p = rguids, rports, ports
                if nf:
                    fwd += nf
                    acc_sw += claims(zip(repeat(_K), repeat(guid), f_p, f_rg, f_rp))
                    W, S, R = rate_cols(f_w, f_s, nf)
                    switch_links.extend(zip(repeat(guid), f_p, map(intern, f_rg, f_rg), f_rp, W, S, R, f_l))
                if nf < m:
                    bwd += m - nf
                    acc_sw -= claims(zip(repeat(_K), b_rg, b_rp, repeat(guid), b_p))
        lineno += body.count("\n")
        if end < len(body):
            tails.append(body[end:])
    del parts
    if _REST.fullmatch("".join(tails)) is None:
        return None
    del tails
    # the CA blocks
    n = len(text)
    k = n
    while k > u and text[k - 1] == "\n":
        k -= 1
    trailing = n - k
    line = lineno  # the line before the blank line that starts the first CA block
    if text.count("\n", 0, u + 1) + 1 != line:
        return None
    unit_findall = _CA_UNIT.findall
    port_lists: dict[str, tuple[int, ...]] = {}
    sysimgs: list[tuple[str, str]] = []
    nlines_ca = 0
    a = u
    while a < n:
        b = text.find("\n\nvendid=", a + _CHUNK) if a + _CHUNK < n else -1
        b = n if b < 0 else b
        recs = unit_findall(text, a, b)
        a = b
        if not recs:
            continue
        lg: Any
        lp_s: Any
        rg: Any
        rp_s: Any
        lw: Any
        ls: Any
        ll: Any
        sysv, nps, guids, descs, lports, rguids, rports, widths, speeds = zip(*recs)
        del recs
        cnt = len(guids)
        linked = sum(map(bool, lports))
        nlines_ca += 6 * cnt + linked
        # unit j starts (its blank line) at line + 6 j + (links before it); its node line is 5 further, its link
        # line 6
        starts = list(map(add, range(line + 5, line + 5 + 6 * cnt, 6), accumulate(map(bool, lports), initial=0)))
        for s_ in set(nps):
            if s_ not in port_lists:
                if int(s_) > MAX_PORTS:
                    return None  # the general parser refuses it
                port_lists[s_] = tuple(range(1, int(s_) + 1))
        before = len(hcas)
        hcas.update(zip(guids, zip(descs, map(port_lists.__getitem__, nps), starts)))
        if len(hcas) != before + cnt:
            return None  # a GUID described twice
        line = starts[-1] + (2 if lports[-1] else 1)  # the next unit's blank line
        normed = map(str.rjust, map(str.lower, sysv), repeat(16), repeat("0"))
        sysimgs.extend((gd, sv) for gd, sv in zip(guids, normed) if gd != sv)
        if linked:
            if linked == cnt:
                lg, lp_s, rg, rp_s, lw, ls, ll = guids, lports, rguids, rports, widths, speeds, starts
            else:
                lg, lp_s, rg = list(compress(guids, lports)), list(compress(lports, lports)), list(compress(rguids, lports))
                rp_s, lw = list(compress(rports, lports)), list(compress(widths, lports))
                ls, ll = list(compress(speeds, lports)), list(compress(starts, lports))
            if not lanes >= set(ls):
                return None
            lp = _ints(lp_s)
            if max(lp) > 64 and any(p > int(np_) + 64 for p, np_ in zip(lp, compress(nps, lports)) if int(np_)):
                return None
            rp = _ints(rp_s)
            rg = list(map(intern, rg, rg))
            ca_claims += linked
            acc_ca += claims(zip(repeat(_K), lg, lp, rg, rp))
            W, S, R = rate_cols(lw, ls, linked)
            hca_links.update(zip(zip(lg, lp), zip(rg, rp, W, S, R, map((1).__add__, ll))))
    if text.count("\n", u + 1) != nlines_ca + trailing - 1:
        return None  # a line no CA block holds
    if not hcas:
        return None
    return _finish(g, acc_ca or acc_sw, ca_claims, sw_claims, fwd, bwd, sysimgs, switches)


def _finish(g: FabricGraph, hash_diff: int, ca_claims: int, sw_claims: int, fwd: int, bwd: int, sysimgs,
            switches) -> FabricGraph | None:
    """The graph when both ends of every link agree (:func:`_consistent`), with the Aggregation Node CAs (a CA
    whose system image GUID is a switch's) marked; None sends the file to the general path."""
    if not _consistent(g, hash_diff, ca_claims, sw_claims, fwd, bwd):
        return None
    agg = g.aggregation
    for guid, sysimg in sysimgs:
        if sysimg in switches:
            agg.add(guid)
    return g


def _last_sysimg(tail: str) -> str | None:
    """The system image GUID a block's attribute lines give the next node (the last one wins), normalised."""
    values = _SYSIMG.findall(tail)
    return values[-1].lower().rjust(16, "0") if values else None  # none: the tail is refused (_REST)


def _consistent(g: FabricGraph, hash_diff: int, ca_claims: int, sw_claims: int, fwd: int, bwd: int) -> bool:
    """The checks of the general path's fast pass (``_from_fabric_fast``): both ends of every link agree (equal
    counts and claim fingerprints, graph.claim), no GUID is both an HCA and a switch, every HCA link ends at a known switch. When they
    hold, the SHARP Aggregation Nodes named as such are marked."""
    hcas, switches, hca_links = g.hcas, g.switches, g.hca_links
    if (hash_diff or ca_claims != sw_claims or fwd != bwd or len(hca_links) != ca_claims
            or not hcas.keys().isdisjoint(switches.keys())):
        return False
    if not switches.keys() >= set(map(itemgetter(0), hca_links.values())):
        return False
    _aggregation(g)
    return True


def _aggregation(g: FabricGraph) -> None:
    agg = g.aggregation
    if "Aggregation Node" not in "\n".join(map(itemgetter(0), g.hcas.values())):
        return  # (one scan of all the descriptions, most fabrics have none)
    for guid, (desc, _ports, _line) in g.hcas.items():
        if "Aggregation Node" in desc:
            agg.add(guid)


# --- ports form (-p) ------------------------------------------------------------------------------------------
# The general parser's _PORTS on one raw line: "\s" narrowed to " " and TAB, every run and field bounded (descriptions
# at 64 characters, the IB NodeDescription size) so that an
# accepted line is always shorter than the parser's line limit (MAX_LINE, 1,024 characters). Each line is found by
# the "\n" before it (a literal the regex engine skips to; a MULTILINE "^" is tried at every character); the far
# end's LID and description are matched, not captured.
_W = r"[ \t]{1,30}"
_PLINE = re.compile(
    r"\n[ \t]{0,30}(SW|CA|RT)" + _W + r"([0-9]{1,9})" + _W + r"([0-9]{1,9})" + _W + r"0x([0-9a-fA-F]{1,16})" + _W
    + r"([0-9]{1,2}x|\?\?)" + _W + r"([A-Za-z0-9_]{1,10}|\?\?\?)"
    r"(?:" + _W + r"-" + _W + r"(SW|CA|RT)" + _W + r"[0-9]{1,9}" + _W + r"([0-9]{1,9})" + _W
    + r"0x([0-9a-fA-F]{1,16})" + _W + r"\([ \t]{0,30}'([^'\n]{0,64})'" + _W + r"-" + _W + r"'[^'\n]{0,64}'"
    r"[ \t]{0,30}\)|[ \t]{1,64}'([^'\n]{0,64})')?[ \t]{0,30}(?![^\n])")

# _PLINE narrowed to what ibnetdiscover itself prints (fields separated by spaces, GUIDs as 16 lower-case hex
# digits) and written so that the regex engine runs its fast loops (a single character or a negated one per
# repeat, possessive): the findall takes about 0.6 of _PLINE's time. _ports tries it first on each chunk; where it
# does not take every line of the chunk, _PLINE reads the chunk. Both capture the same fields of a line that both
# take (each part of _PLINE_FAST takes a subset of the same part of _PLINE, and the branches exclude each other by
# the character after the speed). A description here may hold a line end: such a record would stand for two lines,
# and the count of records against lines sends the chunk to _PLINE.
_S = r" {1,30}" + _P
_S0 = r" {0,30}" + _P
_NUM = r"[0-9]{1,9}" + _P
_DESC = r"[^']{0,64}" + _P
_PLINE_FAST = re.compile(
    r"\n" + _S0 + r"(SW|CA|RT)" + _S + r"(" + _NUM + r")" + _S + r"(" + _NUM + r")" + _S + r"0x([0-9a-f]{16})" + _S
    + r"([0-9]{1,2}x|\?\?)" + _S + r"([A-Za-z0-9_]{1,10}|\?\?\?)"
    r"(?:" + _S + r"-" + _S + r"(SW|CA|RT)" + _S + _NUM + _S + r"(" + _NUM + r")" + _S
    + r"0x([0-9a-f]{16})" + _S + r"\(" + _S0 + r"'(" + _DESC + r")'" + _S + r"-" + _S + r"'" + _DESC + r"'"
    + _S0 + r"\)| {1,64}" + _P + r"'(" + _DESC + r")'|)" + _S0 + r"(?![^\n])")  # (|): a branch, cheaper than "?" (~8%)
_PCHUNK = 1 << 16  # characters per findall: a chunk's records stay in the processor's cache


def _ports(box: list[str], source: str) -> FabricGraph | None:
    """One pass: ``ibnetdiscover -p`` lists each node's ports on consecutive lines, so each line goes straight into
    the graph and a node is finished when the next one starts. A node whose lines are not consecutive takes the
    general path (which groups them)."""
    text = box.pop()
    if not text.endswith("\n"):
        text += "\n"
    g = FabricGraph(source=source, kind="ibnetdiscover-ports")
    hcas = g.hcas
    switches = g.switches
    hca_links = g.hca_links
    switch_links = g.switch_links
    ca_claims = sw_claims = fwd = bwd = 0
    acc_ca = acc_sw = 0
    norm: dict[str, Any] = {}  # raw GUID -> its normalised string; width + speed -> (width, speed, rate)
    kinds = _KIND
    lanes = LANE_GBPS
    ints: dict[str, int] = dict(_SMALL_INTS)
    findall = _PLINE_FAST.findall
    # the open node: [kind, guid, nports, desc, lid, line, unlinked ports]
    cur: Any = None
    cur_guid: Any = None
    is_ca = False
    line = 0
    # text[0] is the "\n" put before the first line; the last "\n" ends the last line
    i, n = 0, len(text) - 1
    while i < n:  # 64 KB at a time: all the records of a large file at once would take more memory than it
        j = text.find("\n", i + _PCHUNK)
        j = n if j < 0 or j > n else j
        lines_in = text.count("\n", i, j)
        recs = findall(text, i, j)
        if len(recs) != lines_in:  # not ibnetdiscover's own spacing and GUIDs: the full pattern
            recs = _PLINE.findall(text, i, j)
            if len(recs) != lines_in:
                return None  # a blank, comment or ibwarn line, or one in another layout: the general path
        i = j
        for kind, lid, port, guid, width, speed, rkind, rport, rguid, ldesc, udesc in recs:
            line += 1
            if speed == "???":
                speed = None
            elif speed not in lanes:
                return None
            if width == "??":
                width = None
            gd = norm.get(guid)
            if gd is None:
                gd = norm[guid] = guid.lower().rjust(16, "0")
            if gd is not cur_guid:
                if cur is not None:
                    _finish_node(g, cur)
                if gd in hcas or gd in switches:
                    return None  # its lines are not consecutive
                cur = [kinds[kind], gd, 0, ldesc or udesc or "", int(lid), line, []]
                cur_guid = gd
                is_ca = cur[0] == "ca"
            elif not cur[3] and (ldesc or udesc):
                cur[3] = ldesc or udesc
            p = ints.get(port)
            if p is None:
                p = ints[port] = int(port)
            if p > cur[2]:
                cur[2] = p
            if not rkind:
                cur[6].append(p)
                continue
            rp = ints.get(rport)
            if rp is None:
                rp = ints[rport] = int(rport)
            rg = norm.get(rguid)
            if rg is None:
                rg = norm[rguid] = rguid.lower().rjust(16, "0")
            if is_ca:
                if rkind == "CA":
                    return None
                ca_claims += 1
                h = hash((_K, gd, p, rg, rp))  # graph.claim, inline (a call per line costs a tenth of the run)
                acc_ca += h + (h * h << 128)
                key = (gd, p)
                if key in hca_links:
                    return None  # a port listed twice
                if width and speed:
                    wsp = norm.get(width + speed)  # one (width, speed, rate) per distinct text
                    if wsp is None:
                        wsp = norm[width + speed] = (width, speed, _rate(width, speed))
                    hca_links[key] = (rg, rp, *wsp, line)
                else:
                    hca_links[key] = (rg, rp, width, speed, None, line)
            elif rkind == "CA":
                sw_claims += 1
                h = hash((_K, rg, rp, gd, p))  # graph.claim, inline (a call per line costs a tenth of the run)
                acc_ca -= h + (h * h << 128)
            elif gd < rg or (gd == rg and p < rp):
                fwd += 1
                h = hash((_K, gd, p, rg, rp))  # graph.claim, inline (a call per line costs a tenth of the run)
                acc_sw += h + (h * h << 128)
                if width and speed:
                    wsp = norm.get(width + speed)
                    if wsp is None:
                        wsp = norm[width + speed] = (width, speed, _rate(width, speed))
                    switch_links.append((gd, p, rg, rp, *wsp, line))
                else:
                    switch_links.append((gd, p, rg, rp, width, speed, None, line))
            else:
                bwd += 1
                h = hash((_K, rg, rp, gd, p))  # graph.claim, inline (a call per line costs a tenth of the run)
                acc_sw -= h + (h * h << 128)
    del text
    if cur is None:
        return None
    _finish_node(g, cur)
    if not _consistent(g, acc_ca or acc_sw, ca_claims, sw_claims, fwd, bwd):
        return None
    return g


# --- ports form, in columns ------------------------------------------------------------------------------------
#: What :func:`_ports_cols` returns for an input it does not take: :func:`_ports` then reads the text and decides.
_DECLINE: Any = object()


def _ports_cols(text: str, source: str) -> Any:
    """The graph of ``text`` (the file's text as it is; _ports reads it with a "\\n" put before it), a chunk's
    records at a time as columns: the fields of a chunk's lines are handled by C loops over its columns (``zip``,
    ``map``, ``compress``, ``dict.update``), with a Python step per switch and per HCA of more than one line, none
    per line.
    It takes ibnetdiscover's own layout only (every chunk read by _PLINE_FAST, known widths and speeds, one kind per
    node, every node's first line with its description, nothing _ports refuses) and builds _ports' graph, entry for
    entry and in the same order; on anything else it returns :data:`_DECLINE` and _ports reads the text."""
    from itertools import chain, compress, repeat
    from operator import add, and_, gt, lt, ne, not_, sub

    if not text.endswith("\n"):
        text += "\n"
    g = FabricGraph(source=source, kind="ibnetdiscover-ports")
    hcas = g.hcas
    switches = g.switches
    hca_links = g.hca_links
    switch_links = g.switch_links
    lanes = LANE_GBPS
    strs: dict[str, str] = {}
    intern = strs.setdefault  # one object per GUID, as _ports keeps them
    rates: dict[tuple[str, str], tuple[str, str, float | None]] = {}
    findall = _PLINE_FAST.findall
    is_ca = "CA".__eq__
    is_sw = {"SW", "RT"}.__contains__
    ca_claims = sw_claims = fwd = bwd = 0
    acc_ca = acc_sw = 0
    # the open node (its lines may go on in the next chunk): [kind, guid, nports, desc, lid, line, unlinked ports]
    cur: Any = None
    prev_g = prev_k = ""
    # a chunk's columns: tuples from zip, narrowed to lists, tuples or compress iterators (C loops all)
    sg: Any
    cg: Any
    cp: Any
    crk: Any
    crp: Any
    crg: Any
    cw: Any
    cs: Any
    cl: Any
    xg: Any
    xp: Any
    xrk: Any
    xrp: Any
    xrg: Any
    xw: Any
    xs: Any
    xl: Any
    xg_: Any
    xp_: Any
    xrg_: Any
    xrp_: Any
    fw: Any
    fs: Any
    fl: Any

    def rate_cols(widths, speeds, n: int) -> Any:
        """The (width, speed, rate) columns of the links; ``one``: the chunk's lines all have the same (then the
        width and speed columns are not needed)."""
        if one is not None:
            return repeat(one[0], n), repeat(one[1], n), repeat(one[2], n)
        return _rate_cols(rates, widths, speeds, n)

    def finish(node) -> None:
        kind, guid, nports, desc, lid, line, unlinked = node
        if kind == "CA":
            hcas[guid] = (desc, tuple(sorted(set(unlinked))) if unlinked else (), line)
        else:
            switches[guid] = Switch(guid=guid, desc=desc, nports=nports, line=line, lid=lid, kind=_KIND[kind])

    line0 = 0  # the lines before the chunk
    n = len(text) - 1  # the last "\n"
    i = -1  # (the first chunk: read with a "\n" put before its first line; the others start at a "\n")
    while i < n:
        j = text.find("\n", max(i, 0) + _PCHUNK)
        j = n if j < 0 or j > n else j
        if i < 0:
            first = "\n" + text[:j]
            recs = findall(first)
            if len(recs) != first.count("\n"):
                return _DECLINE
            del first
        else:
            recs = findall(text, i, j)
            if len(recs) != text.count("\n", i, j):
                return _DECLINE
        i = j
        K, L, P, G, W, S, RK, RP, RG, LD, UD = zip(*recs)
        del recs
        m = len(K)
        pairs = set(zip(W, S))
        for key in pairs:
            if key not in rates:
                if key[1] not in lanes or key[0] == "??":
                    return _DECLINE  # an unknown width or speed (or one _ports refuses)
                rates[key] = (key[0], key[1], _rate(key[0], key[1]))
        one = rates[pairs.pop()] if len(pairs) == 1 else None
        pi = _ints(P)
        lines = range(line0 + 1, line0 + 1 + m)
        # the nodes: runs of lines of one GUID, one kind each
        starts = list(compress(range(m), map(ne, G, chain((prev_g,), G))))
        ns = len(starts)
        nca = K.count("CA")
        uniform = nca == m or not nca and K.count(K[0]) == m
        if uniform:
            if K[0] != prev_k and (not ns or starts[0]):
                return _DECLINE
        elif not set(compress(range(m), map(ne, K, chain((prev_k,), K)))).issubset(starts):
            return _DECLINE
        s0 = starts[0] if ns else m
        gl: Any = None  # per line: its node's GUID (one object a node)
        if s0:  # the chunk goes on with the open node
            gl = list(repeat(cur[1], s0))
            if cur[0] == "CA":
                if "" in RK[:s0]:
                    cur[6].extend(compress(pi[:s0], map(not_, RK[:s0])))
            else:
                cur[2] = max(cur[2], max(pi[:s0]))
        if ns:
            if cur is not None:
                finish(cur)
            before = len(hcas) + len(switches)
            if ns == m and nca == m:  # HCAs of one line each: no Python step per HCA
                sg = G  # (an HCA's GUID is not interned: its lines and the links of its one line share the object)
                ds = list(map(add, LD, UD))
                if "" in ds:
                    return _DECLINE
                unl: Any = repeat((), m)
                if "" in RK:
                    unl = list(unl)
                    for k in compress(range(m), map(not_, RK)):
                        unl[k] = (pi[k],)
                hcas.update(zip(sg, zip(ds, unl, lines)))
                del hcas[sg[-1]]  # open: it may go on in the next chunk
                cur = ["CA", sg[-1], pi[-1], ds[-1], int(L[-1]), lines[-1], [] if RK[-1] else [pi[-1]]]
                gl = G
            else:
                ends = starts[1:]
                ends.append(m)
                lens = list(map(sub, ends, starts))
                sg = list(map(G.__getitem__, starts))
                nk = list(map(K.__getitem__, starts))
                one_ca = list(map(and_, map(is_ca, nk), map((1).__eq__, lens)))  # HCAs of one line
                n_one = one_ca.count(True)
                todo: Any = range(ns)
                if n_one and n_one == nk.count("CA"):  # every HCA of the chunk has one line: no Python step each
                    idx = list(compress(range(ns), one_ca))
                    if idx[-1] == ns - 1:
                        idx.pop()  # the chunk's last node stays open
                    at = list(map(starts.__getitem__, idx))
                    ds = list(map(add, map(LD.__getitem__, at), map(UD.__getitem__, at)))
                    if "" in ds:
                        return _DECLINE
                    unl = repeat(())
                    if "" in map(RK.__getitem__, at):
                        unl = [() if RK[s] else (pi[s],) for s in at]
                    hcas.update(zip(map(sg.__getitem__, idx), zip(ds, unl, map(lines.__getitem__, at))))
                    todo = list(compress(range(ns), map(not_, one_ca)))
                    if one_ca[-1]:
                        todo.append(ns - 1)
                for k in todo:
                    s = starts[k]
                    e = ends[k]
                    desc = LD[s] or UD[s]
                    if not desc:
                        return _DECLINE
                    kind = nk[k]
                    guid = sg[k]
                    if kind != "CA":  # (a switch's GUID is interned: the links name it too)
                        guid = sg[k] = intern(guid, guid)
                    node = [kind, guid, max(pi[s:e]), desc, int(L[s]), lines[s], []]
                    if kind == "CA" and "" in RK[s:e]:
                        node[6] = list(compress(pi[s:e], map(not_, RK[s:e])))
                    if e < m:
                        finish(node)
                    else:
                        cur = node
                runs = chain.from_iterable(map(repeat, sg, lens))
                gl = list(runs) if gl is None else gl + list(runs)
            if len(hcas) + len(switches) != before + ns - 1:
                return _DECLINE  # a node's lines are not consecutive
            if cur[1] in hcas or cur[1] in switches:
                return _DECLINE
            prev_g, prev_k = G[-1], K[-1]
        else:
            gl = list(repeat(cur[1], m))
        # the links of the HCAs' lines
        if nca:
            if nca == m and "" not in RK:
                cg, cp, crk, crp, crg, cw, cs, cl = gl, pi, RK, RP, RG, W, S, lines
            else:
                lk = list(map(bool, RK)) if nca == m else list(map(and_, map(is_ca, K), map(bool, RK)))
                cg, cp, crk, crp, crg = (tuple(compress(c, lk)) for c in (gl, pi, RK, RP, RG))
                cw, cs, cl = tuple(compress(W, lk)), tuple(compress(S, lk)), tuple(compress(lines, lk))
            nl = len(cg)
            if nl:
                if "CA" in crk:
                    return _DECLINE  # two HCAs linked
                crg = list(map(intern, crg, crg))
                crp = _ints(crp)
                ca_claims += nl
                acc_ca += claims(zip(repeat(_K), cg, cp, crg, crp))
                ww, ss, rr = rate_cols(cw, cs, nl)
                before = len(hca_links)
                hca_links.update(zip(zip(cg, cp), zip(crg, crp, ww, ss, rr, cl)))
                if len(hca_links) != before + nl:
                    return _DECLINE  # a port listed twice
        # the links of the switches' lines
        if nca < m:
            if nca:
                sm = list(map(not_, map(is_ca, K)))
                xg, xp, xrk, xrp, xrg = (tuple(compress(c, sm)) for c in (gl, pi, RK, RP, RG))
                xw, xs, xl = tuple(compress(W, sm)), tuple(compress(S, sm)), tuple(compress(lines, sm))
            else:
                xg, xp, xrk, xrp, xrg, xw, xs, xl = gl, pi, RK, RP, RG, W, S, lines
            nh = xrk.count("CA")
            nun = xrk.count("")
            if nh:
                hm = list(map(is_ca, xrk))
                sw_claims += nh
                acc_ca -= claims(zip(repeat(_K), compress(xrg, hm), _ints(compress(xrp, hm)), compress(xg, hm),
                                     compress(xp, hm)))
            nsw = len(xrk) - nh - nun
            if nsw:
                if nh or nun:
                    wm = list(map(is_sw, xrk))
                    xg, xp, xrg = (tuple(compress(c, wm)) for c in (xg, xp, xrg))
                    xrp = _ints(compress(xrp, wm))
                    if one is None:
                        xw, xs = tuple(compress(xw, wm)), tuple(compress(xs, wm))
                    xl = tuple(compress(xl, wm))
                else:
                    xrp = _ints(xrp)
                fm = list(map(lt, xg, xrg))
                nf = fm.count(True)
                if nf < nsw:
                    bm = list(map(gt, xg, xrg))
                    if nf + bm.count(True) != nsw:
                        return _DECLINE  # a switch linked to itself
                if nf:
                    fwd += nf
                    if nf < nsw:
                        xg_, xp_, xrg_, xrp_ = (list(compress(c, fm)) for c in (xg, xp, xrg, xrp))
                        fw, fs = (compress(xw, fm), compress(xs, fm)) if one is None else (None, None)
                        fl = compress(xl, fm)
                    else:
                        xg_, xp_, xrg_, xrp_, fw, fs, fl = xg, xp, xrg, xrp, xw, xs, xl
                    frg = list(map(intern, xrg_, xrg_))
                    acc_sw += claims(zip(repeat(_K), xg_, xp_, frg, xrp_))
                    ww, ss, rr = rate_cols(fw, fs, nf)
                    switch_links.extend(zip(xg_, xp_, frg, xrp_, ww, ss, rr, fl))
                if nf < nsw:
                    bwd += nsw - nf
                    acc_sw -= claims(zip(repeat(_K), compress(xrg, bm), compress(xrp, bm), compress(xg, bm),
                                         compress(xp, bm)))
        line0 += m
    if cur is None:
        return _DECLINE
    finish(cur)
    if not _consistent(g, acc_ca or acc_sw, ca_claims, sw_claims, fwd, bwd):
        return _DECLINE
    return g


def _finish_node(g: FabricGraph, node: list) -> None:
    """A node of the ports form, once its last line is read: an HCA (ports known without a link: the unlinked
    ones) or a switch."""
    kind, guid, nports, desc, lid, line, unlinked = node
    if kind == "ca":
        g.hcas[guid] = (desc, tuple(sorted(set(unlinked))) if unlinked else (), line)
    else:
        g.switches[guid] = Switch(guid=guid, desc=desc, nports=nports, line=line, lid=lid, kind=kind)
