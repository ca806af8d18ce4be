"""Send/recv pairing: facts from the doctor (NCCL-format dumps from the
factory; on gloo, the plan lines of one real run of seed 004) and the
figure; the marked cells are the doctor's unpaired ops."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

import ncclnb
from ncclnb.doctor.facts import run_pairing
from ncclnb.doctor.flight_recorder import analyze_dumps
from ncclnb.doctor.pairing import PLAN_MARK, pairing_from_dumps, parse_plan_line, plan_pairing
from ncclnb.guard.p2p import PLAN_PREFIX, p2p_plan_line
from ncclnb.views.pairing import KINDS, pairing_figure

HERE = Path(__file__).resolve().parents[1] / "doctor"


def _factory():
    spec = importlib.util.spec_from_file_location("ncclnb_test_fr_factory_pairing", HERE / "fr" / "factory.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


factory = _factory()


def cell(fig, src: int, dst: int) -> str:
    heat = fig.data[0]
    return KINDS[heat.z[list(heat.y).index(f"rank {src}")][list(heat.x).index(f"rank {dst}")]]


def test_guard_writes_what_the_doctor_reads():
    assert PLAN_PREFIX == PLAN_MARK
    line = "[rank2]: " + p2p_plan_line(2, {0: (3, 8)}, [(1, (1, 8)), (1, 4)], dtype="torch.bfloat16")
    plan = parse_plan_line(line, "rank2.log", 7)
    assert plan.rank == 2 and [(o.peer, o.shape, o.dtype) for o in plan.sends] == [(0, (3, 8), "bfloat16")]
    assert [(o.peer, o.shape) for o in plan.recvs] == [(1, (1, 8)), (1, (4,))]
    for bad in (
        PLAN_MARK + "{",
        PLAN_MARK + '{"rank": -1}',
        PLAN_MARK + '{"rank": 1, "sends": [{"peer": "x"}]}',
        PLAN_MARK + "[1]",
        "no plan here",
        PLAN_MARK + "{" * 100000,
    ):
        assert parse_plan_line(bad) is None


def test_nccl_recv_without_send_is_the_doctors_unpaired_cell():
    ts = factory.world(4)
    factory.all_to_all_p2p(ts)
    ts[1].recv(2, ((256,),), state="started")  # rank 1 waits for a message rank 2 never sends
    dumps = factory.dumps(ts)
    facts = pairing_from_dumps(dumps)
    assert facts.origin == "flight recorder"
    assert list(facts.findings) == [f for f in analyze_dumps(dumps) if f.category == "p2p_pairing"]
    assert [(u.src, u.dst, u.kind) for u in facts.unpaired] == [(2, 1, "recv")]
    c = facts.cell(2, 1)
    assert (len(c.sends), len(c.recvs), c.unpaired_recvs) == (1, 2, 1)
    json.dumps(facts.to_dict())
    fig = pairing_figure(facts)
    assert cell(fig, 2, 1) == "unpaired_recv"
    assert cell(fig, 0, 1) == "paired" and cell(fig, 1, 1) == "self"
    assert fig.layout.meta["unpaired"] == [[2, 1, "recv"]]
    heat = fig.data[0]
    assert heat.text[2][1] == "1/2 !"
    assert "unpaired recv" in heat.hovertext[2][1]


def test_nccl_size_mismatch_is_marked():
    ts = factory.world(2)
    ts[0].send(1, ((4,),))
    ts[1].recv(0, ((5,),))
    facts = pairing_from_dumps(factory.dumps(ts))
    assert facts.cell(0, 1).mismatch == "size" and not facts.unpaired
    assert cell(pairing_figure(facts), 0, 1) == "mismatch"


def test_gloo_dumps_without_plans_say_what_is_missing():
    with pytest.raises(ValueError) as exc:
        run_pairing(str(HERE / "repro_logs" / "alltoall_unpaired"))
    text = str(exc.value)
    assert "no send/recv in" in text and "log_p2p_plan" in text and "\n" not in text


def test_hover_escapes_markup_from_a_crafted_plan():
    plans = [
        parse_plan_line(p2p_plan_line(0, {1: (2,)}, {}, dtype="<script>x</script>"), "rank0.log"),
        parse_plan_line(p2p_plan_line(1, {}, {0: (3,)}, dtype="f<b>"), "<i>rank1.log"),
    ]
    facts = plan_pairing(plans)
    assert facts.cell(0, 1).mismatch == "size"
    fig = pairing_figure(facts)
    hovers = " ".join(h for row in fig.data[0].hovertext for h in row)
    assert "<script>" not in hovers and "&lt;script&gt;" in hovers and "f<b>" not in hovers


def test_large_plan_is_capped_and_keeps_the_unpaired():
    n = 200
    plans = [parse_plan_line(p2p_plan_line(r, {(r + 1) % n: (4,)}, {(r - 1) % n: (4,)})) for r in range(n)]
    plans[150] = parse_plan_line(p2p_plan_line(150, {}, {149: (4,)}))  # rank 150 sends nothing to 151
    facts = plan_pairing(plans)
    assert [(u.src, u.dst, u.kind) for u in facts.unpaired] == [(150, 151, "recv")]
    fig = pairing_figure(facts, max_ranks=32)
    assert len(fig.data[0].x) == 32 and "showing 32 of 200 ranks" in fig.layout.title.text
    assert cell(fig, 150, 151) == "unpaired_recv"


@pytest.fixture(scope="module")
def seed004(tmp_path_factory):
    return ncclnb.reproduce("alltoall_unpaired", keep=str(tmp_path_factory.mktemp("s004") / "run"))


def test_real_seed_004_gloo_run(seed004):
    assert seed004.backend == "gloo" and not seed004.completed
    # the doctor reads the plan lines: its finding and the matrix come from one match
    plan_finding = next(f for f in seed004.diagnosis.findings if f.rule == "plan.p2p_unmatched")
    # rank 1 had nothing for rank 2; ranks 0, 1 and 3 went on to the all_reduce: rank 2 is out of step
    assert plan_finding.category == "p2p_pairing" and plan_finding.ranks == (2,)
    assert seed004.diagnosis.top.category == "p2p_pairing" and 2 in seed004.diagnosis.top.ranks
    facts = run_pairing(seed004)
    assert facts.origin == "plan" and facts.ranks == (0, 1, 2, 3)
    assert [(u.src, u.dst, u.kind) for u in facts.unpaired] == [(1, 2, "recv")]
    assert list(facts.findings) == [plan_finding]
    view = ncclnb.show_pairing(seed004)
    fig = view.figure
    assert cell(fig, 1, 2) == "unpaired_recv"
    assert all(cell(fig, s, d) == "paired" for s in range(4) for d in range(4) if s != d and (s, d) != (1, 2))
    assert fig.data[0].text[1][2] == "0/1 !"
    assert "no send" in view.static_html()
    assert ncclnb.show_pairing(seed004.diagnosis).figure.layout.meta == fig.layout.meta
