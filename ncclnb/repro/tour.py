"""The terminal tour: one documented failure reproduced, diagnosed, fixed and
verified, then stopped at step 0 by a guard, in well under a minute.

It is the README's first command's last step and ``ncclnb tour``'s one
function: three real runs of one scenario (broken, fixed, guarded), each
told in a few lines, and a closing table that sets the seconds each took
beside what torch's default timeouts would have cost on a cluster.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Callable, Optional, TextIO

from ..model import ReproResult
from .report import outcome
from .runner import run
from .scenario import ScenarioError, get

DEFAULT_SCENARIO = "unseeded_split_desync"
# torch's defaults: the NCCL watchdog (init_process_group timeout) and the TCPStore wait
WATCHDOG_DEFAULT_S = 600
STORE_DEFAULT_S = 1800
NEXT_STEP = "jupyter lab notebooks/00_start_here.ipynb"

STEPS = (
    ("broken", "1. Reproduce", "the program as the seed's job ran it"),
    ("fixed", "2. Fix and verify", "the same program with the fix"),
    ("guarded", "3. Prevent", "the broken program with ncclnb.guard on at step 0"),
)


@dataclass(frozen=True)
class TourStep:
    """One run of the tour and whether it did what its variant promises."""

    result: ReproResult
    as_expected: bool
    verdict: str


def tour(
    name: str = DEFAULT_SCENARIO,
    *,
    out: TextIO = None,
    keep: Optional[str] = None,
    timeout: Optional[float] = None,
    runner: Callable[..., ReproResult] = run,
) -> list[TourStep]:
    """Run scenario ``name`` broken, fixed and guarded, telling each on ``out``
    (stdout by default); returns one :class:`TourStep` per run. ``keep`` is a
    directory under which each run keeps its logs (``keep/broken`` ...)."""
    out = out or sys.stdout
    scenario = get(name)
    variants = [v for v, _, _ in STEPS if v in scenario.variants]
    if "guarded" not in variants:
        raise ScenarioError(f"scenario {name!r} has no guarded variant to end the tour with; try {DEFAULT_SCENARIO!r}")
    _say(out, f"ncclnb tour: {scenario.title} (seed {scenario.seed or '-'})")
    _say(out, _wrap(scenario.story, "  "))
    steps: list[TourStep] = []
    for variant, heading, what in STEPS:
        _say(out, f"\n{heading}: {what}")
        note = scenario.variant(variant).note
        if note and variant != "broken":
            _say(out, _wrap(note, "  "))
        _say(out, f"  running {scenario.nproc} ranks on 127.0.0.1 ...")
        result = runner(scenario, variant, keep=f"{keep}/{variant}" if keep else None, timeout=timeout)
        ok, why = outcome(result, scenario)
        steps.append(TourStep(result, ok, why))
        _say(out, f"  {'ok' if ok else 'NOT as expected'}: {why}")
        _say(out, f"  logs: {result.run_dir}")
        top = result.diagnosis.top if result.diagnosis else None
        if variant != "fixed" and top is not None:
            _say(out, f"  the doctor: {top.title}")
            for ev in top.evidence[:2]:
                where = f"{ev.source}:{ev.line}" if ev.line is not None else ev.source
                _say(out, f"    {where}: {_short(ev.text)}")
            if variant == "broken" and top.fix:
                _say(out, _wrap("fix: " + top.fix, "    "))
    _say(out, "\n" + summary_table(steps, scenario.expected_category))
    _say(out, f"\nNext: the same walk for every documented failure, with the views: {NEXT_STEP}")
    return steps


def summary_table(steps: list[TourStep], category: str) -> str:
    """The seconds each run took beside torch's default timeout for the same failure."""
    default = STORE_DEFAULT_S if category == "rendezvous_unreachable" else WATCHDOG_DEFAULT_S
    rows = ["variant   seconds  outcome", "-------   -------  -------"]
    for step in steps:
        r = step.result
        state = "completed" if r.completed else "stopped"
        rows.append(f"{r.variant:9s} {r.seconds:7.1f}  {state}, {'as expected' if step.as_expected else 'NOT as expected'}")
    rows.append(f"(on a cluster with torch's defaults the broken job waits up to {default} s before anything is said)")
    return "\n".join(rows)


def _say(out: TextIO, text: str) -> None:
    out.write(text + "\n")
    out.flush()


def _short(text: str, limit: int = 110) -> str:
    """One terminal-safe line (log text may carry escape sequences)."""
    from ..terminal import visible

    text = visible(" ".join(text.split()))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _wrap(text: str, indent: str, width: int = 96) -> str:
    import textwrap

    return textwrap.fill(" ".join(text.split()), width=width, initial_indent=indent, subsequent_indent=indent)
