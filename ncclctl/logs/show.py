"""``ncclctl log show``: what a set of NCCL logs says, per host, process, communicator and rank (text and JSON).

:func:`summary` is the one document every log command starts from (``log show --format json`` prints it, ``log
diff`` compares two of them, ``log check`` reads the same :class:`~ncclctl.logs.records.LogSet`); :func:`text`
renders it for a person: the inputs and how much of them was NCCL, versions, settings, the hosts with their
networks and NICs, each communicator with its channels, rings, trees, transports and the NIC each local GPU
used, then warnings, errors and the lines no reader recognised.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable, Iterator

from ncclctl.logs.records import Comm, LogSet, Member, Proc, hostlist


def ranges(nums: Iterable[int]) -> str:
    """``[0, 1, 2, 5, 7, 8]`` -> ``0-2,5,7-8``."""
    xs = sorted(set(nums))
    if not xs:
        return "-"
    out, start, prev = [], xs[0], xs[0]
    for x in xs[1:]:
        if x == prev + 1:
            prev = x
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = x
    out.append(str(start) if start == prev else f"{start}-{prev}")
    return ",".join(out)


def nic_label(proc: Proc) -> list[str]:
    return [f"{n.name}:{n.port}/{n.link}" if n.port is not None else f"{n.name}/{n.link}" for n in proc.ib]


def member_nics(m: Member) -> list[str]:
    """The NICs a rank's NET connections used, in channel order (names from its process's NET/IB list)."""
    seen: dict[str, None] = {}
    for ch in sorted(m.net_ch, key=_chkey):
        for _d, dev, _g, _p in sorted(m.net_ch[ch], key=lambda t: (t[0], t[1])):
            seen.setdefault(m.proc.nic_name(dev), None)
    return list(seen)


def member_nics_by_channel(m: Member) -> dict[Any, list[str]]:
    return {int(ch) if ch.isdigit() else ch: sorted({m.proc.nic_name(dev) for _d, dev, _g, _p in m.net_ch[ch]})
            for ch in sorted(m.net_ch, key=_chkey)}


def _chkey(ch: str) -> tuple:
    return (0, int(ch), "") if ch.isdigit() else (1, 0, ch)


def member_gdr(m: Member) -> str | None:
    """``on``, ``off`` or ``mixed`` for a rank's NET connections; None without any."""
    flags = {g for chs in m.net_ch.values() for _d, _dev, g, _p in chs}
    if not flags:
        return None
    return "mixed" if len(flags) == 2 else ("on" if True in flags else "off")


def network_of(proc: Proc) -> str:
    if proc.network:
        return proc.network
    if proc.ib:
        return proc.ib_net or "IB"
    if proc.socket:
        return "Socket"
    return "?"


class _Each:
    """A sequence computed again at each walk (``map(fn, items)``): :func:`text` goes through every process and
    rank twice without holding one document per process or rank (about 1 KB each: gigabytes at millions of ranks),
    and ``log show --format json`` writes them one at a time (:func:`ncclctl.render.dump_to`)."""

    __slots__ = ("_fn", "_items")
    __json_sequence__ = True  # ncclctl.render.dump_to writes it element by element


    def __init__(self, items: list, fn: Any) -> None:
        self._items, self._fn = items, fn

    def __iter__(self) -> Iterator[Any]:
        return map(self._fn, self._items)


def comm_summary(c: Comm, *, lazy: bool = False) -> dict[str, Any]:
    """The document of one communicator; ``lazy``: its ``ranks`` built at each walk (:class:`_Each`)."""
    ranks = c.by_rank()
    mems = c.members
    hosts = sorted({m.host for m in mems})
    doc: dict[str, Any] = {
        "id": c.comm_id, "key": c.key, "nranks": c.nranks, "ranks_seen": len(ranks),
        "nnodes": _most(m.nnodes for m in mems), "local_ranks": _most(m.local_ranks for m in mems),
        "hosts": len(hosts),
        "init_started": sum(1 for m in mems if m.started), "init_complete": sum(1 for m in mems if m.completed),
        "init_seconds_max": max((m.init_total for m in mems if m.init_total is not None), default=None),
        "init_function": _most(m.init_fn for m in mems),
        "coll_channels": dict(Counter(m.coll_channels for m in mems if m.coll_channels is not None)),
        "nvls_channels": dict(Counter(m.nvls_channels for m in mems if m.nvls_channels is not None)),
        "p2p_channels": dict(Counter(m.p2p_channels for m in mems if m.p2p_channels is not None)),
        "transports": dict(sum((Counter(m.conns) for m in mems), Counter())),
        "rings": [],
        "trees": {},
        "graphs": [],
        "ranks": [],
    }
    r0 = ranks.get(0)
    ring_src = r0 if r0 is not None and r0.rings else next((m for m in mems if m.rings), None)
    if ring_src is not None:
        doc["rings"] = [{"channel": ch, "ranks": rs, "truncated": cut} for ch, (rs, cut) in sorted(ring_src.rings.items())]
        doc["nrings"] = ring_src.nrings
    for r, m in sorted(ranks.items()):
        if m.trees:
            doc["trees"][str(r)] = {str(ch): {"down": list(d), "up": up} for ch, (d, up) in sorted(m.trees.items())}
    gmem = next((m for m in mems if m.graphs), None)
    if gmem is not None:
        doc["graphs"] = [{**{k: v for k, v in g.items() if not k.startswith("_")}, "rank": gmem.rank,
                          "host": gmem.host} for g in gmem.graphs]
    by_rank = sorted(ranks.items())
    doc["ranks"] = _Each(by_rank, _rank_doc) if lazy else [_rank_doc(rm) for rm in by_rank]
    return doc


def _rank_doc(rm: tuple[int, Member]) -> dict[str, Any]:
    r, m = rm
    return {
        "rank": r, "host": m.host, "pid": m.proc.pid, "dev": m.dev, "busid": m.busid, "nvml_dev": m.nvml_dev,
        "init_complete": m.completed is not None, "init_seconds": m.init_total,
        "coll_channels": m.coll_channels, "nics": member_nics(m), "gdr": member_gdr(m),
        "nics_by_channel": {str(k): v for k, v in member_nics_by_channel(m).items()},
        "transports": dict(sorted(m.conns.items())),
        "local_peers": {str(k): v for k, v in sorted(m.local_peers.items())},
        "pxn": m.pxn, "ring_gdr": m.ring_gdr, "nvls": m.nvls,
    }


def _most(values: Iterable[Any]) -> Any:
    c = Counter(v for v in values if v is not None)
    return c.most_common(1)[0][0] if c else None


def proc_doc(p: Proc) -> dict[str, Any]:
    return {
        "process": p.key, "host": p.host, "pid": p.pid, "devices": sorted(p.devs), "version": p.version,
        "cuda_driver": p.cuda_driver, "network": network_of(p),
        "bootstrap": [f"{n}:{a}" for n, a in p.bootstrap],
        "nics": nic_label(p), "relaxed_ordering": p.ib_ro, "oob": f"{p.oob[0]}:{p.oob[1]}" if p.oob else None,
        "ib_no_device": p.ib_none is not None,
        "socket_interfaces": [f"{n}:{a}" for n, a in p.socket],
        "gdr_hca": {k: {"enabled": v[0], "note": v[1]} for k, v in sorted(p.gdr_hca.items())},
        "dmabuf": p.dmabuf is not None,
        "settings": {k: v for k, (v, _e) in sorted(p.settings.items())},
        "warnings": dict(sorted(p.warn_counts.items())),
        "ranks": sorted({m.rank for m in p.members if m.rank is not None}),
        "rails": _rails_doc(p),
    }


def _rails_doc(p: Proc) -> list[dict[str, Any]]:
    from ncclctl.logs.rails import rails_doc

    return rails_doc(p)


def _versions(procs: Iterable[Proc]) -> dict[str, int]:
    versions: dict[str, int] = {}
    for p in procs:
        if p.version:
            versions[p.version] = versions.get(p.version, 0) + 1
    return dict(sorted(versions.items()))


def _nranks(ls: LogSet) -> int:
    return len({(m.host, m.proc.pid, m.dev, m.rank) for m in ls.members() if m.rank is not None})


def counts(ls: LogSet) -> dict[str, Any]:
    """The figures of :func:`summary` that ``log check`` quotes, without its lists (a document per process and
    rank, about 2 KB each: half the memory of a check of millions of ranks); ``communicators`` is their count."""
    return {"lines": ls.lines, "nccl_lines": ls.nccl_lines, "unrecognised": ls.unrecognised,
            "nccl_version": ls.version(), "nccl_versions": _versions(ls.procs.values()), "hosts": len(ls.hosts),
            "processes": len(ls.procs), "ranks": _nranks(ls), "communicators": len(ls.comms)}


def summary(ls: LogSet, *, lazy: bool = False) -> dict[str, Any]:
    """The JSON document of ``log show``; ``lazy``: the per-process and per-rank lists built at each walk instead
    of held (:class:`_Each`: for :func:`text` and :func:`ncclctl.render.dump_to`, not for ``len`` or indexing)."""
    procs = sorted(ls.procs.values(), key=_proc_key)
    settings: dict[str, dict[str, int]] = {}
    for p in procs:
        for k, (v, _e) in p.settings.items():
            settings.setdefault(k, {}).setdefault(v, 0)
            settings[k][v] += 1
    warns: dict[str, dict[str, Any]] = {}
    for p in procs:
        for kind, n in p.warn_counts.items():
            w = warns.setdefault(kind, {"count": 0, "processes": 0, "first": None})
            w["count"] += n
            w["processes"] += 1
        for kind, ev in p.warns:
            if warns[kind]["first"] is None:
                warns[kind]["first"] = ev.evidence()
    return {
        "inputs": [{"name": s.name, "lines": s.lines, "nccl_lines": s.nccl_lines, "gzip": s.gzip, "notes": s.notes}
                   for s in ls.sources],
        "lines": ls.lines, "nccl_lines": ls.nccl_lines, "recognised": ls.recognised,
        "unrecognised": ls.unrecognised,
        "unrecognised_examples": [e.evidence() for e in ls.unrecognised_examples],
        "nccl_version": ls.version(),
        "nccl_versions": _versions(procs),
        "hosts": len(ls.hosts), "processes": len(procs),
        "ranks": _nranks(ls),
        "settings": {k: dict(sorted(v.items())) for k, v in sorted(settings.items())},
        "process_list": _Each(procs, proc_doc) if lazy else [proc_doc(p) for p in procs],
        "communicators": [comm_summary(c, lazy=lazy) for c in ls.comms],
        "warnings": dict(sorted(warns.items())),
        "application_errors": [e.evidence() for e in ls.app_errors],
        "nccl_tests_output": ls.nccl_tests,
    }


def _proc_key(p: Proc) -> tuple:
    from ncclctl.names import natural_key

    return (natural_key(p.host or "~"), p.pid if p.pid is not None else -1)


# ---------------------------------------------------------------------------------------------------------------
# text


def text(ls: LogSet, doc: dict[str, Any] | None = None, *, ranks: bool = False) -> str:
    """The human report of ``log show`` (``ranks``: one line per rank and communicator, not only per host)."""
    d = doc if doc is not None else summary(ls, lazy=True)
    out: list[str] = []
    nin = len(d["inputs"])
    out.append(f"{nin} input{'s' if nin != 1 else ''}, {d['lines']:,} lines, {d['nccl_lines']:,} NCCL lines "
               f"({d['unrecognised']:,} unrecognised); {d['hosts']} host{'s' if d['hosts'] != 1 else ''}, "
               f"{d['processes']} process{'es' if d['processes'] != 1 else ''}, "
               f"{len(d['communicators'])} communicator{'s' if len(d['communicators']) != 1 else ''}")
    for s in d["inputs"]:
        for note in s["notes"]:
            out.append(f"  note: {s['name']}: {note}")
    if d["nccl_version"]:
        vs = d["nccl_versions"]
        if len(vs) > 1:
            out.append("NCCL versions differ: " + ", ".join(f"{v} ({n} processes)" for v, n in vs.items()))
        else:
            out.append(f"NCCL {d['nccl_version']}")
    else:
        out.append("NCCL version: not in the log (rank 0 prints it; NCCL_DEBUG=INFO or VERSION)")
    drivers = Counter(p["cuda_driver"] for p in d["process_list"] if p["cuda_driver"] is not None)
    if drivers:
        out.append("CUDA driver: " + ", ".join(f"{_cuda(v)}" + (f" ({n} processes)" if len(drivers) > 1 else "")
                                                 for v, n in sorted(drivers.items())))
    if d["settings"]:
        parts = []
        for k, vals in d["settings"].items():
            if len(vals) == 1:
                parts.append(f"{k}={next(iter(vals))}")
            else:
                parts.append(f"{k}=" + "|".join(f"{v} ({n})" for v, n in vals.items()))
        out.append("Settings NCCL reports: " + ", ".join(parts))
    out.append("")
    out += _hosts_text(ls, d)
    out += _rails_text(ls)
    for c, cd in zip(ls.comms, d["communicators"]):
        out.append("")
        out += _comm_text(c, cd, ranks=ranks)
    if d["warnings"] or d["application_errors"]:
        out.append("")
        out.append("Warnings and errors:")
        for kind, w in d["warnings"].items():
            out.append(f"  {kind}: {w['count']} WARN line{'s' if w['count'] != 1 else ''} in {w['processes']} "
                       f"process{'es' if w['processes'] != 1 else ''}; first: {w['first']}")
        for e in d["application_errors"][:5]:
            out.append(f"  application: {e}")
    if d["unrecognised"]:
        out.append("")
        out.append(f"Unrecognised NCCL lines: {d['unrecognised']:,} (first {min(5, len(d['unrecognised_examples']))}):")
        for e in d["unrecognised_examples"][:5]:
            out.append(f"  {e}")
    if d["nccl_tests_output"]:
        out.append("")
        out.append("The input holds nccl-tests output: 'ncclctl perf check' reads its results.")
    return "\n".join(out).rstrip() + "\n"


def _cuda(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}" if v >= 1000 else str(v)


def _hosts_text(ls: LogSet, d: dict[str, Any]) -> list[str]:
    """Hosts grouped by what they show (network, NICs, bootstrap interface, GDR per HCA)."""
    groups: dict[tuple, list[str]] = {}
    info: dict[tuple, dict[str, Any]] = {}
    # per host, what its processes show (sets, not the processes' documents: one is read at a time)
    by_host: dict[str, tuple[set[str], set[str], set[str], set[str], set[str]]] = {}
    for p in d["process_list"]:
        sets = by_host.setdefault(p["host"] or "?", (set(), set(), set(), set(), set()))
        a_nets, a_nics, a_boot, a_sock, a_gdr = sets
        a_nets.add(p["network"])
        if p["nics"]:
            a_nics.add(" ".join(p["nics"]))
        a_boot.update(b.split("<")[0] for b in p["bootstrap"][:1])
        if p["socket_interfaces"]:
            a_sock.add(" ".join(s.split("<")[0] for s in p["socket_interfaces"]))
        a_gdr.update(k for k, v in p["gdr_hca"].items() if not v["enabled"])
    for host, (s_nets, s_nics, s_boot, s_sock, s_gdr) in by_host.items():
        nets, nics, boot, sock, gdr_off = sorted(s_nets), sorted(s_nics), sorted(s_boot), sorted(s_sock), sorted(s_gdr)
        key = (tuple(nets), tuple(nics), tuple(_iface_names(boot)), tuple(sock), tuple(gdr_off))
        groups.setdefault(key, []).append(host)
        info[key] = {"boot": boot}
    out = ["Hosts:"]
    for key, hosts in sorted(groups.items(), key=lambda kv: kv[1][0]):
        nets_t, nics_t, _bootnames, sock_t, gdr_t = key
        nets, nics, sock, gdr_off = list(nets_t), list(nics_t), list(sock_t), list(gdr_t)
        line = f"  {hostlist(hosts)} ({len(hosts)} host{'s' if len(hosts) != 1 else ''}): network {'/'.join(nets)}"
        out.append(line)
        if nics:
            out.append(f"    NICs: {' | '.join(nics)}")
        if sock:
            out.append(f"    sockets: {' | '.join(sock)}")
        if info[key]["boot"]:
            shown = info[key]["boot"] if len(hosts) == 1 else _iface_names(info[key]["boot"])
            out.append(f"    bootstrap: {', '.join(shown)}")
        if gdr_off:
            out.append(f"    GPUDirect RDMA disabled for HCA {', '.join(gdr_off)}")
    return out


def _rails_text(ls: LogSet) -> list[str]:
    """The rails and planes NCCL assigned (2.30.7+), hosts grouped by what they show; "not in this log" when NCCL
    2.30.7+ ran with NICs and printed none."""
    from ncclctl.logs.rails import _version_has_rails, rails_text

    groups: dict[str, list[str]] = {}
    without = False
    for p in sorted(ls.procs.values(), key=_proc_key):
        t = rails_text(p)
        if t is None:
            without = without or bool(p.ib and _version_has_rails(p.version))
            continue
        hosts = groups.setdefault(t, [])
        if p.host not in hosts:
            hosts.append(p.host)
    if not groups:
        return (["  rails and planes NCCL assigned: not in this log (NCCL 2.30.7+ prints them with NCCL_DEBUG_SUBSYS "
                 "including NET or GRAPH)"] if without else [])
    out = ["  rails and planes NCCL assigned (-: none given; NCCL's N: derived by NCCL):"]
    for t, hosts in sorted(groups.items(), key=lambda kv: kv[1][0]):
        out.append(f"    {hostlist(hosts)}: {t}")
    return out


def _iface_names(items: Iterable[str]) -> list[str]:
    return sorted({i.split(":", 1)[0] for i in items})


def _comm_text(c: Comm, cd: dict[str, Any], *, ranks: bool) -> list[str]:
    n = cd["nranks"]
    head = f"{c.label}: {n if n is not None else '?'} ranks"
    if cd["nnodes"]:
        head += f", {cd['nnodes']} node{'s' if cd['nnodes'] != 1 else ''} x {cd['local_ranks']} local"
    else:
        head += f" on {cd['hosts']} host{'s' if cd['hosts'] != 1 else ''} in the log"
    seen = cd["ranks_seen"]
    if n is not None and seen != n:
        head += f" ({seen} seen in the log)"
    if cd["init_complete"] or cd["init_started"]:
        head += f"; Init COMPLETE {cd['init_complete']}/{n if n is not None else seen}"
    if cd["init_seconds_max"] is not None:
        head += f" (slowest {cd['init_seconds_max']:.2f} s)"
    out = [head]
    ch = cd["coll_channels"]
    if ch:
        out.append("  channels: " + ", ".join(f"{k} coll on {v} rank{'s' if v != 1 else ''}" for k, v in sorted(ch.items())))
    if cd["rings"]:
        r = cd["rings"][0]
        shown = " ".join(map(str, r["ranks"][:24])) + (" ..." if r["truncated"] or len(r["ranks"]) > 24 else "")
        out.append(f"  rings: {len(cd['rings'])}{'/' + str(cd['nrings']) if cd.get('nrings') else ''} "
                   f"(channel {r['channel']}: {shown})")
    if cd["trees"]:
        out.append(f"  trees: printed by {len(cd['trees'])} rank{'s' if len(cd['trees']) != 1 else ''}")
    for g in cd["graphs"][:4]:
        out.append(f"  graph pattern {g['pattern']}: {g['nchannels']} channels, type {g['type_intra']}/"
                   f"{g['type_inter']}, bw {g['bw_intra']:g}/{g['bw_inter']:g} GB/s"
                   + (f", crossNic {g['crossnic']}" if g["crossnic"] else ""))
    if cd["transports"]:
        out.append("  transports: " + ", ".join(f"{k} x{v}" for k, v in sorted(cd["transports"].items())))
    # NIC per local GPU, grouped by the pattern hosts share
    by_host: dict[str, dict[Any, tuple[str, ...]]] = {}
    for r in cd["ranks"]:
        if r["nics"]:
            by_host.setdefault(r["host"] or "?", {})[r["dev"]] = tuple(r["nics"]) + (("GDR " + r["gdr"],)
                                                                               if r["gdr"] else ())
    pats: dict[tuple, list[str]] = {}
    for host, devs in by_host.items():
        pats.setdefault(tuple(sorted(devs.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))), []).append(host)
    for pat, hosts in sorted(pats.items(), key=lambda kv: kv[1][0])[:8]:
        cells = []
        for dev, nics in pat:
            gdr = [x for x in nics if x.startswith("GDR ")]
            names = [x for x in nics if not x.startswith("GDR ")]
            cells.append(f"GPU{dev if dev is not None else '?'}->{'+'.join(names)}" + (f" ({gdr[0]})" if gdr else ""))
        out.append(f"  NICs on {hostlist(hosts)}: " + ", ".join(cells))
    if len(pats) > 8:
        out.append(f"  ... {len(pats) - 8} more NIC patterns (--format json has every rank)")
    if ranks:
        for r in cd["ranks"]:
            out.append(f"    rank {r['rank']:>4} {r['host'] or '?'}:{r['pid']} [{r['dev']}]"
                       + (f" busId {r['busid']}" if r["busid"] else "")
                       + (f" coll {r['coll_channels']}" if r["coll_channels"] is not None else "")
                       + (f" NICs {','.join(r['nics'])} GDR {r['gdr']}" if r["nics"] else "")
                       + ("" if r["init_complete"] else " (no Init COMPLETE)"))
    return out



def busid_text(busid: str) -> str:
    """NCCL's int64 bus id as printed in logs (``1b000``) -> ``0000:1b:00.0``."""
    s = busid.lower().lstrip("0x") if busid.lower().startswith("0x") else busid.lower()
    s = s.rjust(9, "0")
    return f"{s[:-5].rjust(4, '0')[-4:]}:{s[-5:-3]}:{s[-3:-1]}.{s[-1]}"

__all__ = ["busid_text", "comm_summary", "hostlist", "member_gdr", "member_nics", "member_nics_by_channel", "network_of",
           "nic_label", "proc_doc", "ranges", "summary", "text", "counts"]
