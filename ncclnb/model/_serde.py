"""Generic, strict conversion between frozen dataclasses and JSON primitives.

Every fact type in :mod:`ncclnb.model` is a frozen dataclass whose fields are
JSON primitives, ``Optional`` of them, tuples (JSON lists), ``dict[str, X]``
or other such dataclasses. ``to_dict`` and ``from_dict`` here walk the type
hints, so a new field needs no serialisation code, and ``from_dict`` names the
exact field that is wrong (``gpus[3].memory_total_mib: expected int, got 'x'``).
"""

from __future__ import annotations

import dataclasses
import re
import reprlib
import types
import typing
from functools import cache
from typing import Any, Union

from ..errors import InputError

# Every integer fact fits a 64-bit field (NVML, sysfs, rlimits; -1 for
# "unlimited"): a larger one is garbage, refused here rather than overflowing
# in a view that turns it into a float.
INT_MIN, INT_MAX = -(1 << 63), (1 << 64) - 1


class SchemaError(InputError):
    """Input that is not a valid ncclnb value. The message is one line and
    names the field (``path``) that is wrong."""

    def __init__(self, path: str, problem: str):
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}" if path else problem)


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def to_dict(value: Any) -> Any:
    """Dataclass -> plain dict/list/str/int/float/bool/None, recursively."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_dict(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [to_dict(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_dict(v) for k, v in value.items()}
    return value


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlist, _REPR.maxdict = 2, 40, 40, 4, 4


def _describe(value: Any) -> str:
    """A short repr of user input, bounded whatever its size or depth."""
    if isinstance(value, int) and not isinstance(value, bool) and not INT_MIN <= value <= INT_MAX:
        return f"an integer of {value.bit_length()} bits"
    try:
        text = _REPR.repr(value)
    except (ValueError, RecursionError):  # an int past str()'s digit limit deep inside
        text = f"a {type(value).__name__}"
    text = " ".join(text.split())
    return text if len(text) <= 40 else text[:37] + "..."


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_.\[\]-]{1,64}")


def _key_path(path: str, key: str) -> str:
    """``env.NCCL_DEBUG``, or ``env['a\\nb']`` for a key that would break the one-line message."""
    return f"{path}.{key}" if _PLAIN_KEY.fullmatch(key) else f"{path}[{_describe(key)}]"


def convert(tp: Any, value: Any, path: str) -> Any:
    """Check ``value`` against type ``tp`` and build it; raise SchemaError."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return convert(arg, value, path)
            except SchemaError as exc:
                errors.append(exc.problem)
        raise SchemaError(path, errors[0] if len(errors) == 1 else f"unexpected value {_describe(value)}")
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise SchemaError(path, f"expected a list, got {_describe(value)}")
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(convert(args[0], v, f"{path}[{i}]") for i, v in enumerate(value))
        if len(args) != len(value):
            raise SchemaError(path, f"expected {len(args)} items, got {len(value)}")
        return tuple(convert(a, v, f"{path}[{i}]") for i, (a, v) in enumerate(zip(args, value)))
    if origin is dict:
        if not isinstance(value, dict):
            raise SchemaError(path, f"expected an object, got {_describe(value)}")
        _, vt = typing.get_args(tp)
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise SchemaError(path, f"expected string keys, got {_describe(k)}")
            out[k] = convert(vt, v, _key_path(path, k))
        return out
    if origin is typing.Literal:
        if value not in typing.get_args(tp):
            allowed = ", ".join(repr(a) for a in typing.get_args(tp))
            raise SchemaError(path, f"expected one of {allowed}, got {_describe(value)}")
        return value
    if dataclasses.is_dataclass(tp):
        return from_dict(tp, value, path)
    if tp is bool:
        if not isinstance(value, bool):
            raise SchemaError(path, f"expected true/false, got {_describe(value)}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise SchemaError(path, f"expected an integer, got {_describe(value)}")
        if not INT_MIN <= value <= INT_MAX:
            raise SchemaError(path, f"integer out of range (64 bits at most), got {_describe(value)}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SchemaError(path, f"expected a number, got {_describe(value)}")
        if isinstance(value, int) and not INT_MIN <= value <= INT_MAX:
            raise SchemaError(path, f"number out of range, got {_describe(value)}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise SchemaError(path, f"expected a string, got {_describe(value)}")
        return value
    raise TypeError(f"unsupported field type {tp!r} at {path}")  # a bug in the model, not bad input


def from_dict(cls: type, data: Any, path: str = "") -> Any:
    """Build dataclass ``cls`` from ``data``; unknown keys are ignored so that
    a later minor addition does not break older readers, missing keys without
    a default are errors."""
    if not isinstance(data, dict):
        raise SchemaError(path, f"expected an object, got {_describe(data)}")
    hints = _hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        sub = f"{path}.{f.name}" if path else f.name
        if f.name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise SchemaError(sub, "required field is missing")
            continue
        kwargs[f.name] = convert(hints[f.name], data[f.name], sub)
    return cls(**kwargs)
