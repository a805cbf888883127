"""``perf check`` of huge nccl-tests tables in bounded memory (issue 29, item 7: 3 M rows ran out of time at 2.9 GB).

A table of more than ``TABLE_MAX`` rows keeps its first ``TABLE_HEAD`` rows and the rest of ``TABLE_MAX`` with the
largest sizes; every other row is counted and folded into the figures the rules use while reading. The bound is
asserted by counting the rows kept and by tracemalloc, not by time (growth at three sizes: bench/RESULTS.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, held_after, run_cli

sys.path.insert(0, str(REPO / "bench"))
from growth import perf_rows  # noqa: E402

from ncclctl.logs import perf  # noqa: E402

PERF = REPO / "fixtures" / "logs" / "perf"


def run(*args: str) -> subprocess.CompletedProcess:
    return run_cli(*args, timeout=300)


def test_perf_check_of_a_huge_table_through_the_cli_keeps_a_bounded_table(tmp_path: Path) -> None:
    n = 3 * perf.TABLE_MAX
    f = tmp_path / "rows.txt"
    perf_rows(f, n, wrong_at=n - 1000)
    p = run("perf", "check", str(f), "-f", "json")
    assert "Traceback" not in p.stderr, p.stderr[-2000:]
    res = json.loads(p.stdout)["results"][0]
    assert res["rows"] == n  # every row counted
    table = res["table"]
    assert len(table) == perf.TABLE_MAX and res["table_omitted"] == n - perf.TABLE_MAX
    sizes = [r["size"] for r in table]
    head = perf.TABLE_HEAD
    assert sizes[:head] == [8 * (i + 1) for i in range(head)]  # the first rows
    assert sizes[head:] == [8 * (i + 1) for i in range(n - (perf.TABLE_MAX - head), n)]  # the largest, in order
    wrong = [x for x in json.loads(p.stdout)["findings"] if x["rule"] == "PERF002"]
    assert len(wrong) == 1 and "1 size with wrong results" in wrong[0]["message"], wrong
    assert any(str(8 * (n - 999)) in e for e in wrong[0]["evidence"]), wrong  # the wrong row's own line
    t = run("perf", "check", str(f))
    assert f"{n} rows up to {perf._size(8 * n)}" in t.stdout, t.stdout[:1000]


def test_a_table_at_the_bound_is_listed_whole(tmp_path: Path) -> None:
    f = tmp_path / "rows.txt"
    perf_rows(f, perf.TABLE_MAX, wrong_at=7)
    res = json.loads(run("perf", "check", str(f), "-f", "json").stdout)["results"][0]
    assert res["rows"] == len(res["table"]) == perf.TABLE_MAX and "table_omitted" not in res


def _read_held(path: Path) -> tuple[int, list[perf.Test]]:
    (tests, _), held = held_after(perf.read_results, [str(path)], min_bytes=64 << 20)
    return held, tests


def test_memory_held_does_not_grow_with_the_rows(tmp_path: Path) -> None:
    """Twice the rows, the same memory held (the rows kept are bounded, the rest folded in)."""
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    perf_rows(a, 2 * perf.TABLE_MAX)
    perf_rows(b, 4 * perf.TABLE_MAX)
    held_a, ta = _read_held(a)
    held_b, tb = _read_held(b)
    assert ta[0].nrows == 2 * perf.TABLE_MAX and tb[0].nrows == 4 * perf.TABLE_MAX
    assert len(ta[0].acc.kept(ta[0])) == len(tb[0].acc.kept(tb[0])) == perf.TABLE_MAX
    assert held_b < 8 << 20, held_b
    assert held_b - held_a < 256 << 10, (held_a, held_b)  # not ~700 B x 8,192 more rows


@pytest.mark.parametrize("name", sorted(p.name for p in PERF.iterdir() if p.suffix in (".txt", ".json")) + ["gen"])
def test_folded_figures_equal_those_of_the_whole_table(tmp_path: Path, monkeypatch, name: str) -> None:
    """With tiny bounds every table is huge: the findings, the figures and the collective inferred are those of
    the whole table (the ratios' median in buckets of 1e-4 lands on the same collective)."""
    path = PERF / name if name != "gen" else tmp_path / "rows.txt"
    if name == "gen":
        perf_rows(path, 3000, wrong_at=1500)

    def outcome() -> tuple[list, list, str]:
        tests, _ = perf.read_results([str(path)], min_bytes=1 << 20)
        res = perf.evaluate(tests, hardware=None, nodes=None, min_bytes=1 << 20)
        docs = [{k: v for k, v in r.doc().items() if k not in ("table", "table_omitted")} for r in res]
        found = [(f.rule, f.severity, f.message, f.line, f.evidence) for f in perf.check(res, options={})]
        return docs, found, perf.text(res)

    whole = outcome()
    monkeypatch.setattr(perf, "TABLE_MAX", 6)
    monkeypatch.setattr(perf, "TABLE_HEAD", 2)
    monkeypatch.setattr(perf, "RATIOS_MAX", 3)
    assert outcome() == whole


def test_a_huge_json_document_keeps_a_bounded_table(tmp_path: Path) -> None:
    """nccl-tests -J output: the document is streamed (up to 256 MiB), its results folded the same way."""
    doc = json.loads((PERF / "all_reduce-h100-1node.json").read_text())
    one = doc["results"][0]
    n = 3 * perf.TABLE_MAX
    doc["results"] = [dict(one, size=8 * (i + 1), count=2 * (i + 1)) for i in range(n)]
    f = tmp_path / "rows.json"
    f.write_text(json.dumps(doc))
    p = run("perf", "check", str(f), "-f", "json")
    assert "Traceback" not in p.stderr, p.stderr[-2000:]
    res = json.loads(p.stdout)["results"][0]
    assert res["json"] and res["rows"] == n and len(res["table"]) == perf.TABLE_MAX
    assert res["table_omitted"] == n - perf.TABLE_MAX and res["table"][-1]["size"] == 8 * n


def _json_doc(n: int, indent: int | None = None) -> str:
    doc = json.loads((PERF / "all_reduce-h100-1node.json").read_text())
    one = doc["results"][-1]
    doc["results"] = [dict(one, size=8 * (i + 1), count=2 * (i + 1)) for i in range(n)]
    return json.dumps(doc, indent=indent)


def test_json_rows_are_read_one_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """-J output, one line of 7.5 MB: the reader's buffer holds one chunk and the row being read, never the
    document (counted: the longest buffer and the rows handed over), and the figures equal the indented
    document's and json.loads' own count."""
    text = _json_doc(24_000)
    f = tmp_path / "rows.json"
    f.write_text(text)
    longest = [0]
    fill = perf._JsonStream._fill

    def counted(self) -> bool:
        got = fill(self)
        longest[0] = max(longest[0], len(self.buf))
        return got

    monkeypatch.setattr(perf._JsonStream, "_fill", counted)
    t = perf.read_results([str(f)])[0][0]
    assert len(text) > 7_000_000 and t.nrows == len(json.loads(text)["results"]) == 24_000
    assert longest[0] < 3 << 20, longest  # a chunk (1 MiB) and a row's start, not 7.5 MB
    f.write_text(_json_doc(24_000, indent=1))
    i = perf.read_results([str(f)])[0][0]
    assert (i.nrows, i.avg_busbw, _table_size(i)) == (t.nrows, t.avg_busbw, _table_size(t))


def _table_size(t: perf.Test) -> tuple:
    top = perf._table(t).top
    return (top.size if top else None, len(t.rows))


@pytest.mark.parametrize("text,error", [
    ('{"results": [1, 2', "not nccl-tests JSON output: JSONDecodeError"),
    ('{"results": [{"size": 8},]}', "not nccl-tests JSON output: JSONDecodeError"),
    ('{"results": [], "x": 1} x', "not nccl-tests JSON output: JSONDecodeError"),
    ('{"results": true}', "no 'results' list"),
    ('{"results": [], "results": []}', "not nccl-tests JSON output: JSONDecodeError"),
    ('{"a": ' + "[" * 100_000, "not nccl-tests JSON output"),
    ('{"results": [{"size": 8, "count": 2, "out_of_place": {"bus_bw": NaN}}]}', "-:1:65: "),
])
def test_bad_json_is_refused_through_the_cli(text: str, error: str) -> None:
    """Bad -J documents: exit 3 and the reason (file:line:column for a value no run can have), no traceback."""
    p = subprocess.run([sys.executable, "-m", "ncclctl", "perf", "check", "-"], input=text, capture_output=True,
                       text=True, timeout=120, cwd=REPO)
    assert p.returncode == 3 and error.replace("-:", "<stdin>:") in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_json_over_the_cap_is_refused_while_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The 256 MiB cap counts what was read (here 1 MiB): refused before the rest is read."""
    from ncclctl.errors import InputError

    monkeypatch.setattr(perf, "MAX_JSON", 1 << 20)
    f = tmp_path / "rows.json"
    f.write_text(_json_doc(12_000))
    rows = []
    monkeypatch.setattr(perf.Test, "add", lambda self, row, line="": rows.append(row))
    with pytest.raises(InputError, match="over 256 MiB"):
        perf.read_results([str(f)])
    assert len(rows) < 6_000, len(rows)  # rows were read before the cap, not the document first


class _CountedRegex:
    """A compiled pattern that counts its match/search calls (re.Pattern takes no attributes)."""

    calls = 0

    def __init__(self, pattern) -> None:
        self.pattern = pattern

    def match(self, *a, **k):
        _CountedRegex.calls += 1
        return self.pattern.match(*a, **k)

    def search(self, *a, **k):
        _CountedRegex.calls += 1
        return self.pattern.search(*a, **k)


def test_a_result_row_costs_few_regex_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted, not timed: the regexes run per result row (a row of 8 plain numbers, as nccl-tests prints them).
    Each header regex now runs only after the substring it needs, and plain numbers are told without one: under
    one call a row (the root column's); the reader before ran about 20 (header searches, a number regex per
    cell, a time-stamp regex per cell)."""
    f = tmp_path / "rows.txt"
    perf_rows(f, 2_000, wrong_at=700)
    for name in ("_NUM", "_STAMP", "_ROOT", "_RANK", "_NTHREAD", "_STARTING", "_PERFNAME", "_VERSION", "_OOB", "_AVG"):
        monkeypatch.setattr(perf, name, _CountedRegex(getattr(perf, name)))
    _CountedRegex.calls = 0
    tests, _notes = perf.read_results([str(f)])
    assert tests[0].nrows == 2_000
    assert _CountedRegex.calls <= 2_000 + 20, _CountedRegex.calls  # ~22 a row before


@pytest.mark.parametrize("tok", ["0", "12", "12.", "12.5", ".5", ".", "..", "1.2.3", "-1", "1e5", "1.5e-3", "", "a",
                                 "\u0661\u0662", "\u0661.\u0662", "\u00b2", "1_0", "+1", "1" * 60, "1" * 61,
                                 "1" * 30 + "." + "1" * 30, "1" * 31 + ".1", "." + "1" * 30, "." + "1" * 31, "inf",
                                 "nan", "1.e5", "0x1", "N/A"])
def test_number_fast_path_answers_as_the_regex(tok: str) -> None:
    old = float(tok) if perf._NUM.match(tok) else None
    assert perf._num(tok) == old or (old != old and perf._num(tok) != perf._num(tok))
