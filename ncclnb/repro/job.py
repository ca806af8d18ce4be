"""What a scenario's worker program runs inside: the rank's view of the job.

A worker module (``ncclnb/repro/workers/<name>.py``) is an ordinary training
script cut to the bone, run as ``python -m`` by the runner (or by torchrun).
It ends with ``Job.main(train)``, which

- ties the process to its parent (``PR_SET_PDEATHSIG``) and arms a hard
  deadline (``SIGALRM``, default action), so no rank can outlive the run even
  if the runner is killed with SIGKILL;
- sends the rank's stdout and stderr to its own log when the launcher did not
  (under torchrun);
- calls ``train(job)``; on an exception it prints the traceback as Python
  would, dumps the flight recorder to ``rank<R>.fr.json`` and leaves with
  ``os._exit`` (a normal interpreter exit after a gloo failure often aborts
  with code 134);
- writes ``.ncclnb/rank<R>.pid<P>.exit`` with its exit code, so the runner knows how each
  rank ended even when a launcher sits between them.

The environment carries everything: the usual ``RANK`` / ``WORLD_SIZE`` /
``LOCAL_RANK`` / ``MASTER_*`` variables, and ``NCCLNB_REPRO_*`` for the run
directory, the backend, the process-group timeout and the variant's knobs.
"""

from __future__ import annotations

import datetime
import json
import os
import signal
import socket
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

ENV_DIR = "NCCLNB_REPRO_DIR"
ENV_ARGS = "NCCLNB_REPRO_ARGS"
ENV_BACKEND = "NCCLNB_REPRO_BACKEND"
ENV_TIMEOUT = "NCCLNB_REPRO_TIMEOUT"
ENV_DEADLINE = "NCCLNB_REPRO_DEADLINE"
ENV_PARENT = "NCCLNB_REPRO_PARENT"
ENV_RUN_ID = "NCCLNB_REPRO_RUN_ID"
ENV_OWN_LOG = "NCCLNB_REPRO_OWN_LOG"  # "1": the worker opens its own log (under torchrun)
PR_SET_PDEATHSIG = 1


def die_with_parent(expected_parent: Optional[int] = None) -> None:
    """Linux: have the kernel SIGKILL this process when its parent dies; if the
    parent is already gone (it died before this ran), exit now."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return  # not Linux: the runner's deadline and process-group kill remain
    if expected_parent is not None and os.getppid() != expected_parent:
        os._exit(137)
    if expected_parent is None and not _parent_is_of_this_run():
        os._exit(137)  # the launcher died before the death signal was armed: we are an orphan already


def _parent_is_of_this_run() -> bool:
    """Under a launcher (torchrun), is the parent still a process of this run?
    Checked after the death signal is armed, so no window is left: a parent
    that is gone now means this rank was re-parented to init."""
    run_id = os.environ.get(ENV_RUN_ID)
    if not run_id:
        return True  # not started by the runner: nothing to check
    if not os.path.isdir("/proc/self"):
        return True  # no /proc: the runner's sweep and the alarm remain
    try:
        with open(f"/proc/{os.getppid()}/environ", "rb") as fh:
            return f"{ENV_RUN_ID}={run_id}".encode() in fh.read().split(b"\0")
    except OSError:
        return False  # a parent we may not read (init, another user's reaper) is not one of ours


class _Leave(Exception):
    """Raised by ``job.leave(code)`` to end the rank with that exit code."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


@dataclass
class Job:
    """One rank of a reproduction, as its worker program sees it."""

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    node_rank: int
    backend: str = "gloo"
    timeout_s: float = 5.0
    args: dict = field(default_factory=dict)
    run_dir: str = "."
    device: str = ""  # where this rank's tensors live: cuda:<local_rank> on NCCL, else cpu

    def __post_init__(self):
        if not self.device:
            self.device = f"cuda:{self.local_rank}" if self.backend == "nccl" else "cpu"

    @classmethod
    def from_env(cls, environ=os.environ) -> Job:
        def num(name: str, default: int) -> int:
            value = environ.get(name, "")
            return int(value) if value.strip().lstrip("-").isdigit() else default

        world = num("WORLD_SIZE", 1)
        return cls(
            rank=num("RANK", 0),
            world_size=world,
            local_rank=num("LOCAL_RANK", 0),
            local_world_size=num("LOCAL_WORLD_SIZE", world),
            node_rank=num("GROUP_RANK", num("NODE_RANK", 0)),
            backend=environ.get(ENV_BACKEND, "gloo"),
            timeout_s=float(environ.get(ENV_TIMEOUT, "5") or 5),
            args=json.loads(environ.get(ENV_ARGS, "") or "{}"),
            run_dir=environ.get(ENV_DIR, "."),
        )

    # ---- what workers call -------------------------------------------------
    @property
    def timeout(self) -> datetime.timedelta:
        return datetime.timedelta(seconds=self.timeout_s)

    def arg(self, name: str, default: Any = None) -> Any:
        """The variant's knob ``name`` (see the scenario's JSON)."""
        return self.args.get(name, default)

    def init_process_group(self, rank: Optional[int] = None, world_size: Optional[int] = None, **kwargs):
        """``torch.distributed.init_process_group`` with this run's backend and
        its short timeout (the defaults are 600 s for NCCL's watchdog and
        1800 s for the store). ``rank`` / ``world_size`` override what the
        launcher said, as a framework that computes its own would."""
        import torch.distributed as dist

        kwargs.setdefault("timeout", self.timeout)
        dist.init_process_group(
            self.backend,
            rank=self.rank if rank is None else rank,
            world_size=self.world_size if world_size is None else world_size,
            **kwargs,
        )
        return dist

    def say(self, text: str) -> None:
        """One line in this rank's log, as a training script's print would be."""
        print(text, flush=True)

    def leave(self, code: int) -> None:
        """End this rank now with ``code`` (a crash the scenario provokes)."""
        raise _Leave(code)

    # ---- the harness ---------------------------------------------------------
    @staticmethod
    def main(train: Callable[[Job], Any]) -> None:
        """Run ``train(job)`` as one rank and leave with its exit code; never returns."""
        environ = os.environ
        parent = environ.get(ENV_PARENT)
        die_with_parent(int(parent) if parent and parent.isdigit() else None)
        deadline = environ.get(ENV_DEADLINE, "")
        if deadline.isdigit() and int(deadline) > 0:
            signal.signal(signal.SIGALRM, signal.SIG_DFL)  # dies even while blocked in C++
            signal.alarm(int(deadline))
        job = Job.from_env()
        if environ.get(ENV_OWN_LOG) == "1":
            _redirect_to(os.path.join(job.run_dir, f"rank{job.rank}.log"))
        code = 0
        try:
            train(job)
        except _Leave as leave:
            code = leave.code
        except BaseException:  # the failure the scenario provokes: print it as Python would
            traceback.print_exc()
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        if code != 0 and _initialized():  # a rank that never joined a group has nothing recorded
            _dump_flight_recorder(job)
        elif job.arg("destroy", True):
            _destroy()
        _write_exit(job, code)
        os._exit(code)


def _redirect_to(path: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _dump_flight_recorder(job: Job) -> None:
    """The flight recorder's trace as JSON (torch 2.13 records gloo
    collectives by default), written where the doctor will read it."""
    try:
        import torch

        raw = torch._C._distributed_c10d._dump_fr_trace_json()
    except Exception as exc:  # an older torch or no recorder: say so, keep the exit code
        print(f"[ncclnb-repro] no flight-recorder dump: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        return
    data = raw if isinstance(raw, bytes) else str(raw).encode("utf-8")
    path = os.path.join(job.run_dir, f"rank{job.rank}.fr.json")
    if os.path.exists(path):  # two processes told the same rank: keep both dumps
        path = os.path.join(job.run_dir, f"rank{job.rank}.pid{os.getpid()}.fr.json")
    with open(path, "wb") as fh:
        fh.write(data)


def _initialized() -> bool:
    try:
        import torch.distributed as dist

        return dist.is_available() and dist.is_initialized()
    except Exception:
        return False


def _destroy() -> None:
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()
    except Exception:
        pass


def _write_exit(job: Job, code: int) -> None:
    record = {"rank": job.rank, "pid": os.getpid(), "host": socket.gethostname(), "exit_code": code}
    # in a hidden folder: the doctor reads the run directory and skips dot-folders
    path = os.path.join(job.run_dir, ".ncclnb", f"rank{job.rank}.pid{os.getpid()}.exit")
    try:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(record, fh)
    except OSError:
        pass
