"""``nvidia-smi topo -p2p r|w|n|a|p``: the GPU x GPU peer-to-peer status matrix.

The matrix does not say which capability it shows; the command line does
when the paste includes it (``$ nvidia-smi topo -p2p r``). Otherwise the
caller may say, and failing that it is recorded as ``read`` (the capability
NCCL's P2P transport needs first) with a note saying it was assumed.
"""

from __future__ import annotations

import re
from typing import Optional

from ...model.node import P2P_STATUSES
from ._common import ParseError, Partial, content_lines, snippet
from .topo_m import GPU_RE, gpu_index, is_header

KIND = "nvidia-smi topo -p2p"

STATUSES = frozenset(P2P_STATUSES)
CAPABILITIES = {"r": "read", "w": "write", "n": "nvlink", "a": "atomics", "p": "prop"}
_COMMAND_RE = re.compile(r"(?:nvidia-smi\s+)?topo\s+(?:-p2p|--p2pstatus)[\s=]+([A-Za-z]+)")


def capability_name(value: str) -> Optional[str]:
    """ "r" or "read" -> "read"; anything else -> None."""
    value = value.strip().lower()
    if value in CAPABILITIES:
        return CAPABILITIES[value]
    return value if value in CAPABILITIES.values() else None


def parse_p2p(text: str, capability: Optional[str] = None) -> Partial:
    """Parse ``nvidia-smi topo -p2p`` output into partial facts: the GPU
    indices and one status matrix under ``links["p2p"][capability]``."""
    if capability is not None and capability_name(capability) is None:
        raise ParseError(f"topo -p2p: unknown capability {snippet(capability)} (use one of r, w, n, a, p)")
    lines = content_lines(text)
    start = next((i for i, ln in enumerate(lines) if is_header(ln)), None)
    if start is None:
        raise ParseError("topo -p2p: no header line starting with GPU0")
    columns = lines[start].split()
    for col in columns:
        if not GPU_RE.fullmatch(col):
            raise ParseError(f"topo -p2p: {snippet(col)} in the header is not a GPU")
    indices = [gpu_index(c, "topo -p2p") for c in columns]
    if any(a >= b for a, b in zip(indices, indices[1:])):
        raise ParseError("topo -p2p: GPU columns in the header are not in increasing order")

    rows: dict[str, tuple[str, ...]] = {}
    for line in lines[start + 1 :]:
        tokens = line.split()
        if not tokens or tokens[0] not in columns:
            break
        label, cells = tokens[0], tokens[1:]
        if label in rows:
            raise ParseError(f"topo -p2p: row {label} appears twice")
        if len(cells) != len(columns):
            raise ParseError(f"topo -p2p: row {label} has {len(cells)} cells, header has {len(columns)} columns")
        for col, cell in zip(columns, cells):
            if cell not in STATUSES:
                raise ParseError(f"topo -p2p: row {label}, column {col}: {snippet(cell)} is not a P2P status")
            if (cell == "X") != (col == label):
                raise ParseError(f"topo -p2p: row {label}, column {col}: {snippet(cell)} breaks the X diagonal")
        rows[label] = tuple(cells)
    absent = [c for c in columns if c not in rows]
    if absent:
        raise ParseError(f"topo -p2p: the header lists {len(columns)} GPUs but there is no row for {absent[0]} (text cut short?)")

    cap, note = _capability(text, capability)
    notes = {f"links.p2p.{cap}": note} if note else {}
    return Partial(
        kind=KIND,
        gpus={i: {} for i in indices},
        links={"p2p": {cap: tuple(rows[c] for c in columns)}},
        notes=notes,
    )


def _capability(text: str, given: Optional[str]) -> tuple[str, str]:
    """The capability the matrix shows, and a note when it was not read from the text."""
    m = _COMMAND_RE.search(text)
    if m:
        from_text = capability_name(m.group(1))
        if from_text:
            return from_text, ""
        said = f"the text shows '-p2p {m.group(1)}', which names no single capability"
    else:
        said = "the text does not show the -p2p argument"
    if given is not None:
        return capability_name(given), f"{said}; capability given by the caller"
    return "read", f"{said}; assumed read"
