"""Run an external command with a deadline, never raising.

Every probe that shells out (``ldconfig -p``, ``nvidia-smi``, a ``python -c``
that imports torch) goes through :func:`run`, so a hung tool costs at most
its timeout and a missing one costs a reason string, not an exception. The
child starts in its own session: on timeout the whole process group is
killed, so nothing it spawned outlives the probe.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from typing import Callable, Mapping, Optional, Sequence


@dataclass(frozen=True)
class CommandResult:
    """What a command did. ``error`` is None when it ran to completion (any
    exit code); otherwise a short reason ("not found", "timed out after 2 s")
    and ``returncode`` is None."""

    returncode: Optional[int]
    stdout: str = ""
    stderr: str = ""
    error: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.returncode == 0

    def reason(self, what: str) -> str:
        """One line saying why this result carries no usable output."""
        if self.error:
            return f"{what}: {self.error}"
        first = (self.stderr.strip() or self.stdout.strip()).splitlines()
        detail = f": {first[-1][:200]}" if first else ""
        return f"{what} exited with status {self.returncode}{detail}"


# The signature collectors accept for their ``run`` argument.
Runner = Callable[[Sequence[str], float], CommandResult]


def _seconds(timeout: float) -> str:
    return f"{timeout:g} s"


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run(argv: Sequence[str], timeout: float = 2.0, *, env: Optional[Mapping[str, str]] = None) -> CommandResult:
    """Run ``argv`` (no shell) for at most ``timeout`` seconds.

    Returns a :class:`CommandResult`; never raises for a missing, failing or
    hung command. Output is decoded as UTF-8 with replacement characters."""
    argv = [str(a) for a in argv]
    if not argv:
        return CommandResult(None, error="empty command")
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group: killpg reaches grandchildren
            env=dict(env) if env is not None else None,
        )
    except FileNotFoundError:
        return CommandResult(None, error="not found")
    except PermissionError:
        return CommandResult(None, error="permission denied")
    except OSError as exc:
        return CommandResult(None, error=exc.strerror or type(exc).__name__)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        _drain(proc)
        return CommandResult(None, error=f"timed out after {_seconds(timeout)}")
    except BaseException:  # KeyboardInterrupt included: leave no child behind
        _kill_group(proc)
        _drain(proc)
        raise
    return CommandResult(
        proc.returncode,
        out.decode("utf-8", "replace"),
        err.decode("utf-8", "replace"),
    )


def _drain(proc: subprocess.Popen) -> None:
    """Reap a killed child. A grandchild that left the group could keep the
    pipes open forever, so wait briefly and then just close them."""
    try:
        proc.communicate(timeout=1.0)
    except (subprocess.TimeoutExpired, ValueError, OSError):
        for pipe in (proc.stdout, proc.stderr):
            try:
                if pipe:
                    pipe.close()
            except OSError:
                pass
        try:
            proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            pass
