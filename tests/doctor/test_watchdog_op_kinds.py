"""What kind of work the ranks timed out in decides the reading: point-to-point work (SEND, RECV, a
COALESCED batch) is a pairing problem, an all-to-all's sizes differ by design, and a collective is
compared op by op and size by size (reason.watchdog_findings)."""

from ncclnb.doctor import diagnose


def _wd(rank: int, seq: int, op: str, numel: str = "NumelIn=1024, NumelOut=1024, ") -> str:
    return (
        f"[rank{rank}]:[E ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught collective operation timeout: "
        f"WorkNCCL(SeqNum={seq}, OpType={op}, {numel}Timeout(ms)=600000) ran for 600100 milliseconds before timing out.\n"
    )


def _top(log: str):
    f = diagnose(log).findings[0]
    return f.rule, f.category, f.ranks


def test_every_rank_in_a_send_is_a_cycle_of_sends():
    assert _top(_wd(0, 3, "SEND") + _wd(1, 3, "SEND")) == ("watchdog_p2p_cycle", "p2p_pairing", (0, 1))
    assert _top(_wd(0, 3, "RECV") + _wd(1, 3, "RECV")) == ("watchdog_p2p_cycle", "p2p_pairing", (0, 1))


def test_a_coalesced_batch_or_mixed_sends_and_receives_do_not_pair():
    minus_one = "NumelIn=18446744073709551615, NumelOut=18446744073709551615, "
    log = "".join(_wd(r, 5, "COALESCED", minus_one) for r in range(4))
    assert _top(log) == ("watchdog_p2p_batch", "p2p_pairing", (0, 1, 2, 3))
    assert _top(_wd(0, 3, "SEND") + _wd(1, 4, "RECV"))[:2] == ("watchdog_p2p_batch", "p2p_pairing")


def test_point_to_point_ranks_beside_a_collective_are_the_ones_blamed():
    log = _wd(0, 42, "ALLREDUCE") + _wd(1, 41, "RECV") + _wd(2, 42, "ALLREDUCE") + _wd(3, 42, "ALLREDUCE")
    assert _top(log) == ("watchdog_p2p_beside_collective", "p2p_pairing", (1,))


def test_all_to_all_sizes_differ_by_design_and_a_hang_there_is_its_splits():
    log = "".join(_wd(r, 77, "ALLTOALL_BASE", f"NumelIn={n}, NumelOut={n}, ") for r, n in enumerate((52736, 50944, 51200)))
    assert _top(log) == ("watchdog_alltoall_unpaired", "p2p_pairing", ())
    # a collective of another kind with different sizes is still a desync
    log = "".join(_wd(r, 77, "ALLREDUCE", f"NumelIn={n}, NumelOut={n}, ") for r, n in enumerate((52736, 52736, 51200)))
    assert _top(log)[:2] == ("watchdog_desync", "collective_desync")
