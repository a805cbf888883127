"""One-line answers for the engines that read one line: a Slurm drain reason (``--format slurm``) and a Kubernetes
node-problem-detector condition message (``--format npd``).

Both lead with the root cause, as the Nagios status line does (:func:`ncclctl.report.nagios.cause_key`: worst
first, hardware before the settings that name it): ``ncclctl: IB001 mlx5_3 ib-port-not-active (+1 more)``. The
line is built from fixed vocabularies (rule id, slug, the device) and never from a message, so it is short and
stable: a site can match it (``sinfo -R | grep 'ncclctl: IB001'``) and the same fault gives the same line on
every node.

* **Slurm** (:func:`slurm_reason`): Slurm keeps a node's reason as a free string, but ``sinfo -R`` shows its first
  20 characters (``%20E``), so the line starts with ``ncclctl: RULE``; it is cut at :data:`SLURM_REASON_MAX`.
* **node-problem-detector** (:func:`npd_message`): a custom plugin's stdout, cut at ``max_output_length``
  (80 by default), becomes the condition's message: one line of at most :data:`NPD_MAX` characters.
"""

from __future__ import annotations

from ncclctl.findings import Finding, Severity
from ncclctl.report.core import Report, counts, plural

#: The longest drain reason written (sinfo -R shows 20 characters; scontrol takes more).
SLURM_REASON_MAX = 64
#: node-problem-detector's default max_output_length.
NPD_MAX = 80

_BREAKS = str.maketrans({c: " " for c in "\t\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"})


def failing(report: Report) -> list[Finding]:
    """The findings that reach the report's ``--fail-on``, root cause first."""
    from ncclctl.report.nagios import cause_key

    return sorted((f for f in report.findings if f.severity.rank >= report.fail_on.rank), key=cause_key)


def _slug(rule: str) -> str:
    from ncclctl.registry import get

    r = get(rule)
    return r.slug if r is not None else ""


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.translate(_BREAKS).split())
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= limit else text[:limit - 3].rstrip() + "..."


def headline(findings: list[Finding], limit: int) -> str:
    """``ncclctl: IB001 mlx5_3 ib-port-not-active (+1 more)`` for ``findings`` (root cause first), within
    ``limit`` characters: the slug goes first, then the device is cut."""
    first = findings[0]
    more = len(findings) - 1
    tail = f" (+{more} more)" if more else ""
    head = f"ncclctl: {first.rule}"
    device = " ".join(first.subject.split())
    slug = _slug(first.rule)
    for parts in ((head, device, slug), (head, device)):
        line = " ".join(p for p in parts if p) + tail
        if len(line) <= limit:
            return _cut(line, limit)
    room = limit - len(head) - len(tail) - 1
    if room >= 8:
        return _cut(f"{head} {device[:room - 3]}...{tail}", limit)
    return _cut(head + tail, limit)


def slurm_reason(report: Report) -> str | None:
    """The drain reason, or None when the node is fit (nothing reaches ``--fail-on``)."""
    bad = failing(report)
    return headline(bad, SLURM_REASON_MAX) if bad else None


def ok_line(report: Report) -> str:
    c = counts(report.findings)
    below = [plural(c[s.value], s.value) for s in (Severity.ERROR, Severity.WARNING) if c[s.value]]
    if below:
        return "ncclctl: ok (" + ", ".join(below) + f" below --fail-on {report.fail_on.value})"
    if report.rules_run is not None:
        return f"ncclctl: ok ({plural(len(report.rules_run), 'rule')} passed)"
    return "ncclctl: ok"


def slurm_answer(report: Report) -> tuple[str, int]:
    """``--format slurm``: the one line (the drain reason, or why the node is fit) and the exit status: 0 fit,
    1 drain."""
    reason = slurm_reason(report)
    if reason is None:
        return _cut(ok_line(report), SLURM_REASON_MAX) + "\n", 0
    return reason + "\n", 1


def npd_answer(report: Report) -> tuple[str, int]:
    """``--format npd``: node-problem-detector's custom plugin answer: one line of at most 80 characters, exit 0
    OK, 1 problem."""
    bad = failing(report)
    if not bad:
        return _cut(ok_line(report), NPD_MAX) + "\n", 0
    return headline(bad, NPD_MAX) + "\n", 1


def unknown_line(message: str, limit: int) -> str:
    """The answer when ncclctl could not look (exit 2 for npd and slurm): ``ncclctl: unknown: ...``."""
    return _cut(f"ncclctl: unknown: {message}", limit) + "\n"
