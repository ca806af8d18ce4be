"""ncclnb.guard over real gloo process groups, one process per rank on
127.0.0.1; plus the pure comparison logic on plain values."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from _launch import launch as launch_ranks
from ncclnb.guard import GuardError, dataset_facts
from ncclnb.guard import _compare as cmp

WORKER = Path(__file__).with_name("_worker.py")


def launch(case: str, world: int, out: Path) -> dict[int, dict]:
    return launch_ranks(WORKER, [case], world, out)


@pytest.fixture(scope="module")
def four(tmp_path_factory):
    return launch("four", 4, tmp_path_factory.mktemp("four"))


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    return launch("pair", 2, tmp_path_factory.mktemp("pair"))


def _all(results, step):
    out = []
    for rank, res in sorted(results.items()):
        assert step in res, f"rank {rank} never finished {step!r}; exit {res['_rc']}; log:\n{res['_log']}"
        out.append(res[step])
    return out


# -- four ranks ------------------------------------------------------------


def test_workers_exit_cleanly(four):
    assert [r["_rc"] for r in four.values()] == [0, 0, 0, 0], [r["_log"] for r in four.values()]


def test_assert_same_passes_when_equal(four):
    assert all(r == {"ok": True, "value": None} for r in _all(four, "equal"))


def test_assert_same_names_the_rank_and_both_values(four):
    errors = _all(four, "len")
    assert {e["error"] for e in errors} == {"GuardError"}
    assert len({e["message"] for e in errors}) == 1  # the same line on every rank
    e = errors[0]
    assert e["ranks"] == [1]
    assert e["check"] == "assert_same"
    assert e["message"] == "ncclnb guard: rank 1 disagrees on dataset_len: rank 1 has 1001, ranks 0,2,3 have 1000"
    assert e["values"] == {"dataset_len": {"0": "1000", "1": "1001", "2": "1000", "3": "1000"}}


def test_check_dataset_equal_and_split(four):
    assert all(r["ok"] for r in _all(four, "dataset_equal"))
    errors = _all(four, "dataset_split")
    assert {e["error"] for e in errors} == {"GuardError"}
    e = errors[0]
    assert e["ranks"] == [2]
    assert list(e["values"]) == ["first_items"]  # same length, other items
    assert e["message"].startswith("ncclnb guard: rank 2 disagrees on first_items: rank 2 has {")
    assert "'sample-0'" in e["values"]["first_items"]["0"]
    assert "'sample-0'" not in e["values"]["first_items"]["2"]


def test_check_dataset_subset_indices(four):
    e = _all(four, "subset")[3]
    assert e["error"] == "GuardError" and e["ranks"] == [3]
    assert list(e["values"]) == ["first_indices"]
    assert '"first":[1,4,7,' in e["values"]["first_indices"]["3"]
    assert '"first":[0,3,6,' in e["values"]["first_indices"]["0"]


def test_watermark_passes_on_equal_collectives(four):
    runs = _all(four, "watermark_pass")
    assert all(r["ok"] for r in runs), runs
    issued = {r["value"]["issued"] for r in runs}
    # 20 manual all_reduces + 2 assert_same + DDP's own bucket all_reduces, counted in C++
    assert len(issued) == 1 and issued.pop() > 22


def test_watermark_names_the_rank_with_an_extra_collective_on_every_rank(four):
    errors = _all(four, "watermark_extra")
    assert {e["error"] for e in errors} == {"GuardError"}, errors
    assert {e["message"] for e in errors} == {"ncclnb guard: rank 1 issued 1 collective more than ranks 0,2,3 by step 10"}
    assert all(e["ranks"] == [1] and e["check"] == "watermark" for e in errors)
    counts = errors[0]["values"]["collectives"]
    assert counts["1"] == counts["0"] + 1 == counts["2"] + 1 == counts["3"] + 1


# -- two ranks ---------------------------------------------------------------


def test_tie_blames_the_rank_that_differs_from_rank_0(pair):
    errors = _all(pair, "tie")
    assert all(e["error"] == "GuardError" and e["ranks"] == [1] for e in errors)
    assert errors[0]["message"] == "ncclnb guard: rank 1 disagrees on x: rank 1 has 1, rank 0 has 0"


def test_watermark_tie_and_realignment(pair):
    errors = _all(pair, "watermark_tie")
    assert all(e["error"] == "GuardError" and e["ranks"] == [1] for e in errors)
    assert errors[0]["message"] == "ncclnb guard: rank 1 issued 1 collective fewer than rank 0 by step 5"
    assert all(r["ok"] for r in _all(pair, "after_tie"))


def test_watermark_names_a_rank_blocked_in_an_unmatched_collective(pair):
    waiting, blocked = _all(pair, "watermark_blocked")
    assert waiting["error"] == "GuardError", waiting
    assert waiting["ranks"] == [1]
    assert waiting["message"].startswith(
        "ncclnb guard: rank 1 did not reach the watermark check at step 10 within 3 s (rank 1 last checked at step 5)"
    )
    assert blocked["error"] != "GuardError"  # rank 1 is stuck in gloo's all_reduce: gloo's own timeout


# -- no torch at import, pure logic --------------------------------------------


def test_import_guard_does_not_import_torch():
    code = "import sys, ncclnb.guard; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "False"


def test_guard_error_keeps_its_fields_through_pickle():
    import pickle

    err = pickle.loads(pickle.dumps(GuardError("m", [2, 1], {"x": {1: "a"}}, check="assert_same")))
    assert (str(err), err.ranks, err.values, err.check) == ("m", [1, 2], {"x": {1: "a"}}, "assert_same")
    assert isinstance(err, RuntimeError)


class Thing:
    pass


def test_canonical_text_is_the_same_for_equal_values():
    assert cmp.canonical({"b": 1, "a": (1, 2)}) == cmp.canonical({"a": [1, 2], "b": 1}) == '{"a":[1,2],"b":1}'
    assert cmp.canonical({3, 1, 2}) == "[1,2,3]"
    assert cmp.canonical(Thing()) == cmp.canonical(Thing())  # no "at 0x..." in the text
    assert cmp.canonical(float("nan")) == '{"float":"nan"}'
    assert cmp.canonical({1: "a"}) == '{"1":"a"}'


def test_cut_keeps_utf8_whole_and_marks_the_cut():
    text = "é" * 300
    raw = cmp.cut(text, 256)
    assert len(raw) <= 256 and raw.decode("utf-8").endswith("…")
    assert cmp.cut("short", 256) == b"short"


def test_fmt_ranks():
    assert cmp.fmt_ranks([1]) == "rank 1"
    assert cmp.fmt_ranks([3, 0, 2]) == "ranks 0,2,3"
    assert cmp.fmt_ranks(list(range(512)) + list(range(513, 1024))) == "ranks 0-511,513-1023"


def test_detail_rows_round_trip_and_absent_names():
    a = {"x": cmp.canonical(1), "y": cmp.canonical("v" * 400)}
    b = {"x": cmp.canonical(2)}
    rows = {0: cmp.detail_row(a, 2), 1: cmp.detail_row(a, 2), 2: cmp.detail_row(b, 2)}
    assert len({len(r) for r in rows.values()}) == 1
    parsed = {r: cmp.parse_detail(row) for r, row in rows.items()}
    message, ranks, values = cmp.same_report(parsed)
    assert ranks == [2]
    assert "rank 2 disagrees on x: rank 2 has 2, ranks 0,1 have 1" in message
    assert values["y"][2] == cmp.ABSENT and values["y"][0].endswith("…")


def test_cut_texts_that_look_equal_show_their_digests():
    long_a, long_b = "a" * 300 + "1", "a" * 300 + "2"
    parsed = {r: cmp.parse_detail(cmp.detail_row({"cfg": cmp.canonical(v)}, 1)) for r, v in enumerate([long_a, long_a, long_b])}
    message, ranks, _ = cmp.same_report(parsed)
    assert ranks == [2] and message.count("(blake2b ") == 2


def test_watermark_report_several_groups_and_steps():
    message, ranks, values = cmp.watermark_report({0: (100, 10), 1: (100, 11), 2: (100, 10), 3: (100, 8)})
    assert ranks == [1, 3]
    assert message == (
        "ncclnb guard: rank 1 issued 1 collective more than ranks 0,2 by step 100; "
        "rank 3 issued 2 collectives fewer than ranks 0,2 by step 100"
    )
    assert values == {"collectives": {0: 10, 1: 11, 2: 10, 3: 8}}
    message, ranks, _ = cmp.watermark_report({0: (100, 10), 1: (200, 20), 2: (100, 10)})
    assert ranks == [1] and "rank 1 at step 200" in message
    assert cmp.watermark_report({0: (5, 3), 1: (5, 3)}) is None


def test_dataset_facts_without_a_process_group():
    facts = dataset_facts(list(range(10)), n_first=4)
    assert facts["dataset_len"] == 10 and facts["first_items"]["n"] == 4
    assert dataset_facts(iter(()))["dataset_len"].startswith("<no len()")
