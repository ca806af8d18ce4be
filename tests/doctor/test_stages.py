"""The doctor's stages, each alone: read (core.read), match (match.Matcher),
the rank table (rank_table.RankRows) and the ranking (ranking)."""

from __future__ import annotations

import os

from ncclnb.doctor import rank_table, ranking
from ncclnb.doctor.core import Inputs, read
from ncclnb.doctor.kb import load_signatures
from ncclnb.doctor.match import Matcher, SourceContext
from ncclnb.doctor.rank_table import RankRows
from ncclnb.doctor.ranking import order, rank_findings
from ncclnb.doctor.sources import expand
from ncclnb.model import Finding, RankStatus

FR = os.path.join(os.path.dirname(__file__), "fr", "desync")
COMM = "node-a:4121:4188 [3] NCCL INFO comm 0x55d8db252140 rank {rank} nRanks 4 nNodes 1 localRanks 4 localRank 3 MNNVL 0"
INTERNAL = "node-a:4121:4188 [3] misc/utils.cc:12 NCCL WARN ncclInternalError: Internal check failed."


def _matcher() -> Matcher:
    return Matcher(load_signatures(), RankRows())


def _feed(matcher: Matcher, *lines: str, name: str = "job.log") -> SourceContext:
    ctx = SourceContext(name, 0, None)
    for no, line in enumerate(lines, 1):
        matcher.line(ctx, no, line.encode())
    return ctx


# ---- read --------------------------------------------------------------------
def test_read_hands_a_log_to_the_matcher_line_by_line(tmp_path):
    log = tmp_path / "rank2.log"
    log.write_text(f"{INTERNAL}\nnothing to see\n")
    matcher, inputs, dumps = _matcher(), Inputs(), []
    read(next(iter(expand((str(log),)))), 0, inputs, matcher, dumps)
    assert inputs.lines_read == 2 and not dumps and not inputs.skipped
    assert matcher.hits["nccl_internal_error"].count == 1
    assert matcher.rows.source_ranks == {2}  # named after its rank


def test_read_keeps_a_dump_and_notes_what_is_not_a_log(tmp_path):
    binary = tmp_path / "core.1234"
    binary.write_bytes(bytes(range(256)) * 64)
    report = tmp_path / "report.json"
    report.write_text('{"schema": "ncclnb.report/1", "nodes": []}')
    matcher, inputs, dumps = _matcher(), Inputs(), []
    for i, src in enumerate(expand((os.path.join(FR, "rank0.json"), str(binary), str(report)))):
        read(src, i, inputs, matcher, dumps)
    assert [name for name, _ in dumps] == [os.path.join(FR, "rank0.json")]
    assert [(i, why) for i, _, why in inputs.skipped] == [(1, "binary data, not a log")]
    assert [i for i, _, _ in inputs.blank] == [2]
    assert inputs.lines_read == 0 and not matcher.hits


# ---- match -------------------------------------------------------------------
def test_matcher_keeps_hits_and_rows_by_process_until_a_comm_line_names_its_rank():
    matcher = _matcher()
    _feed(matcher, INTERNAL, INTERNAL)
    hits = matcher.hits["nccl_internal_error"]
    assert (hits.count, hits.printers, hits.first) == (2, {("pid", "node-a", 4121)}, (0, 1))
    assert list(matcher.rows.rows) == [("pid", "node-a", 4121)]
    _feed(matcher, COMM.format(rank=3))
    assert matcher.world_size == 4 and matcher.rows.pid_rank == {("node-a", 4121): (4, 3, 3)}


def test_matcher_keeps_a_warn_no_signature_knows_under_the_category_of_its_source():
    matcher = _matcher()
    _feed(matcher, "node-a:4121:4188 [3] transport/net_ib.cc:1038 NCCL WARN NET/IB : something new went wrong")
    assert list(matcher.warns) == ["ib_misconfig"] and not matcher.hits


# ---- rank table ----------------------------------------------------------------
def test_fold_moves_a_process_row_to_the_rank_its_comm_line_gave():
    matcher = _matcher()
    _feed(matcher, INTERNAL, COMM.format(rank=3))
    rows = matcher.rows
    rows.fold(matcher.state)
    assert list(rows.rows) == [3]
    assert (rows.rows[3].host, rows.rows[3].pid, rows.rows[3].first_rule) == ("node-a", 4121, "nccl_internal_error")
    assert rows.present() == {3} and rows.missing(None, 4) == [0, 1, 2]


def test_table_merges_the_recorder_statuses_and_counts_the_ranks_cut(monkeypatch):
    monkeypatch.setattr(rank_table, "MAX_RANKS", 2)
    rows = RankRows()
    for r in range(4):
        rows.row(r)
    rows.row(7, keep=True).host = "node-b"  # a rank that printed an error: kept past the cut
    table, cut = rows.table([RankStatus(rank=0, last_seq=12), RankStatus(rank=9)], blamed={7})
    assert [(s.rank, s.last_seq, s.host) for s in table] == [(0, 12, None), (1, None, None), (7, None, "node-b")]
    assert cut == 3  # ranks 2 and 3 refused, 9 past the cut
    assert rank_table.cut_note(cut).title == "Rank table cut at 2 ranks: 3 more ranks not shown"


# ---- ranking -----------------------------------------------------------------
def _f(rule: str, category: str, alternative_of: str = "") -> Finding:
    return Finding(rule, category, "info", 0.5, rule, alternative_of=alternative_of)


def test_order_sorts_by_tier_then_confidence_and_keeps_one_finding_a_rule():
    a, b, c = _f("a", "unknown"), _f("b", "ib_misconfig"), _f("c", "socket_ifname")
    ranked = order([(1, 0.9, (0,), a), (0, 0.2, (5,), b), (0, 0.7, (9,), c), (0, 0.9, (1,), b)])
    assert [f.rule for f in ranked] == ["b", "c", "a"]


def test_order_drops_an_alternative_whose_category_a_finding_of_its_own_names():
    base, real = _f("x", "version_mismatch"), _f("y", "socket_ifname")
    covered, kept = _f("x", "socket_ifname", "x"), _f("x", "ib_misconfig", "x")
    ranked = order([(0, 0.9, (0,), base), (2, 0.5, (0,), covered), (2, 0.5, (0,), kept), (4, 0.1, (0,), real)])
    assert [(f.rule, f.category) for f in ranked] == [("x", "version_mismatch"), ("x", "ib_misconfig"), ("y", "socket_ifname")]


def test_a_generic_error_alone_is_read_as_its_candidate_causes_most_likely_first():
    matcher = _matcher()
    _feed(matcher, INTERNAL, COMM.format(rank=3))
    matcher.rows.fold(matcher.state)
    findings, statuses = rank_findings(matcher, Inputs(), [], matcher.world_size)
    *candidates, wrapper = findings
    assert wrapper.rule == "nccl_internal_error" and statuses == []  # says something failed, not why: last
    assert 0 < len(candidates) <= ranking.MAX_CANDIDATES
    assert all(f.rule == f"candidate.internal.{f.category}" for f in candidates)
    assert [f.confidence for f in candidates] == sorted((f.confidence for f in candidates), reverse=True)
