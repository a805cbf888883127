"""Replay a saved fuzz input: ``python -m tests.fuzz.replay TARGET FILE`` prints the outcome (with a traceback)."""

from __future__ import annotations

import sys
import traceback

from .targets import TARGETS


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in TARGETS:
        print("usage: python -m tests.fuzz.replay TARGET FILE; targets: " + ", ".join(sorted(TARGETS)), file=sys.stderr)
        return 2
    target = TARGETS[argv[0]]
    if target.func is None:
        print(f"{argv[0]}: {target.skip}", file=sys.stderr)
        return 2
    with open(argv[1], "rb") as fh:
        data = fh.read()
    try:
        value = target.func(data)
    except Exception as exc:  # noqa: BLE001 - show whatever it is
        traceback.print_exc()
        print(f"-> {type(exc).__name__}: {exc}")
        return 1
    print(f"-> value: {type(value).__name__}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
