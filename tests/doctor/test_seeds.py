"""Each seed's quoted lines, through `ncclnb doctor --json`, name the seed's root cause first.

The lines are the ones the write-ups in ../shared/seeds quote, in the formats
NCCL and PyTorch print them (prefixes added where a real log has them)."""

from __future__ import annotations

import json


from tests.conftest import run_cli

H = "gpu-node-1:41210:41388"


def doctor_json(tmp_path, name: str, text: str, *more: tuple[str, str]) -> dict:
    paths = []
    for fname, body in ((name, text), *more):
        p = tmp_path / fname
        p.write_text(body)
        paths.append(str(p))
    proc = run_cli("doctor", "--json", *paths)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return json.loads(proc.stdout)


def test_seed_000_invalid_rank_beats_plugin_and_store_timeout(tmp_path):
    log = (
        f"{H} [0] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file "
        "or directory No plugin found (libnccl-net.so), using internal implementation\n"
        f"{H} [3] init.cc:1820 NCCL WARN Invalid rank requested : 7/4\n"
        "[rank0]: torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. 4/8 clients joined.\n"
    )
    out = doctor_json(tmp_path, "job.log", log)
    top = out["findings"][0]
    assert top["category"] == "rank_world_size_mismatch"
    assert top["ranks"] == [7]
    assert top["evidence"][0]["line"] == 2
    cats = [f["category"] for f in out["findings"]]
    # the plugin line is benign: present, but last
    assert cats[-1] == "net_plugin_missing"
    store = next(f for f in out["findings"] if f["rule"] == "store_clients_timeout")
    assert "4 missing" in store["title"]


def test_seed_001_barrier_device_unknown(tmp_path):
    log = (
        "[rank3]:[W304 17:41:12.735149131 ProcessGroupNCCL.cpp:4561] [PG ID 0 PG GUID 0 Rank 3] using GPU 3 to "
        "perform barrier as devices used by this process are currently unknown...\n"
    )
    out = doctor_json(tmp_path, "rank3.log", log)
    top = out["findings"][0]
    assert top["category"] == "device_mapping"
    assert top["ranks"] == [3]
    assert out["ranks"][0]["rank"] == 3


def test_seed_002_version_mismatch_across_hosts(tmp_path):
    good = (
        "node-good:2001:2001 [0] NCCL INFO NCCL version 2.19.3+cuda12.3\n"
        "node-good:2001:2060 [0] NCCL INFO comm 0x55d8db252140 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0\n"
    )
    bad = (
        "node-bad:3001:3001 [0] NCCL INFO NCCL version 2.14.3+cuda11.7\n"
        "node-bad:3001:3050 [0] misc/socket.cc:503 NCCL WARN ncclSocketInit: connecting to address with family 0 "
        "is neither AF_INET(2) nor AF_INET6(10)\n"
        "[rank1]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:1275, internal error\n"
    )
    out = doctor_json(tmp_path, "node-good.log", good, ("node-bad.log", bad))
    top = out["findings"][0]
    assert top["category"] == "version_mismatch"
    assert top["rule"] == "nccl_version_differs_across_hosts"
    assert "2.14.3" in top["title"] and "2.19.3" in top["title"]
    assert {e["source"].rsplit("/", 1)[-1] for e in top["evidence"]} == {"node-good.log", "node-bad.log"}
    # the generic errors it caused are folded into its card, not cards of their own (issue 12)
    rules = [f["rule"] for f in out["findings"]]
    assert "nccl_internal_error" not in rules and "dist_backend_error" not in rules
    assert "NCCL hit an internal error" in top["cause"] and "DistBackendError" in top["cause"]
    versions = {r["host"]: r["nccl_version"] for r in out["ranks"] if r["host"]}
    assert versions == {"node-good": "2.19.3+cuda12.3", "node-bad": "2.14.3+cuda11.7"}


def test_seed_002_single_line_names_the_best_it_can(tmp_path):
    log = (
        "ncclSocketInit: connecting to address with family 0 is neither AF_INET(2) nor AF_INET6(10)\n"
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1275, internal error\n"
    )
    out = doctor_json(tmp_path, "seed002.log", log)
    assert out["findings"][0]["category"] == "version_mismatch"
    assert out["findings"][0]["rule"] == "socket_init_family_0"
    assert out["findings"][0]["confidence"] < 0.9  # one host's line cannot prove it


def _watchdog(rank: int, seq: int, nin: int, nout: int, op: str = "_ALLGATHER_BASE") -> str:
    return (
        f"[rank{rank}]:[E ProcessGroupNCCL.cpp:563] [Rank {rank}] Watchdog caught collective operation timeout: "
        f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={nin}, NumelOut={nout}, Timeout(ms)=600000) "
        "ran for 600068 milliseconds before timing out.\n"
    )


def test_seed_003_same_seq_different_sizes_is_desync(tmp_path):
    log = (
        _watchdog(0, 1474236, 262675456, 1050701824)
        + _watchdog(1, 1474236, 262675456, 1050701824)
        + _watchdog(2, 1474236, 262675456, 1050701824)
        + _watchdog(3, 1474236, 262144000, 1048576000)
    )
    out = doctor_json(tmp_path, "train.log", log)
    top = out["findings"][0]
    assert top["category"] == "collective_desync"
    assert top["ranks"] == [3]
    assert {r["rank"]: r["last_seq"] for r in out["ranks"]} == {0: 1474236, 1: 1474236, 2: 1474236, 3: 1474236}


def test_seed_003_single_line_names_desync_first_and_slow_rank_as_the_alternative(tmp_path):
    out = doctor_json(tmp_path, "seed003.log", _watchdog(0, 1474236, 262675456, 1050701824).split("]:", 1)[1])
    cats = [f["category"] for f in out["findings"]]
    assert cats[0] == "collective_desync"
    assert "slow_rank_timeout" in cats[:3]


def test_seed_004_proxy_service_failures_point_at_p2p_pairing(tmp_path):
    # seed 004: a custom all-to-all with isend/irecv on 4 nodes x 8 GPUs; the proxy service thread
    # cannot accept (EAGAIN), cannot receive the type from a local rank, fails a Close, and the
    # communicator aborts.
    log = (
        f"{H} [3] proxy.cc:1496 NCCL WARN [Service thread] Accept failed Resource temporarily unavailable\n"
        f"{H} [3] proxy.cc:1518 NCCL WARN [Service thread] Could not receive type from localRank 3, res=3, closed=1\n"
        f"{H} [3] proxy.cc:1540 NCCL WARN [Proxy Service 3] Failed to execute operation Close from rank 3, retcode 3\n"
        f"{H} [3] NCCL INFO comm 0x55d8db252140 rank 3 nranks 32 cudaDev 3 busId 41000 - Abort COMPLETE\n"
    )
    out = doctor_json(tmp_path, "alltoall.log", log)
    cats = [f["category"] for f in out["findings"]]
    assert cats[0] == "p2p_pairing"
    assert "oom_or_resource" in cats[:3]
    # the abort is a consequence and ranks last among the non-benign findings
    assert cats.index("unknown") > cats.index("oom_or_resource")
