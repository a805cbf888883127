"""Safe YAML reading shared by every YAML input (lint configs, expected-state profiles, inventories, layout specs).

One pass with libyaml when PyYAML was built with it (about 10x faster than the pure-Python loader on big files),
composing the node tree once and constructing the data from it, so callers get both the data and the nodes
(with line marks) without parsing twice. Before composing, the nesting depth is checked on the event stream,
which is linear and does not recurse: the composer recurses once per level (RecursionError in pure Python, the C
stack with libyaml). Only the safe constructors run: no tags that build Python objects.

Every failure is an :class:`~ncclctl.errors.InputError` naming the file (and the line and column when YAML knows
them): ``not valid YAML`` for syntax, ``not usable YAML`` for input that parses but cannot be used (too deep, an
integer of over 4,300 digits).
"""

from __future__ import annotations

from typing import Any

from ncclctl.errors import InputError


def safe_loader() -> Any:
    """libyaml's safe loader when PyYAML has it, else the pure-Python one."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load(text: str, path: str, *, max_depth: int = 64, fix: str = "fix the YAML structure") -> tuple[Any, Any]:
    """``(data, root node)`` of one YAML document; ``(None, None)`` for an empty one."""
    import yaml

    loader_cls = safe_loader()
    try:
        depth = 0
        for event in yaml.parse(text, Loader=loader_cls):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > max_depth:
                    mark = event.start_mark
                    raise InputError(f"not usable YAML: nested more than {max_depth} levels deep", path=path,
                                     line=mark.line + 1 if mark else None,
                                     column=mark.column + 1 if mark else None, fix=fix)
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
        loader = loader_cls(text)
        try:
            root = loader.get_single_node()
            data = loader.construct_document(root) if root is not None else None
        finally:
            loader.dispose()
    except (RecursionError, ValueError) as exc:  # an integer of over 4300 digits (int-from-string limit)
        raise InputError(f"not usable YAML: {type(exc).__name__}: {str(exc)[:120]}", path=path, fix=fix) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(f"not valid YAML: {getattr(exc, 'problem', None) or exc}", path=path,
                         line=mark.line + 1 if mark else None, column=mark.column + 1 if mark else None,
                         fix="fix the YAML syntax") from None
    return data, root
