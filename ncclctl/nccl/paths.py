"""NCCL's path computation (``src/graph/paths.cc``) and the topology queries it relies on (``topo.cc``), on a
:class:`~ncclctl.nccl.system.System`.

``compute_paths`` gives every GPU, NET, CPU, DEV and NVSwitch node the best path to every other of those nodes
(breadth-first, as ``ncclTopoSetPaths``: lower path type first, then more bandwidth, then fewer hops), then
rewrites the paths NCCL will not use directly: GPU-GPU through the CPU when P2P is not allowed
(``NCCL_P2P_LEVEL``), GPU-NIC as P2C on C2C systems, through a peer GPU (PXN) when that peer is on the NIC's PCI
switch and reached over NVLink, and through the CPU when GPUDirect RDMA is off for the pair (``ncclTopoCheckGdr``).
The NVML P2P status of a GPU pair is assumed OK (a topology file does not carry it).
"""

from __future__ import annotations

from ncclctl.nccl import system as s
from ncclctl.nccl.system import CPU, DEV, GPU, NET, NVS, Node, Path, System, f32

GDR_DISABLE, GDR_DEFAULT, GDR_PCI = 0, 1, 2
GDR_MODE_STR = ("Disabled", "Default", "PCI")


def _set_paths(base: Node, system: System) -> None:
    """``ncclTopoSetPaths``: breadth-first from ``base``, filling ``node.paths[base.type][index of base]``."""
    btype = base.type
    bindex = system.index(base)
    count = len(system.nodes[btype])

    def path_of(node: Node) -> Path:
        lst = node.paths.get(btype)
        if lst is None:
            lst = [Path() for _ in range(count)]
            node.paths[btype] = lst
        return lst[bindex]

    bp = path_of(base)
    bp.links = []
    bp.bw = s.LOC_BW
    bp.type = s.PATH_LOC
    nvb_disable = system.params.get("NVB_DISABLE", 0)
    max_len = 2 if btype == GPU else 1
    base_dev = base.parent if btype == GPU else base
    frontier = [base]
    while frontier:
        nxt: list[Node] = []
        for node in frontier:
            path = path_of(node)
            for link in node.links:
                rem = link.rem
                rem_path = path_of(rem)
                bw = min(path.bw, link.bw)
                if (node is not base_dev and node.type == DEV and (link.type != s.LINK_LOC or rem.type != GPU)
                        and (nvb_disable or link.type != s.LINK_NVL or rem.type != DEV
                             or len(path.links) > max_len)):
                    continue
                new_type = s.LINK_LOC if link.type == s.LINK_NET else link.type
                if node.type == s.PCI and rem.type == s.PCI:
                    new_type = s.PATH_PXB
                if link.type == s.LINK_PCI and (node.type == CPU or rem.type == CPU):
                    new_type = s.PATH_PHB
                if (node.type == DEV and path.type == s.PATH_NVL and new_type == s.PATH_NVL
                        and len(path.links) == max_len):
                    new_type = s.PATH_NVB
                new_type = max(path.type, new_type)
                if (new_type < rem_path.type or (new_type == rem_path.type and rem_path.bw < bw)
                        or (new_type == rem_path.type and rem_path.bw == bw
                            and len(rem_path.links) > len(path.links) + 1)):
                    rev = None
                    for rl in rem.links:
                        if rl.rem is node and rl.type == link.type:
                            rev = rl
                            break
                    if rev is None:
                        raise RuntimeError(f"no reverse link from {rem!r} to {node!r}")
                    rem_path.links = [rev] + path.links
                    rem_path.bw = bw
                    rem_path.type = new_type
                    if not any(x is rem for x in nxt):
                        nxt.append(rem)
        frontier = nxt


def _merge_path_type(t0: int, t1: int) -> int:
    hi, lo = max(t0, t1), min(t0, t1)
    return s.PATH_P2C if hi == s.PATH_PHB and lo == s.PATH_C2C else hi


def _add_inter_step(system: System, tx: int, ix: int, t1: int, i1: int, t2: int, i2: int) -> None:
    """``addInterStep``: node (t1, i1)'s path to (t2, i2) goes through (tx, ix)."""
    mid = system.nodes[tx][ix]
    src = system.nodes[t1][i1]
    first = src.paths[tx][ix]
    second = mid.paths[t2][i2]
    p = src.paths[t2][i2]
    p.links = list(first.links) + list(second.links)
    p.type = _merge_path_type(first.type, second.type)
    if tx == GPU:
        p.type = s.PATH_PXN
    p.bw = min(first.bw, second.bw)


def get_level(system: System, disable_env: str | None, level_env: str) -> int:
    """``ncclGetLevel``: -2 when unset; PATH_LOC when ``disable_env`` is 1; a path name or an old-style number."""
    if disable_env:
        v = system.params.env.get(disable_env)
        if v is not None:
            from ncclctl.nccl.params import strtol

            if (strtol(v).value or 0) == 1:
                return s.PATH_LOC
    v = system.params.env.get(level_env)
    if v is not None:
        for i in range(s.PATH_SYS + 1):
            if v == s.PATH_TYPE_STR[i]:
                return i
        if v[:1].isdigit():
            from ncclctl.nccl.params import strtol

            old = strtol(v).value or 0
            table = (s.PATH_LOC, s.PATH_PIX, s.PATH_PXB, s.PATH_PHB, s.PATH_SYS, s.PATH_SYS)
            return table[min(max(old, 0), len(table) - 1)]
    return -2


def cpu_type(system: System) -> tuple[int, int, int]:
    c = system.nodes[CPU][0]
    return c.arch, c.vendor, c.model


def check_p2p(system: System, rank1: int, rank2: int) -> tuple[int, int, int]:
    """``ncclTopoCheckP2p`` within one host: (p2p, read, intermediate rank)."""
    g1 = system.gpu_by_rank(rank1)
    g2 = system.gpu_by_rank(rank2)
    if g1 < 0 or g2 < 0:
        return 0, 0, -1
    gpu1 = system.nodes[GPU][g1]
    path = gpu1.paths[GPU][g2]
    inter = -1
    if path.count == 4:
        mid = path.links[1].rem
        if mid.type == DEV:
            inter = dev_to_rank(system, mid.dev)
    level = s.PATH_PXB
    arch, vendor, _ = cpu_type(system)
    if arch == s.CPU_ARCH_X86 and vendor == s.CPU_VENDOR_AMD and len(system.nodes[DEV]) <= 2:
        level = s.PATH_SYS
    user = get_level(system, "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL")
    if user != -2:
        level = user
    p2p = 1 if path.type <= level else 0
    read = 0
    if path.type == s.PATH_NVL:
        gpu2 = system.nodes[GPU][g2]
        if gpu1.sm == gpu2.sm == 80:
            read = 1
    return p2p, read, inter


def dev_to_rank(system: System, dev: int) -> int:
    for g in system.nodes[GPU]:
        if g.dev == dev:
            return g.rank
    return -1


def get_local(system: System, type_: int, index: int, result_type: int) -> tuple[list[int], int]:
    """``ncclTopoGetLocal``: the nodes of ``result_type`` with the best bw (then path type) from the node; and that
    path type."""
    paths = system.nodes[type_][index].paths.get(result_type)
    if paths is None:
        return [], s.PATH_DIS
    min_type, max_bw = s.PATH_DIS, 0.0
    locals_: list[int] = []
    for i, p in enumerate(paths):
        if p.bw > max_bw or (p.bw == max_bw and p.type < min_type):
            max_bw, min_type = p.bw, p.type
            locals_ = []
        if p.bw == max_bw and p.type == min_type:
            locals_.append(i)
    return locals_, min_type


def get_local_cpu(system: System, g: int) -> int:
    """``ncclGetLocalCpu``: the closest CPU (fewest hops among the best)."""
    cpus, _ = get_local(system, GPU, g, CPU)
    if not cpus:
        return -1
    paths = system.nodes[GPU][g].paths[CPU]
    best = cpus[0]
    for c in cpus[1:]:
        if paths[c].count < paths[best].count:
            best = c
    return best


def _is_pow2(v: int) -> bool:
    return (v & (v - 1)) == 0


def _mirror_bits(val: int, pow2: int) -> int:
    mirror, b, mb = 0, 1, pow2 >> 1
    while b < pow2:
        if val & b:
            mirror |= mb
        b <<= 1
        mb >>= 1
    return mirror


def netdevs_policy(system: System) -> tuple[str, int]:
    v = system.params.str("NETDEVS_POLICY")
    if v:
        if v.lower() == "auto":
            return "AUTO", -1
        if v.lower() == "all":
            return "ALL", -1
        if v[:4].lower() == "max:":
            from ncclctl.nccl.params import c_atoi

            n = c_atoi(v[4:])
            if n > 0:
                return "MAX", n
    return "AUTO", -1


def get_local_net(system: System, rank: int, channel: int, type_: int = NET) -> int:
    """``ncclTopoGetLocalNetType``: index (in ``system.nodes[type_]``) of the NET a rank uses on a channel; -1 when
    there is none."""
    g = system.gpu_by_rank(rank)
    nets, _ = get_local(system, GPU, g, type_)
    if not nets:
        return -1
    policy, num = netdevs_policy(system)
    gpus, _ = get_local(system, type_, nets[0], GPU)
    if policy == "AUTO":
        per_gpu = -(-len(nets) // len(gpus))
    elif policy == "ALL":
        per_gpu = len(nets)
    else:
        per_gpu = min(num, len(nets))
    net = system.nodes[GPU][g].dev % len(gpus)
    if _is_pow2(len(nets)):
        net = _mirror_bits(net, len(nets))
    net += channel % per_gpu
    return nets[net % len(nets)]


def get_local_gpu(system: System, n: int) -> int:
    """``ncclTopoGetLocalGpu``: the GPU that uses NET n first (-1 when none)."""
    gpus, _ = get_local(system, NET, n, GPU)
    for c in range(s.MAXCHANNELS):
        for g in gpus:
            if get_local_net(system, system.nodes[GPU][g].rank, c) == n:
                return g
    return -1


def pxn_disable(system: System) -> int:
    return system.params.get("PXN_DISABLE", 0)


def get_intermediate_rank(system: System, rank: int, n: int) -> int:
    """``ncclTopoGetIntermediateRank``: the GPU that relays to NET n (PXN), else ``rank`` itself."""
    g = system.gpu_by_rank(rank)
    path = system.nodes[GPU][g].paths[NET][n]
    if path.type != s.PATH_PXN:
        return rank
    i = 1
    while i < path.count and path.links[i].rem.type == NVS:
        i += 1
    node = path.links[i].rem
    if node.type == DEV:
        for l in node.links:
            if l.rem.type == GPU:
                node = l.rem
                break
    if node.type != GPU:
        raise RuntimeError(f"no intermediate GPU between rank {rank} and {system.nodes[NET][n]!r}")
    return dev_to_rank(system, node.dev)


def check_gdr(system: System, rank: int, n: int, read: int) -> tuple[int, str]:
    """``ncclTopoCheckGdr``: (mode, why) for GPU ``rank`` and NET index ``n``."""
    net = system.nodes[NET][n]
    g = system.gpu_by_rank(rank)
    gpu = system.nodes[GPU][g]
    if net.gdr == 0:
        if system.transport == "Socket":
            return GDR_DISABLE, f"{net.name} is a socket device: NCCL's Socket transport sends from host memory"
        return GDR_DISABLE, f"{net.name} has no GPUDirect RDMA support (nvidia_peermem not loaded, no DMA-BUF)"
    if gpu.gdr == 0:
        return GDR_DISABLE, "the GPU has no GPUDirect RDMA support"
    if gpu.mlopart != s.UNDEF and not system.params.get("NET_GDR_MLOPART", 0):
        return GDR_DISABLE, "MLOPart GPU (NCCL_NET_GDR_MLOPART=0)"
    if read:
        gdr_read = system.params.get("NET_GDR_READ", -2)
        if gdr_read == 0:
            return GDR_DISABLE, "NCCL_NET_GDR_READ=0"
        if gdr_read < 0 and gpu.sm < 80:
            nvlink = len(system.nodes[GPU]) == 1 or any(
                i != g and gpu.paths[GPU][i].type == s.PATH_NVL for i in range(len(system.nodes[GPU])))
            if not nvlink:
                return GDR_DISABLE, "GPUDirect reads are off before Ampere without NVLink (NCCL_NET_GDR_READ)"
    level = s.PATH_P2C if system.params.get("NET_GDR_C2C", 1) else s.PATH_PXB
    user = get_level(system, None, "NCCL_NET_GDR_LEVEL")
    if user != -2:
        level = user
    distance = gpu.paths[NET][n].type
    via = ""
    if distance == s.PATH_PXN:
        proxy = get_intermediate_rank(system, gpu.rank, n)
        g = system.gpu_by_rank(proxy)
        gpu = system.nodes[GPU][g]
        distance = gpu.paths[NET][n].type
        via = f" (PXN through GPU rank {proxy})"
    if distance > level:
        return GDR_DISABLE, (f"path {s.PATH_TYPE_STR[distance]}{via} is farther than NCCL_NET_GDR_LEVEL "
                             f"{s.PATH_TYPE_STR[level]}")
    c = get_local_cpu(system, g)
    if c >= 0 and gpu.paths[CPU][c].type == s.PATH_C2C and distance != s.PATH_P2C:
        return GDR_PCI, f"path {s.PATH_TYPE_STR[distance]}{via} within NCCL_NET_GDR_LEVEL (PCI mapping on C2C)"
    return GDR_DEFAULT, f"path {s.PATH_TYPE_STR[distance]}{via} within NCCL_NET_GDR_LEVEL {s.PATH_TYPE_STR[level]}"


def compute_paths(system: System) -> None:
    """``ncclTopoComputePaths`` (one host, every GPU reachable by P2P or SHM)."""
    for lst in system.nodes:
        for node in lst:
            node.paths = {}
    for t in (CPU, DEV, GPU, NET, s.GIN, s.RMA, NVS):
        for node in system.nodes[t]:
            _set_paths(node, system)
    gpus = system.nodes[GPU]
    for g in range(len(gpus)):
        for p in range(len(gpus)):
            p2p, _, _ = check_p2p(system, gpus[p].rank, gpus[g].rank)
            if p2p == 0:
                cpu = get_local_cpu(system, g)
                _add_inter_step(system, CPU, cpu, GPU, p, GPU, g)
    nets = system.nodes[NET]
    for g, gpu in enumerate(gpus):
        c = get_local_cpu(system, g)
        if c == -1:
            continue
        local, _ = get_local(system, GPU, g, NET)
        for n in local:
            net = nets[n]
            if _merge_path_type(gpu.paths[CPU][c].type, net.paths[CPU][c].type) == s.PATH_P2C:
                gpu.paths[NET][n].type = min(s.PATH_P2C, gpu.paths[NET][n].type)
                net.paths[GPU][g].type = min(s.PATH_P2C, net.paths[GPU][g].type)
    for n, net in enumerate(nets):
        for g, gpu in enumerate(gpus):
            if pxn_disable(system) != 1:
                peer_i = get_local_gpu(system, n)
                if peer_i != g and peer_i != -1:
                    peer = gpus[peer_i]
                    mode, _ = check_gdr(system, peer.rank, n, 1)
                    pxn_type = s.PATH_P2C if system.params.get("PXN_C2C", 1) else s.PATH_PXB
                    if (peer.paths[NET][n].type <= pxn_type and mode != GDR_DISABLE
                            and peer.paths[GPU][g].type <= s.PATH_NVL
                            and (peer.paths[NET][n].bw > gpu.paths[NET][n].bw
                                 or gpu.paths[NET][n].type > s.PATH_PXN)):
                        _add_inter_step(system, GPU, peer_i, GPU, g, NET, n)
            if gpu.paths[NET][n].type < s.PATH_PHB:
                mode, _ = check_gdr(system, gpu.rank, n, 0)
                if mode == GDR_DISABLE:
                    cpu = get_local_cpu(system, g)
                    _add_inter_step(system, CPU, cpu, NET, n, GPU, g)
                    _add_inter_step(system, CPU, cpu, GPU, g, NET, n)
    for n, net in enumerate(nets):
        net.local_gpu = get_local_gpu(system, n)


def trim_system(system: System, n_ranks: int) -> int:
    """``ncclTopoTrimSystem``: drop GPUs outside rank 0's P2P/SHM domain; ``inter`` = other nodes in the job.
    Returns the number of GPUs dropped (none: the paths NCCL computes again next come out the same)."""
    removed = 0
    gpus = system.nodes[GPU]
    domains = list(range(len(gpus)))
    ids = [g.id for g in gpus]
    my = 0
    for g, gpu in enumerate(gpus):
        for p in range(g):
            if gpu.paths[GPU][p].type < s.PATH_NET:
                domains[g] = min(domains[g], domains[p])
        if gpu.rank == 0:
            my = domains[g]
    for i, gid in enumerate(ids):
        if domains[i] == my:
            continue
        for g, gpu in enumerate(system.nodes[GPU]):
            if gpu.id == gid:
                system.remove(GPU, g)
                removed += 1
                break
    system.inter = 0 if len(system.nodes[GPU]) == n_ranks else 1
    return removed


def check_net(system: System, rank1: int, rank2: int) -> int:
    """``ncclTopoCheckNet``: 1 when the network would be faster than P2P/SHM between two local GPUs."""
    if system.params.get("NET_DISABLE_INTRA", 0) == 1:
        return 0
    g1, g2 = system.gpu_by_rank(rank1), system.gpu_by_rank(rank2)
    if g1 < 0 or g2 < 0:
        return 0
    a, b = system.nodes[GPU][g1], system.nodes[GPU][g2]
    speed = a.paths[GPU][g2].bw
    s1 = s2 = 0.0
    for n in range(len(system.nodes[NET])):
        p = a.paths[NET][n]
        if p.type <= s.PATH_PXB and p.bw > s1:
            s1 = p.bw
        p = b.paths[NET][n]
        if p.type <= s.PATH_PXB and p.bw > s2:
            s2 = p.bw
    return 1 if s1 > speed and s2 > speed else 0


def path_str(p: Path) -> str:
    """``TYPE/bw`` as the harness and NCCL's INFO lines print a path."""
    return f"{s.PATH_TYPE_STR[p.type]}/{f32(p.bw):g}"
