"""Whether NCCL 2.30.7 turns on MNNVL (multi-node NVLink) for a job of N identical nodes, step by step as its code
decides it: init.cc (the gate: ``(nNodes > 1 && NCCL_MNNVL_ENABLE != 0 && p2pLevel != 0) || NCCL_MNNVL_ENABLE == 1``,
the fabric info each rank exchanges, the NCCL_MNNVL_UUID / NCCL_MNNVL_CLIQUE_ID overrides) and mnnvl.cc
(``ncclMnnvlCheck``: cuMem on, FABRIC handles supported, every rank's fabric state COMPLETED, a non-zero cluster
UUID, a clique or NVLink domain of more than one rank, then a FABRIC allocation (needs an IMEX channel) and its
export/import through IMEX, each failure a WARN and ncclSystemError).

The node's facts stand in for what CUDA and NVML answer at run time: the fabric info NVML recorded (``ncclctl
probe``), the IMEX channel devices and service. What cannot be read from a snapshot is said to be assumed:
``CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED`` (taken as supported when NVML reports the GPU's fabric) and cuMem
support (auto-detected by NCCL; on with a CUDA 12+ driver). Not checked against NCCL's code by running it: the CPU
harness of ``src/graph`` stubs CUDA and NVML (every fabric query "not supported"), and ``ncclMnnvlCheck`` calls the
CUDA driver, so this decision is re-implemented from the source and unverified. What NCCL does once MNNVL is on
(topo.cc: the clique's ranks become the "local" ranks of one fused NVLink topology; paths.cc: P2P between ranks of
the same cluster UUID and clique across hosts; init.cc: no NVLS buffer registration) is not modelled by ``topo
predict``'s graph search.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

ZERO_UUID = "00000000-0000-0000-0000-000000000000"


@dataclass
class MnnvlDecision:
    """``applies``: True (NCCL sets MNNVL 1), False (it stays off) or None (NCCL stops: ``fails`` says with what)."""
    applies: bool | None
    steps: list[str] = field(default_factory=list)
    fails: str | None = None
    clique_size: int | None = None
    domain_size: int | None = None
    effects: list[str] = field(default_factory=list)
    assumed: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"applies": self.applies, "fails": self.fails, "clique_size": self.clique_size,
                "domain_size": self.domain_size, "steps": self.steps, "effects": self.effects,
                "assumed": self.assumed, "verified": False}


def _int(env: dict[str, str], name: str, default: int) -> int:
    try:
        return int(str(env.get(name, default)).strip(), 0)
    except ValueError:
        return default


def decide(node: Any, *, nodes: int, env: dict[str, str]) -> MnnvlDecision | None:
    """NCCL's MNNVL decision for ``nodes`` copies of ``node`` with the NCCL settings ``env``; None when no GPU of the
    node reports fabric info (NVML's fabric state not NOT_SUPPORTED): NCCL never considers MNNVL there."""
    from ncclctl.model import FABRIC_STATE_COMPLETED, FABRIC_STATE_NAMES

    gpus = [g for g in node.gpus if g.fabric_state not in (None, 0)]
    if not gpus:
        return None
    d = MnnvlDecision(applies=False)
    enable = _int(env, "NCCL_MNNVL_ENABLE", 2)
    p2p_off = env.get("NCCL_P2P_DISABLE", "").strip() == "1" or env.get("NCCL_P2P_LEVEL", "").strip().upper() in (
        "LOC", "0")
    if not ((nodes > 1 and enable != 0 and not p2p_off) or enable == 1):
        why = ("one node: MNNVL is only checked for jobs across nodes" if nodes <= 1 else
               "NCCL_MNNVL_ENABLE=0" if enable == 0 else "P2P is off (NCCL_P2P_DISABLE=1 / NCCL_P2P_LEVEL=LOC)")
        d.steps.append(f"init.cc: MNNVL not checked: {why}")
        return d
    d.steps.append(f"init.cc: MNNVL checked ({nodes} nodes, NCCL_MNNVL_ENABLE={enable})")
    if _int(env, "NCCL_CUMEM_ENABLE", -2) == 0:
        d.steps.append("mnnvl.cc: NCCL_CUMEM_ENABLE=0: MNNVL needs cuMem, stays off")
        return d
    d.assumed.append("cuMem supported (NCCL auto-detects it; on with a CUDA 12+ driver)")
    d.assumed.append("CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED = 1 (NVML reports the GPUs' fabric)")
    bad = [g for g in gpus if g.fabric_state != FABRIC_STATE_COMPLETED] + [g for g in node.gpus if g not in gpus]
    if bad:
        g = bad[0]
        d.steps.append(f"mnnvl.cc: GPU{g.index}'s fabric state is "
                       f"{FABRIC_STATE_NAMES.get(g.fabric_state or 0, str(g.fabric_state))}, not COMPLETED on every "
                       f"rank: MNNVL stays off (lint rule NVL001)")
        return d
    uuid_override = _int(env, "NCCL_MNNVL_UUID", -1)
    clique_override = _int(env, "NCCL_MNNVL_CLIQUE_ID", -1)
    uuids = {g.fabric_cluster_uuid or ZERO_UUID for g in gpus}
    if uuid_override != -1:
        d.steps.append(f"init.cc: NCCL_MNNVL_UUID={uuid_override} replaces every rank's cluster UUID")
        uuids = {f"override:{uuid_override}"}
    if uuids == {ZERO_UUID}:
        d.steps.append("mnnvl.cc: the cluster UUID is zero (no MNNVL fabric info): MNNVL stays off")
        return d
    if clique_override == -2:
        d.steps.append("init.cc: NCCL_MNNVL_CLIQUE_ID=-2: the clique id is a hash of the rack's chassis serial "
                       "(platform info): every tray of one rack in one clique")
        cliques: Counter[Any] = Counter({"rack": len(gpus)})
    elif clique_override != -1:
        d.steps.append(f"init.cc: NCCL_MNNVL_CLIQUE_ID={clique_override} replaces every rank's clique id")
        cliques = Counter({clique_override: len(gpus)})
    else:
        cliques = Counter(g.fabric_clique_id for g in gpus)
    # N identical nodes: every node's GPUs report the same (UUID, clique) pairs as this one's.
    key = "rack" if clique_override == -2 else clique_override if clique_override != -1 else gpus[0].fabric_clique_id
    own = cliques[key]  # rank 0's clique (the local rank 0 drives the first GPU)
    d.clique_size = own * nodes
    d.domain_size = len(gpus) * nodes if len(uuids) == 1 else None
    if len(cliques) > 1:
        d.steps.append(f"mnnvl.cc: the node's GPUs are in {len(cliques)} cliques ({', '.join(map(str, cliques))}; "
                       f"lint rule NVL005): rank 0's clique holds {d.clique_size} of the {len(gpus) * nodes} ranks")
    if (d.clique_size or 0) <= 1 and (d.domain_size or 0) <= 1:
        d.steps.append("mnnvl.cc: a clique and NVLink domain of one rank: MNNVL stays off")
        return d
    imex = node.facts.imex
    max_nodes = len(imex.nodes) if imex is not None and imex.nodes else None
    if max_nodes and nodes > max_nodes:
        d.steps.append(f"the node's IMEX node list names {max_nodes} trays: {nodes} nodes cannot all be in its NVLink "
                       f"domain; NCCL's clique is then the ranks of each domain (the rest are reached over the NICs); "
                       f"'identical nodes in one clique' is assumed below")
    if imex is None or not imex.channels:
        d.applies = None
        d.fails = ("mnnvl.cc: the FABRIC allocation fails (no /dev/nvidia-caps-imex-channels/channelN on the node, "
                   f"lint rule NVL003): NCCL WARNs 'MNNVL (cliqueSize {d.clique_size}) is available but not working "
                   "... IMEX channel configuration' and init returns ncclSystemError (log rule LOG030); "
                   "NCCL_MNNVL_ENABLE=0 runs the job over the NICs instead")
        d.steps.append(d.fails)
        return d
    if imex.service not in (None, "active"):
        d.applies = None
        d.fails = (f"mnnvl.cc: the FABRIC handle export/import through IMEX fails (nvidia-imex is {imex.service}, lint "
                   f"rule NVL004): NCCL WARNs 'MNNVL (cliqueSize {d.clique_size}) is available but not working ... "
                   "IMEX configuration' and init returns ncclSystemError (log rule LOG030)")
        d.steps.append(d.fails)
        return d
    d.applies = True
    d.steps.append(f"mnnvl.cc: FABRIC memory allocated and exported through IMEX (channel{imex.channels[0]}, "
                   f"nvidia-imex {imex.service or 'state unknown'}): MNNVL 1, cliqueSize {d.clique_size}, nvlDomainSize "
                   f"{d.domain_size}")
    d.effects = [
        f"topo.cc: the clique's {d.clique_size} ranks are NCCL's 'local' ranks: one NVLink topology fused across the "
        f"{nodes} trays, so rings and trees run over NVLink between trays (P2P/CUMEM), not the NICs (paths.cc: P2P "
        "between ranks of one cluster UUID and clique on different hosts)",
        "init.cc: NVLS buffer registration is off under MNNVL",
        "the ring/tree graphs printed above are NCCL's search for the nodes as separate NVLink islands joined by "
        "NICs (what NCCL does with NCCL_MNNVL_ENABLE=0); the fused MNNVL search is not modelled",
    ]
    return d


def render(d: MnnvlDecision) -> str:
    state = {True: "yes", False: "no", None: "NCCL stops"}[d.applies]
    lines = [f"MNNVL (multi-node NVLink, NCCL 2.30.7's init.cc/mnnvl.cc; re-implemented, unverified): {state}"]
    lines += [f"  {s}" for s in d.steps]
    lines += [f"  then {e}" for e in d.effects]
    lines += [f"  assumed: {a}" for a in d.assumed]
    return "\n".join(lines) + "\n"
