"""A hang in the job's first collectives beside a suspect the log shows (PCIe ACS on, ...) is read as
that suspect; a few pasted timeout lines say nothing of the ranks they do not show."""

from ncclnb.doctor import diagnose

INIT = (
    "srv:5521:5633 [0] NCCL INFO comm 0x5612b8a3e0f0 rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 0\n"
    "srv:5521:5633 [0] NCCL INFO comm 0x5612b8a3e0f0 rank 0 nranks 8 cudaDev 0 busId 1a000 - Init COMPLETE\n"
)
ACS = "                ACSCtl: SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\n"


def _wd(rank: int, seq: int, op: str = "ALLREDUCE", numel: str = "NumelIn=262144, NumelOut=262144, ") -> str:
    return (
        f"[rank{rank}]:[E ProcessGroupNCCL.cpp:828] [Rank {rank}] Watchdog caught collective operation timeout: "
        f"WorkNCCL(SeqNum={seq}, OpType={op}, {numel}Timeout(ms)=1800000) ran for 1800316 milliseconds before timing out.\n"
    )


def test_a_pasted_timeout_does_not_blame_the_ranks_the_paste_does_not_show():
    # one rank's timeout from a world of 8: the other seven left no line at all
    top = diagnose(INIT.replace("rank 0 n", "rank 3 n").replace("localRank 0", "localRank 3") + _wd(3, 212)).findings[0]
    assert top.rule != "watchdog_rank_missing"
    assert not {1, 2, 4, 5, 6, 7} & set(top.ranks)


def test_a_suspect_leads_when_the_job_hung_in_its_first_collectives():
    top = diagnose(INIT + _wd(3, 1) + ACS).findings[0]
    assert (top.rule, top.category, top.severity) == ("pcie_acs_enabled", "p2p_topology", "error")
    # the same suspect in a job that ran for a while is no reason for that hang
    late = diagnose(INIT + _wd(3, 4000) + ACS).findings[0]
    assert late.rule != "pcie_acs_enabled"


def test_a_suspect_does_not_outrank_a_reading_of_what_diverged():
    log = _wd(0, 2) + _wd(1, 2, "ALLGATHER") + ACS
    assert diagnose(log).findings[0].category == "collective_desync"


def test_every_rank_timing_out_together_in_the_first_collective_is_a_transport_hang():
    together = "".join(_wd(r, 1) for r in (1, 0, 3, 2))
    top = diagnose(together).findings[0]
    assert top.rule.startswith("candidate.first_collective.") and top.category == "p2p_topology"
    rules = [f.rule for f in diagnose(together).findings]
    assert rules.index("watchdog_all_waiting") > rules.index(top.rule)  # kept, after the candidates
    # rank 0 not among them (busy before a set-up barrier), a world larger than them, or a later collective:
    # the reading of the timeouts stands
    for log in (
        "".join(_wd(r, 1) for r in (1, 2, 3)),
        INIT + together,
        "".join(_wd(r, 512) for r in (1, 0, 3, 2)),
    ):
        assert not any(f.rule.startswith("candidate.first_collective.") for f in diagnose(log).findings), log
    # a suspect the log shows still leads
    assert diagnose(together + ACS).findings[0].rule == "pcie_acs_enabled"


def test_a_suspect_leads_a_hang_with_no_error_that_someone_stopped_after_set_up():
    topo = "4a1c9e2f70b3:41:41 [0] NCCL INFO NCCL_TOPO_FILE set by environment to /opt/topo/a100-sxm.xml\n"
    stopped = "^CTraceback (most recent call last):\nKeyboardInterrupt\n"
    top = diagnose(topo + INIT + stopped).findings[0]
    assert top.category == "nccl_env_override" and top.severity == "error"
    # the run went on (a loss after the set-up): nothing hung, the setting is no cause
    progress = "{'loss': 1.9821, 'learning_rate': 1.9e-05, 'epoch': 0.05}\n"
    assert diagnose(topo + INIT + progress).findings[0].severity != "error"


def test_an_error_of_the_transport_itself_leads_a_hang_in_the_first_collectives():
    fault = "[ 4129.004349] nvidia 0000:01:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x0027 address=0xfb0001000]\n"
    early = INIT + _wd(3, 1)
    assert diagnose(early + fault).findings[0].rule == "iommu_dma_fault"
    # in a job that ran for a while the timeouts' own reading stands, the fault beside it
    late = INIT + _wd(3, 90412)
    assert diagnose(late + fault).findings[0].rule != "iommu_dma_fault"


def test_a_suspect_leads_when_the_watchdog_itself_got_stuck_before_any_timeout():
    bridge = "gpu01:3110:3110 [0] NCCL INFO Bootstrap : Using virbr0:192.168.122.1<0>\n"
    stuck = (
        "[rank3]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 3] Heartbeat monitor timed out! Process will be terminated "
        "after dumping debug info. workMetaList_.size()=1\n"
    )
    assert diagnose(bridge + stuck).findings[0].rule == "socket_unroutable_interface"
    assert diagnose(stuck).findings[0].rule == "watchdog_heartbeat_timeout"
