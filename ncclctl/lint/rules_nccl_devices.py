"""NCCL settings rules, devices: NCCL_IB_HCA and NCCL_SOCKET_IFNAME against the node's RDMA devices, ports and
interfaces, as NCCL's list matching reads them (NCCL010-NCCL015).

What the NCCL settings rules share is in :mod:`ncclctl.lint.ncclsettings`.
"""

from __future__ import annotations

from typing import Iterable

from ncclctl.findings import Severity
from ncclctl.lint.context import Ctx
from ncclctl.lint.ncclsettings import VERSION_OPT, hit, rdma_ports, release, resolved
from ncclctl.registry import Hit, rule
from ncclctl.nccl.lists import (MAX_IB_HCA_ENTRIES, MAX_IFNAME_ENTRIES, entry_matches_name, hca_selects, ifname_selects,
                                parse_if_list)
from ncclctl.nccl.settings import Setting
from ncclctl.nccl.version import Version

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

# --------------------------------------------------------------------------------------------------
# NCCL_IB_HCA


def _hca_settings(ctx: Ctx) -> tuple[Setting, ...]:
    return resolved(ctx).candidates("NCCL_IB_HCA")


def _entry_clean(name: str) -> bool:
    return bool(name) and name[0] not in "^=\"'" and not any(c.isspace() for c in name)


def _replace_entry(value: str, old: str, new: str) -> str:
    """``value`` with list entry ``old`` (as written) replaced by ``new`` (dropped when empty)."""
    head = value[:len(value) - len(value.lstrip("^="))]
    items = value[len(head):].split(",")
    out = [new if it == old else it for it in items]
    return head + ",".join(it for it in out if it)


@rule(
    "NCCL010", "ib-hca-prefix-collision", W, "NCCL_IB_HCA name also selects other devices (prefix match)",
    what="An NCCL_IB_HCA entry without '=' that names a device and also matches longer names: mlx5_1 selects "
         "mlx5_10 ... mlx5_19 too (with '^', it excludes them too).",
    why="Without a leading '=' every entry is a prefix (misc/utils.cc:matchIf uses strncmp over the entry's "
        "length). On a node with 12 HCAs, NCCL_IB_HCA=mlx5_0,mlx5_1 also hands NCCL mlx5_10 and mlx5_11 (often "
        "storage or in-band NICs), which then carry collective traffic (NVIDIA/nccl PR #236).",
    detect="Each entry of every NCCL_IB_HCA definition against the node's RDMA device names, honouring ':port'.",
    fix="Make the list exact with a leading '=' (after '^' if both): NCCL_IB_HCA==mlx5_0,mlx5_1.",
)
def ib_hca_prefix_collision(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    devs = sorted({n.name for n in ctx.node.nics})
    ports: dict[str, set[int]] = {}
    for n, p, _ in rdma_ports(ctx):
        ports.setdefault(n, set()).add(p)
    for s in _hca_settings(ctx):
        spec = parse_if_list(s.value, MAX_IB_HCA_ENTRIES)
        if spec.exact:
            continue
        named = {e.name for e in spec.entries}
        for e in spec.entries:
            if not _entry_clean(e.name) or not e.name[-1:].isdigit():
                continue  # 'mlx5_' or 'ibp' is a deliberate prefix
            # A collision extends the entry's final number (mlx5_1 -> mlx5_10); 'mlx5' -> 'mlx5_0' is deliberate.
            extra = [d for d in devs if d != e.name and d.startswith(e.name) and d[len(e.name)].isdigit()
                     and d not in named and (e.port is None or e.port in ports.get(d, set()))]
            if not extra:
                continue
            verb = "excludes" if spec.exclude else "selects"
            exact = ("^=" if spec.exclude else "=") + ",".join(x.text for x in spec.entries)
            yield hit(s, f"entry {e.name} is a prefix: it also {verb} {', '.join(extra)}",
                      fix=f"NCCL_IB_HCA={exact}", evidence=(f"devices: {', '.join(devs)}",))


@rule(
    "NCCL011", "ib-hca-no-device", E, "NCCL_IB_HCA names a device that does not exist or is down",
    what="An NCCL_IB_HCA entry that matches no RDMA device of the node, names a port the device lacks, or selects "
         "only ports that are not ACTIVE; or a list that leaves no active port at all.",
    why="The IB plugin keeps only ACTIVE ports that the list selects (transport/net_ib/init.cc). An entry for a "
        "missing or renamed device (mlx5_0 after a udev rename to ibp24s0) or a down port silently removes that "
        "rail, so its GPUs share another NIC; when nothing is left NCCL logs 'NET/IB : No device found.' and falls "
        "back to TCP sockets (a 10-100x bandwidth loss).",
    detect="Each entry against /sys/class/infiniband (device names, port numbers, port state); the whole list "
           "evaluated with NCCL's matchIfList semantics.",
    fix="Name existing devices and active ports (ibv_devinfo -l lists names; ibstat shows port state), or bring "
        "the port up (cable, switch port, subnet manager).",
)
def ib_hca_no_device(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    node = ctx.node
    nics = {n.name: n for n in node.nics}
    netdev_owner = {nd: n.name for n in node.nics for nd in n.netdevs}
    netdev_owner.update({p.netdev: n.name for n in node.nics for p in n.ports if p.netdev})
    ports = rdma_ports(ctx)
    active = [(n, p) for n, p, ok in ports if ok]
    for s in _hca_settings(ctx):
        spec = parse_if_list(s.value, MAX_IB_HCA_ENTRIES)
        errors = 0
        for e in spec.entries:
            if not _entry_clean(e.name):
                continue  # NCCL012 / NCCL002 explain these
            matched = sorted(d for d in nics if entry_matches_name(spec, e, d))
            sev = W if spec.exclude else None
            if not matched:
                hint, fix = "", None
                if e.name in netdev_owner:
                    hint = f"; {e.name} is a netdev, its RDMA device is {netdev_owner[e.name]}"
                    new = netdev_owner[e.name] + e.text[len(e.name):]
                    fix = f"NCCL_IB_HCA={_replace_entry(s.value, e.text, new)}"
                elif nics:
                    import difflib

                    close = difflib.get_close_matches(e.name, list(nics), n=1, cutoff=0.6)
                    hint = f"; RDMA devices here: {', '.join(sorted(nics))}" + (f" (closest: {close[0]})" if close else "")
                what = "excludes nothing: " if spec.exclude else ""
                yield hit(s, f"{what}no RDMA device is named {e.name}{hint or ' (this host has none)'}",
                          severity=sev, fix=fix)
                errors += 0 if spec.exclude else 1
                continue
            pairs = [(d, p.num, p) for d in matched for p in nics[d].ports if e.port is None or p.num == e.port]
            if not pairs:
                have = ", ".join(f"{d} ports {','.join(str(p.num) for p in nics[d].ports) or 'none'}" for d in matched)
                yield hit(s, f"entry {e.text} names port {e.port}, which does not exist ({have})", severity=sev,
                          fix=f"NCCL_IB_HCA={_replace_entry(s.value, e.text, e.name)} (every port), or name an "
                              "existing port")
                errors += 0 if spec.exclude else 1
                continue
            if spec.exclude:
                continue
            down = [(d, n, p) for d, n, p in pairs if not (p.is_active and p.link_layer in ("InfiniBand", "Ethernet"))]
            if down and len(down) == len(pairs):
                states = ", ".join(f"{d}:{n} {p.state}/{p.phys_state}" for d, n, p in down)
                yield hit(s, f"entry {e.text} selects only port(s) that are not ACTIVE ({states}): NCCL skips them",
                          fix=f"bring the port up (ibstat {down[0][0]}; check cable, switch port and subnet manager), "
                              "or remove the entry")
                errors += 1
        selected = hca_selects(s.value, active)
        if active and not selected and not errors:
            yield hit(s, "selects no active RDMA port: NCCL logs 'NET/IB : No device found.' and falls back to TCP "
                      "sockets", evidence=(f"active ports: {', '.join(f'{n}:{p}' for n, p in active)}",))


def _hca_fixed(value: str) -> str:
    """What the writer most likely meant: every '^'/'=' mark moved to the front (in NCCL's order), names trimmed."""
    spec = parse_if_list(value.replace("=^", "^=", 1) if value.startswith("=^") else value, 1 << 16)
    marks = ("^" if spec.exclude else "") + ("=" if spec.exact else "")
    for e in spec.entries:
        lead = e.name[:len(e.name) - len(e.name.lstrip("^="))]
        marks += lead
    prefix = ("^" if "^" in marks else "") + ("=" if "=" in marks else "")
    items = []
    for e in spec.entries:
        name = e.name.lstrip("^=").strip()
        items.append(name + e.text[len(e.name):].strip())
    return prefix + ",".join(items)


@rule(
    "NCCL012", "ib-hca-syntax", E, "NCCL_IB_HCA with '^' or '=' in the wrong place, spaces or a bad port",
    what="An NCCL_IB_HCA value that NCCL parses differently than written: '=^mlx5_0' ('=' before '^'), '^' or '=' "
         "repeated on later entries ('^=mlx5_8,^=mlx5_14'), white space inside the list ('mlx5_0, mlx5_1'), a port "
         "that is not a positive number (mlx5_0:a), or more entries than NCCL reads (32; 16 before 2.18.5).",
    why="NCCL looks for '^' and then '=' once, at the start of the whole value, and they apply to every entry "
        "(transport/net_ib/init.cc); anywhere else they are characters of a device name, as is white space "
        "(misc/utils.cc:parseStringList does not trim). '^=mlx5_8,^=mlx5_14' therefore excludes mlx5_8 only "
        "(NVIDIA/nccl-tests#150); a port is read with atoi, so 'a' is port 0, which matches nothing.",
    detect="The raw value of every NCCL_IB_HCA definition, split exactly as parseStringList splits it.",
    fix="Write the prefix once and names plainly: NCCL_IB_HCA=^=mlx5_8,mlx5_14 or NCCL_IB_HCA==mlx5_0:1,mlx5_1:1.",
    options=(VERSION_OPT,),
)
def ib_hca_syntax(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    version = release(opts)
    limit = MAX_IB_HCA_ENTRIES if version >= Version(2, 18, 5) else 16
    for s in _hca_settings(ctx):
        v = s.value
        spec = parse_if_list(v, limit)
        fix = f"NCCL_IB_HCA={_hca_fixed(v)}"
        if v.startswith("=^"):
            first = spec.entries[0].name if spec.entries else "^"
            yield hit(s, f"'=' comes before '^': NCCL reads an exact list whose first name is {first!r}, so nothing "
                      "is excluded", fix=fix)
        for k, e in enumerate(spec.entries):
            if k == 0 and v.startswith("=^"):
                pass
            elif e.name[:1] in ("^", "="):
                mark = e.name[0]
                bare = e.name.lstrip("^=")
                effect = "is not excluded" if spec.exclude else "is not selected"
                yield hit(s, f"'{mark}' inside the list: entry {e.name!r} is read as a device name starting with "
                          f"'{mark}' ('^' and '=' count only at the start of the whole value), so {bare} {effect}",
                          fix=fix)
            if any(c.isspace() for c in e.name):
                yield hit(s, f"entry {e.name!r} contains white space: NCCL does not trim, so it names no device",
                          fix=fix)
            parts = e.text.split(":")
            if len(parts) > 1 and parts[1] != "" and e.port is not None and e.port <= 0:
                yield hit(s, f"entry {e.text}: port {parts[1]!r} is read by atoi as {e.port}, which matches no port "
                          "(ports are numbered from 1)", fix=f"write {e.name}:1, or drop ':{parts[1]}' for all ports")
            if len(parts) > 2 and version < Version(2, 30, 7) and any(parts[2:]):
                yield hit(s, f"entry {e.text}: ':rail:plane' fields are read from NCCL 2.30.7 on; NCCL "
                          f"{version} ignores them", severity=I)
        if spec.dropped:
            yield hit(s, f"{len(spec.entries) + len(spec.dropped)} entries: NCCL {version} reads the "
                      f"first {limit} and ignores {', '.join(spec.dropped)}", severity=W,
                      fix=f"list at most {limit} devices (use a prefix, or '^' to exclude instead)")


@rule(
    "NCCL013", "ib-hca-excludes-rails", W, "NCCL_IB_HCA leaves out a GPU's rail NIC",
    what="An NCCL_IB_HCA list that does not select the active NIC port closest to some GPU (its rail).",
    why="NCCL picks for each GPU the network device with the best path among those the IB plugin kept "
        "(graph/topo.cc:ncclTopoGetLocal). Without its rail NIC a GPU uses a NIC behind another switch or CPU: "
        "traffic crosses the CPU interconnect, GPUDirect RDMA may be disabled for that path, and on a "
        "rail-optimized fabric the traffic lands on another rail's leaf.",
    detect="The selection NCCL would make from the node's ports, compared with the rail plan (each GPU's closest "
           "NIC port by PCIe path, ncclctl rails).",
    fix="Select every rail: set NCCL_IB_HCA to the exact list 'ncclctl rails' prints.",
)
def ib_hca_excludes_rails(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    plan = ctx.rails
    if plan is None or not plan.rails:
        return
    ports = rdma_ports(ctx)
    everything = [(n, p) for n, p, _ in ports]
    active = {(n, p) for n, p, ok in ports if ok}
    for s in _hca_settings(ctx):
        selected = hca_selects(s.value, everything)
        if not (selected & active):
            continue  # NCCL011: nothing usable at all
        missing = [r for r in plan.rails if r.active and (r.nic, r.port) not in selected]
        if not missing:
            continue
        gpus = sorted(g for r in missing for g in r.gpus)
        yield hit(s, f"leaves out the rail NIC(s) {', '.join(r.hca for r in missing)} of GPU(s) "
                  f"{', '.join(map(str, gpus))}: those GPUs use a NIC farther away",
                  fix=f"NCCL_IB_HCA={plan.nccl_ib_hca}",
                  evidence=tuple(f"rail {r.rail}: {r.hca} ({r.path}) GPU {','.join(map(str, r.gpus))}" for r in missing))


# --------------------------------------------------------------------------------------------------
# NCCL_SOCKET_IFNAME

_DOWN_STATES = ("down", "lowerlayerdown", "notpresent", "dormant")


def _running(nd) -> bool:
    return nd.operstate not in _DOWN_STATES


def _virtual_bridge(nd) -> bool:
    return nd.name.startswith(("docker", "veth", "br-", "virbr")) or nd.kind == "veth"


def _vlan(nd) -> bool:
    return nd.kind == "vlan" or ("." in nd.name and nd.kind in ("physical", "vlan", "ipoib"))


def _loopback(nd) -> bool:
    return nd.type == 772 or nd.name == "lo"


def _ifname_suggestion(node) -> str:
    """A concrete NCCL_SOCKET_IFNAME: the first running interface that is not loopback, a bridge or a VLAN,
    preferring one that carries no RDMA port (the management network), else an IPoIB one."""
    rdma = {nd for n in node.nics for nd in n.netdevs} | {p.netdev for n in node.nics for p in n.ports if p.netdev}
    ok = [nd for nd in node.netdevs if _running(nd) and not _loopback(nd) and not _virtual_bridge(nd)
          and not _vlan(nd) and nd.kind not in ("bridge", "bond-slave")]
    ok.sort(key=lambda nd: (nd.name in rdma and nd.type != 32, nd.name in rdma, nd.name))
    return f"NCCL_SOCKET_IFNAME=={ok[0].name}" if ok else "NCCL_SOCKET_IFNAME=^docker,veth,br-,virbr,lo"


@rule(
    "NCCL014", "socket-ifname-risky", W, "NCCL_SOCKET_IFNAME selects container bridges, VLANs or only loopback",
    what="An NCCL_SOCKET_IFNAME that lets through docker/VM bridges and veth pairs (docker0, br-*, veth*, virbr*), "
         "that selects VLAN sub-interfaces by prefix (eth0 also matches eth0.100), or that leaves only 'lo' on a "
         "node built for multi-node jobs.",
    why="Bootstrap binds the first interface the list lets through and the socket transport uses them all "
        "(misc/socket.cc:ncclFindInterfaces). A bridge address (172.17.0.1) is not reachable from other nodes, so "
        "init hangs; a VLAN sub-interface has its own MTU and routing (NVIDIA/nccl#177); 127.0.0.1 makes every "
        "multi-node job fail to connect.",
    detect="The list evaluated like ncclOsFindInterfaces (prefix or '=' exact, '^' exclusion) over the node's "
           "netdevs that are up (sysfs operstate; kind from 'ip -d link').",
    fix="Name the management or IPoIB interface exactly: NCCL_SOCKET_IFNAME==eno1 (or exclude the bridges: "
        "^docker,veth,br-,virbr,lo).",
)
def socket_ifname_risky(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    node = ctx.node
    netdevs = [nd for nd in node.netdevs]
    multi_node = any(p.is_active for n in node.nics for p in n.ports)
    for s in resolved(ctx).candidates("NCCL_SOCKET_IFNAME"):
        if len(s.value) <= 1:
            continue
        spec = parse_if_list(s.value, MAX_IFNAME_ENTRIES)
        names = ifname_selects(s.value, [nd.name for nd in netdevs])
        sel = [nd for nd in netdevs if nd.name in names and _running(nd)]
        if not sel:
            continue  # NCCL015
        bridges = [nd.name for nd in sel if _virtual_bridge(nd)]
        if bridges:
            yield hit(s, f"lets through container/VM bridge interface(s) {', '.join(bridges)}: bootstrap may bind an "
                      "address other nodes cannot reach", evidence=(f"selected: {', '.join(nd.name for nd in sel)}",),
                      fix=f"name the interface exactly ({_ifname_suggestion(node)}), or also exclude the bridges: "
                          "NCCL_SOCKET_IFNAME=^docker,veth,br-,virbr,lo")
        if not spec.exclude:
            explicit = {e.name for e in spec.entries}
            vlans = [nd.name for nd in sel if _vlan(nd) and nd.name not in explicit
                     and not any("." in e.name and nd.name.startswith(e.name) for e in spec.entries)]
            if vlans and len(vlans) < len(sel):
                base = [nd.name for nd in sel if nd.name not in vlans]
                yield hit(s, f"prefix match also selects VLAN sub-interface(s) {', '.join(vlans)} besides "
                          f"{', '.join(base)}", fix="NCCL_SOCKET_IFNAME==" + ",".join(base),
                          evidence=(f"selected: {', '.join(nd.name for nd in sel)}",))
        if multi_node and all(_loopback(nd) for nd in sel):
            yield hit(s, "selects only the loopback interface: ranks on other nodes cannot reach 127.0.0.1, so "
                      "multi-node jobs fail to bootstrap", severity=E, fix=_ifname_suggestion(node))


@rule(
    "NCCL015", "socket-ifname-no-match", E, "NCCL_SOCKET_IFNAME matches no usable interface",
    what="An NCCL_SOCKET_IFNAME that matches no interface of the node, matches only interfaces that are down, or "
         "is one character long (NCCL ignores it).",
    why="When the variable is set NCCL uses only what it names ('find or fail'): bootstrap reports 'Bootstrap : no "
        "socket interface found' (ncclInvalidUsage) and the IB plugin 'NET/IB : No IP interface found.', so every "
        "communicator init fails. A value of one character is ignored and NCCL silently auto-detects "
        "(misc/socket.cc:ncclFindInterfaces).",
    detect="The list evaluated like ncclOsFindInterfaces over the node's netdevs and their operstate.",
    fix="Set it to an interface that exists and is up on every node (ip -br link), with '=' for an exact name.",
)
def socket_ifname_no_match(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    netdevs = list(ctx.node.netdevs)
    for s in resolved(ctx).candidates("NCCL_SOCKET_IFNAME"):
        if len(s.value) <= 1:
            yield hit(s, "values of one character or less are ignored: NCCL auto-detects the interface", severity=W)
            continue
        names = ifname_selects(s.value, [nd.name for nd in netdevs])
        sel = [nd for nd in netdevs if nd.name in names and _running(nd)]
        if sel:
            continue
        up = ", ".join(nd.name for nd in netdevs if _running(nd)) or "none"
        if names:
            msg = f"matches only {', '.join(names)}, which is down: NCCL uses running interfaces only"
        else:
            msg = "matches no interface of this host"
        yield hit(s, f"{msg}; bootstrap fails with 'no socket interface found' (interfaces up: {up})")
