"""The one runner: start a scenario's ranks on 127.0.0.1, watch them, stop
them, and hand their logs to the doctor.

- A free port on 127.0.0.1; short timeouts (the scenario's, a few seconds:
  never torch's 600 s / 1800 s defaults), said in the result's notes.
- Every process starts in its own session, tied to this process with
  ``PR_SET_PDEATHSIG`` and carrying ``NCCLNB_REPRO_RUN_ID``: on a deadline,
  Ctrl-C, a notebook's "interrupt kernel", SIGTERM or SIGHUP the runner kills
  every process group it started, then sweeps ``/proc`` for any process
  still carrying the run id. If the runner itself is SIGKILLed, the kernel
  kills its children, and each rank's own ``SIGALRM`` deadline ends it.
- Each rank's stdout+stderr goes to ``rank<R>.log`` in the run directory
  (kept, its path printed); a failing rank also leaves ``rank<R>.fr.json``,
  its flight-recorder dump.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from .._signals import signals_held, signals_interrupt
from ..errors import path_error
from ..model import Diagnosis, RankExit, ReproResult
from ..collectors.visible import visible_gpu_count
from ..model.words import how_many
from .job import ENV_ARGS, ENV_BACKEND, ENV_DEADLINE, ENV_DIR, ENV_OWN_LOG, ENV_PARENT, ENV_RUN_ID, ENV_TIMEOUT, PR_SET_PDEATHSIG
from .scenario import RECORDED_DIR, Scenario, ScenarioError, Variant

POLL_S = 0.2
LAUNCHER_GRACE_S = 2.0  # a torchrun agent whose ranks all ended waits 300 s at its exit barrier: not us
DEFAULT_TIMEOUTS = "torch's defaults: 600 s for NCCL's watchdog, 1800 s for the store and gloo"
# what a rank inherits from the caller's environment only if the scenario does not set it
_DROP = (
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "NODE_RANK",
    "GROUP_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
    "TORCH_DISTRIBUTED_DEBUG",
    "TORCHELASTIC_RUN_ID",
)

Progress = Callable[[dict], None]


@dataclass
class _Proc:
    popen: subprocess.Popen
    process: int  # index among what the runner started
    rank: Optional[int]  # RANK it was told; None for a launcher
    node: int
    log: str  # relative to the run directory
    killed: bool = False


@dataclass
class _Run:
    scenario: Scenario
    variant: Variant
    backend: str
    nproc: int
    timeout_s: float
    deadline_s: float
    run_dir: Path
    run_id: str
    port: int
    procs: list = field(default_factory=list)
    notes: list = field(default_factory=list)


# --- the public entry ------------------------------------------------------------


def run(
    scenario: Scenario,
    variant: str = "broken",
    *,
    nproc: Optional[int] = None,
    timeout: Optional[float] = None,
    keep: Optional[str] = None,
    backend: str = "auto",
    deadline: Optional[float] = None,
    progress: Optional[Progress] = None,
    diagnose: bool = True,
) -> ReproResult:
    """Run one variant of ``scenario`` and return its :class:`ReproResult`.

    ``timeout``: the ranks' process-group / store timeout in seconds (default
    the scenario's, a few seconds). ``deadline``: when the runner kills what
    is still running (default ``3 x timeout + 15`` s). ``keep``: the run
    directory (default a new temporary one, kept). ``progress`` is called a
    few times a second with ``{"phase", "elapsed", "ranks": [...]}``."""
    var = scenario.variant(variant)
    nproc = _check_nproc(scenario, nproc)
    timeout_s = float(timeout if timeout is not None else scenario.timeout_s)
    if not 0.5 <= timeout_s <= 600:
        raise ScenarioError(f"timeout must be between 0.5 and 600 seconds, got {timeout_s:g}")
    deadline_s = float(deadline if deadline is not None else 3 * timeout_s + 15)
    chosen, why = choose_backend(scenario, nproc, backend)
    run_dir = _run_dir(scenario, variant, keep)
    state = _Run(scenario, var, chosen, nproc, timeout_s, deadline_s, run_dir, run_id=uuid.uuid4().hex, port=free_port())
    if why:
        state.notes.append(why)
    if scenario.launcher != "replay":
        state.notes.append(
            f"Timeouts shortened to {timeout_s:g} s for the process group and the store "
            f"({DEFAULT_TIMEOUTS}), so the failure shows in seconds."
        )
    if var.note:
        state.notes.append(var.note)
    if not scenario.fails_on_cpu and chosen == "gloo" and variant == "broken":
        state.notes.append(
            "This failure itself needs NCCL on GPUs; on gloo the job runs, and what the run "
            "reproduces is the facts that cause it, which the checks catch."
        )
    if chosen == "gloo" and scenario.nccl_signature and variant != "fixed":
        line = nccl_wording(scenario.nccl_signature)
        if line:
            state.notes.append(f"On NCCL the same failure reads: {line}")
    if nproc != scenario.nproc:
        state.notes.append(
            f"Culprit ranks are given for the scenario's {scenario.nproc} ranks; run with {nproc} they are not checked."
        )

    started = time.monotonic()
    if scenario.launcher == "replay":
        exits, completed, deadline_hit = _replay(state)
    else:
        exits, completed, deadline_hit = _launch_and_wait(state, progress)
    seconds = time.monotonic() - started

    diagnosis = None
    if diagnose:
        if progress:
            progress({"phase": "diagnosing", "elapsed": seconds, "ranks": []})
        diagnosis = diagnose_run_dir(run_dir)
    result = ReproResult(
        scenario=scenario.name,
        variant=variant,
        backend=chosen if scenario.launcher != "replay" else "recorded",
        completed=completed,
        seconds=round(seconds, 2),
        run_dir=str(run_dir),
        exits=tuple(exits),
        timeout_s=timeout_s,
        deadline_hit=deadline_hit,
        expected_category=scenario.expected_category,
        culprit_ranks=scenario.culprit_ranks if nproc == scenario.nproc else (),
        diagnosis=diagnosis,
        notes=tuple(state.notes),
    )
    (run_dir / "result.json").write_text(json.dumps(result.to_dict(), indent=2), encoding="utf-8")
    if progress:
        progress({"phase": "done", "elapsed": seconds, "ranks": [], "result": result})
    return result


def _check_nproc(scenario: Scenario, nproc: Optional[int]) -> int:
    if nproc is None:
        return scenario.nproc
    if scenario.launcher == "replay":
        raise ScenarioError(f"{scenario.name} replays a recorded log: --nproc does not apply")
    if not 1 <= nproc <= 64 or nproc % scenario.nodes:
        raise ScenarioError(
            f"--nproc must be between 1 and 64 and a multiple of {scenario.nodes} (the scenario's "
            f"{how_many(scenario.nodes, 'node')}), got {nproc}"
        )
    return nproc


def _run_dir(scenario: Scenario, variant: str, keep: Optional[str]) -> Path:
    if keep:
        path = Path(keep).expanduser()
        try:
            if path.exists() and any(path.iterdir()):
                raise ScenarioError(f"{path}: the run directory must be new or empty")
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # the user's --keep: a file, no permission
            raise path_error(exc, str(path)) from None
    else:
        path = Path(tempfile.mkdtemp(prefix=f"ncclnb-repro-{scenario.name}-{variant}-"))
    (path / ".ncclnb").mkdir(exist_ok=True)
    return path.resolve()


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def choose_backend(scenario: Scenario, nproc: int, backend: str) -> tuple[str, str]:
    """``auto``: NCCL where the scenario can use it and the machine has a GPU
    per rank, gloo otherwise. Returns (backend, why) with why "" when asked for."""
    if backend not in ("auto", "gloo", "nccl"):
        raise ScenarioError(f"backend must be auto, gloo or nccl, got {backend!r}")
    if backend == "nccl" and "nccl" not in scenario.backends:
        raise ScenarioError(f"{scenario.name} runs on {', '.join(scenario.backends)} only")
    if backend != "auto":
        return backend, ""
    if "nccl" in scenario.backends:
        gpus = visible_gpu_count()
        if gpus >= nproc:
            return "nccl", f"Ran on NCCL: {how_many(gpus, 'GPU')} visible for {how_many(nproc, 'rank')}."
        if "gloo" in scenario.backends:
            return "gloo", (f"Ran on gloo: this machine has {how_many(gpus, 'GPU')} and NCCL needs one per rank ({nproc}).")
    return scenario.backends[0], ""


def nccl_wording(signature_id: str) -> str:
    """The first ``hit`` line of a knowledge-base signature's fixture: what
    NCCL prints for the failure a gloo run shows in gloo's words."""
    from ..doctor.kb import fixture_lines

    try:
        for _, mark, text in fixture_lines(signature_id):
            if mark == "hit":
                return " ".join(text.split())
    except (OSError, ValueError):
        pass
    return ""


# --- replay -----------------------------------------------------------------------


def _replay(state: _Run):
    var = state.variant
    if not var.replay:
        raise ScenarioError(f"{state.scenario.name}: variant {var.name!r} names no recorded log to replay")
    src = RECORDED_DIR / var.replay
    shutil.copyfile(src, state.run_dir / "rank0.log")
    state.notes.append(f"Replays a recorded real log ({var.replay}; where it came from is in its first lines): nothing was run.")
    completed = bool(var.completes) if var.completes is not None else var.name != "broken"
    return (
        [
            RankExit(
                process=0,
                rank=0,
                exit_code=0 if completed else 1,
                log="rank0.log",
                last_line=_last_line(state.run_dir / "rank0.log"),
            )
        ],
        completed,
        False,
    )


# --- launching ----------------------------------------------------------------------


def _base_env(state: _Run) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in _DROP}
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = package_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(
        {
            "PYTHONUNBUFFERED": "1",
            "OMP_NUM_THREADS": "1",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(state.port),
            "TORCH_FR_BUFFER_SIZE": env.get("TORCH_FR_BUFFER_SIZE", "2000"),
            ENV_DIR: str(state.run_dir),
            ENV_ARGS: json.dumps(state.variant.args),
            ENV_BACKEND: state.backend,
            ENV_TIMEOUT: f"{state.timeout_s:g}",
            ENV_DEADLINE: str(int(state.deadline_s) + 10),
            ENV_RUN_ID: state.run_id,
        }
    )
    env.update(state.variant.env)
    return env


def _preexec(parent: int):
    def tie_to_parent():
        try:
            import ctypes

            ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except Exception:
            pass
        if os.getppid() != parent:  # the runner died between fork and here
            os._exit(137)

    return tie_to_parent


def _spawn(state: _Run, argv: list, env: dict, log: str) -> subprocess.Popen:
    if state.scenario.launcher == "processes":  # a rank's parent is the runner (under torchrun, the agent)
        env = dict(env, **{ENV_PARENT: str(os.getpid())})
    with open(state.run_dir / log, "ab") as out:
        return subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=state.run_dir,
            start_new_session=True,
            preexec_fn=_preexec(os.getpid()),
            close_fds=True,
        )


def _start_processes(state: _Run) -> None:
    sc, var = state.scenario, state.variant
    per_node = state.nproc // sc.nodes
    base = _base_env(state)
    wanted = var.start if var.start is not None else range(state.nproc)
    seen: dict[int, int] = {}
    for i in wanted:
        if not 0 <= i < state.nproc:
            continue
        node = i // per_node
        env = dict(
            base,
            RANK=str(i),
            WORLD_SIZE=str(state.nproc),
            LOCAL_RANK=str(i % per_node),
            LOCAL_WORLD_SIZE=str(per_node),
            NODE_RANK=str(node),
            GROUP_RANK=str(node),
        )
        env.update(var.env_by_node.get(str(node), {}))
        env.update(var.rank_env.get(str(i), {}))
        rank = _int(env.get("RANK"))
        seen[rank] = seen.get(rank, 0) + 1
        log = f"rank{rank}.log" if seen[rank] == 1 else f"rank{rank}.proc{i}.log"
        popen = _spawn(state, [sys.executable, "-m", sc.worker], env, log)
        state.procs.append(_Proc(popen, i, rank, node, log))


def _start_torchrun(state: _Run) -> None:
    sc, var = state.scenario, state.variant
    per_node = state.nproc // sc.nodes
    base = dict(_base_env(state), **{ENV_OWN_LOG: "1"})
    for node in range(sc.nodes):
        env = dict(base, **var.env_by_node.get(str(node), {}))
        argv = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nnodes",
            str(sc.nodes),
            "--nproc-per-node",
            str(per_node),
            "--node-rank",
            str(node),
            "--master-addr",
            "127.0.0.1",
            "--master-port",
            str(state.port),
            "--max-restarts",
            "0",
            "--monitor-interval",
            "0.2",
            "-m",
            sc.worker,
        ]
        popen = _spawn(state, argv, env, f"node{node}.torchrun.log")
        state.procs.append(_Proc(popen, node, None, node, f"node{node}.torchrun.log"))


def _launch_and_wait(state: _Run, progress: Optional[Progress]):
    deadline_hit = False
    with signals_interrupt():
        try:
            if state.scenario.launcher == "torchrun":
                _start_torchrun(state)
            else:
                _start_processes(state)
            started = time.monotonic()
            grace_since = None
            while True:
                alive = [p for p in state.procs if p.popen.poll() is None]
                if progress:
                    progress({"phase": "running", "elapsed": time.monotonic() - started, "ranks": _rank_status(state)})
                if not alive:
                    break
                if state.scenario.launcher == "torchrun" and _torchrun_ranks_ended(state):
                    grace_since = grace_since or time.monotonic()
                    if time.monotonic() - grace_since > LAUNCHER_GRACE_S:
                        state.notes.append(
                            "Every rank had ended; the runner stopped the torchrun agent still "
                            "waiting at its exit barrier (torchrun waits up to 300 s there)."
                        )
                        break
                if time.monotonic() - started > state.deadline_s:
                    deadline_hit = True
                    state.notes.append(f"Deadline: still running after {state.deadline_s:g} s; the runner killed what was left.")
                    break
                time.sleep(POLL_S)
        finally:
            _kill_all_undisturbed(state)
    exits = _exits(state)
    expected = set(range(state.nproc))
    finished = {e.rank for e in exits if e.rank is not None and e.exit_code == 0}
    completed = not deadline_hit and expected <= finished and all(e.exit_code == 0 for e in exits if e.rank is not None)
    return exits, completed, deadline_hit


def _kill_all_undisturbed(state: _Run) -> None:
    """Kill every process the run started, marking the ranks still running
    as killed; Ctrl-C, SIGTERM and SIGHUP held back until it is done."""
    with signals_held():
        for p in state.procs:
            if p.popen.poll() is None:
                p.killed = True
        _kill_processes([p.popen for p in state.procs], state.run_id)


def stop_processes(popens: list, run_id: str) -> None:
    """Kill every process group ``popens`` lead and reap them, then any stray
    process that carries ``run_id`` (one that started its own session), with
    Ctrl-C, SIGTERM and SIGHUP held back until it is done (a second Ctrl-C
    must not cut the cleanup short)."""
    with signals_held():
        _kill_processes(popens, run_id)


def _kill_processes(popens: list, run_id: str) -> None:
    for p in popens:
        if p.poll() is None:
            _killpg(p.pid, signal.SIGKILL)
    for p in popens:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        _killpg(p.pid, signal.SIGKILL)  # children left in the group after the leader exited
    for pid in processes_of_run(run_id):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def processes_of_run(run_id: str, proc_root: str = "/proc") -> list[int]:
    """PIDs of live processes whose environment carries ``run_id`` (Linux)."""
    needle = f"{ENV_RUN_ID}={run_id}".encode()
    found = []
    try:
        pids = [int(d) for d in os.listdir(proc_root) if d.isdigit()]
    except OSError:
        return found
    for pid in pids:
        if pid == os.getpid():
            continue
        try:
            with open(f"{proc_root}/{pid}/environ", "rb") as fh:
                if needle in fh.read().split(b"\0"):
                    with open(f"{proc_root}/{pid}/stat", "rb") as st:
                        if st.read().rsplit(b")", 1)[-1].split()[0] == b"Z":
                            continue  # a zombie holds nothing; its parent reaps it
                    found.append(pid)
        except OSError:
            continue
    return found


# --- reading what happened ------------------------------------------------------------


def _exit_markers(run_dir: Path) -> dict:
    """(rank, pid) -> exit code, from the files ranks write as they leave."""
    out = {}
    for path in (run_dir / ".ncclnb").glob("*.exit"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            out[(int(data["rank"]), int(data["pid"]))] = int(data["exit_code"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return out


def _torchrun_ranks_ended(state: _Run) -> bool:
    """Every node is done: its agent exited, or every one of its ranks wrote its exit."""
    per_node = state.nproc // state.scenario.nodes
    ended = {rank for rank, _ in _exit_markers(state.run_dir)}
    for p in state.procs:
        if p.popen.poll() is None and not set(range(p.node * per_node, (p.node + 1) * per_node)) <= ended:
            return False
    return True


def _exits(state: _Run) -> list[RankExit]:
    markers = _exit_markers(state.run_dir)
    exits = []
    if state.scenario.launcher == "torchrun":
        per_node = state.nproc // state.scenario.nodes
        by_rank = {}
        for (rank, _pid), code in sorted(markers.items()):
            by_rank.setdefault(rank, code)
        for rank in range(state.nproc):
            log = f"rank{rank}.log"
            exits.append(
                RankExit(
                    process=len(exits),
                    rank=rank,
                    exit_code=by_rank.get(rank),
                    log=log,
                    node=rank // per_node,
                    last_line=_last_line(state.run_dir / log),
                )
            )
        for p in state.procs:
            exits.append(
                RankExit(
                    process=len(exits),
                    rank=None,
                    exit_code=None if p.killed else p.popen.returncode,
                    log=p.log,
                    node=p.node,
                    last_line=_last_line(state.run_dir / p.log),
                )
            )
        return exits
    for p in state.procs:
        code = None if p.killed else p.popen.returncode
        exits.append(
            RankExit(
                process=p.process,
                rank=p.rank,
                exit_code=code,
                log=p.log,
                node=p.node,
                last_line=_last_line(state.run_dir / p.log),
            )
        )
    return exits


def _rank_status(state: _Run) -> list[dict]:
    """What each rank is doing now, for live progress."""
    rows = []
    if state.scenario.launcher == "torchrun":
        markers = {rank: code for (rank, _), code in _exit_markers(state.run_dir).items()}
        for rank in range(state.nproc):
            path = state.run_dir / f"rank{rank}.log"
            state_name = "exited" if rank in markers else ("running" if path.exists() else "starting")
            rows.append({"rank": rank, "state": state_name, "exit_code": markers.get(rank), "last_line": _last_line(path)})
        return rows
    for p in state.procs:
        code = p.popen.returncode
        rows.append(
            {
                "rank": p.rank,
                "process": p.process,
                "state": "running" if code is None else "exited",
                "exit_code": code,
                "last_line": _last_line(state.run_dir / p.log),
            }
        )
    return rows


def _last_line(path: Path, limit: int = 4096) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - limit))
            tail = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    for line in reversed(tail.splitlines()):
        line = line.strip()
        if line and not line.startswith("frame #"):
            return line[:300]
    return ""


def _int(value) -> Optional[int]:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


# --- the doctor on the run directory -----------------------------------------------------


def diagnose_run_dir(run_dir: Path) -> Diagnosis:
    """The doctor on every log and dump of the run; when the ranks wrote a
    cluster report (``report.json``), the checks on it too. A doctor error
    leads when it exists; otherwise the checks' findings lead."""
    from ..checks import SEVERITY_ORDER, check
    from ..doctor import DoctorInputError, diagnose
    from ..recorded import load_facts

    logs = [
        str(p)
        for p in sorted(run_dir.iterdir())
        if p.is_file() and not p.name.startswith(".") and p.name not in ("report.json", "result.json")
    ]
    try:
        diag = diagnose(*logs) if logs else Diagnosis()
    except DoctorInputError:  # no rank wrote a line (a run that passed in silence): nothing for the doctor
        diag = Diagnosis()
    report = run_dir / "report.json"
    if not report.is_file():
        return diag
    checked = sorted(check(load_facts(str(report))), key=lambda f: (SEVERITY_ORDER[f.severity], -f.confidence))
    doctor_leads = diag.top is not None and diag.top.severity == "error" and diag.top.category != "unknown"
    findings = diag.findings + tuple(checked) if doctor_leads else tuple(checked) + diag.findings
    return Diagnosis(findings=findings, ranks=diag.ranks, sources=diag.sources + (str(report),), lines_read=diag.lines_read)
