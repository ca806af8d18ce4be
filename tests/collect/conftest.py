"""Helpers for the live-collection tests: recorded trees and fake NVML."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:  # so `from fakes.nvml import FakeNvml` works
    sys.path.insert(0, str(TESTS))

SYSFS_DATA = TESTS / "data" / "sysfs"


def materialize(name: str, dest: Path) -> Path:
    """Copy recorded tree ``name`` to ``dest`` and create the symlinks its
    SYMLINKS.txt lists (git keeps those badly). Returns the tree's root."""
    src = SYSFS_DATA / name
    if not src.is_dir():
        raise FileNotFoundError(f"no recorded tree {src}")
    root = dest / name
    shutil.copytree(src, root)
    for line in (root / "SYMLINKS.txt").read_text().splitlines():
        if not line.strip():
            continue
        path, target = (part.strip() for part in line.split(" -> ", 1))
        link = root / path
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, link)
    return root


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
