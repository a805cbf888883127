"""``ncclctl snapshot --redact``: replace the host's identifiers consistently in every captured file.

The contract (docs/fixture-format.md, "Redaction"):

* Every occurrence of an identifier is replaced by one fake value, in every file and in every spelling it has
  there, so the redacted tree still probes to a coherent model (same GPUs, NICs, rails, GID tables, LLDP
  neighbours; the same lint findings). The fake is a function of the value alone (and of ``NCCLCTL_REDACT_KEY``
  when set), so the same switch, address or GUID gets the same fake in the snapshots of every host of a fleet.
* Identifiers are replaced as whole tokens in their known encodings only, never as raw substrings:

  - MAC addresses (``a0:88:c2:5f:f9:c2``, ``A0-88-..``, and bare ``a088c25ff9c2`` when the MAC is known from
    elsewhere) -> locally administered ``02:..``; group (multicast, broadcast) and all-zero MACs are kept.
  - GUIDs / EUI-64s (``a088:c203:005f:f9c2``, ``a0:88:c2:03:00:5f:f9:c2``, ``0xa088c203005ff9c2``, bare 16 hex
    digits) and the EUI-64 interface ids inside GIDs, IPv6 addresses and 20-byte IPoIB hardware addresses. An
    EUI-64 made from a MAC (``..ff:fe..``) becomes the EUI-64 of that MAC's fake, so a RoCE link-local GID
    still matches its netdev's address.
  - IPv4 addresses: dotted (also with ``/len``), and inside IPv4-mapped GIDs in sysfs form
    (``0000:..:ffff:0ac8:000c``) and compressed forms (``::ffff:10.200.0.12``, ``::ffff:0ac8:000c``). The fake
    lies in 10.0.0.0/8; the first octet selects the mapping, the next 16 bits are mapped prefix-preservingly and
    the last octet is kept, so two addresses that share a /9../32 prefix (with the same first octet) still share
    it, a subnet written as ``a.b.c.d/len`` maps onto the subnet of its members' fakes, and rails stay on
    separate subnets. Loopback, link-local (169.254/16), multicast, reserved, 0/8 addresses and netmasks are
    kept. Dotted quads preceded on their line by a version word (``version``, ``fw_ver``...) are not addresses.
  - IPv6 addresses (full and compressed, with ``/len``): link-local keeps its ``fe80::/64`` prefix; any other
    unicast prefix becomes ``2001:db8:X:Y::/64`` (X from the real /48, Y from the real /64); the interface id
    maps as an EUI-64. Loopback, unspecified and multicast addresses are kept.
  - UUIDs (GPU ``GPU-..``/``MIG-..``, ``root=UUID=``/``PARTUUID=`` on the kernel command line).
  - GPU serial numbers (each character replaced by one of the same class: digit, upper, lower case).
  - The hostname, as a whole token bounded by anything but ``[A-Za-z0-9_-]`` (``vm`` is replaced in
    ``vm.example.org`` but not in ``vme``, ``nvml`` or ``nested_pvm=1``), also followed by domain labels
    (its FQDN forms): ``host-<hash>`` and ``host-<hash>.dom-<hash>.example``.
  - LLDP neighbours (``lldpctl -f json`` and ``lldptool -t -n -i`` captures): switch system names ->
    ``switch-<hash>``, chassis ids (MACs, addresses, or other strings -> ``chassis-<hash>``), MAC port ids and
    management addresses.
  - The Device Serial Number capability in captured PCI config space (treated as an EUI-64).
  - PCI VPD (``vpd`` of ConnectX functions): the values of the serial number ``SN``, the board UUID ``V3`` and the
    asset tag ``YA``, each replaced like a GPU serial (same length and character classes; one fake per value, so
    a NIC's PF and its Data Direct DMA function still share their V3), with the ``RV`` checksum recomputed.
  - The values of the NCCL variables NCCL's registry marks SENSITIVE (the ``sensitive`` flag of
    :mod:`ncclctl.nccl.variables`), in ``env.json`` and in the NCCL conf files: ``<redacted>``.

Without ``NCCLCTL_REDACT_KEY`` the fakes are an unkeyed hash: they hide identifiers from a reader, not from
someone who tests guesses (a MAC with a known vendor prefix has 2**24 candidates). Set the variable to the same
secret on every host of a fleet to make the mapping keyed.
"""

from __future__ import annotations

import re

__all__ = ["Redactor", "redact_files"]

_H = "[0-9A-Fa-f]"
# Identifier-shaped tokens, tried left to right at each position. Every repetition is bounded, so a hostile
# file of one long run of hex digits and colons costs linear time.
_TOKEN_RE = re.compile(
    "|".join((
        rf"(?P<uuid>(?<![0-9A-Za-z_]){_H}{{8}}-{_H}{{4}}-{_H}{{4}}-{_H}{{4}}-{_H}{{12}}(?![0-9A-Za-z_]))",
        rf"(?<=UUID=)(?P<partuuid>{_H}{{8}}-{_H}{{2}})(?![0-9A-Za-z_-])",
        rf"(?P<colon>(?<![0-9A-Za-z_.:]){_H}{{0,4}}(?::{_H}{{0,4}}){{2,19}}"
        rf"(?:(?<=:)\d{{1,3}}(?:\.\d{{1,3}}){{3}})?(?:/\d{{1,3}})?)(?![0-9A-Za-z_:]|\.\d)",
        rf"(?P<dash>(?<![0-9A-Za-z_-]){_H}{{2}}(?:-{_H}{{2}}){{5}})(?![0-9A-Za-z_-])",
        r"(?P<dotted>(?<![0-9A-Za-z_.])\d{1,3}(?:\.\d{1,3}){3}(?:/\d{1,2})?)(?![0-9A-Za-z_]|\.\d)",
        rf"(?P<hex>(?<![0-9A-Za-z_])(?:0[xX]{_H}{{9,16}}|{_H}{{12,32}}))(?![0-9A-Za-z_])",
    )),
    re.ASCII,
)
_VERSION_WORDS = frozenset(("version", "ver", "vers", "fw", "firmware", "bios", "vbios", "rev", "revision",
                            "release", "inforom", "build"))
_SKIP_NAMES = frozenset(("", "unknown", "localhost", "localhost.localdomain", "(none)", "none"))


def _line_before(text: str, pos: int, width: int = 48) -> str:
    start = text.rfind("\n", max(0, pos - width), pos) + 1
    return text[max(start, pos - width):pos]


def _words(fragment: str) -> set[str]:
    return set(re.findall(r"[a-z]+", fragment.lower()))


def _is_netmask(a: int) -> bool:
    inv = ~a & 0xFFFFFFFF
    return inv & (inv + 1) == 0


def _v4_special(a: int) -> bool:
    first = a >> 24
    return (first in (0, 127) or first >= 224 or a >> 16 == 0xA9FE  # 0/8, loopback, multicast/reserved, 169.254/16
            or _is_netmask(a))


def _v4_text(a: int) -> str:
    return ".".join(str((a >> s) & 0xFF) for s in (24, 16, 8, 0))


def _v4_parse(text: str) -> int | None:
    parts = text.split(".")
    if len(parts) != 4 or any(len(p) > 1 and p[0] == "0" for p in parts):
        return None  # leading zeros: not how an address is written (octal to inet_aton, a version elsewhere)
    vals = [int(p) for p in parts]
    if any(v > 255 for v in vals):
        return None
    return vals[0] << 24 | vals[1] << 16 | vals[2] << 8 | vals[3]


def _v6_parse(text: str) -> bytes | None:
    import ipaddress  # noqa: PLC0415
    try:
        return ipaddress.IPv6Address(text).packed
    except ValueError:
        return None


def _eui_mac(b: bytes) -> bytes | None:
    """The MAC an EUI-64 interface id was made from (``xx:xx:xx:ff:fe:xx:xx:xx``, U/L bit flipped), if it was."""
    if len(b) == 8 and b[3:5] == b"\xff\xfe":
        return bytes([b[0] ^ 2]) + b[1:3] + b[5:8]
    return None


def _mac_eui(mac: bytes) -> bytes:
    return bytes([mac[0] ^ 2]) + mac[1:3] + b"\xff\xfe" + mac[3:6]


def _case(template: str, out: str) -> str:
    """Write ``out`` in upper case when the hex letters of ``template`` are upper case."""
    letters = [c for c in template if c in "abcdefABCDEF"]
    return out.upper() if letters and all(c.isupper() for c in letters) else out


class Redactor:
    """Learns a host's identifiers from its model and files (:meth:`learn_node`, :meth:`learn_text`,
    :meth:`learn_lldp`), then rewrites text (:meth:`text`) and PCI config space (:meth:`config`)."""

    def __init__(self, key: str = "") -> None:
        self.key = key.encode()
        self.macs: set[bytes] = set()
        self.guids: set[bytes] = set()
        self.ipv4: set[int] = set()
        self.names: dict[str, str] = {}  # lower-case name -> fake
        self.serials: dict[str, str] = {}
        self._v4map: dict[int, int] | None = None
        self._names_re: re.Pattern[str] | None = None
        self._cache: dict[tuple[str, object], bytes] = {}

    # -- fakes -----------------------------------------------------------------------------------

    def _hash(self, salt: str, value: object) -> bytes:
        ck = (salt, value)
        got = self._cache.get(ck)
        if got is None:
            import hashlib  # noqa: PLC0415
            import hmac  # noqa: PLC0415
            data = salt.encode() + b"\0" + (value if isinstance(value, bytes) else str(value).encode())
            got = (hmac.new(self.key, data, hashlib.sha256).digest() if self.key
                   else hashlib.sha256(data).digest())
            self._cache[ck] = got
        return got

    def mac(self, m: bytes) -> bytes:
        if m[0] & 1 or m == bytes(6):  # group addresses (broadcast, multicast) and the null MAC say nothing
            return m
        return b"\x02" + self._hash("mac", m)[:5]

    def eui64(self, b: bytes) -> bytes:
        """A GUID or EUI-64 interface id; one made from a MAC follows that MAC's fake."""
        if b == bytes(8):
            return b
        mac = _eui_mac(b)
        if mac is not None:
            return _mac_eui(self.mac(mac))
        return b"\x02" + self._hash("guid", b)[:7]

    def ip4(self, a: int) -> int:
        if _v4_special(a):
            return a
        if self._v4map is None:
            self._finish_v4()
        assert self._v4map is not None
        got = self._v4map.get(a)
        if got is None:  # not learned beforehand (embedded in a GID of a file read after learning): map anyway
            got = self._v4map[a] = self._pp4(a, 0)
        return got

    def _pp4(self, a: int, round_: int) -> int:
        first, mid = a >> 24, (a >> 8) & 0xFFFF
        out = 0
        for i in range(16):
            flip = self._hash(f"v4/{round_}/{first}/{i}", mid >> (16 - i))[0] & 1
            out = out << 1 | (((mid >> (15 - i)) & 1) ^ flip)
        return 10 << 24 | out << 8 | (a & 0xFF)

    def _finish_v4(self) -> None:
        self._v4map = {}
        used: dict[int, int] = {}
        for a in sorted(self.ipv4):
            if _v4_special(a):
                continue
            round_ = 0
            fake = self._pp4(a, 0)
            while fake in used:  # two real /8s landing on one fake address: rare, resolved deterministically
                round_ += 1
                fake = self._pp4(a, round_)
            used[fake] = a
            self._v4map[a] = fake

    def ip6(self, b: bytes) -> bytes:
        if b[:12] == bytes(10) + b"\xff\xff":
            return b[:12] + self.ip4(int.from_bytes(b[12:], "big")).to_bytes(4, "big")
        if b[0] == 0xFF or b[:15] == bytes(15):  # multicast, loopback, unspecified
            return b
        iid = self.eui64(b[8:])
        if b[0] == 0xFE and b[1] & 0xC0 == 0x80:  # link-local: fe80::/10 keeps its prefix
            return b[:8] + iid
        return (b"\x20\x01\x0d\xb8" + self._hash("v6/48", b[:6])[:2] + self._hash("v6/64", b[:8])[:2] + iid)

    def uuid(self, u: str) -> str:
        if not u.strip("0-"):
            return u  # the nil UUID
        h = self._hash("uuid", u.lower()).hex()
        out = "-".join(h[a:b] for a, b in ((0, 8), (8, 12), (12, 16), (16, 20), (20, 32)))
        return _case(u, out)

    def _serial(self, s: str) -> str:
        h = self._hash("serial", s)
        out = []
        for i, c in enumerate(s):
            v = h[i % len(h)]
            out.append(str(v % 10) if c.isdigit() else chr(65 + v % 26) if c.isupper()
                       else chr(97 + v % 26) if c.islower() else c)
        return "".join(out)

    # -- learning ----------------------------------------------------------------------------------

    def add_name(self, name: str | None, kind: str) -> None:
        if not name:
            return
        name = name.strip().lower().rstrip(".")
        if name in _SKIP_NAMES or len(name) < 2:
            return
        short = name.split(".", 1)[0] if kind != "chassis" else name
        if short and short not in self.names and len(short) >= 2:
            self.names[short] = f"{kind}-{self._hash(kind, short)[:4].hex()}"
            self._names_re = None
        if short != name and name not in self.names:
            self.names[name] = self._fqdn(short, name.split(".", 1)[1])
            self._names_re = None

    def _fqdn(self, short: str, domain: str) -> str:
        return f"{self.names[short]}.dom-{self._hash('domain', domain.lower())[:3].hex()}.example"

    def add_serial(self, serial: str | None) -> None:
        if serial and len(serial) >= 4 and set(serial) != {"0"}:
            self.serials[serial] = self._serial(serial)
            self._names_re = None

    def add_ip(self, text: str | None) -> None:
        if not text:
            return
        a = _v4_parse(text.strip())
        if a is not None:
            self.ipv4.add(a)
        else:
            b = _v6_parse(text.strip().split("%")[0])
            if b is not None:
                self._learn_v6(b)

    def add_mac(self, text: str | None) -> None:
        hexs = re.sub(r"[:-]", "", text or "")
        if re.fullmatch(r"[0-9A-Fa-f]{12}", hexs):
            self.macs.add(bytes.fromhex(hexs))
        elif re.fullmatch(r"[0-9A-Fa-f]{40}", hexs):  # IPoIB
            self._learn_v6(bytes.fromhex(hexs)[4:])

    def add_guid(self, text: str | None) -> None:
        s = (text or "").strip().lower()
        s = s[2:] if s.startswith("0x") else s.replace(":", "")
        if re.fullmatch(r"[0-9a-f]{1,16}", s) and int(s, 16):
            self._learn_eui(bytes.fromhex(s.rjust(16, "0")))

    def _learn_eui(self, b: bytes) -> None:
        if b == bytes(8):
            return
        self.guids.add(b)
        mac = _eui_mac(b)
        if mac is not None:
            self.macs.add(mac)

    def _learn_v6(self, b: bytes) -> None:
        if b[:12] == bytes(10) + b"\xff\xff":
            self.ipv4.add(int.from_bytes(b[12:], "big"))
        elif b[0] != 0xFF and b[:15] != bytes(15):
            self._learn_eui(b[8:])

    def learn_node(self, node) -> None:
        """The identifiers the probe model holds: hostname, GUIDs, GIDs, MACs, GPU serials, LLDP neighbours."""
        self.add_name(node.hostname, "host")
        for nic in node.nics:
            self.add_guid(nic.node_guid)
            self.add_guid(nic.sys_image_guid)
            for port in nic.ports:
                for gid in port.gids:
                    b = bytes.fromhex(gid.gid.replace(":", ""))
                    self._learn_v6(b)
        for nd in node.netdevs:
            self.add_mac(nd.address)
            if nd.lldp is not None:
                self._learn_neighbor(nd.lldp.chassis_name, nd.lldp.chassis_id, None, nd.lldp.port_id, None, ())
        for gpu in node.gpus:
            self.add_serial(gpu.serial)

    def _learn_neighbor(self, name, chassis_id, chassis_type, port_id, port_type, mgmt) -> None:
        self.add_name(name, "switch")
        for value, kind, is_chassis in ((chassis_id, chassis_type, True), (port_id, port_type, False)):
            if not value:
                continue
            if re.fullmatch(r"[0-9A-Fa-f]{2}([:-][0-9A-Fa-f]{2}){5}", value):
                self.add_mac(value)
            elif kind == "ip" or _v4_parse(value) is not None or _v6_parse(value) is not None:
                self.add_ip(value)
            elif is_chassis and kind not in ("ifname", "ifalias", "port"):
                self.add_name(value, "chassis")  # a locally assigned chassis id: a serial or a name
        for ip in mgmt:
            self.add_ip(ip)

    def learn_lldp(self, files: dict[str, bytes]) -> None:
        """Neighbours from the recorded ``lldpctl -f json`` and ``lldptool -t -n -i IF`` outputs."""
        from ncclctl.errors import NcclctlError  # noqa: PLC0415
        from ncclctl.parsers.lldp import parse_lldpctl_json, parse_lldptool_neighbor  # noqa: PLC0415
        for path in sorted(files):
            name = path.rsplit("/", 1)[-1]
            if not path.startswith("/cmd/") or not name.endswith(".txt"):
                continue
            text = files[path].decode("utf-8", "replace")
            try:
                if name.startswith("lldpctl_"):
                    found = parse_lldpctl_json(text, source=path)
                elif name.startswith("lldptool_-t_-n_-i_") and "_-V_" not in name:
                    found = (parse_lldptool_neighbor(text, source=path),)
                else:
                    continue
            except NcclctlError:
                continue
            for nb in found:
                self._learn_neighbor(nb.chassis_name, nb.chassis_id, nb.chassis_id_type, nb.port_id,
                                     nb.port_id_type, nb.mgmt_ips)

    def learn_text(self, text: str) -> None:
        """Identifiers whose spelling is unambiguous (MACs, GUIDs, GIDs, IPv6, dotted IPv4 outside version
        strings, 0x GUIDs after the word GUID) anywhere in a captured file."""
        for m in _TOKEN_RE.finditer(text):
            kind, tok = m.lastgroup, m.group(m.lastgroup or 0)
            if kind == "colon":
                addr = tok.split("/", 1)[0]
                if re.fullmatch(r"[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}|[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){19}", addr):
                    self.add_mac(addr)
                elif re.fullmatch(r"[0-9A-Fa-f]{4}(:[0-9A-Fa-f]{4}){3}|[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){7}", addr):
                    self.add_guid(addr)
                else:
                    b = _v6_parse(addr)
                    if b is not None:
                        self._learn_v6(b)
            elif kind == "dash":
                self.add_mac(tok)
            elif kind == "dotted":
                if not _words(_line_before(text, m.start())) & _VERSION_WORDS:
                    a = _v4_parse(tok.split("/", 1)[0])
                    if a is not None:
                        self.ipv4.add(a)
            elif kind == "hex":
                before = _line_before(text, m.start()).lower()
                digits = tok[2:] if tok[:2] in ("0x", "0X") else tok
                if "guid" in before or text[max(0, m.start() - 2):m.start()] in ("H-", "S-", "R-"):
                    if len(digits) <= 16:
                        self.add_guid("0x" + digits)
                elif len(digits) == 12 and ({"mac", "hwaddr", "ether", "lladdr"} & _words(before)):
                    self.add_mac(digits)

    # -- rewriting ---------------------------------------------------------------------------------

    def _names_pattern(self) -> re.Pattern[str] | None:
        if self._names_re is None and (self.names or self.serials):
            alts = []
            if self.names:
                names = sorted(self.names, key=lambda n: (-len(n), n))
                alts.append(r"(?P<name>(?<![A-Za-z0-9_-])(?<!<)(?<!</)(?i:"
                            + "|".join(re.escape(n) for n in names)
                            + r"))(?P<domain>(?:\.[A-Za-z0-9-]{1,63}){0,8})(?![A-Za-z0-9_-])")
            if self.serials:
                alts.append(r"(?P<serial>(?<![A-Za-z0-9_-])(?:"
                            + "|".join(re.escape(s) for s in sorted(self.serials, key=lambda s: (-len(s), s)))
                            + r"))(?![A-Za-z0-9_-])")
            self._names_re = re.compile("|".join(alts), re.ASCII)
        return self._names_re

    def _word(self, m: re.Match[str]) -> str:
        if "serial" in m.re.groupindex and m.group("serial"):
            return self.serials[m.group("serial")]
        name, domain = m.group("name").lower(), m.group("domain")
        if not domain:
            return self.names[name]
        full = name + domain.lower()
        if full in self.names:
            return self.names[full]
        if "." in name:  # a known FQDN followed by more labels: keep them as they are
            return self.names[name] + domain
        return self._fqdn(name, domain[1:])

    def _words_in(self, text: str) -> str:
        pattern = self._names_pattern()
        return pattern.sub(self._word, text) if pattern is not None else text

    def text(self, text: str) -> str:
        """``text`` with every learned identifier replaced (one pass: fakes are never rewritten again)."""
        parts = []
        pos = 0
        for m in _TOKEN_RE.finditer(text):
            parts.append(self._words_in(text[pos:m.start()]))
            tok = m.group(m.lastgroup or 0)
            out = self._token(m.lastgroup or "", tok)
            parts.append(self._words_in(tok) if out is None else out)
            pos = m.end()
        parts.append(self._words_in(text[pos:]))
        return "".join(parts)

    def _token(self, kind: str, tok: str) -> str | None:
        """The fake for one token, or None when it is not a learned identifier."""
        if kind == "uuid":
            return self.uuid(tok)
        if kind == "partuuid":
            h = self._hash("partuuid", tok.lower()).hex()
            return _case(tok, f"{h[:8]}-{tok[9:]}")
        if kind == "colon":
            return self._colon(tok)
        if kind == "dash":
            out = self.mac(bytes.fromhex(tok.replace("-", "")))
            return _case(tok, "-".join(f"{x:02x}" for x in out))
        if kind == "dotted":
            addr, _, plen = tok.partition("/")
            a = _v4_parse(addr)
            if a is None or a not in self.ipv4:
                return None
            fake = self.ip4(a)
            if plen and int(plen) <= 32:
                mask = (0xFFFFFFFF << (32 - int(plen))) & 0xFFFFFFFF
                if a & ~mask & 0xFFFFFFFF == 0:  # a network: the network of the members' fakes
                    fake &= mask
            return _v4_text(fake) + (f"/{plen}" if plen else "")
        if kind == "hex":
            return self._hex(tok)
        return None

    def _hex(self, tok: str) -> str | None:
        if tok[:2] in ("0x", "0X"):
            b = bytes.fromhex(tok[2:].rjust(16, "0"))
            if b not in self.guids:
                return None
            fake = self.eui64(b).hex()
            width = len(tok) - 2
            return tok[:2] + _case(tok[2:], fake[-width:] if fake[:16 - width] == "0" * (16 - width) else fake)
        b = bytes.fromhex(tok) if len(tok) % 2 == 0 else b""
        if len(b) == 6 and b in self.macs:
            return _case(tok, self.mac(b).hex())
        if len(b) == 8 and b in self.guids:
            return _case(tok, self.eui64(b).hex())
        if len(b) == 16 and (b[:12] == bytes(10) + b"\xff\xff" or b[:8] == b"\xfe\x80" + bytes(6)):
            out = self.ip6(b)
            return None if out == b else _case(tok, out.hex())
        return None

    def _colon(self, tok: str) -> str | None:
        addr, slash, plen = tok.partition("/")
        groups = addr.split(":")
        if all(len(g) == 2 for g in groups) and len(groups) in (6, 8, 20):
            b = bytes.fromhex(addr.replace(":", ""))
            if len(b) == 6:
                out = self.mac(b)
            elif len(b) == 8:
                out = self.eui64(b)
            else:
                out = b[:4] + self.ip6(b[4:])
            return _case(tok, ":".join(f"{x:02x}" for x in out)) + slash + plen
        if len(groups) == 4 and all(len(g) == 4 for g in groups):
            out = self.eui64(bytes.fromhex(addr.replace(":", "")))
            return _case(tok, ":".join(out[i:i + 2].hex() for i in range(0, 8, 2))) + slash + plen
        packed = _v6_parse(addr)
        if packed is None:
            return None
        out = self.ip6(packed)
        if plen and int(plen) <= 128:
            n = int(plen)
            mask = ((1 << 128) - 1) ^ ((1 << (128 - n)) - 1)
            if int.from_bytes(packed, "big") & ~mask == 0:
                out = (int.from_bytes(out, "big") & mask).to_bytes(16, "big")
        if out == packed:
            return None
        return _case(addr, _v6_format(out, addr)) + slash + plen

    def vpd(self, data: bytes) -> bytes:
        """PCI VPD with the SN, V3 and YA values replaced (same length) and the RV checksum made valid again."""
        from ncclctl.probe.pciconf import vpd_fields  # noqa: PLC0415

        out = bytearray(data)
        for key, start, n in list(vpd_fields(data)):
            if key in ("SN", "V3", "YA") and n:
                fake = self._serial(data[start:start + n].decode("latin-1")).encode("latin-1")
                out[start:start + n] = fake[:n]
        for key, start, n in vpd_fields(bytes(out)):
            if key == "RV" and n:  # checksum: all bytes from the start through this one sum to zero
                out[start] = (-sum(out[:start])) & 0xFF
                break
        return bytes(out)

    def config(self, data: bytes) -> bytes:
        """PCI config space with the Device Serial Number capability's 8 bytes replaced (an EUI-64)."""
        out = bytearray(data)
        off, seen = 0x100, set()
        while off and off not in seen and off + 12 <= len(out):
            seen.add(off)
            header = int.from_bytes(out[off:off + 4], "little")
            if header in (0, 0xFFFFFFFF):
                break
            if header & 0xFFFF == 0x0003:
                serial = int.from_bytes(out[off + 4:off + 12], "little").to_bytes(8, "big")
                out[off + 4:off + 12] = int.from_bytes(self.eui64(serial), "big").to_bytes(8, "little")
            off = (header >> 20) & 0xFFC
        return bytes(out)


def _v6_format(b: bytes, like: str) -> str:
    """``b`` spelled like ``like``: sysfs full form, compressed, with an IPv4 tail, zero-padded groups."""
    groups = [b[i:i + 2].hex() for i in range(0, 16, 2)]
    if "::" not in like and like.count(":") == 7 and "." not in like:
        return ":".join(groups if all(len(g) == 4 for g in like.split(":")) else [g.lstrip("0") or "0" for g in groups])
    tail = None
    if "." in like and b[:12] == bytes(10) + b"\xff\xff":
        tail = _v4_text(int.from_bytes(b[12:], "big"))
        groups = groups[:6]
    padded = any(len(g) == 4 and g[0] == "0" for g in like.split(":"))  # inet_ntop drops leading zeros
    if not padded:
        groups = [g.lstrip("0") or "0" for g in groups]
    zero = "0000" if padded else "0"
    best, best_len, i = -1, 1, 0
    while i < len(groups):  # RFC 5952: the longest run of two or more zero groups becomes "::"
        if groups[i] == zero:
            j = i
            while j < len(groups) and groups[j] == zero:
                j += 1
            if j - i > best_len:
                best, best_len = i, j - i
            i = j
        else:
            i += 1
    if best >= 0:
        head, rest = ":".join(groups[:best]), ":".join(groups[best + best_len:])
        text = f"{head}::{rest}"
    else:
        text = ":".join(groups)
    if tail is not None:
        text = text + tail if text.endswith(":") else f"{text}:{tail}"
    return text


def _sensitive(files: dict[str, bytes], conf_paths: set[str]) -> dict[str, bytes]:
    """``files`` with the values of sensitive NCCL variables replaced in ``/env.json`` and the conf files."""
    import json  # noqa: PLC0415

    from ncclctl.nccl.variables import REDACTED, sensitive_variable  # noqa: PLC0415
    out = dict(files)
    raw = files.get("/env.json")
    if raw is not None:
        try:
            env = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            env = None  # not what the probe wrote: the probe of the snapshot reports it
        if isinstance(env, dict) and any(sensitive_variable(k) for k in env):
            env = {k: REDACTED if sensitive_variable(k) else v for k, v in env.items()}
            out["/env.json"] = (json.dumps(env, indent=2, sort_keys=True) + "\n").encode()
    for path in conf_paths & set(files):
        lines = files[path].split(b"\n")
        for i, line in enumerate(lines):
            name, eq, _ = line.partition(b"=")  # NCCL's own split: the first '=' (nccl.settings)
            if eq and sensitive_variable(name.decode("latin-1")):
                lines[i] = name + b"=" + REDACTED.encode()
        out[path] = b"\n".join(lines)
    return out


def redact_files(files: dict[str, bytes], links: dict[str, str], node) -> dict[str, bytes]:
    """The snapshot's files with the host's identifiers replaced (see the module docstring)."""
    import os  # noqa: PLC0415
    del links  # link targets are sysfs paths: they carry no identifiers
    files = _sensitive(files, {c.path for c in node.facts.conf_files})
    red = Redactor(os.environ.get("NCCLCTL_REDACT_KEY", ""))
    red.learn_node(node)
    red.learn_lldp(files)
    texts: dict[str, str] = {}
    for path, data in files.items():
        if path.endswith(("/config", "/vpd")):  # PCI config space and VPD: the binary files the probe reads
            continue
        texts[path] = data.decode("latin-1")  # byte-for-byte: every byte is one character
        red.learn_text(texts[path])
    for path in texts:  # addresses in the kernel's hexadecimal forms: learned before any is mapped
        if _is_proc_net(path, "route"):
            red.ipv4.update(a for a in _route_addrs(texts[path]) if a)
    out = {}
    for path, data in files.items():
        if path.endswith("/config"):
            out[path] = red.config(data)
        elif path.endswith("/vpd"):
            out[path] = red.vpd(data)
        elif _is_proc_net(path, "route"):
            out[path] = _redact_route(red, texts[path]).encode("latin-1")
        elif path == "/nccl.json":  # library paths: a user's home folder names the user
            out[path] = re.sub(r"/home/[^/\"]+/", "/home/user/", red.text(texts[path])).encode("latin-1")
        elif _is_proc_net(path, "if_inet6"):
            out[path] = _redact_if_inet6(red, texts[path]).encode("latin-1")
        elif path in texts:
            out[path] = red.text(texts[path]).encode("latin-1")
        else:
            out[path] = data
    return out


def _le_hex(word: str) -> int | None:
    """``/proc/net/route``'s address column (the address's bytes in host order, printed as %08X): the address."""
    if len(word) != 8 or any(c not in "0123456789abcdefABCDEF" for c in word):
        return None
    return int.from_bytes(bytes.fromhex(word)[::-1], "big")


def _route_addrs(text: str):
    for line in text.splitlines()[1:]:
        cols = line.split("\t")
        for i in (1, 2):
            if len(cols) > i:
                a = _le_hex(cols[i].strip())
                if a is not None:
                    yield a


def _redact_route(red: Redactor, text: str) -> str:
    """Destination and gateway mapped like every other IPv4 address (prefix-preserving, so a local address still
    falls in its redacted subnet); masks, flags and interface names kept."""
    lines = text.split("\n")
    for n in range(1, len(lines)):
        cols = lines[n].split("\t")
        for i in (1, 2):
            if len(cols) > i:
                a = _le_hex(cols[i].strip())
                if a is not None:
                    mapped = red.ip4(a) if a else 0
                    cols[i] = cols[i].replace(cols[i].strip(), mapped.to_bytes(4, "big")[::-1].hex().upper())
        lines[n] = "\t".join(cols)
    return "\n".join(lines)


def _redact_if_inet6(red: Redactor, text: str) -> str:
    lines = text.split("\n")
    for n, line in enumerate(lines):
        word = line.split(" ", 1)[0]
        if len(word) == 32 and all(c in "0123456789abcdefABCDEF" for c in word):
            lines[n] = red.ip6(bytes.fromhex(word)).hex() + line[32:]
    return "\n".join(lines)


def _is_proc_net(path: str, name: str) -> bool:
    """``/proc/net/NAME`` as the snapshot stores it: /proc/net is a link to self/net, itself a link to the pid."""
    parts = path.strip("/").split("/")
    return len(parts) >= 3 and parts[0] == "proc" and parts[-2] == "net" and parts[-1] == name
