"""The doctor on REAL multi-rank logs recorded from the reproductions
(``repro_logs/make_logs.py`` regenerates them): the expected category first,
and every culprit rank blamed by that finding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ncclnb.repro.runner import diagnose_run_dir

HERE = Path(__file__).resolve().parent / "repro_logs"
CASES = sorted(p.name for p in HERE.iterdir() if (p / ".expected.json").is_file())


def test_every_non_replay_scenario_has_recorded_logs():
    from ncclnb.repro import scenarios

    wanted = {n for n, s in scenarios().items() if s.launcher != "replay"}
    assert wanted <= set(CASES), f"record logs for {sorted(wanted - set(CASES))} with make_logs.py"


@pytest.mark.parametrize("case", CASES)
def test_doctor_names_cause_and_culprits(case):
    expected = json.loads((HERE / case / ".expected.json").read_text())
    diag = diagnose_run_dir(HERE / case)
    top = diag.top
    assert top is not None, f"{case}: no finding"
    assert top.category == expected["category"], f"{case}: {top.rule} {top.category} {top.title}"
    assert set(expected["culprit_ranks"]) <= set(top.ranks), f"{case}: blamed {top.ranks}"


def test_a_rank_killed_by_its_launcher_is_still_blamed_from_its_banner():
    # rank 5 was SIGTERMed by torchrun before it could fail; only its framework banner says
    # "GLOBAL_RANK: 5, MEMBER: 6/4"
    diag = diagnose_run_dir(HERE / "rank_beyond_world_size")
    assert diag.top.rule == "ranks_beyond_world_size"
    assert diag.top.ranks == (4, 5, 6, 7)


def test_first_failure_leads_and_the_waiting_ranks_are_its_consequence():
    diag = diagnose_run_dir(HERE / "first_crash_cascade")
    assert diag.top.rule == "host_memory_exhausted" and diag.top.ranks == (2,)
    # the recorder's "rank 2 never reached collective #7" is its consequence, folded into its card (issue 12)
    assert not any(f.rule.startswith("fr.missing_rank") for f in diag.findings)
    assert "Rank 2 never reached collective #7" in diag.top.cause


def test_empty_dump_beside_full_ones_means_reached_no_collective():
    diag = diagnose_run_dir(HERE / "alltoall_unpaired")
    assert diag.top.rule == "fr.missing_rank_p2p"
    assert not any(f.rule == "fr.bad_dump" for f in diag.findings)


def test_ncclnb_json_files_in_a_log_directory_are_not_read_as_logs(tmp_path):
    import shutil

    from ncclnb import diagnose

    for p in (HERE / "store_host_missing").iterdir():
        shutil.copyfile(p, tmp_path / p.name)
    before = diagnose(str(tmp_path))
    (tmp_path / "result.json").write_text(
        json.dumps({"schema": "ncclnb.repro/1", "notes": ["Timed out after 5 seconds waiting for clients. 1/4 clients joined."]})
    )
    after = diagnose(str(tmp_path))
    assert [f.rule for f in after.findings] == [f.rule for f in before.findings]
    assert after.lines_read == before.lines_read


# a real run with the culprit's log and dump taken away: the world size the other ranks'
# flight-recorder dumps name in their process-group config (gloo writes
# {"": {"ranks": "[0, 1, 2]"}}) says who is missing, as nRanks or "N/M clients joined" would
@pytest.mark.parametrize(
    "case, gone",
    [
        ("slow_rank_checkpoint", 0),
        ("unseeded_split_desync", 1),
        ("alltoall_unpaired", 2),
    ],
)
def test_a_rank_with_no_log_and_no_dump_is_blamed_from_the_dumps_world_size(tmp_path, case, gone):
    import shutil

    from ncclnb import diagnose

    for p in (HERE / case).iterdir():
        if p.is_file() and not p.name.startswith(f"rank{gone}."):
            shutil.copyfile(p, tmp_path / p.name)
    diag = diagnose(str(tmp_path))
    top = diag.top
    assert top.ranks == (gone,), (top.rule, top.title, top.ranks)
    assert f"rank {gone} of the" in top.title and "left no log" in top.title
    assert any(f.rule == "fr.missing_dump" and f"rank {gone} " in f.title for f in diag.findings)


def test_without_the_dumps_nothing_says_the_world_size(tmp_path):
    import shutil

    from ncclnb import diagnose

    for p in (HERE / "slow_rank_checkpoint").iterdir():
        if p.is_file() and p.name.endswith(".log") and not p.name.startswith("rank0."):
            shutil.copyfile(p, tmp_path / p.name)
    assert 0 not in diagnose(str(tmp_path)).top.ranks
