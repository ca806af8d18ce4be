"""Flight recorder dump analysis: real gloo dumps (fixtures made by
fr/make_dumps.py with torch 2.13) and synthetic NCCL-style ones (fr/factory.py)."""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ncclnb.doctor import flight_recorder as fr
from ncclnb.doctor.flight_recorder import analyze_dumps, dump_rank_status, looks_like_dump
from ncclnb.doctor.sources import rank_from_name
from ncclnb.model import Finding, RankStatus

FR_DIR = Path(__file__).resolve().parent / "fr"


def _load_module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


factory = _load_module("ncclnb_test_fr_factory", FR_DIR / "factory.py")


def real(scenario: str) -> list[tuple[str, dict]]:
    files = sorted((FR_DIR / scenario).glob("rank*.json"))
    assert files, f"fixture {scenario} is missing: run tests/doctor/fr/make_dumps.py"
    return [(str(f), json.loads(f.read_text())) for f in files]


def errors(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == "error"]


def only_error(findings: list[Finding]) -> Finding:
    errs = errors(findings)
    assert len(errs) == 1, [f.title for f in findings]
    return errs[0]


# ----------------------------------------------------------------- real gloo dumps


def test_real_healthy_has_no_error():
    findings = analyze_dumps(real("healthy"))
    assert errors(findings) == []


def test_real_desync_names_the_rank_that_ran_another_collective():
    f = only_error(analyze_dumps(real("desync")))
    assert (f.rule, f.category, f.ranks) == ("fr.desync_op", "collective_desync", (1,))
    assert "broadcast" in f.title and "all_reduce" in f.title and "#4" in f.title
    texts = [e.text for e in f.evidence]
    assert any(t.startswith("rank 1 seq 4: broadcast [8] float32") for t in texts)
    assert any(t.startswith("rank 0 seq 4: all_reduce [8] float32") for t in texts)
    assert all(e.line is None and e.source.endswith(".json") for e in f.evidence)


def test_real_size_mismatch_blames_the_odd_rank_at_its_sequence_id():
    f = only_error(analyze_dumps(real("size_mismatch")))
    assert (f.rule, f.category, f.ranks) == ("fr.size_mismatch", "collective_desync", (2,))
    assert any(e.text.startswith("rank 2 seq 4: all_reduce [12]") for e in f.evidence)
    assert any(e.source.endswith("rank2.json") for e in f.evidence)


def test_real_slow_rank_that_never_arrived_is_slow_not_desync():
    f = only_error(analyze_dumps(real("slow_rank")))
    assert (f.rule, f.category, f.ranks) == ("fr.missing_rank", "slow_rank_timeout", (0,))
    assert "#5" in f.title
    assert any(e.text.startswith("rank 0 seq 4: all_reduce") for e in f.evidence)


def test_real_late_rank_is_found_from_its_own_clock():
    f = only_error(analyze_dumps(real("late_rank")))
    assert (f.rule, f.category, f.ranks) == ("fr.late_rank", "slow_rank_timeout", (0,))


def test_real_dump_rank_status():
    rows = dump_rank_status(real("slow_rank"))
    assert [type(r) for r in rows] == [RankStatus] * 3
    assert [(r.rank, r.last_seq, r.last_op) for r in rows] == [(0, 4, "all_reduce"), (1, 5, "all_reduce"), (2, 5, "all_reduce")]
    assert all(r.nccl_version is None for r in rows)  # gloo writes comm_lib_version ""
    assert rows[0].source.endswith("slow_rank/rank0.json")


def test_findings_are_json_ready():
    for scenario in ("desync", "size_mismatch", "slow_rank", "late_rank"):
        for f in analyze_dumps(real(scenario)):
            data = json.loads(json.dumps(f.to_dict()))
            assert Finding.from_dict(data) == f


def test_looks_like_dump():
    raw = (FR_DIR / "healthy" / "rank0.json").read_bytes()
    assert looks_like_dump(raw) and looks_like_dump(raw.decode())
    assert looks_like_dump(json.dumps(factory.world(2)[0].dump()))
    # what torch 2.13 writes with TORCH_FR_BUFFER_SIZE=0: no "entries" at all
    off = '{"comm_lib_version":"","nccl_comm_state":{},"pg_config":{},"pg_status":{},"version":"2.10"}'
    assert looks_like_dump(off)
    (f,) = analyze_dumps([("rank0.json", json.loads(off))])
    assert f.severity == "info" and "TORCH_FR_BUFFER_SIZE" in f.title
    assert not looks_like_dump("[rank0]: NCCL INFO Bootstrap : Using eth0\n")
    assert not looks_like_dump('{"findings": [], "entries_read": 3}')
    assert not looks_like_dump(b"\x00\xff\xfe" * 100)
    assert not looks_like_dump(b"")
    assert not looks_like_dump(None)


# ----------------------------------------------------------------- the generator


def test_generator_still_matches_torch(tmp_path):
    """Re-run one real scenario: the dumps torch writes today must have the
    layout of the committed fixtures and the quirks the module relies on."""
    pytest.importorskip("torch")
    gen = _load_module("ncclnb_test_fr_make_dumps", FR_DIR / "make_dumps.py")
    codes = gen.run("healthy", tmp_path, limit_s=90)
    assert codes == {0: 0, 1: 0, 2: 0}
    fresh = [(str(p), json.loads(p.read_text())) for p in sorted((tmp_path / "healthy").glob("*.json"))]
    fixture = real("healthy")
    assert len(fresh) == 3
    for (_, new), (_, old) in zip(fresh, fixture):
        assert set(new) == set(old)
        assert [set(e) for e in new["entries"]] == [set(e) for e in old["entries"]]
        assert [e["profiling_name"] for e in new["entries"]] == [e["profiling_name"] for e in old["entries"]]
        # the gloo quirks DESIGN.md records: every state "scheduled", pg_config unnamed
        assert {e["state"] for e in new["entries"]} == {"scheduled"}
        assert all(not key for key in new["pg_config"])
    assert errors(analyze_dumps(fresh)) == []
    assert [r.last_op for r in dump_rank_status(fresh)] == ["barrier"] * 3


# ----------------------------------------------------------------- collectives, NCCL-style


def test_nccl_healthy_with_subgroups_and_coalesced_ops():
    groups = {"0": ("default_pg", (0, 1, 2, 3)), "1": ("tp", (0, 1)), "2": ("tp", (2, 3))}
    ts = factory.world(4, groups)
    for t in ts:
        t.collective("all_reduce", ((1024,),))
        t.coalesced([("all_reduce", ((8,),)), ("all_reduce", ((16,),))])
        t.collective("_all_gather_base", ((64,),), out_sizes=((256,),))
        tp = "1" if t.rank < 2 else "2"
        t.collective("all_reduce", ((32,),), pg=tp)
        # all_to_all sizes legitimately differ between ranks
        t.collective("all_to_all_single", ((10 + t.rank,),), out_sizes=((7,),))
    findings = analyze_dumps(factory.dumps(ts))
    assert findings == []
    rows = dump_rank_status(factory.dumps(ts))
    assert [r.nccl_version for r in rows] == ["2.21.5"] * 4
    assert rows[0].last_seq == 4 and rows[0].last_op == "all_to_all_single"


def test_dtype_mismatch():
    ts = factory.world(3)
    for t in ts:
        t.collective("all_reduce", ((512,),), dtype="BFloat16" if t.rank == 2 else "Float")
    f = only_error(analyze_dumps(factory.dumps(ts)))
    assert (f.rule, f.category, f.ranks) == ("fr.dtype_mismatch", "collective_desync", (2,))
    assert any("bfloat16" in e.text for e in f.evidence)


def test_first_divergence_only():
    ts = factory.world(4)
    for t in ts:
        t.collective("all_reduce")
        t.collective("broadcast" if t.rank == 3 else "all_reduce")  # first divergence
        t.collective("all_reduce", ((1,),) if t.rank == 0 else ((2,),))  # later noise
    f = only_error(analyze_dumps(factory.dumps(ts)))
    assert (f.rule, f.ranks) == ("fr.desync_op", (3,))
    assert "#2" in f.title


def test_tie_blames_every_rank_involved():
    ts = factory.world(2)
    ts[0].collective("all_reduce")
    ts[1].collective("all_gather_into_tensor", ((4,),), out_sizes=((8,),))
    f = only_error(analyze_dumps(factory.dumps(ts)))
    assert f.rule == "fr.desync_op" and f.ranks == (0, 1) and f.confidence < 0.9


def test_extra_collective_on_a_minority_is_desync():
    ts = factory.world(4)
    for t in ts:
        t.collective("all_reduce")
    ts[0].collective("all_reduce", ((1,),), state="started")  # rank 0 logs a metric alone
    f = only_error(analyze_dumps(factory.dumps(ts)))
    assert (f.rule, f.category, f.ranks) == ("fr.extra_collective", "collective_desync", (0,))


def test_missing_rank_stuck_in_another_group_is_desync():
    groups = {"0": ("default_pg", (0, 1, 2, 3)), "1": ("pp", (1, 3))}
    ts = factory.world(4, groups)
    for t in ts:
        t.collective("all_reduce")
    # rank 3 enters a pipeline-group collective rank 1 never calls; the others reduce
    ts[3].collective("broadcast", pg="1", state="started")
    for r in (0, 1, 2):
        ts[r].collective("all_reduce", state="started")
    findings = analyze_dumps(factory.dumps(ts))
    f = only_error(findings)
    assert (f.rule, f.category, f.ranks) == ("fr.missing_rank_elsewhere", "collective_desync", (3,))


def test_missing_rank_behind_with_finished_last_op_is_slow():
    ts = factory.world(4)
    for t in ts:
        t.collective("all_reduce")
    for r in (1, 2, 3):
        ts[r].collective("all_reduce", state="started")
    f = only_error(analyze_dumps(factory.dumps(ts)))
    assert (f.rule, f.category, f.ranks) == ("fr.missing_rank", "slow_rank_timeout", (0,))


def test_rank_that_recorded_nothing_in_default_group_is_missing():
    ts = factory.world(3)
    for r in (0, 1):
        ts[r].collective("all_reduce", state="started")
    f = only_error(analyze_dumps(factory.dumps(ts)))
    assert f.rule == "fr.missing_rank" and f.ranks == (2,)


def test_late_rank_within_timeout_is_fine():
    ts = factory.world(3, timeout_ms=10_000)
    for t in ts:
        t.collective("all_reduce")
    ts[0].wait(4.0)  # slower, but well within the timeout
    for t in ts:
        t.collective("all_reduce")
    assert analyze_dumps(factory.dumps(ts)) == []
    ts[1].wait(30.0)
    for t in ts:
        t.collective("all_reduce")
    f = only_error(analyze_dumps(factory.dumps(ts)))
    assert (f.rule, f.ranks) == ("fr.late_rank", (1,))


def test_late_rank_ignores_clock_offsets_between_hosts():
    ts = factory.world(2, timeout_ms=5_000)
    ts[1].now_ns += 3600 * 10**9  # host of rank 1 runs an hour ahead
    for t in ts:
        t.collective("all_reduce")
        t.collective("all_reduce")
    assert analyze_dumps(factory.dumps(ts)) == []


def test_wrapped_ring_buffer_is_aligned_not_blamed():
    ts = factory.world(3)
    for t in ts:
        for _ in range(6):
            t.collective("all_reduce")
    pairs = factory.dumps(ts)
    # rank 1's ring buffer dropped its first two entries
    pairs[1][1]["entries"] = pairs[1][1]["entries"][2:]
    assert analyze_dumps(pairs) == []


def test_missing_dump_is_noted_not_blamed():
    ts = factory.world(4)
    for t in ts:
        t.collective("all_reduce")
    findings = analyze_dumps(factory.dumps(ts[:3]))
    assert errors(findings) == []
    assert [f.rule for f in findings] == ["fr.missing_dump"]
    assert "rank 3" in findings[0].title


# ----------------------------------------------------------------- point to point


def test_balanced_all_to_all_has_no_p2p_finding():
    for batched in (True, False):
        ts = factory.world(4)
        factory.all_to_all_p2p(ts, batched=batched)
        assert analyze_dumps(factory.dumps(ts)) == []


def test_recv_without_send_blames_the_silent_sender_not_the_receiver():
    ts = factory.world(4)
    factory.all_to_all_p2p(ts)
    ts[1].recv(2, ((256,),), state="started")  # rank 1 waits for a message rank 2 never sends
    f = only_error(analyze_dumps(factory.dumps(ts)))
    assert (f.rule, f.category) == ("fr.p2p_unmatched", "p2p_pairing")
    assert f.ranks == (2,)
    assert any("recv 1<-2" in e.text and "rank 2 posted no matching send" in e.text for e in f.evidence)
    assert "rank 2 never posted the matching op that rank 1 waits for" in f.cause


def test_wrong_peer_in_custom_all_to_all_blames_that_rank_first():
    """Seed 004: a hand-written all-to-all where one rank computes a wrong peer."""

    def peer_of(rank, step, n):
        to, frm = (rank + step) % n, (rank - step) % n
        if rank == 3 and step == 2:
            to = (to + 1) % n  # rank 3 sends to 2 instead of 1
        return to, frm

    ts = factory.world(4)
    factory.all_to_all_p2p(ts, peer_of=peer_of)
    f = only_error(analyze_dumps(factory.dumps(ts)))
    # its send to 2 has no receive and rank 1 waits for the message it meant for 1: one rank explains both
    assert f.rule == "fr.p2p_unmatched" and f.ranks == (3,)
    assert "rank 3 is at one end of 2 of them" in f.cause
    texts = " | ".join(e.text for e in f.evidence)
    assert "send 3->2" in texts and "recv 1<-3" in texts


def test_p2p_order_mismatch():
    ts = factory.world(2)
    ts[0].send(1, ((4,),)).send(1, ((8,),))
    ts[1].recv(0, ((8,),)).recv(0, ((4,),))
    f = only_error(analyze_dumps(factory.dumps(ts)))
    assert (f.rule, f.category, f.ranks) == ("fr.p2p_order", "p2p_pairing", (0, 1))


def test_p2p_size_mismatch():
    ts = factory.world(2)
    ts[0].send(1, ((4,),))
    ts[1].recv(0, ((5,),))
    f = only_error(analyze_dumps(factory.dumps(ts)))
    assert f.rule == "fr.p2p_size_mismatch" and f.ranks == (0, 1)


def test_p2p_in_subgroup_maps_group_ranks_to_global():
    groups = {"0": ("default_pg", (0, 1, 2, 3)), "5": ("pp", (1, 3))}
    ts = factory.world(4, groups)
    ts[1].send(1, pg="5")  # group rank 1 is global rank 3
    ts[3].recv(0, pg="5")  # group rank 0 is global rank 1
    assert analyze_dumps(factory.dumps(ts)) == []
    ts[3].recv(0, pg="5", state="started")
    f = only_error(analyze_dumps(factory.dumps(ts)))
    # global rank 3 waits for a message from group rank 0, global rank 1, which never sends it
    assert f.rule == "fr.p2p_unmatched" and f.ranks == (1,)


def test_send_to_a_rank_that_waits_on_someone_else_blames_that_rank():
    # rank 0 sends to 1; rank 1 posted a receive from 2 instead (2 never sends to 1): rank 1 is out of step
    ts = factory.world(3)
    ts[0].send(1, state="started")
    ts[1].recv(2, state="started")
    f = only_error(analyze_dumps(factory.dumps(ts)))
    assert f.rule == "fr.p2p_unmatched" and f.ranks == (1,)
    assert "nothing tells" not in f.title


def test_send_to_a_rank_in_another_op_blames_that_rank():
    # two ranks: rank 0 sends to 1, rank 1 went into an all_reduce instead of receiving
    ts = factory.world(2)
    ts[0].collective("all_reduce").send(1, state="started")
    ts[1].collective("all_reduce").collective("all_reduce", state="started")
    found = [f for f in analyze_dumps(factory.dumps(ts)) if f.rule == "fr.p2p_unmatched"]
    assert found and found[0].ranks == (1,)


def test_a_rank_left_in_the_exchange_while_the_rest_went_on_is_blamed():
    # seed 004's shape: rank 2 receives from 1, which had nothing for it; ranks 0, 1 and 3 went on to
    # the next all_reduce and wait there for rank 2: the rank out of step is rank 2
    ts = factory.world(4)
    factory.all_to_all_p2p(ts)
    ts[2].recv(1, state="started")
    for r in (0, 1, 3):
        ts[r].collective("all_reduce", state="started")
    f = next(f for f in analyze_dumps(factory.dumps(ts)) if f.rule == "fr.p2p_unmatched")
    assert f.ranks == (2,)
    assert "went on to a later collective that it never reached" in f.cause


def test_symmetric_mismatch_blames_both_and_says_so():
    ts = factory.world(2)
    ts[0].send(1, state="started")
    ts[1].send(0, state="started")  # both send, neither receives
    f = only_error(analyze_dumps(factory.dumps(ts)))
    assert f.rule == "fr.p2p_unmatched" and f.ranks == (0, 1)
    assert "nothing tells which end is wrong" in f.title and "cannot tell which end" in f.cause


@pytest.mark.parametrize(
    "edges, ahead, blamed, certain",
    [
        ([(1, 2)], (), (2,), True),  # the peer never posted its half
        ([(2, 1)], (0, 1, 3), (2,), True),  # ... unless the rest went on without the poster
        ([(2, 1)], (1,), (1,), True),  # one rank ahead is no majority
        ([(0, 1), (1, 2)], (), (1,), True),  # a chain: the rank in the middle
        ([(3, 2), (1, 3)], (), (3,), True),  # a wrong peer
        ([(0, 1), (1, 0)], (), (0, 1), False),  # symmetric
        ([(0, 1), (2, 3)], (), (1, 3), True),  # two separate ops
        ([(r, 2) for r in (0, 1, 3)], (), (2,), True),  # everybody waits for one rank
    ],
)
def test_p2p_culprits(edges, ahead, blamed, certain):
    assert fr.p2p_culprits(edges, ahead) == (blamed, certain)


# ----------------------------------------------------------------- ranks of dumps


@pytest.mark.parametrize(
    "name,rank",
    [
        ("rank3.json", 3),
        ("fr_rank_12.json", 12),
        ("/x/y/nccl_trace_7", 7),
        ("trace-5.json", 5),
        ("RANK2.JSON", 2),
        ("dump.json", None),
        ("trace_20240101123000.json", None),
    ],
)
def test_rank_from_file_name(name, rank):
    assert rank_from_name(name, trailing_number=True) == rank


def test_rank_from_key_then_name_then_p2p():
    ts = factory.world(2)
    ts[0].send(1)
    ts[1].recv(0)
    d0, d1 = ts[0].dump(), ts[1].dump()
    rows = dump_rank_status([("a.json", d0), ("b.json", d1)])  # ranks from the p2p entries
    assert [r.rank for r in rows] == [0, 1]
    d1_keyed = dict(d1, rank=1)
    rows = dump_rank_status([("x.json", d0), ("y_rank9.json", d1_keyed)])
    assert [(r.rank, r.source) for r in rows] == [(0, "x.json"), (1, "y_rank9.json")]


def test_unknown_and_duplicate_ranks_are_skipped_with_info():
    ts = factory.world(2)
    for t in ts:
        t.collective("all_reduce")
    pairs = [("rank0.json", ts[0].dump()), ("again_rank0.json", ts[1].dump()), ("dump.json", ts[1].dump())]
    findings = analyze_dumps(pairs)
    # rank 1 has no usable dump left, and pg_config says it is a member
    assert {f.rule for f in findings} == {"fr.duplicate_rank", "fr.bad_dump", "fr.missing_dump"}
    assert all(f.severity == "info" for f in findings)


# ----------------------------------------------------------------- bad input


def _mutations(base: dict):
    yield None
    yield []
    yield "text"
    yield {}
    yield {"entries": "nope"}
    yield {"entries": [1, 2]}
    d = copy.deepcopy(base)
    del d["entries"][0]["profiling_name"]
    yield d
    d = copy.deepcopy(base)
    d["entries"][0]["input_sizes"] = [["a"]]
    yield d
    d = copy.deepcopy(base)
    d["entries"][0]["process_group"] = "0"
    yield d
    d = copy.deepcopy(base)
    d["entries"][0]["collective_seq_id"] = True
    yield d
    d = copy.deepcopy(base)
    d["pg_config"] = {"0": {"ranks": "__import__('os')"}}  # never evaluated
    yield d


def test_malformed_dumps_are_skipped_never_raise():
    _, good = real("healthy")[0]
    for bad in _mutations(good):
        findings = analyze_dumps([("rank1.json", bad), ("rank0.json", good)])
        assert all(isinstance(f, Finding) for f in findings)
        assert errors(findings) == []
        assert isinstance(dump_rank_status([("rank1.json", bad)]), list)
    assert analyze_dumps([]) == [] and dump_rank_status([]) == []
    assert all(f.severity == "info" for f in analyze_dumps([("a",), 3, None]))


def test_huge_dump_is_skipped(monkeypatch):
    monkeypatch.setattr(fr, "MAX_ENTRIES", 3)
    findings = analyze_dumps(real("healthy"))
    assert len(findings) == 3 and {f.rule for f in findings} == {"fr.bad_dump"}
    assert "entries" in findings[0].title


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 2**40) | st.text(max_size=8),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=20,
)
_ENTRY_KEYS = [
    "profiling_name",
    "collective_seq_id",
    "p2p_seq_id",
    "process_group",
    "input_sizes",
    "output_sizes",
    "input_dtypes",
    "state",
    "time_created_ns",
    "timeout_ms",
    "is_p2p",
    "record_id",
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fuzz_mutated_real_dumps_never_raise(data):
    pairs = copy.deepcopy(real(data.draw(st.sampled_from(["desync", "slow_rank", "healthy"]))))
    for _ in range(data.draw(st.integers(1, 4))):
        _, dump = pairs[data.draw(st.integers(0, len(pairs) - 1))]
        entries = dump.get("entries")
        if isinstance(entries, list) and entries and data.draw(st.booleans()):
            entry = entries[data.draw(st.integers(0, len(entries) - 1))]
            if isinstance(entry, dict):
                entry[data.draw(st.sampled_from(_ENTRY_KEYS))] = data.draw(_json)
        else:
            dump[data.draw(st.sampled_from(["entries", "pg_config", "comm_lib_version", "rank"]))] = data.draw(_json)
    findings = analyze_dumps(pairs)
    assert all(isinstance(f, Finding) for f in findings)
    assert all(isinstance(r, RankStatus) for r in dump_rank_status(pairs))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=12), _json), max_size=4), st.binary(max_size=64))
def test_fuzz_random_input_never_raises(pairs, blob):
    assert all(isinstance(f, Finding) for f in analyze_dumps(pairs))
    assert isinstance(dump_rank_status(pairs), list)
    assert looks_like_dump(blob) in (True, False)


@pytest.mark.parametrize(
    "config, world",
    [
        ({"": {"name": "", "desc": "", "ranks": "[0, 1, 2]"}}, 3),  # gloo: unnamed
        (
            {
                "0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3]"},
                "5": {"name": "5", "desc": "pp", "ranks": "[1, 7]"},
            },
            8,
        ),  # a subgroup's global ranks
        ({"0": {"name": "0", "desc": "default_pg", "ranks": [0, 1]}}, 2),  # a list, not text
        ({"0": {"name": "0", "desc": "default_pg", "ranks": "all"}}, None),  # says no number
        ({"0": {"ranks": "[]"}}, None),
        ({}, None),
        ("nonsense", None),
    ],
)
def test_world_size_from_pg_config(config, world):
    d = json.loads((FR_DIR / "healthy" / "rank0.json").read_text())
    d["pg_config"] = config
    assert fr.world_size([("rank0.json", d)]) == world


def test_real_dumps_name_the_world_so_a_missing_dump_is_noted():
    # gloo's pg_config has no group name, but its ranks are the world's: rank 2 gave no dump
    findings = analyze_dumps(real("healthy")[:2])
    assert errors(findings) == []
    assert [f.rule for f in findings] == ["fr.missing_dump"] and "rank 2 " in findings[0].title
    assert fr.world_size(real("healthy")[:2]) == 3
