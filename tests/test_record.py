"""``ncclctl.record.record`` behaves as ``dataclasses.dataclass(frozen=True)`` does, with fewer generated methods."""

from __future__ import annotations

import ast
import dataclasses
import pickle
import sys
from pathlib import Path

import pytest

from ncclctl.record import record

from conftest import REPO


def twins():
    """The same class declared both ways."""
    def body():
        return {
            "__annotations__": {"a": "int", "b": "float", "line": "int", "tag": "str", "cache": "dict | None"},
            "b": 0.0,
            "line": dataclasses.field(default=0, compare=False),
            "tag": dataclasses.field(default="", repr=False),
            "cache": dataclasses.field(default=None, compare=False, repr=False, hash=False),
            "__doc__": "A sample.",
            "__module__": __name__,
            "__qualname__": "Sample",
        }
    return record(type("Sample", (), body())), dataclasses.dataclass(frozen=True)(type("Sample", (), body()))


VALUES = [(1, 2.0, 7, "x", None), (1, 2.0, 9, "x", None), (1, 2.5, 7, "x", None), (2, 2.0, 7, "y", None),
          (1, float("nan"), 7, "x", None)]


def _compared(o) -> tuple:
    """The fields ``==`` compares (line and cache have compare=False), as the tuple the record compares."""
    return (o.a, o.b, o.tag)


def test_same_behaviour_as_a_frozen_dataclass():
    """Equality is tuple equality of the compared fields (identity first, so the same NaN object is equal to itself),
    on every Python: the generated ``__eq__`` up to 3.12 says the same; 3.13's compares field by field (no identity
    check) and differs exactly where two records share a NaN object."""
    rec, dc = twins()
    nan = float("nan")
    for kind in (rec, dc):
        assert dataclasses.is_dataclass(kind)
    made = {k: [k(*v) for v in VALUES] + [k(1, nan), k(1, nan)] for k in (rec, dc)}
    shared_nan = {k: k(1, nan) for k in (rec, dc)}
    fieldwise = sys.version_info >= (3, 13)
    differ = 0
    for i, (x, y) in enumerate(zip(made[rec], made[dc])):
        assert repr(x) == repr(y)
        for j in range(len(made[rec])):
            want = _compared(x) == _compared(made[rec][j])
            assert (x == made[rec][j]) == want, (i, j)
            assert (x != made[rec][j]) == (not want), (i, j)
            if x == made[rec][j]:
                assert hash(x) == hash(made[rec][j])
            same_nan = x is not made[rec][j] and x.b is made[rec][j].b and x.b != x.b
            if fieldwise and same_nan:
                differ += 1
                assert y != made[dc][j] and want
            else:
                assert (y == made[dc][j]) == want, (i, j)
                assert (y != made[dc][j]) == (not want), (i, j)
    assert differ == (2 if fieldwise else 0)  # the two records made with the same NaN object, both ways round
    # the same float object in a field: equal (tuple comparison checks identity first)
    assert shared_nan[rec] == dataclasses.replace(shared_nan[rec])
    assert (shared_nan[dc] == dataclasses.replace(shared_nan[dc])) is not fieldwise
    assert hash(rec(1, 2.0, 3, "t")) == hash(dc(1, 2.0, 3, "t"))  # the same tuple of the same fields


def test_frozen_other_classes_and_helpers():
    rec, dc = twins()
    x = rec(1, 2.0, tag="t")
    with pytest.raises(dataclasses.FrozenInstanceError):
        x.a = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del x.a  # type: ignore[misc]
    assert x != dc(1, 2.0, tag="t")  # another class, even with the same fields
    assert x.__eq__(object()) is NotImplemented
    assert x != (1, 2.0)
    assert dataclasses.replace(x, a=5) == rec(5, 2.0, tag="t")
    assert dataclasses.asdict(x) == {"a": 1, "b": 2.0, "line": 0, "tag": "t", "cache": None}
    assert {x: 1}[rec(1, 2.0, line=99, tag="t")] == 1  # line is not compared, so not hashed either
    assert x.__match_args__ == ("a", "b", "line", "tag", "cache")


@record
class _Tree:
    """Records inside records, and one inside itself through a mutable field."""
    name: str
    kids: tuple = ()
    box: list = dataclasses.field(default_factory=list, compare=False, hash=False)


def test_nested_recursive_and_pickled():
    t = _Tree("root", (_Tree("leaf"),))
    assert repr(t) == "_Tree(name='root', kids=(_Tree(name='leaf', kids=(), box=[]),), box=[])"
    t.box.append(t)
    assert repr(t).endswith("box=[...])")
    back = pickle.loads(pickle.dumps(_Tree("a", (_Tree("b"),))))
    assert back == _Tree("a", (_Tree("b"),)) and hash(back) == hash(_Tree("a", (_Tree("b"),)))


def test_a_class_keeps_its_own_methods():
    @record
    class Own:
        """Defines repr and eq itself."""
        a: int

        def __repr__(self) -> str:
            return "own"

        def __eq__(self, other: object) -> bool:
            return True

    assert repr(Own(1)) == "own" and Own(1) == Own(2)
    assert hash(Own(1)) == hash((1,))  # __hash__ still the record's (Python's implicit None is not the class's own)


def test_ncclctl_declares_records_one_way():
    """Every frozen dataclass of ncclctl is a @record (one way to declare them, and no start-up cost to creep
    back in)."""
    found = []
    for path in sorted((Path(REPO) / "ncclctl").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                for dec in node.decorator_list:
                    if isinstance(dec, ast.Call) and ast.unparse(dec.func).endswith("dataclass") and any(
                            k.arg == "frozen" for k in dec.keywords):
                        found.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}")
    assert not found, found
