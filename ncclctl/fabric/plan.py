"""``ncclctl fabric plan``: every host's NCCL files and the host order from one fabric analysis.

One :func:`ncclctl.fabric.layout.analyze` of the fabric (the inventory's, or ``--fabric``) drives everything:

* the rail/plane ids of each host's rail ports (:func:`ncclctl.plan.railids.resolve`: the fabric's leaf ids, else
  the rail map, else a per-node PCIe guess that is not written), the same leaf giving the same id on every host;
* per host ``hosts/<host>/nccl.conf`` (what ``conf generate`` writes: :func:`ncclctl.plan.confgen.plan_conf` and
  ``render``) and ``hosts/<host>/topo.xml`` (what ``topo generate`` writes: :func:`ncclctl.nccl.detect.generate_for`);
* ``hostfile`` and ``topology.conf`` (Slurm topology/tree), exactly as ``fabric order --format hostfile|slurm``
  writes them (:func:`ncclctl.fabric.order.plan_order`, ``render_order``);
* ``plan.json``: the manifest (hosts, their ids and source, the files with their SHA-256, the hosts left out and
  why, the findings).

The layout check's own findings (miscabling, down links: ``fabric rails`` reports them) are counted in the summary
and the manifest, not reported again. Files are made only for the hosts of the ring order (inventory hosts the
layout places). Every other host the inventory or the fabric names is listed in the manifest with why and reported
(FAB021, FAB022). Before anything is
written the plan reads its own files back (:func:`check_plan`): each host's NCCL_IB_HCA rail/plane ids against its
topo.xml ``<net rail= plane=>`` and against the fabric, the hostfile against the ring order (FAB023).

Writing (:func:`write_plan`): every file atomically and only when its bytes change (:func:`ncclctl.fileio.emit`:
a re-run that changes nothing rewrites nothing and keeps the mtimes); the manifest holds nothing that depends on
the run (no time, no change status), so the same inputs give byte-identical files. The output folder is the plan's:
ncclctl writes into an empty or missing folder, or one holding an earlier plan (its ``plan.json``); a folder with
anything else needs ``--force``, and even then only the plan's own files are written and nothing is deleted. No
symlinked ``hosts`` folder or host folder is written through, and every component of the output path is checked
for links another user planted (the protected-symlinks rule of :func:`ncclctl.fileio.resolve_target`) before
anything is created.

One transaction: a new plan folder is written whole into a temp folder beside it (``.NAME.XXXX.tmp``) and renamed
in, so a kill leaves no plan folder rather than part of one; an existing one that changes first gets a
``plan.json`` saying ``incomplete`` (the last file written replaces it with the manifest), so a kill leaves a plan
that says it is not finished, not old and new files side by side.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ncclctl.errors import InputError, UsageError
from ncclctl.fabric.graph import finding
from ncclctl.findings import Finding, Severity
from ncclctl.nccl.version import Version
from ncclctl.nccl.railids import RailId, RailIds

if TYPE_CHECKING:
    from ncclctl.fabric.layout import Layout
    from ncclctl.fabric.order import Order

#: What ``plan.json`` says wrote it; a folder whose plan.json says this is a plan's folder.
GENERATOR = "ncclctl fabric plan"
MANIFEST = "plan.json"
HOSTFILE = "hostfile"
TOPOLOGY_CONF = "topology.conf"
HOSTS_DIR = "hosts"
CONF_NAME = "nccl.conf"
TOPO_NAME = "topo.xml"
#: The names a plan owns at the top of its folder.
OWNED = (MANIFEST, HOSTFILE, TOPOLOGY_CONF, HOSTS_DIR)


@dataclass
class HostEntry:
    """One host the inventory or the fabric names: planned (files) or left out (why)."""

    host: str
    #: planned, not-in-inventory, not-in-fabric, no-rail-link, not-compute, not-in-order, unnamed, failed
    status: str
    why: str = ""
    ids: RailIds | None = None
    #: the ids are written into the files (fleet ids and NCCL 2.30.7+)
    written: bool = False
    #: relative paths of its files
    files: list[str] = field(default_factory=list)
    settings: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def doc(self) -> dict:
        d: dict = {"host": self.host, "status": self.status}
        if self.why:
            d["why"] = self.why
        if self.ids is not None:
            d["rail_ids"] = {"source": self.ids.source, "detail": self.ids.detail, "written": self.written,
                             "rail_only_fabric": self.ids.rail_only,
                             "ports": {k: {"rail": v.rail, "plane": v.plane} for k, v in sorted(self.ids.ids.items())}}
        if self.files:
            d["files"] = list(self.files)
        if self.settings:
            d["settings"] = dict(self.settings)
        if self.notes:
            d["notes"] = list(self.notes)
        return d


@dataclass
class FabricPlan:
    inventory: str
    fabric: str
    version: Version
    lay: "Layout"
    order: "Order"
    hosts: list[HostEntry]
    #: relative path -> bytes, in writing order (per-host files, hostfile, topology.conf; plan.json last)
    files: dict[str, bytes]
    findings: list[Finding]
    notes: list[str] = field(default_factory=list)

    @property
    def fabric_findings(self) -> dict[str, int]:
        """The layout check's findings (``fabric rails`` reports them), counted by rule id."""
        out: dict[str, int] = {}
        for f in self.lay.findings:
            out[f.rule] = out.get(f.rule, 0) + 1
        return dict(sorted(out.items()))

    @property
    def planned(self) -> list[HostEntry]:
        return [h for h in self.hosts if h.status == "planned"]

    @property
    def left_out(self) -> list[HostEntry]:
        return [h for h in self.hosts if h.status != "planned"]


# ---------------------------------------------------------------------------------------------------------------
# Building


def plan_fabric(inventory: str, fabric_file: str | None = None, *, nccl_version: Version, rail_map: str | None = None,
                topo_file: str | None = None) -> FabricPlan:
    """Read the inventory (and the fabric: ``fabric_file``, else the inventory's), analyse it once, build the plan."""
    from ncclctl.fabric.layout import analyze
    from ncclctl.fabric.sources import load_input

    inp = load_input(fabric_file, inventory, keep_nodes=True)
    return build_plan(inp, analyze(inp), nccl_version=nccl_version, rail_map=rail_map, topo_file=topo_file)


def build_plan(inp, lay, *, nccl_version: Version, rail_map: str | None = None,
               topo_file: str | None = None) -> FabricPlan:
    """The plan from one analysed fabric (``inp`` loaded with ``keep_nodes=True``, ``lay`` its layout)."""
    from ncclctl.fabric.order import plan_order, render_order
    from ncclctl.plan import confgen
    from ncclctl.nccl.railids import RAIL_IDS_SINCE, emit_note, written
    from ncclctl.plan.railids import fabric_host_ids, fabric_rail_only, load_rail_map, resolve
    from ncclctl.plan.rails import plan_rails
    from ncclctl.names import natural_key
    from ncclctl.nccl.detect import generate_for

    if inp.inventory_path is None or inp.hosts is None:
        raise UsageError("fabric plan needs an inventory (--inventory INV): the hosts' snapshots or node models",
                         fix="see schemas/inventory.schema.json")
    if topo_file is not None and not topo_file.startswith("/"):
        raise UsageError(f"--topo-file {topo_file!r} is relative: NCCL opens it from each job's working folder",
                         fix="give an absolute path, e.g. /etc/nccl-topo.xml")
    inv = inp.inventory_path
    source = lay.graph.source
    order = plan_order(lay)
    if not order.hosts:
        raise InputError(f"no host of the inventory is in the rail layout of the fabric {source} (of {len(inp.hosts)} "
                         f"inventory host(s), {sum(1 for h in inp.hosts if h in inp.endpoints)} in the fabric): "
                         "nothing to plan", path=inv,
                         fix="give the fabric of these hosts (--fabric FILE); 'ncclctl fabric rails --inventory INV' "
                             "shows what the fabric holds")
    fab_ids = fabric_host_ids(lay)
    rail_only = fabric_rail_only(lay)
    rmap = load_rail_map(rail_map) if rail_map is not None else None
    findings: list[Finding] = []
    notes: list[str] = []
    files: dict[str, bytes] = {}
    entries: list[HostEntry] = []

    def inv_line(h: str) -> int | None:
        info = inp.hosts.get(h)
        return info.line if info is not None else None

    # planned hosts: the ring order
    for h in order.hosts:
        node = inp.nodes.get(h)
        if node is None:  # every layout host is an inventory host; a node that was not kept is a bug
            raise AssertionError(f"no node kept for {h}")
        if not node.gpus:
            why = "not a compute host: its node has no GPUs"
            entries.append(HostEntry(h, "not-compute", why))
            findings.append(finding("FAB022", f"{h}: {why}: no nccl.conf/topo.xml, but it is in the hostfile (the "
                                              "fabric order takes every inventory host the layout places): remove "
                                              "it from the inventory", subject=inv, line=inv_line(h), host=h,
                                    severity=Severity.ERROR))
            continue
        ids = resolve(node, plan_rails(node), host=h, fabric=fab_ids, fabric_label=source, rail_map=rmap,
                      rail_only=rail_only)
        entry = HostEntry(h, "planned", ids=ids, written=written(ids, nccl_version) is not None)
        try:
            cplan = confgen.plan_conf(node, topo_file=topo_file, nccl_version=nccl_version, rail_ids=ids)
            conf = confgen.render(cplan, nccl_version=nccl_version)
            topo, _layout, message = generate_for(node, nccl_version=nccl_version, rail_ids=ids)
        except InputError as exc:
            entry.status, entry.why = "failed", f"its files could not be generated: {exc.message}"
            entry.ids, entry.written = None, False
            findings.append(finding("FAB022", f"{h}: {entry.why}; no files written for it (it stays in the "
                                              "hostfile: the fabric order is the fabric's)", subject=inv,
                                    line=inv_line(h), host=h, severity=Severity.ERROR))
            entries.append(entry)
            continue
        entry.settings = {s.name: s.value for s in cplan.settings}
        entry.notes = [*cplan.warnings, *([message] if message else [])]
        base = f"{HOSTS_DIR}/{h}"
        files[f"{base}/{CONF_NAME}"] = conf
        files[f"{base}/{TOPO_NAME}"] = topo
        entry.files = [f"{base}/{CONF_NAME}", f"{base}/{TOPO_NAME}"]
        if ids.ids and not ids.fleet:
            findings.append(finding(
                "FAB024", f"{h}: rail ids from the local PCIe order ("
                          + ("; ".join(ids.notes) or "no fleet source covers its rail ports")
                          + "): its files carry no rail/plane ids", subject=inv, line=inv_line(h), host=h))
        entries.append(entry)

    # hosts left out, each with why
    in_order = set(order.hosts)
    unplaced, outside = set(lay.unplaced), dict(lay.outside)
    for h in sorted(inp.hosts, key=natural_key):
        if h in in_order:
            continue
        if h not in inp.endpoints:
            st, why = "not-in-fabric", "not in the fabric (no HCA of it in the discovery)"
        elif h in unplaced:
            st, why = "no-rail-link", "no linked rail HCA"
        elif h in outside:
            st, why = "not-compute", f"not a compute host ({outside[h]})"
        else:
            st, why = "not-in-order", "not in the fabric's ring order"
        entries.append(HostEntry(h, st, why))
        findings.append(finding("FAB022", f"{h}: {why}: no nccl.conf/topo.xml, not in the hostfile", subject=inv,
                                line=inv_line(h), host=h))
    strangers: dict[str, list] = {}
    for u in inp.unknown:
        if u.why == "not-inventory":
            strangers.setdefault(u.desc.split()[0], []).append(u)
    level = lay.graph.layers()
    for h in sorted(strangers, key=natural_key):
        hcas = strangers[h]
        line = hcas[0].line
        reached = [link[0] for u in hcas for p in (1, 2) if (link := lay.graph.hca_links.get((u.guid, p)))]
        if 2 * len(hcas) <= lay.rails or (reached and all(level.get(sw, 0) != 1 for sw in reached)):
            why = (f"not a compute host: {len(hcas)} HCA(s) where the compute hosts have {lay.rails}"
                   + ("" if not reached or any(level.get(sw, 0) == 1 for sw in reached) else ", on spine switches")
                   + "; not in the inventory")
            entries.append(HostEntry(h, "not-compute", why))
            findings.append(finding("FAB022", f"{h}: {why}: no nccl.conf/topo.xml, not in the hostfile",
                                    subject=source, line=line, host=h, severity=Severity.INFO))
            continue
        entries.append(HostEntry(h, "not-in-inventory", "named by the fabric, no snapshot or model in the inventory"))
        findings.append(finding("FAB021", f"{h}: in the fabric, but no snapshot or model in the inventory {inv}: no "
                                          "nccl.conf/topo.xml, not in the hostfile", subject=source, line=line,
                                host=h))
    for u in lay.unnamed:
        name = f"unnamed ({u['group']} port {u['port']})"
        entries.append(HostEntry(name, "unnamed", "its HCAs carry no host name (FAB016)"
                                 + (f"; probably {u['likely']}" if u.get("likely") else "")))
        findings.append(finding("FAB022", f"{name}: a host position without a name: no files, not in the hostfile",
                                subject=source, line=u.get("line"), host=u.get("likely")))

    if nccl_version < RAIL_IDS_SINCE:
        sample = next((e.ids for e in entries if e.ids is not None and e.ids.fleet and e.ids.ids), None)
        old = emit_note(sample, nccl_version) if sample is not None else None
        if old:
            notes.append(old)
            findings.append(finding("FAB025", old, subject=inv))

    files[HOSTFILE] = render_order(order, lay, "hostfile").encode()
    files[TOPOLOGY_CONF] = render_order(order, lay, "slurm").encode()
    plan = FabricPlan(inventory=inv, fabric=source, version=nccl_version, lay=lay, order=order, hosts=entries,
                      files=files, findings=findings, notes=notes)
    findings.extend(check_plan(plan, fab_ids))
    files[MANIFEST] = manifest_bytes(plan)
    return plan


# ---------------------------------------------------------------------------------------------------------------
# The consistency check: the files read back


def conf_ids(conf: bytes) -> dict[str, RailId | None]:
    """``"mlx5_0:1"`` -> the rail/plane its NCCL_IB_HCA entry gives (None: the entry gives none); the conf file
    and the value read as NCCL reads them (the last NCCL_IB_HCA line wins)."""
    from ncclctl.nccl.lists import parse_ib_hca
    from ncclctl.nccl.settings import read_conf

    value = None
    for line in read_conf(conf.decode("utf-8", "replace"), "nccl.conf"):
        if line.name == "NCCL_IB_HCA":
            value = line.value
    out: dict[str, RailId | None] = {}
    for e in parse_ib_hca(value or "").entries:
        out[f"{e.name}:{e.port if e.port is not None else 1}"] = (RailId(e.rail, e.plane) if e.rail is not None
                                                                   else None)
    return out


def topo_ids(topo: bytes) -> dict[str, RailId | None]:
    """``"mlx5_0:1"`` -> the ``rail=``/``plane=`` of its ``<net>`` in a topology file (None: none given), read by
    the project's one NCCL XML reader."""
    from ncclctl.nccl.xml import parse_nccl_xml

    res = parse_nccl_xml(topo, kind="topology")
    out: dict[str, RailId | None] = {}
    if res.root is None:
        return out
    for net in res.root.iter():
        if net.name != "net":
            continue
        key = f"{net.get('name')}:{net.get('port') or 1}"
        rail, plane = net.get("rail"), net.get("plane")
        out[key] = RailId(int(rail), int(plane) if plane is not None else None) if rail is not None else None
    return out


def _fmt(rid: RailId | None) -> str:
    if rid is None:
        return "no ids"
    return f"rail {rid.rail}" + ("" if rid.plane is None else f" plane {rid.plane}")


def check_plan(plan: FabricPlan, fabric_ids: dict[str, dict[str, RailId]]) -> list[Finding]:
    """FAB023: each planned host's NCCL_IB_HCA ids against its topo.xml and the fabric; the hostfile against the
    ring order. Read from the bytes that will be written."""
    out: list[Finding] = []
    for e in plan.planned:
        conf_path, topo_path = e.files
        c = conf_ids(plan.files[conf_path])
        t = topo_ids(plan.files[topo_path])
        assert e.ids is not None
        fab = fabric_ids.get(e.host) or {}
        for key in sorted(e.ids.ids):
            want = e.ids.ids[key] if e.written else None
            got_c, got_t = c.get(key), t.get(key)
            where = f"{e.host} {key}"
            if key not in c:
                out.append(finding("FAB023", f"{where}: rail port missing from NCCL_IB_HCA in {conf_path}",
                                   subject=conf_path, host=e.host))
                continue
            if key not in t:
                out.append(finding("FAB023", f"{where}: in NCCL_IB_HCA but no <net> in {topo_path} (no active port?)",
                                   subject=topo_path, host=e.host, severity=Severity.WARNING))
            elif got_c != got_t:
                out.append(finding("FAB023", f"{where}: NCCL_IB_HCA says {_fmt(got_c)}, {topo_path} says "
                                             f"{_fmt(got_t)}", subject=topo_path, host=e.host))
            if got_c != want:
                out.append(finding("FAB023", f"{where}: NCCL_IB_HCA says {_fmt(got_c)}, the plan's ids are "
                                             f"{_fmt(want)}", subject=conf_path, host=e.host))
            if e.written and e.ids.source == "fabric" and fab.get(key) != got_c:
                out.append(finding("FAB023", f"{where}: NCCL_IB_HCA says {_fmt(got_c)}, the leaf it lands on is "
                                             f"{_fmt(fab.get(key))}", subject=conf_path, host=e.host))
    hosts = [ln.split()[0] for ln in plan.files[HOSTFILE].decode().splitlines() if ln.strip()]
    if hosts != list(plan.order.hosts):
        out.append(finding("FAB023", f"{HOSTFILE}: the host order is not the fabric's ring order", subject=HOSTFILE))
    return out


# ---------------------------------------------------------------------------------------------------------------
# The manifest


def manifest(plan: FabricPlan) -> dict:
    """plan.json: nothing in it depends on the run (no time, no change status), so re-runs are byte-identical."""
    from ncclctl import JSON_SCHEMA_VERSION

    files = [{"path": p, "bytes": len(d), "sha256": hashlib.sha256(d).hexdigest()}
             for p, d in plan.files.items() if p != MANIFEST]
    lay = plan.lay
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "generator": GENERATOR,
        "inventory": plan.inventory,
        "fabric": plan.fabric,
        "nccl_version": str(plan.version),
        "rails": lay.rails,
        "order": list(plan.order.hosts),
        "slots": plan.order.slots,
        "rail_id_sources": sorted({e.ids.source for e in plan.planned if e.ids is not None}),
        "hosts": [e.doc() for e in plan.hosts],
        "left_out": [{"host": e.host, "status": e.status, "why": e.why} for e in plan.left_out],
        "files": files,
        "notes": list(plan.notes),
        "fabric_findings": plan.fabric_findings,
        "findings": [{**f.to_dict(), "host": f.host} for f in plan.findings],
    }


def manifest_bytes(plan: FabricPlan) -> bytes:
    return (json.dumps(manifest(plan), indent=2, sort_keys=False, ensure_ascii=False) + "\n").encode()


# ---------------------------------------------------------------------------------------------------------------
# Writing


@dataclass
class WriteOutcome:
    #: (relative path, "created" | "changed" | "unchanged"), in writing order
    files: list[tuple[str, str]]
    #: host folders under hosts/ this plan does not write (never deleted)
    stale: list[str]
    findings: list[Finding]
    check: bool = False

    @property
    def unchanged(self) -> bool:
        return all(s == "unchanged" for _, s in self.files)

    def counts(self) -> dict[str, int]:
        out = {"created": 0, "changed": 0, "unchanged": 0}
        for _, s in self.files:
            out[s] += 1
        return out


def _is_plan_manifest(path: str) -> bool:
    """A plan.json this command wrote: its second key names the generator (read from the head only: a manifest of
    a large fleet is tens of MB)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return False
            head = fh.read(256)
    except OSError:
        return False
    return head.startswith(b"{\n") and f'\n  "generator": {json.dumps(GENERATOR)},\n'.encode() in head


_TEMP = re.compile(r"^\.(?:plan\.json|hostfile|topology\.conf)\.[A-Za-z0-9_]+\.tmp$")


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise InputError(f"cannot look at this path: {exc.strerror}", path=path,
                         fix="run with the rights to read it, or choose another output folder") from None


def _own_folder(path: str, what: str) -> bool:
    """True when ``path`` is a real folder, False when it does not exist; refuses a symlink or a non-folder."""
    st = _lstat(path)
    if st is None:
        return False
    if stat.S_ISLNK(st.st_mode):
        raise InputError(f"{what} is a symlink (to {os.readlink(path)}): the plan's files would be written outside "
                         "the output folder", path=path, fix="remove the link (or give another output folder)")
    if not stat.S_ISDIR(st.st_mode):
        raise InputError(f"{what} is not a folder", path=path, fix="remove it, or give another output folder")
    return True


def check_out_dir(out_dir: str, plan: FabricPlan, *, force: bool = False) -> list[str]:
    """Refuse an output folder the plan may not write into (see the module doc); the stale host folders."""
    if not out_dir or "\0" in out_dir:
        raise UsageError("-o: give the output folder", fix="e.g. -o plan/")
    from ncclctl.fileio import resolve_target

    # Every component of the path, the folder itself included, looked at before anything is created: a link
    # another user planted in a sticky folder (/tmp/plan -> /etc/x) is refused here, not after folders were made
    # inside its target.
    resolve_target(out_dir, follow=True)
    st = _lstat(out_dir)
    if st is not None and not os.path.isdir(out_dir):
        raise InputError("the output folder is a file (or a link to one)", path=out_dir,
                         fix="give a folder (it is created when missing)")
    if st is None:
        parent = os.path.dirname(os.path.abspath(out_dir))
        if not os.path.isdir(parent):
            raise InputError("the folder that would hold the output folder does not exist", path=parent,
                             fix="create it first, or give another output folder")
        return []
    try:
        names = sorted(os.listdir(out_dir))
    except OSError as exc:
        raise InputError(f"cannot read the output folder: {exc.strerror}", path=out_dir,
                         fix="run with the rights to read and write it") from None
    ours = _is_plan_manifest(os.path.join(out_dir, MANIFEST))
    foreign = [n for n in names if not ours or (n not in OWNED and not _TEMP.match(n))]
    if foreign and not force:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise InputError(f"the output folder holds files that are not an ncclctl fabric plan's ({shown})",
                         path=out_dir, fix="give an empty or new folder, or --force to write the plan's files there "
                                           "(nothing else is touched or deleted)")
    hosts_dir = os.path.join(out_dir, HOSTS_DIR)
    stale: list[str] = []
    if _own_folder(hosts_dir, f"{HOSTS_DIR}/"):
        planned = {e.host for e in plan.planned}
        for name in sorted(os.listdir(hosts_dir)):
            if name in planned:
                _own_folder(os.path.join(hosts_dir, name), f"{HOSTS_DIR}/{name}/")
            else:
                stale.append(name)
    return stale


def write_plan(plan: FabricPlan, out_dir: str, *, force: bool = False, check: bool = False) -> WriteOutcome:
    """Write the plan's files under ``out_dir``: atomic, only on change, the manifest last. ``check``: report
    what would change, write nothing."""
    from ncclctl.fileio import emit
    from ncclctl.names import natural_key

    stale = check_out_dir(out_dir, plan, force=force)
    for e in plan.planned:
        if e.host in (".", "..") or "/" in e.host or "\0" in e.host:  # inventory names cannot be; defence
            raise InputError(f"host name {e.host!r} cannot be a folder name", path=plan.inventory,
                             fix="use the host's short name")
    findings = [finding("FAB026", f"{HOSTS_DIR}/{name}/: not a host of this plan (left from an earlier plan?); "
                                  "not deleted", subject=out_dir, host=name)
                for name in sorted(stale, key=natural_key)]
    if not check and _lstat(out_dir) is None:  # a new folder: built beside it and renamed in, whole or not at all
        return WriteOutcome(files=_write_new(plan, out_dir), stale=stale, findings=findings, check=check)
    if not check:
        if any(not _holds(os.path.join(out_dir, *rel.split("/")), data) for rel, data in plan.files.items()):
            # plan.json says the folder is being written until the last file is: a kill in between leaves a
            # plan that says it is incomplete, not old and new files side by side and nothing to tell them apart
            emit(os.path.join(out_dir, MANIFEST), incomplete_manifest(plan))
        _make_folders(plan, out_dir)
    results: list[tuple[str, str]] = []
    for rel, data in plan.files.items():
        path = os.path.join(out_dir, *rel.split("/"))
        if check and not os.path.isdir(os.path.dirname(path)):
            results.append((rel, "created"))
            continue
        r = emit(path, data, check=check)
        results.append((rel, "unchanged" if not r.changed else "created" if r.created else "changed"))
    return WriteOutcome(files=results, stale=stale, findings=findings, check=check)


def _make_folders(plan: FabricPlan, out_dir: str) -> None:
    _mkdir(out_dir)
    _mkdir(os.path.join(out_dir, HOSTS_DIR))
    for e in plan.planned:
        d = os.path.join(out_dir, HOSTS_DIR, e.host)
        _mkdir(d)
        _own_folder(d, f"{HOSTS_DIR}/{e.host}/")  # a link planted between the check and now


def _holds(path: str, data: bytes) -> bool:
    """Whether the regular file ``path`` (not a link) holds exactly ``data``."""
    st = _lstat(path)
    if st is None or not stat.S_ISREG(st.st_mode) or st.st_size != len(data):
        return False
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as fh:
            return fh.read(len(data) + 1) == data
    except OSError:
        return False


def incomplete_manifest(plan: FabricPlan) -> bytes:
    """plan.json while the plan's files are being written: the manifest with ``incomplete`` after the generator
    (so the folder is still known as a plan's); the last file written replaces it with the manifest."""
    doc = manifest(plan)
    doc = {**{k: doc[k] for k in ("schema_version", "generator")},
           "incomplete": "ncclctl fabric plan started writing this folder and has not finished (or was stopped): "
                         "some files may be old, some new; run the same 'ncclctl fabric plan' again",
           **{k: v for k, v in doc.items() if k not in ("schema_version", "generator")}}
    return (json.dumps(doc, indent=2, sort_keys=False, ensure_ascii=False) + "\n").encode()


def _write_new(plan: FabricPlan, out_dir: str) -> list[tuple[str, str]]:
    """Write a new plan folder as one step: every file into a temp folder beside it (``.NAME.XXXX.tmp``), then
    one rename. A kill leaves no plan folder (at most the temp folder), never part of one."""
    import shutil
    import tempfile

    from ncclctl.fileio import write_error

    full = os.path.abspath(out_dir)
    parent, name = os.path.dirname(full), os.path.basename(full)
    try:
        tmp = tempfile.mkdtemp(prefix=f".{name}.", suffix=".tmp", dir=parent)
    except OSError as exc:
        raise write_error(exc, out_dir, f"cannot create the output folder: {exc.strerror}") from None
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)  # what mkdir would have given, not mkdtemp's 0700
        from ncclctl.fileio import emit

        _make_folders(plan, tmp)
        for rel, data in plan.files.items():
            emit(os.path.join(tmp, *rel.split("/")), data)
        try:
            os.rename(tmp, full)  # replaces nothing but an empty folder made since the check
        except OSError as exc:
            raise write_error(exc, out_dir, f"cannot move the finished plan into place: {exc.strerror}") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    try:
        dfd = os.open(parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass
    return [(rel, "created") for rel in plan.files]


def _mkdir(path: str) -> None:
    try:
        os.mkdir(path)
    except FileExistsError:
        if not os.path.isdir(path):
            raise InputError("exists and is not a folder", path=path, fix="remove it, or give another output folder")
    except OSError as exc:
        from ncclctl.fileio import write_error

        raise write_error(exc, path, f"cannot create the folder: {exc.strerror}") from None


# ---------------------------------------------------------------------------------------------------------------
# Rendering


def plan_text(plan: FabricPlan, out_dir: str, outcome: WriteOutcome) -> str:
    from ncclctl.fabric.hostlist import compress

    planned = plan.planned
    sources = sorted({e.ids.source for e in planned if e.ids is not None})
    lines = [f"fabric plan: {len(planned)} host(s) planned from {plan.inventory} (fabric: {plan.fabric}), "
             f"NCCL {plan.version}",
             f"rail/plane ids from: {', '.join(sources) or 'none'}"
             + ("" if all(e.written for e in planned) else " (not written for some hosts)")]
    rows: dict[str, list[str]] = {}  # hosts with the same ids share a line (a fleet is mostly one line)
    for e in planned:
        ids = e.ids
        if ids is not None and ids.ids:
            ports = " ".join(f"{k.split(':')[0]}={v.rail}" + ("" if v.plane is None else f".{v.plane}")
                             for k, v in sorted(ids.ids.items(), key=lambda kv: (kv[1].plane or 0, kv[1].rail)))
        else:
            ports = "no rail ports"
        rows.setdefault(f"{ids.source if ids else '-'}{'' if e.written else ' (not written)'}: {ports}",
                        []).append(e.host)
    for row, hosts in rows.items():
        lines.append(f"  {compress(hosts)}: {row}")
    if plan.order.hosts:
        lines.append(f"order: {compress(list(plan.order.hosts))} ({len(plan.order.hosts)} hosts, "
                     f"{len(plan.order.segments)} leaf group(s), ring crossings {plan.order.crossings})")
    for e in plan.left_out:
        lines.append(f"left out: {e.host}: {e.status}: {e.why}")
    for n in plan.notes:
        lines.append(f"note: {n}")
    ff = plan.fabric_findings
    if ff:
        lines.append("note: the fabric check found " + ", ".join(f"{n} {r}" for r, n in ff.items())
                     + ": see 'ncclctl fabric rails' (the files carry the ids of the leaves the ports land on)")
    c = outcome.counts()
    what = "would be " if outcome.check else ""
    if outcome.unchanged:
        lines.append(f"{out_dir}: unchanged ({len(outcome.files)} files up to date)")
    else:
        lines.append(f"{out_dir}: {c['created']} file(s) {what}created, {c['changed']} {what}changed, "
                     f"{c['unchanged']} unchanged" + (" (check mode: nothing written)" if outcome.check else ""))
    return "\n".join(lines) + "\n"


def plan_doc(plan: FabricPlan, out_dir: str, outcome: WriteOutcome) -> dict:
    m = manifest(plan)
    m.pop("findings")
    m.pop("files")
    return {"plan": m, "output": out_dir, "check_mode": outcome.check, "changed": not outcome.unchanged,
            "files": [{"path": p, "status": s} for p, s in outcome.files], "stale": outcome.stale}
