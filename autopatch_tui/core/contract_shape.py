"""A frozen, validated record without pydantic: the base of the machine-contract shapes
(`memory.models`) that `memory status` / `memory list` build and print.

Importing pydantic and building its models costs more than the rest of a CLI command (issue 14), so
these shapes are plain frozen, keyword-only records — with the semantics of a frozen keyword-only
dataclass, but built without generating and compiling code per class (which cost a CLI command as
much as the rest of its imports, issue 23) — with the few pydantic conveniences their users call: `model_dump(mode=...)` (nested shapes become dicts; fields marked `exclude` are left
out), `model_dump_json()`, `model_copy(update=...)`. Construction still validates every field
against its annotation, as strictly as the pydantic models did for these types: `str` takes only a
`str` (no bytes, no number), `int` an `int` that is not a `bool`, `bool` a `bool`, `Literal[...]`
one of its values, `list[X]` / `dict[str, int]` their element types, a nested shape its class.
An unknown or missing field is a `TypeError` (as a dataclass gives), a wrong value a `ValueError`."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import Any

_LITERAL = re.compile(r"^Literal\[(.*)\]$")


_MISSING = object()


class _Field:
    """One field of a shape: its name, annotation (a string), default or default factory, and
    whether `model_dump` leaves it out."""

    __slots__ = ("name", "annotation", "default", "factory", "excluded")

    def __init__(self, name: str = "", annotation: str = "", default: Any = _MISSING,
                 factory: Callable[[], Any] | None = None, excluded: bool = False) -> None:
        self.name, self.annotation, self.default, self.factory, self.excluded = (
            name, annotation, default, factory, excluded)


def exclude(*, default: Any = _MISSING, default_factory: Callable[[], Any] | None = None) -> Any:
    """A field left out of `model_dump` (pydantic's `Field(exclude=True)`)."""
    return _Field(default=default, factory=default_factory, excluded=True)


def _checker(annotation: str, namespace: dict[str, Any]) -> Callable[[Any], bool] | type:
    """A predicate for `annotation`, or the type itself when the value must be exactly of it."""
    text = annotation.strip()
    if text in ("str", "int", "bool"):
        return {"str": str, "int": int, "bool": bool}[text]
    if " | " in text:
        options = [_predicate(part, namespace) for part in text.split(" | ")]
        return lambda v: any(ok(v) for ok in options)
    if text == "None":
        return lambda v: v is None
    lit = _LITERAL.match(text)
    if lit:
        allowed = frozenset(json.loads("[" + lit.group(1).replace("'", '"') + "]"))
        return lambda v: type(v) is str and v in allowed
    if text.startswith("list[") and text.endswith("]"):
        inner = _predicate(text[5:-1], namespace)
        return lambda v: type(v) is list and all(inner(x) for x in v)
    if text.startswith("dict[") and text.endswith("]"):
        key_text, value_text = (p.strip() for p in text[5:-1].split(",", 1))
        key_ok, value_ok = _predicate(key_text, namespace), _predicate(value_text, namespace)
        return lambda v: type(v) is dict and all(key_ok(k) and value_ok(x) for k, x in v.items())
    cls = namespace.get(text)
    if isinstance(cls, type):
        return lambda v: type(v) is cls
    raise TypeError(f"contract_shape: unsupported annotation {annotation!r}")


def _predicate(annotation: str, namespace: dict[str, Any]) -> Callable[[Any], bool]:
    found = _checker(annotation, namespace)
    if type(found) is type:
        return lambda v: type(v) is found
    return found  # type: ignore[return-value]


class Contract:
    """Subclass with `@contract`. Instances are frozen; compare by value."""

    _fields: tuple[_Field, ...] = ()

    def __init__(self, **kwargs: Any) -> None:
        fields = type(self)._fields
        unknown = set(kwargs) - {f.name for f in fields}
        if unknown:
            raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument '{sorted(unknown)[0]}'")
        for f in fields:
            if f.name in kwargs:
                value = kwargs[f.name]
            elif f.factory is not None:
                value = f.factory()
            elif f.default is not _MISSING:
                value = f.default
            else:
                raise TypeError(f"{type(self).__name__}() missing required keyword argument '{f.name}'")
            object.__setattr__(self, f.name, value)
        self.__post_init__()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field '{name}' of a frozen {type(self).__name__}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field '{name}' of a frozen {type(self).__name__}")

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f.name) for f in type(self)._fields)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + ", ".join(f"{f.name}={getattr(self, f.name)!r}"
                                                     for f in type(self)._fields) + ")"

    def __post_init__(self) -> None:
        for name, ok in _prepared(type(self))[0]:
            value = getattr(self, name)
            if type(value) is bytes:  # a BLOB in a TEXT column (SQLite does not enforce column types)
                try:
                    value = value.decode("utf-8")  # as pydantic's lax `str` did
                except UnicodeDecodeError:
                    raise ValueError(f"{type(self).__name__}.{name}: bytes that are not UTF-8") from None
                object.__setattr__(self, name, value)
            if not (type(value) is ok if type(ok) is type else ok(value)):  # a plain type: checked inline
                raise ValueError(f"{type(self).__name__}.{name}: invalid value of type {type(value).__name__}")

    def model_dump(self, mode: str = "python") -> dict[str, Any]:
        del mode  # the shapes hold JSON types only: both modes give the same document
        return {name: _dump(getattr(self, name)) for name in _prepared(type(self))[1]}

    def model_dump_json(self) -> str:
        return json.dumps(self.model_dump(), ensure_ascii=False, separators=(",", ":"))

    def model_copy(self, *, update: dict[str, Any] | None = None) -> Any:
        return type(self)(**{**{f.name: getattr(self, f.name) for f in type(self)._fields}, **(update or {})})


_PLAIN = (str, int, bool, float, type(None))


def _dump(value: Any) -> Any:
    if type(value) in _PLAIN:
        return value
    if isinstance(value, Contract):
        return value.model_dump()
    if type(value) is list:
        return [_dump(v) for v in value]
    if type(value) is dict:
        return {k: _dump(v) for k, v in value.items()}
    return value


_Prepared = tuple[tuple[tuple[str, Callable[[Any], bool] | type], ...], tuple[str, ...]]
_PREPARED: dict[type, _Prepared] = {}


def _prepared(cls: type) -> _Prepared:
    """(field checks, dumped field names) of one shape class, built once."""
    found = _PREPARED.get(cls)
    if found is None:
        namespace = vars(sys.modules[cls.__module__])
        fields = cls._fields  # type: ignore[attr-defined]
        found = (tuple((f.name, _checker(f.annotation, namespace)) for f in fields),
                 tuple(f.name for f in fields if not f.excluded))
        _PREPARED[cls] = found
    return found


def _from_dataclass_field(value: Any) -> Any:
    """A `dataclasses.field(default=..., default_factory=..., metadata={"exclude": True})` on a
    shape (as written for the dataclass-based shapes of before) means the same here: its default,
    its factory, its exclusion. Anything else is returned as it is."""
    dc = sys.modules.get("dataclasses")  # never imported for this: a Field exists only if it is
    if dc is None or not isinstance(value, dc.Field):
        return value
    return _Field(default=_MISSING if value.default is dc.MISSING else value.default,
                  factory=None if value.default_factory is dc.MISSING else value.default_factory,
                  excluded=bool(value.metadata.get("exclude")))


def contract(cls: type) -> type:
    """Make `cls` (a `Contract` subclass) a shape: its fields are its annotations, base classes'
    first, in order (a redefined field keeps its place, as in a dataclass), with their defaults;
    its checks are prepared on first construction (annotations may name shapes defined later in
    the module)."""
    fields: dict[str, _Field] = {f.name: f for f in getattr(cls, "_fields", ())}
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        value = cls.__dict__.get(name, _MISSING)
        value = _from_dataclass_field(value)
        if isinstance(value, _Field):
            field = _Field(name, str(annotation), value.default, value.factory, value.excluded)
            delattr(cls, name)
        else:
            field = _Field(name, str(annotation), value)
        fields[name] = field
    cls._fields = tuple(fields.values())  # type: ignore[attr-defined]
    return cls
