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
           "communicator from NCCL's own wordings (NCCL 2.4 to 2.32; ncclctl/logs/parse.py). ")
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
     _DETECT + "START and COMPLETE lines per rank and communicator. A rank whose process reported an error that "
     "stops NCCL failed rather than hung: that error's rule reports it. A log in which no rank got past "
     "initialisation and nothing failed may be an excerpt or a log cut before the end: a warning that says so.",
     _CHECK, "warning when no rank of the communicator completed and the log shows no error or timeout"),
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
    ("LOG018", "log-no-socket-interface", E, "NCCL found no network interface to use",
     "'Bootstrap : no socket interface found', 'NET/Socket : no interface found', 'No usable listening interface "
     "found' or 'NET/IB : No IP interface found': no interface matched NCCL_SOCKET_IFNAME (or, unset, none but "
     "loopback and container bridges has an address), so NCCL cannot bootstrap or open its socket transport.",
     "Set NCCL_SOCKET_IFNAME to an interface that exists and has an address on every host ('ip -br addr'): it is a "
     "prefix list ('eth' matches eth0 and eth1), '=eth0' for an exact name, '^docker,lo' to exclude; with "
     "NCCL_SOCKET_FAMILY=AF_INET6, the interface needs an IPv6 address.",
     "NCCL stops at communicator creation (ncclInvalidUsage / ncclSystemError in the application): the job never "
     "starts; the WARN names the class, the setting names the cause.",
     _DETECT + "The WARN wordings of bootstrap.cc, net_socket.cc and net_ib (NCCL 2.18-2.32), with the "
     "NCCL_SOCKET_IFNAME / NCCL_SOCKET_FAMILY values NCCL echoes ('set by environment to').", _CHECK, None),
    ("LOG019", "log-duplicate-gpu", E, "two ranks on one GPU",
     "'Duplicate GPU detected : rank A and rank B both on CUDA device X' (NCCL up to 2.29) or 'Multiple Ranks are "
     "using the same GPU/Partition' (2.30 and later): two ranks of a communicator on one host picked the same GPU.",
     "Give each local rank its own GPU: torch.cuda.set_device(local_rank) (LOCAL_RANK from torchrun/srun) before "
     "creating the process group, one CUDA_VISIBLE_DEVICES entry per rank, as many ranks per node as GPUs in the "
     "launcher; NCCL 2.30+ can share a GPU on purpose with NCCL_MULTI_RANK_GPU_ENABLE=1 (for tests, not speed).",
     "NCCL refuses the communicator (ncclInvalidUsage): the job fails at start-up on every rank.",
     _DETECT + "The WARN of init.cc in both wordings (checked against the 2.28.9 run and the 2.30.7/2.32.3 "
     "libraries' strings).", _CHECK, None),
    ("LOG020", "log-no-net-plugin", E, "no network plugin could be initialised",
     "'Failed to initialize any NET plugin': every network NCCL was allowed to try failed. Usually NCCL_NET names "
     "one network (NCCL_NET=IB) that has no usable device on the host ('NET/IB : No device found'), or a plugin "
     "named by NCCL_NET is not installed.",
     "Unset NCCL_NET (NCCL then falls back from IB to sockets on its own), or make the named network usable: pass "
     "/dev/infiniband and the RDMA devices into the container, install the plugin (e.g. aws-ofi-nccl for "
     "NCCL_NET=AWS Libfabric / OFI).",
     "NCCL stops at communicator creation: nothing runs.",
     _DETECT + "The WARN of plugin/net.cc with the NCCL_NET value NCCL echoes and the IB plugin's 'No device "
     "found'.", _CHECK, None),
    ("LOG021", "log-no-algorithm", E, "the forced algorithm or protocol is not available",
     "'No algorithm/protocol available for function F with datatype D. NCCL_ALGO was set to X' (2.28: 'Error : no "
     "algorithm/protocol available', 2.32: '... nor symKernelId available', 'algSelection: no algorithm in the "
     "selected set'): NCCL_ALGO / NCCL_PROTO allow only choices this communicator cannot run (NVLS without "
     "NVSwitch multicast, CollNet without SHARP, LL128 where it is off).",
     "Unset NCCL_ALGO and NCCL_PROTO (NCCL's tuning picks per size), or allow a fallback ('NCCL_ALGO=NVLS,Ring'); "
     "'ncclctl topo predict' shows what the node supports.",
     "The collective fails (ncclInvalidUsage) the first time it runs.",
     _DETECT + "The WARN of enqueue.cc in its 2.28, 2.30 and 2.32 wordings, with the NCCL_ALGO/NCCL_PROTO values "
     "the message or the ENV lines give.", _CHECK, None),
    ("LOG022", "log-plugin-not-found", W, "a plugin asked for was not found",
     "'NET/Plugin: Could not find: NAME libnccl-net-NAME.so' (and TUNER/, PROFILER/, ENV/ plugins): NCCL_NET_PLUGIN, "
     "NCCL_TUNER_PLUGIN, NCCL_PROFILER_PLUGIN or NCCL_ENV_PLUGIN named a plugin that is not on the library path. "
     "The same line with only the default name (libnccl-net.so) means no plugin was asked for and is not reported.",
     "Install the plugin in the image and put its folder on LD_LIBRARY_PATH, or fix the name (NCCL looks for the "
     "value itself, then libnccl-<type>-<value>.so); unset the variable if the plugin is not wanted.",
     "NCCL goes on with its internal transports or tuning: a job built for EFA or a site's tuner runs, slowly or "
     "differently, without saying so at WARN level.",
     _DETECT + "plugin_open.cc's INFO line listing the names tried; the default names alone are ignored.",
     _CHECK, None),
    ("LOG023", "log-topo-file-unread", W, "NCCL_TOPO_FILE could not be opened",
     "'Could not open XML topology file F : reason' (an INFO line since NCCL 2.19, a WARN before): the topology file "
     "NCCL_TOPO_FILE names (or the default /var/run/nvidia-topologyd/virtualTopology.xml) could not be read, so "
     "NCCL detected the topology itself.",
     "Fix the path or the file's permissions in every container (cloud images ship it for their VMs), or unset "
     "NCCL_TOPO_FILE; 'ncclctl topo validate FILE' checks a file.",
     "On VMs whose PCI topology is hidden the file is what gives NCCL the real NVLink/NIC layout: without it NCCL "
     "sees a flat machine and picks worse paths, silently.",
     _DETECT + "The line of graph/xml.cc; the default path's absence is not reported unless NCCL says it tried.",
     _CHECK, None),
    ("LOG024", "log-nvls-failure", E, "NVLink SHARP (NVLS) setup failed",
     "A CUDA failure in NCCL's NVLS transport ('transport/nvls.cc ... NCCL WARN Cuda failure 1 'invalid argument'' or "
     "401 'the operation cannot be performed in the present state') or the error frameworks print ('Failed to bind "
     "NVLink SHARP (NVLS) Multicast memory ... CUDA error N'): the NVSwitch multicast NCCL asked for was refused. "
     "'out of memory' (CUDA error 2) on NCCL 2.29 is that release running out of multicast objects.",
     "Workaround: NCCL_NVLS_ENABLE=0 (NCCL uses rings/trees over NVLink, a few percent slower on all-reduce). Fix: "
     "check the Fabric Manager (systemctl status nvidia-fabricmanager; on NVL72 NVLSM and nvidia-imex) and that its "
     "version equals the driver's, the NVSwitches' state in nvidia-smi -q (Fabric: State Completed, Status "
     "Success); on NCCL 2.29 with 'out of memory', upgrade NCCL.",
     "NCCL stops at communicator creation (ncclUnhandledCudaError): the job never starts on NVSwitch systems until "
     "NVLS is off or the fabric is fixed.",
     _DETECT + "WARN lines whose source is transport/nvls.cc and the framework's copy of the message (read also "
     "without NCCL's prefix, after 'Last error:').", _CHECK, None),
    ("LOG025", "log-shm-space", E, "/dev/shm too small for NCCL",
     "'failed to extend /dev/shm/nccl-XXXX to N bytes, error: No space left on device (28)' or 'Error while creating "
     "shared memory segment': NCCL's intra-node buffers live in /dev/shm, which is full; also, at warning, "
     "'cuMem host allocations do not appear to be working; falling back to a /dev/shm/ based implementation' (a "
     "container without NUMA support), which puts NCCL on /dev/shm.",
     "Give the container a large /dev/shm: docker run --shm-size=16g or --ipc=host; in Kubernetes an emptyDir with "
     "medium: Memory mounted at /dev/shm (with a sizeLimit); workaround NCCL_SHM_DISABLE=1 (slower intra-node "
     "transfers).",
     "NCCL stops while connecting ranks of one node (ncclSystemError); with the fallback, large jobs fail later "
     "when /dev/shm fills.",
     _DETECT + "The WARN of misc/shmutils.cc in its wordings, and the INFO line of the cuMem host fallback.",
     _CHECK, "warning for the fallback alone"),
    ("LOG026", "log-gpu-out-of-memory", E, "a GPU ran out of memory inside NCCL",
     "'Cuda failure 'out of memory'' (include/alloc.h) or 'Failed to CUDA calloc N bytes': NCCL could not allocate "
     "its buffers on a GPU. The other ranks then report 'Connection closed by remote peer' / 'Socket recv failed': "
     "those follow from this rank's exit and are reported as its consequences.",
     "Leave GPU memory for NCCL (it needs up to a few GB with many channels, NVLS and user buffers): lower the "
     "framework's memory fraction or batch size, or NCCL's footprint (NCCL_BUFFSIZE, NCCL_MAX_NCHANNELS, "
     "NCCL_NVLS_ENABLE=0); check that no other process holds the GPU (nvidia-smi).",
     "The rank fails at initialisation or at its first collective and the whole job stops.",
     _DETECT + "The WARN lines of the allocation wrappers (not those of the NVLS transport: LOG024).", _CHECK, None),
    ("LOG027", "log-nccl-hint", E, "NCCL names the likely cause of an error",
     "NCCL 2.32 prints 'HINT:' lines after some errors (a queue pair that times out: NICs not cross-rail connected; "
     "an invalid argument: a forced NCCL_IB_GID_INDEX; a remote access or protection error: ACS; MNNVL memory "
     "errors: IMEX; peer-mapping errors: BAR1; incomplete PCI topology: a container with --net host; a topology "
     "file that misstates the node; NICs of a node that cannot reach each other; NCCL_IB_TIMEOUT too short). Each "
     "is reported once per class with its hosts, the hint and its 'To confirm' line as evidence.",
     "The fix of the class (in the finding): NCCL_CROSS_NIC=0, NCCL_IB_GID_INDEX unset, ACS per platform, "
     "nvidia-imex, NCCL_CUMEM_ENABLE=0, no --net host, a corrected topology file, local NIC routing, "
     "NCCL_IB_TIMEOUT.",
     "NCCL's own reading of its error is usually right and says which setting confirms it.",
     _DETECT + "INFO lines starting 'HINT:' (NCCL 2.32: the wordings checked against the 2.32.3 library's strings).",
     _CHECK, "warning when the process reports no error that stops NCCL"),
    ("LOG028", "log-nccl-diagnostics", E, "NCCL's own diagnostics report a failure",
     "Lines of NCCL 2.32's diagnostics (NCCL_RUN_DIAGNOSTICS=1 / NCCL_RUN_RAS_DIAGNOSTICS=1: 'NCCL DIAG [FAIL] "
     "net bw: ...', '[WARN] ...', 'p2p: only N/M GPU-to-GPU peer accesses passed verification'), grouped per check; "
     "a run whose diagnostics pass is said so (info).",
     "Follow the check: a network bandwidth test far off the median points at a NIC, cable or switch port (its rank "
     "and device are in the line: 'ncclctl lint' that host); failed peer accesses at ACS/IOMMU or P2P settings.",
     "These are NCCL's active checks of the job's own hardware: a failure is a fact measured in this job.",
     _DETECT + "'NCCL DIAG' lines and their [OK]/[INFO]/[WARN]/[FAIL] tags.", _CHECK,
     "warning for [WARN]; info when every check passed"),
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
    ("LOG030", "log-mnnvl-not-working", E, "MNNVL available but not working (IMEX channel or IMEX)",
     "NCCL's 'MNNVL (cliqueSize N) is available but not working on this system. Check the IMEX channel "
     "configuration ...' (the FABRIC memory allocation failed: no IMEX channel device) or '... Check the IMEX "
     "configuration ...' (its export/import through IMEX failed), per host, with the cause the host's facts show "
     "when --root/--inventory gives them: no channel device on the host (NVL003) or only in the container, "
     "nvidia-imex not active, the host missing from its own node list, the IMEX domain not UP (NVL004).",
     "Create /dev/nvidia-caps-imex-channels/channel0 on every tray and pass it into the job's container (--device, "
     "NVIDIA_IMEX_CHANNELS=0, a ComputeDomain claim); run nvidia-imex on every tray with a nodes_config.cfg listing "
     "exactly the domain's trays, every peer READY. NCCL_MNNVL_ENABLE=0 only hides the failure (NICs instead).",
     "NCCL stops the communicator's initialisation (ncclSystemError): the GPUs are in one NVLink clique but the "
     "memory NCCL shares across trays cannot be exported through IMEX.",
     _DETECT + _MODEL + "The WARN of NCCL's mnnvl.cc (2.27+) and, with a model, the node's IMEX facts "
     "(ncclctl probe: config.cfg, nodes_config.cfg, nvidia-imex-ctl -N, the channel devices, the service state).",
     _CHECK, None),
    ("LOG031", "log-nvlink-domains", W, "a job across NVLink domains, or its domains unlike the hosts' facts",
     "From the ranks' 'MNNVL busId ... fabric UUID ... cliqueId ...' lines (COMPLETED registrations): the job's "
     "hosts in more than one NVLink domain (cluster UUID, clique id; never the clique id alone); a rank's domain "
     "in the log unlike the one the host's snapshot records (--root/--inventory); a GPU registered in a "
     "multi-node domain for which NCCL printed 'NVLS multicast support is not available'; from NCCL's 'MNNVL 1 "
     "cliqueId C cliqueSize S cliqueRank R nvlDomainSize D' line: D > S without 'Cross-clique P2P enabled' (ranks "
     "of one NVLink fabric in another clique, over the NICs), a clique id none of the host's registered GPUs reports.",
     "Place the job inside one domain (Slurm topology/block: ncclctl fleet blocks; Kubernetes affinity on "
     "nvidia.com/gpu.clique); re-register a tray that came back in another partition and update its IMEX list, "
     "block and label; take a fresh snapshot when the log and the snapshot disagree; check the partition's "
     "multicast (NMX-M / NVLSM) when NVLS is missing.",
     "NCCL uses MNNVL and NVLS only among ranks of one cluster UUID and clique (mnnvl.cc): a job split across "
     "domains runs over the NICs between them, much slower than NVLink; without NVLS multicast all-reduce loses "
     "NVLink SHARP.",
     _DETECT + _MODEL + "The MNNVL busId lines (LOG029's), NCCL's 'NVLS multicast support is (not) available "
     "on dev N' line per rank, and with a model each GPU's NVML fabric registration.", _CHECK, None),
    ("LOG032", "log-driver-too-old", E, "the CUDA driver is older than the CUDA NCCL was built for",
     "NCCL's 'Cuda failure 'CUDA driver version is insufficient for CUDA runtime version'' (cudaErrorInsufficientDriver) "
     "or 'API call is not supported in the installed CUDA driver', also quoted without NCCL's prefix; the message "
     "gives the driver's CUDA version ('cudaDriverVersion') and the CUDA NCCL was built with ('NCCL version X+cudaY') "
     "when the log prints them.",
     "Install a driver that supports the CUDA version NCCL and the framework were built with (the CUDA release notes' "
     "minimum driver table), or use the framework/NCCL build for the installed driver's CUDA (a cu118 wheel on an "
     "11.x driver); in containers, the CUDA forward-compatibility package only helps on data-centre GPUs.",
     "NCCL cannot initialise its CUDA calls at all: every rank fails at the first communicator.",
     _DETECT + "The WARN's wording (cudawrap.cc and CUDA checks) and the INFO lines 'cudaDriverVersion N' and "
     "'NCCL version X+cudaY.Z'.", _CHECK, None),
    ("LOG033", "log-dmabuf-unsupported", E, "GPU memory registration through DMA-BUF refused",
     "'Call to ibv_reg_dmabuf_mr failed with error Operation not supported' (or the MLX5 variant): NCCL's IB plugin "
     "asked the NIC to register GPU memory through DMA-BUF and the kernel, rdma-core/OFED or the GPU driver does not "
     "support it.",
     "Set NCCL_DMABUF_ENABLE=0 so NCCL uses nvidia-peermem for GPUDirect RDMA (load it: modprobe nvidia_peermem), or "
     "upgrade to a kernel (5.12+), rdma-core/OFED and open GPU kernel modules with DMA-BUF support; newer NCCL "
     "releases fall back by themselves.",
     "The connection's setup fails (an error that stops the job) instead of falling back to another GPUDirect path.",
     _DETECT + "The WARN of the verbs wrapper naming ibv_reg_dmabuf_mr / mlx5dv_reg_dmabuf_mr.", _CHECK, None),
    ("LOG034", "log-remote-error", E, "a peer process exited or the network between nodes failed",
     "The framework reports ncclRemoteError ('remote process exited or there was a network error', 'A call failed "
     "possibly due to a network error or a remote process exiting prematurely'): the rank whose log this is saw a "
     "peer stop or the fabric drop the connection; the socket line after 'Last error:' is evidence, not the cause.",
     "Find the first error in time across all ranks' logs (the rank that died first, or its NCCL WARN); check the "
     "nodes' fabric: 'ibstat' link state and error counters, 'ncclctl fleet lint' for a node unlike the others, and "
     "dmesg for Xid/OOM kills on the peer's host.",
     "A remote error is the symptom every surviving rank reports: retrying or changing this rank's settings does not "
     "help while the failing node or link stays in the job.",
     _DETECT + "The application's error lines (PyTorch's DistBackendError/ncclRemoteError wording).", _CHECK, None),
    ("LOG035", "log-collective-timeout", E, "a collective timed out in the framework's watchdog",
     "'Watchdog caught collective operation timeout: WorkNCCL(SeqNum=..., OpType=...)' (PyTorch): a collective "
     "started after initialisation and did not finish within the timeout: a rank stopped calling collectives "
     "(an exception, a data-loader stall, a different code path), or a transfer stalled on the network.",
     "Ask NCCL which ranks are behind while the job hangs: NCCL_RAS (on by default since 2.24) with 'ncclras' (or "
     "'echo STATUS | nc localhost 28028') on any node; enable PyTorch's flight recorder (TORCH_NCCL_TRACE_BUFFER_SIZE) "
     "and compare the ranks' last sequence numbers; then check that rank's host and logs.",
     "The timeout fires on every rank waiting for the slow one: the rank that stopped is the one to look at, and "
     "this log line does not name it.",
     _DETECT + "The application's watchdog lines.", _CHECK, None),
    ("LOG036", "log-ras-report", E, "NCCL's RAS report lists errors or warnings",
     "The text report of NCCL's RAS client ('ncclras', 2.24+) read as an input: communicator groups whose Status is "
     "not RUNNING or whose Errors column is not OK (INCOMPLETE, MISMATCH, ERROR), and the blocks of its Errors and "
     "Warnings sections (missing ranks, ranks whose operation counts differ, dead or aborted ranks), with their "
     "detail lines; a report with every group RUNNING and OK is said so (info). Its JSON report ('ncclras -f json', "
     "keys from the 2.31.0a7 source, ras/client_support.cc, the same in the 2.28.9 to 2.32.3 libraries) the same "
     "way: a rank whose async_error or init_state is not 0 or whose abort_flag is set, a missing rank (unresponsive, "
     "considered dead), ranks of one communicator whose collective_counts differ, RAS timeouts while collecting, a "
     "report cut before its closing 'ras' section (warnings).",
     "Go to the ranks and processes the block names (host, process id, GPU): a rank missing or behind the others is "
     "where the job stopped; check that host's application log, dmesg (Xid, OOM) and its NICs.",
     "RAS collects every rank's state through its own network: its report names the outliers a hung job has.",
     _DETECT + "The RAS client's report: the 'NCCL version ... compiled with CUDA' header, the communicator "
     "table's rows, the '#group-comm (hash) WORDS' blocks and their indented lines; its JSON report read key by "
     "key as NCCL writes it (one key a line), from its '\"nccl_version\"' line on.", _CHECK,
     "warning for the Warnings section; info for an all-OK report"),
    ("LOG037", "log-rails", E, "the rails and planes NCCL assigned disagree with each other or with the fabric",
     "NCCL 2.30.7+ prints each NIC's rail and plane ('NET/IB : Made virtual device [d] name=N ... rail=R plane=P'; "
     "'ncclTopoPopulateNics : Filled N ... rail=R plane=P', 2.32 adding the plugin's ids in parentheses; the "
     "'NET/IB : Using [d]name:port:rail:plane' list). The ids come from NCCL_IB_HCA entries name:port:rail:plane "
     "(-1 when absent; with 2.32's NCCL_IB_RAIL_POLICY=CX9[:FLIP|:ALT|:BLOCK] the IB plugin assigns them from the "
     "ConnectX-9 NICs of each socket: the 2.32.3 library's names, its rules not public); NCCL uses them inside a "
     "node: with NCCL_CROSS_NIC=0 a channel may enter on one NIC and leave on another of the same rail id, two NICs of "
     "different planes are never joined, and NCCL_NET_MERGE_POLICY=RAIL fuses only NICs of one rail id (2.30.7 "
     "and 2.31.0a7 source, graph/search.cc and graph/topo.cc). Found: two NICs of one node on one rail (an error when "
     "--fabric or the node's rail table, --root/--inventory, has them on different rails: NCCL_CROSS_NIC=0 then "
     "lets traffic cross rails); one NIC name on different rails or planes on different nodes; the ranks of one "
     "local index sending on NICs of different rails on different nodes (their channels' NICs: nodes that name "
     "their NICs otherwise); with --fabric, one "
     "NCCL rail holding ports of several fabric rails (a miscabled port or a wrong id) or one fabric rail numbered "
     "two ways. The WARNs that stop NCCL over the ids are this rule's errors too: 2.32's 'Inconsistent rail/plane for net "
     "N: existing R/P, new R/P' (the topology file's ids against the plugin's; NCCL returns ncclInvalidUsage, read "
     "from the 2.32.3 library), 'cannot use more than N user-defined plane IDs' / 'a plane ID that is N' (2.30.7+) and "
     "'cannot use more than N rails' (2.32). Ids NCCL derived itself (2.32.3: 0x10000 plus the NIC's index by GUID for the rail, plus the port "
     "for the plane; read from the released library, whose source is not public) are shown, not compared. With "
     "--fabric (or a node and a log of NCCL 2.30.7+) and no rail line in the log, the finding says the rails are not "
     "in this log (info).",
     "Give every node one NCCL_IB_HCA whose name:port:rail:plane ids name the rail (leaf) and plane each port is "
     "cabled to: 'ncclctl rails --fabric FILE' writes them; recable a port that lands on another rail's leaf.",
     "Rail ids tell NCCL which NICs are interchangeable: a NIC on the wrong rail id sends a rail-only fabric's "
     "traffic to a leaf that cannot reach its peer (timeouts, errno 110), and the wrong plane keeps NCCL off "
     "NICs it could use.",
     _DETECT + "The rail/plane lines need NCCL_DEBUG_SUBSYS with NET (the plugin's) or GRAPH (the topology's). "
     "--fabric FILE: the leaf each port lands on (as 'ncclctl fabric rails' reads it) gives its rail and plane; "
     "--root/--inventory: the node's rail table (GPU k's closest NIC on rail k).", "ncclctl/logs/rails.py",
     "error when NCCL's rails contradict the fabric or the node; warning for ids that disagree across nodes or "
     "put two NICs of a node on one rail; info when the log has no rail line"),
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
