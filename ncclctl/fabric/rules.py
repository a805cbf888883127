"""Rule ids of the fabric checks (``fabric load``, ``fabric rails``): the one table that names them.

Every fabric finding's ``subject`` is a file (the fabric file, or the inventory for hosts and LLDP data) and its
``line`` the line the evidence sits on, so text output reads ``FILE:LINE: severity: FABnnn: message`` and SARIF
points at the line. Messages start with the host and HCA they are about.

======  ========  =============================================================================================
id      severity  meaning
======  ========  =============================================================================================
FAB001  error     miscabled: a host's rail-k HCA reaches a switch other than the rail-k leaf of its group
FAB002  error     link down: the HCA is in the fabric (or the host's model) but its port has no link
FAB003  error     HCA absent: a rail HCA the host should have (rail table, or every other host) is not there
FAB004  error     link slower than expected (--expect-rate, else the fabric's majority); warning on switch links
FAB005  error     link narrower than expected (e.g. 2x instead of 4x); warning on switch links
FAB006  error     duplicate GUID: two node blocks (or two hosts' HCAs) carry the same GUID
FAB007  warning   unknown node description: an HCA that names no host (not "<host> <hca>", or not in the inventory)
FAB008  error     an inventory host has no HCA in the fabric
FAB009  warning   unexpected HCA: a linked HCA whose name is not a rail of the other hosts
FAB010  warning   links point at GUIDs the file does not describe (truncated output?)
FAB011  error     inconsistent link: the two ends of a link name different peers, or a port is listed twice
FAB012  error     duplicate node description: several HCAs claim the same host and HCA name
FAB013  info      not rail-optimized: one leaf serves several rails of a group (all rail checks still apply)
FAB014  warning   the fabric's HCA GUID differs from the GUID in the host's node model
======  ========  =============================================================================================
"""

from __future__ import annotations

from ncclctl.findings import Severity
from ncclctl.findings import TableRule as Rule

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO


_RULES: tuple[Rule, ...] = (
    Rule("FAB001", E, "miscabled: a rail HCA reaches a switch other than its group's leaf for that rail",
         "Move the cable to the expected leaf (swapped pairs usually need both cables of the host moved)."),
    Rule("FAB002", E, "link down: the HCA port has no link",
         "Check the cable and transceiver; ibstat on the host shows the port state."),
    Rule("FAB003", E, "HCA absent: a rail HCA of the host is not in the fabric",
         "Check that the HCA is seated and its driver loaded (ibstat), then rediscover the fabric."),
    Rule("FAB004", E, "link slower than expected",
         "Reseat or replace the cable/transceiver; check the port speed settings on the switch (mlxlink)."),
    Rule("FAB005", E, "link narrower than expected",
         "A lane is down or the cable is a split cable; reseat or replace it (mlxlink shows the lanes)."),
    Rule("FAB006", E, "duplicate GUID",
         "Two devices share a GUID (cloned firmware or VM images); give each a unique GUID."),
    Rule("FAB007", W, "unknown node description: the HCA names no known host",
         "Run rdma-ndd (node description '<hostname> <hca>') on every host, or add the host to the inventory."),
    Rule("FAB008", E, "inventory host missing from the fabric",
         "Check the host's cables and that its HCAs are up, or remove it from the inventory."),
    Rule("FAB009", W, "unexpected HCA: not one of the rails the other hosts have",
         "Check the host's HCA naming (udev rules) or give its node model in the inventory."),
    Rule("FAB010", W, "links point at GUIDs the file does not describe",
         "The output looks truncated; run ibnetdiscover again and keep the whole output."),
    Rule("FAB011", E, "inconsistent link ends",
         "The file was edited or merged from two discoveries; run ibnetdiscover again."),
    Rule("FAB012", E, "duplicate node description",
         "Set a unique node description per HCA: '<hostname> <hca>' (rdma-ndd does this)."),
    Rule("FAB013", I, "not rail-optimized: a leaf serves several rails of a group",
         "Nothing to fix if the fabric is meant to be top-of-rack; rail-pinned rings gain nothing here."),
    Rule("FAB014", W, "HCA GUID differs between the fabric and the host model",
         "The node description is stale or copied; re-run rdma-ndd, or refresh the host's snapshot."),
)

RULES: dict[str, Rule] = {r.id: r for r in _RULES}


def rule(rule_id: str) -> Rule:
    try:
        return RULES[rule_id]
    except KeyError:
        raise KeyError(f"no such fabric rule: {rule_id!r}") from None
