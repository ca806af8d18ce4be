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

from ..model import ClusterReport, Diagnosis, NodeSnapshot, ReproResult, SchemaError

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


def load(path_or_name: Union[str, "os.PathLike[str]"]) -> Loaded:
    """A bundled machine by name, or any ncclnb JSON file by path, as a
    NodeSnapshot, ClusterReport, Diagnosis or ReproResult (chosen by its
    ``schema`` tag).

    Unknown names raise ValueError listing the known ones; unreadable,
    non-JSON, foreign or newer-schema files raise ValueError / SchemaError
    with one line naming the file and the field."""
    bundled = _bundled()
    key = os.fspath(path_or_name)
    if isinstance(path_or_name, str) and key in bundled:
        path = bundled[key]
    elif os.path.isfile(key):
        path = Path(key)
    elif isinstance(path_or_name, str) and not any(c in key for c in "/\\") and not key.endswith(".json"):
        raise ValueError(f"unknown machine {key!r}; bundled machines: {', '.join(sorted(bundled)) or 'none'}"
                         " (or give the path of a JSON file)")
    else:
        raise ValueError(f"{key}: no such file (and not a bundled machine name)")
    # a bundled machine is named by its name, a user's file by the path they gave
    return load_bytes(path.read_bytes(), key)


def load_facts(path_or_name: Union[str, "os.PathLike[str]", bytes], label: str = "") -> Union[NodeSnapshot, ClusterReport]:
    """Like :func:`load` (or :func:`load_bytes` for bytes), for the places that
    need facts about machines: a diagnosis or a repro result is refused with
    one line saying what it is."""
    value = load_bytes(path_or_name, label or "input") if isinstance(path_or_name, bytes) else load(path_or_name)
    if not isinstance(value, (NodeSnapshot, ClusterReport)):
        what = "a diagnosis" if isinstance(value, Diagnosis) else "a repro result"
        name = label or os.fspath(path_or_name)
        raise ValueError(f"{name}: {what}, not a node snapshot or cluster report (open it with ncclnb.load())")
    return value


def load_bytes(raw: bytes, label: str = "input") -> Loaded:
    """Parse JSON bytes into a NodeSnapshot, ClusterReport, Diagnosis or
    ReproResult; ``label`` names
    the input in error messages."""
    if b"\x00" in raw[:4096] and not raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ValueError(f"{label}: binary data, not a JSON file")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{label}: not a JSON file (undecodable byte at offset {exc.start})") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        msg = getattr(exc, "msg", str(exc))
        where = f" at line {exc.lineno} column {exc.colno}" if hasattr(exc, "lineno") else ""
        raise ValueError(f"{label}: not valid JSON ({msg}{where})") from None
    except RecursionError:
        raise ValueError(f"{label}: JSON nested too deeply to be an ncclnb file") from None
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
            raise SchemaError("schema", f"not an ncclnb snapshot, report, diagnosis or repro result: schema is {tag!r}")
        return NodeSnapshot.from_dict(data)
    except SchemaError as exc:
        err = SchemaError(exc.path, exc.problem)
        err.args = (f"{label}: {exc}",)
        raise err from None
