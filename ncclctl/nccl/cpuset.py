"""``<cpu affinity>`` as NCCL reads it (``include/cpuset.h:ncclStrToCpuset``) and as the kernel means it.

The kernel's ``/sys/devices/system/node/node<N>/cpumap`` is comma-separated 32-bit hex words, most significant
first (``0000ffff,ffffffff``). NCCL turns the attribute into a ``cpu_set_t`` of ``CPU_SETSIZE`` = 1024 CPUs
(32 words), in one of two ways:

* **2.28 and later**: ``strtok(mask, ",")`` then ``strtoul(word, NULL, 16)`` into a ``uint32_t``, the first word
  read being the most significant. ``strtok`` skips empty words (``ff,,00`` is two words, not three), a word
  keeps only its low 32 bits (``strtoul`` reads more digits; the array is ``uint32_t``), ``strtoul`` stops at the
  first non-hex character (``0-47`` is 0), and after 32 words NCCL stops reading, so a longer mask loses its
  low words and the rest moves down;
* **before 2.28**: a character loop: ``,`` starts the next word (empty words count), a lowercase hex digit is
  shifted in, and any other character (upper case, a space, ``x``, ``-``) ends the reading; a mask of more than
  32 words writes before the start of NCCL's array.

:func:`nccl_cpuset` gives the CPUs NCCL gets, :func:`kernel_cpumap` the CPUs a kernel cpumap means (None when
the text is not one), :func:`misreadings` why the two differ.
"""

from __future__ import annotations

import re

from ncclctl.nccl.params import strtoul
from ncclctl.nccl.version import DEFAULT, Version

#: ``CPU_SETSIZE / 32``: the words of a ``cpu_set_t``.
CPU_SET_WORDS = 32
#: The first release with the ``strtok``/``strtoul`` reader.
STRTOK_READER = Version(2, 28, 0)

_WORD = re.compile(r"[0-9a-fA-F]{1,8}")
#: A word whose meaning is clear although the kernel never writes it so: spaces around it, a 0x prefix.
_LOOSE_WORD = re.compile(r"\s*(?:0[xX])?([0-9a-fA-F]{1,8})\s*")
_CPULIST = re.compile(r"\s*\d+(-\d+)?(\s*,\s*\d+(-\d+)?)*\s*")


def kernel_cpumap(text: str) -> int | None:
    """The CPUs (as a bit mask) a kernel cpumap means; None when ``text`` is not a cpumap (every word 1 to 8 hex
    digits, either case; spaces around a word and a ``0x`` prefix are taken as meant). ``""`` is the empty set."""
    s = text.strip()
    if not s:
        return 0
    value = 0
    for word in s.split(","):
        m = _LOOSE_WORD.fullmatch(word)
        if m is None:
            return None
        value = (value << 32) | int(m.group(1), 16)
    return value


def nccl_cpuset(text: str, version: Version = DEFAULT) -> int:
    """The CPUs (as a bit mask below 1024) NCCL ``version`` binds to for ``affinity=text``."""
    words = _words_new(text) if version >= STRTOK_READER else _words_old(text)
    mask = 0
    for i, w in enumerate(reversed(words)):
        mask |= (w & 0xFFFFFFFF) << (32 * i)
    return mask


def _words_new(text: str) -> list[int]:
    tokens = [t for t in text.split(",") if t != ""][:CPU_SET_WORDS]
    return [strtoul(t, 16).value & 0xFFFFFFFF for t in tokens]


def _words_old(text: str) -> list[int]:
    words = [0]
    for c in text:
        if c == ",":
            words.append(0)
        elif c in "0123456789abcdef":
            words[-1] = ((words[-1] << 4) + int(c, 16)) & 0xFFFFFFFF
        else:
            break
    return words[-CPU_SET_WORDS:]


def misreadings(text: str, version: Version = DEFAULT) -> list[str]:
    """Why NCCL ``version`` does not read ``affinity=text`` as the kernel cpumap it looks like (or, when it is
    no cpumap, what is wrong with it); [] when NCCL reads exactly what the cpumap means."""
    intended = kernel_cpumap(text)
    got = nccl_cpuset(text, version)
    fields = text.split(",")
    if len(fields) >= 2 and all(re.fullmatch(r"\s*\d{1,4}\s*", f) for f in fields):
        return ["it looks like a list of CPU numbers, but NCCL reads 32-bit hex words, the last one for CPUs 0-31 "
                "(the kernel writes every word after the first with 8 digits)"]
    words = [f.strip() for f in fields]
    short = [i for i, w in enumerate(words) if i > 0 and _WORD.fullmatch(w) and len(w) < 8]
    if short and all(_WORD.fullmatch(w) for w in words):
        # The kernel pads every word after the first to 8 digits: a shorter one is a hex number cut into words
        # by hand, and NCCL still takes each word as 32 CPUs.
        i = short[0]
        joined = int("".join(words), 16)
        return [f"word {i + 1} ({words[i]!r}) has {len(words[i])} hex digit{'s' if len(words[i]) != 1 else ''} where "
                "the kernel writes 8 after the first word: NCCL reads every word as 32 CPUs, so it binds other CPUs "
                f"than the one hex number the text looks like (CPUs {cpu_ranges(joined)}): the words before it move "
                f"up by {4 * (8 - len(words[i]))} CPUs"]
    if intended is not None and intended == got:
        return []
    why: list[str] = []
    new = version >= STRTOK_READER
    if _CPULIST.fullmatch(text) and "-" in text:  # 0-47,96-143
        why.append("it is a CPU list (the cpulist form), not a cpumap of hex words")
    if any(f == "" for f in fields) and text != "":
        why.append("an empty word: " + ("strtok skips it, so the words before it move down by 32 CPUs" if new
                                        else "it counts as a zero word"))
    long_words = [f for f in fields if re.fullmatch(r"\s*(0[xX])?[0-9a-fA-F]{9,}\s*", f)]
    if long_words:
        why.append(f"word {long_words[0].strip()!r} has more than 8 hex digits: NCCL keeps its low 32 bits")
    n_fields = len([f for f in fields if f != ""]) if new else len(fields)
    if n_fields > CPU_SET_WORDS:
        why.append(f"{n_fields} words, more than the {CPU_SET_WORDS} of a cpu_set_t: "
                   + ("NCCL reads the first 32, so the low words are lost and the rest moves down" if new
                      else "NCCL writes before the start of its 32-word array (memory corruption)"))
    if not new:
        bad = next((c for c in text if c not in "0123456789abcdef,"), None)
        if bad is not None:
            what = "an upper-case hex digit" if bad in "ABCDEF" else f"{bad!r}"
            why.append(f"{what}: NCCL before 2.28 stops reading the mask there")
    else:
        odd = [f for f in fields if f != "" and not _LOOSE_WORD.fullmatch(f)
               and not re.fullmatch(r"\s*(0[xX])?[0-9a-fA-F]{9,}\s*", f)]
        if odd and not why:
            why.append(f"word {odd[0]!r} is not 1 to 8 hex digits: NCCL's strtoul reads "
                       f"{strtoul(odd[0], 16).value & 0xFFFFFFFF:#x} from it")
    if not why:
        why.append("the words are not 32-bit hex words")
    return why


def cpus(mask: int) -> list[int]:
    """The CPU numbers of a bit mask, ascending."""
    out, i = [], 0
    while mask:
        if mask & 1:
            out.append(i)
        mask >>= 1
        i += 1
    return out


def cpu_ranges(mask: int) -> str:
    """``0-47,96-143`` (the kernel's cpulist form) for a bit mask; ``none`` for the empty set."""
    from ncclctl.sysfs import format_cpulist

    return format_cpulist(cpus(mask)) if mask else "none"


__all__ = ["CPU_SET_WORDS", "STRTOK_READER", "cpu_ranges", "cpus", "kernel_cpumap", "misreadings", "nccl_cpuset"]
