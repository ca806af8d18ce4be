"""Recorded machines shipped with ncclnb, and loading of any ncclnb JSON file.

Every ``data/<name>.json`` is a bundled machine named by its file stem: a
NodeSnapshot built from a real public capture (see ``build.py``) or a
ClusterReport. ``load`` opens a bundled name or a path and picks the type
from the JSON ``schema`` tag.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Union

from ..errors import InputError
from ..model import ClusterReport, Diagnosis, NodeSnapshot, ReproResult, SchemaError
from ..model.limits import JSON_CONTAINERS, JSON_LIMIT, human, looks_binary, read_bounded

DATA = Path(__file__).resolve().parent / "data"


def _bundled() -> dict[str, Path]:
    return {p.stem: p for p in sorted(DATA.glob("*.json"))}


def names() -> list[str]:
    """Bundled machine names, sorted."""
    return sorted(_bundled())


def machines() -> dict[str, str]:
    """Bundled name -> one-line description (what it is and where it came from)."""
    out = {}
    for name, path in _bundled().items():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            text = data.get("description", "") if isinstance(data, dict) else ""
        except (OSError, ValueError):
            text = "(unreadable)"
        out[name] = " ".join(str(text).split())
    return out


Loaded = Union[NodeSnapshot, ClusterReport, Diagnosis, ReproResult]


def load(path_or_name: Union[str, os.PathLike[str]]) -> Loaded:
    """A bundled machine by name, or any ncclnb JSON file by path, as a
    NodeSnapshot, ClusterReport, Diagnosis or ReproResult (chosen by its
    ``schema`` tag).

    Unknown names raise InputError (a ValueError) listing the known ones; unreadable,
    non-JSON, binary, oversized (over ``JSON_LIMIT``), foreign or
    newer-schema files raise InputError / SchemaError with one line naming
    the file and the field. A binary or oversized file is refused from its
    first 64 KiB and its size, before the rest is read."""
    bundled = _bundled()
    key = os.fspath(path_or_name)
    if isinstance(path_or_name, str) and key in bundled:
        path = bundled[key]
    elif os.path.isfile(key):
        path = Path(key)
    elif isinstance(path_or_name, str) and not any(c in key for c in "/\\") and not key.endswith(".json"):
        raise InputError(
            f"unknown machine {key!r}; bundled machines: {', '.join(sorted(bundled)) or 'none'} (or give the path of a JSON file)"
        )
    else:
        raise InputError(f"{key}: no such file (and not a bundled machine name)")
    # a bundled machine is named by its name, a user's file by the path they gave
    return load_bytes(read_bounded(path, limit=JSON_LIMIT, label=key, what="a JSON file"), key)


def load_facts(path_or_name: Union[str, os.PathLike[str], bytes], label: str = "") -> Union[NodeSnapshot, ClusterReport]:
    """Like :func:`load` (or :func:`load_bytes` for bytes), for the places that
    need facts about machines: a diagnosis or a repro result is refused with
    one line saying what it is."""
    value = load_bytes(path_or_name, label or "input") if isinstance(path_or_name, bytes) else load(path_or_name)
    if not isinstance(value, (NodeSnapshot, ClusterReport)):
        what = "a diagnosis" if isinstance(value, Diagnosis) else "a repro result"
        name = label or os.fspath(path_or_name)
        raise InputError(f"{name}: {what}, not a node snapshot or cluster report (open it with ncclnb.load())")
    return value


def load_bytes(raw: bytes, label: str = "input") -> Loaded:
    """Parse JSON bytes into a NodeSnapshot, ClusterReport, Diagnosis or
    ReproResult; ``label`` names the input in error messages, which are one
    line (InputError or SchemaError, both ValueErrors) for binary, oversized, non-JSON, too
    deeply nested or malformed input."""
    if not isinstance(raw, (bytes, bytearray)):
        raise ValueError(f"{label}: expected the bytes of a JSON file, got {type(raw).__name__}")
    if looks_binary(raw[:4096]):
        raise InputError(f"{label}: binary data, not a JSON file")
    if len(raw) > JSON_LIMIT:
        raise InputError(f"{label}: too large ({human(len(raw))}; ncclnb reads JSON files of at most {human(JSON_LIMIT)})")
    # objects and lists cost ~60 bytes each once parsed: bound them before json.loads builds them
    if raw.count(b"[") + raw.count(b"{") > JSON_CONTAINERS:
        raise InputError(f"{label}: too many JSON objects and lists to be an ncclnb file (over {JSON_CONTAINERS})")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{label}: not a JSON file (undecodable byte at offset {exc.start})") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        msg = getattr(exc, "msg", str(exc))
        where = f" at line {exc.lineno} column {exc.colno}" if hasattr(exc, "lineno") else ""
        raise InputError(f"{label}: not valid JSON ({msg}{where})") from None
    except RecursionError:
        raise InputError(f"{label}: JSON nested too deeply to be an ncclnb file") from None
    tag = data.get("schema") if isinstance(data, dict) else None
    kind = tag.split("/")[0] if isinstance(tag, str) else None
    try:
        if kind == "ncclnb.report":
            return ClusterReport.from_dict(data)
        if kind == "ncclnb.repro":
            return ReproResult.from_dict(data)
        if kind == "ncclnb.diagnosis":
            return Diagnosis.from_dict(data)
        if kind is not None and kind != "ncclnb.node":
            shown = repr(tag) if len(tag) <= 60 else repr(tag[:56]) + "..."
            raise SchemaError("schema", f"not an ncclnb snapshot, report, diagnosis or repro result: schema is {shown}")
        return NodeSnapshot.from_dict(data)
    except SchemaError as exc:
        err = SchemaError(exc.path, exc.problem)
        err.args = (f"{label}: {exc}",)
        raise err from None
