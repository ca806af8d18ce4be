"""Shared test helpers: where the public captures live, and a CLI runner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# real outputs people posted publicly, each with its source (tests/data/public_captures/PROVENANCE.md)
CAPTURES = REPO / "tests" / "data" / "public_captures"

# the readers and collectors that never raise on purpose (ncclnb.errors.tolerate) re-raise an exception
# that is not an input problem, in this process and in every command and rank the tests start: a bug
# fails its test instead of reading as "could not read". NCCLNB_STRICT=0 in the caller's environment,
# or the `tolerant` fixture for one test, keeps the tolerance users get.
os.environ.setdefault("NCCLNB_STRICT", "1")


def run_cli(*args: str, input: bytes | None = None, env: dict | None = None, timeout: float = 120):
    """Run the real `ncclnb` command in a subprocess; returns CompletedProcess (text)."""
    full_env = dict(os.environ, PYTHONUNBUFFERED="1")
    for name in ("NO_COLOR", "FORCE_COLOR", "COLUMNS"):  # the caller's terminal settings are not the test's
        full_env.pop(name, None)
    if env:
        full_env.update(env)
    proc = subprocess.run(
        [sys.executable, "-m", "ncclnb", *args],
        input=input,
        capture_output=True,
        env=full_env,
        timeout=timeout,
        cwd=REPO,
    )
    return subprocess.CompletedProcess(
        proc.args,
        proc.returncode,
        proc.stdout.decode("utf-8", "replace"),
        proc.stderr.decode("utf-8", "replace"),
    )


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def tolerant(monkeypatch):
    """NCCLNB_STRICT off: for a test of what a user sees when a reader or a
    collector survives a failure (a bug included) and says why."""
    monkeypatch.delenv("NCCLNB_STRICT", raising=False)
