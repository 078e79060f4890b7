"""What a stage's plan is: a keyword-only dataclass of how much of the stage a profile runs.

Each stage defines its plan class (``readers/plan.py``, ``augment/plan.py``, ...) with the
default profile's values as defaults; profiles hold one instance per stage. No code looks at a
profile's name: a profile declared in ``pyproject.toml`` is a base profile plus overrides.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar


class StagePlan:
    """Base of every stage's plan dataclass; ``stage`` names the stage it belongs to.

    Each subclass registers itself in :data:`PLANS` under its stage's name, so profiles find a
    stage's plan class without importing the stage registry (which imports the stages' cases).
    """

    stage: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        PLANS[cls.stage] = cls


PLANS: dict[str, type[StagePlan]] = {}  # stage name -> its plan class


P = TypeVar("P", bound=StagePlan)


def _coerce(value: Any, annotation: Any, where: str) -> Any:
    """TOML gives lists and ints; plans hold tuples (hashable, immutable) and floats."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return _coerce_union(value, annotation, args, where)
    if origin is typing.Literal:
        if value in args:
            return value
        raise ValueError(f"{where}: {value!r} is not one of {list(args)}")
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise ValueError(f"{where}: expected a list, got {value!r}")
        item = args[0] if args else Any
        return tuple(_coerce(v, item, where) for v in value)
    return _coerce_plain(value, annotation, where)


def _coerce_union(value: Any, annotation: Any, args: tuple[Any, ...], where: str) -> Any:
    """The first member of the union that reads ``value``."""
    if value is None and type(None) in args:
        return None
    for arg in args:
        if arg is type(None):
            continue
        try:
            return _coerce(value, arg, where)
        except (TypeError, ValueError):
            continue
    raise ValueError(f"{where}: {value!r} fits none of {annotation}")


def _coerce_plain(value: Any, annotation: Any, where: str) -> Any:
    """A scalar, ``Any``, a nested plan (a dataclass from a table) or ``None``."""
    if annotation is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if annotation in (int, str, bool):
        if type(value) is not annotation:
            raise ValueError(f"{where}: expected {annotation.__name__}, got {value!r}")
        return value
    if annotation is Any:
        return value
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        if not isinstance(value, Mapping):
            raise ValueError(f"{where}: expected a table, got {value!r}")
        return override(annotation(), value, where)
    if value is None and annotation is type(None):
        return None
    raise ValueError(f"{where}: cannot read {value!r} as {annotation}")


def override(base: Any, values: Mapping[str, Any], where: str) -> Any:
    """``base`` (a dataclass) with ``values`` replaced, each checked against its field's type."""
    hints = typing.get_type_hints(type(base))
    fields = {f.name for f in dataclasses.fields(base)}
    changes: dict[str, Any] = {}
    for name, value in values.items():
        if name not in fields:
            raise ValueError(f"{where}: unknown setting {name!r}; known: {sorted(fields)}")
        changes[name] = _coerce(value, hints[name], f"{where}.{name}")
    return dataclasses.replace(base, **changes)
