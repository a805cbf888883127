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
