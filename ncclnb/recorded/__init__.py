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

from ..model import ClusterReport, NodeSnapshot, SchemaError

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


def load(path_or_name: Union[str, "os.PathLike[str]"]) -> Union[NodeSnapshot, ClusterReport]:
    """A bundled machine by name, or any ncclnb JSON file by path, as a
    NodeSnapshot or ClusterReport (chosen by its ``schema`` tag).

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


def load_bytes(raw: bytes, label: str = "input") -> Union[NodeSnapshot, ClusterReport]:
    """Parse JSON bytes into a NodeSnapshot or ClusterReport; ``label`` names
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
    try:
        if isinstance(tag, str) and tag.split("/")[0] == "ncclnb.report":
            return ClusterReport.from_dict(data)
        if isinstance(tag, str) and tag.split("/")[0] != "ncclnb.node":
            raise SchemaError("schema", f"not an ncclnb snapshot or cluster report: schema is {tag!r}")
        return NodeSnapshot.from_dict(data)
    except SchemaError as exc:
        err = SchemaError(exc.path, exc.problem)
        err.args = (f"{label}: {exc}",)
        raise err from None
