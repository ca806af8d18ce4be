"""`ncclnb ... | head -1`: a reader that closes the pipe early ends the command
quietly, like other Unix tools (exit 0, nothing on stderr), and keeps the exit
status a gate asked for (--fail-on). Real processes, real pipes."""

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

SIGNATURES = REPO / "ncclnb" / "doctor" / "signatures"


def _env(**extra):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    for name in ("NO_COLOR", "FORCE_COLOR", "COLUMNS"):
        env.pop(name, None)
    env.update(extra)
    return env


def run_into_closed_pipe(*args, stdin=None):
    """Run ``python -m ncclnb ARGS`` with stdout a pipe whose reading end is
    already closed: its first write fails with EPIPE, every time."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "ncclnb", *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            input=stdin,
            env=_env(),
            cwd=REPO,
            timeout=120,
        )
    finally:
        os.close(write_end)
    return proc.returncode, proc.stderr.decode("utf-8", "replace")


@pytest.mark.parametrize(
    "args",
    [
        ["show", "hgx-h100"],
        ["show", "survey-demo", "--json"],
        ["show", "--list"],
        ["show", "--list", "--json"],
        ["check", "seed000-2node-a10g"],
        ["check", "--list", "--json"],
        ["repro", "list"],
        ["repro", "list", "--json"],
        ["doctor", str(SIGNATURES / "watchdog_timeout.log")],
        ["doctor", "--json", str(SIGNATURES / "watchdog_timeout.log")],
        ["--help"],
        ["show", "--help"],
        ["--version"],
    ],
    ids=" ".join,
)
def test_a_closed_pipe_ends_the_command_quietly(args):
    code, err = run_into_closed_pipe(*args)
    assert code == 0, err
    assert err == "", err  # no "[Errno 32] Broken pipe", no "Exception ignored", no traceback


def test_show_of_stdin_into_a_closed_pipe():
    snapshot = subprocess.run(
        [sys.executable, "-m", "ncclnb", "show", "hgx-h100", "--json"], capture_output=True, env=_env(), cwd=REPO, check=True
    ).stdout
    assert run_into_closed_pipe("show", "-", stdin=snapshot) == (0, "")


@pytest.mark.parametrize(
    "args,code",
    [
        (["check", "seed000-2node-a10g", "--fail-on", "error"], 1),
        (["check", "hgx-h100", "--fail-on", "warning"], 0),
        (["doctor", "--fail-on", "error", str(SIGNATURES / "watchdog_timeout.log")], 1),
    ],
)
def test_a_closed_pipe_keeps_the_gate_status(args, code):
    """`ncclnb check ... --fail-on error | head` still fails the step when it should."""
    assert run_into_closed_pipe(*args) == (code, "")


def test_bad_input_into_a_closed_pipe_still_says_why():
    code, err = run_into_closed_pipe("show", "no-such-machine")
    assert code == 2 and err.startswith("ncclnb show: error: ") and len(err.splitlines()) == 1


def test_head_in_a_shell_pipeline():
    """What a person types: the first line arrives, the pipeline's statuses are 0 and stderr stays empty."""
    script = (
        f'"{sys.executable}" -m ncclnb show survey-demo --json | head -1; '
        f'echo "status ${{PIPESTATUS[0]}} ${{PIPESTATUS[1]}}"; '
        f'"{sys.executable}" -m ncclnb check --list | head -c 10 >/dev/null; echo "status ${{PIPESTATUS[0]}}"'
    )
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=_env(), cwd=REPO, timeout=120)
    assert proc.stdout.splitlines() == ["{", "status 0 0", "status 0"], proc.stdout
    assert proc.stderr == "", proc.stderr
