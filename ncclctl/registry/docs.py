"""The registry as documentation: the rule index (text, JSON, Markdown), one rule's explanation, and the rule
tables generated into README.md and docs/rules-*.md.

Formatters return strings and never print. Rules come in registry order; the generated Markdown blocks are
checked current by ``tests/lint/test_generated.py`` (regenerate with ``--update-golden``).
"""

from __future__ import annotations

import json
import re
import textwrap
from typing import Any, Iterable, Sequence

from ncclctl import JSON_SCHEMA_VERSION
from ncclctl.findings import Severity
from ncclctl.registry import FAMILY_TABLE, SCOPES, Option, Rule

#: The docs page (relative to the source tree) that holds each family's generated rule table: what SARIF's
#: ``helpUri`` and ``help`` point at. tests/lint/test_generated.py holds it against the table markers in docs/.
FAMILY_DOCS: dict[str, str] = {
    "pcie": "docs/rules-pcie-gpu.md", "gpudirect": "docs/rules-pcie-gpu.md", "gpu": "docs/rules-pcie-gpu.md",
    "nvlink-domain": "docs/rules-nvlink.md", "infiniband": "docs/rules-ib-roce.md", "roce": "docs/rules-ib-roce.md",
    "nccl": "docs/rules-nccl.md", "expect": "docs/lint.md", "fleet": "docs/lint.md", "fabric": "docs/fabric.md",
    "nccl-xml": "docs/rules-topo.md", "topology": "docs/rules-topo.md", "graph": "docs/rules-topo.md",
    "nccl-version": "docs/rules-topo.md", "host-match": "docs/rules-topo.md", "nccl-log": "docs/logs.md",
    "nccl-tests": "docs/perf.md",
}
README_BEGIN = "<!-- rules:begin -->"
README_END = "<!-- rules:end -->"
# A generated table in docs/*.md: "<!-- rules-table: pcie,gpudirect,gpu -->" ... "<!-- rules-table:end -->".
TABLE_BEGIN = re.compile(r"<!-- rules-table: ([a-z0-9,-]+) -->")
TABLE_END = "<!-- rules-table:end -->"

#: What the RUNS column means.
RUNS: dict[str, str] = {
    "always": "in every `ncclctl lint` and on every host of `ncclctl fleet lint`",
    "strict": "off by default; on under `extends: strict`, or when named in the config with a severity or `on`",
    "--expect": "only with an expected-state profile (`ncclctl lint --expect FILE`)",
    "fleet": "in `ncclctl fleet lint`, comparing hosts",
    "file": "in `ncclctl topo validate` / `rings validate` on a topology or graph file",
    "file+host": "in `topo validate` / `rings validate` with `--root DIR` or `--live` (and in lint: NCCL020, NCCL022)",
    "rings": "in every `ncclctl rings validate` (graph files)",
    "rings+model": "in `rings validate` with the node's topology: `--topo FILE`, `--root DIR` or `--live`",
    "fabric": "in `ncclctl fabric load` / `fabric rails` / `fabric plan`",
    "log": "in `ncclctl log check` on NCCL_DEBUG logs (model rules with `--root`/`--inventory`)",
    "perf": "in `ncclctl perf check` on nccl-tests results",
}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def runs_when(rule: Rule) -> str:
    """When a rule runs: a key of :data:`RUNS`."""
    if rule.scope == "fleet":
        return "fleet"
    if rule.scope == "file":
        from ncclctl.registry.file_rules import MEANING, MEANING_WITHOUT_MODEL

        if rule.checked_by == MEANING:
            return "rings" if rule.id in MEANING_WITHOUT_MODEL else "rings+model"
        return "file+host" if rule.family == "host-match" else "file"
    if rule.scope in ("fabric", "log", "perf"):
        return rule.scope
    if rule.needs_expect:
        return "--expect"
    return "always" if rule.default_enabled else "strict"


def severity_text(rule: Rule) -> str:
    """The default severity, with the grading note when the check grades some findings otherwise."""
    return f"{rule.severity.value} ({rule.graded})" if rule.graded else rule.severity.value


def rule_doc(rule: Rule) -> dict[str, Any]:
    return {
        "id": rule.id,
        "slug": rule.slug,
        "family": rule.family,
        "scope": rule.scope,
        "severity": rule.severity.value,
        "graded": rule.graded,
        "strict_severity": rule.strict_severity.value if rule.strict_severity else None,
        "default_enabled": rule.default_enabled,
        "needs_expect": rule.needs_expect,
        "runs": runs_when(rule),
        "checked_by": rule.checked_by,
        "title": rule.title,
        "what": rule.doc.what,
        "why": rule.doc.why,
        "detect": rule.doc.detect,
        "fix": rule.doc.fix,
        "options": [{"name": o.name, "type": o.type_name, "default": list(o.default) if o.type is list else o.default,
                     "min": o.min, "max": o.max, "choices": list(o.choices) if o.choices else None, "help": o.help}
                    for o in rule.options],
    }


def scope_counts(rules: Iterable[Rule]) -> dict[str, int]:
    out = {s: 0 for s in SCOPES}
    for r in rules:
        out[r.scope] += 1
    return out


def rules_text(rules: Sequence[Rule]) -> str:
    rows = [("ID", "SLUG", "FAMILY", "SEVERITY", "RUNS", "TITLE")]
    rows += [(r.id, r.slug, r.family, r.severity.value, runs_when(r), r.title) for r in rules]
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row[:5], widths)) + "  " + row[5] for row in rows]
    lines.append("")
    per_scope = ", ".join(f"{n} {s}" for s, n in scope_counts(rules).items() if n)
    lines.append(f"{_plural(len(rules), 'rule')} ({per_scope or 'none'}). RUNS: always = every lint; strict = only "
                 "with 'extends: strict' or when named in the config; --expect = with an expected-state profile; "
                 "fleet = ncclctl fleet lint; file = topo/rings validate; file+host = validate with --root/--live; "
                 "rings = rings validate; rings+model = rings validate with --topo/--root/--live; "
                 "fabric = fabric load/rails; log = log check; perf = perf check.")
    lines.append("'ncclctl explain ID' prints a rule's documentation and options; '--scope'/'--family' filter the list.")
    return "\n".join(lines) + "\n"


def rules_json(rules: Sequence[Rule]) -> dict[str, Any]:
    return {"schema_version": JSON_SCHEMA_VERSION, "rules": [rule_doc(r) for r in rules]}


def md(text: str) -> str:
    return text.replace("|", "\\|")


def rules_markdown(rules: Sequence[Rule]) -> str:
    """The rule index as Markdown (the README block between the rules markers)."""
    counts = ", ".join(f"{n} {s}" for s, n in scope_counts(rules).items() if n)
    lines = [
        "## Rules",
        "",
        f"Generated from the rule registry (`ncclctl rules --format markdown`): {_plural(len(rules), 'rule')} "
        f"({counts}). `ncclctl explain ID` prints a rule's full documentation; every rule can be configured in "
        "`.ncclctl.yaml` (severity, off, per-host ignore). *Runs*: `always` in every `ncclctl lint`; `strict` only "
        "under `extends: strict` or when enabled in `.ncclctl.yaml`; `--expect` with an expected-state profile; "
        "`fleet` in `ncclctl fleet lint` (see [docs/lint.md](docs/lint.md)); `file` in `ncclctl topo validate` / "
        "`rings validate`, `file+host` with `--root`/`--live`, `rings` in `rings validate`, `rings+model` in "
        "`rings validate` with the node's topology (`--topo`/`--root`/`--live`) (see "
        "[docs/rules-topo.md](docs/rules-topo.md)); "
        "`fabric` in `ncclctl fabric load` / `fabric rails` / `fabric plan` (see [docs/fabric.md](docs/fabric.md)); "
        "`log` in `ncclctl log check` (see [docs/logs.md](docs/logs.md)); `perf` in `ncclctl perf check` (see "
        "[docs/perf.md](docs/perf.md)).",
        "",
        "| ID | slug | family | scope | severity | runs | what it finds |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rules:
        lines.append(f"| {r.id} | `{r.slug}` | {r.family} | {r.scope} | {r.severity.value} | {runs_when(r)} | "
                     f"{md(r.title)} |")
    return "\n".join(lines) + "\n"


def _wrap(label: str, text: str, width: int = 100) -> list[str]:
    pad = " " * 9
    return textwrap.wrap(text, width=width, initial_indent=f"{label:<9}", subsequent_indent=pad) or [label]


def option_line(o: Option) -> str:
    default = list(o.default) if o.type is list else o.default
    bits = [o.type_name, f"default {json.dumps(default)}"]
    if o.min is not None or o.max is not None:
        lo = "" if o.min is None else f"{o.min:g}"
        hi = "" if o.max is None else f"{o.max:g}"
        bits.append(f"range {lo}..{hi}")
    if o.choices:
        bits.append("one of " + ", ".join(o.choices))
    return f"{o.name} ({'; '.join(bits)}): {o.help}"


_WHEN = {"always": "on by default", "strict": "off by default (on under extends: strict)",
         "--expect": "runs with --expect PROFILE", "fleet": "runs in ncclctl fleet lint",
         "file": "runs in ncclctl topo validate / rings validate",
         "file+host": "runs in topo validate / rings validate with --root or --live",
         "rings": "runs in ncclctl rings validate",
         "rings+model": "runs in rings validate with --topo, --root or --live",
         "fabric": "runs in ncclctl fabric load / fabric rails / fabric plan",
         "log": "runs in ncclctl log check", "perf": "runs in ncclctl perf check"}

_CONFIG_USE = {"node": "ncclctl lint", "fleet": "ncclctl fleet lint", "file": "ncclctl topo validate",
               "fabric": "ncclctl fabric rails", "log": "ncclctl log check", "perf": "ncclctl perf check"}


def explain_text(rule: Rule) -> str:
    sev = rule.severity.value
    if rule.strict_severity and rule.strict_severity != rule.severity:
        sev += f", {rule.strict_severity.value} under strict"
    lines = [f"{rule.id}  {rule.slug}  ({rule.family}; {sev}; {_WHEN[runs_when(rule)]})", rule.title, ""]
    for label, text in (("What:", rule.doc.what), ("Why:", rule.doc.why), ("Detect:", rule.doc.detect),
                        ("Fix:", rule.doc.fix)):
        lines += _wrap(label, text)
    if rule.graded:
        lines += _wrap("Graded:", f"{rule.severity.value} by default; {rule.graded}.")
    if rule.options:
        lines.append("Options:")
        for o in rule.options:
            lines += textwrap.wrap(option_line(o), width=100, initial_indent="  ", subsequent_indent="      ")
    example = f"{{severity: {'error' if rule.severity != Severity.ERROR else 'warning'}}}"
    if rule.options:
        o = rule.options[0]
        example = f"{{options: {{{o.name}: {_yaml_scalar(o)}}}}}"
    lines += ["", f"In .ncclctl.yaml: (read by {_CONFIG_USE.get(rule.scope, 'ncclctl')}, or --config FILE)",
              "  rules:", f"    {rule.id}: {example}", f"    # or {rule.id}: off"]
    return "\n".join(lines) + "\n"


def _yaml_scalar(o: Option) -> str:
    v = list(o.default) if o.type is list else o.default
    return json.dumps(v)


# --------------------------------------------------------------------------------------------------
# Generated blocks: the README index and the tables in docs/rules-*.md


def readme_block(rules: Sequence[Rule]) -> str:
    return f"{README_BEGIN}\n{rules_markdown(rules)}{README_END}"


def replace_readme_block(text: str, rules: Sequence[Rule]) -> str:
    """``text`` (README.md) with the rules block replaced, or appended when it has none."""
    block = readme_block(rules)
    if README_BEGIN in text and README_END in text:
        head, _, rest = text.partition(README_BEGIN)
        _, _, tail = rest.partition(README_END)
        return head + block + tail
    return text.rstrip("\n") + "\n\n" + block + "\n"


def family_table(rules: Sequence[Rule]) -> str:
    """A docs table of some rules: id, slug, default severity (with how the check grades), runs, title."""
    lines = ["| id | slug | severity | runs | what it finds |", "|---|---|---|---|---|"]
    for r in rules:
        lines.append(f"| {r.id} | `{r.slug}` | {md(severity_text(r))} | {runs_when(r)} | {md(r.title)} |")
    return "\n".join(lines) + "\n"


def doc_page(rule: Rule) -> str:
    """The docs page of ``rule``'s family (:data:`FAMILY_DOCS`; README.md's rule index for a family without one)."""
    return FAMILY_DOCS.get(rule.family, "README.md")


def known_families() -> tuple[str, ...]:
    return tuple(f.name for f in FAMILY_TABLE)


def replace_family_tables(text: str, rules: Sequence[Rule], *, path: str = "<docs>") -> str:
    """``text`` with every ``<!-- rules-table: FAMILIES -->`` block regenerated from ``rules``."""
    out: list[str] = []
    pos = 0
    for m in TABLE_BEGIN.finditer(text):
        if m.start() < pos:
            continue
        families = m.group(1).split(",")
        unknown = [f for f in families if f not in known_families()]
        if unknown:
            raise ValueError(f"{path}: unknown rule family {', '.join(unknown)} in {m.group(0)}")
        end = text.find(TABLE_END, m.end())
        if end < 0:
            raise ValueError(f"{path}: {m.group(0)} has no {TABLE_END}")
        chosen = [r for r in rules if r.family in families]
        out.append(text[pos:m.end()] + "\n" + family_table(chosen))
        pos = end
    out.append(text[pos:])
    return "".join(out)


def tabled_families(text: str) -> set[str]:
    """The families that have a generated table in ``text``."""
    return {f for m in TABLE_BEGIN.finditer(text) for f in m.group(1).split(",")}
