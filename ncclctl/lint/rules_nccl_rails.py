"""NCCL settings rules, rails and planes (NCCL 2.30.7+): NCCL_IB_HCA's name:port:rail:plane ids against NIC
fusion, NCCL_CROSS_NIC and the fabric (NCCL040-NCCL043).

What the NCCL settings rules share is in :mod:`ncclctl.lint.ncclsettings`.
"""

from __future__ import annotations

from typing import Iterable

from ncclctl.findings import Severity
from ncclctl.lint.context import Ctx
from ncclctl.lint.ncclsettings import VERSION_OPT, hit, rdma_ports, release, resolved
from ncclctl.registry import Hit, Option, rule
from ncclctl.nccl.lists import hca_selects
from ncclctl.nccl.settings import Setting
from ncclctl.nccl.version import Version

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

# --------------------------------------------------------------------------------------------------
# Rails and planes (NCCL 2.30.7+: NCCL_IB_HCA name:port:rail:plane, NCCL_NET_MERGE_POLICY)

_RAILS_SINCE = Version(2, 30, 7)


def _rail_ids(ctx: Ctx, opts: dict) -> tuple[Setting, list[tuple[str, int, int, int]]] | None:
    """The effective NCCL_IB_HCA and, for every active port it selects, (nic, port, rail, plane) as NCCL 2.30.7+
    reads them (-1: undefined); None before 2.30.7 or without NCCL_IB_HCA."""
    from ncclctl.nccl.lists import hca_ids

    if release(opts) < _RAILS_SINCE:
        return None
    s = resolved(ctx, opts).effective("NCCL_IB_HCA")
    if s is None or not s.value:
        return None
    ports = rdma_ports(ctx)
    selected = hca_selects(s.value, [(n, p) for n, p, _ in ports])
    out = []
    for n, p, ok in ports:
        if ok and (n, p) in selected:
            rail, plane = hca_ids(s.value, n, p) if not s.value.startswith("^") else (-1, -1)
            out.append((n, p, rail, plane))
    return s, out


def _merge_path(ctx: Ctx, a: str, b: str) -> int:
    """NCCL's path type between two NIC devices as ncclTopoGetPath sees it: PORT for two ports or two functions of
    one card, else the PCIe path (NODE is PHB)."""
    from ncclctl.nccl import system as sy
    from ncclctl.plan.paths import pcie_path_type

    if a == b:
        return sy.PATH_PORT
    na = next((n for n in ctx.node.nics if n.name == a), None)
    nb = next((n for n in ctx.node.nics if n.name == b), None)
    if na is None or nb is None or not na.bdf or not nb.bdf:
        return sy.PATH_SYS
    if na.bdf[:-1] == nb.bdf[:-1]:
        return sy.PATH_PORT
    t = pcie_path_type(ctx.node, na.bdf, nb.bdf) or "SYS"
    t = {"NODE": "PHB"}.get(t, t)
    return sy.PATH_TYPE_STR.index(t) if t in sy.PATH_TYPE_STR else sy.PATH_SYS


@rule(
    "NCCL040", "merge-policy-fuses-rails", W, "NCCL's NIC fusion fuses ports of different rails into one device",
    what="NCCL_IB_HCA gives ports rail ids (name:port:rail, NCCL 2.30.7+) and two ports of different rails are "
         "close enough for NCCL's NIC fusion (NCCL_NET_MERGE_LEVEL, default PORT: two ports or functions of one "
         "card) while NCCL_NET_MERGE_POLICY is not RAIL.",
    why="ncclTopoAutoMerge (graph/topo.cc) fuses every device within the merge level into one virtual NIC; the "
        "IB plugin gives a fused device of different rails no rail id (net_ib/init.cc makeVDevice), so NCCL can no "
        "longer keep rings in their rail, and the fused device sends on both rails' leaves.",
    detect="The active ports NCCL_IB_HCA selects, their rail ids as parseStringList reads them, and NCCL's path "
           "type between them against NCCL_NET_MERGE_LEVEL; NCCL_NET_MERGE_POLICY and NCCL_IB_MERGE_NICS as NCCL "
           "reads them.",
    fix="Set NCCL_NET_MERGE_POLICY=RAIL (fuses only ports of one rail), or NCCL_NET_MERGE_LEVEL=LOC (no fusion); "
        "ncclctl conf generate --fabric writes it where needed.",
    options=(VERSION_OPT,),
)
def merge_policy_fuses_rails(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    from ncclctl.nccl.build import merge_level, merge_policy_rail
    from ncclctl.nccl.system import Params

    got = _rail_ids(ctx, opts)
    if got is None:
        return
    s, ports = got
    res = resolved(ctx, opts)
    env = {k: v for k in ("NCCL_NET_MERGE_LEVEL", "NCCL_NET_MERGE_POLICY", "NCCL_IB_MERGE_NICS")
           if (v := res.value(k)) is not None}
    params = Params(env=env)
    if merge_policy_rail(params) or params.get("IB_MERGE_NICS", 1) == 0:
        return
    level = merge_level(params)
    pairs = []
    for i, (na, pa, ra, _) in enumerate(ports):
        for nb, pb, rb, _ in ports[i + 1:]:
            if ra != -1 and rb != -1 and ra != rb and _merge_path(ctx, na, nb) <= level:
                pairs.append(f"{na}:{pa} (rail {ra}) + {nb}:{pb} (rail {rb})")
    if pairs:
        yield hit(s, f"NCCL fuses {', '.join(pairs)} into one virtual NIC without a rail (NCCL_NET_MERGE_POLICY "
                  f"{'is ' + env['NCCL_NET_MERGE_POLICY'] if 'NCCL_NET_MERGE_POLICY' in env else 'unset: ALL'})",
                  fix="set NCCL_NET_MERGE_POLICY=RAIL")


@rule(
    "NCCL041", "cross-nic-crosses-rails", W, "NCCL_CROSS_NIC=1 lets rings cross the rails NCCL_IB_HCA declares",
    what="NCCL_IB_HCA gives ports rail ids (NCCL 2.30.7+) and NCCL_CROSS_NIC is 1 (warning) or 2, the default "
         "(info: ring channels may alternate rails).",
    why="With rail ids, NCCL's ring search keeps a channel's entry and exit NIC on one rail only when crossNic is "
        "0 (graph/search.cc ncclTopoSearchCheckNet compares rail ids); NCCL_CROSS_NIC=1 allows any NIC, so traffic "
        "crosses rails through the spine, which on a rail-only fabric (or a slow inter-rail path) is a slow or "
        "missing route.",
    detect="The effective NCCL_CROSS_NIC (NCCL_PARAM strtoll) with an NCCL_IB_HCA that gives rail ids.",
    fix="Set NCCL_CROSS_NIC=0 (or leave it at its default, 2) on rail-optimized fabrics.",
    options=(VERSION_OPT,),
)
def cross_nic_crosses_rails(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    from ncclctl.nccl.system import Params

    got = _rail_ids(ctx, opts)
    if got is None or not any(r != -1 for _, _, r, _ in got[1]):
        return
    s = resolved(ctx, opts).effective("NCCL_CROSS_NIC")
    value = Params(env={"NCCL_CROSS_NIC": s.value}).get("CROSS_NIC", 2) if s is not None else 2
    if s is not None and value == 1:
        yield hit(s, "rings may leave on another rail than they enter, although NCCL_IB_HCA gives each port a rail",
                  fix="NCCL_CROSS_NIC=0")
    elif value == 2:
        hca = got[0]
        msg = ("NCCL_CROSS_NIC is 2 (the default): ring channels may alternate rails (search.cc crossNic=2), "
               "although NCCL_IB_HCA gives each port a rail; fine on a fabric whose spines join the rails")
        yield hit(s if s is not None else hca, msg, fix="on a rail-only fabric set NCCL_CROSS_NIC=0", severity=I)


@rule(
    "NCCL042", "ib-hca-rail-ids-partial", W, "NCCL_IB_HCA gives rail or plane ids to some rail ports only",
    what="An NCCL_IB_HCA (NCCL 2.30.7+) where some of the node's rail ports (each GPU's closest NIC port) carry a "
         "rail id and others do not, or some ports with a rail id carry a plane id and others do not.",
    why="NCCL forbids crossing planes only between two NICs that both have a plane (graph/search.cc), so a port "
        "without one can pair with either plane; a rail port without a rail id is never fused by "
        "NCCL_NET_MERGE_POLICY=RAIL and is compared by NIC instead of rail. A partial list is almost always a typo "
        "or a list edited by hand.",
    detect="The rail and plane fields of the entry that selects each active port (first match, as matchIfList), "
           "over the rail ports of ncclctl rails.",
    fix="Give every rail port both ids, or none (ncclctl rails --fabric prints the full list).",
    options=(VERSION_OPT,),
)
def ib_hca_rail_ids_partial(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    got = _rail_ids(ctx, opts)
    plan = ctx.rails
    if got is None or plan is None:
        return
    s, ports = got
    rail_ports = {(r.nic, r.port) for r in plan.rails}
    on_rails = [(f"{n}:{p}", rail, plane) for n, p, rail, plane in ports if (n, p) in rail_ports]
    railed = [x for x in on_rails if x[1] != -1]
    for what, pool, idx in (("rail", on_rails, 1), ("plane", railed, 2)):
        with_id = [x[0] for x in pool if x[idx] != -1]
        without = [x[0] for x in pool if x[idx] == -1]
        if with_id and without:
            yield hit(s, f"{', '.join(without)} {'has' if len(without) == 1 else 'have'} no {what} id while "
                      f"{', '.join(with_id)} {'has' if len(with_id) == 1 else 'have'} one")


_FABRIC_IDS: dict[str, dict] = {}


def _fabric_ids(path: str) -> dict:
    """Host -> {"mlx5_0:1": RailId} from a fabric file (ncclctl/fabric layout), once per path and process."""
    if path not in _FABRIC_IDS:
        from ncclctl.fabric.layout import analyze
        from ncclctl.fabric.sources import load_input
        from ncclctl.plan.railids import fabric_host_ids

        _FABRIC_IDS[path] = fabric_host_ids(analyze(load_input(path, None)))
    return _FABRIC_IDS[path]


@rule(
    "NCCL043", "ib-hca-rail-ids-vs-fabric", E, "NCCL_IB_HCA labels a port with another rail or plane than its leaf",
    what="A port whose rail/plane id in NCCL_IB_HCA (NCCL 2.30.7+) is not the rail/plane of the leaf it lands on in "
         "the fabric (rule option 'fabric': an ibnetdiscover / iblinkinfo output): a NIC labelled rail 3 that is "
         "cabled to the rail-5 leaf.",
    why="NCCL keeps a ring in the rail its ids say (crossNic=0 compares rail ids) and never crosses planes: with a "
        "wrong label the ring that NCCL believes stays on rail 3 leaves on the rail-5 leaf, crossing the spine to "
        "every other node's rail-3 port; a wrong plane makes NCCL refuse paths that exist, or use ones that do not.",
    detect="The leaf each port of this host reaches in the fabric (ncclctl/fabric layout: the leaf's rail and "
           "plane, the same for every host), compared with the rail/plane fields of the NCCL_IB_HCA entry that "
           "selects the port. Runs only with the 'fabric' option; 'host' names the node in the fabric (default: "
           "its hostname).",
    fix="Regenerate NCCL_IB_HCA from the fabric (ncclctl conf generate --fabric FILE), or recable the port to the "
        "leaf of the rail it is labelled with.",
    options=(VERSION_OPT, Option("fabric", str, "", "ibnetdiscover / iblinkinfo output to check the ids against."),
             Option("host", str, "", "This node's name in the fabric (default: its hostname).")),
)
def ib_hca_rail_ids_vs_fabric(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    if not opts.get("fabric"):
        return
    got = _rail_ids(ctx, opts)
    if got is None:
        return
    s, ports = got
    from ncclctl.errors import InputError

    host = opts.get("host") or ctx.node.hostname
    try:
        fabric = _fabric_ids(opts["fabric"])
    except InputError as e:
        yield Hit(opts["fabric"], f"the fabric given in NCCL043's 'fabric' option cannot be read: {e.message}",
                  fix=getattr(e, "fix", None) or "give an ibnetdiscover / iblinkinfo output file")
        return
    ids = fabric.get(host) or fabric.get(host.split(".")[0])
    if ids is None:
        return
    for n, p, rail, plane in ports:
        fid = ids.get(f"{n}:{p}")
        if fid is None or rail == -1:
            continue
        wrong = []
        if rail != fid.rail:
            wrong.append(f"rail {rail} but lands on the rail-{fid.rail} leaf")
        if plane != -1 and fid.plane is not None and plane != fid.plane:
            wrong.append(f"plane {plane} but its leaf is on plane {fid.plane}")
        if wrong:
            want = f"{n}:{p}:{fid.rail}" + ("" if fid.plane is None else f":{fid.plane}")
            yield hit(s, f"{n}:{p} is labelled {' and '.join(wrong)} ({opts['fabric']}, host {host})",
                      fix=f"write {want} (ncclctl conf generate --fabric {opts['fabric']})")
