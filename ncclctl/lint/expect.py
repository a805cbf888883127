"""Expected-state profiles: what a known-good node looks like, and the loader that checks a profile file.

``ncclctl lint --write-expect FILE`` derives a profile from a node (:func:`derive`, :func:`dump`);
``ncclctl lint --expect FILE`` loads one (:func:`load_profile`) and the EXP rules (``rules_expect.py``) compare
the node with it. Every section is optional, so a hand-written profile can pin only what matters::

    version: 1
    driver: {nvidia: 550.54.15, cuda: 12040}
    gpus: {count: 8, models: {NVIDIA H100 80GB HBM3: 8}, nvlinks: 18}
    nics:
      count: 12
      firmware: {mlx5_0: 28.39.2048, ...}
    rails:
      - {rail: 0, hca: "mlx5_0:1", link_layer: InfiniBand, rate_gbps: 400, width: 4X, mtu: 4096, netdev_mtu: 4092}
    nccl: {NCCL_IB_HCA: "=mlx5_0,mlx5_3,..."}

The schema (``schemas/expect.schema.json``) is :func:`json_schema`; the loader enforces the same rules with
errors that name the file and line.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from ncclctl.errors import InputError

PROFILE_VERSION = 1
SCHEMA_FILE = "schemas/expect.schema.json"
_FIX = "see docs/lint.md (expected-state profiles) and 'ncclctl schema expect'"

_NAME_RE = r"^[A-Za-z0-9_.-]+$"
_HCA_RE = r"^[A-Za-z0-9_.-]+:[0-9]+$"
_WIDTH_RE = r"^[0-9]+X$"
_NCCL_RE = r"^NCCL_"
_MTUS = (256, 512, 1024, 2048, 4096)

# Section -> key -> (kind, extra). Kinds: int, num, str, ver (a string; numbers refused), width, mtu, layer,
# models (name -> count), fw (device -> version), nccl (NAME -> value).
_SECTIONS: dict[str, dict[str, tuple[str, Any]]] = {
    "driver": {"nvidia": ("ver", None), "cuda": ("int", 0)},
    "gpus": {"count": ("int", 0), "models": ("models", None), "nvlinks": ("int", 0)},
    "nics": {"count": ("int", 0), "firmware": ("fw", None)},
}
_RAIL_KEYS: dict[str, tuple[str, Any]] = {
    "rail": ("int", 0), "hca": ("hca", None), "link_layer": ("layer", None), "rate_gbps": ("num", 0),
    "width": ("width", None), "mtu": ("mtu", None), "netdev_mtu": ("int", 68),
}
_TOP = ("version", "derived_from", "driver", "gpus", "nics", "rails", "nccl")


# --------------------------------------------------------------------------------------------------
# Deriving a profile from a node


def effective_nccl_settings(node) -> dict[str, str]:
    """Every NCCL_* variable NCCL would see on this host, with its effective value: environment, then
    NCCL_CONF_FILE or ~/.nccl.conf, then /etc/nccl.conf, with NCCL's line syntax (:mod:`ncclctl.nccl.settings`)."""
    from ncclctl.nccl.settings import resolve

    resolved = resolve(node)
    return {name: resolved.value(name) or "" for name in resolved.names() if name.startswith("NCCL_")}


def rail_facts(node, *, with_state: bool = False, plan=None) -> list[dict[str, Any]]:
    """The node's rails (:func:`ncclctl.plan.rails.plan_rails`, or ``plan`` when the caller has it) with rate, width
    and MTUs, in rail order (``with_state``: also whether the port is ACTIVE, which a profile does not record)."""
    from ncclctl.plan.rails import plan_rails

    if plan is None:
        try:
            plan = plan_rails(node)
        except InputError:
            return []
    netdevs = {n.name: n for n in node.netdevs}
    out = []
    for r in plan.rails:
        nic = node.nic(r.nic)
        port = next((p for p in nic.ports if p.num == r.port), None) if nic else None
        entry: dict[str, Any] = {"rail": r.rail, "hca": r.hca, "link_layer": r.link_layer}
        if with_state:
            entry["active"] = r.active
        if port is not None:
            if port.rate_gbps is not None:
                entry["rate_gbps"] = _num(port.rate_gbps)
            width = port.active_width or _width_from_rate(port.rate)
            if width:
                entry["width"] = width
            if port.active_mtu:
                entry["mtu"] = port.active_mtu
            nd = netdevs.get(port.netdev or "")
            if nd is not None and nd.mtu:
                entry["netdev_mtu"] = nd.mtu
        out.append(entry)
    return out


def _num(x: float) -> int | float:
    return int(x) if float(x).is_integer() else float(x)


def _width_from_rate(rate: str | None) -> str | None:
    m = re.search(r"\((\d+X)\b", rate or "")
    return m.group(1) if m else None


def derive(node) -> dict[str, Any]:
    """The expected-state profile of ``node`` (plain data, keys in schema order)."""
    prof: dict[str, Any] = {"version": PROFILE_VERSION, "derived_from": node.hostname}
    driver: dict[str, Any] = {}
    if node.facts.driver_version:
        driver["nvidia"] = node.facts.driver_version
    if node.facts.cuda_driver_version is not None:
        driver["cuda"] = node.facts.cuda_driver_version
    if driver:
        prof["driver"] = driver
    gpus: dict[str, Any] = {"count": len(node.gpus)}
    if node.gpus:
        gpus["models"] = dict(sorted(Counter(g.name for g in node.gpus).items()))
        if any(g.nvlinks for g in node.gpus):
            gpus["nvlinks"] = max(len(g.active_nvlinks) for g in node.gpus)
    prof["gpus"] = gpus
    nics: dict[str, Any] = {"count": len(node.nics)}
    fw = {n.name: n.fw_ver for n in node.nics if n.fw_ver}
    if fw:
        nics["firmware"] = dict(sorted(fw.items()))
    prof["nics"] = nics
    rails = rail_facts(node)
    if rails:
        prof["rails"] = rails
    prof["nccl"] = effective_nccl_settings(node)
    return prof


def dump(profile: dict[str, Any], *, version: str | None = None) -> bytes:
    """The profile as YAML: sorted keys, block style, a comment header; same profile -> same bytes."""
    import yaml

    from ncclctl import __version__

    header = (
        "# ncclctl expected-state profile (schema: schemas/expect.schema.json)\n"
        f"# derived from {profile.get('derived_from', '?')} by ncclctl {version or __version__} "
        "(ncclctl lint --write-expect); check a node against it with: ncclctl lint --expect FILE\n"
        "# Every section is optional: delete what should not be checked.\n"
    )
    body = yaml.safe_dump(profile, sort_keys=True, default_flow_style=False, allow_unicode=True, width=4096)
    return (header + body).encode("utf-8")


def write_profile(node, path: str) -> tuple[bool, str]:
    """``lint --write-expect PATH``: derive the profile and write it atomically; ``(changed, message)``."""
    from ncclctl.fileio import write_atomic

    changed = write_atomic(path, dump(derive(node)))
    msg = (f"wrote the expected-state profile of {node.hostname} to {path}" if changed
           else f"{path} is already the expected-state profile of {node.hostname} (unchanged)")
    return changed, msg


# --------------------------------------------------------------------------------------------------
# Loading and checking a profile


def load_profile(path: str) -> dict[str, Any]:
    from ncclctl.inputs import read_text

    return parse_profile(read_text(path, "expect"), path=path)


def parse_profile(text: str, *, path: str = "<profile>") -> dict[str, Any]:
    from ncclctl.lint.config import load_yaml

    data, lines = load_yaml(text, path)
    return check_profile(data, path=path, lines=lines)


def check_profile(data: Any, *, path: str = "<profile>", lines: dict[tuple, int] | None = None) -> dict[str, Any]:
    """Validate profile data (as loaded from YAML) and return it normalised (numbers where numbers belong,
    NCCL values as strings). Raises :class:`InputError` naming the file, the line and the key."""
    from ncclctl.lint.config import line_of

    lines = lines or {}

    def err(msg: str, where: tuple, fix: str = _FIX) -> InputError:
        return InputError(msg, path=path, line=line_of(lines, where), fix=fix)

    if not isinstance(data, dict):
        raise err("an expected-state profile is a mapping (version, driver, gpus, nics, rails, nccl)", ())
    for key in data:
        if key not in _TOP:
            raise err(f"unknown key {key!r}", (key,), fix="allowed keys: " + ", ".join(_TOP))
    if data.get("version", PROFILE_VERSION) != PROFILE_VERSION:
        raise err(f"unsupported profile version {data.get('version')!r}", ("version",), fix="use version: 1")
    out: dict[str, Any] = {"version": PROFILE_VERSION}
    if "derived_from" in data:
        if not isinstance(data["derived_from"], str):
            raise err("derived_from must be a host name", ("derived_from",))
        out["derived_from"] = data["derived_from"]
    for section, keys in _SECTIONS.items():
        if section not in data or data[section] is None:
            continue
        body = data[section]
        if not isinstance(body, dict):
            raise err(f"{section} must be a mapping with " + ", ".join(keys), (section,))
        sec: dict[str, Any] = {}
        for key, value in body.items():
            if key not in keys:
                raise err(f"{section}: unknown key {key!r}", (section, key), fix="allowed keys: " + ", ".join(keys))
            kind, arg = keys[key]
            sec[key] = _value(kind, arg, value, f"{section}.{key}", (section, key), err)
        out[section] = sec
    if data.get("rails") is not None:
        rails = data["rails"]
        if not isinstance(rails, list):
            raise err("rails must be a list of {rail, hca, link_layer, rate_gbps, width, mtu, netdev_mtu}", ("rails",))
        seen = set()
        norm = []
        for i, entry in enumerate(rails):
            where = ("rails", i)
            if not isinstance(entry, dict):
                raise err("a rail is a mapping with at least 'hca'", where)
            r: dict[str, Any] = {}
            for key, value in entry.items():
                if key not in _RAIL_KEYS:
                    raise err(f"rails[{i}]: unknown key {key!r}", (*where, key),
                              fix="allowed keys: " + ", ".join(_RAIL_KEYS))
                kind, arg = _RAIL_KEYS[key]
                r[key] = _value(kind, arg, value, f"rails[{i}].{key}", (*where, key), err)
            if "hca" not in r:
                raise err(f"rails[{i}]: 'hca' (device:port, e.g. mlx5_0:1) is required", where)
            if r["hca"] in seen:
                raise err(f"rails[{i}]: {r['hca']} is listed twice", (*where, "hca"), fix="one entry per HCA port")
            seen.add(r["hca"])
            norm.append(r)
        out["rails"] = norm
    if data.get("nccl") is not None:
        out["nccl"] = _value("nccl", None, data["nccl"], "nccl", ("nccl",), err)
    return out


def _value(kind: str, arg: Any, value: Any, name: str, where: tuple, err) -> Any:
    def is_int(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    if kind == "int":
        if not is_int(value) or value < arg:
            raise err(f"{name} must be an integer >= {arg}, got {value!r}", where)
        return value
    if kind == "num":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < arg:
            raise err(f"{name} must be a number >= {arg}, got {value!r}", where)
        return value
    if kind in ("ver", "hca", "width", "layer"):
        if not isinstance(value, str) or not value:
            fix = "quote it, e.g. \"550.54.15\"" if kind == "ver" and isinstance(value, (int, float)) else _FIX
            raise err(f"{name} must be a string, got {value!r}", where, fix)
        if kind == "hca" and not re.match(_HCA_RE, value):
            raise err(f"{name}: {value!r} is not device:port (e.g. mlx5_0:1)", where)
        if kind == "width" and not re.match(_WIDTH_RE, value):
            raise err(f"{name}: {value!r} is not a link width such as 4X", where)
        if kind == "layer" and value not in ("InfiniBand", "Ethernet"):
            raise err(f"{name}: {value!r} is not InfiniBand or Ethernet", where)
        return value
    if kind == "mtu":
        if value not in _MTUS or not is_int(value):
            raise err(f"{name}: {value!r} is not an RDMA MTU ({', '.join(map(str, _MTUS))})", where)
        return value
    if kind in ("models", "fw", "nccl"):
        if not isinstance(value, dict):
            raise err(f"{name} must be a mapping", where)
        out = {}
        for k, v in value.items():
            kw = (*where, k)
            if not isinstance(k, str) or not k:
                raise err(f"{name}: key {k!r} must be a name", kw)
            if kind == "models":
                if not is_int(v) or v < 1:
                    raise err(f"{name}: {k}: expected a GPU count >= 1, got {v!r}", kw)
            elif kind == "fw":
                if not re.match(_NAME_RE, k):
                    raise err(f"{name}: {k!r} is not an RDMA device name", kw)
                if not isinstance(v, str) or not v:
                    raise err(f"{name}: {k}: firmware version must be a string, got {v!r}", kw,
                              "quote it, e.g. \"28.39.2048\"")
            else:
                if not re.match(_NCCL_RE, k):
                    raise err(f"{name}: {k!r} is not an NCCL_* variable", kw)
                if is_int(v):
                    v = str(v)
                if not isinstance(v, str):
                    raise err(f"{name}: {k}: the value must be a string (or an integer), got {v!r}", kw,
                              "quote the value as NCCL reads it")
            out[k] = v
        return out
    raise AssertionError(kind)  # pragma: no cover


def json_schema() -> dict[str, Any]:
    """The JSON Schema (2020-12) of an expected-state profile (``schemas/expect.schema.json``)."""

    def prop(kind: str, arg: Any) -> dict[str, Any]:
        if kind == "int":
            return {"type": "integer", "minimum": arg}
        if kind == "num":
            return {"type": "number", "minimum": arg}
        if kind == "ver":
            return {"type": "string", "minLength": 1}
        if kind == "hca":
            return {"type": "string", "pattern": _HCA_RE}
        if kind == "width":
            return {"type": "string", "pattern": _WIDTH_RE}
        if kind == "layer":
            return {"enum": ["InfiniBand", "Ethernet"]}
        if kind == "mtu":
            return {"enum": list(_MTUS)}
        if kind == "models":
            return {"type": "object", "propertyNames": {"minLength": 1},
                    "additionalProperties": {"type": "integer", "minimum": 1}}
        if kind == "fw":
            return {"type": "object", "propertyNames": {"pattern": _NAME_RE},
                    "additionalProperties": {"type": "string", "minLength": 1}}
        if kind == "nccl":
            return {"type": "object", "propertyNames": {"pattern": _NCCL_RE},
                    "additionalProperties": {"type": ["string", "integer"]}}
        raise AssertionError(kind)  # pragma: no cover

    props: dict[str, Any] = {
        "version": {"const": PROFILE_VERSION},
        "derived_from": {"type": "string", "description": "the host the profile was derived from (informational)"},
    }
    docs = {
        "driver": "NVIDIA driver version (nvidia) and CUDA driver API version (cuda, e.g. 12040)",
        "gpus": "GPU count, models (name -> count) and active NVLinks per GPU",
        "nics": "RDMA device count and firmware per device",
    }
    for section, keys in _SECTIONS.items():
        props[section] = {"type": ["object", "null"], "additionalProperties": False, "description": docs[section],
                          "properties": {k: prop(kind, arg) for k, (kind, arg) in keys.items()}}
    props["rails"] = {"type": ["array", "null"], "description": "per rail (ncclctl rails): HCA port, link layer, "
                      "rate, width, RDMA (active) MTU, netdev MTU",
                      "items": {"type": "object", "additionalProperties": False, "required": ["hca"],
                                "properties": {k: prop(kind, arg) for k, (kind, arg) in _RAIL_KEYS.items()}}}
    props["nccl"] = dict(prop("nccl", None), type=["object", "null"],
                         description="effective NCCL_* settings (environment > user conf > /etc/nccl.conf)")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://ncclctl.invalid/schemas/expect.schema.json",
        "title": "ncclctl expected-state profile",
        "type": "object",
        "additionalProperties": False,
        "properties": props,
    }
