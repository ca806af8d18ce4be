"""Plain-text summary of a NodeSnapshot or ClusterReport for a terminal.

Formatting only: it reads a frozen snapshot and never collects anything, so
`ncclnb show` of a snapshot saved on a cluster node reads the same on a laptop.
"""

from __future__ import annotations

import re
from typing import Iterable, Optional, Union

from .model import ClusterReport, NodeSnapshot, UNLIMITED, nvlink_count
from .model.words import how_many


def summary(target: Union[NodeSnapshot, ClusterReport], *, width: int = 100) -> str:
    """Return a compact, readable multi-line summary of ``target``."""
    if isinstance(target, ClusterReport):
        return _report_summary(target, width)
    return _node_summary(target, width)


# Past this no number is a real byte count or limit (and float() of it may overflow).
_IMPLAUSIBLE = 1 << 64


def _fmt_bytes(n: Optional[int]) -> str:
    if n is None:
        return "?"
    if n == UNLIMITED:
        return "unlimited"
    if not isinstance(n, (int, float)) or isinstance(n, bool):
        return _or(n)
    if not -_IMPLAUSIBLE < n < _IMPLAUSIBLE:
        return _implausible(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _fmt_limit(n: Optional[int]) -> str:
    if n is None:
        return "?"
    return "unlimited" if n == UNLIMITED else _or(n)


def _implausible(n) -> str:
    if not isinstance(n, int):
        return f"? (implausible: {n!r})"  # inf or nan, in a snapshot built in Python
    return f"? (implausible: {'-' if n < 0 else ''}{n.bit_length()}-bit number)"


def _or(value, default="?") -> str:
    if value is None or value == "":
        return default
    if isinstance(value, int) and not isinstance(value, bool) and not -_IMPLAUSIBLE < value < _IMPLAUSIBLE:
        return _implausible(value)  # str() of an int past 4300 digits raises
    return str(value)


def _said(label: str, value, text: Optional[str] = None) -> str:
    """ "OS Ubuntu 22.04" or, where the value is not known, "OS not known":
    an unknown said in words in running text (table cells keep "?")."""
    if value is None or value == "":
        return f"{label} not known"
    return f"{label} {_or(value) if text is None else text}"


def _versioned(label: str, version, cuda) -> str:
    """ "driver 535.54.03 (CUDA 12.2)", "torch not known", "torch 2.4.0 (CUDA not known)"."""
    if version in (None, "") and cuda in (None, ""):
        return f"{label} not known"
    return f"{_said(label, version)} ({_said('CUDA', cuda)})"


def _table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    if not rows:
        return []
    widths = [max(len(r[i]) if i < len(r) else 0 for r in rows) for i in range(max(map(len, rows)))]
    out = []
    for r in rows:
        cells = [c.ljust(widths[i]) for i, c in enumerate(r)]
        out.append((indent + "  ".join(cells)).rstrip())
    return out


def _section(title: str) -> str:
    return f"\n{title}"


def _node_summary(s: NodeSnapshot, width: int) -> str:
    h = s.host
    lines = [f"{h.hostname}  ({s.origin}{', ' + s.captured_at if s.captured_at else ''})"]
    if s.description:
        lines.append(f"  {s.description}")
    lines.append(
        f"  {_said('OS', h.os)} | {_said('kernel', h.kernel)} | "
        + (
            f"CPU {_or(h.cpu_model)}" + (f" x{_or(h.cpu_count)}" if h.cpu_count is not None else "")
            if h.cpu_model
            else f"CPU model not known, {_or(h.cpu_count)} CPUs"
            if h.cpu_count is not None
            else "CPU not known"
        )
        + f" | container {', '.join(h.container) or ('not known' if 'host.container' in s.missing else 'none')}"
        f" | {_said('IOMMU', h.iommu)}"
    )
    shm = (
        "/dev/shm not known"
        if h.shm_free_bytes is None and h.shm_total_bytes is None
        else f"/dev/shm {_fmt_bytes(h.shm_free_bytes)} free of {_fmt_bytes(h.shm_total_bytes)}"
        if h.shm_free_bytes is not None and h.shm_total_bytes is not None
        else _said("/dev/shm", h.shm_total_bytes, f"{_fmt_bytes(h.shm_total_bytes)} (free not known)")
        if h.shm_total_bytes is not None
        else f"/dev/shm {_fmt_bytes(h.shm_free_bytes)} free"
    )
    nofile = (
        "nofile not known"
        if h.rlimit_nofile_soft is None and h.rlimit_nofile_hard is None
        else f"nofile {_fmt_limit(h.rlimit_nofile_soft)}/{_fmt_limit(h.rlimit_nofile_hard)}"
    )
    memlock = _said("memlock", h.rlimit_memlock_soft, _fmt_bytes(h.rlimit_memlock_soft))
    lines.append(f"  {shm} | {nofile} | {memlock}")

    lines.append(_section(f"GPUs ({len(s.gpus)})"))
    if s.gpus:
        rows = [["#", "cuda", "name", "bus id", "NUMA", "CPU affinity", "memory", "MIG", "compute"]]
        for g in s.gpus:
            rows.append(
                [
                    str(g.index),
                    _or(g.cuda_index, "-"),
                    _or(g.name),
                    _or(g.pci_bus_id),
                    _or(g.numa_node),
                    _or(g.cpu_affinity),
                    f"{_or(g.memory_total_mib)} MiB" if g.memory_total_mib is not None else "?",
                    _or(g.mig_mode, "-"),
                    _or(g.compute_mode, "-"),
                ]
            )
        lines += _table(rows)
    else:
        lines.append("  none" + (f" ({s.missing['gpus']})" if "gpus" in s.missing else ""))

    links = s.links
    if links.gpu_gpu:
        nic_cols = list(links.nic_names)
        lines.append(_section("Links (nvidia-smi topo -m terms)"))
        if len(s.gpus) == len(links.gpu_gpu):
            gpu_names = [f"GPU{g.index}" for g in s.gpus]
        else:
            gpu_names = [f"GPU{i}" for i in range(len(links.gpu_gpu))]
        header = [""] + gpu_names + nic_cols
        rows = [header]
        for i, row in enumerate(links.gpu_gpu):
            nic_row = list(links.gpu_nic[i]) if i < len(links.gpu_nic) else []
            rows.append([header[i + 1]] + list(row) + nic_row)
        lines += _table(rows)
        counts = sorted({nvlink_count(x) for r in links.gpu_gpu for x in r} - {0})
        if counts:
            lines.append(f"  NVLink: {', '.join('NV%d' % c for c in counts)} (bonded links per pair)")
    for cap, matrix in sorted(links.p2p.items()):
        bad = sum(1 for r in matrix for x in r if x not in ("X", "OK"))
        total = sum(1 for r in matrix for x in r if x != "X")
        verdict = (
            "all OK"
            if bad == 0
            else f"{bad} of {total} pairs not OK ({', '.join(sorted({x for r in matrix for x in r} - {'X', 'OK'}))})"
        )
        lines.append(f"  P2P {cap}: {verdict}")

    lines.append(_section(f"NUMA ({how_many(len(h.numa_nodes), 'node')})"))
    if h.numa_nodes:
        for n in h.numa_nodes:
            gpus = [str(g.index) for g in s.gpus if g.numa_node == n.id]
            nics = [x.name for x in s.nics if x.numa_node == n.id]
            mem = f", {_or(n.memory_mib)} MiB" if n.memory_mib is not None else ""
            lines.append(
                f"  node {n.id}: CPUs {n.cpus or '?'}{mem} | GPUs {','.join(gpus) or '-'} | NICs {','.join(nics) or '-'}"
            )
    else:
        lines.append("  unknown")

    lines.append(_section(f"NICs ({len(s.nics)})"))
    if s.nics:
        rows = [["name", "kind", "state", "speed", "NUMA", "addresses", "IB"]]
        for n in s.nics:
            ib = "/".join(x for x in (n.ib_device, n.ib_port_state, n.ib_link_layer) if x) or "-"
            rows.append(
                [
                    n.name,
                    _or(n.kind),
                    _or(n.state),
                    f"{_or(n.speed_mbps)} Mb/s" if n.speed_mbps else "?",
                    _or(n.numa_node),
                    ", ".join(n.addresses) or "-",
                    ib,
                ]
            )
        lines += _table(rows)
    elif links.nic_names:
        lines.append(f"  from topo -m only: {', '.join(links.nic_names)}")

    v = s.versions
    lines.append(_section("Versions"))
    lines.append(
        f"  {_versioned('driver', v.driver, v.cuda_driver)} | {_versioned('torch', v.torch, v.torch_cuda)}"
        f" | {_said('python', v.python)}"
    )
    nccl = [f"torch reports {v.nccl_torch}"] if v.nccl_torch else []
    nccl += [f"a process loaded {v.nccl_loaded} (NCCL_DEBUG=INFO)"] if v.nccl_loaded else []
    nccl += [f"pip {k}=={val}" for k, val in sorted(v.nccl_pip.items())]
    nccl += [f"{lib.path}" + (f" ({lib.version})" if lib.version else "") for lib in v.nccl_system]
    lines.append("  NCCL: " + ("; ".join(nccl) if nccl else "none found"))
    if v.net_plugins:
        lines.append("  net plugins: " + ", ".join(p.path for p in v.net_plugins))
    if v.frameworks:
        lines.append("  " + ", ".join(f"{k} {val}" for k, val in sorted(v.frameworks.items())))

    if s.env:
        lines.append(_section("Environment"))
        lines += [f"  {k}={val}" for k, val in sorted(s.env.items())]

    if s.missing:
        lines.append(_section("Not read"))
        lines += [f"  {k}: {reason}" for k, reason in _grouped_missing(s.missing)]
    return "\n".join(_clip(lines, width))


# `gpus[12].uuid`: ASCII digits, short enough for int() ("gpus[١]" stays as it is)
_INDEXED_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\[([0-9]{1,100})\](.*)", re.DOTALL)


def _grouped_missing(missing: dict[str, str]) -> list[tuple[str, str]]:
    """Fold per-GPU/NIC entries with the same reason: gpus[0..3].uuid."""
    groups: dict[tuple[str, str, str], set[int]] = {}
    singles = []
    for key, reason in missing.items():
        m = _INDEXED_KEY.fullmatch(key)
        if m:
            groups.setdefault((m.group(1), m.group(3), reason), set()).add(int(m.group(2)))
        else:
            singles.append((key, reason))
    for (name, rest, reason), found in groups.items():
        idx = sorted(found)
        # a run is told by its ends and its length: never build range(first, last)
        run = len(idx) > 1 and idx[-1] - idx[0] + 1 == len(idx)
        span = f"{idx[0]}..{idx[-1]}" if run else ",".join(map(str, idx))
        singles.append((f"{name}[{span}]{rest}", reason))
    return sorted(singles)


def _clip(lines: Iterable[str], width: int) -> list[str]:
    return [ln if len(ln) <= width else ln[: width - 1] + "…" for ln in lines]


def _report_summary(r: ClusterReport, width: int) -> str:
    lines = [f"Cluster report: {how_many(len(r.snapshots), 'node')}, {how_many(len(r.ranks), 'rank')}"]
    if r.description:
        lines.append(f"  {r.description}")
    rows = [["host", "GPUs", "driver", "CUDA", "torch", "NCCL"]]
    for s in r.snapshots:
        v = s.versions
        nccl = v.nccl_loaded or v.nccl_torch or ",".join(sorted(set(v.nccl_pip.values()))) or "?"
        rows.append([s.hostname, str(len(s.gpus)), _or(v.driver), _or(v.cuda_driver), _or(v.torch), nccl])
    lines += _table(rows)
    if r.ranks:
        lines.append(_section("Ranks"))
        rows = [["rank", "host", "local", "world", "cuda", "pid"]]
        for e in sorted(r.ranks, key=lambda e: (e.host, e.rank)):
            rows.append([str(e.rank), e.host, _or(e.local_rank), _or(e.world_size), _or(e.cuda_index), _or(e.pid)])
        lines += _table(rows)
    return "\n".join(_clip(lines, width))
