"""check_p2p_plan on real gloo ranks (the seed-004 worker): an unpaired
receive is named before anything is posted; a paired plan passes."""

from __future__ import annotations

from ncclnb.repro import get
from ncclnb.repro.runner import run
from ncclnb.repro.scenario import parse


def _scenario_with(args: dict):
    base = get("alltoall_unpaired")
    data = {
        "name": "p2p_plan_probe",
        "seed": "004",
        "title": "t",
        "story": "s",
        "worker": base.worker,
        "nproc": 4,
        "nodes": 1,
        "launcher": "processes",
        "expected_category": "p2p_pairing",
        "culprit_ranks": [2],
        "lesson": "l",
        "variants": {"broken": {"args": args}, "fixed": {"args": args}},
    }
    return parse(data, "probe")


def test_unpaired_receive_is_named_on_every_rank(tmp_path):
    result = run(_scenario_with({"method": "unpaired", "guard": True}), "broken", keep=str(tmp_path / "run"))
    assert not result.completed
    top = result.diagnosis.top
    assert (top.rule, top.category, top.ranks) == ("ncclnb_guard_p2p_plan", "p2p_pairing", (1, 2))
    logs = [(tmp_path / "run" / f"rank{r}.log").read_text() for r in range(4)]
    assert all("rank 2 posts a receive from rank 1 ([1, 8]) that rank 1 never sends" in log for log in logs)


def test_paired_plan_passes_and_the_exchange_completes(tmp_path):
    result = run(_scenario_with({"method": "batch_isend_irecv", "guard": True}), "fixed", keep=str(tmp_path / "run"))
    assert result.completed, result.exit_codes


def test_a_rank_that_exits_before_the_plan_exchange_stops_the_others_and_is_named(tmp_path):
    args = {"method": "batch_isend_irecv", "guard": True, "leave_before_plan": 3}
    result = run(_scenario_with(args), "broken", keep=str(tmp_path / "run"))
    # no rank waits for the one that left: every rank ends (none by the runner's deadline), none completes
    assert not result.completed and not result.deadline_hit
    assert result.exit_codes[3] == 3 and all(result.exit_codes[r] not in (0, None) for r in (0, 1, 2))
    assert result.diagnosis.top.ranks == (3,), result.diagnosis.top
