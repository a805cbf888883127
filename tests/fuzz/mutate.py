"""A seeded mutation engine for real samples (no hypothesis: cheap enough for 10,000 inputs per parser).

Every input is derived from a corpus sample by one to four operations: byte flips, insertions of "nasty"
tokens (NUL, invalid UTF-8, surrogates, huge numbers, BOMs, markup), deletions, truncation, line
duplication/deletion/swaps, field swaps within a line, number replacement, chunk blow-up (bounded), splicing
with another sample, newline conversions, and, for structured formats, edits of the parsed tree (JSON and
YAML values, XML elements and attributes). The same seed always gives the same inputs.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any, Callable

#: Upper bound on a mutated input (the blow-up operation stops there).
MAX_INPUT = 1 << 20

NASTY: tuple[bytes, ...] = (
    b"\x00", b"\xff", b"\xfe\xff", b"\xef\xbb\xbf", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80",
    b"\r\n", b"\r", b"\n\n\n", b"\t", b"\x0b", b"\x0c", b"\x1b[4m", b"\x1b[0m", "\u2028".encode(), b"\xc2\x85",
    "\uff11\uff12".encode(), b"1_000", b"9" * 40, b"9" * 5000, b"-1", b"-0", b"0x", b"0xffffffffffffffffff",
    b"18446744073709551616", b"-9223372036854775809", b"1e309", b"-1e309", b"nan", b"inf", b"NaN", b"Infinity",
    b"N/A", b"None", b"null", b"true", b"false", b"Unknown", b"(null)", b"???", b"", b" ", b"  ", b":", b"::",
    b"=", b"==", b",", b";", b"#", b"/", b"\\", b"..", b"../../etc/passwd", b"%s%n", b"{", b"}", b"[", b"]",
    b"{}", b"[]", b'"', b"'", b'\\"', b"<", b">", b"/>", b"</", b"<x>", b"</x>", b"&amp;", b"&#0;", b"&lt;",
    b"&x;", b"<!--", b"-->", b"<?xml version='1.0'?>", b"<![CDATA[x]]>", b"---", b"...", b"~", b"&a", b"*a",
    b"!!str", b"!!python/object/apply:os.system ['true']", b"? ", b"- ", b"<<: *a", b"%YAML 1.1",
    b"0000:00:00.0", b"ffff:ff:1f.7", b"0000:zz:00.0", b"fe80::1", b"0x0000000000000000", b"mlx5_0", b"mlx5_",
    b"Port 1:", b"CA '", b"GPU0", b"NV18", b"SYS", b"PHB", b"X", b"-", b"*",
)
HUGE_NUMBERS = (b"9" * 25, b"9" * 4400, b"-" + b"9" * 25, b"0x" + b"f" * 40, b"1e400", b"4294967296",
                b"2147483648", b"-2147483649", b"65536", b"256", b"0", b"-0", b"00000000000000000000001")
_NUMBER = re.compile(rb"-?(?:0x[0-9a-fA-F]+|[0-9]+(?:\.[0-9]+)?)")
_TAG = re.compile(rb"<[^<>]*>")
_ATTR_VALUE = re.compile(rb'="[^"]*"')


class Mutator:
    """``Mutator(corpus, seed, kind).next()`` -> one mutated input (bytes)."""

    def __init__(self, corpus: list[bytes], seed: int, kind: str = "text", max_input: int = MAX_INPUT) -> None:
        if not corpus:
            raise ValueError("empty corpus")
        self.corpus = corpus
        self.max_input = max_input
        self.rng = random.Random(seed)
        self.kind = kind
        self.ops: list[Callable[[bytes], bytes]] = [
            self.flip, self.insert, self.insert, self.delete, self.truncate, self.dup_line, self.del_line,
            self.swap_lines, self.swap_fields, self.number, self.number, self.blowup, self.splice, self.newlines,
            self.replace_token,
        ]
        if kind == "json":
            self.ops += [self.json_edit] * 6
        elif kind == "yaml":
            self.ops += [self.yaml_edit] * 6 + [self.yaml_special] * 2
        elif kind == "xml":
            self.ops += [self.xml_tag] * 4 + [self.xml_attr] * 4 + [self.xml_nest]

    def next(self) -> bytes:
        data = self.rng.choice(self.corpus)
        for _ in range(self.rng.choice((1, 1, 1, 2, 2, 3, 4))):
            data = self.rng.choice(self.ops)(data)
            if len(data) > self.max_input:
                data = data[: self.max_input]
        return data

    # -- byte level ----------------------------------------------------------------------------------------
    def _pos(self, data: bytes) -> int:
        return self.rng.randint(0, len(data))

    def flip(self, data: bytes) -> bytes:
        if not data:
            return self.rng.choice(NASTY)
        raw = bytearray(data)
        for _ in range(self.rng.randint(1, 8)):
            i = self.rng.randrange(len(raw))
            raw[i] ^= 1 << self.rng.randrange(8) if self.rng.random() < 0.7 else self.rng.randint(1, 255)
        return bytes(raw)

    def insert(self, data: bytes) -> bytes:
        i = self._pos(data)
        tok = self.rng.choice(NASTY) if self.rng.random() < 0.8 else bytes(
            self.rng.randrange(256) for _ in range(self.rng.randint(1, 16)))
        return data[:i] + tok + data[i:]

    def delete(self, data: bytes) -> bytes:
        if not data:
            return data
        i = self.rng.randrange(len(data))
        return data[:i] + data[i + self.rng.randint(1, min(64, len(data) - i)):]

    def truncate(self, data: bytes) -> bytes:
        return data[: self._pos(data)]

    def _lines(self, data: bytes) -> list[bytes]:
        return data.split(b"\n")

    def dup_line(self, data: bytes) -> bytes:
        lines = self._lines(data)
        i = self.rng.randrange(len(lines))
        lines[i:i] = [lines[i]] * self.rng.choice((1, 1, 2, 10, 100))
        return b"\n".join(lines)

    def del_line(self, data: bytes) -> bytes:
        lines = self._lines(data)
        del lines[self.rng.randrange(len(lines))]
        return b"\n".join(lines)

    def swap_lines(self, data: bytes) -> bytes:
        lines = self._lines(data)
        i, j = self.rng.randrange(len(lines)), self.rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        return b"\n".join(lines)

    def swap_fields(self, data: bytes) -> bytes:
        lines = self._lines(data)
        i = self.rng.randrange(len(lines))
        fields = re.split(rb"(\s+)", lines[i])
        words = [k for k in range(0, len(fields), 2) if fields[k]]
        if len(words) >= 2:
            a, b = self.rng.sample(words, 2)
            fields[a], fields[b] = fields[b], fields[a]
        lines[i] = b"".join(fields)
        return b"\n".join(lines)

    def number(self, data: bytes) -> bytes:
        found = list(_NUMBER.finditer(data))
        if not found:
            return self.insert(data)
        m = self.rng.choice(found)
        return data[: m.start()] + self.rng.choice(HUGE_NUMBERS) + data[m.end():]

    def blowup(self, data: bytes) -> bytes:
        if not data:
            return b"\n" * (self.max_input // 2)
        i = self.rng.randrange(len(data))
        chunk = data[i: i + self.rng.randint(1, 200)]
        times = min(self.rng.choice((10, 1000, 20_000)), self.max_input // max(1, len(chunk)) // 2)
        return data[:i] + chunk * times + data[i:]

    def splice(self, data: bytes) -> bytes:
        other = self.rng.choice(self.corpus)
        return data[: self._pos(data)] + other[self.rng.randint(0, len(other)):]

    def newlines(self, data: bytes) -> bytes:
        return self.rng.choice((
            lambda d: d.replace(b"\n", b"\r\n"), lambda d: d.replace(b"\n", b"\r"), lambda d: d.replace(b"\n", b""),
            lambda d: d.replace(b" ", b"\t"), lambda d: d.replace(b"\t", b" "), lambda d: d.strip(),
            lambda d: d + b"\n" * 3, lambda d: d.upper(), lambda d: d.lower(),
        ))(data)

    def replace_token(self, data: bytes) -> bytes:
        parts = re.split(rb"(\s+)", data)
        words = [k for k in range(0, len(parts), 2) if parts[k]]
        if not words:
            return self.insert(data)
        parts[self.rng.choice(words)] = self.rng.choice(NASTY)
        return b"".join(parts)

    # -- structured ----------------------------------------------------------------------------------------
    def _value(self, depth: int = 0) -> Any:
        r = self.rng.random()
        if depth < 3 and r < 0.15:
            return [self._value(depth + 1) for _ in range(self.rng.randint(0, 3))]
        if depth < 3 and r < 0.3:
            return {self.rng.choice(("", "a", "name", "1", "hosts", "rules", "devices", "0")): self._value(depth + 1)
                    for _ in range(self.rng.randint(0, 3))}
        return self.rng.choice((
            None, True, False, 0, -1, 1, 2**31, 2**64, -(2**63) - 1, 10**30, 1.5, -0.0, 1e308, "", "x", " ",
            "\x00", "\ud800", "é", "a" * 1000, "0x10", "1e5", "null", "-", [], {}, [[[[]]]],
            self.rng.randint(-(2**70), 2**70),
        ))

    def _tree_edit(self, doc: Any) -> Any:
        slots: list[tuple[Any, Any]] = []
        stack = [doc]
        seen: set[int] = set()
        while stack and len(slots) < 10_000:  # YAML aliases share nodes: visit each container once
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node, dict):
                for k, v in node.items():
                    slots.append((node, k))
                    stack.append(v)
            elif isinstance(node, list):
                for i, v in enumerate(node):
                    slots.append((node, i))
                    stack.append(v)
        if not slots:
            return self._value()
        parent, key = self.rng.choice(slots)
        r = self.rng.random()
        if isinstance(parent, dict) and r < 0.2:
            parent[self.rng.choice(("", "x", 1, "version", "schema_version"))] = parent.pop(key)
        elif r < 0.3:
            if isinstance(parent, dict):
                del parent[key]
            else:
                del parent[key]
        elif r < 0.4 and isinstance(parent, list):
            parent.extend(parent[key:key + 1] * self.rng.choice((1, 2, 50)))
        else:
            parent[key] = self._value()
        return doc

    def json_edit(self, data: bytes) -> bytes:
        try:
            doc = json.loads(data)
        except (ValueError, RecursionError):
            return self.insert(data)
        if self.rng.random() < 0.05:
            depth = self.rng.choice((100, 1000, 50_000))
            return b"[" * depth + b"]" * depth if self.rng.random() < 0.5 else b'{"a":' * depth + b"1" + b"}" * depth
        doc = self._tree_edit(doc)
        try:
            return json.dumps(doc, indent=self.rng.choice((None, 2))).encode("utf-8", "surrogatepass")
        except (ValueError, OverflowError):
            return data

    def yaml_edit(self, data: bytes) -> bytes:
        import yaml

        try:
            doc = yaml.safe_load(data)
        except (yaml.YAMLError, RecursionError, ValueError):
            return self.insert(data)
        doc = self._tree_edit(doc)
        try:
            return yaml.safe_dump(doc, allow_unicode=self.rng.random() < 0.5,
                                  default_flow_style=self.rng.choice((None, True, False))).encode("utf-8", "surrogatepass")
        except (yaml.YAMLError, ValueError, RecursionError):
            return data

    def yaml_special(self, data: bytes) -> bytes:
        specials = (
            b"a: &a [1, 2]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b]\n"
            b"d: &d [*c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d]\n"
            b"f: [*e, *e, *e, *e, *e, *e, *e, *e]\n",
            b"[" * 5000 + b"]" * 5000,
            b"a:\n" + b"".join(b"  " * i + b"b:\n" for i in range(1, 400)),
            b"!!python/object/apply:os.system ['true']\n",
            b"a: !!binary AAAA\n", b"? [a, b]\n: 1\n", b"1: a\nx: b\n", b"a: 1\na: 2\n", b"<<: {a: 1}\n",
            b"%TAG ! tag:x:\n--- !x\n", b"- &a [*a]\n", b"a: *undefined\n", b"\t- a\n", b"a: 2001-01-01\n",
            b"a: 0b1010\n", b"a: 1_000\n", b"a: .inf\n", b"a: ~\n", b"--- 1\n--- 2\n", b"\"\\ud800\"\n",
        )
        tok = self.rng.choice(specials)
        return tok if self.rng.random() < 0.5 else data + b"\n" + tok

    def xml_tag(self, data: bytes) -> bytes:
        tags = list(_TAG.finditer(data))
        if not tags:
            return self.insert(data)
        m = self.rng.choice(tags)
        r = self.rng.random()
        if r < 0.3:  # duplicate a tag
            return data[: m.end()] + m.group(0) * self.rng.choice((1, 2, 40, 300)) + data[m.end():]
        if r < 0.5:  # delete a tag
            return data[: m.start()] + data[m.end():]
        if r < 0.7:  # move a tag
            rest = data[: m.start()] + data[m.end():]
            i = self.rng.randint(0, len(rest))
            return rest[:i] + m.group(0) + rest[i:]
        if r < 0.85:  # rename
            name = self.rng.choice((b"system", b"cpu", b"pci", b"gpu", b"nic", b"net", b"nvlink", b"c2c", b"pcilink",
                                    b"graphs", b"graph", b"channel", b"x", b"", b"!DOCTYPE", b"?xml", b"/"))
            tag = re.sub(rb"^<(/?)[^\s/>]*", lambda mm: b"<" + mm.group(1) + name, m.group(0))
            return data[: m.start()] + tag + data[m.end():]
        # self-closing <-> open
        tag = m.group(0)
        tag = tag[:-2] + b">" if tag.endswith(b"/>") else tag[:-1] + b"/>"
        return data[: m.start()] + tag + data[m.end():]

    def xml_attr(self, data: bytes) -> bytes:
        values = list(_ATTR_VALUE.finditer(data))
        if not values:
            return self.insert(data)
        m = self.rng.choice(values)
        v = self.rng.choice(NASTY + HUGE_NUMBERS + (b"0x" + b"f" * 300, b"a" * 300, b"-1", b"0", b"1", b"x86_64",
                                                    b"0000:00:00.0", b"0x0302", b"0x020700", b"32.0 GT/s PCIe"))
        v = v.replace(b'"', b"'")
        if self.rng.random() < 0.2:  # add attributes instead
            extra = b"".join(b' a%d="%s"' % (k, v) for k in range(self.rng.choice((1, 20))))
            return data[: m.end()] + extra + data[m.end():]
        return data[: m.start()] + b'="' + v + b'"' + data[m.end():]

    def xml_nest(self, data: bytes) -> bytes:
        tags = list(_TAG.finditer(data)) or [None]
        m = self.rng.choice(tags)
        i = m.end() if m is not None else 0
        name = self.rng.choice((b"pci", b"x", b"cpu", b"graph"))
        depth = self.rng.choice((10, 255, 300, 5000))
        return data[:i] + (b"<" + name + b">") * depth + (b"</" + name + b">") * depth + data[i:]
