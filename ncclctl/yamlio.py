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
integer of over 100 characters, a key given twice in one mapping).
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


#: Characters an integer may have (sign, ``0x``/``0o``/``0b`` prefix and ``_`` included). No number ncclctl reads
#: has more than 20 digits; a hex or binary integer of thousands of digits builds an int Python cannot print
#: (the 4,300-digit int-to-str limit: exit 70 where the value was shown).
MAX_INT_CHARS = 100

_INT_TAG = "tag:yaml.org,2002:int"


def check_nodes(root: Any, path: str) -> None:
    """Refuse, naming the line, what YAML accepts but an input must not hold: a mapping key given twice (YAML keeps
    the last value and silently drops the first: a duplicate host in an inventory) and an integer over
    :data:`MAX_INT_CHARS` characters. Each composed node is looked at once (aliases share nodes): linear."""
    import yaml

    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            if node.tag == _INT_TAG and len(node.value) > MAX_INT_CHARS:
                mark = node.start_mark
                raise InputError(f"not usable YAML: an integer of {len(node.value):,} characters (at most "
                                 f"{MAX_INT_CHARS})", path=path, line=mark.line + 1, column=mark.column + 1,
                                 fix="write the number with at most 20 digits, or quote it if it is a name")
            continue
        if isinstance(node, yaml.MappingNode):
            keys: dict[tuple[str, str], Any] = {}
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    first = keys.setdefault((key.tag, key.value), key)
                    if first is not key:
                        mark = key.start_mark
                        shown = key.value if len(key.value) <= 60 else key.value[:57] + "..."
                        raise InputError(
                            f"not usable YAML: duplicate key {shown!r} (first on line {first.start_mark.line + 1}): "
                            "YAML would keep only the last and silently drop the first", path=path, line=mark.line + 1, column=mark.column + 1,
                            fix="remove or rename one of the two entries")
                stack.append(key)
                stack.append(value)
        else:
            stack.extend(node.value)


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
            if root is not None:
                check_nodes(root, path)
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
