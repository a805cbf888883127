"""Parsers for iproute2 ``dcb pfc show`` and ``dcb app show`` (iproute2 dcb/dcb_pfc.c, dcb_app.c).

Text, ``dcb pfc show dev X`` (every token is printed as ``"%s "``, so lines end with a space)::

    pfc-cap 8 macsec-bypass off delay 4096
    prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off
    requests 0:0 1:0 ...          (``-s`` only)
    indications 0:0 1:0 ...       (``-s`` only)

JSON, ``dcb -j pfc show dev X``: ``{"pfc_cap":8,"macsec_bypass":false,"delay":4096,
"prio_pfc":[false,...]}`` plus optional ``requests``/``indications`` arrays.

Text, ``dcb app show dev X``: one line per selector, ``dscp-prio 0:0 CS3:3 AF31:3``,
``pcp-prio 1nd:1 2de:2``, ``default-prio 3``, ``ethtype-prio 8906:3`` (hex without ``0x``),
``stream-port-prio 4791:3``, ``dgram-port-prio ...``, ``port-prio ...``. DSCP values are printed with
their ``/etc/iproute2/rt_dsfield`` name unless ``-N`` is given. Quirk: the table entry for DSCP 0 is
the built-in ``"0"`` until the file has been read, so DSCP 0 prints as ``0`` or ``default`` depending
on which entries were printed before it. An empty APP table prints nothing.

JSON, ``dcb -j app show dev X``: ``{"dscp_prio":[[24,3," "],...],"pcp_prio":[["1nd",1," "]],
"default_prio":[3]}``. Since iproute2 6.5 every pair carries a trailing ``" "`` string (a
``print_string(PRINT_ANY, ..., " ")`` meant for the text output); older versions print ``[24,3]``.
DSCPs are always numeric in JSON.
"""

from __future__ import annotations

import re

from ncclctl.parsers._common import (
    dec,
    json_line,
    last_line,
    load_json,
    perr,
    run_parser,
    split_lines,
    strip_ansi,
)
from ncclctl.record import record

__all__ = ["DSCP_NAMES", "DcbApp", "DcbPfc", "parse_dcb_app", "parse_dcb_pfc"]

_PFC_FIX = "pass the unedited output of `dcb pfc show dev <if>` or `dcb -j pfc show dev <if>`"
_APP_FIX = (
    "pass the unedited output of `dcb -j -N app show dev <if>` (or `dcb -N app show dev <if>`)"
)

#: DSCP names from iproute2's etc/iproute2/rt_dsfield (DS field value >> 2), plus the pre-2014 TOS
#: names that older distributions may still ship in /etc/iproute2/rt_dsfield.
DSCP_NAMES: dict[str, int] = {
    "default": 0,
    "CS1": 8, "CS2": 16, "CS3": 24, "CS4": 32, "CS5": 40, "CS6": 48, "CS7": 56,
    "AF11": 10, "AF12": 12, "AF13": 14,
    "AF21": 18, "AF22": 20, "AF23": 22,
    "AF31": 26, "AF32": 28, "AF33": 30,
    "AF41": 34, "AF42": 36, "AF43": 38,
    "EF": 46,
    # legacy TOS-precedence names (rt_dsfield before iproute2 3.17)
    "reliability": 1, "throughput": 2, "lowdelay": 4,
    "priority": 8, "immediate": 16, "flash": 24, "flash-override": 32,
    "critical": 40, "internet": 48, "network": 56,
}  # fmt: skip
_DSCP_LOWER = {k.lower(): v for k, v in DSCP_NAMES.items()}

_MAP_RE = re.compile(r"(?P<key>[^:\s]+):(?P<val>\S+)")
_PCP_RE = re.compile(r"(?P<pcp>[0-7])(?P<dei>nd|de)", re.ASCII)
_HEX_RE = re.compile(r"(?:0[xX])?[0-9a-fA-F]{1,4}", re.ASCII)


@record
class DcbPfc:
    #: Number of traffic classes that may use PFC; None when not printed.
    pfc_cap: int | None
    macsec_bypass: bool | None
    #: PFC delay allowance (bit times); None when not printed.
    delay: int | None
    #: PFC on/off for priorities 0..7.
    prio_pfc: tuple[bool, ...]
    #: ``-s`` pause-frame counters per priority, else None.
    requests: tuple[int, ...] | None = None
    indications: tuple[int, ...] | None = None

    @property
    def enabled_priorities(self) -> tuple[int, ...]:
        return tuple(i for i, on in enumerate(self.prio_pfc) if on)


@record
class DcbApp:
    #: ``(dscp, prio)`` pairs, sorted; one DSCP may map to several priorities.
    dscp_prio: tuple[tuple[int, int], ...]
    #: ``(pcp, prio)`` pairs with pcp spelled ``"<0-7>nd"`` / ``"<0-7>de"`` (drop-eligible).
    pcp_prio: tuple[tuple[str, int], ...]
    #: ``default-prio`` values.
    default_prio: tuple[int, ...]
    ethtype_prio: tuple[tuple[int, int], ...] = ()
    stream_port_prio: tuple[tuple[int, int], ...] = ()
    dgram_port_prio: tuple[tuple[int, int], ...] = ()
    port_prio: tuple[tuple[int, int], ...] = ()

    def prios_for_dscp(self, dscp: int) -> tuple[int, ...]:
        return tuple(sorted({p for d, p in self.dscp_prio if d == dscp}))


def parse_dcb_pfc(text: str, *, source: str = "dcb pfc show") -> DcbPfc:
    """Parse ``dcb [-s] pfc show dev X`` text or ``dcb -j pfc show dev X`` JSON."""
    return run_parser(_parse_pfc, text, source, "dcb pfc")


def parse_dcb_app(text: str, *, source: str = "dcb app show") -> DcbApp:
    """Parse ``dcb [-N] app show dev X`` text or ``dcb -j [-N] app show dev X`` JSON.

    Empty output (empty APP table) gives an empty :class:`DcbApp`.
    """
    return run_parser(_parse_app, text, source, "dcb app")


def _is_json(text: str) -> bool:
    return text.lstrip()[:1] in ("{", "[")


# ---------------------------------------------------------------------------------------- dcb pfc


def _parse_pfc(text: str, source: str) -> DcbPfc:
    if _is_json(text):
        return _pfc_json(text, source)
    lines = split_lines(text)
    toks = [
        (tok, lineno)
        for lineno, raw in enumerate(lines, 1)
        for tok in strip_ansi(raw).split()
    ]
    if not toks:
        raise perr(source, 1, "empty dcb pfc output", _PFC_FIX)
    values: dict[str, tuple[object, int]] = {}
    arrays: dict[str, tuple[dict[int, str], int]] = {}
    scalar_keys = ("pfc-cap", "macsec-bypass", "delay")
    array_keys = ("prio-pfc", "requests", "indications")
    known = scalar_keys + array_keys
    i = 0
    while i < len(toks):
        tok, ln = toks[i]
        if tok in scalar_keys:
            if i + 1 >= len(toks) or toks[i + 1][0] in known:
                raise perr(source, ln, f"'{tok}' without a value (truncated?)", _PFC_FIX)
            if tok in values:
                raise perr(source, ln, f"'{tok}' given twice", _PFC_FIX)
            val, vln = toks[i + 1]
            if tok == "macsec-bypass":
                if val not in ("on", "off"):
                    raise perr(source, vln, f"macsec-bypass: expected on/off, got {val!r}", _PFC_FIX)
                values[tok] = (val == "on", vln)
            else:
                values[tok] = (dec(val, source, vln, tok, _PFC_FIX), vln)
            i += 2
        elif tok in array_keys:
            if tok in arrays:
                raise perr(source, ln, f"'{tok}' given twice", _PFC_FIX)
            entries: dict[int, str] = {}
            i += 1
            while i < len(toks) and (m := _MAP_RE.fullmatch(toks[i][0])) is not None:
                idx = dec(m["key"], source, toks[i][1], f"{tok} index", _PFC_FIX)
                if idx > 7 or idx in entries:
                    raise perr(source, toks[i][1], f"{tok}: bad or repeated index {idx}", _PFC_FIX)
                entries[idx] = m["val"]
                i += 1
            arrays[tok] = (entries, ln)
        elif _MAP_RE.fullmatch(tok):
            raise perr(source, ln, f"'{tok}' outside of any 'prio-pfc'-style list", _PFC_FIX)
        else:
            # unknown keyword from a newer iproute2: skip it and its value/list
            i += 1
            if i < len(toks) and toks[i][0] not in known:
                if _MAP_RE.fullmatch(toks[i][0]):
                    while i < len(toks) and _MAP_RE.fullmatch(toks[i][0]):
                        i += 1
                else:
                    i += 1

    if "prio-pfc" not in arrays:
        raise perr(source, last_line(lines), "no 'prio-pfc' list (truncated output?)", _PFC_FIX)
    entries, ln = arrays["prio-pfc"]
    if sorted(entries) != list(range(8)):
        raise perr(source, ln, "prio-pfc must list priorities 0..7", _PFC_FIX)
    prio: list[bool] = []
    for k in range(8):
        v = entries[k]
        if v not in ("on", "off"):
            raise perr(source, ln, f"prio-pfc {k}: expected on/off, got {v!r}", _PFC_FIX)
        prio.append(v == "on")

    def counters(key: str) -> tuple[int, ...] | None:
        if key not in arrays:
            return None
        ents, cln = arrays[key]
        if sorted(ents) != list(range(8)):
            raise perr(source, cln, f"{key} must list priorities 0..7", _PFC_FIX)
        return tuple(dec(ents[k], source, cln, key, _PFC_FIX) for k in range(8))

    def scalar(key: str) -> object:
        return values[key][0] if key in values else None

    cap = scalar("pfc-cap")
    delay = scalar("delay")
    mbc = scalar("macsec-bypass")
    return DcbPfc(
        pfc_cap=cap if isinstance(cap, int) else None,
        macsec_bypass=mbc if isinstance(mbc, bool) else None,
        delay=delay if isinstance(delay, int) else None,
        prio_pfc=tuple(prio),
        requests=counters("requests"),
        indications=counters("indications"),
    )


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _pfc_json(text: str, source: str) -> DcbPfc:
    doc = load_json(text, source, "dcb -j pfc", _PFC_FIX)
    if isinstance(doc, list) and len(doc) == 1:
        doc = doc[0]
    if not isinstance(doc, dict):
        raise perr(source, 1, "dcb -j pfc output must be a JSON object", _PFC_FIX)

    def bad(key: str, what: str) -> Exception:
        return perr(source, json_line(text, f'"{key}"'), f"dcb -j pfc: '{key}' {what}", _PFC_FIX)

    if "prio_pfc" not in doc:
        raise perr(source, 1, "dcb -j pfc: no 'prio_pfc' key", _PFC_FIX)
    pp = doc["prio_pfc"]
    if not isinstance(pp, list) or len(pp) != 8 or not all(isinstance(v, bool) for v in pp):
        raise bad("prio_pfc", "must be an array of 8 booleans")
    out: dict[str, int | None] = {}
    for key in ("pfc_cap", "delay"):
        v = doc.get(key)
        if v is not None and not (_is_int(v) and v >= 0):
            raise bad(key, "must be a non-negative integer")
        out[key] = v
    mbc = doc.get("macsec_bypass")
    if mbc is not None and not isinstance(mbc, bool):
        raise bad("macsec_bypass", "must be true/false")
    counters: dict[str, tuple[int, ...] | None] = {}
    for key in ("requests", "indications"):
        v = doc.get(key)
        if v is None:
            counters[key] = None
            continue
        if not isinstance(v, list) or len(v) != 8 or not all(_is_int(x) and x >= 0 for x in v):
            raise bad(key, "must be an array of 8 counters")
        counters[key] = tuple(v)
    return DcbPfc(
        pfc_cap=out["pfc_cap"],
        macsec_bypass=mbc,
        delay=out["delay"],
        prio_pfc=tuple(pp),
        requests=counters["requests"],
        indications=counters["indications"],
    )


# ---------------------------------------------------------------------------------------- dcb app

_APP_KEYS = {
    "dscp-prio": "dscp_prio",
    "pcp-prio": "pcp_prio",
    "default-prio": "default_prio",
    "ethtype-prio": "ethtype_prio",
    "stream-port-prio": "stream_port_prio",
    "dgram-port-prio": "dgram_port_prio",
    "port-prio": "port_prio",
}


def _prio(tok: str, source: str, line: int, what: str, fix: str) -> int:
    p = dec(tok, source, line, what, fix)
    if p > 7:
        raise perr(source, line, f"{what}: priority {p} out of range 0..7", fix)
    return p


def _dscp_text(tok: str, source: str, line: int) -> int:
    if tok.isascii() and tok.isdigit():
        d = dec(tok, source, line, "dscp-prio", _APP_FIX)
    elif tok.lower() in _DSCP_LOWER:
        d = _DSCP_LOWER[tok.lower()]
    else:
        raise perr(
            source,
            line,
            f"dscp-prio: unknown DSCP name {tok!r} (a site-specific /etc/iproute2/rt_dsfield?)",
            "capture with `dcb -N app show dev <if>` (numeric DSCPs) or use the JSON output",
        )
    if d > 63:
        raise perr(source, line, f"dscp-prio: DSCP {d} out of range 0..63", _APP_FIX)
    return d


def _pcp_name(tok: object, source: str, line: int) -> str:
    if isinstance(tok, str) and _PCP_RE.fullmatch(tok):
        return tok
    if isinstance(tok, int) and not isinstance(tok, bool) and 0 <= tok <= 15:
        return f"{tok % 8}{'de' if tok >= 8 else 'nd'}"
    if isinstance(tok, str) and tok.isascii() and tok.isdigit() and len(tok) <= 2:
        n = int(tok)
        if n <= 15:
            return f"{n % 8}{'de' if n >= 8 else 'nd'}"
    raise perr(source, line, f"pcp-prio: bad PCP {tok!r} (expected 0nd..7de or 0..15)", _APP_FIX)


def _parse_app(text: str, source: str) -> DcbApp:
    if _is_json(text):
        return _app_json(text, source)
    found: dict[str, list] = {v: [] for v in _APP_KEYS.values()}
    seen: dict[str, int] = {}
    for lineno, raw in enumerate(split_lines(text), 1):
        tokens = strip_ansi(raw).split()
        if not tokens:
            continue
        key = tokens[0]
        if key not in _APP_KEYS:
            if _MAP_RE.fullmatch(key):
                raise perr(source, lineno, f"mapping {key!r} without a selector keyword", _APP_FIX)
            continue  # unknown selector from a newer iproute2
        if key in seen:
            raise perr(source, lineno, f"'{key}' printed twice (line {seen[key]} too)", _APP_FIX)
        seen[key] = lineno
        if len(tokens) == 1:
            raise perr(source, lineno, f"'{key}' without entries (truncated?)", _APP_FIX)
        dest = found[_APP_KEYS[key]]
        for tok in tokens[1:]:
            if key == "default-prio":
                dest.append(_prio(tok, source, lineno, key, _APP_FIX))
                continue
            m = _MAP_RE.fullmatch(tok)
            if not m:
                raise perr(source, lineno, f"{key}: expected KEY:PRIO, got {tok!r}", _APP_FIX)
            prio = _prio(m["val"], source, lineno, key, _APP_FIX)
            k = m["key"]
            if key == "dscp-prio":
                dest.append((_dscp_text(k, source, lineno), prio))
            elif key == "pcp-prio":
                dest.append((_pcp_name(k, source, lineno), prio))
            elif key == "ethtype-prio":
                if not _HEX_RE.fullmatch(k):
                    raise perr(source, lineno, f"{key}: bad EtherType {k!r}", _APP_FIX)
                dest.append((int(k, 16), prio))
            else:
                port = dec(k, source, lineno, key, _APP_FIX)
                if not 0 < port < 65536:
                    raise perr(source, lineno, f"{key}: port {port} out of range", _APP_FIX)
                dest.append((port, prio))
    return _app_result(found)


def _app_result(found: dict[str, list]) -> DcbApp:
    def pairs(key: str) -> tuple:
        return tuple(sorted(set(found[key])))

    return DcbApp(
        dscp_prio=pairs("dscp_prio"),
        pcp_prio=pairs("pcp_prio"),
        default_prio=tuple(found["default_prio"]),
        ethtype_prio=pairs("ethtype_prio"),
        stream_port_prio=pairs("stream_port_prio"),
        dgram_port_prio=pairs("dgram_port_prio"),
        port_prio=pairs("port_prio"),
    )


def _app_json(text: str, source: str) -> DcbApp:
    doc = load_json(text, source, "dcb -j app", _APP_FIX)
    if isinstance(doc, list) and len(doc) == 1:
        doc = doc[0]
    if not isinstance(doc, dict):
        raise perr(source, 1, "dcb -j app output must be a JSON object", _APP_FIX)
    found: dict[str, list] = {v: [] for v in _APP_KEYS.values()}
    for key, value in doc.items():
        if key not in found:
            continue  # unknown selector: ignored
        line = json_line(text, f'"{key}"')
        if not isinstance(value, list):
            raise perr(source, line, f"dcb -j app: '{key}' must be an array", _APP_FIX)
        dest = found[key]
        for entry in value:
            if key == "default_prio":
                if not _is_int(entry):
                    raise perr(source, line, f"default_prio: bad entry {entry!r}", _APP_FIX)
                dest.append(_prio(str(entry), source, line, key, _APP_FIX))
                continue
            # [pid, prio] or, since iproute2 6.5, [pid, prio, " "]
            if (
                not isinstance(entry, list)
                or len(entry) < 2
                or not all(isinstance(x, str) for x in entry[2:])
            ):
                raise perr(source, line, f"{key}: bad entry {entry!r}", _APP_FIX)
            pid, prio_v = entry[0], entry[1]
            if not _is_int(prio_v):
                raise perr(source, line, f"{key}: bad priority {prio_v!r}", _APP_FIX)
            prio = _prio(str(prio_v), source, line, key, _APP_FIX)
            if key == "pcp_prio":
                dest.append((_pcp_name(pid, source, line), prio))
                continue
            if not _is_int(pid) or pid < 0:
                raise perr(source, line, f"{key}: bad selector value {pid!r}", _APP_FIX)
            if key == "dscp_prio" and pid > 63:
                raise perr(source, line, f"dscp_prio: DSCP {pid} out of range 0..63", _APP_FIX)
            if key != "dscp_prio" and pid > 0xFFFF:
                raise perr(source, line, f"{key}: value {pid} out of range", _APP_FIX)
            dest.append((pid, prio))
    return _app_result(found)
