"""``nvidia-smi topo -m`` (and ``-mp``): the GPU x GPU and GPU x NIC link matrix.

The output is a header of device columns (``GPU0 ... NIC0 ...`` or, with
older drivers, ``mlx5_0 ...``) followed by ``CPU Affinity``, ``NUMA
Affinity`` and, with newer drivers, ``GPU NUMA ID``; then one row per device.
nvidia-smi pads with tabs, posts often turn them into spaces, and every cell
is a single word, so rows are split on any whitespace and checked cell by
cell. The ``Legend`` is ignored; the ``NIC Legend`` maps ``NIC0`` to
``mlx5_0``.
"""

from __future__ import annotations

import re
from typing import Optional

from ...model import Nic, NumaNode
from ...model.cpulist import format_spans
from ...model.node import P2P_STATUSES
from ._common import (
    CPULIST_RE,
    INDEX_DIGITS,
    ParseError,
    Partial,
    content_lines,
    cpulist_spans,
    snippet,
    to_int,
)

KIND = "nvidia-smi topo -m"

# ASCII only (`\d` and `\w` also take "١"); NVLink counts have at most 3 digits
LABEL_RE = re.compile(r"X|NV[0-9]{1,3}|PIX|PXB|PHB|NODE|SYS|SOC")
GPU_RE = re.compile(r"GPU([0-9]+)")
DEVICE_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.:-]*")
NIC_LEGEND_RE = re.compile(r"\s*(NIC[0-9]+)\s*:\s*(\S+)\s*$")

# trailing (non-matrix) columns, in the order nvidia-smi prints them,
# with the pattern each cell must match
TRAILING = (
    ("CPU Affinity", CPULIST_RE),
    ("NUMA Affinity", re.compile(r"[0-9]+")),
    ("GPU NUMA ID", re.compile(r"[0-9]+")),
)
NA = "N/A"


def is_header(line: str) -> bool:
    """A topo -m or topo -p2p header: starts with GPU0 and is not a row."""
    tokens = line.split()
    if not tokens or tokens[0] != "GPU0":
        return False
    if len(tokens) == 1:
        return True
    second = tokens[1]
    return bool(GPU_RE.fullmatch(second)) or second == "CPU" or (DEVICE_RE.fullmatch(second) is not None and not _is_cell(second))


def _is_cell(token: str) -> bool:
    # a matrix cell of either topo -m or topo -p2p
    return bool(LABEL_RE.fullmatch(token)) or (token != "X" and token in P2P_STATUSES)


def split_header(line: str) -> tuple[list[str], list[str]]:
    """Header line -> (device column names, trailing column names)."""
    tokens = line.split()
    devices: list[str] = []
    i = 0
    while i < len(tokens) and tokens[i] not in ("CPU", "NUMA"):
        devices.append(tokens[i])
        i += 1
    rest = " ".join(tokens[i:])
    trailing: list[str] = []
    for name, _ in TRAILING:
        if rest.startswith(name):
            trailing.append(name)
            rest = rest[len(name) :].lstrip()
    if rest:
        raise ParseError(f"topo -m: unknown column {snippet(rest)} in the header")
    for dev in devices:
        if not DEVICE_RE.fullmatch(dev):
            raise ParseError(f"topo -m: {snippet(dev)} in the header is not a device name")
    gpus = [d for d in devices if GPU_RE.fullmatch(d)]
    if not gpus:
        raise ParseError("topo -m: the header has no GPU columns")
    if devices[: len(gpus)] != gpus:
        raise ParseError("topo -m: GPU columns must come before NIC columns in the header")
    if len(set(devices)) != len(devices):
        raise ParseError("topo -m: a device column appears twice in the header")
    indices = [gpu_index(g, "topo -m") for g in gpus]
    if any(a >= b for a, b in zip(indices, indices[1:])):
        raise ParseError("topo -m: GPU columns in the header are not in increasing order")
    return devices, trailing


def parse_topo_m(text: str) -> Partial:
    """Parse ``nvidia-smi topo -m`` output into partial facts: GPUs with CPU
    and NUMA affinity, the GPU x GPU / GPU x NIC label matrices, NIC names,
    and NUMA nodes inferred from the affinity columns."""
    lines = content_lines(text)
    start = next((i for i, ln in enumerate(lines) if is_header(ln)), None)
    if start is None:
        raise ParseError("topo -m: no header line starting with GPU0")
    devices, trailing = split_header(lines[start])
    n_dev = len(devices)
    gpu_cols = [d for d in devices if GPU_RE.fullmatch(d)]
    nic_cols = devices[len(gpu_cols) :]
    width = n_dev + len(trailing)

    rows: dict[str, list[str]] = {}
    extra: dict[str, dict[str, str]] = {}
    for line in lines[start + 1 :]:
        tokens = line.split()
        if not tokens or tokens[0] not in devices:
            break
        label, cells = tokens[0], tokens[1:]
        if label in rows:
            raise ParseError(f"topo -m: row {label} appears twice")
        is_gpu = label in gpu_cols
        expected = width if is_gpu else n_dev
        if len(cells) < n_dev or len(cells) > expected:
            raise ParseError(f"topo -m: row {label} has {len(cells)} cells, header has {expected} columns")
        for col, cell in zip(devices, cells[:n_dev]):
            _check_cell(label, col, cell, len(cells), expected)
        rows[label] = cells[:n_dev]
        if is_gpu:
            extra[label] = {}
            for (name, pattern), cell in zip([t for t in TRAILING if t[0] in trailing], cells[n_dev:]):
                if cell != NA and not pattern.fullmatch(cell):
                    if len(cells) != expected:
                        raise ParseError(f"topo -m: row {label} has {len(cells)} cells, header has {expected} columns")
                    raise ParseError(f"topo -m: row {label}: {name} {snippet(cell)} is not valid")
                if name == "CPU Affinity" and cell != NA:
                    cpulist_spans(cell, f"topo -m: row {label}: CPU Affinity")  # refuse it before it is stored
                extra[label][name] = cell
    if not rows:
        raise ParseError(f"topo -m: the header lists {n_dev} devices but no rows follow (text cut short?)")
    absent = [d for d in devices if d not in rows]
    if absent:
        raise ParseError(f"topo -m: the header lists {n_dev} devices but there is no row for {absent[0]} (text cut short?)")

    legend = {}
    for line in lines[start + 1 :]:
        m = NIC_LEGEND_RE.fullmatch(line)
        if m:
            legend[m.group(1)] = m.group(2)
    nic_names = tuple(legend.get(c, c) for c in nic_cols)

    gpu_gpu = tuple(tuple(rows[g][j] for j in range(len(gpu_cols))) for g in gpu_cols)
    gpu_nic = tuple(tuple(rows[g][len(gpu_cols) :]) for g in gpu_cols) if nic_cols else ()

    gpus: dict[int, dict] = {}
    missing: dict[str, str] = {}
    for g in gpu_cols:
        index = gpu_index(g, "topo -m")
        cpu = extra[g].get("CPU Affinity")
        numa = extra[g].get("NUMA Affinity")
        facts = {
            "cpu_affinity": cpu if cpu not in (None, NA) else None,
            "numa_node": (to_int(numa, f"topo -m: row {g}: NUMA Affinity", INDEX_DIGITS) if numa not in (None, NA) else None),
        }
        for field_name, column, value in (("cpu_affinity", "CPU Affinity", cpu), ("numa_node", "NUMA Affinity", numa)):
            if value == NA:
                missing[f"gpus[{index}].{field_name}"] = f"nvidia-smi topo -m shows {column} N/A"
            elif value is None and column not in trailing:
                missing[f"gpus[{index}].{field_name}"] = f"this nvidia-smi topo -m has no {column} column"
            elif value is None:
                missing[f"gpus[{index}].{field_name}"] = f"the {column} cell of {g} is empty in the text"
        gpus[index] = facts

    notes = {}
    unnamed = [c for c in nic_cols if re.fullmatch(r"NIC[0-9]+", c) and c not in legend]
    if unnamed:
        notes["nics"] = "no NIC Legend in the text, so NICs keep nvidia-smi's column names (" + ", ".join(unnamed) + ")"

    derived = _numa_from_affinity(gpus)
    if derived:
        notes["host.numa_nodes"] = "CPUs from the GPUs' CPU Affinity (only NUMA nodes that hold a GPU)"
    return Partial(
        kind=KIND,
        gpus=gpus,
        links={"gpu_gpu": gpu_gpu, "gpu_nic": gpu_nic, "nic_names": nic_names},
        nics=tuple(Nic(name=name) for name in nic_names),
        derived_numa_nodes=derived,
        missing=missing,
        notes=notes,
    )


def _check_cell(row: str, col: str, cell: str, n_cells: int, expected: int) -> None:
    bad: Optional[str] = None
    if not LABEL_RE.fullmatch(cell):
        bad = f"{snippet(cell)} is not a link label"
    elif (cell == "X") != (row == col):
        bad = f"{snippet(cell)} where the diagonal {'is' if row == col else 'is not'}"
    if bad is None:
        return
    if n_cells != expected:
        raise ParseError(f"topo -m: row {row} has {n_cells} cells, header has {expected} columns")
    raise ParseError(f"topo -m: row {row}, column {col}: {bad}")


def gpu_index(name: str, where: str) -> int:
    """ "GPU3" -> 3; a GPU name with an index too long to be one is a ParseError."""
    return to_int(GPU_RE.fullmatch(name).group(1), f"{where}: GPU index of {snippet(name, 24)}", INDEX_DIGITS)


def _numa_from_affinity(gpus: dict[int, dict]) -> tuple[NumaNode, ...]:
    # ranges stay ranges: a node's CPUs are the merged spans of its GPUs' affinity
    spans_by_node: dict[int, list] = {}
    for facts in gpus.values():
        node, cpus = facts["numa_node"], facts["cpu_affinity"]
        if node is None:
            continue
        spans_by_node.setdefault(node, [])
        if cpus:
            spans_by_node[node].extend(cpulist_spans(cpus))
    return tuple(NumaNode(id=node, cpus=format_spans(found)) for node, found in sorted(spans_by_node.items()))
