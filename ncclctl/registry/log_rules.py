"""The NCCL log rules (``ncclctl log check``) and the nccl-tests rules (``ncclctl perf check``), as table rows.

The checks live in :mod:`ncclctl.logs.check` and :mod:`ncclctl.logs.perf` and create findings by id. A finding's
``subject`` is the log file and its ``line`` the line of the first evidence, so text output reads
``FILE:LINE: severity: LOG001: message`` and SARIF points at the line; messages start with the host (and rank)
they are about, and the evidence lists the log lines (``file:line: text``) the finding rests on.
"""

from __future__ import annotations

from ncclctl.findings import Severity
from ncclctl.registry import Option, Rule, table

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

_CHECK = "ncclctl/logs/check.py"
_PERF = "ncclctl/logs/perf.py"

_DETECT = ("ncclctl log check reads NCCL_DEBUG=INFO logs (any number of files, a folder, stdin; plain or gzip; "
           "with launcher prefixes and application lines mixed in) and rebuilds each process, rank and "
           "communicator from NCCL's own wordings (NCCL 2.4 to 2.30; ncclctl/logs/parse.py). ")
_MODEL = ("With --root DIR (one node for every host) or --inventory INV (one node per host name), the node's "
          "topology goes through ncclctl's model of NCCL 2.30.7 (the one 'ncclctl topo predict' prints) and the "
          "log is held against its NET numbering, GPU-NIC paths and GPUDirect RDMA decisions. ")

# id, slug, severity, title, what it finds, fix, why, how detected, where, grading note
_ROWS: tuple[tuple[str, str, Severity, str, str, str, str, str, str, str | None], ...] = (
    ("LOG001", "log-gdr-off", E, "GPUDirect RDMA off for network transfers",
     "Ranks whose NET connections run without GPUDirect RDMA ('via NET/IB/0' instead of 'via NET/IB/0/GDRDMA'), "
     "with the likely cause: NCCL's IB plugin found no peer-memory module and no DMA-BUF ('GPU Direct RDMA "
     "Disabled for HCA ...'), an NCCL older than 2.23 that only knows nv_peer_mem while the host loads "
     "nvidia_peermem, the GPU-NIC distance over NCCL_NET_GDR_LEVEL, or NCCL_NET_GDR_LEVEL set.",
     "Load nvidia_peermem (modprobe nvidia_peermem) or use a DMA-BUF capable driver and kernel; with NCCL "
     "2.22 or older and nvidia_peermem, upgrade NCCL; disable ACS on the PCIe switches (bare metal); unset a "
     "restrictive NCCL_NET_GDR_LEVEL. 'ncclctl lint' (GDR rules) checks the host side.",
     "Without GPUDirect RDMA every byte between nodes is copied through host memory: inter-node bandwidth "
     "drops to a fraction (issue reports show 180 GB/s falling to 10 GB/s) and CPU memory bandwidth is spent.",
     _DETECT + "Each NET connection line says whether it uses GDRDMA; 'GPU Direct RDMA Disabled for HCA' and "
     "'for GPU ... (distance d > l)' lines give the reason. " + _MODEL + "A model that predicts GPUDirect "
     "RDMA for the pair makes an off connection an error; without a model the finding is a warning.",
     _CHECK, "warning without --root/--inventory unless NCCL says the HCA has no GPUDirect RDMA support"),
    ("LOG002", "log-socket-transport", E, "inter-node traffic over TCP sockets",
     "A multi-node job whose network is 'Socket' or whose NET connections go 'via NET/Socket': NCCL fell back "
     "from InfiniBand/RoCE (no libibverbs, 'NET/IB : No device found', NCCL_IB_DISABLE=1, or no net plugin).",
     "Install rdma-core/libibverbs in the container, pass /dev/infiniband and the IB devices to it, unset "
     "NCCL_IB_DISABLE, check NCCL_IB_HCA matches existing devices ('ncclctl lint' checks NCCL_IB_HCA).",
     "TCP through the kernel gives a few GB/s per node where RDMA gives 25-50 GB/s per NIC, and costs CPU; "
     "NCCL treats it as a valid fallback, so nothing fails: the job is just several times slower.",
     _DETECT + "'Using network Socket', 'NET/IB : No device found', 'Failed to open libibverbs' and "
     "connection lines 'via NET/Socket/N' between ranks of different hosts.", _CHECK,
     "warning when the log shows one host only"),
    ("LOG003", "log-bootstrap-interface", W, "bootstrap or sockets on a loopback or virtual interface",
     "The bootstrap (or NCCL's socket/OOB) interface is lo, docker0, virbr*, veth*, br-*, cni*, flannel*, "
     "tunl*, vxlan* or another virtual interface.",
     "Set NCCL_SOCKET_IFNAME to the host's data interface (e.g. NCCL_SOCKET_IFNAME=eth0, or =^lo,docker,virbr "
     "to exclude); 'ncclctl conf generate' writes one.",
     "Ranks on other hosts cannot reach a loopback or container-bridge address: initialisation hangs or fails "
     "with 'Connection refused'; a virtual bridge also puts the out-of-band traffic on a slow path.",
     _DETECT + "'Bootstrap : Using', 'NET/Socket : Using' and the OOB interface of 'NET/IB : Using ... ; OOB'.",
     _CHECK, "error for loopback in a job of several hosts"),
    ("LOG004", "log-version-mismatch", E, "processes run different NCCL versions",
     "Processes of one job print different 'NCCL version' lines (or NCCL itself warns of a version mismatch).",
     "Run every rank with the same NCCL (one container image, or the same NCCL in LD_LIBRARY_PATH on every "
     "host); check 'python -c \"import torch; print(torch.cuda.nccl.version())\"' on each node.",
     "NCCL's wire protocol and its algorithm choices differ between releases: mixed versions hang, crash or "
     "return wrong results, often long after initialisation.",
     _DETECT + "The version of each process (its 'NCCL version' line); bare version lines printed without a "
     "prefix count for the job.", _CHECK, None),
    ("LOG005", "log-nic-mismatch", W, "hosts list different network devices",
     "Processes list a different number or set of NET devices ('NET/IB : Using [0]mlx5_0:1/IB ...') than most "
     "processes of the job.",
     "Check the host with the odd list: a port down (ibstat), a missing HCA or driver, or a different "
     "NCCL_IB_HCA; 'ncclctl fleet lint' compares hosts.",
     "NCCL connects rank pairs NIC by NIC; a host with fewer NICs gets fewer channels or crosses rails, and "
     "since 2.23 NCCL may refuse to connect mismatched devices: slow collectives or a hang.",
     _DETECT + "The NET device list of every process, compared with the job's most common list.", _CHECK, None),
    ("LOG006", "log-channel-mismatch", E, "ranks of one communicator disagree on channels",
     "Ranks of the same communicator report different collective channel counts ('N coll channels') or ring "
     "counts ('Channel xx/NN').",
     "Make every rank see the same topology and settings: the same NCCL_* variables (NCCL_MIN/MAX_NCHANNELS, "
     "NCCL_TOPO_FILE, NCCL_ALGO), the same NCCL version and equivalent hardware.",
     "NCCL requires every rank to agree on the channel count; ranks that disagree wait for each other on "
     "channels that do not exist: the silent-hang class.",
     _DETECT + "The 'coll channels' line and the ring count of each rank, per communicator (commId).", _CHECK,
     None),
    ("LOG007", "log-setting-mismatch", W, "an NCCL setting differs between processes",
     "An NCCL_* variable that NCCL reports ('... set by environment to ...') with different values on "
     "different processes, or on some processes and not others.",
     "Set NCCL variables the same way on every rank (the launcher's environment, /etc/nccl.conf on every "
     "node); 'ncclctl fleet lint' compares nccl.conf across hosts.",
     "Many NCCL settings must agree across ranks (NCCL_ALGO, NCCL_PROTO, channel and buffer sizes, "
     "NCCL_CROSS_NIC): a difference makes ranks build incompatible channels and hang, or quietly slows one host.",
     _DETECT + "The settings each process reports, compared across processes.", _CHECK,
     "info for settings that only name local devices or files: NCCL_SOCKET_IFNAME, NCCL_IB_HCA, NCCL_DEBUG_FILE"),
    ("LOG008", "log-graph-file", E, "an NCCL_GRAPH_FILE that does not fit the job, or one in production",
     "NCCL_GRAPH_FILE is set (a debugging setting), and NCCL fails to import it ('XML Import Channel : dev N "
     "not found', 'Could not open XML graph file'): the file was written for other GPUs or NICs.",
     "Unset NCCL_GRAPH_FILE (environment, /etc/nccl.conf, ~/.nccl.conf; cloud images set it there); let NCCL "
     "search its graphs, or generate one for this very node ('ncclctl rings graph') and validate it.",
     "A graph file replaces NCCL's search: written for another GPU count it makes initialisation fail "
     "('unhandled system error'), and a valid but foreign one pins rings to the wrong NICs.",
     _DETECT + "'NCCL_GRAPH_FILE set by environment to', graph import warnings and graph channel lines.", _CHECK,
     "warning when the graph file is set and imported without error"),
    ("LOG009", "log-topology-detection", W, "NCCL could not read the PCI topology (VM, container or WSL)",
     "NCCL warns 'Could not find real path of /sys/...' or attaches a NIC to the first CPU because its path is "
     "not a PCI device (Hyper-V vmbus, virtio): the host hides its PCIe tree.",
     "Give NCCL the topology with NCCL_TOPO_FILE ('ncclctl topo generate' writes one; cloud vendors ship "
     "theirs), or run on bare metal; WSL2 does not expose the PCI hierarchy at all.",
     "Without the real PCIe tree NCCL cannot tell which NIC is close to which GPU: GPUDirect RDMA and "
     "rail-local NICs are lost, and on WSL initialisation fails with 'unhandled system error'.",
     _DETECT + "'Could not find real path' warnings and 'Topology detection: network path ... is not a PCI "
     "device' lines.", _CHECK, None),
    ("LOG010", "log-nic-underused", W, "GPUs of a host share fewer NICs than the host has",
     "The ranks of a host send over fewer distinct NICs than both its local GPU count and the NICs NCCL listed "
     "(for example 8 GPUs using 4 of 8 HCAs).",
     "Check NCCL_IB_HCA, NCCL_CROSS_NIC and the topology NCCL sees (NCCL_TOPO_FILE, ACS, a VM); 'ncclctl topo "
     "predict --root' shows the NIC each GPU should use.",
     "Each rail NIC carries the traffic of its GPU; GPUs that share a NIC halve each other's inter-node "
     "bandwidth while other NICs idle.",
     _DETECT + "The NICs of each rank's NET connections (via NET/IB/N), per host.", _CHECK, None),
    ("LOG011", "log-nic-not-rail", W, "a channel uses a NIC that is not the GPU's compute rail",
     "A rank's channel goes through a NIC other than those the model plans for its GPU (with --root or "
     "--inventory), or the NET list mixes link layers (IB and RoCE devices in one job: a management or storage "
     "NIC among the rails).",
     "Restrict NCCL to the rail NICs: NCCL_IB_HCA with exact names ('ncclctl rails' prints it); check cabling "
     "and port state of the planned NIC.",
     "A channel on the wrong NIC crosses the PCIe root complex or the spine: lower bandwidth and traffic on "
     "another rail's links, or on a storage/management network.",
     _DETECT + _MODEL + "Without a model: a NET list that mixes IB and RoCE devices.", _CHECK, None),
    ("LOG012", "log-path-worse", W, "GPU-NIC path worse than the topology allows",
     "The graph NCCL searched reaches the network over a worse path type (PHB, SYS) than the model predicts "
     "for the node's GPUs and NICs (PIX, PXB).",
     "Give NCCL the real topology (NCCL_TOPO_FILE in VMs), check ACS and the PCIe switch firmware, and that "
     "NCCL_IB_HCA names the NICs next to the GPUs.",
     "NCCL's bandwidth per channel and its GPUDirect RDMA decision depend on the path type: a PHB or SYS path "
     "crosses the CPU, loses GDR by default and gives fewer or slower channels.",
     _DETECT + "'Pattern ..., type INTRA/INTER' graph lines (NCCL_DEBUG_SUBSYS=GRAPH or ALL). " + _MODEL,
     _CHECK, None),
    ("LOG017", "log-fewer-channels", W, "fewer channels than NCCL's own search gives on the modelled node",
     "A communicator over every GPU of its hosts ran with fewer collective channels than the model of the node "
     "(ncclctl topo predict: NCCL's own search, connect and channel duplication) predicts for the same node count.",
     "Compare 'ncclctl topo predict --root <host> -N <nodes>' with the log's graph lines: a NIC down or excluded, "
     "GPUDirect RDMA off, a topology or graph file, or NCCL_MIN/MAX_NCHANNELS make NCCL see a worse machine.",
     "Fewer channels mean less bandwidth per collective: each channel is one ring/tree over the GPUs and NICs.",
     _DETECT + "The communicator's 'nChannels' (init line). " + _MODEL, _CHECK, None),
    ("LOG013", "log-init-incomplete", E, "a rank never finished initialisation",
     "A rank printed 'Init START' for a communicator but no 'Init COMPLETE' (NCCL 2.18+ prints both).",
     "Look at that rank's last lines and at its peers': a bootstrap or connection that never came up (network, "
     "firewall, NCCL_SOCKET_IFNAME), or a rank that crashed; rerun with NCCL_DEBUG_SUBSYS=INIT,NET.",
     "Every collective waits for every rank: one rank stuck in initialisation hangs the whole job.",
     _DETECT + "START and COMPLETE lines per rank and communicator; a log cut before the end looks the same, "
     "so the finding names the last line of the rank.", _CHECK, None),
    ("LOG014", "log-nccl-error", E, "NCCL reported errors",
     "NCCL WARN lines of an error class (InfiniBand completion errors with their vendor code, ibv_* call "
     "failures, socket connect/accept failures, CUDA errors, version mismatch), and application lines that "
     "report NCCL errors ('unhandled system error', 'ncclInternalError', watchdog timeouts).",
     "Follow the hint of each class: 'vendor err 129' (retry exceeded) and error 12 point at links, GID index or "
     "routing (NCCL_IB_GID_INDEX, RoCE config); error 4 / vendor err 81 at ACS or IOMMU breaking GPUDirect RDMA; "
     "ibv_modify_qp 'Network is unreachable' at a GID/subnet problem; socket errors at NCCL_SOCKET_IFNAME.",
     "These are the failures that abort or hang jobs; the first WARN of a job usually names the cause, the "
     "rest are its consequences.",
     _DETECT + "Every NCCL WARN line, classified by wording; the first of each class is the evidence.", _CHECK,
     "warning for WARN classes that do not stop NCCL: missing libibverbs, plugin and NVLS notices"),
    ("LOG015", "log-slow-init", W, "communicator initialisation is slow",
     "A communicator's initialisation took longer than init_seconds (NCCL 2.23+ prints 'Init timings').",
     "Look at the largest part of the timing line: kernels (module loading: set CUDA_MODULE_LOADING=LAZY, check "
     "the driver), bootstrap (network, DNS, NCCL_SOCKET_IFNAME), topo (sysfs reads in a VM), connections.",
     "Slow initialisation delays every job start and every new communicator (PyTorch creates many); minutes per "
     "init usually point at a host or driver problem.",
     _DETECT + "'Init timings - ...: rank R nranks N total T (kernels ..., bootstrap ..., ...)'.", _CHECK, None),
    ("LOG016", "log-shm-between-gpus", W, "GPUs of one host connected through host memory",
     "Peers on the same host connected 'via SHM' instead of P2P (NVLink or PCIe peer-to-peer).",
     "Check NCCL_P2P_DISABLE / NCCL_P2P_LEVEL, ACS and IOMMU on the PCIe switches (P2P is blocked by ACS), "
     "and that the GPUs are visible to each process (CUDA_VISIBLE_DEVICES, containers sharing IPC).",
     "SHM copies every byte through host memory: a fraction of NVLink bandwidth, and slower than PCIe P2P.",
     _DETECT + "Connection lines 'via SHM/...' (older: 'via direct shared memory') between ranks of a host. "
     + _MODEL + "A model that predicts an NVLink path between the two GPUs makes the finding an error.",
     _CHECK, "error when the model predicts an NVLink path"),
    ("LOG029", "log-mnnvl-fabric", E, "a rank's GPU not registered with, or unhealthy in, its NVLink domain",
     "A 'MNNVL busId ... fabric UUID ... cliqueId ... state S healthMask 0xM' line (NCCL 2.19+, GB200/GB300 NVL "
     "and other multi-node NVLink systems) with a fabric state other than COMPLETED (3), or a health mask field "
     "that reports a problem, decoded as nvml.h defines it (0xaa, every condition FALSE, is healthy).",
     "Run 'ncclctl lint' on the named host (NVL001/NVL002 say which GPU and why), 'nvidia-smi -q -d FABRIC'; "
     "reset the GPU or reboot the tray, and check its partition in NMX-M.",
     "NCCL uses MNNVL only between GPUs whose fabric registration COMPLETED in one cluster and clique; a GPU that is "
     "not registered, or degraded, falls back to the NICs or slows every collective it is in.",
     _DETECT + "'MNNVL busId 0x... fabric UUID lo.hi cliqueId 0x... state N healthMask 0x...' (the cluster UUID "
     "is printed as two native longs and turned back into the form 'ncclctl probe' records).", _CHECK,
     "warning for a health-mask problem on a COMPLETED GPU"),
    ("PERF001", "perf-busbw-low", E, "bus bandwidth below what the hardware gives",
     "A collective's bus bandwidth at large sizes is below min_efficiency of the expected value for the "
     "hardware (NVLink generation inside a node; NICs x rate x efficiency across nodes; PCIe for PCIe-only "
     "hosts), with the likely causes from the NCCL lines in the same output.",
     "Check what 'ncclctl log check' says about the same run (GDR off, socket transport, NICs shared), the "
     "hosts with 'ncclctl lint' (PCIe width, NVLinks down, peermem) and the fabric with 'ncclctl fabric rails'.",
     "nccl-tests' bus bandwidth is comparable to the hardware's peak whatever the rank count; a run far below "
     "it means a slow link, a fallback transport or a misconfiguration that training jobs will suffer too.",
     "ncclctl perf check reads nccl-tests output (text table or JSON), takes the largest sizes of each test and "
     "compares their best bus bandwidth with the expectation documented in docs/perf.md "
     "(ncclctl/logs/perf.py).",
     _PERF, "warning between min_efficiency and warn_efficiency"),
    ("PERF002", "perf-wrong-results", E, "nccl-tests found wrong results",
     "Rows with '#wrong' above 0, or 'Out of bounds values : N FAILED'.",
     "Wrong results point at hardware or driver faults (GPU memory errors, a bad NVLink, PCIe errors) or at "
     "mixed NCCL versions: check 'nvidia-smi -q' ECC counters and XID errors in dmesg, rerun on subsets of GPUs.",
     "A collective that returns wrong data corrupts training silently.",
     "ncclctl perf check reads the #wrong columns and the 'Out of bounds values' line.", _PERF, None),
    ("PERF003", "perf-no-expectation", I, "no expected bandwidth for this result",
     "The expected bus bandwidth could not be computed (unknown GPU or NICs, a collective without a model).",
     "Give the node with --root or --inventory (and --nodes for multi-node runs) so the GPUs, NVLinks and NICs "
     "are known.",
     "Without an expectation the result can only be shown, not judged.",
     "ncclctl perf check derives the hardware from --root/--inventory, else from the GPU names in the "
     "nccl-tests header.", _PERF, None),
    ("PERF004", "perf-avg-check-failed", E, "nccl-tests' own bandwidth check failed",
     "'# Avg bus bandwidth : X FAILED': the average fell below the -c/--check_avg_bw threshold given to the test.",
     "Treat like PERF001: find the slow link or the fallback transport.",
     "The threshold was set by whoever runs the test as the acceptance level of the cluster.",
     "ncclctl perf check reads the 'Avg bus bandwidth' line.", _PERF, None),
    ("PERF005", "perf-incomplete", W, "the test did not run to its end",
     "A result table without its closing 'Out of bounds values' / 'Avg bus bandwidth' lines, or a 'Test NCCL "
     "failure' / '# error' line.",
     "Look at the NCCL lines and the launcher's output around the end of the table (a rank crashed or timed out).",
     "A test that stops half-way has found a failure, not a bandwidth.",
     "ncclctl perf check follows each test's table to its footer.", _PERF, None),
)

_OPTIONS: dict[str, tuple[Option, ...]] = {
    "LOG015": (Option("init_seconds", float, 30.0, "Initialisation time (seconds) above which a communicator is "
                      "slow.", min=0.0),),
    "PERF001": (Option("min_efficiency", float, 0.6, "Measured/expected below this is an error.", min=0.0, max=1.5),
                Option("warn_efficiency", float, 0.8, "Measured/expected below this is a warning.", min=0.0,
                       max=1.5),
                Option("min_bytes", int, 64 << 20, "Only sizes from this many bytes count as large messages.",
                       min=0)),
}

RULES: tuple[Rule, ...] = tuple(
    table(rule_id, slug, severity, title, what=what, why=why, detect=detect, fix=fix, checked_by=module, graded=graded,
          options=_OPTIONS.get(rule_id, ()))
    for rule_id, slug, severity, title, what, fix, why, detect, module, graded in _ROWS
)
