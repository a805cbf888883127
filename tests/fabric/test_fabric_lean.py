"""The lean fabric reader (ncclctl.fabric.lean) against the general path (parser + from_fabric).

On every input the lean reader takes, the graph must be the general path's, field for field and in the same
order, and so must every command's output built on it (fabric rails / order in every format); on every input it
does not take, it must step aside (None) so the general path reads it. Synthetic fabrics at a few sizes in both
ibnetdiscover forms, every fixture, and hostile variants (CRLF, re-indented lines, pasted prompts, inconsistent
links, duplicate GUIDs, odd characters, blank lines in the ports form...)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from ncclctl.fabric import graph as G
from ncclctl.fabric.sources import load_fabric_file
from ncclctl.fabric import lean
from ncclctl.fabric.synth import SynthSpec, as_form, synth

REPO = Path(__file__).resolve().parents[2]


def _built() -> bool:
    try:
        from ncclctl.fabric import _fastread  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture(autouse=True, params=["c", "python"])
def reader(request, monkeypatch):
    """Every test runs with the C readers (ncclctl/fabric/_fastread.c, when built) and with the pure-Python ones
    (NCCLCTL_PURE_PYTHON=1, what an install without a compiler gets): both must take the same inputs and build the
    same graph. The subprocess CLI tests inherit the variable."""
    if request.param == "c":
        if not _built():
            pytest.skip("the C accelerator is not built here (no compiler at install time): see test_accelerator_built")
        monkeypatch.delenv("NCCLCTL_PURE_PYTHON", raising=False)
        assert G.accelerator() is not None
    else:
        monkeypatch.setenv("NCCLCTL_PURE_PYTHON", "1")
        assert G.accelerator() is None
    return request.param


def test_accelerator_built():
    """Where the install asked for the accelerator (NCCLCTL_BUILD_C=1: CI and the README's set-up) and had a C
    compiler and the Python headers, it must have been built: a silent build failure would leave every run on the
    slower path and the C tests skipped. A default install (the pure-Python wheel) has none, by design."""
    import shutil
    import sysconfig

    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not (shutil.which("cc") or shutil.which("gcc")) or not headers.exists():
        pytest.skip("no C compiler or Python headers here: the pure-Python readers are the ones in use")
    from importlib.machinery import EXTENSION_SUFFIXES

    # (a module built for another Python in the same checkout is not this one's)
    here = any((REPO / "ncclctl" / "fabric" / f"_fastread{suffix}").exists() for suffix in EXTENSION_SUFFIXES)
    if not _built() and not here and os.environ.get("NCCLCTL_BUILD_C") is None:
        pytest.skip("installed without NCCLCTL_BUILD_C=1 (the default, pure-Python install): the C reader was not "
                    "asked for")
    assert _built(), ("ncclctl.fabric._fastread is missing: reinstall with "
                      "`NCCLCTL_BUILD_C=1 python -m pip install -e .` (setup.py)")
FABRIC_FIXTURES = sorted([*(REPO / "fixtures" / "fabric").rglob("*.txt"), *(REPO / "fixtures" / "outputs").glob("ib*.txt")])
FABRIC_FIXTURES = [p for p in FABRIC_FIXTURES if p.name.startswith(("ibnetdiscover", "iblinkinfo")) or "quirks" in p.parts]


def state(g: G.FabricGraph):
    return (g.source, g.kind, [(k, vars(v)) for k, v in g.switches.items()], list(g.hcas.items()),
            list(g.hca_links.items()), g.switch_links, g.other_links, list(g.direct.items()),
            [repr(f) for f in g.findings], list(g.aggregation))


def general(path: str) -> G.FabricGraph:
    text = G.read_fabric_text(path)
    kind, fabric = G.parse_fabric_text(text, source=path)
    return G.from_fabric(fabric, source=path, kind=kind)


def outputs(path: str, monkeypatch, use_lean: bool) -> list[str]:
    """fabric rails (json) and fabric order (every format) on ``path``, with or without the lean reader."""
    from ncclctl.fabric import order as fo
    from ncclctl.fabric.layout import analyze
    from ncclctl.fabric.sources import load_input

    with monkeypatch.context() as m:
        if not use_lean:
            m.setattr(lean, "read_graph", lambda path: None)
        lay = analyze(load_input(path, None))
    o = fo.plan_order(lay, slots=fo.default_slots(lay))
    out = [json.dumps([(f.rule, f.severity.value, f.message, f.line, f.host) for f in lay.findings])]
    out += [fo.render_order(o, lay, fmt) for fmt in ("text", "hostfile", "slurm", "slurm-block", "json")]
    return out


SIZES = [
    SynthSpec(nodes=64, rails=8),
    SynthSpec(nodes=300, rails=8, miscable=3, down=3, seed=2, host_order="interleaved"),
    SynthSpec(nodes=1024, rails=8, miscable=10, down=10, seed=1, host_order="interleaved"),
    SynthSpec(nodes=200, rails=4, group=16, miscable=2, down=5, seed=3),
]


@pytest.mark.parametrize("form", ["ibnetdiscover", "ibnetdiscover-p"])
@pytest.mark.parametrize("spec", SIZES, ids=lambda s: f"{s.nodes}x{s.rails}")
def test_synthetic_fabric_same_graph_and_output(tmp_path, monkeypatch, spec, form):
    text = synth(spec).text
    path = tmp_path / "fabric.txt"
    path.write_text(text if form == "ibnetdiscover" else as_form(text, form))
    g = lean.read_graph(str(path))
    assert g is not None, "the lean reader should take the tool's own layout"
    assert state(g) == state(general(str(path)))
    assert outputs(str(path), monkeypatch, True) == outputs(str(path), monkeypatch, False)


@pytest.mark.parametrize("path", FABRIC_FIXTURES, ids=lambda p: str(p.relative_to(REPO)))
def test_fixture_same_graph(path):
    g = lean.read_graph(str(path))
    if g is not None:
        assert state(g) == state(general(str(path)))
    assert state(load_fabric_file(str(path))) == state(general(str(path)))


def _topo() -> str:
    return synth(SynthSpec(nodes=40, rails=4, group=8, miscable=1, down=1, seed=5)).text


def _first(text: str, prefix: str) -> int:
    return next(i for i, ln in enumerate(text.split("\n")) if ln.startswith(prefix))


def _edit_line(text: str, prefix: str, fn) -> str:
    lines = text.split("\n")
    i = _first(text, prefix)
    lines[i] = fn(lines[i])
    return "\n".join(lines)


# (name, text builder): inputs the lean reader must leave to the general path.
HOSTILE = [
    ("spaces-for-tabs", lambda: _topo().replace("\t", "    ")),
    ("pasted-prompt", lambda: "user@login01:~$ sudo ibnetdiscover\n" + _topo() + "user@login01:~$ \n"),
    ("comment-between-links", lambda: _edit_line(_topo(), "[2]", lambda s: "# a note\n" + s)),
    ("blank-between-links", lambda: _edit_line(_topo(), "[2]", lambda s: "\n" + s)),
    ("ibwarn-line", lambda: "ibwarn: [1234] mad_rpc: _do_madrpc failed\n" + _topo()),
    ("non-ascii-desc", lambda: _topo().replace("node00001 mlx5_0", "nöde00001 mlx5_0")),
    ("vertical-tab", lambda: _topo().replace("\n\n", "\n\x0b\n", 1)),
    ("nul-byte", lambda: _topo().replace("\n\n", "\n\x00\n", 1)),
    ("one-end-differs", lambda: _edit_line(_topo(), "[1](", lambda s: s.replace('"[1]', '"[2]', 1))),
    ("duplicate-guid", lambda: _topo() + "\n" + _topo()[_topo().index("vendid=0x2c9\ndevid=0x1021"):]),
    ("trailing-space-on-link", lambda: _edit_line(_topo(), "[3]", lambda s: s + " ")),
    ("unknown-speed", lambda: _topo().replace("4xNDR", "4xQQR")),
    ("link-before-node", lambda: "[1]\t\"S-0000000000000001\"[1]\t\t# \"x\" lid 1 4xNDR\n" + _topo()),
    ("sysimg-with-paren", lambda: _topo().replace("sysimgguid=0x", "sysimgguid=(0x", 1)),
    ("port-beyond-node", lambda: _edit_line(_topo(), "[1](", lambda s: "[99" + s[2:])),
    # NumPorts is 8-bit: a huge count would make every HCA's port tuple (1..N) gigabytes (MemoryError at best)
    ("ca-huge-nports", lambda: _edit_line(_topo(), "Ca\t", lambda s: "Ca\t999999999" + s[s.index(" "):])),
    ("empty", lambda: ""),
    ("only-comments", lambda: "#\n# nothing\n"),
    ("garbage", lambda: "hello world\n"),
]
HOSTILE_P = [
    ("p-blank-line", lambda t: t.replace("\n", "\n\n", 1)),
    ("p-comment", lambda t: "# ports\n" + t),
    ("p-quote-in-desc", lambda t: t.replace("node00001 mlx5_0", "node00001's mlx5_0")),
    ("p-long-desc", lambda t: t.replace("node00001 mlx5_0", "n" * 70)),
    ("p-wide-spaces", lambda t: t.replace(" - ", " " * 40 + "-" + " " * 40, 1)),
    ("p-unknown-speed", lambda t: t.replace(" NDR ", " QQR ", 1)),
    ("p-ca-to-ca", lambda t: t.replace("- SW", "- CA", 1)),
]


def _check_fallback(tmp_path, text: str) -> None:
    path = tmp_path / "fabric.txt"
    path.write_bytes(text.encode())
    assert lean.read_graph(str(path)) is None
    try:
        want = state(general(str(path)))
    except Exception as exc:  # the general path refuses it: so must loading
        with pytest.raises(type(exc)):
            load_fabric_file(str(path))
        return
    assert state(load_fabric_file(str(path))) == want


@pytest.mark.parametrize("form", ["ibnetdiscover", "ibnetdiscover-p"])
@pytest.mark.parametrize("how", ["crlf", "lone-cr"])
def test_cr_line_ends_stay_on_the_lean_path(tmp_path, form, how):
    """CRLF and a lone CR are line ends for the general parser too (issue 29: one CR sent a 673 MB fabric to the
    slow path): the lean reader reads them, with the general path's graph."""
    text = as_form(_topo(), form)
    text = text.replace("\n", "\r\n") if how == "crlf" else text.replace("\n", "\r", 3)
    path = tmp_path / "fabric.txt"
    path.write_bytes(text.encode())
    got = lean.read_graph(str(path))
    assert got is not None
    assert state(got) == state(general(str(path)))


@pytest.mark.parametrize("name,build", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_topology_goes_to_general_path(tmp_path, name, build):
    _check_fallback(tmp_path, build())


@pytest.mark.parametrize("name,edit", HOSTILE_P, ids=[h[0] for h in HOSTILE_P])
def test_hostile_ports_form_goes_to_general_path(tmp_path, name, edit):
    _check_fallback(tmp_path, edit(as_form(_topo(), "ibnetdiscover-p")))


def test_huge_numbers_refused_or_ignored_not_a_crash(tmp_path, cli):
    """A port count beyond NodeInfo's 8 bits is refused with the file, line and fix (it was a MemoryError); a
    switch LID of thousands of digits is no LID (int() of it raised ValueError: an internal error)."""
    path = tmp_path / "fabric.txt"
    path.write_text(_edit_line(_topo(), "Ca\t", lambda s: "Ca\t999999999" + s[s.index(" "):]))
    r = cli("fabric", "rails", str(path))
    line = _first(path.read_text(), "Ca\t") + 1
    assert r.returncode == 3 and f"fabric.txt:{line}: Ca " in r.stderr and "at most 255" in r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    text = _topo()
    big = text.replace(" port 0 lid ", " port 0 lid " + "9" * 5000, 1)
    assert big != text
    path.write_text(big)
    g = lean.read_graph(str(path))
    assert g is not None and state(g) == state(general(str(path)))
    assert next(iter(g.switches.values())).lid is None
    r = cli("fabric", "rails", str(path), "--format", "json")
    assert r.returncode in (0, 1) and "internal error" not in r.stderr


def test_no_trailing_newline_and_router_and_aggregation_node(tmp_path, monkeypatch):
    """Accepted variants: no newline at the end; a SHARP Aggregation Node CA inside a switch (its sysimgguid is
    the switch's GUID) is marked as one, as the general path marks it."""
    text = _topo()
    sw = text.index("switchguid=0x")
    sw_guid = text[sw + 13:sw + 29]
    ca = text.index("vendid=0x2c9\ndevid=0x1021\nsysimgguid=0x")
    start = ca + len("vendid=0x2c9\ndevid=0x1021\nsysimgguid=0x")
    text = text[:start] + sw_guid + text[start + 16:]
    path = tmp_path / "fabric.txt"
    path.write_text(text.rstrip("\n"))
    g = lean.read_graph(str(path))
    assert g is not None and g.aggregation
    assert state(g) == state(general(str(path)))
    assert outputs(str(path), monkeypatch, True) == outputs(str(path), monkeypatch, False)


def test_cli_order_slurm_same_with_and_without_lean(tmp_path, cli):
    """Through the CLI: the same bytes as the general path (NCCLCTL has no switch for it; the general path is
    forced by a copy of the same fabric with a trailing space on a link line, which the lean reader leaves alone;
    a CRLF copy was used before the lean reader read CR line ends)."""
    text = synth(SynthSpec(nodes=256, rails=8, miscable=2, down=2, host_order="interleaved")).text
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a, b = tmp_path / "a" / "fabric.txt", tmp_path / "b" / "fabric.txt"
    a.write_text(text)
    b.write_text(_edit_line(text, "[3]", lambda s: s + " "))
    assert lean.read_graph(str(a)) is not None and lean.read_graph(str(b)) is None
    ra = cli("fabric", "order", str(a), "-f", "slurm")
    rb = cli("fabric", "order", str(b), "-f", "slurm")
    assert ra.returncode == rb.returncode == 0
    assert ra.stdout.replace("/a/", "/b/") == rb.stdout and "SwitchName=" in ra.stdout


def _swap_guid(text: str, old: str, new: str) -> str:
    return text.replace(old, new)


def _shuffle_leaf_links(text: str) -> str:
    """The first switch block's link lines in reverse order: HCA links no longer a prefix of the block."""
    lines = text.split("\n")
    i = _first(text, "Switch\t") + 1
    j = i
    while lines[j].startswith("["):
        j += 1
    lines[i:j] = lines[i:j][::-1]
    return "\n".join(lines)


def _slow_link(text: str) -> str:
    """One HCA link at 4xHDR, from both ends (a second rate in a switch block and in the CA blocks)."""
    i = text.index('# "node00002 mlx5_1" lid')
    e = text.index("\n", i)
    text = text[:i] + text[i:e].replace("4xNDR", "4xHDR") + text[e:]
    k = text.index('Ca\t1 "H-', text.index('"node00002 mlx5_1"\n') - 40)
    e = text.index("\n\n", k)
    return text[:k] + text[k:e].replace("4xNDR", "4xHDR") + text[e:]


def _narrow_links(text: str, which: str) -> str:
    """Links trained down to 1x (a degraded cable: the usual field fault), from both ends: the first leaf-spine link
    ("spine"), the first HCA link ("hca") or both ("both"); a second width in a block and in the ports form's chunk."""
    lines = text.split("\n")
    kinds = ["S", "H"] if which == "both" else ["S" if which == "spine" else "H"]
    for kind in kinds:
        owner = ""
        for i, ln in enumerate(lines):
            if ln.startswith("Switch\t"):
                owner = ln.split('"')[1][2:]
            m = re.match(r'\[(\d+)\]\t"' + kind + r'-([0-9a-f]{16})"\[(\d+)\]', ln)
            if owner and m and ln.endswith(" 4xNDR"):
                lines[i] = ln[:-5] + "1xNDR"
                port, far, fport = m.groups()
                break
        far_line = re.compile(r'\[' + fport + r'\](\([0-9a-f]+\) )?\t"S-' + owner + r'"\[' + port + r'\]')
        start = next(j for j, ln in enumerate(lines) if ln.split('"')[1:2] == [("S-" if kind == "S" else "H-") + far])
        k = next(j for j in range(start + 1, len(lines)) if far_line.match(lines[j]))
        assert lines[k].endswith(" 4xNDR")
        lines[k] = lines[k][:-5] + "1xNDR"
    return "\n".join(lines)


@pytest.mark.parametrize("form", ["ibnetdiscover", "ibnetdiscover-p"])
@pytest.mark.parametrize("which", ["spine", "hca", "both"])
@pytest.mark.parametrize("chunk", ["default", "whole-file"])
def test_degraded_width_links_read_as_the_general_path_does(tmp_path, monkeypatch, cli, reader, form, which, chunk):
    """A link trained down to 1x, a switch-switch one, an HCA one, or both: the lean reader (C and pure Python) builds
    the general path's graph and every command output is the same; through the command line it is reported, not a
    crash (the pure-Python ports reader once read a narrowed column twice when a chunk held a second width and
    switch links listed from both ends, and stopped with an internal error: "whole-file" reads the ports form in one
    chunk, as a large file's chunks are)."""
    if chunk == "whole-file":
        monkeypatch.setattr(lean, "_PCHUNK", 1 << 24)
    text = _narrow_links(_topo(), which)
    assert text.count("1xNDR") == (4 if which == "both" else 2)
    if form != "ibnetdiscover":
        text = as_form(text, form)
        assert text.count(" 1x NDR") == (4 if which == "both" else 2)
    path = tmp_path / "fabric.txt"
    path.write_text(text)
    g = lean.read_graph(str(path))
    assert g is not None and state(g) == state(general(str(path)))
    assert outputs(str(path), monkeypatch, True) == outputs(str(path), monkeypatch, False)
    if chunk == "default":  # (the command line reads with the default chunks)
        r = cli("fabric", "rails", str(path), "-f", "json")
        assert r.returncode in (0, 1, 2) and "internal error" not in r.stderr, r.stderr
        assert json.loads(r.stdout)


def _two_port_ca(text: str) -> str:
    """A CA with a second port line: a seven-line CA block the bulk pattern does not take."""
    k = text.index('Ca\t1 "H-')
    e = text.index("\n\n", k)
    return text[:k] + text[k:e].replace("Ca\t1", "Ca\t2", 1) + "\n[2](0000000000000099) \t\"H-0000000000000098\"[1]" \
        "\t\t# lid 1 lmc 0 \"x\" lid 2 4xNDR" + text[e:]


# (name, builder, whether the bulk pass takes it): variants the lean reader takes; the bulk pass of the topology
# form takes the usual ones and steps aside for the others (the per-block pass then reads them); every graph the
# lean reader builds must be the general path's.
BULK = [
    ("usual", lambda: _topo(), True),
    ("links-not-in-port-order", lambda: _shuffle_leaf_links(_topo()), True),
    ("spine-guid-below-leaves", lambda: _swap_guid(_topo(), "043f720200000000", "0000000000000007"), True),
    ("second-rate", lambda: _slow_link(_topo()), True),
    ("sysimg-short-upper", lambda: _topo().replace("sysimgguid=0x043f7203", "sysimgguid=0x43F7203"), True),
    ("two-port-ca", lambda: _two_port_ca(_topo()), False),
    ("switch-after-ca", lambda: (lambda t: t[t.index("\nvendid=0x2c9\ndevid=0x1021") + 1:]
                                 + t[:t.index("\nvendid=0x2c9\ndevid=0x1021") + 1])(_topo()), False),
]


@pytest.mark.parametrize("name,build,bulk", BULK, ids=[b[0] for b in BULK])
def test_topology_bulk_pass_same_graph(tmp_path, monkeypatch, name, build, bulk):
    text = build()
    path = tmp_path / "fabric.txt"
    path.write_text(text)
    b = lean._topology_bulk(text, str(path))
    assert (b is not None) == bulk
    want = state(general(str(path)))
    if b is not None:
        assert state(b) == want
    g = lean.read_graph(str(path))
    if g is not None:
        assert state(g) == want
    assert outputs(str(path), monkeypatch, True) == outputs(str(path), monkeypatch, False)


def _mutants(text: str, n: int, seed: int):
    """Small random edits of ``text``: a character replaced by one that matters to the layout, deleted or
    doubled, a line doubled, two lines swapped."""
    import random

    rnd = random.Random(seed)
    chars = " \t\n'\"[]()09afAFx-#?SHRC_"
    for _ in range(n):
        t = text
        op = rnd.randrange(5)
        i = rnd.randrange(len(t))
        if op == 0:
            t = t[:i] + rnd.choice(chars) + t[i + 1:]
        elif op == 1:
            t = t[:i] + t[i + 1:]
        elif op == 2:
            t = t[:i] + t[i] + t[i:]
        else:
            lines = t.split("\n")
            a, b = rnd.randrange(len(lines)), rnd.randrange(len(lines))
            if op == 3:
                lines.insert(a, lines[b])
            else:
                lines[a], lines[b] = lines[b], lines[a]
            t = "\n".join(lines)
        yield t


@pytest.mark.parametrize("form", ["ibnetdiscover", "ibnetdiscover-p"])
def test_c_and_python_readers_agree_on_mutants(tmp_path, monkeypatch, reader, form):
    """Differential test of the two implementations: on 400 random small edits of a fabric (most of them outside
    the tool's layout, some still inside it), the C reader takes exactly the inputs the Python reader takes and
    builds the same graph."""
    if reader != "c":
        pytest.skip("compares the C reader with the Python one: runs once, in the C pass")
    text = synth(SynthSpec(nodes=12, rails=2, group=4, miscable=1, down=1, seed=7)).text
    if form != "ibnetdiscover":
        text = as_form(text, form)
    path = tmp_path / "fabric.txt"
    taken = 0
    for t in _mutants(text, 400, seed=11 if form == "ibnetdiscover" else 12):
        path.write_text(t)
        monkeypatch.delenv("NCCLCTL_PURE_PYTHON", raising=False)
        c = lean.read_graph(str(path))
        monkeypatch.setenv("NCCLCTL_PURE_PYTHON", "1")
        py = lean.read_graph(str(path))
        assert (c is None) == (py is None), t
        if c is not None:
            assert py is not None
            taken += 1
            assert state(c) == state(py), t
    assert 20 < taken < 400  # both outcomes exercised


def _greedy(pattern: re.Pattern) -> re.Pattern:
    """``pattern`` with its possessive repeats made greedy: the form Python 3.10 compiles (lean._P is empty there)."""
    return re.compile(re.sub(r"(\{[0-9]+(?:,[0-9]+)?\}|\*|\+)\+", r"\1", pattern.pattern))


@pytest.mark.parametrize("form", ["ibnetdiscover", "ibnetdiscover-p"])
def test_possessive_and_greedy_patterns_read_the_same(tmp_path, monkeypatch, reader, form):
    """The fast patterns use possessive repeats where Python has them (3.11+) and the same patterns greedy on 3.10,
    which has none (a possessive repeat there is a compile error: "multiple repeat"). Every repeat in them is followed
    by a character it cannot take, so both forms must find the same records in any text: on the tool's output and
    400 random edits of it, each pattern's findall is the same, and so is the pure-Python reader's graph (or None)."""
    if reader != "python":
        pytest.skip("the pure-Python reader's patterns: runs once")
    names = ["_LINK_SW", "_CA_UNIT", "_PLINE_FAST"]
    fast = {n: getattr(lean, n) for n in names}
    slow = {n: _greedy(p) for n, p in fast.items()}
    if lean._P:  # Python 3.11+: the two forms differ in their source, not in what they match
        assert all(slow[n].pattern != fast[n].pattern for n in names)
    text = _topo() if form == "ibnetdiscover" else as_form(_topo(), form)
    path = tmp_path / "fabric.txt"
    taken = 0
    for t in [text, *_mutants(text, 400, seed=21)]:
        body = "\n" + t
        for n in names:
            assert fast[n].findall(body) == slow[n].findall(body), (n, t)
        path.write_text(t)
        got = lean.read_graph(str(path))
        for n in names:
            monkeypatch.setattr(lean, n, slow[n])
        want = lean.read_graph(str(path))
        for n in names:
            monkeypatch.setattr(lean, n, fast[n])
        assert (got is None) == (want is None), t
        if got is not None:
            taken += 1
            assert state(got) == state(want), t
    assert 20 < taken < 401


def test_link_claims_tell_swapped_links_apart(reader):
    """Both ends of the links are compared by sums of per-claim fingerprints (graph.claim). Plain tuple hashes were
    used before: two spine link lines swapped between blocks (so that the two ends disagree) gave equal sums in
    about 1 hash seed of 8 (CPython's tuple hash is nearly linear in its items), and the fast readers then took an
    inconsistent file. 2,000 random swaps: no fingerprint sum may agree; the plain hashes' do, which is why."""
    import random

    if reader != "python":
        pytest.skip("pure Python: runs once")
    rnd = random.Random(1)
    same_hash = same_claim = 0
    for _ in range(2000):
        l1, l2, s1, s3 = (f"{rnd.getrandbits(64):016x}" for _ in range(4))
        a, b, x, y = (rnd.randrange(1, 65) for _ in range(4))
        listed_by_leaves = [(l1, a, s3, x), (l2, b, s1, y)]
        listed_by_spines = [(l1, a, s1, x), (l2, b, s3, y)]
        same_hash += sum(map(hash, listed_by_leaves)) == sum(map(hash, listed_by_spines))
        keyed_leaves = [(G.CLAIM_KEY, *c) for c in listed_by_leaves]  # claims() takes them with the key first
        same_claim += G.claims(keyed_leaves) == G.claims([(G.CLAIM_KEY, *c) for c in listed_by_spines])
        assert G.claims(keyed_leaves) == sum(map(G.claim, listed_by_leaves))
    assert same_claim == 0
    assert same_hash > 20  # (about 13%: the weakness the fingerprint removes)


def test_swapped_spine_lines_go_to_general_path(tmp_path, reader):
    """The file the mutation fuzzing found: two link lines of two spines swapped. Neither fast reader takes it
    (whatever the hash seed), and the general path reports the disagreement."""
    text = synth(SynthSpec(nodes=12, rails=2, group=4, miscable=1, down=1, seed=7)).text
    lines = text.split("\n")
    spines = [i for i, ln in enumerate(lines) if ln.startswith("Switch") and "spine" in ln]
    i, j = spines[1] + 5, spines[3] + 5
    assert lines[i].startswith("[") and lines[j].startswith("[") and lines[i] != lines[j]
    lines[i], lines[j] = lines[j], lines[i]
    path = tmp_path / "fabric.txt"
    path.write_text("\n".join(lines))
    assert lean.read_graph(str(path)) is None
    g = load_fabric_file(str(path))
    assert g.findings, "the general path reports the two ends' disagreement"


def _endpoints_both(monkeypatch, g):
    """graph.host_endpoints of ``g`` with the C loop and with the Python one: (hosts, findings, unknown) each."""
    res = []
    for pure in ("", "1"):
        monkeypatch.setenv("NCCLCTL_PURE_PYTHON", pure) if pure else monkeypatch.delenv("NCCLCTL_PURE_PYTHON",
                                                                                        raising=False)
        unknown: list = []
        eps, found = G.host_endpoints(g, unknown_out=unknown)
        plain = G.host_endpoints(g)
        res.append(([(h, list(d.items())) for h, d in eps.items()], [repr(f) for f in found], unknown,
                    [(h, list(d.items())) for h, d in plain[0].items()], [repr(f) for f in plain[1]]))
    return res


DESC_QUIRKS = [("node00001 mlx5_0", "localhost mlx5_0"), ("node00002 mlx5_0", "LOCALHOST.localdomain mlx5_0"),
               ("node00003 mlx5_0", "(none) mlx5_0"), ("node00004 mlx5_0", "MT4129 ConnectX7   Mellanox Technologies"),
               ("node00005 mlx5_1", "node00006 mlx5_1"), ("node00007 mlx5_0", "  node00007   mlx5_0 "),
               ("node00008 mlx5_1", "node00008"), ("node00009 mlx5_0", "lnode00009 mlx5_0")]


@pytest.mark.parametrize("form", ["ibnetdiscover", "ibnetdiscover-p"])
@pytest.mark.parametrize("quirks", [0, 1, 2], ids=["plain", "odd-descriptions", "one-used-twice"])
def test_host_endpoints_c_and_python_agree(tmp_path, monkeypatch, reader, form, quirks):
    """graph.host_endpoints in C (fabric file alone) against its Python loop: the same hosts, endpoints (in the
    same order), findings and unknown HCAs, on a fabric whose descriptions name no host (firmware default,
    localhost in any case, "(none)"), are used by two HCAs (FAB012: the C loop steps aside), or have odd spacing."""
    if reader != "c":
        pytest.skip("compares the C loop with the Python one: runs once, in the C pass")
    text = synth(SynthSpec(nodes=40, rails=2, group=8, miscable=1, down=1, seed=3)).text
    for old, new in DESC_QUIRKS if quirks else ():
        if quirks == 2 or new != "node00006 mlx5_1":
            assert f'"{old}"' in text
            text = text.replace(f'"{old}"', f'"{new}"')
    path = tmp_path / "fabric.txt"
    path.write_text(text if form == "ibnetdiscover" else as_form(text, form))
    g = load_fabric_file(str(path))
    c, py = _endpoints_both(monkeypatch, g)
    assert c == py
    assert c[0] and (not quirks or c[2])
    # the C loop took the fabric, except where a description is used twice (FAB012: the Python loop reports it)
    monkeypatch.delenv("NCCLCTL_PURE_PYTHON", raising=False)
    fast = G.accelerator()
    assert (fast.endpoints(g.hcas, g.hca_links, g.aggregation, G._NO_HOST, G.Endpoint) is None) == (quirks == 2)
    assert (quirks == 2) == any("FAB012" in f for f in c[4])


@pytest.mark.parametrize("path", FABRIC_FIXTURES, ids=lambda p: str(p.relative_to(REPO)))
def test_host_endpoints_c_and_python_agree_on_fixtures(monkeypatch, reader, path):
    if reader != "c":
        pytest.skip("compares the C loop with the Python one: runs once, in the C pass")
    c, py = _endpoints_both(monkeypatch, load_fabric_file(str(path)))
    assert c == py


@pytest.mark.parametrize("form", ["ibnetdiscover", "ibnetdiscover-p"])
def test_host_endpoints_python_takes_links_in_step(tmp_path, monkeypatch, reader, form):
    """The Python loop of graph.host_endpoints takes each HCA's link in step with it when the links are in the
    HCAs' order, at most one each (the readers' order): it looks up only the ports of the HCAs without a link. With
    the links in another order, or an HCA with two links, it looks every port up: the same endpoints and
    findings."""
    if reader != "c":
        pytest.skip("the Python loop's look-ups: runs once, in the C pass")
    text = synth(SynthSpec(nodes=40, rails=2, group=8, miscable=1, down=1, seed=3)).text
    path = tmp_path / "fabric.txt"
    path.write_text(text if form == "ibnetdiscover" else as_form(text, form))
    g = load_fabric_file(str(path))
    monkeypatch.setenv("NCCLCTL_PURE_PYTHON", "1")
    calls = [0]

    class Counting(dict):
        def get(self, key, default=None):
            calls[0] += 1
            return super().get(key, default)

    def run(links):
        g.hca_links = Counting(links)
        calls[0] = 0
        eps, found = G.host_endpoints(g)
        return ([(h, [(k, (e.host, e.hca, e.port, e.guid, e.line, e.link)) for k, e in d.items()])
                 for h, d in eps.items()], [repr(f) for f in found]), calls[0]

    links = dict(g.hca_links)
    in_step, looked_up = run(links)
    n_eps = sum(len(d) for _h, d in in_step[0])
    linked = {guid for guid, _port in links}
    assert len(linked) == len(links) and 0 < len(links) <= n_eps  # one link each
    assert (len(links) < n_eps) == (form == "ibnetdiscover")  # some HCAs without one (a port down)
    assert looked_up == n_eps - len(links)
    assert run(dict(reversed(list(links.items())))) == (in_step, n_eps)
    # an HCA with a second link (its port 9): every port looked up, that port's endpoint added
    guid, port = next(iter(links))
    two = dict(links)
    two[(guid, 9)] = links[(guid, port)]
    (eps2, found2), looked_up2 = run(two)
    assert looked_up2 == n_eps + 1 and found2 == in_step[1]
    assert sum(len(d) for _h, d in eps2) == n_eps + 1


def _wide_core(n: int) -> str:
    """A core switch listing links to ``n`` switches described only after it: the C reader's GUID table grows
    while it is inside that block (its slots move; the reader must keep nothing that points into them)."""
    lines = ["vendid=0x2c9", "devid=0xd2f2", "sysimgguid=0x0000000000000001", "switchguid=0x0000000000000001",
             f'Switch\t{n} "S-0000000000000001"\t\t# "core" enhanced port 0 lid 1 lmc 0']
    lines += [f'[{i}]\t"S-{0x100000 + i:016x}"[1]\t\t# "leaf{i}" lid {i + 1} 4xNDR' for i in range(1, n + 1)]
    for i in range(1, n + 1):
        lines += ["", f'Switch\t1 "S-{0x100000 + i:016x}"\t\t# "leaf{i}" enhanced port 0 lid {i + 1} lmc 0',
                  f'[1]\t"S-0000000000000001"[{i}]\t\t# "core" lid 1 4xNDR']
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("form", ["ibnetdiscover", "ibnetdiscover-p"])
def test_c_reader_table_growth_inside_a_block(tmp_path, reader, form):
    """Under the debugging allocator (freed memory overwritten), in a child process: the C reader reads a block
    during which its GUID table grows several times, and builds the Python reader's graph."""
    import subprocess
    import sys

    if reader != "c":
        pytest.skip("the C reader's memory handling: runs once, in the C pass")
    text = _wide_core(1500)
    path = tmp_path / "fabric.txt"
    path.write_text(text if form == "ibnetdiscover" else as_form(text, form))
    code = ("import os, sys; sys.path.insert(0, sys.argv[2]); from test_fabric_lean import state; "
            "from ncclctl.fabric import lean; c = lean.read_graph(sys.argv[1]); os.environ['NCCLCTL_PURE_PYTHON'] = '1'; "
            "p = lean.read_graph(sys.argv[1]); assert c is not None and p is not None; "
            "assert state(c) == state(p); print(len(c.switches))")
    env = {k: v for k, v in __import__("os").environ.items() if k != "NCCLCTL_PURE_PYTHON"}
    r = subprocess.run([sys.executable, "-c", code, str(path), str(Path(__file__).parent)], capture_output=True,
                       text=True, env={**env, "PYTHONMALLOC": "debug"}, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["1501"]


def test_ports_fast_pattern_and_full_pattern_read_the_same(monkeypatch, reader):
    """The ports reader tries _PLINE_FAST (ibnetdiscover's own spacing and GUIDs) on each chunk and reads a chunk
    with _PLINE where the fast pattern misses a line: on the tool's output, on lines that only _PLINE takes (a TAB in
    the first, a middle and the last chunk; upper-case short GUIDs) and on 300 random edits, with chunks of a few
    lines, the graph (or None) is the one _PLINE alone gives; the fast pattern reads every chunk of the tool's
    own output, and an edited line sends its chunk alone to _PLINE."""
    text = as_form(synth(SynthSpec(nodes=12, rails=2, group=4, miscable=1, down=1, seed=7)).text, "ibnetdiscover-p")
    lines = text.split("\n")
    edits = ["\n".join(lines[:k] + [lines[k].replace(" ", "\t", 1)] + lines[k + 1:])
             for k in (0, len(lines) // 2, len(lines) - 2)]
    upper = text.replace("0x043f", "0x43F")  # every GUID: _PLINE reads every chunk
    if reader != "python":
        pytest.skip("the pure-Python reader's two patterns: runs once")
    fast, full = lean._PLINE_FAST, lean._PLINE
    calls = []

    class Counting:
        @staticmethod
        def findall(*a):
            calls.append(1)
            return full.findall(*a)

    monkeypatch.setattr(lean, "_PCHUNK", 700)
    taken = 0
    for t in [text, upper, *edits, *_mutants(text, 300, seed=13)]:
        monkeypatch.setattr(lean, "_PLINE_FAST", full)
        want = lean._ports(["\n" + t], "f")
        monkeypatch.setattr(lean, "_PLINE_FAST", fast)
        monkeypatch.setattr(lean, "_PLINE", Counting)
        calls.clear()
        got = lean._ports(["\n" + t], "f")
        monkeypatch.setattr(lean, "_PLINE", full)
        assert (got is None) == (want is None), t
        if want is not None:
            taken += 1
            assert state(got) == state(want), t
        if t is text:
            assert want is not None and not calls
        elif t is upper:
            assert want is not None and len(calls) > 3
        elif t in edits:
            assert want is not None and len(calls) == 1
    assert 20 < taken < 300


def _p_variants(text: str) -> list[tuple[str, str]]:
    """The -p form's own layout with the cases the column reader handles apart: unlinked ports on HCAs and
    switches, a two-line HCA, a router, an HCA linked to a router, a switch GUID below its HCAs', several widths
    and speeds, a port above 256, HCA lines between switch lines."""
    lines = text.split("\n")
    ca = [k for k, ln in enumerate(lines) if ln.startswith("CA ")]
    sw = [k for k, ln in enumerate(lines) if ln.startswith("SW ")]
    out = [("usual", text)]
    two = list(lines)  # a second, unlinked port line on one HCA (right after its first)
    first = two[ca[3]]
    two.insert(ca[3] + 1, first.split(" - ")[0].replace("  1 0x", "  2 0x", 1).replace(" 4x NDR", " 4x SDR")
               + "   '" + first.split("( '")[1].split("'")[0] + "'")
    out.append(("two-line-hca", "\n".join(two)))
    out.append(("router", re.sub(r"^SW( +1 [ 0-9]{2} 0x)", r"RT\1", text, flags=re.M)))
    out.append(("hdr-link", "\n".join(ln.replace(" 4x NDR ", " 4x HDR ") if k in (ca[0], sw[-1]) else ln
                                      for k, ln in enumerate(lines))))
    cut = next(k for k in range(1, len(sw)) if lines[sw[k]].split()[3] != lines[sw[0]].split()[3])  # 2nd switch
    mixed = [lines[k] for k in sw[:cut]] + [lines[k] for k in ca[:5]] + [lines[k] for k in sw[cut:]] \
        + [lines[k] for k in ca[5:]]
    out.append(("hcas-between-switches", "\n".join(mixed)))
    tca = [ln for ln in two if ln.startswith("CA ")]  # the two-line HCA among them
    out.append(("two-line-hca-between-switches", "\n".join([lines[k] for k in sw[:cut]] + tca[:6]
                                                             + [lines[k] for k in sw[cut:]] + tca[6:])))
    out.append(("low-switch-guid", text.replace("0x043f720100000000", "0x0000000000000001")))
    out.append(("port-257", text.replace(" 1 65 0x043f7201", " 1 257 0x043f7201", 1)))
    return out


@pytest.mark.parametrize("chunk", [300, 700, 1 << 16])
def test_ports_columns_build_the_ports_graph(monkeypatch, reader, chunk):
    """The -p form read in columns (_ports_cols) against the line-by-line reader (_ports): on the tool's own output,
    at chunk sizes that cut nodes of every kind, it builds _ports' graph entry for entry and in the same order; on
    200 random edits it builds that graph or steps aside (_DECLINE, then _ports decides), never a graph where _ports
    gives another one or None."""
    if reader != "python":
        pytest.skip("the pure-Python reader: runs once")
    monkeypatch.setattr(lean, "_PCHUNK", chunk)
    text = as_form(synth(SynthSpec(nodes=24, rails=2, group=4, miscable=1, down=2, seed=5)).text, "ibnetdiscover-p")
    for name, t in _p_variants(text):
        want = lean._ports(["\n" + t], "f")
        got = lean._ports_cols(t, "f")
        assert want is not None and got is not lean._DECLINE, name
        assert state(got) == state(want), name
    if chunk != 700:
        return
    taken = declined = 0
    for t in _mutants(text, 200, seed=21):
        want = lean._ports(["\n" + t], "f")
        got = lean._ports_cols(t, "f")
        if got is lean._DECLINE:
            declined += 1
            continue
        assert want is not None and state(got) == state(want), t
        taken += 1
    assert taken > 20 and declined > 20, (taken, declined)
