"""No reproduction leaves a process behind: real runners, real ranks, real signals.

Each test starts the runner in its own session (``ncclnb repro run``, or a
small ``python -c`` driver of ``ncclnb.reproduce()``: ``USE_CLI``), waits
until the scenario's ranks are alive and inside their job, signals the
runner, and then scans ``/proc`` itself for any process whose environment
carries ``NCCLNB_REPRO_DIR=<this test's run directory>`` (and a run id).
Zombies hold nothing and are not counted.

The scenarios are run with a long store / process-group timeout so that the
ranks would live far longer than the checks wait: a rank that is gone in
time was killed by the runner (or, when the runner itself is SIGKILLed, by
the kernel through ``PR_SET_PDEATHSIG``), never by ending on its own.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from ncclnb.repro import processes_of_run

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and PR_SET_PDEATHSIG are Linux")

REPO = Path(__file__).resolve().parents[2]
USE_CLI = True  # False: drive ncclnb.reproduce() through `python -c` instead (one line)
LONG_TIMEOUT = 60  # s: ranks left alone would wait this long, far beyond every check below
READY_S = 45  # s: how long the ranks may take to start (torch imports on 2 cores)
DRIVER_EXIT_S = 15  # s: the runner ends this soon after SIGINT / SIGTERM / SIGHUP
GONE_S = 10  # s: every rank is gone this soon after the runner ended
GONE_AFTER_KILL_S = 15  # s: the same when the runner was SIGKILLed (PDEATHSIG)

# rendezvous_incomplete, broken: WORLD_SIZE=8 but only ranks 0-3 start; they wait for the store
PLAIN = dict(name="rendezvous_incomplete", fixed=False, ranks=4, banner="joining")
# rank_beyond_world_size, fixed: two torchrun "nodes" of 4 ranks that train
TORCHRUN = dict(name="rank_beyond_world_size", fixed=True, ranks=8, banner="Initializing distributed")

_DRIVER = (
    "import sys, ncclnb; "
    "ncclnb.reproduce(sys.argv[1], fixed=sys.argv[2] == 'fixed', timeout=float(sys.argv[3]), keep=sys.argv[4])"
)


# a notebook's "interrupt kernel": the runner's process lives on after the interrupt, so nothing
# but the runner's own kill and /proc sweep can end the ranks (no PR_SET_PDEATHSIG help). This one
# stays a `python -c` driver whatever USE_CLI says: it is the in-process (notebook) case.
_KERNEL = (
    "import sys, time, ncclnb\n"
    "try:\n"
    "    ncclnb.reproduce(sys.argv[1], fixed=sys.argv[2] == 'fixed', timeout=float(sys.argv[3]), "
    "keep=sys.argv[4])\n"
    "except KeyboardInterrupt:\n"
    "    print('interrupted', flush=True)\n"
    "    time.sleep(120)\n"
)


def runner_argv(name: str, *, fixed: bool, timeout: float, keep: Path) -> list:
    if USE_CLI:
        return [
            sys.executable,
            "-m",
            "ncclnb",
            "repro",
            "run",
            name,
            *(["--fixed"] if fixed else []),
            "--timeout",
            str(timeout),
            "--keep",
            str(keep),
        ]
    return [sys.executable, "-c", _DRIVER, name, "fixed" if fixed else "broken", str(timeout), str(keep)]


# --- /proc, read by the test itself ------------------------------------------------------


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat", "rb") as fh:
        return fh.read().rsplit(b")", 1)[-1].split()[0].decode()


def repro_processes(run_dir: Path) -> dict:
    """pid -> command line of every live (non-zombie) process whose environment
    says it belongs to the run in ``run_dir``."""
    want_dir = f"NCCLNB_REPRO_DIR={run_dir}".encode()
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        pid = int(entry)
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                env = fh.read().split(b"\0")
            if want_dir not in env or not any(v.startswith(b"NCCLNB_REPRO_RUN_ID=") for v in env):
                continue
            if _state(pid) == "Z":
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                found[pid] = fh.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except (OSError, IndexError):
            continue  # gone meanwhile, or not ours to read
    return found


def _is_agent(cmdline: str) -> bool:
    return "torch.distributed.run" in cmdline


def _torch_loaded(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/maps", "rb") as fh:
            return b"libtorch" in fh.read()
    except OSError:
        return False


def _describe(procs: dict) -> str:
    return "\n".join(f"  {pid} [{_safe_state(pid)}] {cmd}" for pid, cmd in sorted(procs.items())) or "  (none)"


def _safe_state(pid: int) -> str:
    try:
        return _state(pid)
    except (OSError, IndexError):
        return "?"


def _tail(path: Path, n: int = 2000) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-n:]
    except OSError:
        return "(no file)"


def _markers(run_dir: Path) -> list:
    out = []
    for path in (run_dir / ".ncclnb").glob("*.exit"):
        try:
            out.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return out


# --- one run: start, wait until its ranks are in their job, signal, check ----------------------


class RunnerUnderTest:
    def __init__(self, tmp_path: Path, scenario: dict, kernel: bool = False):
        self.scenario = scenario
        self.run_dir = (tmp_path / "run").resolve()
        self.out = tmp_path / "runner.out"
        if kernel:
            argv = [
                sys.executable,
                "-c",
                _KERNEL,
                scenario["name"],
                "fixed" if scenario["fixed"] else "broken",
                str(LONG_TIMEOUT),
                str(self.run_dir),
            ]
        else:
            argv = runner_argv(scenario["name"], fixed=scenario["fixed"], timeout=LONG_TIMEOUT, keep=self.run_dir)
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        with open(self.out, "wb") as out:
            self.popen = subprocess.Popen(
                argv, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    def context(self) -> str:
        logs = "\n".join(f"--- {p.name}\n{_tail(p, 600)}" for p in sorted(self.run_dir.glob("*.log")))
        return f"runner output:\n{_tail(self.out)}\n{logs}"

    def wait_until_ranks_run(self) -> dict:
        """Every rank alive, past its banner (inside its job: PDEATHSIG and deadline armed)
        and with torch loaded (on its way into, or blocked in, the process group's C++)."""
        ranks, banner = self.scenario["ranks"], self.scenario["banner"]
        end = time.monotonic() + READY_S
        while time.monotonic() < end:
            assert self.popen.poll() is None, f"the runner ended before its ranks ran\n{self.context()}"
            logs = [self.run_dir / f"rank{r}.log" for r in range(ranks)]
            if all(banner in _tail(p, 100_000) for p in logs):
                procs = repro_processes(self.run_dir)
                in_torch = [pid for pid, cmd in procs.items() if not _is_agent(cmd) and _torch_loaded(pid)]
                if len(in_torch) >= ranks:
                    return procs
            time.sleep(0.1)
        pytest.fail(
            f"the ranks did not all start within {READY_S} s\n{_describe(repro_processes(self.run_dir))}\n{self.context()}"
        )

    def assert_none_left(self, within: float) -> None:
        end = time.monotonic() + within
        left = repro_processes(self.run_dir)
        while left and time.monotonic() < end:
            time.sleep(0.1)
            left = repro_processes(self.run_dir)
        assert not left, f"orphans {within:g} s after the runner ended:\n{_describe(left)}\n{self.context()}"

    def assert_no_rank_finished(self) -> None:
        """No rank ran its job to the end: they were killed, not left to finish."""
        done = [m for m in _markers(self.run_dir) if m.get("exit_code") == 0]
        assert not done, f"ranks finished their job after the signal: {done}\n{self.context()}"

    def cleanup(self) -> None:
        """Whatever a failed check left behind: never leak processes from the test itself."""
        if self.popen.poll() is None:
            try:
                os.killpg(self.popen.pid, signal.SIGKILL)
            except OSError:
                pass
            self.popen.wait()
        for pid in repro_processes(self.run_dir):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


@pytest.fixture
def start_runner(tmp_path):
    started = []

    def start(scenario: dict, kernel: bool = False) -> RunnerUnderTest:
        runner = RunnerUnderTest(tmp_path, scenario, kernel)
        started.append(runner)
        return runner

    yield start
    for runner in started:
        runner.cleanup()


def _interrupt_and_check(runner: RunnerUnderTest, sig: int) -> None:
    runner.wait_until_ranks_run()
    assert not [m for m in _markers(runner.run_dir) if m.get("exit_code") == 0], "a rank ended before the signal"
    os.kill(runner.popen.pid, sig)
    try:
        runner.popen.wait(timeout=DRIVER_EXIT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(
            f"the runner still runs {DRIVER_EXIT_S} s after {signal.Signals(sig).name}\n"
            f"{_describe(repro_processes(runner.run_dir))}\n{runner.context()}"
        )
    runner.assert_none_left(GONE_S)
    runner.assert_no_rank_finished()
    assert not (runner.run_dir / "result.json").exists(), "the run was meant to be interrupted, it completed"


# --- the tests ----------------------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_signal_to_runner_leaves_no_rank(start_runner, sig):
    runner = start_runner(PLAIN)
    _interrupt_and_check(runner, sig)


def test_sigkill_of_runner_still_kills_every_rank(start_runner):
    """No cleanup code runs: the kernel's PR_SET_PDEATHSIG must end the ranks
    (their own SIGALRM deadline is minutes away with this timeout)."""
    runner = start_runner(PLAIN)
    runner.wait_until_ranks_run()
    os.kill(runner.popen.pid, signal.SIGKILL)
    runner.popen.wait(timeout=5)
    runner.assert_none_left(GONE_AFTER_KILL_S)
    runner.assert_no_rank_finished()


def test_sigkill_of_torchrun_runner_kills_agents_and_their_workers(start_runner):
    """The chain: the runner's death kills each agent (its PDEATHSIG), each agent's
    death kills its workers (theirs, set by Job.main), with no cleanup code at all."""
    runner = start_runner(TORCHRUN)
    runner.wait_until_ranks_run()
    os.kill(runner.popen.pid, signal.SIGKILL)
    runner.popen.wait(timeout=5)
    runner.assert_none_left(GONE_AFTER_KILL_S)
    runner.assert_no_rank_finished()


def test_sigint_to_torchrun_run_leaves_no_agent_and_no_worker(start_runner):
    runner = start_runner(TORCHRUN)
    alive = runner.wait_until_ranks_run()
    agents = [pid for pid, cmd in alive.items() if _is_agent(cmd)]
    workers = [pid for pid, cmd in alive.items() if not _is_agent(cmd) and "ncclnb.repro.workers." in cmd]
    assert len(agents) == 2 and len(workers) == 8, _describe(alive)
    _interrupt_and_check(runner, signal.SIGINT)


def test_processes_of_run_finds_a_live_process_and_not_a_dead_one():
    run_id = uuid.uuid4().hex
    env = dict(os.environ, NCCLNB_REPRO_RUN_ID=run_id)
    child = subprocess.Popen(["sleep", "30"], env=env)
    try:
        end = time.monotonic() + 10
        while child.pid not in processes_of_run(run_id) and time.monotonic() < end:
            time.sleep(0.02)  # between fork and exec the child still has our environment
        assert processes_of_run(run_id) == [child.pid]
        assert processes_of_run(run_id[:-1]) == [], "a run id must match exactly, not as a prefix"
        assert processes_of_run(uuid.uuid4().hex) == []

        child.kill()
        end = time.monotonic() + 10
        while _safe_state(child.pid) != "Z" and time.monotonic() < end:
            time.sleep(0.02)
        assert _safe_state(child.pid) == "Z"
        assert processes_of_run(run_id) == [], "a zombie is not a live process of the run"
        child.wait()
        assert processes_of_run(run_id) == []
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


@pytest.mark.parametrize("scenario", [PLAIN, TORCHRUN], ids=["processes", "torchrun"])
def test_interrupted_kernel_that_lives_on_is_left_with_no_rank(start_runner, scenario):
    """The runner's process survives the interrupt (a notebook kernel does): every
    rank, agent and torchrun worker must be gone while it still runs."""
    runner = start_runner(scenario, kernel=True)
    runner.wait_until_ranks_run()
    os.kill(runner.popen.pid, signal.SIGINT)
    end = time.monotonic() + DRIVER_EXIT_S
    while "interrupted" not in _tail(runner.out) and time.monotonic() < end:
        assert runner.popen.poll() is None, f"the kernel died of the interrupt\n{runner.context()}"
        time.sleep(0.1)
    assert "interrupted" in _tail(runner.out), f"reproduce() did not return from the interrupt\n{runner.context()}"
    runner.assert_none_left(GONE_S)
    assert runner.popen.poll() is None, "the kernel must still be alive: only the runner's cleanup was tested"
    runner.assert_no_rank_finished()


def test_sigkill_of_runner_while_torchrun_workers_start_leaves_no_worker(tmp_path):
    """The runner dies the moment torchrun's first workers appear, before
    they reach Job.main: the workers find their launcher gone and leave."""
    run_dir = (tmp_path / "run").resolve()
    argv = runner_argv("rank_beyond_world_size", fixed=True, timeout=60, keep=run_dir)
    with open(tmp_path / "out", "wb") as out:
        proc = subprocess.Popen(argv, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        end = time.monotonic() + 60
        while time.monotonic() < end:
            if any(not _is_agent(c) for c in repro_processes(run_dir).values()):
                break
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        end = time.monotonic() + 20
        while repro_processes(run_dir) and time.monotonic() < end:
            time.sleep(0.2)
        left = repro_processes(run_dir)
        assert not left, f"left running: {_describe(left)}"
    finally:
        for pid in repro_processes(run_dir):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
