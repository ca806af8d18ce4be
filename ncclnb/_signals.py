"""SIGTERM and SIGHUP handled like Ctrl-C, for every command that starts
processes (the doctor's parallel scan, the repro runner, the survey): their
``finally`` blocks then stop and reap what they started, where the default
action of these signals would kill the parent alone and orphan the rest.
Standard library only, so any layer may use it."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised like Ctrl-C; says which (the CLI exits
    128 + ``signum`` with one line)."""

    def __init__(self, signum: int):
        super().__init__(f"signal {signum}")
        self.signum = signum


@contextmanager
def signals_interrupt():
    """Inside the block, SIGTERM and SIGHUP raise :class:`Interrupted` in the
    main thread (the only one Python delivers signals to; elsewhere this does
    nothing). A signal whose exception was swallowed (in a ``__del__``, an
    at-fork hook) is raised again when the block ends."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list = []

    def interrupt(signum, frame):
        received.append(signum)
        raise Interrupted(signum)

    saved = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            saved[sig] = signal.signal(sig, interrupt)
        except (ValueError, OSError):
            pass
    try:
        yield
        if received:
            raise Interrupted(received[0])
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


@contextmanager
def signals_held():
    """Ctrl-C, SIGTERM and SIGHUP held back inside the block (so a second
    Ctrl-C cannot cut a cleanup short) and delivered after it."""
    held = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, held)
    except (AttributeError, OSError, ValueError):
        held = set()
    try:
        yield
    finally:
        if held:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, held)
