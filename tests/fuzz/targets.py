"""Every reader of untrusted input, as ``bytes -> anything`` callables with a corpus of real samples.

A target raises nothing but :class:`~ncclctl.errors.InputError` for bad input (the harness checks that).
Corpora come from the fixtures (captured command outputs, topology/graph XML, fabric dumps, YAML specs,
configs, inventories, golden probe JSON) and from the per-tool sample texts in ``tests/parsers``. A target
whose module does not exist yet is listed with a skip reason instead of a callable.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
HOSTS = FIXTURES / "hosts"
SOURCE = "fuzz-input"


@dataclass
class Target:
    name: str
    func: Callable[[bytes], Any] | None
    corpus: Callable[[], list[bytes]]
    #: Mutation flavour: text | json | yaml | xml.
    kind: str = "text"
    #: Errors must carry a line number (line-oriented command-output parsers).
    need_line: bool = False
    skip: str | None = None
    #: Fewer mutated inputs in CI for slow targets (the slow run always does the full count).
    quick_count: int | None = None


# ------------------------------------------------------------------------------------------------ corpora


def _files(pattern: str, root: Path = FIXTURES) -> list[bytes]:
    return [p.read_bytes() for p in sorted(root.glob(pattern)) if p.is_file()]


def _cmd(prefix: str) -> list[bytes]:
    return [p.read_bytes() for p in sorted(HOSTS.glob(f"*/cmd/{prefix}*.txt"))]


def _samples(module: str, *names: str) -> list[bytes]:
    """String samples defined by a tests/parsers module (loaded by path, whatever pytest's import mode)."""
    path = REPO / "tests" / "parsers" / f"{module}.py"
    key = f"_ncclctl_fuzz_samples_{module}"
    mod = sys.modules.get(key)
    if mod is None:
        if not path.exists():
            return []
        spec = importlib.util.spec_from_file_location(key, path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[key] = mod
        spec.loader.exec_module(mod)
    out: list[bytes] = []
    for name in names:
        out += [s.encode("utf-8", "surrogatepass") for s in getattr(mod, name, [])]
    return out


def _unique(*groups: list[bytes]) -> list[bytes]:
    seen: dict[bytes, None] = {}
    for g in groups:
        for item in g:
            seen.setdefault(item, None)
    return list(seen)


# ------------------------------------------------------------------------------------------------ helpers


def _text(data: bytes) -> str | bytes:
    """What a parser gets: text when the bytes are UTF-8; otherwise the raw bytes (every other input) or the
    text a live run would decode with replacement characters."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data if data[0] % 2 else data.decode("utf-8", "replace")


def _parser(modname: str, funcname: str) -> Callable[[bytes], Any] | str:
    try:
        mod = importlib.import_module(modname)
    except ImportError as exc:
        return f"{modname} is not there yet ({exc})"
    func = getattr(mod, funcname, None)
    if func is None:
        return f"{modname}.{funcname} is not there yet"

    def run(data: bytes) -> Any:
        return func(_text(data), source=SOURCE)

    return run


class _Scratch:
    """One temp folder per process for targets that read a path."""

    _dir: str | None = None

    @classmethod
    def path(cls, name: str) -> str:
        if cls._dir is None:
            import atexit
            import shutil

            cls._dir = tempfile.mkdtemp(prefix="ncclctl-fuzz-")
            atexit.register(shutil.rmtree, cls._dir, True)  # the suite leaves nothing in the temp folder
        return os.path.join(cls._dir, name)

    @classmethod
    def write(cls, name: str, data: bytes) -> str:
        p = cls.path(name)
        with open(p, "wb") as fh:
            fh.write(data)
        return p


@functools.lru_cache(maxsize=None)
def _node(host: str):
    from ncclctl.probe import probe

    return probe(str(HOSTS / host))


# ------------------------------------------------------------------------------------------------ XML


def _xml_corpus() -> list[bytes]:
    return _unique(_files("topo/**/*.xml"), _files("golden/topo/*.xml", REPO / "tests"),
                   _files("golden/rings/*.xml", REPO / "tests"))


def _topology_xml(data: bytes) -> Any:
    """What ``topo validate`` and ``topo show`` do with a file."""
    from ncclctl.errors import InputError
    from ncclctl.render import dumps
    from ncclctl.topo import show
    from ncclctl.topo.interpret import load_view
    from ncclctl.topo.validate import validate_bytes

    findings = validate_bytes(data, path=SOURCE)
    for f in findings:
        str(f.message)
    try:
        view = load_view(data, path=SOURCE)
    except InputError:
        return findings
    show.tree_text(view)
    show.matrix_text(view)
    dumps(show.view_doc(view))
    show.diff_text(show.diff(view, view), "a", "b")
    return findings


def _graph_xml(data: bytes) -> Any:
    from ncclctl.topo.validate import validate_bytes

    return validate_bytes(data, path=SOURCE, kind="graph")


def _xml_old_versions(data: bytes) -> Any:
    from ncclctl.nccl.xml import parse_nccl_xml

    out = []
    for version in ((2, 6, 4), (2, 18, 1), (2, 26, 2)):
        for kind in ("topology", "graph"):
            out.append(parse_nccl_xml(data, kind=kind, nccl_version=version, path=SOURCE))
    return out


def _xml_against_host(data: bytes) -> Any:
    """``topo validate --root`` / ``rings validate --root``: the file checked against a real node."""
    from ncclctl.topo import hostcheck
    from ncclctl.topo.interpret import interpret
    from ncclctl.nccl.xml import parse_nccl_xml, sniff_kind

    kind = sniff_kind(data) or "topology"
    res = parse_nccl_xml(data, kind=kind, path=SOURCE)
    if not res.ok or res.root is None:
        return res
    node = _node("dgx-h100")
    if kind == "topology" and res.root.name == "system":
        return hostcheck.check_against_host(interpret(res), node, SOURCE)
    if kind == "graph" and res.root.name == "graphs":
        return hostcheck.check_graph_against_host(res, node, SOURCE)
    return res


def _xsd(data: bytes) -> Any:
    from ncclctl.nccl.xml import check_untrusted, sniff_kind
    from ncclctl.topo.schema import xsd_findings

    check_untrusted(data, path=SOURCE)
    return xsd_findings(data, sniff_kind(data) or "topology", SOURCE)


# ------------------------------------------------------------------------------------------------ YAML


def _spec_corpus() -> list[bytes]:
    return _unique(_files("examples/topo/*.yaml", REPO),
                   [b"version: 1\nname: pairs\nswitches:\n  - {gpus: [0], nics: [mlx5_ib0], numa: 0}\n"
                    b"  - {gpus: [1], nics: [mlx5_ib1], numa: 1}\nlink_speed: 32.0 GT/s PCIe\nlink_width: 16\n"])


def _topo_spec(data: bytes) -> Any:
    """``topo generate --spec F`` on a flat-PCIe VM: load the spec, then generate with it."""
    from ncclctl.errors import InputError
    from ncclctl.nccl import detect as gen

    layout = gen.load_spec(data.decode("utf-8", "replace"), path=SOURCE)
    try:
        return gen.generate(_node("cloud-vm-flat"), gen.Options(), layout=layout)
    except InputError as exc:
        # generate() checks the layout against the host and names no file (the CLI message does not either);
        # what is fuzzed here is that it refuses cleanly.
        if exc.path is None:
            exc.path = SOURCE
        raise


def _lint_config_corpus() -> list[bytes]:
    return _unique(_files("**/.ncclctl.yaml"), [
        b"extends: strict\nrules:\n  IB002: {severity: warning, options: {min_rate_gbps: 200}}\n"
        b"  persistence-mode-off: off\nignore:\n  - hosts: 'gpu-dev-*'\n    rules: [GPU003]\n",
        b"extends: default\nrules:\n  PCI004: {disable: true}\n  GPU003: error\n  EXP007:\n    options:\n"
        b"      ignore: [NCCL_DEBUG]\n",
        b"rules:\n  IB002: on\nignore: []\n",
    ])


def _lint_config(data: bytes) -> Any:
    from ncclctl.lint.config import load_config

    return load_config(_Scratch.write("config.yaml", data))


def _inventory_corpus() -> list[bytes]:
    return _unique(_files("fleet/**/inventory*.yaml"), _files("fabric/**/inventory*.yaml"))


def _inventory(data: bytes) -> Any:
    from ncclctl.inventory import load_inventory

    return load_inventory(_Scratch.write("inventory.yaml", data))


@functools.lru_cache(maxsize=1)
def _prom_corpus() -> list[bytes]:
    """`ncclctl lint --format prom` of two fixture hosts (findings and fleet facts), and a hand-written older file."""
    from ncclctl.inventory import load_snapshot
    from ncclctl.lint.engine import DEFAULT_CONFIG, lint_report
    from ncclctl.ops.facts import published_fleet_facts
    from ncclctl.report.prom import textfile

    out = []
    for name in ("dgx-h100-port-down", "hgx-h100-roce"):
        node = load_snapshot(str(HOSTS / name))
        rep = lint_report(node, DEFAULT_CONFIG, source=name)
        out.append(textfile("lint", now=1700000000, findings=rep.findings, ok=rep.ok, rules_run=len(rep.rules_run),
                            facts=(node.hostname, published_fleet_facts(node))).encode())
    out.append(b'# TYPE ncclctl_up gauge\nncclctl_up{command="lint",instance="gpu7:9100"} 1\n'
               b'ncclctl_rule_findings{command="lint",rule="IB001",severity="error",device="mlx5_3"} 2 1700000000000\n')
    return out


def _prom_textfile(data: bytes) -> Any:
    """`fleet lint --facts HOST.prom`: the file read, parsed and turned into the host's findings and facts."""
    from ncclctl.lint.fleet_prom import read_textfile

    return read_textfile(_Scratch.write("gpu7.prom", data))


# ------------------------------------------------------------------------------------------------ JSON


def _node_model_corpus() -> list[bytes]:
    return _files("golden/probe/*.json", REPO / "tests")


def _node_model(data: bytes) -> Any:
    """``--model FILE``: the CLI's own loader (JSON decoding, then Node.from_dict)."""
    from ncclctl.cli.common import load_node as _load_node

    return _load_node(None, _Scratch.write("model.json", data))


def _node_model_consumers(data: bytes) -> Any:
    """What the commands that take ``--model`` do with a loaded model: the probe views (``probe`` text, tree,
    matrix and JSON), ``rails`` and ``topo generate`` (a virtual layout for flat VMs)."""
    from ncclctl import render
    from ncclctl.errors import InputError
    from ncclctl.plan.rails import plan_doc, plan_rails, plan_text
    from ncclctl.nccl import detect as gen

    node = _node_model(data)
    render.dumps(render.node_document(node))
    render.text_summary(node)
    render.tree(node)
    render.matrix_text(node)
    try:
        plan = plan_rails(node, None)
        plan_text(plan)
        render.dumps(plan_doc(plan))
        layout = gen.profile_layout(node, "pairs", None) if node.is_virtual else None
        return gen.generate(node, gen.Options(), layout=layout)
    except InputError as exc:
        # A model that loads but is inconsistent (a GPU without its PCI function, an unknown CPU architecture):
        # rails/generate refuse it without naming the file (the CLI message does not either; reported).
        if exc.path is None:
            exc.path = SOURCE
        raise


def _nvml_corpus() -> list[bytes]:
    return _files("hosts/*/nvml.json")


@functools.lru_cache(maxsize=None)
def _pci(host: str) -> dict:
    from ncclctl.probe.assemble import _Probe
    from ncclctl.probe.commands import RecordedRunner
    from ncclctl.probe.hostroot import HostRoot
    from ncclctl.probe.nvml import RecordedNvml

    root = str(HOSTS / host)
    return _Probe(HostRoot(root), RecordedRunner(root), RecordedNvml(root)).pci()


def _nvml_json(data: bytes) -> Any:
    """A recorded ``nvml.json`` read by the probe: the document check, then GPUs built from it."""
    from ncclctl.probe.assemble import _Probe
    from ncclctl.probe.commands import RecordedRunner
    from ncclctl.probe.hostroot import HostRoot
    from ncclctl.probe.nvml import RecordedNvml

    folder = os.path.dirname(_Scratch.write("nvml.json", data))
    doc = RecordedNvml(folder).collect()
    root = str(HOSTS / "dgx-h100")
    p = _Probe(HostRoot(root), RecordedRunner(root), RecordedNvml(root))
    return p.gpus(_pci("dgx-h100"), doc)


# ------------------------------------------------------------------------------------------------ nccl.conf


def _conf_corpus() -> list[bytes]:
    return [
        b"NCCL_IB_HCA=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1\nNCCL_SOCKET_IFNAME=^lo,docker\nNCCL_DEBUG=WARN\n",
        b"# comment\nNCCL_P2P_LEVEL=NVL\nNCCL_NET_GDR_LEVEL=PHB\nNCCL_ALGO=Ring,Tree\nNCCL_PROTO=^LL128\n",
        b"NCCL_IB_HCA==mlx5_0:1:0:0,mlx5_1\r\nNCCL_TOPO_FILE=/etc/nccl/topo.xml\r\nNCCL_IB_TIMEOUT=0x16\r\n",
        b"export NCCL_X=1\nNCCL_NTHREADS = 512\nNCCL_MIN_NCHANNELS=08\nNCCL_IB_GID_INDEX=3 # roce v2\n",
    ]


def _nccl_conf(data: bytes) -> Any:
    """A conf file as the probe stores it (UTF-8 text), resolved as NCCL reads it, every value interpreted."""
    from ncclctl.model import ConfFile
    from ncclctl.nccl import lists, params, settings, values, variables

    text = data.decode("utf-8", "replace")
    env = [("NCCL_DEBUG", "INFO"), ("NCCL_IB_HCA", text[:60])]
    out = []
    for version in ((2, 20, 5), (2, 30, 7)):
        res = settings.resolve_sources(env, [ConfFile("/root/.nccl.conf", text), ConfFile("/etc/nccl.conf", text)],
                                       version)
        for name in res.names():
            value = res.value(name) or ""
            out.append((params.load_param(value), values.read_level(value, version),
                        values.check_algo_proto(value, "NCCL_ALGO", version),
                        values.check_algo_proto(value, "NCCL_PROTO", version),
                        lists.parse_ib_hca(value), lists.ifname_selects(value, ["eth0", "ib0", "lo"]),
                        lists.hca_selects(value, [("mlx5_0", 1), ("mlx5_10", 1), ("mlx5_1", 2)]),
                        variables.known_variable(name), variables.suggest_variable(name)))
        res.duplicates()
        res.overridden()
    return out


def _lint_with_conf(data: bytes) -> Any:
    """``lint`` on a node whose /etc/nccl.conf is the input: no rule may crash on any value."""
    import dataclasses

    from ncclctl.lint import engine
    from ncclctl.lint.context import Ctx
    from ncclctl.model import ConfFile

    node = _node("dgx-h100")
    facts = dataclasses.replace(node.facts, conf_files=(ConfFile("/etc/nccl.conf", data.decode("utf-8", "replace")),))
    findings = engine.run(Ctx(node=dataclasses.replace(node, facts=facts)))
    crashed = [f for f in findings if "the check crashed" in f.message]
    if crashed:
        raise AssertionError(f"lint rule {crashed[0].rule} crashed: {crashed[0].message}")
    return findings


# ------------------------------------------------------------------------------------------------ sysfs


def _sysfs_values(*names: str | bytes) -> list[bytes]:
    """Real values of these sysfs file names (glob patterns) in the host fixtures; bytes are literal samples."""
    out: set[bytes] = set()
    for name in names:
        if isinstance(name, bytes):
            out.add(name)
            continue
        for p in HOSTS.glob(f"*/sys/**/{name}"):
            if p.is_file() and not p.is_symlink():
                out.add(p.read_bytes())
            if len(out) > 60:
                break
    return sorted(out)


def _sysfs(parse_name: str) -> Callable[[bytes], Any]:
    """A sysfs value read through the probe's one wrapper (``_Probe.value``: strip, parse, InputError)."""

    def run(data: bytes) -> Any:
        from ncclctl.probe import assemble, network, pci
        from ncclctl import sysfs as V

        parse = getattr(V, parse_name, None) or getattr(network, parse_name, None) or getattr(pci, parse_name)
        if parse_name == "parse_hex_id":
            parse = functools.partial(V.parse_hex_id, digits=4)
        host = _FakeHost(data)
        return assemble._Probe(host, None, None).value("/sys/fuzz/value", parse, what=parse_name)  # type: ignore[arg-type]

    return run


class _FakeHost:
    """The HostRoot seam serving one value (read as the real one does: UTF-8 or InputError, then strip)."""

    live = False
    root = "/fuzz"

    def __init__(self, data: bytes) -> None:
        self.data = data

    def display(self, path: str) -> str:
        return SOURCE + path

    def read_value(self, path: str) -> str | None:
        from ncclctl.errors import InputError

        try:
            return self.data.decode("utf-8").strip()
        except UnicodeDecodeError:
            raise InputError("file is not UTF-8 text", path=self.display(path), fix="re-capture") from None


_SYSFS = {
    "parse_int": ("numa_node", "max_link_width", "current_link_width", "mtu", "phys_port_cnt"),
    "parse_hex": ("class", "vendor", "device", "ecap_acs"),
    "parse_hex_id": ("vendor", "device", "subsystem_vendor", "subsystem_device"),
    "parse_cpulist": ("local_cpulist", "cpulist", "online", "possible"),
    "parse_cpumap": ("local_cpus", "cpumap"),
    "normalize_bdf": (b"00000000:19:00.0", b"0000:1b:00.0", b"19:00.0", b"0000:C1:00.1", b"10000:01:00.0"),
    "link_speed_gen": ("current_link_speed", "max_link_speed"),
    "parse_numbered_state": ("state", "phys_state"),
    "parse_ib_rate": ("rate",),
    "parse_guid": ("node_guid", "sys_image_guid"),
    "parse_gid": ("gids/[0-9]*",),
    "_bool01": ("enable/[0-7]",),
    "_speed_string": ("current_link_speed", "max_link_speed"),
}


# ------------------------------------------------------------------------------------------------ NCCL logs


def _log_corpus() -> list[bytes]:
    """The authored log fixtures (every wording and failure class), cut to their first 300 lines."""
    out = []
    for p in sorted((FIXTURES / "logs").glob("*.log")):
        out.append(b"\n".join(p.read_bytes().split(b"\n")[:300]))
    return out


def _nccl_log(data: bytes) -> Any:
    """``log show`` and ``log check`` on the input as a log file: parse, the summary, its text, every LOG rule,
    the diff against itself."""
    from ncclctl.logs import show
    from ncclctl.logs.check import check
    from ncclctl.logs.diff import diff
    from ncclctl.logs.parse import read_logs
    from ncclctl.render import dumps

    ls = read_logs([_Scratch.write("nccl.log", data)])
    doc = show.summary(ls)
    dumps(doc)
    show.text(ls, doc, ranks=True)
    findings = check(ls)
    for f in findings:
        str(f.message)
    assert diff(doc, doc) == []
    return findings


def _nccl_log_model(data: bytes) -> Any:
    """``log check --root``: the input held against the DGX H100 fixture's model (paths, NICs, GDR)."""
    from ncclctl.logs.check import HostModel, check
    from ncclctl.logs.parse import read_logs

    ls = read_logs([_Scratch.write("nccl-model.log", data)])
    model = _h100_model()
    return check(ls, models={h: model for h in ls.hosts})


@functools.lru_cache(maxsize=None)
def _h100_model():
    from ncclctl.logs.check import HostModel
    from ncclctl.nccl.predict import inputs_for_node, predict_xml
    from ncclctl.nccl.version import DEFAULT

    node = _node("dgx-h100")
    data, inputs, down = inputs_for_node(node, nodes=2, env={}, version=DEFAULT, gdr="auto", source="dgx-h100")
    return HostModel.of("dgx-h100", predict_xml(data, inputs=inputs, down=down).to_json())


def _perf_corpus() -> list[bytes]:
    return [p.read_bytes()[:20000] for p in sorted((FIXTURES / "logs" / "perf").glob("*.txt"))]


def _perf_json_corpus() -> list[bytes]:
    return [p.read_bytes() for p in sorted((FIXTURES / "logs" / "perf").glob("*.json"))]


def _nccl_tests(data: bytes) -> Any:
    """``perf check``: the results read (text or JSON, detected), expected from the GPU names or the DGX H100
    fixture, the PERF rules, the text and JSON renderings."""
    from ncclctl.logs import perf
    from ncclctl.render import dumps

    path = _Scratch.write("results.txt", data)
    tests, _notes = perf.read_results([path])
    out = []
    for hw in (None, {"*": _h100_hw()}):
        res = perf.evaluate(tests, hardware=hw, nodes=None, min_bytes=1 << 20)
        out += perf.check(res, options={})
        perf.text(res)
        dumps([r.doc() for r in res])
    return out


@functools.lru_cache(maxsize=None)
def _h100_hw():
    from ncclctl.logs.perf import hardware_from_node

    return hardware_from_node(_node("dgx-h100"), "dgx-h100")


# ------------------------------------------------------------------------------------------------ registry


def _target(name: str, func: Callable[[bytes], Any] | str, corpus: Callable[[], list[bytes]], **kw: Any) -> Target:
    if isinstance(func, str):
        return Target(name, None, corpus, skip=func, **kw)
    return Target(name, func, corpus, **kw)


def _module_has(modname: str, attr: str) -> str | None:
    try:
        mod = importlib.import_module(modname)
    except ImportError as exc:
        return f"{modname} is not there yet ({exc})"
    return None if hasattr(mod, attr) else f"{modname}.{attr} is not there yet"


def _guarded(name: str, func: Callable[[bytes], Any], corpus: Callable[[], list[bytes]], modname: str, attr: str,
             **kw: Any) -> Target:
    why = _module_has(modname, attr)
    return Target(name, None if why else func, corpus, skip=why, **kw)


def _build() -> dict[str, Target]:
    P = "ncclctl.parsers."
    t = [
        _target("ibstat", _parser(P + "ibstat", "parse_ibstat"),
                lambda: _unique(_cmd("ibstat"), _samples("test_ibstat", "SAMPLES")), need_line=True),
        _target("ibv_devinfo", _parser(P + "ibv_devinfo", "parse_ibv_devinfo"),
                lambda: _unique(_cmd("ibv_devinfo"), _samples("test_ibv_devinfo", "SAMPLES")), need_line=True),
        _target("ibv_devinfo_list", _parser(P + "ibv_devinfo", "parse_ibv_devinfo_list"),
                lambda: [b"2 HCAs found:\n\tmlx5_0\n\tmlx5_1\n\n", b"0 HCAs found:\n"], need_line=True),
        _target("ibdev2netdev", _parser(P + "ibdev2netdev", "parse_ibdev2netdev"),
                lambda: _unique(_cmd("ibdev2netdev"), _samples("test_ibdev2netdev", "SAMPLES")), need_line=True),
        _target("show_gids", _parser(P + "show_gids", "parse_show_gids"),
                lambda: _unique(_cmd("show_gids"), _samples("test_show_gids", "SAMPLES")), need_line=True),
        _target("mlnx_qos", _parser(P + "mlnx_qos", "parse_mlnx_qos"),
                lambda: _unique(_cmd("mlnx_qos"), _samples("test_mlnx_qos", "SAMPLES")), need_line=True),
        _target("dcb_pfc", _parser(P + "dcb", "parse_dcb_pfc"),
                lambda: _unique(_cmd("dcb_-j_pfc"), _samples("test_dcb", "PFC_SAMPLES")), kind="json",
                need_line=True),
        _target("dcb_app", _parser(P + "dcb", "parse_dcb_app"),
                lambda: _unique(_cmd("dcb_-j_app"), _samples("test_dcb", "APP_SAMPLES")), kind="json",
                need_line=True),
        _target("ip_link_json", _parser(P + "iplink", "parse_ip_link_json"),
                lambda: _unique(_cmd("ip_-j"), _samples("test_iplink", "JSON_SAMPLES")), kind="json",
                need_line=True),
        _target("ip_link_text", _parser(P + "iplink", "parse_ip_link_text"),
                lambda: _samples("test_iplink", "TEXT_SAMPLES"), need_line=True),
        _target("lldpctl_json", _parser(P + "lldp", "parse_lldpctl_json"),
                lambda: _unique(_cmd("lldpctl"), _samples("test_lldp", "JSON_SAMPLES")), kind="json",
                need_line=True),
        _target("lldptool_pfc", _parser(P + "lldp", "parse_lldptool_pfc"),
                lambda: _samples("test_lldp", "PFC_SAMPLES"), need_line=True),
        _target("lldptool_neighbor", _parser(P + "lldp", "parse_lldptool_neighbor"),
                lambda: _samples("test_lldp", "TOOL_SAMPLES"), need_line=True),
        _target("nvidia_smi_topo", _parser(P + "smi_topo", "parse_nvidia_smi_topo"),
                lambda: _unique(_cmd("nvidia-smi"), _samples("test_smi_topo", "SAMPLES")), need_line=True),
        _target("nvidia_smi_p2p", _parser(P + "smi_topo", "parse_nvidia_smi_p2p"),
                lambda: _files("outputs/p2p-*.txt"), need_line=True),
        _target("ibstatus", _parser(P + "ibstatus", "parse_ibstatus"),
                lambda: _files("outputs/ibstatus-*.txt"), need_line=True),
        _target("nvidia_smi_fabric_csv", _parser(P + "smi_query", "parse_nvidia_smi_fabric_csv"),
                lambda: [b"".join(ln for ln in d.splitlines(True) if b"@" not in ln)  # the output, its prompt cut
                         for d in _files("outputs/fabric-csv-*.txt")], need_line=True),
        _target("nvlink_status", _parser(P + "nvlink", "parse_nvlink_status"),
                lambda: _files("outputs/nvlink-*.txt"), need_line=True),
        _target("lspci", _parser(P + "lspci", "parse_lspci"),
                lambda: _files("outputs/lspci-*.txt"), need_line=True),
        _target("ibnetdiscover", _parser(P + "ibnetdiscover", "parse_ibnetdiscover"),
                lambda: _files("fabric/**/ibnetdiscover*.txt"), need_line=True),
        _target("iblinkinfo", _parser(P + "iblinkinfo", "parse_iblinkinfo"),
                lambda: _files("fabric/**/iblinkinfo*.txt"), need_line=True),
        _guarded("fabric_graph", _fabric_graph, lambda: _files("fabric/**/ib*.txt"), "ncclctl.fabric.graph",
                 "parse_fabric_text"),
        Target("topology_xml", _topology_xml, _xml_corpus, kind="xml"),
        Target("graph_xml", _graph_xml, _xml_corpus, kind="xml"),
        Target("xml_old_versions", _xml_old_versions, _xml_corpus, kind="xml"),
        Target("xml_against_host", _xml_against_host, _xml_corpus, kind="xml"),
        Target("xml_xsd", _xsd, _xml_corpus, kind="xml"),
        Target("topo_spec_yaml", _topo_spec, _spec_corpus, kind="yaml"),
        _guarded("lint_config_yaml", _lint_config, _lint_config_corpus, "ncclctl.lint.config", "load_config",
                 kind="yaml"),
        _guarded("inventory_yaml", _inventory, _inventory_corpus, "ncclctl.inventory", "load_inventory",
                 kind="yaml"),
        _guarded("prom_textfile", _prom_textfile, _prom_corpus, "ncclctl.lint.fleet_prom", "read_textfile"),
        Target("node_model_json", _node_model, _node_model_corpus, kind="json"),
        Target("node_model_consumers", _node_model_consumers, _node_model_corpus, kind="json"),
        Target("nvml_json", _nvml_json, _nvml_corpus, kind="json"),
        _guarded("nccl_conf", _nccl_conf, _conf_corpus, "ncclctl.nccl.settings", "resolve_sources"),
        Target("nccl_log", _nccl_log, _log_corpus),
        Target("nccl_log_model", _nccl_log_model, _log_corpus, quick_count=40),
        Target("nccl_tests_text", _nccl_tests, _perf_corpus),
        Target("nccl_tests_json", _nccl_tests, _perf_json_corpus, kind="json"),
        # The whole lint rule set per input (~0.1 s for a 64 KiB conf file).
        _guarded("lint_nccl_conf", _lint_with_conf, _conf_corpus, "ncclctl.lint.engine", "run", quick_count=25),
    ]
    for parse_name, names in _SYSFS.items():
        t.append(Target(f"sysfs_{parse_name.lstrip('_')}", _sysfs(parse_name),
                        functools.partial(_sysfs_values, *names)))
    return {x.name: x for x in t}


def _fabric_graph(data: bytes) -> Any:
    """``fabric`` commands: the output kind detected, parsed, and built into the cabling graph."""
    from ncclctl.errors import InputError
    from ncclctl.fabric.graph import from_fabric, parse_fabric_text

    text = _text(data)
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError("not UTF-8 text", path=SOURCE) from None
    kind, fabric = parse_fabric_text(text, source=SOURCE)
    return from_fabric(fabric, source=SOURCE, kind=kind)


TARGETS = _build()
