"""nccl-tests output (``all_reduce_perf``, ``all_gather_perf``,
``reduce_scatter_perf``, ``alltoall_perf``) -> a ClusterReport holding one
LinkTest, so the link checks give their verdict on a person's own run.

What the output gives, and where it goes:

- ``#  Rank  0 Group  0 Pid 295203 on node005 device  0 [0x18] NVIDIA H100
  80GB HBM3``: one rank each -> the rank table, and per host a snapshot
  holding only the GPUs these lines name (model and bus id);
- the table's header (``size count type redop root time algbw busbw
  #wrong ...``) says where the columns are; each row -> a
  :class:`~ncclnb.model.LinkMeasurement` from the out-of-place columns;
- ``iters: 20`` in the ``# nThread`` line -> ``iterations``;
- which collective: the ``<name>_perf`` command in the text, else the ratio
  busbw / algbw (2(n-1)/n is all_reduce; (n-1)/n with redop ``sum`` is
  reduce_scatter; with ``none`` it may be all_gather or alltoall, and the
  command line must say which);
- ``NCCL INFO ... via ...`` lines in the same text (NCCL_DEBUG=INFO) ->
  the transports (:func:`~ncclnb.collectors.parsers.nccl_version.peer_transports`);
- ``NCCL_ALGO=...`` written anywhere in the text (an ``export`` or the
  command line) -> ``env``: it picks the reference row.
"""

from __future__ import annotations

import re
from typing import Optional

from ...model import ClusterReport, Gpu, Host, LinkMeasurement, LinkTest, NodeSnapshot, RankEntry
from ...model.words import how_many
from ._common import ParseError
from .nccl_version import peer_transports

KIND = "nccl-tests output"
_PERF_NAMES = {
    "all_reduce": "all_reduce",
    "all_gather": "all_gather",
    "reduce_scatter": "reduce_scatter",
    "alltoall": "all_to_all",
}
_PERF_RE = re.compile(r"\b([a-z_]+)_perf(?:_mpi)?\b")
_RANK_RE = re.compile(
    r"^#\s*Rank\s+([0-9]{1,7})\s+Group\s+[0-9]+\s+Pid\s+([0-9]{1,10})\s+on\s+(\S{1,255})\s+device\s+"
    r"([0-9]{1,4})\s+\[([0-9A-Fa-fx:.]{1,32})\]\s+(.{1,120}?)\s*$"
)
_HEADER_RE = re.compile(r"^#\s+size\s+count\s+type\b.*\btime\s+algbw\s+busbw\b")
_ITERS_RE = re.compile(r"#\s*nThread\b.*?(?<!warmup )(?<!agg )\biters:\s*([0-9]{1,7})\b")  # not "warmup iters", "agg iters"
_ALGO_RE = re.compile(r"\bNCCL_ALGO=([A-Za-z0-9_,;:^]{1,80})")
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:e[-+]?[0-9]+)?")


def looks_like_nccl_tests(text: str) -> bool:
    """True when ``text`` holds an nccl-tests table header."""
    return any(_HEADER_RE.match(line.strip()) for line in text.splitlines()[:5000])


def _collective(text: str, redop: Optional[str], ratio: Optional[float], n: Optional[int]) -> str:
    names = {m.group(1) for m in _PERF_RE.finditer(text)}
    known = {_PERF_NAMES[x] for x in names if x in _PERF_NAMES}
    if len(known) > 1:
        raise ParseError(f"{KIND}: the text names several tests ({', '.join(sorted(names))}_perf): give one at a time")
    if known:
        return known.pop()
    if names:
        raise ParseError(
            f"{KIND}: {sorted(names)[0]}_perf is not read (ncclnb reads all_reduce_perf, "
            "all_gather_perf, reduce_scatter_perf and alltoall_perf)"
        )
    if ratio is not None and n and n > 1:
        if abs(ratio - 2 * (n - 1) / n) < 0.02:
            return "all_reduce"
        if abs(ratio - (n - 1) / n) < 0.02 and redop == "sum":
            return "reduce_scatter"
    raise ParseError(
        f"{KIND}: which test this is cannot be told from the table: include the command line "
        "(./build/all_gather_perf ...) with the output"
    )


def parse_nccl_tests(text: str, label: str = "nccl-tests output") -> ClusterReport:
    """The report of one nccl-tests run (see the module docstring). Raises
    :class:`ParseError` (one line) when the text has no nccl-tests table, or
    a table whose rows cannot be read."""
    lines = text.splitlines()
    header_at = next((i for i, line in enumerate(lines) if _HEADER_RE.match(line.strip())), None)
    if header_at is None:
        raise ParseError(f"{KIND}: no table header ('#  size  count  type ... time  algbw  busbw')")
    columns = lines[header_at].strip().lstrip("#").split()
    t_col = columns.index("time")
    redop_col = columns.index("redop") if "redop" in columns else None
    rows, redop = [], None
    for line in lines[header_at + 1 :]:
        cells = line.split()
        if not cells or cells[0].startswith("#"):
            if rows and line.strip().startswith("# Avg bus bandwidth"):
                break
            continue
        if not cells[0].isdigit() or len(cells) < t_col + 3:
            continue  # NCCL INFO lines interleaved with the table
        try:
            size, time_us, algbw, busbw = int(cells[0]), *(float(c) for c in cells[t_col : t_col + 3])
        except ValueError:
            continue
        if not all(_NUMBER.fullmatch(c) for c in cells[t_col : t_col + 3]):
            continue
        rows.append((size, time_us, algbw, busbw))
        if redop_col is not None and redop is None:
            redop = cells[redop_col]
    if not rows:
        raise ParseError(f"{KIND}: a table header but no rows under it")
    ranks = []
    for line in lines:
        m = _RANK_RE.match(line.strip())
        if m:
            ranks.append((int(m.group(1)), int(m.group(2)), m.group(3), int(m.group(4)), m.group(5), m.group(6)))
    n = len({r[0] for r in ranks}) or None
    big = max(rows, key=lambda r: r[0])
    ratio = big[3] / big[2] if big[2] > 0 else None
    collective = _collective(text, redop, ratio, n)
    if n is None:
        if collective != "all_reduce" or not ratio or ratio >= 2:
            raise ParseError(f"{KIND}: no '#  Rank N ... on HOST device D' lines: the rank count is unknown")
        n = round(2 / (2 - ratio))
    hosts = sorted({r[2] for r in ranks}, key=lambda h: min(r[0] for r in ranks if r[2] == h))
    snapshots = []
    for host in hosts:
        gpus = {}
        for _, _, h, device, bus, name in ranks:
            if h == host:
                gpus.setdefault(device, Gpu(index=device, cuda_index=device, name=name, pci_bus_id=bus if ":" in bus else None))
        snapshots.append(
            NodeSnapshot(
                host=Host(hostname=host),
                gpus=tuple(gpus[d] for d in sorted(gpus)),
                origin="ingest",
                sources={"gpus": KIND},
                description=f"From the 'Using devices' lines of {label}: only the GPUs the ranks used, nothing else of the node.",
            )
        )
    world = n
    table = [RankEntry(rank=r, host=h, world_size=world, pid=pid, cuda_index=device) for r, pid, h, device, _, _ in sorted(ranks)]
    iters = _ITERS_RE.search(text)
    algo = _ALGO_RE.findall(text)
    link = LinkTest(
        backend="nccl",
        device="cuda",
        world_size=world,
        nodes=max(1, len(hosts)),
        iterations=int(iters.group(1)) if iters else 0,
        results=tuple(
            LinkMeasurement(collective=collective, size_bytes=s, time_us=t, algbw_gbps=a, busbw_gbps=b) for s, t, a, b in rows
        ),
        transports=tuple(peer_transports(text)),
        env={"NCCL_ALGO": algo[-1]} if algo else {},
    )
    return ClusterReport(
        snapshots=tuple(snapshots),
        ranks=tuple(table),
        links=(link,),
        description=f"{collective} from {label} ({KIND}, {how_many(world, 'rank')} on "
        f"{how_many(max(1, len(hosts)), 'node')}); node facts are only the GPUs its "
        "'Using devices' lines name.",
    )
