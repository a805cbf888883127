"""The README's command table says only what is true (issue 28): every option a row names is an option of that
command, every ``--format`` value it lists is one the command takes, and the sentence under the table about
``--format json`` holds for every command it covers. Checked against each command's own ``--help``."""

from __future__ import annotations

import re

import pytest

from conftest import REPO, run_cli

README = (REPO / "README.md").read_text(encoding="utf-8")
SECTION = README.split("\n## Commands\n", 1)[1].split("\n## ", 1)[0]
#: The commands the README says do not take --format json (they print a file as it is written).
NO_JSON = {("fleet", "blocks"), ("schema",), ("completion",)}


def _rows() -> list[tuple[tuple[str, ...], str]]:
    rows = []
    for line in SECTION.splitlines():
        if not line.startswith("| `ncclctl"):
            continue
        cell = line.split(" | ")[0]
        for code in re.findall(r"`(ncclctl [^`]*)`", cell):
            code = code.replace("\\|", "|")
            words = []
            for w in code.split()[1:]:
                if not re.fullmatch(r"[a-z][a-z-]*", w):
                    break
                words.append(w)
            rows.append((tuple(words), code))
    return rows


ROWS = _rows()


def _help(words: tuple[str, ...]) -> str:
    r = run_cli(*words, "--help")
    assert r.returncode == 0, r.stderr
    return r.stdout


def _formats(help_text: str) -> set[str]:
    m = re.search(r"--format\s+(?:[A-Z]+\s+)?[\[<]([a-z|-]+)[\]>]", help_text)
    return set(m.group(1).split("|")) if m else set()


def test_the_table_lists_every_command_once():
    from ncclctl.cli import COMMANDS

    assert len(ROWS) == len(set(ROWS)) and len({w for w, _ in ROWS}) == len(ROWS), ROWS
    assert {w[0] for w, _ in ROWS} == set(COMMANDS)


@pytest.mark.parametrize("words,code", ROWS, ids=[" ".join(w) for w, _ in ROWS])
def test_each_row_names_real_options_and_formats(words, code):
    text = _help(words)
    for option in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", code):
        assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text), f"{code}: {option} is not an option"
    named = re.search(r"--format ([a-z|-]+)", code)
    takes = _formats(text)
    if named:
        assert set(named.group(1).split("|")) <= takes, (code, takes)
    if words in NO_JSON:
        assert "json" not in takes
    else:
        assert "json" in takes, f"the README says {' '.join(words)} takes --format json; its help: {sorted(takes)}"


# -- The engines block (issue 31): one command per engine a site would copy -----------------------------------------

ENGINES = README.split("\n## Operations: Ansible, Slurm, systemd\n", 1)[1].split("```sh\n", 1)[1].split("\n```", 1)[0]


def _engine_lines() -> list[tuple[str, str]]:
    """(command, comment) of every line of the block."""
    out = []
    for line in ENGINES.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        cmd, _, comment = line.partition("  # ")
        out.append((cmd.strip(), comment.strip()))
    return out


def _words(code: str) -> tuple[str, ...]:
    words = []
    for w in code.split()[1:]:
        if not re.fullmatch(r"[a-z][a-z-]*", w):
            break
        words.append(w)
    return tuple(words)


def test_engine_block_covers_every_engine():
    text = ENGINES.lower()
    for engine in ("prometheus", "healthcheckprogram", "prolog", "node-problem-detector", "nhc", "ansible facts -> "
                   "fleet lint", "prometheus -> fleet lint"):
        assert engine in text, engine


@pytest.mark.parametrize("code", sorted({c for c, _ in _engine_lines() if c.startswith("ncclctl ")}
                                        | {m for _, note in _engine_lines() for m in re.findall(r"runs: (ncclctl [^#]*)", note)}))
def test_engine_commands_are_real(code):
    """Every ncclctl command of the block (and every one a comment says an example runs): its options and format
    exist."""
    code = code.split(">")[0].strip()
    text = _help(_words(code))
    for option in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", code):
        assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text), f"{code}: {option} is not an option"
    named = re.search(r"(?:--format|-f) ([a-z-]+)", code)
    if named:
        assert named.group(1) in _formats(text), (code, _formats(text))


def test_engine_examples_exist_and_run_what_the_block_says():
    lines = _engine_lines()
    copied = 0
    for cmd, note in lines:
        for path in re.findall(r"examples/[\w./-]+", cmd):
            assert (REPO / path).is_file(), path
        runs = re.search(r"runs: ncclctl (.*)", note)
        if cmd.startswith("cp "):
            copied += 1
            src = REPO / cmd.split()[1]
            assert runs, cmd
            assert f'"$NCCLCTL" {runs.group(1).strip()} ' in src.read_text(), (src, runs.group(1))
        if cmd.startswith("kubectl "):
            args = runs or re.search(r"ncclctl (lint .*)", note)
            assert args
            config = (REPO / "examples/kubernetes/ncclctl-npd-config.yaml").read_text()
            json_args = "[" + ", ".join(f'"{w}"' for w in args.group(1).split()) + "]"
            assert f'"args": {json_args}' in config
    assert copied == 3
    # the paths each example names for itself are the ones the block installs to
    health = (REPO / "examples/slurm/healthcheck.sh").read_text()
    prolog = (REPO / "examples/slurm/prolog.sh").read_text()
    assert "HealthCheckProgram=/etc/slurm/ncclctl-healthcheck.sh" in health
    assert "cp examples/slurm/healthcheck.sh /etc/slurm/ncclctl-healthcheck.sh" in ENGINES
    assert "Prolog=/etc/slurm/prolog.d/ncclctl.sh" in prolog and "PrologFlags=Alloc" in prolog
    assert "cp examples/slurm/prolog.sh /etc/slurm/prolog.d/ncclctl.sh" in ENGINES
    nhc = (REPO / "examples/nhc/ncclctl.nhc").read_text()
    assert re.search(r"^function check_ncclctl\(\)", nhc, re.M) and "cp ncclctl.nhc /etc/nhc/scripts/" in nhc
    assert "|| check_ncclctl" in nhc and "|| check_ncclctl" in ENGINES


def test_engine_fetches_lay_out_what_fleet_lint_reads():
    """The Ansible fetches bring the files the node-side commands write, named as `fleet lint --facts` finds them."""
    defaults = (REPO / "examples/ansible/roles/ncclctl/defaults/main.yml").read_text()
    facts_dir = re.search(r"^ncclctl_facts_dir: (\S+)", defaults, re.M).group(1)
    prom_out = re.search(r"ncclctl lint --format prom -o (\S+)", ENGINES).group(1)
    fetches = re.findall(r'ansible gpus -m fetch -a "src=(\S+) dest=(.+?)(?: (flat=yes))?"', ENGINES)
    assert fetches == [(f"{facts_dir}/ncclctl.fact", "fetched/", ""),
                       (prom_out, "textfiles/{{ inventory_hostname }}.prom", "flat=yes")]
    from ncclctl.lint.fleet import FACTS_SUFFIXES, TEXTFILE_SUFFIX

    assert "ncclctl.fact".endswith(FACTS_SUFFIXES) and fetches[1][1].endswith(TEXTFILE_SUFFIX)
    assert "ncclctl fleet lint --facts fetched/ --inventory" in ENGINES
    assert "ncclctl fleet lint --facts textfiles/ --inventory" in ENGINES


def test_systemd_timer_cadence_is_the_one_the_readme_gives():
    timer = (REPO / "examples/systemd/ncclctl-facts.timer").read_text()
    boot = re.search(r"^OnBootSec=(\d+)min", timer, re.M).group(1)
    every = re.search(r"^OnUnitActiveSec=(\d+)min", timer, re.M).group(1)
    assert f"{boot} minutes\n  after boot and every {every} minutes" in README
