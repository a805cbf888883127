"""The fabric rules (``ncclctl fabric load``, ``fabric rails``), as table rows.

The checks stay where they are (:mod:`ncclctl.fabric.graph`, :mod:`ncclctl.fabric.layout` and the modules of its
steps, :mod:`ncclctl.fabric.sources`) and create findings by id through :func:`ncclctl.fabric.graph.finding`.

Every fabric finding's ``subject`` is a file (the fabric file, or the inventory for hosts and LLDP data) and its
``line`` the line the evidence sits on, so text output reads ``FILE:LINE: severity: FABnnn: message`` and SARIF
points at the line. Messages start with the host and HCA they are about.
"""

from __future__ import annotations

from ncclctl.findings import Severity
from ncclctl.registry import Rule, table

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

_GRAPH = "ncclctl/fabric/graph.py"
_LAYOUT = "ncclctl/fabric/layout.py"
_STRUCTURE = "ncclctl/fabric/structure.py"
_NUMBERING = "ncclctl/fabric/numbering.py"
_STRAYS = "ncclctl/fabric/strays.py"
_SOURCES = "ncclctl/fabric/sources.py"
_PLAN = "ncclctl/fabric/plan.py"

_WHY_RAIL = ("NCCL's rail-optimised rings and trees assume that every host's rail-k HCA reaches the rail-k leaf "
             "of its group at full rate. A link that breaks this turns a rail's traffic into spine crossings or "
             "drops the rail: collectives slow down to the worst link, and a missing HCA can make jobs fail to "
             "start or hang.")
_WHY_DATA = ("The rail checks can only judge what the discovery describes: HCAs that cannot be tied to a host and "
             "rail, or a discovery that is inconsistent, hide real cabling faults from them (and usually point at "
             "a host or switch that needs attention itself).")
_DETECT_LAYOUT = ("ncclctl fabric rails reads ibnetdiscover (with or without -p), iblinkinfo, or the hosts' LLDP "
                  "neighbours (RoCE), detects the rail layout from what most hosts do (which leaf serves which rail "
                  "of which group), and compares every host's HCA links with it (ncclctl/fabric/layout.py).")
_DETECT_GRAPH = ("ncclctl fabric load (and every fabric command) reads the discovery into a graph of switches, "
                 "HCAs and links and checks it while reading: GUIDs, node descriptions and both ends of every link "
                 "(ncclctl/fabric/graph.py).")

_WHY_PLAN = ("ncclctl fabric plan writes every host's nccl.conf and topo.xml and the host order from one fabric "
             "analysis, so that the rail ids NCCL is told agree across the fleet: a host left out, or with files that "
             "disagree, either runs without the plan (rings may cross rails) or makes NCCL's rail matching fail.")
_DETECT_PLAN = ("ncclctl fabric plan builds every file in memory from one fabric analysis, then reads them back: the "
                "NCCL_IB_HCA entries against topo.xml's <net> attributes and the fabric's leaf ids, the hostfile "
                "against the ring order (ncclctl/fabric/plan.py).")

# id, slug, severity, title, what it finds, fix, why, how detected, where the check lives, grading note
_ROWS: tuple[tuple[str, str, Severity, str, str, str, str, str, str, str | None], ...] = (
    ("FAB001", "fabric-miscabled", E, "miscabled: a rail HCA reaches a switch other than its group's leaf for that rail",
     "A host's rail-k HCA reaches a switch other than the rail-k leaf of its group.",
     "Move the cable to the expected leaf (swapped pairs usually need both cables of the host moved).",
     _WHY_RAIL, _DETECT_LAYOUT, _LAYOUT, None),
    ("FAB002", "fabric-link-down", E, "link down: the HCA port has no link",
     "The HCA is in the fabric (or the host's node model) but its port has no link.",
     "Check the cable and transceiver; ibstat on the host shows the port state.",
     _WHY_RAIL, _DETECT_LAYOUT, _LAYOUT, None),
    ("FAB003", "fabric-hca-absent", E, "HCA absent: a rail HCA of the host is not in the fabric",
     "A rail HCA the host should have (the rail table, or what every other host has) is not in the fabric.",
     "Check that the HCA is seated and its driver loaded (ibstat), then rediscover the fabric.",
     _WHY_RAIL, _DETECT_LAYOUT, _LAYOUT, None),
    ("FAB004", "fabric-link-slow", E, "link slower than expected",
     "An HCA link runs slower than expected: --expect-rate, else the rate most HCA links of the fabric have.",
     "Reseat or replace the cable/transceiver; check the port speed settings on the switch (mlxlink).",
     _WHY_RAIL, _DETECT_LAYOUT, _LAYOUT, "warning on switch-to-switch links"),
    ("FAB005", "fabric-link-narrow", E, "link narrower than expected",
     "An HCA link trained with fewer lanes than expected (for example 2x instead of 4x).",
     "A lane is down or the cable is a split cable; reseat or replace it (mlxlink shows the lanes).",
     _WHY_RAIL, _DETECT_LAYOUT, _LAYOUT, "warning on switch-to-switch links"),
    ("FAB006", "fabric-duplicate-guid", E, "duplicate GUID",
     "Two node blocks of the discovery, or two hosts' HCAs, carry the same GUID.",
     "Two devices share a GUID (cloned firmware or VM images); give each a unique GUID.",
     "The subnet manager routes by GUID and LID: two devices with one GUID get one of them unreachable or "
     "misrouted, and the rail checks cannot tell which cable belongs to which host.", _DETECT_GRAPH, _GRAPH, None),
    ("FAB007", "fabric-unknown-node", W, "unknown node description: the HCA names no known host",
     "An HCA whose node description names no host (not '<host> <hca>', or a host not in the inventory).",
     "Run rdma-ndd (node description '<hostname> <hca>') on every host, or add the host to the inventory.",
     _WHY_DATA, _DETECT_GRAPH, _GRAPH, None),
    ("FAB008", "fabric-host-missing", E, "inventory host missing from the fabric",
     "A host of the inventory has no HCA in the fabric (or no LLDP neighbour data).",
     "Check the host's cables and that its HCAs are up, or remove it from the inventory.",
     _WHY_RAIL, "ncclctl compares the inventory's hosts with the hosts the fabric's node descriptions (or LLDP "
     "data) name (ncclctl/fabric/sources.py).", _SOURCES, None),
    ("FAB009", "fabric-unexpected-hca", W, "unexpected HCA: not one of the rails the other hosts have",
     "A linked HCA whose name is not one of the rails the other hosts have.",
     "Check the host's HCA naming (udev rules) or give its node model in the inventory.",
     _WHY_DATA, _DETECT_LAYOUT, _STRUCTURE, None),
    ("FAB010", "fabric-dangling-links", W, "links point at GUIDs the file does not describe",
     "Links of the discovery point at GUIDs that no node block of the file describes.",
     "The output looks truncated; run ibnetdiscover again and keep the whole output.",
     _WHY_DATA, _DETECT_GRAPH, _GRAPH, None),
    ("FAB011", "fabric-inconsistent-link", E, "inconsistent link ends",
     "The two ends of a link name different peers, or a port is listed twice.",
     "The file was edited or merged from two discoveries; run ibnetdiscover again.",
     _WHY_DATA, _DETECT_GRAPH, _GRAPH, None),
    ("FAB012", "fabric-duplicate-node-desc", E, "duplicate node description",
     "Several HCAs claim the same host and HCA name in their node descriptions.",
     "Set a unique node description per HCA: '<hostname> <hca>' (rdma-ndd does this).",
     _WHY_DATA, _DETECT_GRAPH, _GRAPH, None),
    ("FAB013", "fabric-not-rail-optimized", I, "not rail-optimized: a leaf serves several rails of a group",
     "One leaf serves several rails of a group (a top-of-rack design); all rail checks still apply.",
     "Nothing to fix if the fabric is meant to be top-of-rack; rail-pinned rings gain nothing here.",
     "Rail-pinned rings and NCCL's PXN assume one leaf per rail; on a top-of-rack fabric they gain nothing, "
     "and host orders or graph files made for rails do not apply.", _DETECT_LAYOUT, _LAYOUT, None),
    ("FAB014", "fabric-guid-mismatch", W, "HCA GUID differs between the fabric and the host model",
     "The HCA GUID in the fabric differs from the GUID in the host's node model (snapshot).",
     "The node description is stale or copied; re-run rdma-ndd, or refresh the host's snapshot.",
     _WHY_DATA, "With an inventory that names the hosts' snapshots or models, ncclctl compares each host's HCA "
     "GUIDs with the fabric's (ncclctl/fabric/graph.py).", _GRAPH, None),
    ("FAB015", "fabric-host-not-in-layout", I, "host not in the rail layout (a management host?): left out of the order",
     "A host whose HCAs do not form the rail pattern of the compute hosts: fewer HCAs than half the rails, HCAs named "
     "unlike its group's hosts, or HCAs on spine switches only (a UFM server, a login or head node).",
     "Nothing to fix for a management host. A compute host reported here has lost most of its HCAs, or is named "
     "unlike its peers: list it in an inventory to have it checked as a compute host.",
     "Judging a management host as a miscabled compute host gives false cabling errors, and putting it into a ring "
     "order, a hostfile or a Slurm topology schedules jobs on a host that cannot run them.",
     _DETECT_LAYOUT, _LAYOUT, None),
    ("FAB016", "fabric-unnamed-host", W, "host without a name: its HCAs carry no '<hostname> <hca>' description",
     "The HCAs at one host position of a group (one port on each of its rail leaves) carry the adapter's default "
     "description or name 'localhost': a host whose rdma-ndd has not set its node descriptions.",
     "Set the hostname, then restart rdma-ndd on that host (it writes '<hostname> <hca>' into every HCA's node "
     "description), and rediscover the fabric.",
     "A host the fabric cannot name cannot be checked, ordered or scheduled: it silently drops out of the rings, the "
     "hostfile and the Slurm topology.", _DETECT_LAYOUT, _STRAYS, None),
    ("FAB017", "fabric-leaf-missing", E, "leaf missing: most hosts of a group have no link on one rail",
     "Most hosts of a group (two or more) have no link on one rail: the group's leaf for that rail is missing from "
     "the fabric or down. One finding names the position (group, rail, the name the leaf would have) and the hosts.",
     "Check the leaf switch of that rail and group (power, management, its links) before the hosts' HCAs.",
     _WHY_RAIL, _DETECT_LAYOUT, _LAYOUT, None),
    ("FAB018", "fabric-name-mismatch", W, "name mismatch: a switch or host named for another rail or group",
     "The fabric's names number rails and groups (IBLEAF-04-02, g003-rail1, dgx-02-c01); a leaf named for one rail "
     "or group serves another, or a host named for one group is cabled into another.",
     "Relabel the switch or host, or move its cables to where its name says it belongs.",
     "Names are what people cable and debug by: a switch whose name says rail 3 while it carries rail 5 sends every "
     "repair to the wrong place.", _DETECT_LAYOUT, _NUMBERING, None),
    ("FAB019", "fabric-filtered-capture", W, "filtered capture: port lines without their node headers",
     "The iblinkinfo output lost its 'Switch:'/'CA:' headers (it went through grep, e.g. 'iblinkinfo | grep Up'): "
     "the ports it lists are read, switches are named by their LID, and what the filter dropped is unknown.",
     "Capture the whole output (iblinkinfo > fabric.txt, or iblinkinfo --line) and filter afterwards.",
     _WHY_DATA, _DETECT_GRAPH, "ncclctl/parsers/iblinkinfo.py", None),
    ("FAB020", "fabric-back-to-back", W, "HCA cabled straight to another HCA, with no switch between",
     "A rail HCA whose link goes to another HCA (two hosts cabled back to back, a lab set-up) instead of a leaf.",
     "Nothing to fix for a two-host lab set-up; in a cluster, cable the HCA to its rail's leaf.",
     "A back-to-back link reaches one host only: NCCL can use it between those two hosts, but the rail is cut off "
     "from the rest of the fabric.", _DETECT_LAYOUT, _LAYOUT, None),
    ("FAB021", "fabric-plan-no-node", W, "plan: a fabric host has no snapshot or model in the inventory, so no files",
     "A host the fabric names (an HCA description '<host> <hca>') is not in the inventory: ncclctl fabric plan has no "
     "snapshot or node model for it, writes no nccl.conf or topo.xml for it and leaves it out of the host order.",
     "Add the host to the inventory with its snapshot (ncclctl snapshot) or node model, or ignore it if it is not a "
     "compute host.",
     _WHY_PLAN, _DETECT_PLAN, _PLAN, None),
    ("FAB022", "fabric-plan-host-left-out", W, "plan: a host is not in the rail layout, so no files",
     "A host of the inventory (or the fabric) that the rail layout leaves out: not in the fabric, no linked rail HCA, "
     "not a compute host, an unnamed host position, or its files could not be generated: ncclctl fabric plan writes "
     "no per-host files for it and it is not in the hostfile.",
     "Nothing to do for a management host not in the inventory; otherwise fix what the message names (cabling, "
     "node descriptions, the host's snapshot, a host without GPUs in the inventory), then plan again.",
     _WHY_PLAN, _DETECT_PLAN, _PLAN,
     "error when the host is in the hostfile without files; info for a management host the inventory leaves out"),
    ("FAB023", "fabric-plan-inconsistent", E, "plan: a host's files disagree with each other or with the fabric",
     "The rail/plane ids of a host's NCCL_IB_HCA (nccl.conf) differ from the rail=/plane= of its topo.xml or from "
     "the leaf its port lands on, a file carries ids the other lacks, or the hostfile order is not the fabric's ring "
     "order.",
     "A bug in ncclctl when the inputs did not change between the files: report it. A rail port missing from "
     "topo.xml (warning) has no active port on the host: bring the port up.",
     _WHY_PLAN, _DETECT_PLAN, _PLAN, "warning when a port is in one file only"),
    ("FAB024", "fabric-plan-ids-not-fleet", W, "plan: a host's rail ids are not from the fleet's source",
     "The fabric (or rail map) does not place every rail port of the host, so its ids fall back to its local PCIe "
     "order, a per-node guess that is not written: its files carry no rail/plane ids while the other hosts' do.",
     "Fix the host's cabling or the rail map (ncclctl fabric rails shows where its ports land), then plan again.",
     _WHY_PLAN, _DETECT_PLAN, _PLAN, None),
    ("FAB025", "fabric-plan-old-nccl", I, "plan: the target NCCL reads no rail/plane ids",
     "The --nccl-version is older than 2.30.7: the files keep today's forms (NCCL_IB_HCA without rail:plane, no "
     "rail=/plane= attributes, no NCCL_NET_MERGE_POLICY=RAIL) and NCCL cannot keep rings within rails by id.",
     "Plan for NCCL 2.30.7 or later when the cluster runs it.",
     _WHY_PLAN, _DETECT_PLAN, _PLAN, None),
    ("FAB026", "fabric-plan-stale", W, "plan: the output folder holds host folders this plan does not write",
     "DIR/hosts/ holds a folder for a host that is not in this plan (left from an earlier plan, or put there by "
     "hand); ncclctl never deletes it.",
     "Remove the folder (and stop deploying its files) when the host left the plan.",
     _WHY_PLAN, _DETECT_PLAN, _PLAN, None),
)

RULES: tuple[Rule, ...] = tuple(
    table(rule_id, slug, severity, title, what=what, why=why, detect=detect, fix=fix, checked_by=module, graded=graded)
    for rule_id, slug, severity, title, what, fix, why, detect, module, graded in _ROWS
)
