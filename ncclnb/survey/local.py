"""``ncclnb survey --local --nproc G``: the survey on one machine with no
launcher. Starts G ranks (``python -m ncclnb survey``) on 127.0.0.1 with a
free port, with the repro runner's process handling: each rank in its own
session, tied to this process by ``PR_SET_PDEATHSIG``, carrying a run id;
on the deadline, Ctrl-C, SIGTERM or SIGHUP every process group is killed
and ``/proc`` is swept for anything still carrying the run id."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Optional, TextIO

from .._signals import signals_interrupt
from ..errors import path_error
from ..repro.job import ENV_RUN_ID
from ..repro.runner import _DROP, _preexec, free_port, stop_processes
from .gather import SurveyUsageError

POLL_S = 0.1


def run_local(
    out_dir: str,
    nproc: int,
    *,
    timeout: float = 120.0,
    err: Optional[TextIO] = None,
    link_test: bool = True,
    sizes: Optional[tuple] = None,
    iters: Optional[int] = None,
) -> int:
    """Start ``nproc`` survey ranks on this machine and wait for them; rank 0
    writes ``out_dir/report.json`` and prints the verdict (its stdout is this
    process's). ``link_test``, ``sizes`` ((min, max, factor) bytes) and
    ``iters`` go to every rank as ``--no-link-test``, ``--sizes`` and
    ``--iters``. Returns rank 0's exit status (1 if it did not end normally)."""
    err = err or sys.stderr
    if not 1 <= nproc <= 64:
        raise SurveyUsageError(f"--nproc must be between 1 and 64, got {nproc}")
    if not 1 <= timeout <= 3600:
        raise SurveyUsageError(f"--timeout must be between 1 and 3600 seconds, got {timeout:g}")
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as exc:  # the user's --out: a file, no permission
        raise path_error(exc, out_dir) from None
    run_id = uuid.uuid4().hex
    env = {k: v for k, v in os.environ.items() if k not in _DROP and not k.startswith(("SLURM_", "OMPI_", "PMI"))}
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = package_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(
        {
            "PYTHONUNBUFFERED": "1",
            "OMP_NUM_THREADS": "1",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(free_port()),
            "WORLD_SIZE": str(nproc),
            "LOCAL_WORLD_SIZE": str(nproc),
            "NODE_RANK": "0",
            ENV_RUN_ID: run_id,
        }
    )
    argv = [sys.executable, "-m", "ncclnb", "survey", "--out", os.path.abspath(out_dir), "--timeout", f"{timeout:g}"]
    if not link_test:
        argv.append("--no-link-test")
    if sizes is not None:
        argv += ["--sizes", ":".join(str(int(x)) for x in sizes)]
    if iters is not None:
        argv += ["--iters", str(int(iters))]
    procs: list = []
    deadline = 4 * timeout + 45  # past each rank's own watchdog (4 x timeout + 30 s)
    with signals_interrupt():
        try:
            for rank in range(nproc):
                procs.append(
                    subprocess.Popen(
                        argv,
                        env=dict(env, RANK=str(rank), LOCAL_RANK=str(rank)),
                        stdin=subprocess.DEVNULL,
                        stdout=None if rank == 0 else subprocess.DEVNULL,
                        start_new_session=True,
                        preexec_fn=_preexec(os.getpid()),
                        close_fds=True,
                    )
                )
            started = time.monotonic()
            while any(p.poll() is None for p in procs) and time.monotonic() - started < deadline:
                time.sleep(POLL_S)
        finally:
            stop_processes(procs, run_id)
    code = procs[0].returncode if procs else None
    if code in (0, 1):
        return code
    print(f"ncclnb survey: rank 0 ended with status {code} before it could write the report", file=err)
    return 1
