"""What the rest of a log decides: unrecognised NCCL WARNs, candidate causes of generic errors,
context that picks between a signature's categories, and pasted-log tolerance."""

from __future__ import annotations

import pytest

from ncclnb.doctor import diagnose
from ncclnb.doctor.normalize import normalize
from ncclnb.doctor.priors import CANDIDATES, WARN_SOURCES, rank_candidates, warn_prior
from ncclnb.model import CATEGORIES


def _cats(text: str, n: int = 3) -> list[str]:
    out: list[str] = []
    for f in diagnose(text + "\n").findings:
        if f.category not in out:
            out.append(f.category)
    return out[:n]


def _rules(text: str) -> list[str]:
    return [f.rule for f in diagnose(text + "\n").findings]


# ---- pasted logs ------------------------------------------------------------
@pytest.mark.parametrize(
    "raw, text, pid, where",
    [
        (
            "(RayWorkerWrapper pid=11305) ERROR 08-27 05:12:18 worker_base.py:382] RuntimeError: boom",
            "RuntimeError: boom",
            11305,
            None,
        ),
        ("[trainer3]: RuntimeError: boom", "RuntimeError: boom", None, None),
        ("> warning: something", "warning: something", None, None),
        ("W0104 13:46:27.896000 80302 torch/distributed/run.py:792] Setting OMP", "Setting OMP", None, None),
        (
            "[3] include/shm.h:28 NCCL WARN Call to posix_fallocate failed",
            "Call to posix_fallocate failed",
            None,
            "include/shm.h:28",
        ),
        ("node-a:1:2 [0] transport/nvls.cc:223 NCCL WARN Cuda failure 999", "Cuda failure 999", 1, "transport/nvls.cc:223"),
        ("WARN NET/IB: read failed", "NET/IB: read failed", None, None),
    ],
)
def test_prefixes_people_paste_are_peeled(raw, text, pid, where):
    ln = normalize(raw)
    assert (ln.text, ln.pid, ln.where) == (text, pid, where)


def test_a_word_warning_is_not_an_nccl_warn():
    assert normalize("WARNING: foo").level is None


def test_hard_wrapped_message_is_rejoined():
    # the signature needs both halves: the first line alone names no CUDA error
    wrapped = (
        "node-a:1:2 [0] transport/nvls.cc:287 NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast memory\n"
        "  of size 2097152 : CUDA error 401 'the operation cannot be performed in the present state'."
    )
    assert _cats(wrapped)[0] == "driver_or_hardware"


# ---- unrecognised NCCL WARN --------------------------------------------------
def test_every_warn_source_names_a_category():
    for _, cat, also in WARN_SOURCES:
        assert cat in CATEGORIES and all(a in CATEGORIES and a != cat for a in also)


@pytest.mark.parametrize(
    "where, cat",
    [
        ("transport/nvls.cc:612", "driver_or_hardware"),
        ("transport/net_ib.cc:1038", "ib_misconfig"),
        ("misc/socket.cc:441", "socket_ifname"),
        ("bootstrap.cc:80", "rendezvous_unreachable"),
        ("transport/shm.cc:50", "shm_too_small"),
        ("transport/p2p.cc:300", "p2p_topology"),
        ("graph/search.cc:1000", "p2p_topology"),
        ("graph/xml.cc:60", "nccl_env_override"),
    ],
)
def test_warn_prior_from_the_source_file(where, cat):
    assert warn_prior(where, "something new")[0] == cat


def test_unrecognised_warn_is_kept_as_low_confidence_evidence_with_the_file_prior():
    line = "node-a:4121:4188 [3] transport/p2p.cc:999 NCCL WARN Zorblax frobnication went sideways"
    diag = diagnose(line + "\n")
    f = diag.findings[0]
    assert f.rule == "nccl_warn.p2p_topology" and f.confidence <= 0.35
    assert f.evidence[0].text == line


def test_recognised_warn_gets_no_fallback():
    rules = _rules(
        "node-a:1:2 [0] include/shm.h:48 NCCL WARN Error while creating shared memory segment /dev/shm/x (size 9637888)"
    )
    assert "shm_segment_create_failed" in rules and not any(r.startswith("nccl_warn.") for r in rules)


def test_warn_without_a_known_source_adds_nothing():
    assert not any(r.startswith("nccl_warn.") for r in _rules("node-a:1:2 [0] foo/bar.cc:1 NCCL WARN something new"))


# ---- candidate causes of generic errors ---------------------------------------
def test_every_candidate_names_a_category_and_a_check():
    for kind, cands in CANDIDATES.items():
        assert len({c.category for c in cands}) == len(cands), kind
        for c in cands:
            assert c.category in CATEGORIES and c.category != "unknown" and c.why and c.check


def test_generic_system_error_alone_gets_ranked_candidates_not_unknown():
    diag = diagnose("RuntimeError: NCCL error: unhandled system error\n")
    first = diag.findings[0]
    assert first.rule.startswith("candidate.system.") and first.category != "unknown"
    assert "Candidate" in first.title and first.confidence <= 0.45 and first.fix.startswith("To tell")
    assert len([f for f in diag.findings if f.rule.startswith("candidate.")]) >= 3


def test_context_moves_the_candidates():
    container = (
        "3f2a1b4c5d6e:100:100 [0] NCCL INFO Bootstrap : Using eth0:172.17.0.2<0>\n"
        "RuntimeError: NCCL error: unhandled system error"
    )
    assert _cats(container)[0] == "shm_too_small"
    ib = (
        "node-a:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE ; OOB eth0:10.0.0.1<0>\n"
        "node-b:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE ; OOB eth0:10.0.0.2<0>\n"
        "RuntimeError: NCCL error: unhandled system error"
    )
    assert _cats(ib)[0] == "ib_misconfig"


def test_contrary_context_lowers_a_candidate():
    base = {c.category: s for c, s, _ in rank_candidates("system", set())}
    lowered = {c.category: s for c, s, _ in rank_candidates("system", {"shm_disabled", "several_hosts"})}
    assert lowered["shm_too_small"] < base["shm_too_small"]
    socket_only = (
        "node-a:1:1 [0] NCCL INFO NET/IB : No device found.\n"
        "node-a:1:1 [0] NCCL INFO Using network Socket\n"
        "RuntimeError: NCCL error: unhandled system error"
    )
    cats = _cats(socket_only, 9)
    assert "socket_ifname" in cats and (
        cats.index("ib_misconfig") > cats.index("socket_ifname") if "ib_misconfig" in cats else True
    )
    assert "ib_misconfig" in _cats("RuntimeError: NCCL error: unhandled system error", 9)


def test_old_stack_puts_version_first_for_an_unhandled_cuda_error():
    assert _cats("RuntimeError: NCCL error: unhandled cuda error")[0] == "driver_or_hardware"
    assert (
        _cats("RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:32, unhandled cuda error, NCCL version 2.4.8")[0]
        == "version_mismatch"
    )
    assert _cats("RuntimeError: NCCL Error 1: unhandled cuda error")[0] == "version_mismatch"


def test_no_candidates_when_the_cause_is_known():
    rules = _rules(
        "ncclSystemError: System call failed\n"
        "node-a:1:2 [0] include/shm.h:48 NCCL WARN Error while creating shared memory segment x (size 1)"
    )
    assert not any(r.startswith("candidate.") for r in rules)


def test_a_stop_after_init_on_one_host_gets_hang_candidates_above_the_benign_plugin_line():
    log = (
        "node-a:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.2.3.32<0>\n"
        "node-a:1:1 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so).\n"
        "node-a:1:1 [0] NCCL INFO Setting affinity for GPU 0 to ff00ff\n"
        "node-a:1:1 [0] NCCL INFO comm 0x55d8 rank 0 nRanks 4 nNodes 1 localRanks 4 localRank 0 MNNVL 0\n"
    )
    cats = _cats(log)
    assert cats[:2] == ["p2p_topology", "net_plugin_missing"]
    # without a sign of one node, P2P is one candidate among others, and the plugin note stays in the top 3
    cats = _cats(log.replace("nNodes 1", "nNodes 2"))
    assert "net_plugin_missing" in cats and "p2p_topology" not in cats[:1]
    # the plugin line alone, with no sign that NCCL got further, stays the harmless note
    assert _cats("NCCL INFO NET/Plugin : No plugin found (libnccl-net.so).")[0] == "net_plugin_missing"
    # a run that reached its end (nccl-tests' closing lines, the communicator destroyed) did not hang
    for end in (
        "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.450547\n",
        "node-a:1:1 [0] NCCL INFO comm 0x55d8 rank 0 nRanks 4 nNodes 1 localRanks 4 localRank 0 MNNVL 0 - Destroy COMPLETE\n",
    ):
        assert _cats(log + end) == ["net_plugin_missing"]


# ---- context picks between a signature's categories ----------------------------
def test_a_rank_busy_with_its_own_work_before_a_timeout_points_to_a_slow_rank():
    line = (
        "[rank4]:[E ProcessGroupNCCL.cpp:523] [Rank 4] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=812, OpType=ALLREDUCE, NumelIn=4096, NumelOut=4096, Timeout(ms)=1800000) ran for "
        "1800041 ms"
    )
    assert _cats(line)[0] == "collective_desync"
    for busy in (
        "Saving checkpoint to /ckpt/step_812",
        "Running tokenizer on dataset: 40%",
        "Preprocessing the validation split",
        "Building index over 12000000 passages",
        "Indexing shard 3 of 16",
        "Clustering 2000000 points in 128D to 65536 clusters",
    ):
        assert _cats(f"{busy}\n{line}")[0] == "slow_rank_timeout", busy


def test_early_barrier_timeout_points_to_a_slow_rank_and_a_finished_rank_to_a_desync():
    line = (
        "[rank4]:[E ProcessGroupNCCL.cpp:523] [Rank 4] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800041 ms"
    )
    assert _cats(line)[:2] == ["slow_rank_timeout", "collective_desync"]
    finished = "`Trainer.fit` stopped: `max_epochs=3` reached.\n" + line
    assert _cats(finished)[0] == "collective_desync"
    big = line.replace("NumelIn=1, NumelOut=1", "NumelIn=4096, NumelOut=4096")
    assert _cats(big)[0] == "collective_desync"


def test_topology_file_from_the_environment_settles_the_xml_error():
    xml = "node-a:1:2 [1] graph/xml.h:101 NCCL WARN Attribute arch of node cpu not found"
    env = "node-a:1:2 [1] NCCL INFO NCCL_TOPO_FILE set by environment to /etc/topo.xml\n" + xml
    plugin = "node-a:1:2 [1] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.7.1\n" + xml
    assert _cats(env)[0] == "nccl_env_override"
    assert _cats(plugin)[0] == "version_mismatch"


def test_store_barrier_with_more_workers_than_the_world_points_to_the_rank_count():
    fewer = (
        "RuntimeError: Timed out initializing process group in store based barrier on rank: 3, for key: "
        "store_based_barrier_key:1 (world_size=8, worker_count=4, timeout=0:30:00)"
    )
    more = fewer.replace("worker_count=4", "worker_count=12")
    assert _cats(fewer)[:2] == ["rendezvous_unreachable", "rank_world_size_mismatch"]
    assert _cats(more)[:2] == ["rank_world_size_mismatch", "rendezvous_unreachable"]


def test_newer_watchdog_wording_sets_the_rank_sequence():
    line = (
        "[rank2]:[E109 22:46:25.933593122 ProcessGroupNCCL.cpp:2268] [PG ID 0 PG GUID 0(default_pg) Rank 2]  "
        "failure detected by watchdog at work sequence id: 493 PG status: last enqueued work: 493, "
        "last completed work: 492"
    )
    row = next(r for r in diagnose(line + "\n").ranks if r.rank == 2)
    assert row.last_seq == 493


def test_every_prefer_rule_names_a_signature_and_one_of_its_categories():
    from ncclnb.doctor.kb import load_signatures
    from ncclnb.doctor.priors import PREFER

    sigs = {s.id: s for s in load_signatures()}
    for ids, fact, cat in PREFER:
        for i in ids:
            assert i in sigs, i
            assert cat in (sigs[i].category,) + sigs[i].also, (i, cat)


def test_benign_plugin_line_stays_below_candidates_of_a_real_error():
    log = (
        "node-a:1:1 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation\n"
        "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1000, unhandled system error, NCCL version 2.18.1"
    )
    cats = _cats(log, 9)
    assert cats[0] != "net_plugin_missing" and cats[-1] == "net_plugin_missing"


def test_a_warn_with_no_source_location_leans_by_what_it_says():
    # NCCL before 2.9, and trimmed pastes, print "NCCL WARN" right after the [dev]: no location is read ("NCCL"
    # is not a file), and the message says what NCCL was doing
    assert normalize("node1:77:88 [0] NCCL WARN Error: failed to extend /dev/shm/nccl-x to 9637892 bytes").where is None
    assert normalize("node1:77:88 [0] include/shm.h:28 NCCL WARN Error: failed").where == "include/shm.h:28"
    for line, category in (
        ("node1:77:88 [0] NCCL WARN Error: failed to extend /dev/shm/nccl-abc to 9637892 bytes", "shm_too_small"),
        ("node1:77:88 [0] NCCL WARN Call to posix_memalign failed : Cannot allocate memory", "oom_or_resource"),
        ("node1:77:88 [0] NCCL WARN NET/OFI Endpoint bring-up stalled on device 0", "ib_misconfig"),
    ):
        assert diagnose(line + "\n").findings[0].category == category, line


# a failure line read alone, then beside the setting that the rest of the paste shows forcing it: the setting's doing
_FORCED_BY_A_SETTING = {
    # a network an /etc/nccl.conf forces
    "nccl_conf_network": (
        "l40s-n04:802:846 [0] init.cc:349 NCCL WARN Error: network IB not found.\n",
        "net_plugin_missing",
        "$ cat /etc/nccl.conf\nNCCL_NET=IB\nNCCL_SOCKET_IFNAME=ib0\n",
    ),
    # a network NCCL_NET forces from the environment
    "nccl_net_from_env": (
        "pt-worker-0:57:120 [0] net.cc:631 NCCL WARN Error: network GPUDirectTCPX_v7 not found.\n",
        "net_plugin_missing",
        "pt-worker-0:57:57 [0] NCCL INFO NCCL_NET set by environment to GPUDirectTCPX_v7\n",
    ),
    # a refused peer access under a topology file from the environment
    "topology_file_from_env": (
        "l40s-n08:2210:2298 [0] transport/p2p.cc:275 NCCL WARN Cuda failure 'peer access is not supported between "
        "these two devices'\n",
        "p2p_topology",
        "l40s-n08:2210:2298 [0] NCCL INFO NCCL_TOPO_FILE set by environment to /etc/nccl/dgxa100-topo.xml\n",
    ),
}


@pytest.mark.parametrize("case", sorted(_FORCED_BY_A_SETTING))
def test_a_failure_a_setting_from_the_paste_forces_is_the_settings_doing(case):
    failure, alone, setting = _FORCED_BY_A_SETTING[case]
    assert _cats(failure)[0] == alone
    assert _cats(setting + failure)[0] == "nccl_env_override"


def test_a_peer_silent_on_the_network_nccls_interface_is_on_is_a_firewall():
    timed_out = "ip-a:204:480 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 172.31.5.10<46703> failed : Connection timed out\n"
    own = "ip-a:204:204 [0] NCCL INFO Bootstrap : Using eth0:172.31.5.11<0>\n"
    assert _cats(own + timed_out)[0] == "rendezvous_unreachable"
    # another network than the interface's, or an interface of a container network's overlay: the interface
    other = own.replace("172.31.5.11", "10.40.1.21")
    assert _cats(other + timed_out)[0] == "socket_ifname"
    tunnel = "ip-a:204:204 [0] NCCL INFO Bootstrap : Using tunl0:172.31.5.64<0>\n"
    assert _cats(tunnel + timed_out)[0] == "socket_ifname"
    # a firewall's rejection (firewalld's icmp-host-prohibited reads as "No route to host") is the same; "refused" is
    # the peer's own answer (nothing listens there), which says nothing of a firewall
    assert _cats(own + timed_out.replace("Connection timed out", "No route to host"))[0] == "rendezvous_unreachable"
    assert _cats(own + timed_out.replace("Connection timed out", "Connection refused"))[0] == "socket_ifname"


def test_a_firewall_the_paste_shows_beside_a_failed_connection_is_the_cause():
    failed = (
        "h20-node1:2210:2385 [1] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.12.0.31<42871> failed : "
        "Software caused connection abort\n"
    )
    assert _cats(failed)[0] == "socket_ifname"
    for shown in ("[root@h20-node0 ~]# firewall-cmd --list-ports\n5000/tcp 30000/tcp\n", "$ sudo ufw status\nStatus: active\n"):
        assert _cats(failed + shown)[0] == "rendezvous_unreachable", shown


def test_a_rank_stuck_in_an_external_service_retry_is_busy_elsewhere():
    wd = (
        "[rank5]:[E ProcessGroupNCCL.cpp:828] [Rank 5] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=20814, "
        "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800890 milliseconds before timing out.\n"
    )
    assert _cats("[rank0]:wandb: Network error (ReadTimeout), entering retry loop.\n" + wd)[0] == "slow_rank_timeout"


def test_a_refused_operation_on_a_driver_older_than_ncclss_cuda_is_a_version_mismatch():
    refused = "dgx1-old:512:740 [0] transport/p2p.cc:236 NCCL WARN Cuda failure 'operation not supported'\n"
    nccl = "dgx1-old:512:512 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
    old = "| NVIDIA-SMI 470.199.02   Driver Version: 470.199.02   CUDA Version: 12.4     |\n"
    assert _cats(nccl + refused)[0] != "version_mismatch"
    assert _cats(nccl + old + refused)[0] == "version_mismatch"
    # a driver made for that CUDA: nothing to say about versions
    assert _cats(nccl + old.replace("470.199.02", "550.54.14") + refused)[0] != "version_mismatch"
