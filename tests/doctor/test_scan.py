"""The scanner: its two filters, chunking, and the parallel path give the same lines."""

from __future__ import annotations

import io
import multiprocessing
import random

import pytest

from ncclnb.doctor import diagnose, scan
from ncclnb.doctor.kb import TRIGGERS

np = pytest.importorskip("numpy")

_NOISE = [
    b"node%03d:%d:%d [%d] NCCL INFO Channel 05/24 : 3[3] -> 4[4] via P2P/CUMEM/read",
    b"node%03d:%d:%d [%d] NCCL INFO Init timings - ncclCommInitRankConfig: nranks 8 total 0.61 connections 0.15",
    b"[rank%d]:[W304 17:41:12.735 ProcessGroupNCCL.cpp:1234] [PG ID 0 PG GUID 0 Rank %d] created %d %d",
    b"{'loss': %d.%d, 'grad_norm': %d, 'epoch': %d}",
    b"",
    b"\x1b[31mcolour\x1b[0m %d %d %d %d\r",
    b"\xff\xfe binary %d %d %d %d",
]


def _log(n_lines: int, seed: int = 7, max_line: int = 400) -> bytes:
    rng = random.Random(seed)
    out = []
    for i in range(n_lines):
        r = rng.random()
        if r < 0.03:
            trig = rng.choice(TRIGGERS).encode()
            line = b"node%03d:%d:%d [%d] NCCL WARN something " % (i % 7, i, i, i % 8) + trig + b" tail"
        elif r < 0.035:  # over-long, the trigger either inside the kept head or past it
            head = b"x" * rng.randrange(max_line + 10)
            line = head + rng.choice(TRIGGERS).encode() + b"y" * rng.randrange(2 * max_line)
        elif r < 0.04:
            line = b"NCCL INFO NCCL version 2.%d.3+cuda12.1" % (i % 3)
        else:
            tpl = rng.choice(_NOISE)
            line = tpl % tuple(rng.randrange(100) for _ in range(tpl.count(b"%")))
        out.append(line)
    return b"\n".join(out) + (b"\n" if seed % 2 else b"")


def _reference(data: bytes, max_line: int) -> tuple[list, int]:
    """The rule, spelled out: a line is a candidate when its first max_line
    bytes contain a trigger, and it is yielded cut to max_line bytes."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    out = [(no, line[:max_line]) for no, line in enumerate(lines, 1) if scan.has_trigger(line[:max_line])]
    return out, len(lines)


def _scan(data: bytes, **kw) -> tuple[list, int]:
    s = scan.LineScanner(io.BytesIO(data), **kw)
    found = list(s)
    return found, s.lines_read


@pytest.mark.parametrize("many_hits", [0, 1 << 30])  # hits numbered at once, or one by one
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_both_filters_give_the_rule(seed, many_hits, monkeypatch):
    monkeypatch.setattr(scan, "MANY_HITS", many_hits)
    data = _log(3000, seed)
    end = data.rfind(b"\n") + 1
    table = scan._QuadTable(np, data)
    py = scan._py_filter(data, 0, end, 400)
    npf = table.filter(data, 0, end, 400)
    assert py == npf
    # a region that starts at an odd offset, and a table built from unrelated data
    start = data.find(b"\n", 1001) + 1
    other = scan._QuadTable(np, b"unrelated sample text " * 1000)
    assert scan._py_filter(data, start, end, 400) == other.filter(data, start, end, 400)


@pytest.mark.parametrize("many_hits", [0, 1 << 30])
@pytest.mark.parametrize("chunk", [7, 64, 1000, 4096, 1 << 20])
@pytest.mark.parametrize("seed", [1, 2])
def test_chunk_size_does_not_change_the_lines(chunk, seed, many_hits, monkeypatch):
    monkeypatch.setattr(scan, "NUMPY_MIN", 512)  # the numpy filter on most chunks
    monkeypatch.setattr(scan, "MANY_HITS", many_hits)
    data = _log(2000, seed)
    assert _scan(data, chunk=chunk, max_line=400) == _reference(data, 400)


def test_numpy_and_find_paths_give_the_same_lines(monkeypatch):
    data = _log(4000, 5)
    monkeypatch.setattr(scan, "NUMPY_MIN", 1 << 40)
    serial = _scan(data, chunk=8192, max_line=400)
    monkeypatch.setattr(scan, "NUMPY_MIN", 256)
    assert _scan(data, chunk=8192, max_line=400) == serial == _reference(data, 400)


def test_max_candidates_stops_at_a_line_start():
    data = _log(3000, 3)
    s = scan.LineScanner(io.BytesIO(data), chunk=1000, max_line=400, max_candidates=20)
    head = list(s)
    assert s.stopped_at is not None and (s.stopped_at == 0 or data[s.stopped_at - 1 : s.stopped_at] == b"\n")
    rest = scan.LineScanner(io.BytesIO(data[s.stopped_at :]), chunk=1000, max_line=400)
    tail = [(no + s.lines_read, line) for no, line in rest]
    assert (head + tail, s.lines_read + rest.lines_read) == _reference(data, 400)


@pytest.mark.parametrize("seed", [1, 2])
def test_parallel_scan_matches_serial(tmp_path, monkeypatch, seed):
    monkeypatch.setattr(scan, "NUMPY_MIN", 1024)
    data = _log(20000, seed)
    path = tmp_path / "big.log"
    path.write_bytes(data)
    ref = _reference(data, 400)
    # small ranges and a small cap, so ranges split mid-chunk and some overflow to the caller
    par = scan.ParallelScan(str(path), 2, chunk=4096, max_line=400, step=50_000, max_candidates=40)
    assert (list(par), par.lines_read) == ref
    assert not multiprocessing.active_children()


def test_parallel_scan_stopped_early_leaves_no_workers(tmp_path):
    path = tmp_path / "big.log"
    path.write_bytes(_log(20000, 1))
    it = iter(scan.ParallelScan(str(path), 2, chunk=4096, max_line=400, step=20_000))
    next(it)
    it.close()
    assert not multiprocessing.active_children()


def test_split_ranges_begin_at_line_starts(tmp_path):
    data = _log(5000, 2)
    path = tmp_path / "x.log"
    path.write_bytes(data)
    with open(path, "rb") as fh:
        ranges = scan.split_ranges(fh, len(data), 10_000)
    assert ranges[0][0] == 0 and ranges[-1][1] == len(data)
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    assert all(data[s - 1 : s] == b"\n" for s, _ in ranges[1:])


def test_diagnose_parallel_equals_serial(tmp_path, monkeypatch):
    # a multi-rank log with a desync and a version split buried in it
    rng = random.Random(3)
    lines = []
    for i in range(30000):
        r = rng.randrange(16)
        lines.append(
            f"node{r // 8:03d}:{1000 + r}:{2000 + r} [{r % 8}] NCCL INFO Channel {i % 24:02d}/24 : {r}[{r % 8}] -> "
            f"{(r + 1) % 16}[{(r + 1) % 8}] via P2P/CUMEM/read"
        )
        if i % 5000 == 10:
            lines.append(
                f"node{r // 8:03d}:{1000 + r}:{2000 + r} [{r % 8}] NCCL INFO comm 0x55d8 rank {r} nRanks 16 "
                f"nNodes 2 localRanks 8 localRank {r % 8} MNNVL 0"
            )
            lines.append(f"node{r // 8:03d}:{1000 + r}:{2000 + r} [{r % 8}] NCCL INFO NCCL version 2.21.5+cuda12.4")
    lines.insert(11111, "node001:1009:2009 [1] NCCL INFO NCCL version 2.18.1+cuda12.1")
    lines.insert(
        17000,
        "[rank3]:[E304 17:41:12.735149131 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=10, NumelOut=10, "
        "Timeout(ms)=600000) ran for 600068 milliseconds before timing out.",
    )
    lines.insert(
        23000,
        "[rank5]:[E304 17:41:12.735149131 ProcessGroupNCCL.cpp:632] [Rank 5] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=12, NumelOut=12, "
        "Timeout(ms)=600000) ran for 600071 milliseconds before timing out.",
    )
    path = tmp_path / "ranks.log"
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(scan, "NUMPY_MIN", 1024)
    monkeypatch.setattr(scan, "CHUNK", 64 << 10)
    monkeypatch.setattr(scan, "RANGE", 300_000)
    monkeypatch.setenv("NCCLNB_DOCTOR_WORKERS", "0")
    monkeypatch.setattr(scan, "PARALLEL_MIN", 1 << 40)
    serial = diagnose(str(path))
    monkeypatch.setattr(scan, "PARALLEL_MIN", 1024)
    monkeypatch.setenv("NCCLNB_DOCTOR_WORKERS", "2")
    assert scan.workers_for(path.stat().st_size) == 2
    parallel = diagnose(str(path))
    assert parallel.to_dict() == serial.to_dict()
    assert {"nccl_version_differs_across_hosts", "watchdog_desync"} <= {f.rule for f in serial.findings}
    assert serial.lines_read == len(lines)
    assert not multiprocessing.active_children()


def test_workers_for(monkeypatch):
    monkeypatch.delenv("NCCLNB_DOCTOR_WORKERS", raising=False)
    assert scan.workers_for(scan.PARALLEL_MIN - 1) == 0
    assert 0 <= scan.workers_for(scan.PARALLEL_MIN) <= scan.MAX_WORKERS
    monkeypatch.setenv("NCCLNB_DOCTOR_WORKERS", "1")
    assert scan.workers_for(scan.PARALLEL_MIN) == 0
    monkeypatch.setenv("NCCLNB_DOCTOR_WORKERS", "3")
    assert scan.workers_for(scan.PARALLEL_MIN) == 3
