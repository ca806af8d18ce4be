"""One incident, one card; one process, one row (issue 12).

On the real multi-rank logs recorded from the reproductions (gloo, with
flight-recorder dumps) and torch's watchdog timeouts in ``blame/``: the
failure of one job is one error card, whose consequences (the other ranks'
timeouts, the connections the failure closed, the generic wrappers) are its
evidence, and which names the ranks that printed no error; the per-rank
table has a row per process. The cards are prose with real links, in no
inner scroll box."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ncclnb.doctor import diagnose
from ncclnb.views.diagnosis import diagnosis_html, prose_html

HERE = Path(__file__).resolve().parent
# one failure each, which today's ranking turned into more than one error card (rule ids then:
# first_crash_cascade host_memory_exhausted + fr.missing_rank + connection_reset_by_peer;
# slow_rank_checkpoint fr.late_rank + connection_reset_by_peer; torch21_first_failure cuda_oom +
# watchdog_rank_missing; duplicate_rank rank_claimed_twice + dist_store_error + dist_network_error)
INCIDENTS = [
    "repro_logs/first_crash_cascade",
    "repro_logs/slow_rank_checkpoint",
    "repro_logs/duplicate_rank",
    "blame/torch21_first_failure",
    "blame/torch21_silent_rank",
    "blame/torch22_silent_rank",
    "blame/torch24_rank_behind",
]
_RANK_LOG = re.compile(r"^rank(\d+)\.log$")


def _log_ranks(case: str) -> set:
    """The ranks the case's log files are named after (one process each: a log per process)."""
    return {int(m.group(1)) for p in (HERE / case).iterdir() if (m := _RANK_LOG.match(p.name))}


@pytest.mark.parametrize("case", INCIDENTS)
def test_one_error_card_per_incident(case):
    diag = diagnose(str(HERE / case))
    errors = [f for f in diag.findings if f.severity == "error"]
    assert len(errors) == 1, f"{case}: {[f.rule for f in errors]}"
    assert diag.top is errors[0]


@pytest.mark.parametrize("case", INCIDENTS)
def test_the_card_names_the_ranks_that_printed_no_error(case):
    diag = diagnose(str(HERE / case))
    erred = {r.rank for r in diag.ranks if r.first_error}
    silent = _log_ranks(case) - erred
    top = diag.top
    for r in silent:
        assert r in top.ranks or re.search(rf"\b[Rr]anks? [0-9, -]*\b{r}\b", top.title), (case, r, top.title)


def test_consequences_are_the_cards_evidence():
    case = HERE / "repro_logs/first_crash_cascade"
    diag = diagnose(str(case))
    top = diag.top
    assert top.rule == "host_memory_exhausted" and top.ranks == (2,)
    # the ranks that waited for rank 2 (their gloo errors, the recorder's reading) are in its card
    assert {Path(e.source).name for e in top.evidence} >= {"rank2.log", "rank0.log"}
    assert "What followed from it in this job" in top.cause
    assert not any(f.rule in ("fr.missing_rank", "connection_reset_by_peer") for f in diag.findings)
    # the same in the JSON form
    assert [f["rule"] for f in diag.to_dict()["findings"]] == [f.rule for f in diag.findings]


@pytest.mark.parametrize("case", INCIDENTS + ["repro_logs/rank_beyond_world_size", "repro_logs/unseeded_split_desync"])
def test_one_row_per_process(case):
    diag = diagnose(str(HERE / case))
    processes = _log_ranks(case)
    assert len(diag.ranks) == len({r.rank for r in diag.ranks}), case
    assert all(r.rank is not None for r in diag.ranks), case
    # a rank that printed only a line nobody reads has no row; no process has two
    assert {r.rank for r in diag.ranks} <= processes and len(diag.ranks) <= len(processes), case


# NCCL's own lines (host:pid:tid [dev]) beside torch's ([rankN]:) for the same four processes, as
# notebooks/05_alltoall_pairing.ipynb's doctor cell shows them: NCCL's abort line says which rank pid
# 7712 is, so its proxy warning belongs to rank 2's row, not to a fifth one
def _timeout(rank: int, seq: int, op: str, numel: int, ms: int) -> str:
    return (
        f"[rank{rank}]:[E ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught collective operation timeout: "
        f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={numel}, NumelOut={numel}, Timeout(ms)=600000) ran for {ms} "
        "milliseconds before timing out.\n"
    )


_NCCL_AND_TORCH = (
    _timeout(0, 412, "ALLREDUCE", 1, 600050)
    + _timeout(1, 412, "ALLREDUCE", 1, 600049)
    + _timeout(3, 412, "ALLREDUCE", 1, 600051)
    + _timeout(2, 411, "RECV", 65536, 600112)
    + "moe-1:7712:7790 [2] proxy.cc:1496 NCCL WARN [Service thread] Accept failed Resource temporarily unavailable\n"
    + "moe-1:7712:7712 [2] NCCL INFO comm 0x5581c0a3e2f0 rank 2 nranks 4 cudaDev 2 busId b3000 - Abort COMPLETE\n"
)


def test_nccl_and_torch_lines_of_one_process_are_one_row():
    diag = diagnose(_NCCL_AND_TORCH)
    torch_ranks = set(re.findall(r"^\[rank(\d+)\]", _NCCL_AND_TORCH, re.M))
    assert len(diag.ranks) == len(torch_ranks)
    row = next(r for r in diag.ranks if r.rank == 2)
    assert (row.host, row.pid) == ("moe-1", 7712)
    # the proxy's failure on the way down is part of the timeout's card, not a card of its own
    assert [f.severity for f in diag.findings].count("error") == 1
    assert any("Accept failed" in e.text for e in diag.top.evidence)


def test_cards_are_prose_with_links_and_no_scroll_box():
    diag = diagnose(str(HERE / "repro_logs/first_crash_cascade"))
    html = diagnosis_html(diag)
    assert "max-height" not in html and "overflow:auto" not in html and "overflow:scroll" not in html
    assert "word-break:break-all" not in html and "word-break:normal" in html and "hyphens:manual" in html
    # the fix is prose, not a preformatted block
    assert "<pre" not in html.split("<b>Fix:</b>", 1)[1].split("</div>", 1)[0]
    for docs in {f.docs for f in diag.findings if f.docs.startswith("http")}:
        assert re.search(rf'<a href="{re.escape(docs)}"[^>]*text-decoration:underline', html)


def test_only_http_links_become_anchors_and_text_stays_escaped():
    html = prose_html('see https://example.org/a?b=1&c="x" or javascript:alert(1) <img src=x onerror=y>.')
    assert html.count("<a ") == 1
    assert 'href="https://example.org/a?b=1&amp;c="' in html
    assert "javascript:alert(1)" in html and "&lt;img" in html and "<img" not in html


def test_the_views_have_no_inner_scroll_box():
    pytest.importorskip("ipywidgets")
    from ncclnb.views.diagnosis import show_diagnosis

    view = show_diagnosis(diagnose(str(HERE / "repro_logs/first_crash_cascade")))
    box = view.widget
    assert box.layout.max_height is None and box.layout.overflow in (None, "")
