"""Deterministic generators of large multi-rank NCCL_DEBUG=INFO logs.

``generate`` (sparse): lines are modelled on the real captures in ``../shared/fixtures/nccl_info__*``
(init, channel set-up, plugin and proxy lines of many ranks on many hosts),
interleaved with PyTorch/torchrun training chatter, with a few real failures
buried at fixed fractions of the file.

``generate_dense`` (hit-dense): the NCCL lines of the real captures kept in
this repository (``ncclnb/recorded/links``, ``ncclnb/repro/recorded``)
replayed by 1024 ranks on 128 hosts, about a third of them candidate lines,
with one planted watchdog timeout; optionally the same lines as one file per
rank.
"""

from __future__ import annotations

import os
import random
import re
from typing import Optional

_INIT = [
    "NCCL INFO Bootstrap: Using eth0:10.0.{h}.{p}<0>",
    "NCCL INFO cudaDriverVersion 12040",
    "NCCL INFO NCCL version 2.21.5+cuda12.4",
    "NCCL INFO Comm config Blocking set to 1",
    "NCCL INFO NET/Plugin: Plugin load returned 2 : libnccl-net.so: cannot open shared object file: No such file or directory : when loading libnccl-net.so",
    "NCCL INFO NET/Plugin: Using internal network plugin.",
    "NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.{h}.{p}<0>",
    "NCCL INFO Using network IB",
    "NCCL INFO ncclCommInitRank comm 0x55d8db2{p:05x} rank {r} nranks {n} cudaDev {d} nvmlDev {d} busId {d}1000 commId 0xc4cf3e318640a470 - Init START",
    "NCCL INFO Setting affinity for GPU {d} to ffff,0000ffff",
    "NCCL INFO comm 0x55d8db2{p:05x} rank {r} nRanks {n} nNodes {nn} localRanks 8 localRank {d} MNNVL 0",
    "NCCL INFO Trees [0] {r1}/-1/-1->{r}->{r0} [1] {r1}/-1/-1->{r}->{r0}",
    "NCCL INFO P2P Chunksize set to 131072",
    "NCCL INFO NET/Plugin: Failed to find ncclCollNetPlugin_v{c} symbol.",
]
_BULK = [
    "NCCL INFO Channel {c:02d}/24 : {r}[{d}] -> {r1}[{d1}] via P2P/CUMEM/read",
    "NCCL INFO Channel {c:02d}/0 : {r}[{d}] -> {r1}[{d1}] [send] via NET/IB/{d}/GDRDMA",
    "NCCL INFO Channel {c:02d}/0 : {r0}[{d}] -> {r}[{d}] [receive] via NET/IB/{d}/GDRDMA",
    "NCCL INFO Channel {c:02d} : {r}[{d}] -> {r1}[{d1}] via SHM/direct/direct",
    "NCCL INFO Connected all rings, use ring PXN 0 GDR 1",
    "NCCL INFO Connected all trees",
    "NCCL INFO threadThresholds 8/8/64 | 128/8/64 | 512 | 512",
    "NCCL INFO 24 coll channels, 24 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer",
    "NCCL INFO [Proxy Service] Device {d} CPU core {c}",
    "NCCL INFO ncclCommInitRank comm 0x55d8db2{p:05x} rank {r} nranks {n} cudaDev {d} nvmlDev {d} busId {d}1000 commId 0xc4cf3e318640a470 - Init COMPLETE",
    "NCCL INFO Init timings - ncclCommInitRankConfig: rank {r} nranks {n} total 0.61 (kernels 0.12, alloc 0.02, bootstrap 0.18, allgathers 0.01, topo 0.09, graphs 0.01, connections 0.15, rest 0.03)",
]
_CHATTER = [
    "[default{d}]:{{'loss': {x:.4f}, 'grad_norm': 0.{c}41, 'learning_rate': 1.9e-05, 'epoch': 0.{c}}}",
    "[default{d}]:  {c}%|###       | {c}/100 [00:{c:02d}<01:10,  1.21s/it]",
    "[rank{r}]:[W{c:02d}04 17:41:12.735149131 ProcessGroupNCCL.cpp:1234] [PG ID 0 PG GUID 0 Rank {r}] ProcessGroupNCCL created ncclComm_ 0x55d8 on CUDA device: {d}",
]


def failures(hosts: int) -> list[str]:
    """The real failures buried in the log: a watchdog timeout on two ranks
    with different sizes at the same sequence number (a desync), and an
    NCCL version that differs on the last host."""
    last = f"node{hosts - 1:03d}"
    return [
        "[rank3]:[E304 17:41:12.735149131 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=1474236, OpType=_ALLGATHER_BASE, NumelIn=262675456, NumelOut=1050701824, Timeout(ms)=600000) ran for 600068 milliseconds before timing out.",
        "[rank5]:[E304 17:41:12.735149131 ProcessGroupNCCL.cpp:632] [Rank 5] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=1474236, OpType=_ALLGATHER_BASE, NumelIn=262144000, NumelOut=1048576000, Timeout(ms)=600000) ran for 600071 milliseconds before timing out.",
        f"{last}:4242:4242 [0] NCCL INFO NCCL version 2.18.1+cuda12.1",
    ]


def generate(path: str, size_mb: int, hosts: int = 64, seed: int = 1234) -> int:
    """Write about ``size_mb`` MiB of log to ``path``; return the bytes written."""
    rng = random.Random(seed)
    target = size_mb * 1024 * 1024
    nranks = hosts * 8
    buried = failures(hosts)
    marks = [int(target * f) for f in (0.31, 0.57, 0.83)]
    written = 0
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        block: list[str] = []
        while written < target:
            block.clear()
            for _ in range(2000):
                h = rng.randrange(hosts)
                d = rng.randrange(8)
                r = h * 8 + d
                pid = 10000 + r
                kind = rng.random()
                if kind < 0.02:
                    tpl = rng.choice(_INIT)
                elif kind < 0.93:
                    tpl = rng.choice(_BULK)
                else:
                    tpl = rng.choice(_CHATTER)
                text = tpl.format(
                    h=h,
                    p=pid % 250,
                    r=r,
                    n=nranks,
                    nn=hosts,
                    d=d,
                    d1=(d + 1) % 8,
                    r1=(r + 1) % nranks,
                    r0=(r - 1) % nranks,
                    c=rng.randrange(24),
                    x=rng.random(),
                )
                if "NCCL INFO" in text and not text.startswith("["):
                    text = f"node{h:03d}:{pid}:{pid + rng.randrange(1, 400)} [{d}] {text}"
                block.append(text)
            chunk = "\n".join(block) + "\n"
            while marks and written + len(chunk) >= marks[0]:
                marks.pop(0)
                chunk += buried.pop(0) + "\n"
            fh.write(chunk)
            written += len(chunk)
        for line in buried:  # a tiny size may end before every mark
            fh.write(line + "\n")
            written += len(line) + 1
    return written


# ---- a hit-dense log: the real NCCL_DEBUG=INFO captures replayed by many ranks ----
_CAPTURES = ("ncclnb/recorded/links", "ncclnb/repro/recorded")
_NCCL_PREFIX = re.compile(r"^[A-Za-z0-9][\w.-]*:\d+:\d+ \[\d+\] (NCCL INFO .*)$")
_COMM = re.compile(r"rank \d+ nRanks \d+ nNodes \d+ localRanks \d+ localRank \d+")
_INIT_LINE = re.compile(r"rank \d+ nranks \d+ cudaDev \d+ nvmlDev \d+")
_VERSION = re.compile(r"NCCL version \S+")  # the captures come from three NCCL releases; one job runs one


def capture_messages(root: str) -> list[str]:
    """The NCCL INFO/WARN messages (prefix stripped) of the repository's real captures, in file order."""
    out = []
    for folder in _CAPTURES:
        base = os.path.join(root, folder)
        for name in sorted(os.listdir(base)):
            if not name.startswith(("nccl_info__", "net_plugin_")):
                continue
            with open(os.path.join(base, name), encoding="utf-8") as fh:
                for line in fh:
                    m = _NCCL_PREFIX.match(line.rstrip("\n"))
                    if m:
                        out.append(m.group(1))
    return out


def planted_timeout(rank: int) -> str:
    """The one real failure of the hit-dense log: a watchdog timeout on ``rank``."""
    return (
        f"[rank{rank}]:[E304 17:41:12.735149131 ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=52, OpType=ALLREDUCE, NumelIn=4194304, "
        "NumelOut=4194304, Timeout(ms)=600000) ran for 600031 milliseconds before timing out."
    )


def generate_dense(
    path: str, size_mb: int, rank_dir: Optional[str] = None, hosts: int = 128, per_host: int = 8, seed: int = 99, root: str = "."
) -> int:
    """Write about ``size_mb`` MiB of hit-dense log to ``path``: every rank of
    ``hosts`` x ``per_host`` replays the real captures' NCCL lines (its own
    host:pid:tid [dev] prefix, its own rank in the comm lines), ranks
    interleaved a few lines at a time, with one planted watchdog timeout
    (on rank 517) at 60% of the file. With ``rank_dir``, the same lines also
    go to one file per rank there (``rank<N>.log``): the same bytes as a
    directory. Returns the bytes written to ``path``."""
    rng = random.Random(seed)
    msgs = capture_messages(root)
    nranks = hosts * per_host
    target = size_mb * 1024 * 1024
    victim, mark = 517 % nranks, int(target * 0.6)
    cursor = [rng.randrange(len(msgs)) for _ in range(nranks)]
    written = 0
    if rank_dir:
        os.makedirs(rank_dir, exist_ok=True)
        for r in range(nranks):
            open(os.path.join(rank_dir, f"rank{r}.log"), "w").close()
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        while written < target:
            block: list[str] = []
            per_rank: dict = {}
            for _ in range(4000):
                r = rng.randrange(nranks)
                h, d = divmod(r, per_host)
                pid = 20000 + r
                lines = per_rank.setdefault(r, [])
                for _ in range(rng.randrange(1, 6)):
                    msg = msgs[cursor[r] % len(msgs)]
                    cursor[r] += 1
                    msg = _COMM.sub(f"rank {r} nRanks {nranks} nNodes {hosts} localRanks {per_host} localRank {d}", msg)
                    msg = _INIT_LINE.sub(f"rank {r} nranks {nranks} cudaDev {d} nvmlDev {d}", msg)
                    msg = _VERSION.sub("NCCL version 2.27.3+cuda12.9", msg)
                    text = f"gpu-node-{h:03d}:{pid}:{pid + (cursor[r] % 3) * 7} [{d}] {msg}"
                    block.append(text)
                    lines.append(text)
            if mark is not None and written >= mark:
                text = planted_timeout(victim)
                block.append(text)
                per_rank.setdefault(victim, []).append(text)
                mark = None
            chunk = "\n".join(block) + "\n"
            fh.write(chunk)
            written += len(chunk)
            if rank_dir:
                for r, lines in per_rank.items():
                    with open(os.path.join(rank_dir, f"rank{r}.log"), "a", encoding="utf-8", newline="\n") as out:
                        out.write("\n".join(lines) + "\n")
        if mark is not None:  # a tiny size may end before the mark
            text = planted_timeout(victim)
            fh.write(text + "\n")
            written += len(text) + 1
            if rank_dir:
                with open(os.path.join(rank_dir, f"rank{victim}.log"), "a", encoding="utf-8", newline="\n") as out:
                    out.write(text + "\n")
    return written
