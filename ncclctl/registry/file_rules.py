"""The file rules: NCCL topology (``NCCL_TOPO_FILE``) and graph (``NCCL_GRAPH_FILE``) XML checks, as table rows.

Families (section numbers refer to the reference ``nccl-format.md``):

* ``NTX`` (nccl-xml): lexical rules and size limits of NCCL's byte-level XML reader (both file kinds), and the
  XSD checks (NTX090/NTX091);
* ``NTS`` (topology): topology-file semantics;
* ``NTG`` (graph): graph-file semantics;
* ``NTV`` (nccl-version): constructs a given NCCL version does not understand (or understands differently);
* ``NTH`` (host-match): the file compared with a host (a ``--root`` fixture or the live host).

The checks stay where they are (:mod:`ncclctl.nccl.xml`, :mod:`ncclctl.topo.validate`,
:mod:`ncclctl.topo.hostcheck`, :mod:`ncclctl.topo.schema`) and create findings by id through
:func:`ncclctl.topo.rules.rule`. Each row gives the id, slug, default severity, title and fix; the documentation's
*why* and *how detected* come from the family (below) unless a row has its own, and *what* is the title in its
family's context. Rule ids are stable: tests, configs and users depend on them.
"""

from __future__ import annotations

from ncclctl.findings import Severity
from ncclctl.registry import Rule, table

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

_READER = "ncclctl/nccl/xml.py"
_VALIDATE = "ncclctl/topo/validate.py"
_GRAPHFILE = "ncclctl/topo/graphfile.py"
_HOST = "ncclctl/topo/hostcheck.py"
_SCHEMA = "ncclctl/topo/schema.py"
_MEANING = "ncclctl/topo/graphcheck.py"
#: Where the graph-meaning rules live, and those of them that need no model of the node (docs: when they run).
MEANING = _MEANING
MEANING_WITHOUT_MODEL = frozenset({"NTG026"})

# What the graph-meaning rows (NTG022-NTG031, NTG033-NTG034) have in common: they need NCCL's model of the node.
_MEANING_DETECT = (
    "Only in 'rings validate' with the topology NCCL reads: --topo FILE, or with --root/--live the host's effective "
    "NCCL_TOPO_FILE, else what 'ncclctl topo generate' writes for it; settings from the host's environment and conf "
    "files and --env KEY=VAL; GPUDirect RDMA from --gdr (auto: the host's peer-memory and DMA-BUF facts). "
    "ncclctl builds NCCL's system from them with its model of NCCL 2.30.7 (ncclctl/nccl: the IB plugin's "
    "NCCL_IB_HCA filtering and NIC fusion, paths.cc's path types, PXN and GPUDirect decisions) and compares each "
    "ring (id 0) and tree (id 1) graph with it (ncclctl/topo/graphcheck.py).")

# prefix -> (context appended to the title for "what", why, how detected, where the checks live)
_FAMILY_DOC: dict[str, tuple[str, str, str, str]] = {
    "NTX": (
        "in a topology or graph file, as NCCL's own reader sees it",
        "NCCL reads topology and graph files with its own small byte-level reader (src/graph/xml.cc), not with an "
        "XML library. Constructs any XML parser accepts can make that reader fail, which aborts communicator "
        "initialisation, or make it read other names and values than the author wrote; its fixed-size buffers "
        "drop what does not fit without a warning.",
        "ncclctl reads the file byte by byte the way NCCL's reader does for the target --nccl-version "
        "(ncclctl/nccl/xml.py) and reports the construct with its line and column: the fatal one where NCCL "
        "would stop, and every lenient one NCCL would misread.",
        _READER,
    ),
    "NTS": (
        "in a topology file, NCCL_TOPO_FILE",
        "NCCL builds its topology from NCCL_TOPO_FILE first and fills in only what the file leaves out. A wrong, "
        "ignored or incomplete element changes the paths NCCL computes between GPUs, NICs and CPUs: slower rings "
        "and trees, GPUDirect RDMA off, traffic on the wrong NIC, or an init failure. Most of these mistakes are "
        "silent.",
        "After NCCL's reader accepts the file, ncclctl walks the tree NCCL keeps and checks every element and "
        "attribute against what NCCL's topology code (src/graph/xml.cc, topo.cc) does with it, for the target "
        "--nccl-version (ncclctl/topo/validate.py).",
        _VALIDATE,
    ),
    "NTG": (
        "in a graph file, NCCL_GRAPH_FILE",
        "NCCL_GRAPH_FILE replaces NCCL's own search for rings and trees: the channels in the file are used as "
        "written. A malformed graph fails communicator init or is dropped (NCCL searches as usual, and the file "
        "silently does nothing); a wrong one pins a slow or invalid channel layout on every job that reads it.",
        "ncclctl checks the graphs > graph > channel > net/gpu tree against what NCCL's graph loader "
        "(src/graph/search.cc, ncclTopoGetGraphFromXml) requires and how it reads each value, for the target "
        "--nccl-version (ncclctl/topo/graphfile.py).",
        _GRAPHFILE,
    ),
    "NTV": (
        "for the NCCL version given with --nccl-version",
        "Each NCCL release reads these files a little differently: elements, attributes, dictionary values and "
        "quoting that a later release added are ignored, misread or fatal in an older one. A file that works on "
        "one release can silently mean something else, or break init, on another.",
        "The file is read and checked as the release given with --nccl-version reads it (default 2.30.7; give "
        "the oldest NCCL your jobs use), from the per-version history in the reference nccl-format.md §6.",
        _VALIDATE,
    ),
    "NTH": (
        "the file compared with the host that uses it",
        "A topology or graph file is right only for the hardware it describes: NCCL trusts the file's bus ids, "
        "NUMA placement, GPU indices and NIC attributes as written. A file copied from another host, or written "
        "before a hardware change, makes NCCL trim devices, bind threads to the wrong cores, pair GPUs with distant "
        "NICs, or fail init.",
        "With --root DIR (a snapshot or fixture) or --live, ncclctl probes the host and compares the file with it: "
        "devices by bus id, NUMA nodes and cpumaps, NVML indices and compute capability, NVLink counts, and the IB "
        "plugin's view of the NICs (ncclctl/topo/hostcheck.py). Lint runs the same comparison on the files that "
        "NCCL_TOPO_FILE and NCCL_GRAPH_FILE name (NCCL020, NCCL022).",
        _HOST,
    ),
}

# Rows whose check lives outside the family's module, or whose documentation says more than the family's.
_EXTRA: dict[str, dict[str, str]] = {
    "NTS003": {"checked_by": _READER},
    "NTG003": {"checked_by": _READER},
    "NTV005": {"checked_by": _READER},
    "NTV010": {"checked_by": _READER},
    "NTV004": {"checked_by": _GRAPHFILE},
    "NTV006": {"checked_by": _GRAPHFILE},
    "NTS025": {
        "why": "dev, sm, gdr (on <gpu>) and speed, port, guid, latency, maxconn, coll, gdr (on <net>) are read once "
               "at init and used instead of what NCCL would detect or ask the net plugin. A value that is right "
               "for this host is harmless (ncclctl topo generate writes them as the host reports them); a value "
               "copied from another host silently misleads NCCL's path and bandwidth model.",
        "detect": "Every such attribute on <gpu> and <net> is listed. With --root/--live the values are compared "
                  "with the host: those equal to what NCCL would detect there are not reported (a wrong one is "
                  "NTH007, NTH008 or NTH010).",
    },
    "NTS011": {
        "why": "NCCL completes a <cpu> only on the ranks whose GPU or NIC is under it (xml.cc:ncclTopoGetXmlFromCpu), "
               "so per-rank trees differ and fusion can duplicate the element. In a skeleton file a <cpu> without "
               "arch, vendor, familyid or modelid takes them from each host that reads the file (the arch NCCL was "
               "built for, cpuid's vendor, family and model): an AMD host models an AMD CPU in a file written for "
               "Intel, which changes the inter-socket bandwidth (topo.h: AMD 16 GB/s; Intel 6, 10, 22 or 40 by model; "
               "arm64 6) and the CPU-dependent P2P and GPUDirect RDMA defaults. Releases that did not fill a <cpu> "
               "reached only through NICs failed with 'Attribute arch of node cpu not found' (aws-ofi-nccl#785, "
               "nccl#379).",
        "detect": "The <cpu> attributes against what NCCL 2.30.7 fills: in skeleton files (only <cpu> and <pci>) "
                  "arch, on x86 vendor, on Intel and Zhaoxin familyid/modelid; elsewhere the full set on a <cpu> "
                  "that has devices.",
    },
    "NTS043": {
        "why": "NCCL binds each GPU's threads to the CPUs of its <cpu affinity> (ncclTopoGetCpuAffinity). It reads the "
               "mask with its own parser (include/cpuset.h:ncclStrToCpuset): from 2.28 strtok and strtoul into 32 "
               "32-bit words, so an empty word shifts the rest, a longer word loses its high digits, a CPU list "
               "(0-47) reads as a few stray CPUs and more than 32 words lose the low ones; a word after the first "
               "with fewer than 8 digits (never written by the kernel: a hex number cut into words by hand) still "
               "counts as 32 CPUs, so the words before it move up. The threads then run on the wrong cores, or on "
               "none.",
        "detect": "The mask is read as NCCL --nccl-version reads it and compared with the kernel cpumap it looks "
                  "like; the message gives the CPUs NCCL binds to and the CPUs the cpumap means.",
    },
    "NTS046": {
        "why": "Without affinity NCCL reads /sys/devices/system/node/node<numaid>/cpumap on the ranks whose GPU is "
               "under the <cpu>; numaid -1 names no node, so the set is empty. An empty set (or an all-zero mask) "
               "makes NCCL log 'Affinity for GPU N is empty, ignoring' and leave its threads unbound: host memory "
               "and proxy threads may land on the far socket.",
    },
    "NTS047": {
        "why": "NCCL gives each PCI link width * speed / 80 GB/s (a width of 0 counts as 16) and a path the bandwidth "
               "of its slowest link. A virtual switch declared at 2.5 GT/s x1 above an H100 and a 400G NIC caps every "
               "path that leaves it at 0.19 GB/s: NCCL's search then picks other routes, or few channels.",
        "detect": "For every switch or bridge, the bandwidth NCCL computes for its own link is compared with the "
                  "links of the GPUs and NICs under it (as NCCL reads them for --nccl-version).",
    },
    "NTS050": {
        "why": "NCCL multiplies each <nvlink count> by the per-link bandwidth of the GPU's sm. More links than the GPU "
               "has (NCCL's own detection reads at most 4 on sm 6x, 6 on sm 7x, 12 on sm 8x and 18 from sm 90) "
               "overstate the NVLink bandwidth NCCL plans rings, trees and channel counts with. Checked up to sm 9x, where "
               "NCCL's count is the hardware's (Vera-Rubin GPUs have 36 NVLinks).",
    },
    "NTS051": {
        "why": "NCCL reads a topology file into NCCL_TOPO_XML_MAX_NODES (256) element slots. Each rank then adds its "
               "own GPU's elements, the NICs the net plugin reports and fused NICs, and the local ranks' trimmed "
               "trees are fused into a tree of the same size. A file that fits can still overflow on a host with "
               "one more NIC or NVLink peer: init fails with 'too many XML nodes'.",
        "detect": "The file's element count (as NCCL's reader counts it) plus the elements NCCL adds that the file "
                  "implies (a <gpu> for a GPU <pci> without one, <nic>/<net> for a NIC <pci> without one, fused "
                  "NICs from the NCCL model), per rank and after fusion, and with an estimate of the <nvlink> "
                  "elements NCCL adds under each GPU it completes on an NVSwitch host (one per NVSwitch, 4 on HGX "
                  "H100/H200); warned within 16 slots of the limit, or over it with the estimate only. Each NIC port "
                  "the net plugin reports beyond the file adds 3 more (nccl#2160: 32-NIC hosts). With a host (--root, "
                  "--live) the count is exact instead: the host's GPU path, <gpu> and <nvlink> elements the file "
                  "lacks, every port its net plugin reports that the file does not list (<net>, <nic>, <pci> path), "
                  "the NICs NCCL fuses from them, and the fused tree of its ranks.",
    },
    "NTS052": {
        "why": "NCCL reads a topology file into NCCL_TOPO_XML_MAX_NODES (256) element slots; what it adds per rank, "
               "or the fused tree of the local ranks, must fit too, or init fails with 'too many XML nodes'.",
        "detect": "The same arithmetic as NTS051, over the limit (with a host: the host's exact count).",
    },
    "NTS053": {
        "why": "Cloud providers ship skeleton files that place GPUs and NICs by bus id under <cpu> and <pci> only; "
               "NCCL fills in the devices, the CPU attributes and the link attributes from each host. That is fine "
               "when the bus ids and NUMA layout are the host's; the per-element incompleteness warning of <pci> "
               "(NTS008) is not reported for such files. A <cpu> without its CPU type is (NTS011): every host that "
               "reads the file models its own CPU.",
        "detect": "A <system> whose elements are all <cpu> or <pci>, with at least one <pci>. The summary line says "
                  "how many elements are left to NCCL's detection.",
    },
    "NTV011": {
        "why": "NCCL 2.9.6-2.9.8 read the vendor and device ids of every <pci> on the chain of a GPU or NIC they "
               "fill from sysfs, and stop when the bus id has no sysfs path. A virtual switch (bus id ffff:..., as "
               "in published cloud VM files) has none: init fails. 2.9.9 made these reads optional.",
        "detect": "For --nccl-version 2.9.6 to 2.9.8: a <pci> with bus id domain ffff above a GPU or NIC that "
                  "lacks vendor, device, subsystem_vendor or subsystem_device.",
    },
    "NTV012": {
        "why": "Before 2.28 NCCL read <cpu affinity> character by character and stopped at the first character that "
               "is not a lower-case hex digit or a comma: an upper-case mask, spaces or a 0x prefix leave the rest "
               "of the mask unread, so the GPUs' threads bind to too few CPUs (or none).",
    },
    "NTH015": {
        "why": "NCCL_GRAPH_FILE in /etc/nccl.conf applies to every job on the node, including jobs on fewer GPUs "
               "or another GPU order, for which the graph is wrong: they fail at init ('dev not found') or run a "
               "channel layout made for something else.",
        "detect": "With --root/--live, ncclctl reads the host's /etc/nccl.conf (as NCCL does: the first "
                  "NCCL_GRAPH_FILE= line) when it validates a graph file.",
    },
    "NTG022": {
        "checked_by": _MEANING, "graded": "info when no protocol or tuning choice changes with it",
        "why": "NCCL stores typeintra and typeinter verbatim and its tuning reads them: LL128 is enabled by default "
               "only with typeinter <= PXN on sm90 and later (<= PXB below, or with NCCL_LL128_C2C=0) and typeintra "
               "<= NVB, and on one node typeintra NVL selects NVLink latencies. A type worse than the real path "
               "turns LL128 off for nothing; a better one claims more than the hardware gives and enables LL128 "
               "where NCCL would not.",
        "detect": "The real type of typeintra is the worst GPU -> GPU path along each channel's GPU order (closing "
                  "back to the first GPU on one node); of typeinter, the worst endpoint path: NET -> first GPU "
                  "(receives take no PXN), sending GPU -> NET (PXN where NCCL relays), both directions for trees. "
                  + _MEANING_DETECT,
    },
    "NTG023": {
        "checked_by": _MEANING,
        "why": "NCCL's tuning takes nchannels x speedintra (up to 2 nodes) or x speedinter (beyond) as the graph's "
               "bandwidth. A speed the links cannot carry makes NCCL overestimate the ring or tree and choose it, or "
               "a protocol, where another choice is faster.",
        "detect": "search.cc's followPath accounting, summed over the graph's channels: every channel takes "
                  "speedintra on each link of each GPU -> GPU hop and speedinter on each link of its NET -> GPU and "
                  "GPU -> NET paths (half each for the two sending GPUs of a balanced tree; PCI through an Intel CPU "
                  "costs 6/5), and each channel that starts on a NET takes speedinter of that NET's bandwidth. A "
                  "link carrying more than its bandwidth binds the speed. This is a bound from the path model, not "
                  "NCCL's own search result. " + _MEANING_DETECT,
    },
    "NTG024": {
        "checked_by": _MEANING,
        "why": "A speed far below what the paths carry makes NCCL's tuning underestimate the ring or tree, so it "
               "may choose another algorithm or protocol; on sm90 and later across nodes, a ring speedintra of 45 or "
               "less also forgoes the channel doubling of connect.cc.",
        "detect": "As NTG023: the largest speed the links allow with the other speed as declared; the file's speed "
                  "under half of it is reported. " + _MEANING_DETECT,
    },
    "NTG025": {
        "checked_by": _MEANING,
        "why": "NCCL's own search only produces speeds from its per-architecture arrays (search.cc: speedArrayIntra "
               "and speedArrayInter, their sm90 and sm100 versions; across nodes both speeds come from the inter "
               "array). Another value works as written but was not made by NCCL.",
        "detect": "Each speed against the array for the lowest sm among the GPUs, one node (no <net>) or more. "
                  + _MEANING_DETECT,
    },
    "NTG026": {
        "checked_by": _MEANING,
        "why": "connect.cc swaps ring channels c and c^1 on odd nodes when crossnic is 2 and the channel count is "
               "even ('Alternate rings to avoid crossing rails'), so that the NIC node k sends on is the NIC node "
               "k+1 receives on. Channels whose out net is not the in net of the channel that follows them on the "
               "next node make every such hop cross rails (through the spine of a rail-optimized fabric); crossnic "
               "0 with in != out is a layout NCCL's search never builds.",
        "detect": "The ring channels' first and last <net> dev, with the swap applied as connect.cc does. Needs no "
                  "host: runs in every 'rings validate'.",
    },
    "NTG027": {
        "checked_by": _MEANING, "graded": "error when the NIC is not a rail: a storage or front-end NIC",
        "why": "Net devs are NCCL's IB plugin indices after NCCL_IB_HCA filtering and NIC fusion, so a graph "
               "numbered for one NCCL_IB_HCA lands on other NICs under another: channels on a storage or front-end "
               "NIC, or on a NIC across the CPU (PHB/SYS) from their GPU, without GPUDirect RDMA (traffic staged "
               "through host memory).",
        "detect": "Each channel endpoint's NET (as NCCL numbers NETs under the node's settings) against the GPU: its "
                  "path type and GPUDirect RDMA decision (paths.cc ncclTopoCheckGdr) compared with the GPU's closest "
                  "NET, and, with a host, the rails of 'ncclctl rails'. The fix names the NCCL_IB_HCA that numbers "
                  "the rails so the dev lands right, or the dev to use. " + _MEANING_DETECT,
    },
    "NTG028": {
        "checked_by": _MEANING,
        "why": "NCCL maps each <gpu dev> to a rank of the job when it loads the file and fails ('XML Import Channel "
               ": dev N not found') when the GPU is not in the job; a channel listing fewer GPUs than the job leaves "
               "the other ranks at 0. A graph file therefore serves exactly one GPU set: every channel must list "
               "exactly the job's GPUs.",
        "detect": "The channels' GPUs (by dev, or rank from 2.30.3) against NCCL's system for the node and against "
                  "each other. " + _MEANING_DETECT,
    },
    "NTG029": {
        "checked_by": _MEANING,
        "why": "NCCL does not check a graph's net devs when it loads the file; a dev that does not exist fails the "
               "first connection of the channel ('Could not find NET with id', ncclInternalError). At the default "
               "NCCL_NET_MERGE_LEVEL the IB plugin fuses the two ports or functions of a dual-port card into one "
               "virtual NIC numbered after the physical ones: the physical devs are gone.",
        "detect": "Each <net dev> against the NETs of NCCL's system (after NCCL_IB_HCA and fusion); a fused-away "
                  "physical dev is named with its virtual NIC. " + _MEANING_DETECT,
    },
    "NTG030": {
        "checked_by": _MEANING,
        "why": "A channel that ends on a GPU whose NET hangs off another GPU's PCIe switch sends through that GPU "
               "(PXN): the proxy runs on the peer, network user-buffer registration is off for the connection, and "
               "with NCCL_PXN_DISABLE=1 the path becomes PHB without GPUDirect RDMA. NCCL's own layout (crossnic 2) "
               "ends every channel at its out NIC's own GPU.",
        "detect": "The sending endpoints' GPU -> NET path type (paths.cc PXN). " + _MEANING_DETECT,
    },
    "NTG031": {
        "checked_by": _MEANING,
        "why": "tuning.cc multiplies tree bandwidth by 0.85 when the tree pattern is 3 (TREE), and NCCL's own search "
               "uses pattern 1 (BALANCED_TREE) below sm90 (the simpler tree is only a fallback from sm90 on).",
        "detect": "The tree graph's pattern and the lowest sm among the GPUs. " + _MEANING_DETECT,
    },
    "NTG033": {
        "checked_by": _MEANING,
        "why": "NCCL takes a graph file's crossnic, types and speeds as written (search.cc), whatever the settings "
               "say. Under NCCL_CROSS_NIC=0 NCCL 2.30 skips only graphs marked crossnic=\"1\": a crossnic=\"2\" "
               "graph is loaded, its channels leave on another NIC than they enter on and connect.cc swaps channel "
               "pairs on odd nodes, so ring traffic crosses rails the user kept apart. Under NCCL_PXN_DISABLE=1, "
               "or NCCL_NET_GDR_LEVEL, NCCL's NIC paths are slower (no PXN relay, traffic "
               "through the CPU); a file declaring the faster type keeps NCCL's tuning (and LL128) as if the setting "
               "were not there (without GPUDirect RDMA, a host fact, NTG022 says it).",
        "detect": "NCCL_CROSS_NIC as NCCL_PARAM reads it against each multi-node graph's crossnic, in/out nets and "
                  "channel count; each graph's typeinter against the channels' GPU <-> NET path types under the "
                  "settings, and again with NCCL_PXN_DISABLE / NCCL_NET_GDR_LEVEL at their defaults: the setting is "
                  "named when it is why the paths are slower than declared (NTG022 gives way, as NTG026 does for "
                  "crossnic). " + _MEANING_DETECT,
    },
    "NTG034": {
        "checked_by": _MEANING,
        "why": "A graph file replaces NCCL's own channel search. Under settings that restrict the search or the "
               "NIC paths (NCCL_CROSS_NIC, NCCL_PXN_DISABLE, NCCL_NET_GDR_LEVEL), a file made "
               "without them can carry less than what NCCL finds by itself: e.g. NCCL 2.30.7 on a DGX H100 with a "
               "port down and NCCL_PXN_DISABLE=1 builds 6 ring channels x 48 GB/s PIX, where a file made without "
               "the setting gives 7 x 22 GB/s over SYS (154 against 288 GB/s, LL128 off). NCCL's tuning credits a "
               "2-node ring with its intra-node speed, so its own model can even prefer the worse file.",
        "detect": "Only when such a setting is in force: NCCL's model of the node with the file loaded as "
                  "NCCL_GRAPH_FILE against NCCL's own search with the same settings (ncclctl/nccl/layouts.py): ring "
                  "and tree channels x the speed each carries end to end, path types at the NICs and inside the "
                  "node, AllReduce protocols left on. " + _MEANING_DETECT,
    },
    "NTG032": {
        "checked_by": "ncclctl/topo/graphfile.py",
        "why": "NCCL maps each <gpu dev> of a channel to a rank of the job when it loads the file "
               "(search.cc:ncclTopoGetChannelFromXml) and fails ('XML Import Channel : dev N not found') when that GPU "
               "is not in the job; a channel listing fewer GPUs than the job leaves the other ranks at 0. A graph "
               "file set for a whole image (/etc/nccl.conf) is read by jobs on VMs with fewer GPUs and by jobs on a "
               "subset of the node (nccl#1008: a 4-GPU NCv4 graph on 1- and 2-GPU VMs).",
        "detect": "topo validate on a graph file with neither a host (--root/--live: NTH012/NTH013 compare with its "
                  "GPUs) nor a topology (rings validate --topo: NTG028): the NVML indexes the ring, tree and CollNet "
                  "channels use (dev, hex from NCCL 2.21), which is the GPU set the file assumes.",
    },
    "NTS070": {
        "checked_by": "ncclctl/topo/meaning.py",
        "why": "NCCL uses GPUDirect RDMA only between a GPU and a NIC at most NCCL_NET_GDR_LEVEL apart (default P2C: "
               "under a common PCIe switch). A file that hangs every GPU and NIC directly off the CPU (as hypervisors "
               "present PCI devices, and as VM topology files often copy it), or puts them under different switches, "
               "makes every GPU-NIC path PHB or SYS: NCCL turns GPUDirect RDMA off and stages every inter-node "
               "transfer through host memory, while the real machine may pair them behind one switch.",
        "detect": "NCCL's model of the file (ncclctl/nccl: build, paths, predict; what ncclctl topo predict prints) "
                  "for a job of two such nodes, with GPUDirect RDMA assumed available: the rule fires when every GPU "
                  "has GPUDirect RDMA off for every NET it uses because of the path alone, in a VM layout: a GPU or "
                  "NIC on a root bus, or GPUs and NICs directly under a <cpu numaid=\"-1\"> without affinity (a "
                  "guest without NUMA information, whatever its bus numbers). Devices the file leaves "
                  "to NCCL (skeleton <pci> without <gpu>/<nic>) are completed as NCCL would find them; the message "
                  "lists what was assumed.",
    },
    "NTH030": {
        "checked_by": "ncclctl/topo/meaning.py",
        "why": "On this host NCCL would pair the GPU with a NIC behind a common PCIe switch and use GPUDirect RDMA; "
               "the file describes a layout in which the pair is farther apart than NCCL_NET_GDR_LEVEL, so NCCL "
               "turns GPUDirect RDMA off and stages the GPU's inter-node traffic through host memory.",
        "detect": "With --root/--live on a bare-metal host: NCCL's model of the hardware NCCL detects there (what "
                  "ncclctl topo generate writes, the host's NCCL settings and GPUDirect RDMA support) against NCCL's "
                  "model of the file, GPU by GPU. A VM's PCI tree carries no locality, so VMs are left to NTS070.",
    },
    "NTH040": {
        "why": "NCCL 2.30.7+ keeps a ring on one rail by the ids (crossNic=0 pairs NICs of one rail id, and never "
               "NICs of two planes): a NIC labelled rail 3 that is cabled to the rail-5 leaf sends the ring NCCL "
               "believes stays on rail 3 through the spine to every other node's rail-3 port; a wrong plane makes "
               "NCCL refuse paths that exist, or take ones that do not.",
        "detect": "With --fabric FILE (ibnetdiscover / iblinkinfo output): the leaf each port of the host (--host, "
                  "default its hostname) lands on and that leaf's rail and plane, the same for every host "
                  "(ncclctl/plan/railids.py, as ncclctl rails --fabric computes them); with --rail-map FILE, the "
                  "map's ids for the host's ports. Compared with each <net>'s rail= and plane= (NCCL 2.30.7+).",
    },
    "NTH041": {
        "why": "NCCL reads rail and plane from the topology file first; the IB plugin's ids from NCCL_IB_HCA "
               "(name:port:rail:plane) only fill a <net> that has none (graph/topo.cc). When both are given and "
               "differ, the file wins silently, and whoever edits NCCL_IB_HCA to fix a rail changes nothing.",
        "detect": "The host's effective NCCL_IB_HCA (environment, then the conf files, as NCCL resolves it), the "
                  "rail/plane fields of the entry that selects each <net>'s port (NCCL 2.30.7+), against the file's "
                  "rail= and plane=.",
    },
    "NTH042": {
        "why": "Two NICs with one rail id and plane are one rail to NCCL: with crossNic=0 a ring may leave a node on "
               "one and enter the next on the other, and NCCL_NET_MERGE_POLICY=RAIL may fuse them. When their ports "
               "land on different leaves, that ring crosses the spine (or has no path on a rail-only fabric).",
        "detect": "With --fabric: pairs of <net> with the same rail= and plane= whose ports land on different "
                  "leaves. Not reported when NTH040 already says one of them is labelled wrong.",
    },
    "NTH043": {
        "why": "Rail ids belong to the NICs the GPUs' traffic uses. A rail id on a storage or management NIC (or a "
               "second port) makes it a rail member to NCCL: the ring search may pair it with a rail NIC of another "
               "node, and NCCL_NET_MERGE_POLICY=RAIL may fuse it with that rail's NIC.",
        "detect": "With a host: <net> elements with rail= or plane= whose NIC is not a rail NIC of the host (each "
                  "GPU's closest NIC port, as ncclctl rails plans them).",
    },
    "NTH044": {
        "why": "NCCL before 2.30.7 does not read rail= or plane= (nor the rail fields of NCCL_IB_HCA): a file "
               "written for rails keeps its rings in a rail only if every node lists its NICs in the same order "
               "and NCCL_CROSS_NIC is 0, which nothing in the file says.",
        "detect": "With a host (--root, --live, --model) or --fabric, for --nccl-version below 2.30.7: the <net> "
                  "elements with rail= or plane= (what NTV002 reports without a host, which gives way here).",
    },
    "NTX090": {
        "checked_by": _SCHEMA,
        "why": "The schemas describe the structure NCCL understands. A mismatch usually means an element or "
               "attribute NCCL ignores or reads differently; the NCCL-based rules (NTS, NTG) say what NCCL does "
               "with it, this rule catches what they do not model.",
        "detect": "The file is validated with lxml against schemas/nccl-topo.xsd or schemas/nccl-graph.xsd "
                  "(--xsd, on by default; --no-xsd skips it).",
    },
    "NTX091": {
        "checked_by": _SCHEMA,
        "why": "Nothing is wrong for NCCL by itself: NCCL's reader is more lenient than XML, so a file NCCL reads "
               "can still be unreadable to a general XML parser, and the structural XSD check cannot run.",
        "detect": "lxml refuses to parse the file (for example a TAB-indented or unquoted construct NCCL accepts); "
                  "the NCCL-based rules still run on NCCL's reading of it.",
    },
}

_ROWS: tuple[tuple[str, str, Severity, str, str], ...] = (
    # --- NTX: NCCL's byte-level reader and its limits (§1.1) -----------------------------------------
    ('NTX001', 'tab-before-element', E,
     "TAB before '<': NCCL skips only space, LF and CR between elements",
     'Indent with spaces only; replace every TAB outside attribute values with spaces.'),
    ('NTX002', 'newline-in-start-tag', E,
     'newline inside a start tag: NCCL needs each start tag on one line',
     'Write the element name and all its attributes on a single line, separated by single spaces.'),
    ('NTX003', 'xml-declaration', E,
     "<?xml ...?> declaration: NCCL's reader cannot parse it",
     'Delete the <?xml ...?> line; NCCL files carry no XML declaration.'),
    ('NTX004', 'utf8-bom', E,
     'UTF-8 byte-order mark at the start of the file',
     "Save the file as UTF-8 without BOM (the first byte must be '<', a space or a newline)."),
    ('NTX005', 'text-outside-tags', E,
     "text outside tags: NCCL expects '<' after whitespace between elements",
     'Remove text content and anything after the root element; use <!-- --> for notes.'),
    ('NTX006', 'unquoted-attribute', E,
     'unquoted attribute value',
     'Quote every attribute value with double quotes: name="value".'),
    ('NTX007', 'unexpected-end-of-file', E,
     'unexpected end of file inside a tag or value (e.g. an unclosed or mismatched quote)',
     "Close every quoted value with the same quote character and end every tag with '>'."),
    ('NTX008', 'malformed-self-closing-tag', E,
     "malformed self-closing tag ('/' not directly followed by '>')",
     "Write self-closing tags as <name .../> with no space between '/' and '>'."),
    ('NTX009', 'closing-tag-trailing-chars', E,
     "closing tag with trailing characters (e.g. '</x >')",
     'Write closing tags exactly as </name>.'),
    ('NTX010', 'closing-tag-mismatch', E,
     'closing tag does not match the open element',
     'Close elements in reverse order of opening; check the element names.'),
    ('NTX011', 'element-not-closed', E,
     'element not closed before the end of the file',
     'Add the missing </name> or write the element as <name .../>.'),
    ('NTX012', 'comment-not-terminated', E,
     "comment not terminated with '-->'",
     "End the comment with '-->' (NCCL's reader looks for exactly that sequence)."),
    ('NTX013', 'equals-in-element-name', E,
     "'=' inside an element name (NCCL: 'Unexpected value with name')",
     "Separate the element name from attributes with a space (not a TAB), and do not put '=' in the first word of a comment."),
    ('NTX014', 'malformed-start-tag', E,
     "malformed start tag: NCCL expected '>'",
     "Separate attributes with exactly one space and end the tag with '>' or '/>'."),
    ('NTX015', 'attribute-value-too-long', E,
     'attribute value of 254 characters or more',
     'Shorten the value to at most 253 characters.'),
    ('NTX016', 'xml-name-too-long', E,
     'element or attribute name too long',
     'Shorten the name to at most 253 characters (254 in NCCL 2.6-2.7).'),
    ('NTX017', 'too-many-attributes', E,
     'more than 16 attributes on one element: NCCL drops the 17th and later',
     'Remove unneeded attributes so that at most 16 remain.'),
    ('NTX018', 'too-many-children', E,
     "more child elements than NCCL's per-element limit (MAX_SUBS)",
     'Reduce the number of children of this element (640 in 2.29.7+, 128 in 2.21-2.29.3, 32 before).'),
    ('NTX019', 'too-many-elements', E,
     "more elements than NCCL's node slots (255 usable in a topology file)",
     'Remove elements NCCL would trim anyway (unused switches, NICs and GPUs) so the file fits.'),
    ('NTX020', 'stray-closing-tag', E,
     'closing tag at top level with no open element',
     'Remove the stray closing tag (or add the opening tag it was meant to close).'),
    ('NTX021', 'extra-spaces-in-tag', W,
     'extra spaces in a start tag create empty-name attributes',
     "Separate the name and attributes with exactly one space and put no space before '>'."),
    ('NTX022', 'attribute-without-value', W,
     "attribute without '=': NCCL stores it with an empty value",
     'Give the attribute a quoted value (name="value") or remove it.'),
    ('NTX023', 'duplicate-attribute', W,
     'attribute given twice: NCCL uses the first occurrence',
     'Keep one occurrence of the attribute.'),
    ('NTX024', 'entity-reference', W,
     'entity reference in a value: NCCL does not decode entities',
     "Write the literal character instead of '&amp;', '&lt;' etc. (NCCL values are read verbatim)."),
    ('NTX025', 'nul-byte', W,
     'NUL byte in a name or value: NCCL truncates the string there',
     'Remove the NUL byte (save the file as plain UTF-8 text).'),
    # --- NTS: topology semantics (§2) -----------------------------------------------------------------
    ('NTS001', 'topo-no-system-root', E,
     'no <system> root: NCCL loads zero nodes and silently auto-detects',
     'Make <system version="1"> the root element.'),
    ('NTS002', 'topo-several-roots', E,
     'more than one top-level element: only the first <system> is used',
     'Keep a single root element; merge the others into it.'),
    ('NTS003', 'topo-system-version', E,
     '<system> version missing or not 1',
     'Set version="1" on <system> (the only version NCCL reads).'),
    ('NTS004', 'element-ignored-position', W,
     'known element in a position NCCL ignores (with its whole subtree)',
     'Move the element under a valid parent (see the hierarchy in nccl-format.md §2.1).'),
    ('NTS005', 'unknown-element', W,
     'unknown element: NCCL ignores it with its whole subtree',
     'Remove the element or fix its name (there is no <nvs> element; NVSwitches are nvlink targets).'),
    ('NTS006', 'pci-without-busid', E,
     '<pci> without busid',
     'Add busid="dddd:bb:dd.f" (lowercase hex, 4-digit domain).'),
    ('NTS007', 'pci-missing-attributes', E,
     '<pci> without class, link_speed or link_width where NCCL will not fill them',
     "Add class, link_speed and link_width (NCCL fills them only on the local GPU's chain)."),
    ('NTS008', 'pci-incomplete-attributes', W,
     '<pci> with an incomplete attribute set (filled per rank: fusion duplicates)',
     'Give every <pci> busid, class, link_speed and link_width.'),
    ('NTS009', 'cpu-without-numaid', E,
     '<cpu> without numaid',
     'Add numaid="N" (the NUMA node number, -1 if unknown).'),
    ('NTS010', 'cpu-missing-attributes', E,
     '<cpu> without arch, vendor (x86) or familyid/modelid (Intel, Zhaoxin) where NCCL will not fill them',
     "Add arch, vendor, familyid and modelid (NCCL fills them only on the local GPU's chain)."),
    ('NTS011', 'cpu-incomplete-attributes', W,
     '<cpu> with an incomplete attribute set (filled per rank: fusion duplicates)',
     'Give every <cpu> numaid, affinity, arch, vendor, familyid and modelid.'),
    ('NTS012', 'cpu-arch-unknown', W,
     '<cpu> arch not one of x86_64, arm64, ppc64',
     'Use arch="arm64" for aarch64 hosts, "x86_64" or "ppc64" otherwise.'),
    ('NTS013', 'cpu-vendor-unknown', W,
     'x86 <cpu> with an unknown vendor (inter-CPU bandwidth becomes 5000 GB/s)',
     "Use GenuineIntel, AuthenticAMD, CentaurHauls or '  Shanghai  '."),
    ('NTS014', 'duplicate-pci-busid', E,
     'two <pci> elements with the same bus id',
     'Give every <pci> a unique busid.'),
    ('NTS015', 'duplicate-cpu-numaid', E,
     'two <cpu> elements with the same numaid',
     'Give every <cpu> a unique numaid; merge their children.'),
    ('NTS016', 'nvlink-without-count', E,
     '<nvlink> without count',
     'Add count="N" (the number of NVLinks to that target).'),
    ('NTS017', 'nvlink-without-target', E,
     '<nvlink> with neither tclass nor target, or a GPU tclass without target',
     'Add target="<busid>" and tclass (0x068000 NVSwitch, 0x0302xx GPU, 0x068001 CPU).'),
    ('NTS018', 'nvlink-without-tclass', W,
     '<nvlink> without tclass: NCCL looks the target up in sysfs, else assumes NVSwitch',
     'Add tclass (0x068000 NVSwitch, 0x0302xx GPU, 0x068001 CPU).'),
    ('NTS019', 'nvlink-asymmetric', W,
     'asymmetric GPU-GPU nvlink (the reverse link is missing or has another count)',
     'Describe every GPU-GPU NVLink on both GPUs with the same count.'),
    ('NTS020', 'nvlink-target-missing', W,
     '<nvlink> to a GPU target that is not in the file: NCCL silently drops the link',
     'Fix the target busid or add the target GPU.'),
    ('NTS021', 'pcilink-asymmetric', W,
     'asymmetric <pcilink> or pcilink to a switch not in the file',
     'Add the reverse <pcilink> on the target switch; fix unknown targets.'),
    ('NTS022', 'keep-attribute', E,
     'keep attribute in an input file: NCCL keeps the whole subtree untrimmed',
     'Remove every keep attribute (NCCL sets keep itself when it dumps a topology).'),
    ('NTS023', 'topo-rank-attribute', W,
     'rank attribute in a topology file (overwritten or colliding with real ranks)',
     'Remove rank attributes; NCCL sets them.'),
    ('NTS024', 'gdr-forced-on', W,
     'gdr="1" forces GPUDirect RDMA on without checking support',
     'Remove gdr and let NCCL detect it (gdr="0" to force it off is fine).'),
    ('NTS025', 'init-only-override', I,
     'init-only attribute overrides what NCCL would detect',
     'Omit the attribute to let NCCL detect the value, or validate the file against its host (--root/--live) '
     'to confirm the values.'),
    ('NTS026', 'net-speed-suspicious', W,
     'suspicious <net> speed (Mb/s expected; <= 0 becomes 10000)',
     'Write speed in Mb/s, e.g. 400000 for 400 Gb/s, or omit it.'),
    ('NTS027', 'gpu-dev-suspicious', W,
     'suspicious <gpu> dev (duplicate, negative or not a number)',
     "Use each GPU's NVML index exactly once, or omit dev."),
    ('NTS028', 'busid-not-canonical', W,
     "bus id not in NCCL's canonical form (lowercase, 4-digit domain): never matched",
     'Write bus ids as dddd:bb:dd.f in lowercase hex with a 4-digit domain.'),
    ('NTS029', 'ib-nic-busid-function', W,
     'IB NIC <pci> bus id with function not .0 or device not 00',
     "Use the …:bb:00.0 form that the IB plugin reports for the NIC's PCI device."),
    ('NTS030', 'link-speed-unknown', W,
     "link_speed is not one of NCCL's known strings",
     'Use a kernel string exactly, e.g. "16.0 GT/s PCIe", "32.0 GT/s PCIe", "64.0 GT/s PCIe".'),
    ('NTS031', 'link-width-invalid', W,
     'link_width is not a positive integer (0 or empty means x16)',
     'Write the link width as a decimal integer, e.g. 16.'),
    ('NTS032', 'net-guid-port-shared', W,
     'several <net> elements share the same (guid, port)',
     'Give each physical port a unique guid+port pair.'),
    ('NTS033', 'gpu-under-pci-switch', E,
     '<gpu> directly under a PCI switch: NCCL processes it as a <pci> and fails or skips',
     'Wrap the GPU in its own <pci busid=... class="0x0302.."> element.'),
    ('NTS034', 'nic-pci-other-children', W,
     '<pci> holding a <nic>: its other children are ignored',
     'Move the other children to another <pci>; one <nic> per NIC <pci>.'),
    ('NTS035', 'gpu-busid-low-bits', E,
     'GPU bus id with the low 2 bits set (NCCL 2.30.7+: fatal MLOPart check)',
     "Use the GPU's real bus id (function 0, 4, 8 or c)."),
    ('NTS036', 'mlopart-out-of-range', E,
     '<gpu> mlopart index >= 2 (fatal)',
     'Use mlopart 0, 1 or -1, or omit it (NCCL sets it).'),
    ('NTS037', 'pcilink-not-under-switch', E,
     '<pcilink> under a <pci> that does not become a PCI switch (fatal)',
     'Put <pcilink> only under PCI switch elements (class 0x060400 without <nic>/<gpu>).'),
    ('NTS038', 'leaf-missing-attribute', E,
     'leaf element without a required attribute (pcilink target, c2c bw/count)',
     'Add the missing attribute (pcilink: target; c2c: bw and count).'),
    ('NTS039', 'net-without-name', W,
     '<net> without name: no net plugin device can match it',
     'Add name="<device>" exactly as the plugin reports it (e.g. mlx5_0).'),
    ('NTS040', 'net-attribute-overflow', E,
     "<net> with so many attributes that NCCL's own additions overflow its 17 slots",
     'Remove unknown or unneeded attributes from <net>.'),
    ('NTS041', 'nvlink-tclass-unknown', W,
     '<nvlink> tclass not a known class (treated as an NVSwitch)',
     'Use 0x068000 (NVSwitch), 0x0302xx (GPU) or 0x068001 (CPU).'),
    ('NTS042', 'pci-class-unknown', I,
     "<pci> class not in NCCL's dictionary (treated as a PCI switch)",
     'Use the sysfs class value, e.g. 0x060400 for a bridge.'),
    ('NTS043', 'cpu-affinity-malformed', W,
     '<cpu> affinity that NCCL does not read as the cpumap it looks like (or that is no cpumap)',
     'Copy /sys/devices/system/node/node<N>/cpumap verbatim: 32-bit hex words, most significant first, no empty '
     'words, at most 32 words.'),
    ('NTS044', 'cpu-affinity-overlap', W,
     'two <cpu> elements whose affinities share CPUs (identical or overlapping masks)',
     "Give each <cpu> its own NUMA node's cpumap (/sys/devices/system/node/node<N>/cpumap)."),
    ('NTS045', 'cpu-affinity-numa-order', W,
     '<cpu> affinities out of NUMA order: masks look swapped between NUMA nodes',
     'Check each numaid against its cpumap (/sys/devices/system/node/node<N>/cpumap) and swap the masks back.'),
    ('NTS046', 'cpu-affinity-no-binding', W,
     'a <cpu> with GPUs whose affinity NCCL reads as empty (numaid -1 without affinity, an all-zero mask): no '
     'CPU binding',
     "Give the <cpu> the real NUMA node id and its cpumap; with no NUMA information, the cpumap of the CPUs the "
     "GPUs' threads should run on."),
    ('NTS047', 'pci-link-caps-devices', W,
     'a switch or bridge whose link NCCL reads slower than a device under it: every path through it is capped',
     "Give the switch the link_speed and link_width of its real uplink (at least those of the devices under it)."),
    ('NTS048', 'link-speed-prefix', I,
     'link_speed NCCL reads by a known prefix (not one of its exact strings)',
     'No action needed; write the kernel string (e.g. "32.0 GT/s PCIe") for tools that compare exactly.'),
    ('NTS049', 'nvlink-target-self', W,
     "<nvlink> whose target is the GPU's own bus id: NCCL builds a link to itself, no GPU-GPU NVLink",
     'Set target to the peer GPU (tclass 0x0302..) or the NVSwitch (tclass 0x068000), or remove the <nvlink>.'),
    ('NTS050', 'nvlink-count-over-max', W,
     'a GPU with more NVLinks than NCCL detects on its sm: NVLink bandwidth overstated',
     'Use the NVLink counts NCCL dumps for the GPU (NCCL_TOPO_DUMP_FILE) or ncclctl topo generate writes.'),
    ('NTS051', 'topo-node-budget-near', W,
     "the file plus what NCCL adds on each rank and when fusing the local ranks' trees comes near "
     "NCCL_TOPO_XML_MAX_NODES",
     'Remove elements NCCL trims anyway (switches without GPUs or NICs, unused NICs) to leave room.'),
    ('NTS052', 'topo-node-budget-exceeded', E,
     "the file plus what NCCL adds on each rank or when fusing the local ranks' trees exceeds "
     "NCCL_TOPO_XML_MAX_NODES: init fails",
     'Remove elements NCCL trims anyway (switches without GPUs or NICs, unused NICs), or describe the GPUs and '
     'NICs fully so NCCL adds less.'),
    ('NTS053', 'topo-skeleton', I,
     'skeleton file (only <cpu> and <pci>): NCCL completes the devices and attributes from each host',
     'Nothing to do if the bus ids and NUMA layout are those of the hosts; validate against a host (--root/--live) '
     'to check them.'),
    # --- NTS090-099: rail and plane ids (NCCL 2.30.7+) ---------------------------------------------------
    ('NTS090', 'net-rail-plane-not-integer', E,
     '<net> rail= or plane= that is not a non-negative integer: NCCL reads another id (strtol) or none (-1)',
     'Write the rail and plane as plain decimal numbers (ncclctl topo generate --fabric writes them from the '
     'fabric).'),
    ('NTS091', 'net-plane-partial', W,
     '<net> elements with a rail= where some carry plane= and others do not: the search forbids crossing planes '
     'only between two NICs that both have one',
     'Give every rail <net> its plane, or none (ncclctl topo generate --fabric writes both for every rail port).'),
    # --- NTS070-089: what the file makes NCCL decide, from NCCL's model (meaning.py) ---------------------
    ('NTS070', 'layout-gdr-off-everywhere', W,
     'no GPU shares a PCI switch with a NIC: GPUDirect RDMA is off for every GPU (flat or degraded layout)',
     'If the machine pairs each GPU with a NIC under a PCIe switch (most 8-GPU servers and their VMs do), describe '
     'that switch: put the GPU and its NIC under one <pci class="0x060400"> (a made-up bus id such as ffff:ff:01.0 '
     'works; ncclctl topo generate --profile or --spec writes it). If they really sit on separate root ports, this '
     'is what NCCL does anyway.'),
    # --- NTG: graph semantics (§4) --------------------------------------------------------------------
    ('NTG001', 'graph-no-graphs-root', E,
     'no <graphs> root (empty graph file): no graph is loaded',
     'Make <graphs version="1"> the root element, or unset NCCL_GRAPH_FILE.'),
    ('NTG002', 'graph-several-roots', E,
     'more than one top-level element: only the first <graphs> is used',
     'Keep a single <graphs> root; merge the graphs of the others into it.'),
    ('NTG003', 'graph-version', E,
     '<graphs> version missing or not 1',
     'Set version="1" on <graphs> (the only version NCCL reads).'),
    ('NTG004', 'graph-missing-attribute', E,
     '<graph> without a required attribute',
     'Give every <graph> id, pattern, crossnic, nchannels, speedintra, speedinter, typeintra, typeinter and samechannels.'),
    ('NTG005', 'graph-path-type-unknown', E,
     "typeintra/typeinter not in NCCL's path-type dictionary (falls back to LOC)",
     'Use one of LOC NVL NVB PIX PXB P2C PXN PHB SYS.'),
    ('NTG006', 'graph-nchannels-mismatch', E,
     'nchannels differs from the number of <channel> elements',
     'Set nchannels to the number of <channel> children.'),
    ('NTG007', 'graph-too-many-channels', E,
     'too many channels (ring/tree > 32, any graph > 64)',
     'Keep ring and tree graphs at 32 channels or fewer.'),
    ('NTG008', 'channel-gpu-count', E,
     'channels list different numbers of GPUs (or none)',
     'List every local GPU exactly once in every channel (NVLS: at least one).'),
    ('NTG009', 'channel-net-count', E,
     'a channel has a <net> count other than 0 or 2, or channels disagree',
     'Give every channel either no <net> (single node) or exactly two (first and last).'),
    ('NTG010', 'graph-id-pattern', W,
     'graph id/pattern pairing NCCL does not expect',
     'Use id 0 with pattern 4, id 1 with 1/2/3, id 2 with 3, id 3 with 5, id 4 with 6.'),
    ('NTG011', 'graph-dev-notation', W,
     'dev written as decimal >= 10 or hex without 0x (read differently across 2.21)',
     'Write dev as 0x-prefixed hex (0xa) or a single digit 0-9.'),
    ('NTG012', 'graph-rank-attribute', W,
     "rank attribute in a graph file (ties it to one node's rank numbering)",
     'Remove rank attributes so each node maps dev to its own ranks.'),
    ('NTG013', 'graph-crossnic-invalid', E,
     'crossnic not 0, 1 or 2',
     'Set crossnic to 0, 1 or 2 (0: each channel enters and leaves on the same NIC).'),
    ('NTG014', 'channel-dev-missing', E,
     '<net> or <gpu> in a channel without dev',
     'Add dev (0x-prefixed hex) to every <net> and <gpu>.'),
    ('NTG015', 'channel-gpu-repeated', W,
     'the same GPU appears twice in one channel',
     'List every local GPU exactly once per channel.'),
    ('NTG016', 'graph-placeholder', I,
     'graph with nchannels=0 and no channels: NCCL searches this graph normally',
     'Remove the placeholder graph or fill it.'),
    ('NTG017', 'graph-duplicate-id', W,
     'several <graph> elements with the same id: the last one wins',
     'Keep one <graph> per id; delete or merge the others.'),
    ('NTG018', 'graph-samechannels-invalid', W,
     'samechannels not 0 or 1',
     'Set samechannels to 0 or 1 (1: every channel uses the same GPU order).'),
    ('NTG019', 'graph-number-invalid', W,
     'numeric graph attribute is not a number (NCCL reads 0)',
     'Write the attribute as a decimal number (NCCL reads anything else as 0).'),
    ('NTG020', 'graph-crossnic-ignored', I,
     'crossnic=1: this graph is ignored when NCCL_CROSS_NIC=0',
     'Use crossnic="0" if the graph must also apply with NCCL_CROSS_NIC=0.'),
    ('NTG021', 'graph-element-ignored', W,
     'element NCCL ignores in a graph file (unknown name or wrong position)',
     'Use only graphs > graph > channel > net/gpu.'),
    # --- NTG: what the graph means on the node (graphcheck.py, rings validate with a topology) ----------------
    ('NTG022', 'graph-path-type-mismatch', W,
     'declared typeintra/typeinter differ from the real path types of the channels (LL128 on or off wrongly)',
     "Declare the real worst path types (NCCL's own search writes them; see the message)."),
    ('NTG023', 'graph-speed-oversubscribed', W,
     "declared speed more than the channels' paths carry (NCCL's tuning overestimates the graph)",
     'Lower the speed to the bound in the message, or regenerate the graph.'),
    ('NTG024', 'graph-speed-underused', W,
     "declared speed under half of what the channels' paths carry (NCCL's tuning underestimates the graph)",
     'Raise the speed toward the bound in the message, or regenerate the graph.'),
    ('NTG025', 'graph-speed-not-nccl', I,
     "speed not in NCCL's search speed arrays for the GPUs' sm",
     "Use a value from NCCL's array for that sm (the message lists it)."),
    ('NTG026', 'graph-crossnic-rails', W,
     "crossnic and the channels' in/out nets make ring hops between nodes cross rails",
     'Use crossnic="0" with each channel entering and leaving on one net, or crossnic="2" with channel pairs c, c^1.'),
    ('NTG027', 'graph-net-not-compute', W,
     "a channel's net is not its GPU's compute NIC (storage/front-end NIC, PHB/SYS, or no GPUDirect RDMA)",
     'Set NCCL_IB_HCA to the rails the graph was numbered for, or use the dev in the message.'),
    ('NTG028', 'graph-gpu-set', E,
     "the channels' GPUs are not exactly the job's GPUs (a subset, uneven channels, or GPUs the node lacks)",
     "List every GPU of the job in every channel, by its NVML index; use the file only for jobs on that GPU set."),
    ('NTG029', 'graph-net-dev-missing', E,
     'net dev that NCCL will not have after NCCL_IB_HCA and NIC fusion (fails at connect time)',
     'Use a dev NCCL has (ncclctl topo predict lists them), or NCCL_NET_MERGE_LEVEL=LOC to keep physical devs.'),
    ('NTG030', 'graph-pxn-endpoint', I,
     'channels that end on a GPU reaching its net through another GPU (PXN)',
     "End each channel at its out net's own GPU (NCCL's layout: crossnic 2, channel c leaves on rail c^1 from its GPU)."),
    ('NTG031', 'graph-tree-pattern', I,
     'tree pattern 3 below sm90 (tuning x0.85; NCCL uses the balanced tree)',
     'Use pattern="1" (BALANCED_TREE) for the tree graph below sm90.'),
    ('NTG033', 'graph-overrides-setting', W,
     "the file declares what the node's settings forbid (crossnic under NCCL_CROSS_NIC=0; a NIC path type "
     "NCCL_PXN_DISABLE or NCCL_NET_GDR_LEVEL makes slower)",
     "Drop NCCL_GRAPH_FILE for jobs with the setting, or regenerate the file under it (ncclctl rings graph --env)."),
    ('NTG034', 'graph-worse-than-nccl', W,
     "under the node's restricting settings NCCL's own search does better than the file (channels x bandwidth, "
     "NIC path types, protocols)",
     "Drop NCCL_GRAPH_FILE for jobs with these settings, or regenerate it under them (ncclctl rings graph --env)."),
    ('NTG032', 'graph-gpu-set-assumed', I,
     'the GPUs the channels use: the file fits only jobs on exactly these GPUs (no host or topology to compare)',
     'Set NCCL_GRAPH_FILE only for jobs on exactly these GPUs (in the job environment, not in /etc/nccl.conf), or '
     'check the file against the node: topo validate --root/--live, rings validate --topo FILE.'),
    # --- NTV: version-specific (§6) -------------------------------------------------------------------
    ('NTV001', 'version-element-unknown', W,
     'element not understood by the target NCCL version (ignored)',
     'Remove it, or target a newer NCCL.'),
    ('NTV002', 'version-attribute-unknown', W,
     'attribute not understood by the target NCCL version (ignored)',
     'Remove it, or target a newer NCCL.'),
    ('NTV003', 'version-link-speed-unknown', W,
     'link_speed string unknown to the target NCCL version (falls back to Gen3)',
     'Use the "N GT/s" form understood by older versions, or target a newer NCCL.'),
    ('NTV004', 'version-path-type-unknown', E,
     'graph path type unknown to the target NCCL version (falls back to LOC)',
     'Use a type the target version knows (NVB 2.8+, PXN 2.12+, P2C 2.27+).'),
    ('NTV005', 'version-single-quotes-misread', E,
     'single-quoted value: NCCL before 2.27 reads it up to the next double quote',
     'Use double quotes around every attribute value.'),
    ('NTV006', 'version-graph-unknown', W,
     'graph id or pattern unknown to the target NCCL version',
     'Use ids/patterns the target version supports (NVLS 2.18+, CollNet direct 2.22/2.23+).'),
    ('NTV007', 'version-host-hash', W,
     'host_hash in the file is used as-is by NCCL 2.21-2.26',
     'Remove host_hash (a value copied from another host splits the node into several systems).'),
    ('NTV008', 'version-dictionary-fatal', E,
     'value not in an NCCL 2.6 dictionary: fatal in 2.6',
     'Use a dictionary value, or target NCCL 2.7+.'),
    ('NTV009', 'version-newer-value', I,
     'value understood only by newer NCCL versions (same effect through the fallback)',
     'No action needed; newer versions recognise it.'),
    ('NTV010', 'version-single-quotes', I,
     'single-quoted value: needs NCCL 2.27 or later',
     'Use double quotes for files shared with older NCCL versions.'),
    ('NTV011', 'version-virtual-switch-ids', E,
     'virtual switch (bus id ffff:...) without vendor/device ids: NCCL 2.9.6-2.9.8 fail init reading them from sysfs',
     'Add vendor="0x0000" device="0x0000" subsystem_vendor="0x0000" subsystem_device="0x0000" to the virtual '
     'switch, or target NCCL 2.9.9+.'),
    ('NTV012', 'version-affinity-misread', W,
     '<cpu> affinity NCCL before 2.28 reads differently (upper-case hex, spaces, 0x: its reader stops there)',
     'Write the mask as the kernel does: lower-case 32-bit hex words separated by commas, nothing else.'),
    # --- NTH: the file against a host (hostcheck.py, --root/--live) -----------------------------------
    ('NTH001', 'host-device-absent', E,
     'the file names a GPU or NIC this host does not have: NCCL trims that subtree silently',
     'Regenerate the file on this host (ncclctl topo generate), or fix the bus id / device name.'),
    ('NTH002', 'host-device-not-in-file', W,
     'a GPU or active RDMA NIC of this host is missing from the file: NCCL places it from sysfs',
     'Regenerate the file so every GPU and compute NIC is described where the layout intends.'),
    ('NTH003', 'host-busid-spelling', E,
     'bus-id spelling NCCL will not match (upper case or 8-digit domain) for a device of this host',
     'Write bus ids as sysfs does: lower case with a 4-digit domain, e.g. 0000:1b:00.0.'),
    ('NTH004', 'host-cpu-affinity', E,
     "<cpu affinity> differs from this host's NUMA node cpumap: NCCL binds threads to the wrong cores",
     'Copy /sys/devices/system/node/node<N>/cpumap verbatim, or regenerate the file.'),
    ('NTH005', 'host-numa-placement', E,
     'a GPU or NIC sits under a <cpu numaid> other than its NUMA node on this host',
     'Move the device under the <cpu> of its real NUMA node (sysfs numa_node), or regenerate the file.'),
    ('NTH006', 'host-gpu-nic-pairing', W,
     "GPU/NIC pairing differs from this host's real PCIe locality",
     'Pair each GPU with the NIC nearest to it on the host (ncclctl probe --format matrix).'),
    ('NTH007', 'host-gpu-dev', E,
     "<gpu dev> differs from the NVML index of that GPU on this host: NCCL uses the file's value as-is",
     'Use the nvidia-smi index of the GPU at that bus id, or drop dev and let NCCL detect it.'),
    ('NTH008', 'host-gpu-sm', W,
     "<gpu sm> differs from the GPU's compute capability on this host",
     "Use major*10+minor of the GPU's compute capability, or drop sm."),
    ('NTH009', 'host-nvlink-count', W,
     'NVLink counts differ from the active links on this host',
     'Regenerate the file, or check the NVLinks (ncclctl probe) if links are down.'),
    ('NTH010', 'host-net-attributes', W,
     "<net> speed/port/guid differ from what NCCL's IB plugin reports on this host",
     'Drop the attribute to let NCCL fill it, or regenerate the file.'),
    ('NTH011', 'host-numa-absent', W,
     'the file declares a NUMA node this host does not have',
     "Use the host's NUMA node ids (ls /sys/devices/system/node)."),
    ('NTH012', 'host-graph-gpu-dev', E,
     "graph <gpu dev> is not an NVML GPU index of this host: 'dev not found' fails communicator init",
     "Use the host's GPU indices (nvidia-smi -L), or regenerate with ncclctl rings graph."),
    ('NTH013', 'host-graph-gpu-count', W,
     'graph channels list a different number of GPUs than this host has',
     'A graph file describes one GPU count; communicators over other GPU sets (ncclCommSplit) break. Regenerate it.'),
    ('NTH014', 'host-graph-net-dev', E,
     "graph <net dev> is not a net device NCCL will have on this host: 'Could not find NET' fails init",
     'Number nets as NCCL does (active ports in PCI order after NCCL_IB_HCA, then NIC fusion: a fused card is one '
     'virtual dev numbered after the physical ones, which are gone), or regenerate the file.'),
    ('NTH030', 'host-gdr-lost', W,
     'the file turns GPUDirect RDMA off for a GPU that this host pairs with a NIC',
     'Regenerate the file on this host (ncclctl topo generate), or describe the PCIe switch the GPU shares with '
     'its NIC as the host has it.'),
    ('NTH015', 'host-graph-file-in-etc', W,
     'NCCL_GRAPH_FILE is set in /etc/nccl.conf: every job on the node reads it, including ones on fewer GPUs',
     'Set NCCL_GRAPH_FILE per job (environment) for experiments only, not node-wide.'),
    # --- NTH040-049: rail and plane ids against the host and its fabric (hostcheck.py) ---------------------
    ('NTH040', 'host-net-rail-vs-fabric', E,
     '<net> rail=/plane= differs from the rail/plane of the leaf its port lands on (--fabric) or of the rail map '
     '(--rail-map)',
     'Write the ids of the leaf the port lands on (ncclctl topo generate --fabric FILE writes them), or recable the '
     'port to the leaf of the rail it is labelled with.'),
    ('NTH041', 'host-net-rail-vs-ib-hca', W,
     "<net> rail=/plane= differs from the ids the host's NCCL_IB_HCA gives the port: NCCL uses the file's",
     'Make both say the same: regenerate the file and NCCL_IB_HCA from one source (ncclctl topo generate --fabric, '
     'ncclctl conf generate --fabric), or drop the ids from one of them.'),
    ('NTH042', 'host-net-rail-shared', W,
     'two <net> of this host carry the same rail and plane id but their ports land on different leaves',
     'Give each leaf its own rail id (ncclctl topo generate --fabric FILE; a leaf name carrying another rail\'s '
     'number misleads it), so NCCL keeps each ring on one leaf.'),
    ('NTH043', 'host-net-rail-not-rail-nic', W,
     '<net> rail=/plane= on a NIC that is no GPU\'s rail NIC on this host (storage, management, second port)',
     'Drop rail= and plane= from that <net>, or keep the NIC out of NCCL with NCCL_IB_HCA (ncclctl rails).'),
    ('NTH044', 'host-rail-ids-ignored', W,
     'rail/plane ids in a file for an NCCL before 2.30.7: ignored without a word, NCCL pairs NICs by name',
     'Target NCCL 2.30.7+ (--nccl-version), or drop rail= and plane= (ncclctl topo generate --nccl-version X '
     'writes what X reads) and keep rings in their rail with NCCL_CROSS_NIC=0 and one NIC order on every node.'),
    # --- XSD (schema.py) ------------------------------------------------------------------------------
    ('NTX090', 'xsd-mismatch', W,
     'structure does not match the XSD schema',
     'See the message; the schemas live in schemas/nccl-topo.xsd and schemas/nccl-graph.xsd.'),
    ('NTX091', 'xsd-skipped', I,
     'XSD validation skipped: a general XML parser cannot read this file',
     "Nothing to do if the NCCL-based findings are clean; NCCL's reader is more lenient than XML."),
)


def _what(title: str, context: str) -> str:
    return f"{title[0].upper()}{title[1:]} ({context})."


def _register(rule_id: str, slug: str, severity: Severity, title: str, fix: str) -> Rule:
    context, why, detect, module = _FAMILY_DOC[rule_id[:3]]
    extra = _EXTRA.get(rule_id, {})
    return table(rule_id, slug, severity, title, what=_what(title, context), why=extra.get("why", why),
                 detect=extra.get("detect", detect), fix=fix, checked_by=extra.get("checked_by", module),
                 graded=extra.get("graded"))


RULES: tuple[Rule, ...] = tuple(_register(*row) for row in _ROWS)
