"""Generate REAL flight-recorder dumps with torch + gloo across real processes.

    python tests/doctor/fr/make_dumps.py                # every scenario into tests/doctor/fr/
    python tests/doctor/fr/make_dumps.py --out DIR healthy desync

Each scenario starts WORLD_SIZE worker processes (this file, ``--worker``) on
127.0.0.1 with a free port and a short gloo timeout. Every worker runs the same
few collectives, then the scenario's twist, then writes
``torch._C._distributed_c10d._dump_fr_trace_json()`` to ``rank<N>.json``: after
the collectives, or in the ``except`` handler once gloo gave up. Workers leave
with ``os._exit`` because a normal interpreter exit after a gloo failure often
aborts (code 134). The parent kills whatever is still running when time is up.

The dumps are written byte for byte as torch returned them (one line of JSON,
a few KB): the doctor meets exactly these files. With ``--pickle`` each worker
also writes ``rank<N>.pkl``, ``torch._C._distributed_c10d._dump_fr_trace()``
taken at the same moment: the pickled form torch writes by default (on a
watchdog timeout with TORCH_NCCL_DUMP_ON_TIMEOUT), with stack frames.

    python tests/doctor/fr/make_dumps.py --pickle --out tests/doctor/fr/pickled desync
"""

from __future__ import annotations

import argparse
import datetime
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

WORLD_SIZE = 3
TIMEOUT_S = 5  # gloo collective timeout; also the slow rank's excuse
SCENARIOS = ("healthy", "desync", "size_mismatch", "slow_rank", "late_rank")
HERE = Path(__file__).resolve().parent


def _run_scenario(name: str, rank: int, world_size: int) -> None:
    """The collectives of one scenario, as rank ``rank`` runs them."""
    import torch
    import torch.distributed as dist

    t = torch.ones(16)
    # The common prefix every scenario shares: seq 1..3 of the default group.
    dist.all_reduce(t)
    dist.broadcast(t, src=0)
    dist.all_gather([torch.zeros(16) for _ in range(world_size)], t)

    if name == "healthy":
        dist.all_reduce(torch.ones(8))
        dist.barrier()
    elif name == "desync":
        # Rank 1 takes another code path: a broadcast where the others reduce.
        if rank == 1:
            dist.broadcast(torch.ones(8), src=0)
        else:
            dist.all_reduce(torch.ones(8))
        dist.barrier()
    elif name == "size_mismatch":
        # Rank 2 reduces a tensor of another length (a shape bug on one rank).
        dist.all_reduce(torch.ones(8 if rank != 2 else 12))
        dist.barrier()
    elif name in ("slow_rank", "late_rank"):
        dist.all_reduce(torch.ones(8))
        if rank == 0:
            # Rank 0 "saves a checkpoint" for longer than the others wait.
            time.sleep(TIMEOUT_S + 3)
            if name == "slow_rank":
                # The dump is taken while rank 0 is still busy: it never
                # issued the last collective (what a dump-on-timeout signal
                # from the other ranks would catch on a real cluster).
                raise _DumpNow()
        dist.all_reduce(torch.ones(8))
    else:
        raise SystemExit(f"unknown scenario {name!r}")


class _DumpNow(Exception):
    """Raised by a scenario to take the dump at that point."""


def _worker(name: str, rank: int, world_size: int, port: int, out: Path) -> None:
    import torch
    import torch.distributed as dist

    code = 0
    try:
        dist.init_process_group(
            "gloo",
            init_method=f"tcp://127.0.0.1:{port}",
            rank=rank,
            world_size=world_size,
            timeout=datetime.timedelta(seconds=TIMEOUT_S),
        )
        _run_scenario(name, rank, world_size)
    except _DumpNow:
        code = 0
    except Exception as exc:  # the failure the scenario provokes
        print(f"rank {rank}: {type(exc).__name__}: {str(exc)[:300]}", file=sys.stderr, flush=True)
        code = 1
    raw = torch._C._distributed_c10d._dump_fr_trace_json()
    pickled = torch._C._distributed_c10d._dump_fr_trace() if os.environ.get("NCCLNB_FR_PICKLE") == "1" else None
    (out / f"rank{rank}.json").write_bytes(raw if isinstance(raw, bytes) else raw.encode())
    if pickled is not None:
        (out / f"rank{rank}.pkl").write_bytes(pickled)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(name: str, out_root: Path, world_size: int = WORLD_SIZE, limit_s: float = 60.0, pickle: bool = False) -> dict[int, int]:
    """Run scenario ``name`` and write ``out_root/name/rank<N>.json`` (and
    ``rank<N>.pkl`` with ``pickle``).

    Returns each rank's exit code (-9 for a worker killed at ``limit_s``).
    """
    out = out_root / name
    out.mkdir(parents=True, exist_ok=True)
    for old in [*out.glob("rank*.json"), *out.glob("rank*.pkl")]:
        old.unlink()
    port = _free_port()
    env = dict(os.environ)
    env["TORCH_FR_BUFFER_SIZE"] = "2000"  # explicit, though gloo records by default in 2.13
    env.pop("TORCH_DISTRIBUTED_DEBUG", None)
    env["NCCLNB_FR_PICKLE"] = "1" if pickle else "0"
    procs = [
        subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", name, str(r), str(world_size), str(port), str(out)],
            env=env,
            start_new_session=True,
        )
        for r in range(world_size)
    ]
    deadline = time.monotonic() + limit_s
    codes: dict[int, int] = {}
    try:
        for r, p in enumerate(procs):
            try:
                codes[r] = p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                codes[r] = -9
    finally:
        for p in procs:  # kill only what this run started, by process group
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
    return codes


def main(argv: list[str] | None = None) -> int:
    """Command line: generate the named scenarios (all by default)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--worker":
        name, rank, ws, port, out = argv[1:6]
        _worker(name, int(rank), int(ws), int(port), Path(out))
        return 0  # not reached
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE)
    ap.add_argument("--pickle", action="store_true", help="also write the pickled dump, rank<N>.pkl")
    ap.add_argument("scenarios", nargs="*", default=list(SCENARIOS))
    args = ap.parse_args(argv)
    for name in args.scenarios:
        t0 = time.monotonic()
        codes = run(name, args.out, pickle=args.pickle)
        print(f"{name}: exit codes {codes} in {time.monotonic() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
