"""Reproductions: every documented failure, broken and fixed, run for real
in seconds on 127.0.0.1 (gloo on a laptop, NCCL where there is a GPU per rank).

>>> import ncclnb
>>> result = ncclnb.reproduce("rank_beyond_world_size")          # doctest: +SKIP
>>> result.diagnosis.top.category, result.diagnosis.top.ranks     # doctest: +SKIP
('rank_world_size_mismatch', (4, 5, 6, 7))

Scenarios are data (``scenarios/<name>.json``) plus a worker module
(``workers/``) that plays the job; ``runner.py`` starts, watches and stops
the ranks and hands their logs to the doctor; ``job.py`` is what runs inside
each rank.
"""

from __future__ import annotations

from typing import Optional

from ..model import ReproResult
from .runner import Progress, choose_backend, processes_of_run, run
from .scenario import Scenario, ScenarioError, get, load_scenarios

__all__ = ["reproduce", "scenarios", "Scenario", "ScenarioError", "ReproResult", "choose_backend", "processes_of_run"]


def scenarios() -> dict[str, Scenario]:
    """Every bundled scenario by name."""
    return load_scenarios()


def reproduce(
    name: str,
    fixed: bool = False,
    *,
    variant: Optional[str] = None,
    nproc: Optional[int] = None,
    timeout: Optional[float] = None,
    keep: Optional[str] = None,
    backend: str = "auto",
    progress: Optional[Progress] = None,
) -> ReproResult:
    """Run scenario ``name`` (broken, or ``fixed=True``; ``variant="guarded"``
    where the scenario has one) and return the :class:`ReproResult`: whether
    it completed, each rank's exit code, the run directory with every rank's
    log, and the doctor's diagnosis of them. Twin of ``ncclnb repro run``."""
    chosen = variant or ("fixed" if fixed else "broken")
    return run(get(name), chosen, nproc=nproc, timeout=timeout, keep=keep, backend=backend, progress=progress)
