"""Helpers for the live-collection tests: recorded trees and fake NVML."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:  # so `from fakes.nvml import FakeNvml` works
    sys.path.insert(0, str(TESTS))

from _trees import materialize  # noqa: E402


@pytest.fixture
def tree(tmp_path):
    """``tree("l40s-2socket")`` -> path of a fresh copy of that recorded tree."""
    return lambda name: str(materialize(name, tmp_path))


@pytest.fixture
def fakes():
    """Every FakeNvml made through this fixture is released at teardown, so a
    call that was made to hang does not outlive the test."""
    from fakes.nvml import FakeNvml

    made = []

    def make(snapshot, **kwargs):
        fake = FakeNvml(snapshot, **kwargs)
        made.append(fake)
        return fake

    yield make
    for fake in made:
        fake.release()
