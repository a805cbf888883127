"""nvidia-smi topo -m parser."""

from __future__ import annotations

import pytest

from ncclctl.errors import ParseError
from ncclctl.parsers.smi_topo import SmiTopo, parse_nvidia_smi_topo

LEGEND = (
    "\n"
    "Legend:\n"
    "\n"
    "  X    = Self\n"
    "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n"
    "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node\n"
    "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
    "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)\n"
    "  PIX  = Connection traversing at most a single PCIe bridge\n"
    "  NV#  = Connection traversing a bonded set of # NVLinks\n"
)

# Real capture, 2-GPU PCIe workstation (public bench report, TABs intact): note "0\t\tN/A", the
# second TAB after the NUMA Affinity value.
TWO_GPU_PCIE = (
    "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
    "GPU0\t X \tPHB\t0-63\t0\t\tN/A\n"
    "GPU1\tPHB\t X \t0-63\t0\t\tN/A\n" + LEGEND
)

# Real capture, 8 GPUs (NV12) + 10 NICs, TABs intact (public project write-up), older driver
# without the GPU NUMA ID column. NIC rows end in two empty TAB cells.
EIGHT_GPU_NV12 = (
    "\tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tGPU7\tNIC0\tNIC1\tNIC2\tNIC3\tNIC4\tNIC5\tNIC6\tNIC7\tNIC8\tNIC9\tCPU Affinity\tNUMA Affinity\n"
    "GPU0\t X \tNV12\tNV12\tNV12\tNV12\tNV12\tNV12\tNV12\tPXB\tPXB\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t48-63,176-191\t3\n"
    "GPU1\tNV12\t X \tNV12\tNV12\tNV12\tNV12\tNV12\tNV12\tPXB\tPXB\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t48-63,176-191\t3\n"
    "GPU2\tNV12\tNV12\t X \tNV12\tNV12\tNV12\tNV12\tNV12\tSYS\tSYS\tPXB\tPXB\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t16-31,144-159\t1\n"
    "GPU3\tNV12\tNV12\tNV12\t X \tNV12\tNV12\tNV12\tNV12\tSYS\tSYS\tPXB\tPXB\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t16-31,144-159\t1\n"
    "GPU4\tNV12\tNV12\tNV12\tNV12\t X \tNV12\tNV12\tNV12\tSYS\tSYS\tSYS\tSYS\tPXB\tPXB\tSYS\tSYS\tSYS\tSYS\t112-127,240-255\t7\n"
    "GPU5\tNV12\tNV12\tNV12\tNV12\tNV12\t X \tNV12\tNV12\tSYS\tSYS\tSYS\tSYS\tPXB\tPXB\tSYS\tSYS\tSYS\tSYS\t112-127,240-255\t7\n"
    "GPU6\tNV12\tNV12\tNV12\tNV12\tNV12\tNV12\t X \tNV12\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tPXB\tPXB\tSYS\tSYS\t80-95,208-223\t5\n"
    "GPU7\tNV12\tNV12\tNV12\tNV12\tNV12\tNV12\tNV12\t X \tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tPXB\tPXB\tSYS\tSYS\t80-95,208-223\t5\n"
    "NIC0\tPXB\tPXB\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t X \tPXB\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t\t\n"
    "NIC1\tPXB\tPXB\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tPXB\t X \tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t\t\n"
    "NIC2\tSYS\tSYS\tPXB\tPXB\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t X \tPXB\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t\t\n"
    "NIC3\tSYS\tSYS\tPXB\tPXB\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tPXB\t X \tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t\t\n"
    "NIC4\tSYS\tSYS\tSYS\tSYS\tPXB\tPXB\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t X \tPXB\tSYS\tSYS\tSYS\tSYS\t\t\n"
    "NIC5\tSYS\tSYS\tSYS\tSYS\tPXB\tPXB\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tPXB\t X \tSYS\tSYS\tSYS\tSYS\t\t\n"
    "NIC6\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tPXB\tPXB\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t X \tPXB\tSYS\tSYS\t\t\n"
    "NIC7\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tPXB\tPXB\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tPXB\t X \tSYS\tSYS\t\t\n"
    "NIC8\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t X \tPIX\t\t\n"
    "NIC9\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tPIX\t X \t\t\n"
    + LEGEND
    + "\nNIC Legend:\n\n"
    + "".join(f"  NIC{i}: mlx5_{i}\n" for i in range(10))
    + "\n"
)

# DGX H100-like (8x H100 SXM, NV18 through NVSwitch, one CX-7 per GPU behind the same PCIe switch
# (PIX), two storage NICs, 2 sockets) laid out as current drivers print it: ANSI-underlined header,
# GPU NUMA ID column, "\t\t" after NUMA Affinity, empty affinity cells on NIC rows.
_H100_ROWS = [
    "\x1b[4m\tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tGPU7\tNIC0\tNIC1\tNIC2\tNIC3\tNIC4\tNIC5\tNIC6\tNIC7\tNIC8\tNIC9\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m",
    "GPU0\t X \tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tPIX\tNODE\tNODE\tNODE\tSYS\tSYS\tSYS\tSYS\tNODE\tSYS\t0-55,112-167\t0\t\tN/A",
    "GPU1\tNV18\t X \tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tNODE\tPIX\tNODE\tNODE\tSYS\tSYS\tSYS\tSYS\tNODE\tSYS\t0-55,112-167\t0\t\tN/A",
    "GPU2\tNV18\tNV18\t X \tNV18\tNV18\tNV18\tNV18\tNV18\tNODE\tNODE\tPIX\tNODE\tSYS\tSYS\tSYS\tSYS\tNODE\tSYS\t0-55,112-167\t0\t\tN/A",
    "GPU3\tNV18\tNV18\tNV18\t X \tNV18\tNV18\tNV18\tNV18\tNODE\tNODE\tNODE\tPIX\tSYS\tSYS\tSYS\tSYS\tNODE\tSYS\t0-55,112-167\t0\t\tN/A",
    "GPU4\tNV18\tNV18\tNV18\tNV18\t X \tNV18\tNV18\tNV18\tSYS\tSYS\tSYS\tSYS\tPIX\tNODE\tNODE\tNODE\tSYS\tNODE\t56-111,168-223\t1\t\tN/A",
    "GPU5\tNV18\tNV18\tNV18\tNV18\tNV18\t X \tNV18\tNV18\tSYS\tSYS\tSYS\tSYS\tNODE\tPIX\tNODE\tNODE\tSYS\tNODE\t56-111,168-223\t1\t\tN/A",
    "GPU6\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\t X \tNV18\tSYS\tSYS\tSYS\tSYS\tNODE\tNODE\tPIX\tNODE\tSYS\tNODE\t56-111,168-223\t1\t\tN/A",
    "GPU7\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\t X \tSYS\tSYS\tSYS\tSYS\tNODE\tNODE\tNODE\tPIX\tSYS\tNODE\t56-111,168-223\t1\t\tN/A",
    "NIC0\tPIX\tNODE\tNODE\tNODE\tSYS\tSYS\tSYS\tSYS\t X \tNODE\tNODE\tNODE\tSYS\tSYS\tSYS\tSYS\tNODE\tSYS\t\t",
    "NIC1\tNODE\tPIX\tNODE\tNODE\tSYS\tSYS\tSYS\tSYS\tNODE\t X \tNODE\tNODE\tSYS\tSYS\tSYS\tSYS\tNODE\tSYS\t\t",
    "NIC2\tNODE\tNODE\tPIX\tNODE\tSYS\tSYS\tSYS\tSYS\tNODE\tNODE\t X \tNODE\tSYS\tSYS\tSYS\tSYS\tNODE\tSYS\t\t",
    "NIC3\tNODE\tNODE\tNODE\tPIX\tSYS\tSYS\tSYS\tSYS\tNODE\tNODE\tNODE\t X \tSYS\tSYS\tSYS\tSYS\tNODE\tSYS\t\t",
    "NIC4\tSYS\tSYS\tSYS\tSYS\tPIX\tNODE\tNODE\tNODE\tSYS\tSYS\tSYS\tSYS\t X \tNODE\tNODE\tNODE\tSYS\tNODE\t\t",
    "NIC5\tSYS\tSYS\tSYS\tSYS\tNODE\tPIX\tNODE\tNODE\tSYS\tSYS\tSYS\tSYS\tNODE\t X \tNODE\tNODE\tSYS\tNODE\t\t",
    "NIC6\tSYS\tSYS\tSYS\tSYS\tNODE\tNODE\tPIX\tNODE\tSYS\tSYS\tSYS\tSYS\tNODE\tNODE\t X \tNODE\tSYS\tNODE\t\t",
    "NIC7\tSYS\tSYS\tSYS\tSYS\tNODE\tNODE\tNODE\tPIX\tSYS\tSYS\tSYS\tSYS\tNODE\tNODE\tNODE\t X \tSYS\tNODE\t\t",
    "NIC8\tNODE\tNODE\tNODE\tNODE\tSYS\tSYS\tSYS\tSYS\tNODE\tNODE\tNODE\tNODE\tSYS\tSYS\tSYS\tSYS\t X \tSYS\t\t",
    "NIC9\tSYS\tSYS\tSYS\tSYS\tNODE\tNODE\tNODE\tNODE\tSYS\tSYS\tSYS\tSYS\tNODE\tNODE\tNODE\tNODE\tSYS\t X \t\t",
]
DGX_H100 = (
    "\n".join(_H100_ROWS)
    + "\n"
    + LEGEND
    + "\nNIC Legend:\n\n"
    + "".join(f"  NIC{i}: mlx5_{i}\n" for i in range(8))
    + "  NIC8: mlx5_10\n  NIC9: mlx5_11\n\n"
)

# Old driver (2017 capture in kubernetes#53497, whose paste lost the TABs and kept trailing
# spaces): the NIC row is labelled by its ibdev, only CPU Affinity exists, no NIC legend.
# Rows GPU5-7 and mlx4_0 were cut from the quoted excerpt and are completed symmetrically.
OLD_DRIVER = """\
        GPU0    GPU1    GPU2    GPU3    GPU4    GPU5    GPU6    GPU7    mlx4_0  CPU Affinity        
GPU0     X      PIX     PHB     PHB     SYS     SYS     SYS     SYS     PHB     0-9,20-29           
GPU1    PIX      X      PHB     PHB     SYS     SYS     SYS     SYS     PHB     0-9,20-29           
GPU2    PHB     PHB      X      PIX     SYS     SYS     SYS     SYS     PHB     0-9,20-29           
GPU3    PHB     PHB     PIX      X      SYS     SYS     SYS     SYS     PHB     0-9,20-29           
GPU4    SYS     SYS     SYS     SYS      X      PIX     PHB     PHB     SYS     10-19,30-39         
GPU5    SYS     SYS     SYS     SYS     PIX      X      PHB     PHB     SYS     10-19,30-39         
GPU6    SYS     SYS     SYS     SYS     PHB     PHB      X      PIX     SYS     10-19,30-39         
GPU7    SYS     SYS     SYS     SYS     PHB     PHB     PIX      X      SYS     10-19,30-39         
mlx4_0  PHB     PHB     PHB     PHB     SYS     SYS     SYS     SYS      X                          
"""

SAMPLES = [TWO_GPU_PCIE, EIGHT_GPU_NV12, DGX_H100, OLD_DRIVER]


def test_two_gpu_pcie_capture() -> None:
    topo = parse_nvidia_smi_topo(TWO_GPU_PCIE)
    assert topo.labels == ("GPU0", "GPU1")
    assert topo.matrix == (("X", "PHB"), ("PHB", "X"))
    assert topo.cpu_affinity == ("0-63", "0-63")
    assert topo.numa_affinity == ("0", "0")
    assert topo.gpu_numa_id == ("N/A", "N/A")
    assert topo.affinity_columns == ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
    assert topo.nic_legend == () and topo.nics == ()
    assert dict(topo.legend)["PIX"] == "Connection traversing at most a single PCIe bridge"
    assert dict(topo.legend)["NV#"].startswith("Connection traversing a bonded set")


def test_eight_gpu_capture_with_nics() -> None:
    topo = parse_nvidia_smi_topo(EIGHT_GPU_NV12)
    assert len(topo.labels) == 18 and topo.gpus == tuple(f"GPU{i}" for i in range(8))
    assert topo.cell("GPU0", "GPU7") == "NV12"
    assert topo.cell("GPU0", "NIC0") == topo.cell("NIC1", "GPU1") == "PXB"
    assert topo.cell("NIC8", "NIC9") == "PIX"
    assert topo.cpu_affinity[4] == "112-127,240-255" and topo.numa_affinity[4] == "7"
    assert topo.cpu_affinity[topo.index("NIC0")] is None  # NIC rows have no affinity
    assert topo.gpu_numa_id == (None,) * 18  # column absent on this driver
    assert topo.ibdev("NIC9") == "mlx5_9"


def test_dgx_h100_like_sample() -> None:
    topo = parse_nvidia_smi_topo(DGX_H100)
    assert topo.labels[:2] == ("GPU0", "GPU1") and topo.labels[-1] == "NIC9"
    for i in range(8):
        assert topo.cell(f"GPU{i}", f"NIC{i}") == "PIX"
        assert topo.ibdev(f"NIC{i}") == f"mlx5_{i}"
        assert all(topo.cell(f"GPU{i}", f"GPU{j}") == "NV18" for j in range(8) if j != i)
    assert topo.ibdev("NIC8") == "mlx5_10" and topo.ibdev("GPU0") is None
    assert topo.cell("GPU0", "NIC4") == "SYS" and topo.cell("GPU0", "NIC8") == "NODE"
    assert topo.numa_affinity[:8] == ("0",) * 4 + ("1",) * 4
    assert topo.gpu_numa_id[:8] == ("N/A",) * 8 and topo.gpu_numa_id[8:] == (None,) * 10
    assert all(topo.matrix[k][k] == "X" for k in range(18))
    assert topo.line == 1


def test_old_driver_labels_by_ibdev() -> None:
    topo = parse_nvidia_smi_topo(OLD_DRIVER)
    assert topo.labels[-1] == "mlx4_0" and topo.nics == ("mlx4_0",)
    assert topo.affinity_columns == ("CPU Affinity",)
    assert topo.cpu_affinity[0] == "0-9,20-29" and topo.cpu_affinity[-1] is None
    assert topo.numa_affinity == (None,) * 9
    assert topo.ibdev("mlx4_0") == "mlx4_0"
    assert topo.cell("GPU0", "mlx4_0") == "PHB"


@pytest.mark.parametrize(
    "variant",
    [
        lambda t: t.expandtabs(8),  # what a terminal copy or a web page gives
        lambda t: t.replace("\n", "\r\n"),
        lambda t: "\n".join(ln + "   " for ln in t.split("\n")),
        lambda t: "\n".join("  " + ln for ln in t.split("\n")),
        lambda t: t.replace("\x1b[4m", "").replace("\x1b[0m", ""),
    ],
)
def test_whitespace_variants(variant) -> None:  # type: ignore[no-untyped-def]
    for text in SAMPLES:
        assert parse_nvidia_smi_topo(variant(text)) == parse_nvidia_smi_topo(text)


def test_matrix_only_without_legend() -> None:
    text = "\n".join(_H100_ROWS) + "\n"
    topo = parse_nvidia_smi_topo(text)
    assert topo.nic_legend == () and topo.ibdev("NIC0") is None and len(topo.matrix) == 18


def test_nv_hash_and_na_cells() -> None:
    text = TWO_GPU_PCIE.replace("GPU0\t X \tPHB", "GPU0\t X \tNV#").replace("0-63\t0\t\tN/A\nGPU1", "N/A\tN/A\t\tN/A\nGPU1")
    topo = parse_nvidia_smi_topo(text)
    assert topo.matrix[0][1] == "NV#" and topo.cpu_affinity[0] == "N/A"


@pytest.mark.parametrize("text", ["", "\n\n", "No devices were found\n"])
def test_empty(text: str) -> None:
    topo = parse_nvidia_smi_topo(text)
    assert topo == SmiTopo((), (), (), (), (), ())


_GLUED = (  # vllm#17516: a web page dropped the TABs between the affinity cells
    "        GPU0    GPU1    CPU Affinity    NUMA Affinity   GPU NUMA ID\n"
    "GPU0     X      NV18    0-55,112-167 0N/A\n"
    "GPU1    NV18     X      0-55,112-167 0N/A\n"
)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (_GLUED, 2),
        # sglang#12244: "SYSSYS", two cells glued together
        (DGX_H100.replace("SYS\tSYS\tSYS\tSYS\tNODE\tSYS\t0-55", "SYSSYS\tSYS\tSYS\tNODE\tSYS\t0-55", 1), 2),
        (DGX_H100.split("\nNIC5\t")[0], 14),
        (DGX_H100.replace("GPU3\tNV18\tNV18\tNV18\t X ", "GPU3\tNV18\tNV18\tNV18\tNV18"), 5),
        (DGX_H100.replace("\nGPU2\t", "\nGPU9\t"), 4),
        (DGX_H100.replace("  NIC3: mlx5_3", "  NIC3 mlx5_3"), 36),
        (DGX_H100.replace("  NIC3: mlx5_3", "  NIC42: mlx5_3"), 36),
        (DGX_H100.replace("  NIC3: mlx5_3", "  NIC2: mlx5_3"), 36),
        (DGX_H100 + "something else\n", 44),
        (TWO_GPU_PCIE.replace("PHB\t X \t0-63", "PHB\t X \t0-63\t1\t2\t3"), 3),
        (TWO_GPU_PCIE.replace("0-63\t0\t\tN/A\nGPU1", "0-63\tzero\t\tN/A\nGPU1"), 2),
        (TWO_GPU_PCIE.replace("PHB\t0-63", "P-B\t0-63", 1), 2),
        (
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make "
            "sure that the latest NVIDIA driver is installed and running.\n",
            1,
        ),
        ("\tGPU0\tGPU0\tCPU Affinity\n", 1),
        ("\tGPU0\tCPU Affinity\tFooBar\n", 1),
    ],
    ids=[
        "glued-affinity", "glued-cells", "truncated", "diagonal", "row-label", "legend-syntax",
        "legend-unknown", "legend-dup", "trailing-junk", "extra-values", "bad-numa", "bad-cell",
        "smi-failed", "dup-label", "unknown-column",
    ],
)
def test_errors(text: str, line: int) -> None:
    with pytest.raises(ParseError) as ei:
        parse_nvidia_smi_topo(text, source="cmd/nvidia-smi_topo_-m.txt")
    assert ei.value.line == line and ei.value.path == "cmd/nvidia-smi_topo_-m.txt" and ei.value.fix


P2P_READ = """\
 \tGPU0\tGPU1\tGPU2\tGPU3\t
 GPU0\tX\tOK\tOK\tCNS\t
 GPU1\tOK\tX\tOK\tCNS\t
 GPU2\tOK\tOK\tX\tCNS\t
 GPU3\tCNS\tCNS\tCNS\tX\t

Legend:

  X    = Self
  OK   = Status Ok
  CNS  = Chipset not supported
  GNS  = GPU not supported
  TNS  = Topology not supported
  NS   = Not supported
  U    = Unknown
"""


def test_p2p_capability_matrix_is_refused_naming_its_command() -> None:
    """'nvidia-smi topo -p2p r' has the shape of 'topo -m' but says whether P2P works, not the path: refused with
    the command that produced it and the one to run instead, never read as a topology."""
    with pytest.raises(ParseError) as ei:
        parse_nvidia_smi_topo(P2P_READ, source="p2p.txt")
    err = ei.value
    assert err.line == 2 and "nvidia-smi topo -p2p" in err.message and "'OK' is a P2P status" in err.message
    assert "nvidia-smi topo -m" in (err.fix or "")


def test_p2p_matrix_through_compare_smi(tmp_path) -> None:
    f = tmp_path / "p2p.txt"
    f.write_text(P2P_READ)
    from conftest import HOSTS, run_cli

    p = run_cli("probe", "--root", str(HOSTS / "dgx-h100"), "--compare-smi", str(f))
    assert p.returncode == 3 and "nvidia-smi topo -p2p" in p.stderr and "Traceback" not in p.stderr


def test_text_before_the_matrix_and_a_pasted_prompt_are_left_out_with_a_note():
    """A report that wraps the matrix, a prompt with the command, and the command echoed on the header line."""
    for text, needle in (("NVIDIA Topology:\n=====\n" + TWO_GPU_PCIE, "text before the matrix header"),
                         ("[root@gpu01 ~]# nvidia-smi topo -m\n" + TWO_GPU_PCIE, "prompt and command echo"),
                         ("nvidia-smi topo -m   " + TWO_GPU_PCIE.lstrip("\t"), "command echo before the header")):
        topo = parse_nvidia_smi_topo(text)
        assert topo.labels == ("GPU0", "GPU1") and any(needle in n for n in topo.notes), topo.notes
    assert parse_nvidia_smi_topo(TWO_GPU_PCIE).notes == ()
