"""GPU rules: NVLinks, Fabric Manager, MIG, persistence mode (host-facts.md section 7)."""

from __future__ import annotations

from typing import Iterable

from ncclctl.findings import Severity
from ncclctl.lint.context import Ctx
from ncclctl.lint.registry import Hit, rule

W = Severity.WARNING


@rule(
    "GPU004", "persistence-mode-off", W, "GPU persistence mode is off",
    what="A GPU whose driver persistence mode is disabled (nvidia-smi -q: Persistence Mode: Disabled).",
    why="Without persistence (or nvidia-persistenced) the driver tears the GPU state down when the last client "
        "exits; every job start re-initialises it, adding seconds to NCCL init and, on NVSwitch systems, racing "
        "Fabric Manager's registration of the GPU.",
    detect="NVML nvmlDeviceGetPersistenceMode per GPU (nvml.json 'persistence_mode': 0).",
    fix="Enable the nvidia-persistenced service (systemctl enable --now nvidia-persistenced), or run "
        "nvidia-smi -pm 1 at boot.",
)
def persistence_off(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    for gpu in ctx.node.gpus:
        if gpu.persistence_mode is False:
            yield Hit(f"GPU{gpu.index}", f"GPU{gpu.index} ({gpu.bdf}) has persistence mode off",
                      evidence=("nvml persistence_mode=0",))
