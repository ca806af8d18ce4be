"""Start one worker process per rank of a real gloo job on 127.0.0.1 and
collect what each wrote (``rank<R>.json``); shared by the guard tests."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Mapping, Sequence

DEADLINE_S = 90


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(worker: Path, args: Sequence[str], world: int, out: Path, env: Mapping[str, str] = None) -> dict[int, dict]:
    """Run ``python WORKER ARGS... RANK WORLD PORT OUT`` for every rank, wait
    (killing every process group they made if the deadline passes), return
    {rank: results} with each rank's last log lines (``_log``) and exit code
    (``_rc``)."""
    port = str(free_port())
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1") if env is None else dict(env)
    procs = []
    try:
        for rank in range(world):
            with open(out / f"rank{rank}.log", "wb") as log:
                procs.append(
                    subprocess.Popen(
                        [sys.executable, str(worker), *args, str(rank), str(world), port, str(out)],
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        env=env,
                        start_new_session=True,
                    )
                )
        end = time.monotonic() + DEADLINE_S
        for p in procs:
            p.wait(timeout=max(0.1, end - time.monotonic()))
    except subprocess.TimeoutExpired:
        pass
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
    results = {}
    for rank in range(world):
        path = out / f"rank{rank}.json"
        logs = (out / f"rank{rank}.log").read_text(errors="replace")[-3000:]
        assert path.exists(), f"rank {rank} wrote no result; its output:\n{logs}"
        results[rank] = json.loads(path.read_text())
        results[rank]["_log"] = logs
        results[rank]["_rc"] = procs[rank].returncode
    return results
