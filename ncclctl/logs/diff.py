"""``ncclctl log diff A B``: what changed between two runs, for "it was fast yesterday".

Both sides are read into :func:`ncclctl.logs.show.summary` documents and compared fact by fact: NCCL and CUDA
driver versions, the settings NCCL reports, hosts, networks and NIC lists, the rails and planes NCCL assigned
(2.30.7+), GPUDirect RDMA, and per communicator (matched by size, then order) the rank count, channels,
transports, NICs per local GPU, the first ring and the slowest initialisation. Counts of lines or pointers never count as a change.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ncclctl.logs.show import hostlist


def _procs_fact(doc: dict[str, Any], key: str) -> dict[str, int]:
    return dict(Counter(str(p[key]) for p in doc["process_list"] if p[key] not in (None, [], {})))


def _nics(doc: dict[str, Any]) -> dict[str, int]:
    return dict(Counter(" ".join(p["nics"]) for p in doc["process_list"] if p["nics"]))


def _rails(doc: dict[str, Any]) -> dict[str, int]:
    """Processes per set of rail/plane ids NCCL assigned (2.30.7+: the topology's line first, else the plugin's)."""
    out: Counter[str] = Counter()
    for p in doc["process_list"]:
        ids: dict[str, str] = {}
        for r in sorted(p["rails"], key=lambda r: r["kind"] != "topo"):
            ids.setdefault(r["name"], f"{r['rail']}/{r['plane']}")
        if ids:
            out[" ".join(f"{n}={v}" for n, v in sorted(ids.items()))] += 1
    return dict(out)


def _gdr(comm: dict[str, Any]) -> dict[str, int]:
    return dict(Counter(r["gdr"] for r in comm["ranks"] if r["gdr"]))


def _local_nics(comm: dict[str, Any]) -> dict[str, str]:
    out: dict[str, set[str]] = {}
    for r in comm["ranks"]:
        if r["nics"]:
            out.setdefault(f"GPU{r['dev']}", set()).add("+".join(r["nics"]))
    return {k: " | ".join(sorted(v)) for k, v in sorted(out.items())}


def _match(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[tuple[dict | None, dict | None]]:
    """Communicators paired by commId when both have it and it is shared, else by size and order."""
    pairs: list[tuple[dict | None, dict | None]] = []
    rest_b = list(b)
    for ca in a:
        pick = next((cb for cb in rest_b if ca["id"] and ca["id"] == cb["id"]), None)
        if pick is None:
            pick = next((cb for cb in rest_b if cb["nranks"] == ca["nranks"]), None)
        if pick is not None:
            rest_b.remove(pick)
        pairs.append((ca, pick))
    pairs += [(None, cb) for cb in rest_b]
    return pairs


def diff(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
    """The changes from summary ``a`` to summary ``b``: ``{"what", "a", "b"}`` each."""
    changes: list[dict[str, Any]] = []

    def cmp(what: str, x: Any, y: Any) -> None:
        if x != y:
            changes.append({"what": what, "a": x, "b": y})

    cmp("NCCL version", a["nccl_versions"] or a["nccl_version"], b["nccl_versions"] or b["nccl_version"])
    cmp("CUDA driver", _procs_fact(a, "cuda_driver"), _procs_fact(b, "cuda_driver"))
    keys = sorted(set(a["settings"]) | set(b["settings"]))
    for k in keys:
        va, vb = a["settings"].get(k), b["settings"].get(k)
        cmp(f"setting {k}", sorted(va) if va else None, sorted(vb) if vb else None)
    cmp("hosts", a["hosts"], b["hosts"])
    cmp("ranks", a["ranks"], b["ranks"])
    cmp("network", _procs_fact(a, "network"), _procs_fact(b, "network"))
    cmp("NET devices", _nics(a), _nics(b))
    rails_a, rails_b = _rails(a), _rails(b)
    if rails_a and rails_b:  # a log of NCCL before 2.30.7 (or without NET/GRAPH lines) has none: no change to report
        cmp("rails/planes NCCL assigned (NIC=rail/plane)", rails_a, rails_b)
    cmp("bootstrap interface", sorted({x.split(":", 1)[0] for p in a["process_list"] for x in p["bootstrap"][:1]}),
        sorted({x.split(":", 1)[0] for p in b["process_list"] for x in p["bootstrap"][:1]}))
    cmp("GPUDirect RDMA disabled for HCA", sorted({k for p in a["process_list"] for k, v in p["gdr_hca"].items()
                                                   if not v["enabled"]}),
        sorted({k for p in b["process_list"] for k, v in p["gdr_hca"].items() if not v["enabled"]}))
    for i, (ca, cb) in enumerate(_match(a["communicators"], b["communicators"])):
        name = f"communicator {i + 1}"
        if ca is None or cb is None:
            one = ca or cb
            assert one is not None
            cmp(f"{name} ({one['nranks']} ranks)", "present" if ca else None, "present" if cb else None)
            continue
        name = f"communicator {i + 1} ({ca['nranks']} ranks)"
        cmp(f"{name}: ranks", ca["nranks"], cb["nranks"])
        cmp(f"{name}: nodes x local ranks", (ca["nnodes"], ca["local_ranks"]), (cb["nnodes"], cb["local_ranks"]))
        cmp(f"{name}: coll channels", ca["coll_channels"], cb["coll_channels"])
        cmp(f"{name}: nvls channels", ca["nvls_channels"], cb["nvls_channels"])
        cmp(f"{name}: transports", sorted(ca["transports"]), sorted(cb["transports"]))
        cmp(f"{name}: GPUDirect RDMA per rank", _gdr(ca), _gdr(cb))
        cmp(f"{name}: NICs per local GPU", _local_nics(ca), _local_nics(cb))
        ra = [r["ranks"] for r in ca["rings"]]
        rb = [r["ranks"] for r in cb["rings"]]
        cmp(f"{name}: ring count", len(ra), len(rb))
        if ra and rb and ra[0] != rb[0]:
            cmp(f"{name}: ring of channel 0", " ".join(map(str, ra[0][:32])), " ".join(map(str, rb[0][:32])))
        ga = [(g["pattern"], g["nchannels"], g["type_intra"], g["type_inter"]) for g in ca["graphs"]]
        gb = [(g["pattern"], g["nchannels"], g["type_intra"], g["type_inter"]) for g in cb["graphs"]]
        cmp(f"{name}: graphs (pattern, channels, types)", ga, gb)
        ta, tb = ca["init_seconds_max"], cb["init_seconds_max"]
        if ta is not None and tb is not None and max(ta, tb) > 1.0 and (max(ta, tb) > 1.5 * min(ta, tb)):
            cmp(f"{name}: slowest init (s)", ta, tb)
    cmp("NCCL warnings", {k: v["count"] for k, v in a["warnings"].items()},
        {k: v["count"] for k, v in b["warnings"].items()})
    return changes


def _show(v: Any) -> str:
    if v is None:
        return "(none)"
    if isinstance(v, dict):
        return ", ".join(f"{k}: {n}" for k, n in v.items()) or "(none)"
    if isinstance(v, (list, tuple)):
        return ", ".join(_show(x) if isinstance(x, (list, tuple, dict)) else str(x) for x in v) or "(none)"
    return str(v)


def diff_text(changes: list[dict[str, Any]], a: str, b: str, hosts: tuple[list[str], list[str]] | None = None) -> str:
    if not changes:
        return f"{a} and {b}: no difference in what NCCL did\n"
    out = [f"--- {a}", f"+++ {b}"]
    if hosts is not None:
        out.append(f"hosts: {hostlist(hosts[0])} -> {hostlist(hosts[1])}")
    for c in changes:
        out.append(f"{c['what']}:")
        out.append(f"  - {_show(c['a'])}")
        out.append(f"  + {_show(c['b'])}")
    out.append(f"{len(changes)} difference{'s' if len(changes) != 1 else ''}")
    return "\n".join(out) + "\n"


__all__ = ["diff", "diff_text"]
