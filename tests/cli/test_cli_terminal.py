"""Colour and width follow the terminal: colour only on a tty, NO_COLOR,
FORCE_COLOR and TERM=dumb honoured (one function decides, for every verb);
`--width` defaults to the terminal's width and refuses 0 or less."""

import fcntl
import io
import os
import pty
import select
import struct
import subprocess
import sys
import termios

import pytest

from tests.conftest import REPO
from ncclnb.cli import colour_wanted, terminal_width

LOG = REPO / "ncclnb" / "doctor" / "signatures" / "watchdog_timeout.log"
ESC = "\x1b["


class _Stream(io.StringIO):
    def __init__(self, tty: bool):
        super().__init__()
        self._tty = tty

    def isatty(self):
        return self._tty


@pytest.fixture
def clean_env(monkeypatch):
    for name in ("NO_COLOR", "FORCE_COLOR", "TERM", "COLUMNS"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize(
    "env,tty,want",
    [
        ({}, True, True),
        ({}, False, False),
        ({"NO_COLOR": "1"}, True, False),
        ({"NO_COLOR": "anything"}, True, False),
        ({"NO_COLOR": ""}, True, True),  # no-color.org: set and non-empty
        ({"FORCE_COLOR": "1"}, False, True),
        ({"FORCE_COLOR": "0"}, False, False),
        ({"FORCE_COLOR": ""}, False, False),
        ({"TERM": "dumb"}, True, False),
        ({"TERM": "xterm-256color"}, True, True),
        ({"TERM": "dumb", "FORCE_COLOR": "1"}, False, True),
        ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, True, False),  # NO_COLOR wins
    ],
)
def test_colour_decision(clean_env, env, tty, want):
    for name, value in env.items():
        clean_env.setenv(name, value)
    assert colour_wanted(stream=_Stream(tty)) is want


def test_a_named_output_file_is_never_coloured(clean_env):
    clean_env.setenv("FORCE_COLOR", "1")
    assert colour_wanted("report.txt", stream=_Stream(True)) is False
    assert colour_wanted("-", stream=_Stream(True)) is True  # '-' is stdout


def test_a_closed_or_odd_stream_is_not_coloured(clean_env):
    closed = open(os.devnull, "w")
    closed.close()  # isatty() raises ValueError
    assert colour_wanted(stream=closed) is False
    assert colour_wanted(stream=object()) is False


def test_no_verb_decides_colour_by_itself():
    """One place decides: no verb module asks isatty() about stdout itself."""
    for path in (REPO / "ncclnb" / "cli").glob("*_verb.py"):
        assert "stdout.isatty" not in path.read_text(), path


# ---- real processes: a pipe, and a pseudo-terminal -------------------------------------------------


def _env(**extra):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    for name in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "TERM"):
        env.pop(name, None)
    env.update(extra)
    return env


def run_piped(*args, **env):
    return subprocess.run(
        [sys.executable, "-m", "ncclnb", *args], capture_output=True, text=True, env=_env(**env), cwd=REPO, timeout=120
    )


def run_on_a_terminal(*args, columns=100, **env):
    """stdout a pseudo-terminal of ``columns`` columns; returns (exit status, what it showed)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "ncclnb", *args], stdout=slave, stderr=subprocess.PIPE, env=_env(**env), cwd=REPO
    )
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            proc.kill()
            break
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    code = proc.wait(timeout=60)
    return code, b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")


def test_doctor_colours_a_terminal_only():
    code, shown = run_on_a_terminal("doctor", str(LOG), TERM="xterm")
    assert code == 0 and ESC in shown
    piped = run_piped("doctor", str(LOG))
    assert piped.returncode == 0 and "ERROR" in piped.stdout.upper() and ESC not in piped.stdout


@pytest.mark.parametrize("env", [{"NO_COLOR": "1", "TERM": "xterm"}, {"TERM": "dumb"}])
def test_no_colour_on_a_terminal_that_asks_for_none(env):
    code, shown = run_on_a_terminal("doctor", str(LOG), **env)
    assert code == 0 and shown.strip() and ESC not in shown


def test_force_colour_colours_a_pipe_but_not_a_named_file(tmp_path):
    piped = run_piped("doctor", str(LOG), FORCE_COLOR="1")
    assert piped.returncode == 0 and ESC in piped.stdout
    out = tmp_path / "diagnosis.txt"
    assert run_piped("doctor", str(LOG), "-o", str(out), FORCE_COLOR="1").returncode == 0
    assert ESC not in out.read_text()
    assert ESC not in run_piped("doctor", str(LOG), FORCE_COLOR="1", NO_COLOR="1").stdout


def test_json_is_never_coloured():
    assert ESC not in run_piped("doctor", "--json", str(LOG), FORCE_COLOR="1").stdout


# ---- --width -------------------------------------------------------------------------------------


def test_show_width_follows_the_terminal():
    code, shown = run_on_a_terminal("show", "hgx-h100", columns=64)
    lines = shown.splitlines()
    assert code == 0 and len(lines) > 10
    assert max(map(len, lines)) == 64 and any(ln.endswith("…") for ln in lines)


def test_show_width_in_a_pipe_is_columns_or_120():
    default = run_piped("show", "dgx-a100")
    assert default.returncode == 0 and max(map(len, default.stdout.splitlines())) <= 120
    narrow = run_piped("show", "dgx-a100", COLUMNS="50")
    assert max(map(len, narrow.stdout.splitlines())) == 50
    explicit = run_piped("show", "dgx-a100", "--width", "40", COLUMNS="50")
    assert max(map(len, explicit.stdout.splitlines())) == 40


def test_terminal_width_reads_columns(clean_env):
    clean_env.setenv("COLUMNS", "77")
    assert terminal_width() == 77


@pytest.mark.parametrize("value", ["0", "-3", "abc", "1.5", ""])
def test_show_refuses_a_width_that_is_not_positive(value):
    proc = run_piped("show", "hgx-h100", "--width", value)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ncclnb show: error: --width"), proc.stderr


def test_width_one_still_clips_every_line():
    proc = run_piped("show", "hgx-h100", "--width", "1")
    assert proc.returncode == 0 and set(proc.stdout.splitlines()) <= {"…", ""}
