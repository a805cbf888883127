"""Safe YAML reading shared by every YAML input (lint configs, expected-state profiles, inventories, layout specs).

One pass with libyaml when PyYAML was built with it (about 10x faster than the pure-Python loader on big files),
composing the node tree once and constructing the data from it, so callers get both the data and the nodes
(with line marks) without parsing twice. Before composing, the nesting depth is checked on the event stream,
which is linear and does not recurse: the composer recurses once per level (RecursionError in pure Python, the C
stack with libyaml). Only the safe constructors run: no tags that build Python objects.

Aliases are bounded too: an alias bomb (``a: &a [x, x]``, ``b: &b [*a, *a]``, ... ten levels in 300 bytes) composes
to a few nodes that share children, and only explodes when the data is walked. :func:`load` counts the nodes the
document expands to (each alias counted as a full copy of what it names, shared subtrees counted once per use,
memoised so the count is linear in the composed nodes) and refuses a document over ``max_nodes`` (and any
recursive alias, ``&a [*a]``), before anything walks it.

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


#: Nodes a document may expand to, aliases expanded. A 32,768-host inventory is about 200,000.
MAX_NODES = 2_000_000


def expanded_size(root: Any, limit: int) -> int | None:
    """How many nodes ``root`` expands to with every alias copied out, or None when over ``limit`` or recursive.
    Iterative (no recursion limit) and memoised per node, so linear in the composed nodes."""
    import yaml

    sizes: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_stack.discard(key)
            if isinstance(node, yaml.MappingNode):
                children = [c for pair in node.value for c in pair]
            else:
                children = node.value
            total = 1 + sum(sizes[id(c)] for c in children)
            if total > limit:
                return None
            sizes[key] = total
            continue
        if key in sizes:
            continue
        if key in on_stack:
            return None  # a recursive alias: infinite when expanded
        if isinstance(node, yaml.ScalarNode):
            sizes[key] = 1
            continue
        on_stack.add(key)
        stack.append((node, True))
        children = [c for pair in node.value for c in pair] if isinstance(node, yaml.MappingNode) else node.value
        for child in children:
            cid = id(child)
            if cid in on_stack:
                return None
            if cid not in sizes:
                stack.append((child, False))
    return sizes[id(root)]


def load(text: str, path: str, *, max_depth: int = 64, fix: str = "fix the YAML structure",
         max_nodes: int = MAX_NODES) -> tuple[Any, Any]:
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
            if root is not None and expanded_size(root, max_nodes) is None:
                raise InputError(f"not usable YAML: aliases expand it past {max_nodes:,} nodes, or refer to "
                                 f"themselves (an alias bomb)", path=path, fix="write the values out; drop the "
                                 "anchors (&name) and aliases (*name)")
            data = loader.construct_document(root) if root is not None else None
        finally:
            loader.dispose()
    except (RecursionError, ValueError) as exc:  # an integer of over 4300 digits (int-from-string limit)
        raise InputError(f"not usable YAML: {type(exc).__name__}: {str(exc)[:120]}", path=path, fix=fix) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = str(getattr(exc, "problem", None) or exc)
        if "nesting depth" in problem:  # PyYAML >= 6.0.4 stops deep nesting itself, before our own count sees it
            raise InputError(f"not usable YAML: nested more than {max_depth} levels deep", path=path,
                             line=mark.line + 1 if mark else None, column=mark.column + 1 if mark else None,
                             fix=fix) from None
        raise InputError(f"not valid YAML: {getattr(exc, 'problem', None) or exc}", path=path,
                         line=mark.line + 1 if mark else None, column=mark.column + 1 if mark else None,
                         fix="fix the YAML syntax") from None
    return data, root
