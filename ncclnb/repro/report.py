"""A ReproResult for a terminal, and whether a run did what its variant promises."""

from __future__ import annotations

from ..model import ReproResult
from .scenario import Scenario

GUARD_RULES = ("ncclnb_guard", "ncclnb_preflight")  # the doctor's signatures for what ncclnb.guard raises


def outcome(result: ReproResult, scenario: Scenario) -> tuple[bool, str]:
    """(as expected?, one line why). A broken run must fail (where it can fail
    on this backend) with the expected category first and every culprit rank
    blamed; a fixed run must complete; a guarded run must stop (on every
    backend: a guard stops on the facts, even where the failure itself needs
    GPUs), the doctor's first finding in the expected category and a guard's
    finding in it blaming every culprit rank."""
    top = result.diagnosis.top if result.diagnosis else None
    named = f"{top.category} blaming {list(top.ranks) or 'no rank'}" if top else "nothing"
    if result.variant == "fixed":
        if result.completed:
            return True, f"completed in {result.seconds:g} s"
        return False, f"did not complete (exit codes {result.exit_codes}); the doctor says {named}"
    if result.variant == "guarded":
        if result.completed:
            return False, "completed, but the guard should have stopped it"
        guards = [
            f
            for f in (result.diagnosis.findings if result.diagnosis else ())
            if f.rule.startswith(GUARD_RULES)
            and f.category == result.expected_category
            and set(result.culprit_ranks) <= set(f.ranks)
        ]
        if not guards or top.category != result.expected_category:
            which = "rank" if len(result.culprit_ranks) == 1 else "ranks"
            return False, (
                f"no guard named {result.expected_category} blaming {which} {list(result.culprit_ranks)}: the doctor says {named}"
            )
        return True, f"stopped in {result.seconds:g} s with {named}"
    can_fail = scenario.fails_on_cpu and result.backend != "recorded"
    if can_fail and result.completed:
        return False, f"completed, but the {result.variant} program should have failed"
    if result.diagnosed_as_expected:
        how = "failed" if not result.completed else "ran"
        return True, f"{how} in {result.seconds:g} s; the doctor names {named}"
    return False, (f"expected {result.expected_category} blaming {list(result.culprit_ranks)}, the doctor names {named}")


def render_text(result: ReproResult, scenario: Scenario, colour: bool = False, top: int = 3) -> str:
    """What happened, the notes, the doctor's conclusion and the lesson."""
    from ..terminal import render_diagnosis

    ok, why = outcome(result, scenario)
    state = "completed" if result.completed else ("killed at the deadline" if result.deadline_hit else "failed")
    out = [
        f"{scenario.name} ({'seed ' + scenario.seed if scenario.seed else 'beyond the seeds'}), "
        f"{result.variant}, on {result.backend}: {state} in {result.seconds:g} s",
        f"  {scenario.title}",
        f"  logs: {result.run_dir}",
    ]
    codes = ", ".join(f"{k}: {'killed' if v is None else v}" for k, v in result.exit_codes.items())
    out.append(f"  exit codes: {codes}")
    for note in result.notes:
        out.append(f"  note: {note}")
    if result.diagnosis is not None:
        out.append("")
        out.append(render_diagnosis(result.diagnosis, colour=colour, top=top))
    out.append("")
    out.append(f"Lesson: {scenario.lesson}")
    mark = "as expected" if ok else "NOT as expected"
    out.append(f"Verdict: {mark}: {why}")
    return "\n".join(out)
