"""How node and fleet rules grade some findings away from their default severity, for the docs and ``explain``.

A check may give a hit its own severity (``Hit.severity``): a non-compute port is a warning where a rail port is
an error, a setting that a newer NCCL accepts is an info. The registry records the default; this table says in a
few words when a finding gets another severity, so ``ncclctl rules``, ``ncclctl explain`` and the generated rule
tables in docs/ tell the whole story. (Table rules carry their note in their own row.) Keys must be registered
rule ids; the meta-tests check that.
"""

from __future__ import annotations

GRADED: dict[str, str] = {
    "PCI002": "error with PCI001; info in a VM",
    "PCI003": "info: a wide device in a narrow slot",
    "PCI005": "error for SYS; info on a flat-PCIe VM",
    "GDR001": "warning when DMA-BUF cannot be confirmed",
    "GPU003": "warning when only pending",
    "GPU005": "info when pynvml is missing or the capture has no NVML data",
    "FLT012": "warning for a foreign IMEX node, a driver or a GPU firmware split; info for a shared clique id",
    "FLT013": "warning for a label missing on a domain host or set on a host without a domain",
    "NVL002": "error for ROUTE_UNHEALTHY, INCORRECT_CONFIGURATION, no partition or summary UNHEALTHY",
    "NVL004": "warning for a domain not UP or peers not READY",
    "NVL006": "error when MNNVL is forced without a registered fabric",
    "IB001": "warning for non-compute ports, option non_compute",
    "IB003": "warning for non-compute ports, option non_compute",
    "IB004": "warning for non-compute ports, option non_compute",
    "ROCE001": "off under profile: lossy",
    "ROCE003": "info when the trust mode is unknown",
    "ROCE004": "error under profile: lossy",
    "ROCE006": "info when only the GID index differs",
    "ROCE007": "error at a RoCE MTU of 1024 or less",
    "ROCE008": "error when NCCL's priority loses PFC",
    "NCCL004": "info for integer settings",
    "NCCL005": "info from NCCL 2.30",
    "NCCL012": "info for :rail:plane before 2.30.7",
    "NCCL014": "error when only loopback is left",
    "NCCL015": "warning for a one-character value, which NCCL ignores",
    "NCCL016": "info when NCCL_P2P_DISABLE=1 overrides the level",
    "NCCL017": "warning before NCCL 2.24",
    "NCCL018": "info for NCCL_DEBUG",
    "NCCL020": "file findings keep the file checker's severity",
    "NCCL021": "error in a VM; info when empty",
    "NCCL022": "file findings keep the file checker's severity",
    "NCCL023": "file findings keep the file checker's severity",
}
