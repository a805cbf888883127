"""``@record``: a frozen dataclass whose ``__repr__``, ``__eq__`` and ``__hash__`` are shared, not generated.

``@dataclass(frozen=True)`` compiles six methods for every class when its module is imported (``__init__``,
``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__``, ``__delattr__``: one ``exec`` each on Python 3.11-3.13,
0.1 ms apiece). ncclctl declares about a hundred such records and a command imports dozens of them before it does
anything: ``topo predict`` spent 30 ms of its 200 ms creating classes. A record is a dataclass
(``dataclasses.fields``/``replace``/``asdict`` and type checkers see one) with three generated methods; the other
three are the functions below, written once, and behave as the generated ones do:

* ``==``: only an instance of the very same class is equal, field by field in order as a tuple (so identical
  objects in a field compare equal, as ``(x,) == (x,)`` does), fields with ``compare=False`` left out; anything
  else gives ``NotImplemented``. That is the generated ``__eq__`` up to Python 3.12; 3.13's compares field by field
  with ``==`` alone, so two records holding the same NaN object differ there. A record keeps the tuple rule on
  every Python: the same records are equal (and a fleet's output the same) whichever Python runs ncclctl.
* ``hash``: the hash of that tuple (fields with ``hash=False`` left out, ``hash=True`` ones kept even without
  ``compare``), so equal records hash alike and records work as keys and set members.
* ``repr``: ``ClassName(field=value, ...)`` with ``repr=False`` fields left out, ``...`` for a record inside itself.

A class that defines one of the three itself keeps its own (as with ``dataclass``).
"""

from __future__ import annotations

import dataclasses
from operator import attrgetter
from reprlib import recursive_repr
from typing import TYPE_CHECKING, Any, Callable, TypeVar

if TYPE_CHECKING:  # Python 3.11 has it in typing; only type checkers need it
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_: Any) -> Callable[[_T], _T]:
        return lambda f: f

_T = TypeVar("_T")


def _key(names: list[str]) -> Callable[[Any], tuple]:
    """The values of ``names`` of an object, as a tuple (always a tuple, as the generated methods build one)."""
    if not names:
        return lambda obj: ()
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return attrgetter(*names)


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        key = self.__class__.__record_keys__[0]
        return key(self) == key(other)
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(self.__class__.__record_keys__[1](self))


@recursive_repr()
def _repr(self: Any) -> str:
    cls = self.__class__
    return f"{cls.__qualname__}(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in cls.__record_keys__[2]) + ")"


_eq.__name__, _eq.__qualname__ = "__eq__", "record.__eq__"
_hash.__name__, _hash.__qualname__ = "__hash__", "record.__hash__"
_repr.__name__, _repr.__qualname__ = "__repr__", "record.__repr__"


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def record(cls: type[_T]) -> type[_T]:
    """``@dataclass(frozen=True)`` with the shared ``__repr__``/``__eq__``/``__hash__`` of this module."""
    own = {name for name in ("__repr__", "__eq__", "__hash__") if name in cls.__dict__}
    if cls.__dict__.get("__hash__", 0) is None and "__eq__" in own:  # Python's implicit None, not the class's own
        own.discard("__hash__")
    cls = dataclasses.dataclass(frozen=True, repr=False, eq=False)(cls)
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    compared = [f.name for f in fields if f.compare]
    hashed = [f.name for f in fields if (f.compare if f.hash is None else f.hash)]
    shown = tuple(f.name for f in fields if f.repr)
    cls.__record_keys__ = (_key(compared), _key(hashed), shown)  # type: ignore[attr-defined]
    for name, fn in (("__repr__", _repr), ("__eq__", _eq), ("__hash__", _hash)):
        if name not in own:
            setattr(cls, name, fn)
    return cls
