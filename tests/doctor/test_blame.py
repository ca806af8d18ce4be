"""Blame the culprit, not the printers: the ``ranks`` of the first finding
name the ranks that are wrong (the one that lagged, failed first, never
joined), and one watchdog timeout is one card.

The per-rank log sets under ``blame/`` are written from torch's own wordings
(2.0-2.1 ``WorkNCCL(SeqNum=...)`` only, 2.2-2.3 ``[PG 0 Rank 1] Timeout at
NCCL work: N, last enqueued NCCL work: N, ...``, 2.4 ``Exception ...
detected by watchdog at work`` and the ``Received a dump signal`` line of a
rank that did not time out, 2.5+ ``failure detected by watchdog at work
sequence id: N PG status: last enqueued work: N, ...``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncclnb.doctor import diagnose

HERE = Path(__file__).resolve().parent / "blame"


def _errors(diag):
    return [f for f in diag.findings if f.severity == "error"]


@pytest.mark.parametrize(
    "case, rule, culprits",
    [
        ("torch24_rank_behind", "watchdog_rank_behind", (2,)),
        ("torch25_rank_behind", "watchdog_rank_behind", (3,)),
        ("torch22_silent_rank", "watchdog_rank_missing", (3,)),
        ("torch21_silent_rank", "watchdog_rank_missing", (2,)),
    ],
)
def test_the_lagging_rank_is_blamed_in_every_watchdog_wording(case, rule, culprits):
    diag = diagnose(str(HERE / case))
    top = diag.findings[0]
    assert (top.rule, top.category, top.ranks) == (rule, "slow_rank_timeout", culprits)
    # one incident, one card: the other ranks' timeout, "taking the process down" and wrapper lines are in it
    assert [f.rule for f in _errors(diag)] == [rule]
    printers = {e.source for e in top.evidence}
    assert len(printers) >= 3, top.evidence
    assert "one incident" in top.title


def test_progress_lines_of_the_rank_that_did_not_time_out_are_its_evidence():
    top = diagnose(str(HERE / "torch24_rank_behind")).findings[0]
    assert top.evidence[0].source.endswith("rank2.log")
    assert "Last enqueued NCCL work: 3050" in top.evidence[0].text


def test_the_rank_that_failed_first_is_the_cause_and_the_timeouts_its_consequence():
    diag = diagnose(str(HERE / "torch21_first_failure"))
    top = diag.findings[0]
    assert (top.category, top.ranks) == ("oom_or_resource", (2,)) and "rank 2 failed first" in top.title
    # one incident, one card (issue 12): the other ranks' timeout is folded into the cause's card
    assert [f.rule for f in _errors(diag)] == [top.rule]
    assert "Rank 2 never reached the collective the others timed out in" in top.cause
    assert {e.source.rsplit("/", 1)[-1] for e in top.evidence} >= {"rank2.log", "rank0.log"}


def _wd(rank, seq, done, pg="0"):
    return (
        f"[rank{rank}]:[E ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught collective operation timeout: "
        f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for 600071 "
        "milliseconds before timing out.\n"
        f"[rank{rank}]:[E ProcessGroupNCCL.cpp:2268] [PG ID {pg} PG GUID {pg}(default_pg) Rank {rank}]  failure "
        f"detected by watchdog at work sequence id: {seq} PG status: last enqueued work: {seq}, "
        f"last completed work: {done}\n"
    )


def _signal(rank, enq, done, pg="0"):
    return (
        f"[rank{rank}]:[E ProcessGroupNCCL.cpp:1653] [PG ID {pg} PG GUID {pg}(default_pg) Rank {rank}] Received a "
        f"dump signal due to a collective timeout from  rank 0 and we will try our best to dump the debug info. "
        f"Last enqueued NCCL work: {enq}, last completed NCCL work: {done}.\n"
    )


def test_two_ranks_the_one_that_never_enqueued_is_named():
    top = diagnose(_wd(0, 12, 11) + _signal(1, 11, 11)).findings[0]
    assert (top.rule, top.ranks) == ("watchdog_rank_behind", (1,))


def test_ranks_at_the_same_progress_blame_nobody():
    diag = diagnose(_wd(0, 12, 11) + _wd(1, 12, 11) + _wd(2, 12, 11))
    assert not any(f.rule == "watchdog_rank_behind" for f in diag.findings)
    top = diag.findings[0]
    assert top.rule == "watchdog_all_waiting" and top.ranks == ()


def test_progress_of_different_process_groups_is_not_compared():
    # rank 1's counter belongs to another group (PG 3): nothing says it lags in PG 0
    diag = diagnose(_wd(0, 12, 11) + _wd(2, 12, 11) + _signal(1, 4, 4, pg="3"))
    assert not any(f.rule == "watchdog_rank_behind" for f in diag.findings)


def test_counters_too_far_apart_are_not_one_group():
    # lines pasted from two jobs: no collective completes on one rank 1,000 works before another enqueued it
    diag = diagnose(_wd(0, 1012, 1011) + _signal(1, 11, 11))
    assert not any(f.rule == "watchdog_rank_behind" for f in diag.findings)


def test_a_lone_rank_ahead_does_not_blame_all_the_others():
    diag = diagnose(_wd(0, 12, 11) + _signal(1, 11, 11) + _signal(2, 11, 11) + _signal(3, 11, 11))
    assert not any(f.rule == "watchdog_rank_behind" for f in diag.findings)


def test_one_rank_one_watchdog_event_is_one_card():
    log = (HERE / "torch24_rank_behind" / "rank0.log").read_text()
    diag = diagnose(log)
    assert [f.rule for f in _errors(diag)] == ["watchdog_timeout"]
    # the card carries the progress and wrapper lines, and blames nobody: no other rank is known
    card = diag.findings[0]
    assert any("taking the entire process down" in e.text for e in card.evidence)
    assert card.ranks == ()


def test_a_wrapper_far_from_any_timeout_keeps_its_own_card():
    log = (HERE / "torch24_rank_behind" / "rank0.log").read_text()
    log += "".join(f"[rank0]: step {i} loss 0.1\n" for i in range(20))
    log += "[rank0]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, invalid usage\n"
    rules = [f.rule for f in diagnose(log).findings]
    assert "dist_backend_error" in rules


def test_timeouts_blame_the_ranks_that_did_not_time_out(tmp_path):
    # gloo: ranks 1 and 2 time out in a recv; rank 0's log holds nothing of the kind
    for r in (1, 2):
        (tmp_path / f"rank{r}.log").write_text(
            "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 5000ms "
            "for recv operation to complete\n"
        )
    (tmp_path / "rank0.log").write_text("saving checkpoint\n")
    f = next(f for f in diagnose(str(tmp_path)).findings if f.rule == "gloo_op_timeout")
    assert f.ranks == (0,) and "rank 0 did not time out" in f.title
    (tmp_path / "rank0.log").write_text((tmp_path / "rank1.log").read_text())
    f = next(f for f in diagnose(str(tmp_path)).findings if f.rule == "gloo_op_timeout")
    assert f.ranks == ()


# ---- two processes claiming one rank -------------------------------------------------------------


def test_two_processes_on_rank_0_the_port_in_use_is_a_consequence():
    # real gloo run (duplicate_rank with process 1 told RANK=0): the second rank 0 cannot bind the store's port
    diag = diagnose(str(HERE / "duplicate_rank0"))
    top = diag.findings[0]
    assert (top.rule, top.category, top.ranks) == ("rank_claimed_twice", "rank_world_size_mismatch", (0,))
    # what it caused is folded into its card (issue 12): the port taken twice among them
    assert [f.rule for f in diag.findings if f.severity == "error"] == ["rank_claimed_twice"]
    assert "MASTER_PORT is already in use" in top.cause


def test_framework_banners_of_two_nodes_both_started_as_node_0():
    diag = diagnose(str(HERE / "lightning_two_node_zero"))
    top = diag.findings[0]
    assert (top.rule, top.ranks) == ("rank_claimed_twice", (0, 1, 2, 3))
    # its own lines (the banners) first, then those of what it caused, folded into its card (issue 12)
    own = [e for e in top.evidence if "GLOBAL_RANK" in e.text]
    assert len(own) >= 8 and top.evidence[: len(own)] == tuple(own)
    assert not any(f.rule == "store_clients_timeout" for f in diag.findings)
    assert "ranks 4-7 never joined" in top.cause


def _comm(host, pid, rank, n):
    return (
        f"{host}:{pid}:{pid + 9} [{rank % 4}] NCCL INFO comm 0x5{pid:07d} rank {rank} nRanks {n} nNodes 1 "
        f"localRanks {n} localRank {rank % 4} MNNVL 0\n"
    )


def test_a_restart_that_numbers_every_rank_again_is_no_duplicate():
    attempts = "".join(_comm("node-a", 100 + r, r, 4) for r in range(4))
    attempts += "".join(_comm("node-a", 200 + r, r, 4) for r in range(4))
    assert not any(f.rule == "rank_claimed_twice" for f in diagnose(attempts).findings)
    # ranks 0, 1, 2, 2 of 4: rank 2 has two processes and rank 3 none
    doubled = "".join(_comm("node-a", 100 + i, r, 4) for i, r in enumerate((0, 1, 2, 2)))
    f = next(f for f in diagnose(doubled).findings if f.rule == "rank_claimed_twice")
    assert f.ranks == (2,)


# ---- a line with no host -------------------------------------------------------------------------


def test_a_hostless_version_line_does_not_borrow_the_host_before_it():
    log = (
        "node-a:100:100 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
        "node-b:200:200 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
        "node-c:300:300 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
        "node-a:100:110 [0] NCCL INFO Channel 00/02 : 0 1 2 3 failed to connect\n"
        "[rank3]: NCCL version 2.18.1\n"
    )
    f = next(f for f in diagnose(log).findings if f.category == "version_mismatch")
    assert f.hosts == () and f.ranks == (3,)
    assert "node-a" not in f.title + f.cause


# ---- a desync with no majority --------------------------------------------------------------------


def _factory():
    import importlib.util
    import sys

    name = "ncclnb_test_fr_factory"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parent / "fr" / "factory.py")
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


def test_two_ranks_the_one_that_repeats_the_loop_collective_ran_an_extra_iteration():
    # a real gloo run of unseeded_split_desync with 2 ranks: rank 1 has 13 batches, rank 0 has 12
    diag = diagnose(str(HERE / "desync_two_ranks"))
    top = diag.findings[0]
    assert (top.rule, top.category, top.ranks) == ("fr.desync_op", "collective_desync", (1,))
    assert "one more iteration" in top.cause


def test_history_breaks_a_tie_only_when_one_side_repeats_the_op_before():
    from ncclnb.doctor.flight_recorder import analyze_dumps

    f = _factory()
    ts = f.world(2)
    for t in ts:
        t.collective("all_reduce")
    ts[0].collective("all_gather_into_tensor", ((4,),), out_sizes=((8,),))
    ts[1].collective("all_reduce")
    top = next(x for x in analyze_dumps(f.dumps(ts)) if x.severity == "error")
    assert (top.rule, top.ranks) == ("fr.desync_op", (1,))
    # the collective before was a broadcast: neither side repeats it, nothing breaks the tie
    ts = f.world(2)
    for t in ts:
        t.collective("broadcast")
    ts[0].collective("all_gather_into_tensor", ((4,),), out_sizes=((8,),))
    ts[1].collective("all_reduce")
    top = next(x for x in analyze_dumps(f.dumps(ts)) if x.severity == "error")
    assert (top.rule, top.ranks) == ("fr.desync_op", (0, 1))


def test_watchdog_desync_of_two_ranks_blames_both_not_an_arbitrary_one():
    log = _wd(0, 25, 24).replace("ALLREDUCE", "_ALLGATHER_BASE") + _wd(1, 25, 24)
    top = diagnose(log).findings[0]
    assert (top.rule, top.ranks) == ("watchdog_desync", (0, 1))
    # three ranks: the majority decides
    top = diagnose(log + _wd(2, 25, 24)).findings[0]
    assert (top.rule, top.ranks) == ("watchdog_desync", (0,))


def test_gloo_timeouts_of_the_waiting_ranks_are_the_recorders_incident():
    for case in (HERE / "desync_two_ranks", HERE.parent / "repro_logs" / "unseeded_split_desync"):
        diag = diagnose(str(case))
        assert [f.rule for f in _errors(diag)] == ["fr.desync_op"], case.name
        assert any("Timed out waiting" in e.text for e in diag.findings[0].evidence)


# ---- where the tracebacks say each rank waited (real gloo logs, without their flight-recorder dumps) ----

REPRO = HERE.parent / "repro_logs"


def _logs_only(case: str, tmp_path, drop=()):
    import shutil

    for p in (REPRO / case).glob("rank*.log"):
        if p.name not in drop:
            shutil.copyfile(p, tmp_path / p.name)
    return diagnose(str(tmp_path))


@pytest.mark.parametrize(
    "case, rule, category, culprits",
    [
        ("alltoall_unpaired", "p2p_wait_beside_collective", "p2p_pairing", (2,)),
        ("unseeded_split_desync", "traceback_desync", "collective_desync", (1,)),
        ("slow_rank_checkpoint", "traceback_rank_missing", "slow_rank_timeout", (0,)),
    ],
)
def test_tracebacks_name_the_culprit_without_dumps(case, rule, category, culprits, tmp_path):
    diag = _logs_only(case, tmp_path)
    top = diag.findings[0]
    assert (top.rule, top.category, top.ranks) == (rule, category, culprits)
    assert "gloo_op_timeout" not in {f.rule for f in diag.findings}  # folded into the card, its alternatives too


def test_with_dumps_the_recorder_speaks_and_the_traceback_card_is_dropped():
    diag = diagnose(str(REPRO / "alltoall_unpaired"))
    rules = [f.rule for f in diag.findings]
    assert rules[0] == "fr.missing_rank_p2p" and "p2p_wait_beside_collective" not in rules


def test_ranks_all_in_one_collective_with_no_silent_rank_blame_nobody(tmp_path):
    # rank 2's log (the one stuck in its recv) is absent: the others all wait in all_reduce, nobody is known silent
    diag = _logs_only("alltoall_unpaired", tmp_path, drop=("rank2.log",))
    assert not any(f.rule.startswith(("traceback_", "p2p_wait")) for f in diag.findings)


def test_two_ranks_in_two_collectives_are_told_apart_by_the_batches_they_printed(tmp_path):
    # no majority: rank 0 waits in all_gather, rank 1 in all_reduce; "rank 0: 48 training examples, 6 batches"
    # and "rank 1: 49 training examples, 7 batches" say rank 1 runs a 7th step rank 0 never runs
    diag = _logs_only("unseeded_split_desync", tmp_path, drop=("rank2.log", "rank3.log"))
    top = diag.findings[0]
    assert (top.rule, top.ranks) == ("traceback_desync", (1,))
    assert "rank 1 printed more batches" in top.title and "7 on rank 1, 6 on rank 0" in top.cause
    assert [e.text for e in top.evidence[:2]] == [
        "rank 1: 49 training examples, 7 batches (split without a seed)",
        "rank 0: 48 training examples, 6 batches (split without a seed)",
    ]
    counts = next(f for f in diag.findings if f.rule == "rank_count")
    assert counts.ranks == () and "6 on rank 0, 7 on rank 1" in counts.title


def test_two_ranks_in_two_collectives_with_equal_counts_blame_both(tmp_path):
    for r in (0, 1):
        text = (REPRO / "unseeded_split_desync" / f"rank{r}.log").read_text().split("\n", 1)[1]
        (tmp_path / f"rank{r}.log").write_text(f"rank {r}: 48 training examples, 6 batches\n" + text)
    top = diagnose(str(tmp_path)).findings[0]
    assert (top.rule, top.ranks) == ("traceback_desync", (0, 1))
    assert "No majority tells which side is wrong" in top.cause


def test_watchdog_desync_tie_is_broken_by_the_dataset_lengths_the_ranks_printed(tmp_path):
    # torch 2.1 wording, two ranks in two collectives; each printed its dataset length behind "[rankN]:"
    for r, (op, length) in enumerate((("ALLREDUCE", 1008), ("ALLGATHER", 1000))):
        (tmp_path / f"rank{r}.log").write_text(
            f"[rank{r}]: dataset length {length}\n"
            f"[rank{r}]: [E ProcessGroupNCCL.cpp:475] [Rank {r}] Watchdog caught collective operation timeout: "
            f"WorkNCCL(SeqNum=812, OpType={op}, NumelIn=4096, NumelOut=4096, Timeout(ms)=1800000) ran for "
            "1800612 milliseconds before timing out.\n"
        )
    top = diagnose(str(tmp_path)).findings[0]
    assert (top.rule, top.ranks) == ("watchdog_desync", (0,))
    assert "1008 on rank 0, 1000 on rank 1" in top.cause
    assert top.evidence[0].text == "[rank0]: dataset length 1008"


def test_when_most_logs_show_no_timeout_the_silent_ranks_are_not_blamed(tmp_path):
    # one rank of four timed out; the other three logs end before any timeout (cut, or that rank is the odd one)
    (tmp_path / "rank0.log").write_text((HERE / "torch21_silent_rank" / "rank0.log").read_text())
    for r in (1, 2, 3):
        (tmp_path / f"rank{r}.log").write_text("epoch 3 step 811 loss 2.113 failed to improve\n")
    diag = diagnose(str(tmp_path))
    assert not any(f.rule in ("watchdog_rank_missing", "traceback_rank_missing") for f in diag.findings)
    assert all(f.ranks == () for f in diag.findings if f.rule == "watchdog_timeout")


# ---- point to point: the end that is out of step, not both ends --------------------------------
# ``seed004_plans/`` is a real gloo run of seed 004 (ncclnb.reproduce("alltoall_unpaired")): each
# rank printed its plan ("ncclnb guard: p2p plan {...}"); rank 1 has nothing for rank 2 and skips the
# send, rank 2 still receives from rank 1 and hangs in irecv().wait(); ranks 0, 1 and 3 went on to
# the all_reduce and time out there waiting for rank 2.


def _copy(tmp_path, case, keep):
    for p in (HERE / case).iterdir():
        if keep(p):
            (tmp_path / p.name).write_bytes(p.read_bytes())
    return str(tmp_path)


def _plan_finding(diag):
    return next(f for f in diag.findings if f.rule == "plan.p2p_unmatched")


def test_unpaired_receive_blames_the_rank_the_others_went_on_without(tmp_path):
    diag = diagnose(_copy(tmp_path, "seed004_plans", lambda p: True))
    f = _plan_finding(diag)
    assert f is diag.findings[0] and f.ranks == (2,)
    assert "went on to a later collective that it never reached" in f.cause


def test_without_dumps_the_tracebacks_say_who_went_on(tmp_path):
    # gloo dumps left out: the tracebacks of ranks 0, 1 and 3 end in all_reduce, rank 2's in a wait()
    diag = diagnose(_copy(tmp_path, "seed004_plans", lambda p: p.name.endswith(".log")))
    assert _plan_finding(diag).ranks == (2,)


def test_plans_alone_blame_the_peer_that_never_posted_its_half(tmp_path):
    # only the plan lines: nothing says where the ranks went, so the rank whose matching send never
    # came (rank 1) is the one out of step
    for p in (HERE / "seed004_plans").glob("rank*.log"):
        plans = [ln for ln in p.read_text().splitlines() if "ncclnb guard: p2p plan" in ln]
        (tmp_path / p.name).write_text("\n".join(plans) + "\n")
    f = _plan_finding(diagnose(str(tmp_path)))
    assert f.ranks == (1,) and "rank 1 never posted the matching op that rank 2 waits for" in f.cause


def test_plans_of_a_wrong_peer_blame_that_rank_only(tmp_path):
    from ncclnb.guard.p2p import p2p_plan_line

    # a ring exchange where rank 2 sends to 0 instead of 3: rank 0 gets a send it never planned to
    # receive, rank 3 waits for one that never comes; rank 2 is at one end of both
    n = 4
    for r in range(n):
        to = 0 if r == 2 else (r + 1) % n
        (tmp_path / f"rank{r}.log").write_text(p2p_plan_line(r, {to: (4, 8)}, {(r - 1) % n: (4, 8)}) + "\n")
    f = _plan_finding(diagnose(str(tmp_path)))
    assert f.ranks == (2,)


def test_plans_that_cannot_tell_blame_both_and_say_so(tmp_path):
    from ncclnb.guard.p2p import p2p_plan_line

    # each of two ranks plans to send to the other and neither to receive
    (tmp_path / "rank0.log").write_text(p2p_plan_line(0, {1: (4,)}, {}) + "\n")
    (tmp_path / "rank1.log").write_text(p2p_plan_line(1, {0: (4,)}, {}) + "\n")
    f = _plan_finding(diagnose(str(tmp_path)))
    assert f.ranks == (0, 1) and "nothing tells which end is wrong" in f.title
