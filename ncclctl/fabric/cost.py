"""Cost of a ring order: switch hops per ring step and an alpha-beta estimate of ring all-reduce bus bandwidth.

The model (docs/fabric.md has the derivation and the assumptions):

* NCCL runs one ring channel per rail; channel r's inter-node step from host a to host b leaves on a's rail-r HCA
  and enters on b's. The step costs **2 hops** (HCA-leaf-HCA) when both HCAs sit on one leaf, else **4 hops**
  (HCA-leaf-spine-leaf-HCA); on a three-tier fabric a step between leaves of different pods (leaves that share no
  spine) costs **6 hops** (through the core). A down or absent HCA is taken at its group's rail leaf.
* **Bandwidth.** A step runs at the slower of the two HCA links; a step that crosses the spine also shares its
  leaves' uplinks with the other crossing steps of that rail: each gets ``uplink capacity / crossings`` at the
  source leaf (egress) and at the destination leaf (ingress). Uplink capacity is the sum of the leaf's
  switch-facing link rates (leaf oversubscription = downlinks / uplinks, from the fabric's port counts), or the
  leaf's HCA capacity / ``--oversubscription``. Flows are assumed spread evenly over the uplinks (adaptive
  routing) and the spine layer non-blocking. Fabrics seen only through LLDP show no uplinks: without
  ``--oversubscription`` they are taken as non-blocking. The ring is pipelined, so each rail runs at its slowest
  step.
* **Latency** follows NCCL's own tuning model for Ring/Simple (src/graph/tuning.cc, NCCL 2.2x): a base latency,
  ``2(k-1)`` steps for k ranks of which ``2(n-1)`` cross the network for n hosts; intra-node steps cost the NVLink
  latency, network steps NCCL's network latency plus ``hops x hop latency``.
* **Time and bus bandwidth.** Each rail carries ``S / rails`` bytes: ``T = latency + 2(k-1)/k * (S / rails) /
  bandwidth``, the slowest rail decides, and ``busbw = S / T * 2(k-1)/k`` (nccl-tests' definition).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict

from ncclctl.record import record

#: NCCL tuning constants (src/graph/tuning.cc, ncclTunerConstantsDefaults; Ring, Simple protocol), microseconds.
NCCL_BASE_LATENCY_US = 8.4
NCCL_NET_LATENCY_US = 14.0
NCCL_NVLINK_LATENCY_US = 3.4


@record
class CostParams:
    #: All-reduce message size S in bytes.
    message_bytes: int = 1 << 30
    #: Latency added per link a ring step traverses (switch forwarding plus cable), microseconds.
    hop_latency_us: float = 0.2
    #: Ranks (GPUs) per host; the hostfile's slots.
    ranks_per_host: int = 8
    #: Leaf downlink/uplink capacity ratio; None: from the fabric's port counts (non-blocking when unknown).
    oversubscription: float | None = None
    base_latency_us: float = NCCL_BASE_LATENCY_US
    net_latency_us: float = NCCL_NET_LATENCY_US
    intra_latency_us: float = NCCL_NVLINK_LATENCY_US


def parse_size(text: str) -> int:
    """``1G``, ``256M``, ``64K``, ``1GiB``, ``4096`` -> bytes (binary multiples)."""
    from ncclctl.errors import UsageError
    import re

    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", text, flags=re.IGNORECASE)
    if not m:
        raise UsageError(f"--message-size: cannot read {text!r}", fix="use bytes or K/M/G/T, e.g. 1G or 256M")
    value = float(m.group(1)) * (1 << (10 * "KMGT".find(m.group(2).upper()) + 10 if m.group(2) else 0))
    if value < 1:
        raise UsageError("--message-size must be at least 1 byte")
    return int(value)


class FabricCapacity:
    """Per-leaf uplink capacity (Gb/s) under the given oversubscription, computed once per fabric."""

    def __init__(self, lay, oversubscription: float | None) -> None:
        g = lay.graph
        self.down: dict[str, float] = {}
        self.down_ports: Counter = Counter()
        default = lay.expected_rate or 0.0
        for _key, link in g.host_links():
            self.down[link[0]] = self.down.get(link[0], 0.0) + (link[4] or default)
            self.down_ports[link[0]] += 1
        up = g.uplink_gbps()
        up_ports = g.uplinks()
        self.up: dict[str, float] = {}
        if oversubscription is not None:
            self.source = "option"
            for leaf, cap in self.down.items():
                self.up[leaf] = cap / oversubscription
        elif up:
            self.source = "leaf port counts"
            for leaf in self.down:
                self.up[leaf] = up.get(leaf, 0.0)
        else:
            self.source = "no uplinks visible: non-blocking assumed"
        ratios: Counter[float] = Counter()  # down/up port ratio of a leaf -> leaves with it
        for leaf, n in self.down_ports.items():
            if up_ports.get(leaf):
                ratios[round(n / up_ports[leaf], 2)] += 1
        self.ratio = oversubscription if oversubscription is not None else (
            min(ratios, key=lambda r: (-ratios[r], -r)) if ratios else None)
        self.max_ratio = oversubscription if oversubscription is not None else (max(ratios) if ratios else None)

    def uplink(self, leaf: str | None) -> float:
        if leaf is None or not self.up:
            return math.inf
        return self.up.get(leaf, math.inf)

    def doc(self) -> dict:
        return {"source": self.source, "leaf_down_up_ratio": self.ratio, "worst_leaf_down_up_ratio": self.max_ratio}


def ring_cost(order: list[str], lay, params: CostParams, capacity: FabricCapacity | None = None) -> dict:
    """The cost of the ring ``order`` (hosts) over the layout ``lay`` (:class:`~ncclctl.fabric.layout.Layout`)."""
    n = len(order)
    rails = lay.rails
    out: dict = {"hosts": n, "rails": rails, "ranks": n * params.ranks_per_host}
    if n < 2 or rails == 0:
        out.update({"crossing_steps": 0, "hops_per_step": None, "bottleneck_gbps": None, "latency_us": None,
                    "time_ms": None, "busbw_GBps": None,
                    "note": "a single host: no inter-node ring" if n < 2 else "no rails"})
        return out
    cap = capacity or FabricCapacity(lay, params.oversubscription)
    default_rate = lay.expected_rate
    k = n * params.ranks_per_host
    hist: Counter = Counter()
    pods = lay.leaf_pod if getattr(lay, "tiers", 2) >= 3 else None
    worst_time = 0.0
    worst = None
    bottleneck = math.inf
    crossing_steps = 0
    leaf_rows = [lay.eff_leaves.get(h) or [] for h in order]
    leaf_cols = list(zip(*[row + [None] * (rails - len(row)) for row in leaf_rows]))
    fallback = default_rate or math.inf
    rate_rows = [[ep.link[4] or fallback if ep is not None and ep.link is not None else fallback
                  for ep in lay.host_rails[h]] for h in order]
    rate_cols = list(zip(*[row + [fallback] * (rails - len(row)) for row in rate_rows]))
    for r in range(rails):
        leaves = leaf_cols[r]
        rates = rate_cols[r]
        egress: Counter = Counter()
        ingress: Counter = Counter()
        crossing = []
        nxt = leaves[1:] + leaves[:1]
        for i, (a, b) in enumerate(zip(leaves, nxt)):
            if a != b or a is None:
                crossing.append(i)
                egress[a] += 1
                ingress[b] += 1
        ncross = len(crossing)
        crossing_steps += ncross
        hist[2] += n - ncross
        far = 0
        if pods:
            far = sum(1 for i in crossing if leaves[i] is not None and nxt[i] is not None
                      and pods.get(leaves[i]) != pods.get(nxt[i]))
        hist[4] += ncross - far
        hist[6] += far
        bw = min(rates)  # every host has a step in and a step out: the slowest HCA link bounds the ring
        for i in crossing:
            a, b = leaves[i], nxt[i]
            s = min(cap.uplink(a) / egress[a], cap.uplink(b) / ingress[b])
            if s < bw:
                bw = s
        mean_hops = (2 * (n - ncross) + 4 * (ncross - far) + 6 * far) / n
        lat = (params.base_latency_us + (2 * (k - 1) - 2 * (n - 1)) * params.intra_latency_us
               + 2 * (n - 1) * (params.net_latency_us + mean_hops * params.hop_latency_us))
        if bw <= 0 or math.isinf(bw):
            t = math.inf if bw <= 0 else lat * 1e-6
        else:
            t = lat * 1e-6 + (2 * (k - 1) / k) * (params.message_bytes / rails) / (bw * 1e9 / 8)
        bottleneck = min(bottleneck, bw)
        if worst is None or t > worst_time:
            worst_time, worst = t, (r, lat, bw, mean_hops)
    steps = hist[2] + hist[4] + hist[6]
    busbw = params.message_bytes / worst_time * (2 * (k - 1) / k) / 1e9 if worst_time and not math.isinf(worst_time) else 0.0
    out.update({
        "crossing_steps": crossing_steps,
        "hops_per_step": {"mean": round((2 * hist[2] + 4 * hist[4] + 6 * hist[6]) / steps, 4),
                          "max": 6 if hist[6] else 4 if hist[4] else 2,
                          "histogram": {"2": hist[2], "4": hist[4], **({"6": hist[6]} if hist[6] else {})}},
        "bottleneck_gbps": None if math.isinf(bottleneck) else round(bottleneck, 3),
        "slowest_rail": worst[0] if worst else None,
        "latency_us": round(worst[1], 3) if worst else None,
        "time_ms": round(worst_time * 1e3, 4),
        "busbw_GBps": round(busbw, 3),
    })
    return out


def params_doc(params: CostParams, capacity: FabricCapacity, link_gbps: float | None) -> dict:
    return {**asdict(params), "link_gbps": link_gbps, "oversubscription": capacity.doc()}
