"""XML safety through the CLI: external entities, DTDs, entity expansion, huge files and deep nesting are
refused with exit 3 and a clear message, without touching the network, in bounded time and memory.

Every command that reads a topology or graph file is tried (``topo validate`` in text and JSON, ``rings
validate``, ``topo show``, ``topo diff`` on either side). Network access is proven absent by pointing the
entities at a local HTTP server started here and checking that it received nothing (while a control request
from the test itself does arrive). Each CLI run gets a 1 GiB address-space limit, so unbounded memory would
show up as a crash (exit 70), not a refusal.
"""

from __future__ import annotations

import concurrent.futures
import http.server
import json
import os
import resource
import shutil
import subprocess
import tempfile
import threading
import urllib.request
from pathlib import Path

import pytest

from conftest import HOSTS, REPO, run_cli_io

GOOD = REPO / "fixtures" / "topo" / "valid" / "nccl-example-topo.xml"
SECRET = "ncclctl-secret-4f1c2e"  # content of a local file an external entity points at
MEM_LIMIT = 1 << 30
#: Bytes a command that refuses a file may read (/proc/self/io rchar): its own modules (~3 MB), not a huge file.
READ_BOUND = 8 << 20


class _Recorder(http.server.BaseHTTPRequestHandler):
    requests: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        type(self).requests.append(self.path)
        body = b'<!ENTITY leak "LEAKED">' if self.path.endswith(".dtd") else b"LEAKED"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server():
    _Recorder.requests = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", _Recorder.requests
    finally:
        httpd.shutdown()
        httpd.server_close()


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEM_LIMIT, MEM_LIMIT))


def cli(*args: str, timeout: float = 60) -> tuple[subprocess.CompletedProcess, dict[str, int]]:
    """Run ncclctl under a 1 GiB address-space limit, without proxies; returns (result, its /proc/self/io counts).
    Work is counted, not timed: the memory limit bounds what an expansion may build, ``rchar`` what is read; the
    time-out is a hang guard."""
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower() and k != "NCCLCTL_DEBUG"}
    return run_cli_io(*args, whole_env=env, timeout=timeout, tmp=Path(tempfile.gettempdir()),
                      preexec_fn=_limit_memory)


def _commands(path: str, *, graph: bool = False, full: bool = False) -> list[tuple[str, ...]]:
    if graph:  # a graph-rooted file: what reads NCCL_GRAPH_FILE
        return [("rings", "validate", path), ("topo", "validate", "--format", "json", path)]
    out = [("topo", "validate", path), ("topo", "show", path), ("topo", "diff", path, str(GOOD))]
    if full:
        out += [("topo", "validate", "--format", "json", path), ("topo", "show", "--format", "json", path),
                ("topo", "diff", str(GOOD), path), ("rings", "validate", path)]
    return out


def _assert_refused(path: Path, words: tuple[str, ...], *, graph: bool = False, full: bool = False,
                    max_read: int = READ_BOUND) -> None:
    """Every command refuses ``path`` with exit 3, naming it, with a fix and these words (run in parallel)."""
    commands = _commands(str(path), graph=graph, full=full)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda argv: cli(*argv), commands))
    for argv, (proc, io_) in zip(commands, results):
        msg = f"ncclctl {' '.join(argv)} -> {proc.returncode}\nstdout: {proc.stdout[-500:]}\nstderr: {proc.stderr[-800:]}"
        assert proc.returncode == 3, msg
        assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, msg
        assert f"ncclctl: error: {path}" in proc.stderr, msg  # names the file
        assert "(fix: " in proc.stderr, msg
        if argv[:2] == ("rings", "validate") and not graph and "this is a topology file" in proc.stderr:
            continue  # refused as the wrong kind before its content is read
        for w in words:
            assert w in proc.stderr, msg
        assert SECRET not in proc.stdout + proc.stderr and "LEAKED" not in proc.stdout + proc.stderr, msg
        assert io_["rchar"] < max_read, f"{msg}\nread {io_['rchar']:,} bytes"


def _control(url: str, requests: list[str]) -> None:
    """The server is live: a request from here is recorded (so 'no request' below means something)."""
    with urllib.request.urlopen(f"{url}/control", timeout=5) as r:  # noqa: S310 - local test server
        assert r.read() == b"LEAKED"
    assert requests == ["/control"]
    requests.clear()


@pytest.fixture
def secret_file(tmp_path: Path) -> Path:
    p = tmp_path / "secret.txt"
    p.write_text(SECRET)
    return p


def test_external_entity_file_is_refused(tmp_path: Path, secret_file: Path) -> None:
    f = tmp_path / "xxe-file.xml"
    f.write_text(f'<!DOCTYPE system [<!ENTITY xxe SYSTEM "file://{secret_file}">]>\n'
                 '<system version="1">\n  <cpu numaid="0" affinity="ff" arch="x86_64" vendor="&xxe;"/>\n</system>\n')
    _assert_refused(f, ("DTD", ":1:1:", "never loads DTDs"), full=True)


def test_external_entity_http_is_refused_without_network_access(tmp_path: Path, server) -> None:
    url, requests = server
    _control(url, requests)
    f = tmp_path / "xxe-http.xml"
    f.write_text(f'<!DOCTYPE system [<!ENTITY xxe SYSTEM "{url}/entity">]>\n'
                 '<system version="1"><cpu numaid="0" affinity="ff" arch="x86_64" vendor="&xxe;"/></system>\n')
    _assert_refused(f, ("DTD",))
    assert requests == [], f"ncclctl fetched {requests}"


def test_external_dtd_and_parameter_entities_are_refused_without_network_access(tmp_path: Path, server) -> None:
    url, requests = server
    _control(url, requests)
    external = tmp_path / "external-dtd.xml"
    external.write_text(f'<!DOCTYPE system SYSTEM "{url}/evil.dtd">\n<system version="1"/>\n')
    param = tmp_path / "param-entity.xml"
    param.write_text(f'<!DOCTYPE system [<!ENTITY % p SYSTEM "{url}/param.dtd"> %p;]>\n<system version="1"/>\n')
    graph = tmp_path / "graph-xxe.xml"
    graph.write_text(f'<!DOCTYPE graphs [<!ENTITY x SYSTEM "{url}/graph">]>\n<graphs version="1">'
                     '<graph id="&x;"/></graphs>\n')
    _assert_refused(external, ("DTD",))
    _assert_refused(param, ("DTD",))
    _assert_refused(graph, ("DTD",), graph=True)
    assert requests == [], f"ncclctl fetched {requests}"


def test_internal_subset_dtd_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "internal-dtd.xml"
    f.write_text('<system version="1">\n  <!ENTITY name "value">\n</system>\n')
    _assert_refused(f, ("<!ENTITY", ":2:3:"))
    g = tmp_path / "internal-dtd-graph.xml"
    g.write_text('<!DOCTYPE graphs [<!ELEMENT graphs ANY>]>\n<graphs version="1"/>\n')
    _assert_refused(g, ("<!DOCTYPE", ":1:1:"), graph=True)


def test_billion_laughs_is_refused_fast_and_small(tmp_path: Path) -> None:
    levels = ['<!ENTITY lol0 "lol">'] + [f'<!ENTITY lol{i} "{("&lol%d;" % (i - 1)) * 10}">' for i in range(1, 10)]
    f = tmp_path / "billion-laughs.xml"
    f.write_text('<?xml version="1.0"?>\n<!DOCTYPE system [\n' + "\n".join(levels) + "\n]>\n"
                 '<system version="1"><cpu numaid="0" affinity="&lol9;"/></system>\n')
    _assert_refused(f, ("DTD",))


def test_huge_file_over_the_xml_limit_is_refused(tmp_path: Path) -> None:
    from ncclctl.nccl.xml import MAX_XML_BYTES

    f = tmp_path / "huge.xml"
    body = b'<system version="1">\n' + b"<!--" + b"x" * (MAX_XML_BYTES) + b"-->\n</system>\n"
    f.write_bytes(body)
    _assert_refused(f, ("over ncclctl's 16 MiB limit",))
    g = tmp_path / "huge-graph.xml"
    g.write_bytes(body.replace(b"system", b"graphs"))
    _assert_refused(g, ("over ncclctl's 16 MiB limit",), graph=True)


def test_file_over_the_read_limit_is_not_read_whole(tmp_path: Path) -> None:
    f = tmp_path / "sparse.xml"
    with open(f, "wb") as fh:
        fh.truncate(3 << 30)  # a 3 GiB sparse file: reading it whole would break the 1 GiB memory limit
    for argv in _commands(str(f)) + [("rings", "validate", str(f))]:
        proc, io_ = cli(*argv)
        assert proc.returncode == 3, (argv, proc.stderr)
        assert "larger than" in proc.stderr and str(f) in proc.stderr, proc.stderr
        assert io_["rchar"] < READ_BOUND, (argv, io_)  # refused on its size: the 3 GiB are not read


def test_deep_nesting_is_refused_fast_and_small(tmp_path: Path) -> None:
    depth = 100_000
    f = tmp_path / "deep.xml"
    f.write_bytes(b'<system version="1">' + b"<pci>" * depth + b"</pci>" * depth + b"</system>\n")
    _assert_refused(f, ("nested more than 256 levels",))
    g = tmp_path / "deep-ignored.xml"  # unknown elements: NCCL ignores them, nesting still counts
    g.write_bytes(b'<system version="1">\n' + b"<x>" * depth + b"</x>" * depth + b"</system>\n")
    _assert_refused(g, ("nested more than 256 levels", ":2:"))
    h = tmp_path / "deep-graph.xml"
    h.write_bytes(b'<graphs version="1"><graph>' + b"<channel>" * depth + b"</channel>" * depth + b"</graph></graphs>")
    _assert_refused(h, ("nested more than 256 levels",), graph=True)


def test_deep_nesting_stops_reading_at_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted, not timed: the tags read from 100,000 nested elements before the refusal are the 256 levels and
    a few more; a reader that reads the whole file and then measures its depth reads all 200,000."""
    from ncclctl.errors import InputError
    from ncclctl.nccl import xml as X

    tags = 0
    real = X._Reader.get_node

    def get_node(self):
        nonlocal tags
        tags += 1
        return real(self)

    monkeypatch.setattr(X._Reader, "get_node", get_node)
    depth = 100_000
    for data, kind in ((b'<system version="1">' + b"<pci>" * depth + b"</pci>" * depth + b"</system>\n", "topology"),
                       (b'<graphs version="1"><graph>' + b"<channel>" * depth + b"</channel>" * depth
                        + b"</graph></graphs>", "graph")):
        tags = 0
        with pytest.raises(InputError, match="nested more than 256 levels"):
            X.parse_nccl_xml(data, kind=kind, path="deep.xml")
        assert 256 <= tags <= 300, tags


def test_declaration_after_an_nccl_error_is_still_refused(tmp_path: Path) -> None:
    # A TAB stops NCCL's reader at line 1; the DTD further down must not reach lxml's XSD pass.
    f = tmp_path / "tab-then-dtd.xml"
    f.write_text('\t<system version="1">\n<!DOCTYPE system [<!ENTITY e SYSTEM "file:///etc/passwd">]>\n</system>\n')
    _assert_refused(f, ("DTD", ":2:1:"))


def test_declarations_inside_comments_are_fine(tmp_path: Path) -> None:
    f = tmp_path / "comment.xml"
    f.write_bytes(GOOD.read_bytes().replace(b"<system", b"<!-- <!DOCTYPE x> <!ENTITY y 'z'> -->\n<system", 1))
    proc, _ = cli("topo", "validate", "--no-xsd", str(f))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_lxml_pass_never_resolves_or_fetches(secret_file: Path, server) -> None:
    """Defence in depth: the XSD pass's lxml parser, fed a hostile file directly (past the gate), neither
    expands entities nor fetches anything."""
    from ncclctl.topo.schema import xsd_findings

    url, requests = server
    _control(url, requests)
    data = (f'<!DOCTYPE system SYSTEM "{url}/evil.dtd" [<!ENTITY a SYSTEM "file://{secret_file}">'
            f'<!ENTITY b SYSTEM "{url}/entity"><!ENTITY % p SYSTEM "{url}/p.dtd"> %p;]>\n'
            '<system version="1"><cpu vendor="&a;&b;&leak;"/></system>\n').encode()
    findings = xsd_findings(data, "topology", "hostile.xml")
    assert requests == []
    assert all(SECRET not in f.message and "LEAKED" not in f.message for f in findings)


def test_probe_and_lint_of_hostile_host_files(tmp_path: Path, server) -> None:
    """The probe captures /var/run/nvidia-topologyd/virtualTopology.xml and the file NCCL_TOPO_FILE names as
    text (never parsed as XML there); ``lint`` validates them: a DTD or 100,000 levels of nesting become an
    error finding (exit 1) that says the file is refused, not a crashed check, and nothing is fetched."""
    url, requests = server
    _control(url, requests)
    tree = tmp_path / "host"
    shutil.copytree(HOSTS / "cloud-vm-flat", tree, symlinks=True)
    vt = tree / "var/run/nvidia-topologyd/virtualTopology.xml"
    vt.parent.mkdir(parents=True)
    vt.write_text(f'<!DOCTYPE system SYSTEM "{url}/vt.dtd">\n<system version="1"><cpu vendor="&leak;"/></system>\n')
    proc, _ = cli("probe", "--root", str(tree), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert "LEAKED" not in proc.stdout and requests == []
    assert f"{url}/vt.dtd" in proc.stdout  # kept as text
    proc, _ = cli("lint", "--root", str(tree))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "NCCL023: ncclctl refuses to read the file: a DTD" in proc.stdout, proc.stdout
    assert "crashed" not in proc.stdout and requests == []

    topo = tree / "etc/nccl/topo.xml"
    topo.parent.mkdir(parents=True, exist_ok=True)
    topo.write_bytes(b'<system version="1">' + b"<pci>" * 100_000 + b"</pci>" * 100_000 + b"</system>\n")
    env = json.loads((tree / "env.json").read_text())
    env["NCCL_TOPO_FILE"] = "/etc/nccl/topo.xml"
    (tree / "env.json").write_text(json.dumps(env))
    proc, _ = cli("lint", "--root", str(tree))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "NCCL022: ncclctl refuses to read the file: elements nested more than 256 levels" in proc.stdout, proc.stdout
    assert "crashed" not in proc.stdout
