"""Parser for ``nvidia-smi nvlink --status`` (``nvidia-smi nvlink -s``, optionally ``-i <gpu>``).

Layout::

    GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5269b708-678a-b1a8-60f0-c90406537486)
    <spaces or TAB> Link 0: 26.562 GB/s
    <spaces or TAB> Link 3: <inactive>

Each link's line gives its speed per direction (``25 GB/s`` on A100, ``26.562 GB/s`` on H100, ``53.125 GB/s`` on
GB200) or ``<inactive>``. A GPU without NVLink prints its header alone. Pasted copies carry a prompt and the
command, elide GPUs or links (``...``, ``....``) and shorten the UUID (``(UUID: ...)``): what is there is kept,
and :attr:`NvlinkStatus.notes` says what was elided.
"""

from __future__ import annotations

import re
from dataclasses import field

from ncclctl.parsers._common import cut_here, ELISION_RE, paste_body, perr, run_parser, split_lines, strip_ansi
from ncclctl.record import record

__all__ = ["NvlinkGpu", "NvlinkLink", "NvlinkStatus", "parse_nvlink_status"]

_FIX = "pass the output of `nvidia-smi nvlink --status` (or `nvidia-smi nvlink -s`)"
_GPU_RE = re.compile(r"GPU (?P<idx>[0-9]{1,4}): (?P<name>.*?)(?: \(UUID: (?P<uuid>[^)]*)\))?")
_LINK_RE = re.compile(r"Link (?P<link>[0-9]{1,3}): (?:(?P<gbs>[0-9]{1,4}(?:\.[0-9]{1,4})?) ?GB/s|(?P<state><[a-z ]+>))")


@record
class NvlinkLink:
    link: int
    #: per-direction GB/s of an active link; None when inactive
    gbs: float | None
    active: bool
    line: int = field(default=0, compare=False)


@record
class NvlinkGpu:
    index: int
    name: str
    uuid: str | None
    links: tuple[NvlinkLink, ...]
    line: int = field(default=0, compare=False)

    @property
    def inactive(self) -> tuple[int, ...]:
        return tuple(lk.link for lk in self.links if not lk.active)


@record
class NvlinkStatus:
    gpus: tuple[NvlinkGpu, ...]
    notes: tuple[str, ...] = ()


def parse_nvlink_status(text: str, *, source: str = "nvidia-smi nvlink --status") -> NvlinkStatus:
    """Parse the per-GPU NVLink states; empty output gives no GPUs."""
    return run_parser(_parse, text, source, "nvidia-smi nvlink --status")


def _parse(text: str, source: str) -> NvlinkStatus:
    lines, _pasted = paste_body([strip_ansi(x) for x in split_lines(text)], ("nvidia-smi nvlink", "nvidia-smi"))
    gpus: list[NvlinkGpu] = []
    notes: list[str] = []
    cur: dict | None = None

    def finish() -> None:
        nonlocal cur
        if cur is not None:
            gpus.append(NvlinkGpu(index=cur["idx"], name=cur["name"], uuid=cur["uuid"], links=tuple(cur["links"]),
                                  line=cur["line"]))
            cur = None

    for lineno, raw in enumerate(lines, 1):
        s = raw.strip()
        if not s:
            continue
        if ELISION_RE.fullmatch(s):
            notes.append(f"line {lineno}: {s!r}: the paste leaves out GPUs or links here")
            continue
        if s.startswith(("NVIDIA-SMI has failed", "Failed to", "Unable to")):
            raise perr(source, lineno, f"nvidia-smi failed: {s[:120]}",
                       "fix the driver/NVML problem nvidia-smi reports, then capture again")
        m = _GPU_RE.fullmatch(s)
        if m:
            finish()
            uuid = m["uuid"]
            if uuid is not None and not uuid.startswith("GPU-"):
                notes.append(f"line {lineno}: GPU {m['idx']}'s UUID is elided ({uuid!r})")
                uuid = None
            cur = {"idx": int(m["idx"]), "name": m["name"], "uuid": uuid, "links": [], "line": lineno}
            if any(g.index == cur["idx"] for g in gpus):
                raise perr(source, lineno, f"GPU {cur['idx']} is listed twice", _FIX)
            continue
        m = _LINK_RE.fullmatch(s)
        if m:
            if cur is None:
                raise perr(source, lineno, f"a link line before any 'GPU N: ...' line: {s[:60]!r}", _FIX)
            link = int(m["link"])
            if any(lk.link == link for lk in cur["links"]):
                raise perr(source, lineno, f"GPU {cur['idx']}: link {link} is listed twice", _FIX)
            if m["gbs"] is not None:
                cur["links"].append(NvlinkLink(link, float(m["gbs"]), True, lineno))
            elif m["state"] == "<inactive>":
                cur["links"].append(NvlinkLink(link, None, False, lineno))
            else:
                raise perr(source, lineno, f"GPU {cur['idx']} link {link}: unknown state {m['state']!r}", _FIX)
            continue
        if cut_here(lines, lineno):
            notes.append(f"line {lineno}: the output is cut in the middle of a line ({s[:40]!r})")
            continue
        hint = ""
        if s.startswith(("GPU0", "GPU 0\t")) or "\tGPU1" in s:
            hint = " (this looks like 'nvidia-smi topo -m' output)"
        raise perr(source, lineno, f"unexpected line: {s[:80]!r}{hint}", _FIX)
    finish()
    return NvlinkStatus(gpus=tuple(gpus), notes=tuple(notes))
