"""Cross-rank reasoning, healthy background logs and prefix normalisation."""

from __future__ import annotations

import pytest

from ncclnb.doctor import diagnose
from ncclnb.doctor.normalize import normalize
from tests.conftest import CAPTURES


def _wd(rank, seq, op="ALLREDUCE", nin=1024, nout=1024):
    return (
        f"[rank{rank}]:[E ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught collective operation timeout: "
        f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={nin}, NumelOut={nout}, Timeout(ms)=600000) ran for 600071 "
        "milliseconds before timing out.\n"
    )


def _comm(host, pid, rank, n, nodes, local):
    return (
        f"{host}:{pid}:{pid + 40} [{local}] NCCL INFO comm 0x55d8db2{rank:05d} rank {rank} nRanks {n} nNodes {nodes} "
        f"localRanks 4 localRank {local} MNNVL 0\n"
    )


def healthy_logs():
    logs = sorted(CAPTURES.glob("nccl_info__*"))
    assert logs, f"no nccl_info__* captures in {CAPTURES}"
    return logs


@pytest.mark.parametrize("path", healthy_logs(), ids=lambda p: p.name[:40])
def test_healthy_nccl_info_logs_give_no_error_or_warning(path):
    diag = diagnose(str(path))
    bad = [(f.rule, f.severity) for f in diag.findings if f.severity != "info"]
    assert bad == []
    assert diag.lines_read == sum(1 for _ in open(path, "rb"))


def test_healthy_fixture_rank_table():
    diag = diagnose(str(CAPTURES / "nccl_info__aws-p4d-1node-4rank-p2p-cumem__gnosia93-training-on-eks.txt"))
    table = {r.rank: r for r in diag.ranks}
    assert sorted(table) == [0, 1, 2, 3]
    assert all(r.host == "ip-172-31-3-153" and r.nccl_version == "2.27.7+cuda13.0" for r in table.values())
    assert [table[r].local_rank for r in range(4)] == [0, 1, 2, 3]


def test_desync_different_op_blames_the_odd_rank():
    log = _wd(0, 100) + _wd(1, 100) + _wd(2, 100, op="BROADCAST") + _wd(3, 100)
    top = diagnose(log).findings[0]
    assert (top.category, top.ranks) == ("collective_desync", (2,))


def test_slow_rank_missing_from_the_timeout_set():
    # four ranks in the job (comm lines), ranks 1-3 time out in the same all-reduce, rank 0 never does
    log = "".join(_comm("node-a", 500 + r, r, 4, 1, r) for r in range(4))
    log += _wd(1, 9000) + _wd(2, 9000) + _wd(3, 9000)
    top = diagnose(log).findings[0]
    assert (top.category, top.rule, top.ranks) == ("slow_rank_timeout", "watchdog_rank_missing", (0,))


def test_timeouts_at_another_seq_of_the_same_op_are_a_desync():
    # rank 2 timed out too, in an earlier collective: a late rank reaches the same one later, so the
    # ranks issued different numbers of collectives (it was read as a slow rank before)
    log = _wd(0, 9001) + _wd(1, 9001) + _wd(2, 9000) + _wd(3, 9001)
    top = diagnose(log).findings[0]
    assert (top.category, top.rule, top.ranks) == ("collective_desync", "watchdog_seq_differs", (2,))


def test_version_mismatch_needs_two_versions():
    same = "a:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\nb:2:2 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
    assert not any(f.category == "version_mismatch" for f in diagnose(same).findings)
    differ = same + "c:3:3 [0] NCCL INFO NCCL version 2.18.1+cuda12.1\n" + _comm("c", 3, 2, 3, 3, 0)
    f = diagnose(differ).findings[0]
    assert (f.category, f.hosts, f.ranks) == ("version_mismatch", ("c",), (2,))


def test_versions_printed_with_no_host_pid_or_rank_are_compared():
    # a script's own per-node prints: one process loads one NCCL, so two versions so printed are two processes
    log = (
        "[node-a] torch 2.1.0+cu121 nccl (2, 18, 1)\n"
        "[node-b] torch 2.3.1+cu121 nccl (2, 20, 5)\n"
        "node-a:5521:5521 [0] NCCL INFO NCCL version 2.18.1+cuda12.1\n"
    )
    f = diagnose(log).findings[0]
    assert (f.category, f.rule) == ("version_mismatch", "nccl_version_differs_across_hosts")
    assert "2.18.1" in f.title and "2.20.5" in f.title


def test_torch_1x_misprint_of_the_version_is_the_same_version():
    # torch 1.x printed NCCL 2.10.3 (code 21003) as "21.0.3" in its error lines; NCCL's own line says 2.10.3
    log = (
        "NCCL version 2.10.3+cuda11.3\n"
        "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1169, unhandled system error, "
        "NCCL version 21.0.3\n"
    )
    assert not any(f.category == "version_mismatch" for f in diagnose(log).findings)
    other = log.replace("NCCL version 2.10.3+cuda11.3", "NCCL version 2.12.12+cuda11.6")
    assert any(f.category == "version_mismatch" for f in diagnose(other).findings)


def test_nodes_disagree_on_world_size():
    log = "".join(_comm("node-a", 100 + r, r, 4, 1, r) for r in range(4))
    log += "".join(_comm("node-b", 200 + r, 4 + r, 8, 2, r) for r in range(4))
    top = diagnose(log).findings[0]
    assert top.category == "rank_world_size_mismatch"
    assert top.ranks == (4, 5, 6, 7)
    assert top.hosts == ("node-a",)


def test_gloo_and_nccl_wordings_of_an_out_of_range_rank():
    for line in (
        "[rank7]: RuntimeError: [enforce fail at ../third_party/gloo/gloo/context.cc:27] rank < size. 7 vs 4",
        "gpu1:77:88 [3] init.cc:1820 NCCL WARN Invalid rank requested : 7/4",
    ):
        f = diagnose(line + "\n").findings[0]
        assert (f.category, f.ranks) == ("rank_world_size_mismatch", (7,))


def test_benign_plugin_line_never_outranks_an_error():
    log = (
        "h:1:1 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation\n" * 50
        + "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    diag = diagnose(log)
    assert diag.findings[0].category == "oom_or_resource"
    assert diag.findings[-1].category == "net_plugin_missing" and diag.findings[-1].severity == "info"


def test_cascade_ranks_below_first_error():
    log = (
        "[rank0]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1275, unhandled system error\n"
        "[rank2]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Read error: Connection reset by peer\n"
        "[rank1]: 7635c25c81cd:41588:41837 [0] include/shm.h:48 NCCL WARN Error while creating shared memory segment "
        "nccl-shm-recv-6c6b (size 9637888)\n"
    )
    diag = diagnose(log)
    assert diag.findings[0].category == "shm_too_small"
    assert diag.findings[0].ranks == (1,)


def test_env_override_is_promoted_only_next_to_a_failure():
    line = "h:1:2 [0] NCCL INFO NCCL_GRAPH_FILE set by environment to /opt/microsoft/ncv4/graph.xml\n"
    alone = diagnose(line).findings[0]
    assert (alone.category, alone.severity) == ("nccl_env_override", "info")
    failed = diagnose(
        "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.\n" + line
    )
    assert (failed.findings[0].category, failed.findings[0].severity) == ("nccl_env_override", "warning")


@pytest.mark.parametrize(
    "raw,text,rank,local,host,pid",
    [
        (
            "[rank3]:[W304 17:41:12.735149131 ProcessGroupNCCL.cpp:4561] [PG ID 0 PG GUID 0 Rank 3] using GPU 3",
            "[PG ID 0 PG GUID 0 Rank 3] using GPU 3",
            3,
            None,
            None,
            None,
        ),
        (
            "[default2]:gpu7:4121:4188 [2] NCCL INFO NCCL version 2.21.5+cuda12.4",
            "NCCL version 2.21.5+cuda12.4",
            None,
            2,
            "gpu7",
            4121,
        ),
        ("12: [E ProcessGroupNCCL.cpp:563] Watchdog caught", "Watchdog caught", 12, None, None, None),
        ("\x1b[31m2025-03-04T17:41:12.123Z [1,5]<stderr>:RuntimeError: boom\x1b[0m\r", "RuntimeError: boom", 5, None, None, None),
        (
            "[2026-01-02 10:24:27] ip-1:35113:35467 [0] int nccl_net_ofi_create_plugin(nccl_net_ofi_plugin_t**):353 NCCL WARN NET/OFI x",
            "NET/OFI x",
            None,
            None,
            "ip-1",
            35113,
        ),
        (
            "Mar  4 17:41:12 node-b kernel: NVRM: Xid (PCI:0000:3b:00): 79",
            "NVRM: Xid (PCI:0000:3b:00): 79",
            None,
            None,
            "node-b",
            None,
        ),
        ("node-3: [rank9]: DistBackendError", "DistBackendError", 9, None, "node-3", None),
    ],
)
def test_prefixes_are_stripped(raw, text, rank, local, host, pid):
    ln = normalize(raw)
    assert (ln.text, ln.rank, ln.local_rank, ln.host, ln.pid) == (text, rank, local, host, pid)


def test_frames_are_noise_and_line_numbers_survive():
    log = (
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 (0x7f in libc10.so) Watchdog timeout\n"
        "frame #1: <unknown function> Error while creating shared memory segment\n"
        "\n"
        "[rank1]:   Error while creating shared memory segment /dev/shm/nccl-1 (size 7340384)\r\n"
    )
    diag = diagnose(log)
    assert [f.rule for f in diag.findings] == ["shm_segment_create_failed"]
    assert diag.findings[0].evidence[0].line == 4
    assert diag.lines_read == 4


def _at_work(rank: int, enqueued: int, work: int = 10417) -> str:
    return (
        f"[rank{rank}]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank {rank}] Timeout at NCCL work: {work}, "
        f"last enqueued NCCL work: {enqueued}, last completed NCCL work: {work - 1}.\n"
    )


def test_ranks_that_all_reached_the_stuck_work_but_enqueued_different_amounts_are_a_desync():
    log = _at_work(2, 10417) + _at_work(0, 10419) + _at_work(1, 10417) + _at_work(3, 10419)
    top = diagnose(log).findings[0]
    assert (top.category, top.rule, top.ranks) == ("collective_desync", "watchdog_ranks_ahead", (0, 3))
    # the same counts everywhere say nothing of the kind; a rank that never enqueued it is behind, as before
    same = "".join(_at_work(r, 10419) for r in range(4))
    assert "watchdog_ranks_ahead" not in [f.rule for f in diagnose(same).findings]
    behind = _at_work(0, 10419) + _at_work(1, 10416) + _at_work(2, 10419) + _at_work(3, 10419)
    assert diagnose(behind).findings[0].rule == "watchdog_rank_behind"


def _detected(rank: int, enqueued: int, completed: int) -> str:
    return (
        f"[rank{rank}]:[E1105 06:47:18.111203 ProcessGroupNCCL.cpp:1785] [PG 0 (default_pg) Rank {rank}] Exception "
        f"(either an error or timeout) detected by watchdog at work: {enqueued}, last enqueued NCCL work: {enqueued}, "
        f"last completed NCCL work: {completed}.\n"
    )


def test_a_rank_waiting_in_work_the_others_completed_is_offset_by_a_collective():
    log = _detected(0, 98211, 98210) + _detected(7, 98211, 98210) + _detected(11, 98209, 98208)
    top = diagnose(log).findings[0]
    assert (top.category, top.rule, top.ranks) == ("collective_desync", "watchdog_work_offset", (11,))
    # counters far apart are two attempts of the job (a restart numbers its work again), not one group's
    restarted = _detected(0, 98211, 98210) + _detected(7, 98211, 98210) + _detected(11, 12, 11)
    assert "watchdog_work_offset" not in [f.rule for f in diagnose(restarted).findings]
