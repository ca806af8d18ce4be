"""The flight-recorder alignment: facts from the doctor (real torch 2.13 gloo
dumps, NCCL-format dumps from the factory, one real run of seed 003) and the
figure that draws them; the highlighted cells are the doctor's divergence."""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from pathlib import Path

import pytest

import ncclnb
from ncclnb.doctor.facts import run_alignment
from ncclnb.doctor.flight_recorder import alignment, analyze_dumps
from ncclnb.views.alignment import KINDS, MAX_SEQS, alignment_figure

FR_DIR = Path(__file__).resolve().parents[1] / "doctor" / "fr"


def _factory():
    spec = importlib.util.spec_from_file_location("ncclnb_test_fr_factory_viz", FR_DIR / "factory.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


factory = _factory()


def real(scenario: str) -> list:
    return [(str(f), json.loads(f.read_text())) for f in sorted((FR_DIR / scenario).glob("rank*.json"))]


def cell(fig, rank: int, seq: int) -> int:
    heat = fig.data[0]
    return heat.z[list(heat.y).index(f"rank {rank}")][list(heat.x).index(f"#{seq}")]


@pytest.mark.parametrize(
    "scenario, seq, kind, rule, blamed",
    [
        ("desync", 4, "op", "fr.desync_op", (1,)),
        ("size_mismatch", 4, "size", "fr.size_mismatch", (2,)),
        ("late_rank", 5, "late", "fr.late_rank", (0,)),
    ],
)
def test_real_gloo_dumps_divergence_is_the_doctors(scenario, seq, kind, rule, blamed):
    dumps = real(scenario)
    facts = alignment(dumps)
    assert list(facts.findings) == analyze_dumps(dumps)  # one analysis, the same findings
    group, first = facts.first_divergence
    assert (first.seq, first.kind, first.rule, first.ranks) == (seq, kind, rule, blamed)
    assert facts.findings[first.finding].title == first.title
    assert group.ranks == (0, 1, 2)
    json.dumps(facts.to_dict())
    fig = alignment_figure(facts)
    assert fig.layout.meta["divergence"] == {"seq": seq, "rule": rule, "ranks": list(blamed)}
    for r in group.ranks:
        expected = "blamed" if r in blamed else "peer"
        assert KINDS[cell(fig, r, seq)] == expected, (r, seq)
    before = [s for s in group.seqs if s < seq]
    assert all(KINDS[cell(fig, r, s)] == "recorded" for r in group.ranks for s in before)
    assert fig.layout.shapes and fig.layout.shapes[0].x0 == list(fig.data[0].x).index(f"#{seq}") - 0.5


def test_real_desync_cells_name_each_ranks_op():
    fig = alignment_figure(alignment(real("desync")))
    heat = fig.data[0]
    col = list(heat.x).index("#4")
    assert [heat.text[i][col] for i in range(3)] == ["all_reduce", "broadcast", "all_reduce"]
    assert "state scheduled" in heat.hovertext[1][col] and "fr.desync_op" in heat.hovertext[1][col]


def test_real_healthy_has_no_divergence():
    facts = alignment(real("healthy"))
    assert facts.first_divergence is None
    fig = alignment_figure(facts)
    assert {KINDS[v] for row in fig.data[0].z for v in row} == {"recorded"}
    assert "no divergence" in fig.layout.title.text and not fig.layout.shapes


def test_missing_rank_in_a_real_dump_is_marked_absent_and_blamed():
    facts = alignment(real("slow_rank"))
    _, first = facts.first_divergence
    assert first.kind == "missing" and first.ranks == (0,)
    fig = alignment_figure(facts)
    assert KINDS[cell(fig, 0, first.seq)] == "blamed_absent"
    assert KINDS[cell(fig, 1, first.seq)] == "peer"


def test_nccl_subgroups_are_picked_by_the_divergence():
    groups = {"0": ("default_pg", (0, 1, 2, 3)), "5": ("tp", (2, 3))}
    ts = factory.world(4, groups)
    for t in ts:
        t.collective("all_reduce")
    ts[2].collective("all_gather", pg="5", state="started")
    ts[3].collective("all_reduce", pg="5", state="started")
    facts = alignment(factory.dumps(ts))
    group, first = facts.first_divergence
    assert group.pg == "5" and group.ranks == (2, 3) and first.rule == "fr.desync_op"
    fig = alignment_figure(facts)
    assert fig.layout.meta["pg"] == "5"
    assert alignment_figure(facts, group="default_pg").layout.meta["pg"] == "0"
    with pytest.raises(ValueError, match="no process group"):
        alignment_figure(facts, group="nope")


def test_hover_escapes_markup_from_a_crafted_dump():
    dumps = real("desync")
    crafted = copy.deepcopy(dumps[1][1])
    for e in crafted["entries"]:
        e["profiling_name"] = "gloo:<img src=x onerror=alert(1)>"
        e["state"] = "<b>done</b>"
    facts = alignment([dumps[0], (dumps[1][0], crafted), dumps[2]])
    fig = alignment_figure(facts)
    hovers = " ".join(h for row in fig.data[0].hovertext for h in row)
    texts = " ".join(t for row in fig.data[0].text for t in row)
    assert "<img" not in hovers and "<img" not in texts and "<b>done" not in hovers
    assert "&lt;img" in hovers and "&lt;b&gt;done&lt;/b&gt;" in hovers
    assert "<img" not in fig.layout.title.text


def test_large_input_is_capped_and_says_so():
    ts = factory.world(100)
    for step in range(300):
        for t in ts:
            t.collective("all_reduce")
    ts[7].collective("broadcast", state="started")
    for t in ts[:7] + ts[8:]:
        t.collective("all_reduce", state="started")
    facts = alignment(factory.dumps(ts))
    _, first = facts.first_divergence
    assert first.seq == 301 and first.ranks == (7,)
    fig = alignment_figure(facts, max_ranks=16)
    heat = fig.data[0]
    assert len(heat.x) == MAX_SEQS and "#301" in heat.x and len(heat.y) == 16 and "rank 7" in heat.y
    assert "showing" in fig.layout.title.text and "of 100 ranks" in fig.layout.title.text
    assert KINDS[cell(fig, 7, 301)] == "blamed"


def test_no_dumps_is_one_line_value_error(tmp_path):
    (tmp_path / "rank0.log").write_text("hello\n")
    with pytest.raises(ValueError) as exc:
        run_alignment(str(tmp_path))
    assert "no flight-recorder dumps in" in str(exc.value) and str(tmp_path) in str(exc.value)
    assert "\n" not in str(exc.value)
    with pytest.raises(ValueError, match="no flight-recorder dumps"):
        ncclnb.show_alignment(str(tmp_path))


@pytest.fixture(scope="module")
def desync_run(tmp_path_factory):
    return ncclnb.reproduce("unseeded_split_desync", keep=str(tmp_path_factory.mktemp("s003") / "run"))


def test_real_seed_003_run(desync_run):
    top = desync_run.diagnosis.top
    view = ncclnb.show_alignment(desync_run)
    meta = view.figure.layout.meta
    assert meta["divergence"]["rule"].startswith("fr.") and meta["divergence"]["ranks"] == [1]
    assert set(top.ranks) == {1}
    seq = meta["divergence"]["seq"]
    assert KINDS[cell(view.figure, 1, seq)] == "blamed"
    assert all(KINDS[cell(view.figure, r, seq)] == "peer" for r in (0, 2, 3))
    assert "Flight-recorder alignment" in view.static_html()
    # the same facts from the run directory and from the diagnosis (the files it read)
    assert ncclnb.show_alignment(desync_run.run_dir).figure.layout.meta == meta
    assert ncclnb.show_alignment(desync_run.diagnosis).figure.layout.meta == meta
