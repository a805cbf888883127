"""The JSON schemas and XSDs that ship inside the package (``ncclctl/_schemas``, a copy of the repository's
``schemas/`` kept identical by a test), found by name for ``ncclctl schema`` and for help texts that a pip user
without the repository can follow."""

from __future__ import annotations

from pathlib import Path

from ncclctl.errors import UsageError

_DIR = Path(__file__).resolve().parent / "_schemas"


def _name(file: str) -> str:
    return file.removesuffix(".schema.json").removesuffix(".xsd")


def installed() -> list[tuple[str, str]]:
    """``(name, path)`` of every shipped schema, by name."""
    return sorted((_name(p.name), str(p)) for p in _DIR.iterdir() if p.suffix in (".json", ".xsd"))


def find(name: str) -> str:
    """The path of the schema called ``name`` (``inventory``) or named by its file name
    (``inventory.schema.json``); a usage error listing the names otherwise."""
    for n, path in installed():
        if name in (n, Path(path).name):
            return path
    raise UsageError(f"no such schema: {name!r}", fix="names: " + ", ".join(n for n, _ in installed()))
