"""Rebuild the rule fixtures that are derived from other recorded data.

    .venv/bin/python tools/build_rule_fixtures.py            # every derived fixture
    .venv/bin/python tools/build_rule_fixtures.py fr.p2p_order nofile_low

Every rule id has a fixture of its own name (``tests/test_rule_fixtures.py``):
the doctor's code rules in ``ncclnb/doctor/fixtures/`` (``<id>.log`` or a
directory ``<id>/`` of per-rank logs and flight-recorder dumps), the checks in
``ncclnb/checks/fixtures/<id>.json``. The ones written by hand (watchdog
wordings, NCCL lines) are committed as they are; this script writes the
others, each from a real source with the smallest change that makes its rule
fire:

- copies of the real runs under ``tests/doctor/`` (the reproductions recorded
  by ``repro_logs/make_logs.py``, the gloo dumps of ``fr/make_dumps.py``, the
  per-rank log sets of ``blame/``);
- NCCL-layout flight-recorder dumps from ``tests/doctor/fr/factory.py`` where
  gloo records nothing (send/recv, sub-groups, dtypes);
- the point-to-point plans ``ncclnb.guard.p2p.p2p_plan_line`` prints;
- the checks' fixtures: a bundled recorded machine or report
  (``ncclnb.recorded``) with one fact changed, written as ncclnb writes it
  (``to_json``, with its ``schema`` tag).

It only writes; ``tests/test_rule_fixtures.py`` checks that each fixture
yields its rule.

Written by hand and not rebuilt here: ``watchdog_desync``, ``watchdog_seq_differs``
and ``watchdog_all_waiting`` (torch's watchdog wordings, as in
``tests/doctor/test_blame.py``), ``nccl_version_differs_across_hosts`` (seed 002's
lines, as in ``tests/doctor/test_seeds.py``), ``world_size_differs_across_hosts``
(NCCL 2.21's communicator lines) and the ``nccl_warn.<category>.log`` lines (NCCL
WARN lines from the source file each category leans to).

Rule ids are file-name safe (``[a-z0-9_.]``): a fixture's name is its rule id as it is.
"""

from __future__ import annotations

import dataclasses
import gzip
import importlib.util
import json
import shutil
import sys
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ncclnb.collectors.parsers import peer_transports  # noqa: E402
from ncclnb.collectors.parsers.nccl_tests import parse_nccl_tests  # noqa: E402
from ncclnb.guard.p2p import p2p_plan_line  # noqa: E402
from ncclnb.model import ClusterReport, LinkTest, Nic, PairMeasurement  # noqa: E402
from ncclnb.recorded import load  # noqa: E402

# the checks' tests derive their machines the same way: one set of helpers for both
from tests.checks.checks_machines import job as _job  # noqa: E402
from tests.checks.checks_machines import machine as _snap  # noqa: E402
from tests.checks.checks_machines import renamed as _renamed  # noqa: E402
from tests.checks.checks_machines import with_env as _env  # noqa: E402
from tests.checks.checks_machines import with_host as _host  # noqa: E402
from tests.checks.checks_machines import with_versions as _versions  # noqa: E402

DOCTOR = REPO / "ncclnb" / "doctor" / "fixtures"
CHECKS = REPO / "ncclnb" / "checks" / "fixtures"
TESTS = REPO / "tests" / "doctor"
LINKS = REPO / "ncclnb" / "recorded" / "links"
MIB = 1 << 20


def _factory():
    spec = importlib.util.spec_from_file_location("ncclnb_fr_factory", TESTS / "fr" / "factory.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _fresh_dir(name: str) -> Path:
    out = DOCTOR / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    return out


def _copy(name: str, source: str, pattern: str = "*") -> Callable[[], None]:
    def build() -> None:
        out = _fresh_dir(name)
        for p in sorted((TESTS / source).glob(pattern)):
            # the logs and dumps of the run, not the expectations a test keeps beside them (.expected.json)
            if p.is_file() and p.suffix in (".log", ".json") and not p.name.startswith("."):
                shutil.copyfile(p, out / p.name)

    return build


def _write_dumps(name: str, traces, drop=()) -> None:
    out = _fresh_dir(name)
    for t in traces:
        if t.rank not in drop:
            (out / f"rank{t.rank}.json").write_text(json.dumps(t.dump()) + "\n")


# ---- flight recorder, NCCL layout (what gloo does not record) ---------------------------------


def fr_dtype_mismatch() -> None:
    ts = _factory().world(3)
    for t in ts:
        t.collective("all_reduce", ((4096,),))
        t.collective("all_reduce", ((512,),), dtype="BFloat16" if t.rank == 2 else "Float", state="started")
    _write_dumps("fr.dtype_mismatch", ts)


def fr_extra_collective() -> None:
    ts = _factory().world(4)
    for t in ts:
        t.collective("all_reduce", ((4096,),))
    ts[0].collective("all_reduce", ((1,),), state="started")  # rank 0 reduces a metric alone
    _write_dumps("fr.extra_collective", ts)


def fr_missing_rank_elsewhere() -> None:
    ts = _factory().world(4, {"0": ("default_pg", (0, 1, 2, 3)), "1": ("pp", (1, 3))})
    for t in ts:
        t.collective("all_reduce", ((4096,),))
    ts[3].collective("broadcast", ((4096,),), pg="1", state="started")  # a pipeline-group op rank 1 never calls
    for r in (0, 1, 2):
        ts[r].collective("all_reduce", ((4096,),), state="started")
    _write_dumps("fr.missing_rank_elsewhere", ts)


def fr_p2p_unmatched() -> None:
    f = _factory()
    ts = f.world(4)
    f.all_to_all_p2p(ts)
    ts[1].recv(2, ((256,),), state="started")  # rank 1 waits for a message rank 2 never sends
    _write_dumps("fr.p2p_unmatched", ts)


def fr_p2p_order() -> None:
    ts = _factory().world(2)
    ts[0].send(1, ((4,),)).send(1, ((8,),))
    ts[1].recv(0, ((8,),)).recv(0, ((4,),))
    _write_dumps("fr.p2p_order", ts)


def fr_p2p_size_mismatch() -> None:
    ts = _factory().world(2)
    ts[0].send(1, ((4096,),))
    ts[1].recv(0, ((4097,),), state="started")
    _write_dumps("fr.p2p_size_mismatch", ts)


# ---- flight recorder, real gloo dumps with one thing changed -------------------------------------


def _healthy() -> list[Path]:
    return sorted((TESTS / "fr" / "healthy").glob("rank*.json"))


def fr_missing_dump() -> None:
    out = _fresh_dir("fr.missing_dump")
    for p in _healthy()[:2]:  # rank 2's dump not given; the dumps name a world of 3
        shutil.copyfile(p, out / p.name)


def fr_duplicate_rank() -> None:
    out = _fresh_dir("fr.duplicate_rank")
    for p in _healthy():
        shutil.copyfile(p, out / p.name)
    shutil.copyfile(_healthy()[1], out / "rank1.retry.json")  # the same rank dumped again (a restarted job)


def fr_bad_dump() -> None:
    out = _fresh_dir("fr.bad_dump")
    for p in _healthy():
        shutil.copyfile(p, out / p.name)
    data = json.loads(_healthy()[0].read_text())
    data["entries"] = []  # a dump that recorded nothing and whose name gives no rank
    (out / "trace.json").write_text(json.dumps(data) + "\n")


def fr_dump_not_read() -> None:
    out = _fresh_dir("fr.dump_not_read")
    for p in _healthy():
        shutil.copyfile(p, out / p.name)
    text = _healthy()[2].read_text()
    (out / "rank2.partial.json").write_text(text[: len(text) // 2])  # a second copy cut off half way: not JSON


# ---- point-to-point plans (ncclnb guard) ---------------------------------------------------------


def plan_p2p_order() -> None:
    out = _fresh_dir("plan.p2p_order")
    (out / "rank0.log").write_text(p2p_plan_line(0, [(1, (4,)), (1, (8,))], []) + "\n")
    (out / "rank1.log").write_text(p2p_plan_line(1, [], [(0, (8,)), (0, (4,))]) + "\n")


def plan_p2p_size_mismatch() -> None:
    out = _fresh_dir("plan.p2p_size_mismatch")
    (out / "rank0.log").write_text(p2p_plan_line(0, [(1, (4, 1024))], []) + "\n")
    (out / "rank1.log").write_text(p2p_plan_line(1, [], [(0, (4, 1000))]) + "\n")


# ---- notes on the input --------------------------------------------------------------------------


def input_truncated() -> None:
    out = _fresh_dir("input_truncated")
    body = (TESTS / "blame" / "torch24_rank_behind" / "rank0.log").read_bytes()
    packed = gzip.compress(body * 20, mtime=0)
    (out / "rank0.log.gz").write_bytes(packed[: len(packed) * 2 // 3])  # a copy that did not finish


def input_skipped() -> None:
    # a log directory as training jobs leave it: a rank's log beside TensorBoard's binary event file
    out = _fresh_dir("input_skipped")
    shutil.copyfile(TESTS / "blame" / "torch21_first_failure" / "rank2.log", out / "rank2.log")
    record = b"\x18\x00\x00\x00\x00\x00\x00\x00\xa3\x7f\x4b\x55\t\x00\x00\x80\x1e\xd9\xd8A\x1a\rbrain.Event:2"
    (out / "events.out.tfevents.1700000000.gpu-node-3.48212.0").write_bytes(record * 64)


def input_changed() -> None:
    # the input only: the rule needs the file changed while it is read (code_rules.NEEDS_EVENT)
    out = _fresh_dir("input_changed")
    shutil.copyfile(TESTS / "blame" / "torch24_rank_behind" / "rank0.log", out / "rank0.log")


def rank_table_cut() -> None:
    # NCCL's communicator line of every rank of a 9216-rank job (1152 nodes), and one rank's OOM
    n = 9216
    lines = [
        f"node{r // 8:04d}:{20000 + r}:{20100 + r} [{r % 8}] NCCL INFO comm 0x55d8db252140 rank {r} nRanks {n} "
        f"nNodes {n // 8} localRanks 8 localRank {r % 8} MNNVL 0"
        for r in range(n)
    ]
    lines.append(
        f"[rank{n - 1}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 7 has a total "
        "capacity of 79.11 GiB of which 1.02 GiB is free."
    )
    out = _fresh_dir("rank_table_cut")
    (out / "job.log.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0))


# ---- the checks ----------------------------------------------------------------------------------


def _report(name: str) -> ClusterReport:
    rep = load(name)
    assert isinstance(rep, ClusterReport), name
    return rep


def _ranks(rep: ClusterReport, fn) -> ClusterReport:
    return dataclasses.replace(rep, ranks=tuple(fn(r) for r in rep.ranks if fn(r) is not None))


def _pinned(snaps, per_node: int, **overrides) -> ClusterReport:
    """A torchrun job with each rank bound to its own GPU's CPUs, then ``overrides``."""
    base = _job(snaps, per_node)
    ranks = []
    for r in base.ranks:
        snap = next(s for s in snaps if s.hostname == r.host)
        e = dataclasses.replace(r, cpu_affinity=snap.gpus[r.local_rank].cpu_affinity)
        ranks.append(dataclasses.replace(e, **overrides.get(f"r{r.rank}", {})))
    return dataclasses.replace(base, ranks=tuple(ranks))


def _link(report: ClusterReport, **fields) -> ClusterReport:
    """``report`` with one link test of its ranks (nccl backend, cuda) made of ``fields``."""
    base = dict(backend="nccl", device="cuda", world_size=len(report.ranks), nodes=len(report.snapshots), iterations=20)
    return dataclasses.replace(report, links=(LinkTest(**{**base, **fields}),))


def _nvls_slowed() -> ClusterReport:
    # the real 8x H100 NVLS nccl-tests run, every bus bandwidth at 60% of what was measured
    name = "nccl_tests__hgx-h100-1node-8gpu-nvls__nccl-tests-issue-290.txt"
    run = parse_nccl_tests((LINKS / name).read_text(encoding="utf-8"), name)
    test = run.links[0]
    slowed = tuple(dataclasses.replace(m, busbw_gbps=m.busbw_gbps * 0.6) for m in test.results)
    return dataclasses.replace(run, links=(dataclasses.replace(test, results=slowed),))


def _slow_pair() -> ClusterReport:
    # four DGX A100 nodes, one pair measured per neighbour in a ring; the link c -> d is at a tenth of the others
    dgx = _snap("dgx-a100")
    nodes = [_renamed(dgx, f"dgx-{c}") for c in "abcd"]
    job = _job(nodes, 8)
    pairs = tuple(
        PairMeasurement(
            src_rank=8 * i,
            dst_rank=8 * ((i + 1) % 4),
            src_host=nodes[i].hostname,
            dst_host=nodes[(i + 1) % 4].hostname,
            size_bytes=64 << 20,
            time_us=(64 << 20) / (bw * 1e3),
            busbw_gbps=bw,
        )
        for i, bw in enumerate((40.0, 41.0, 3.0, 39.0))
    )
    return _link(job, pairs=pairs)


def _socket_fallback() -> ClusterReport:
    # two DGX A100 nodes (12 active HCAs each), one rank each, whose channels NCCL set up over sockets
    nodes = [_renamed(_snap("dgx-a100"), h) for h in ("dgx-a", "dgx-b")]
    lines = (
        "dgx-a:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n"
        "dgx-b:1:2 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [send] via NET/Socket/0\n"
    )
    return _link(_job(nodes, 1), transports=peer_transports(lines))


def _net_within_node() -> ClusterReport:
    # the real 4-node EFA log's channels, with the four ranks placed on one g6e node
    g6e = _snap("aws-g6e-12xlarge")
    name = "nccl_info__aws-g6e.48xlarge-4node-1rank-each-efa__gnosia93-training-on-eks.txt"
    transports = peer_transports((LINKS / name).read_text(encoding="utf-8"))
    return _link(_job([g6e], 4), transports=transports)


def _incomplete() -> ClusterReport:
    # the link test on the two-node H100 job stopped before its first measurement
    h100 = _report("two-node-h100")
    return _link(h100, missing={"measurements": "stopped at 'after all_gather 4096' (timed out)"})


def _check_targets() -> dict:
    h100 = _report("two-node-h100")
    a, b = h100.snapshots
    g6e = _snap("aws-g6e-12xlarge")
    g6e_nics = dataclasses.replace(
        g6e,
        nics=(
            Nic(name="lo", kind="loopback", state="unknown"),
            Nic(name="eth0", kind="ethernet", state="up", speed_mbps=100000),
            Nic(name="docker0", kind="virtual", state="down"),
        ),
    )
    dgx = _snap("dgx-a100")
    return {
        "driver_too_old": lambda: _versions(_snap("seed001-10x-pcie"), torch_cuda="12.1"),
        "nccl_multiple_libraries": lambda: _report("seed002-version-mismatch").snapshots[0],
        "versions_differ": lambda: _report("seed002-version-mismatch"),
        "rank_out_of_range": lambda: _report("seed000-2node-a10g"),
        "rank_table_gaps": lambda: _ranks(h100, lambda r: None if r.rank == 5 else r),
        # WORLD_SIZE 24 on two nodes of 8 ranks each
        "world_size_vs_nodes": lambda: _ranks(h100, lambda r: dataclasses.replace(r, world_size=24)),
        "ranks_share_gpu": lambda: _job(h100.snapshots, 8, r1={"cuda_index": 0}),
        "local_rank_device": lambda: _job(h100.snapshots, 8, r2={"cuda_index": 3}, r3={"cuda_index": 2}),
        "local_rank_table": lambda: _job(h100.snapshots, 8, r1={"local_rank": 0}),
        "cuda_visible_devices_invalid": lambda: _env(_snap("seed001-10x-pcie"), CUDA_VISIBLE_DEVICES="6,7,8,10"),
        "gpu_set_numa": lambda: _env(_snap("seed001-10x-pcie"), CUDA_VISIBLE_DEVICES="6,7,8,9"),
        "nic_far_from_gpu": lambda: _snap("a30-nvlink-pairs"),
        "p2p_disabled_on_nvlink": lambda: _env(_snap("hgx-h100"), NCCL_P2P_DISABLE="1"),
        "iommu_with_pcie_p2p": lambda: _host(_snap("rtx3090-8x-pix"), iommu="on"),
        "socket_ifname": lambda: _env(g6e_nics, NCCL_SOCKET_IFNAME="ens34"),
        "ib_disabled": lambda: _env(dgx, NCCL_IB_DISABLE="1"),
        "shm_too_small": lambda: _host(_snap("hgx-h100"), shm_total_bytes=64 * MIB),
        "nofile_low": lambda: dataclasses.replace(
            h100,
            snapshots=tuple(
                _env(
                    _host(s, rlimit_nofile_soft=1024, rlimit_nofile_hard=1048576),
                    NCCL_NSOCKS_PERTHREAD="4",
                    NCCL_SOCKET_NTHREADS="4",
                )
                for s in h100.snapshots
            ),
        ),
        "memlock_low_with_ib": lambda: _host(dgx, rlimit_memlock_soft=64 * 1024),
        "nccl_env_differs": lambda: dataclasses.replace(h100, snapshots=(_env(a, NCCL_ALGO="Ring"), b)),
        # GPU3 sits on NUMA 0; its rank is bound to NUMA 1's CPUs
        "rank_affinity_numa": lambda: _pinned([_snap("hgx-h100")], 8, r3={"cpu_affinity": "52-103,156-207"}),
        # GPU0's HCAs are mlx5_0/1 (PXB); rank 0 is told to use mlx5_6 (SYS)
        "rank_nic_far": lambda: _job([_renamed(dgx, "dgx-a"), _renamed(dgx, "dgx-b")], 8, r0={"nic": "mlx5_6"}),
        "link_busbw_low": _nvls_slowed,
        "link_slow_pair": _slow_pair,
        "link_socket_fallback": _socket_fallback,
        "link_net_within_node": _net_within_node,
        "link_test_incomplete": _incomplete,
    }


def build_check(check_id: str) -> None:
    target = _check_targets()[check_id]()
    CHECKS.mkdir(parents=True, exist_ok=True)
    # as ncclnb writes a snapshot or report (ncclnb.recorded.build_reports): its schema tag first
    (CHECKS / f"{check_id}.json").write_text(json.dumps(target.to_dict(), indent=1, ensure_ascii=False) + "\n")


BUILDERS: dict[str, Callable[[], None]] = {
    "watchdog_rank_behind": _copy("watchdog_rank_behind", "blame/torch24_rank_behind"),
    "watchdog_rank_missing": _copy("watchdog_rank_missing", "blame/torch22_silent_rank"),
    "rank_claimed_twice": _copy("rank_claimed_twice", "repro_logs/duplicate_rank"),
    "ranks_beyond_world_size": _copy("ranks_beyond_world_size", "repro_logs/rank_beyond_world_size"),
    "plan.p2p_unmatched": _copy("plan.p2p_unmatched", "blame/seed004_plans"),
    "fr.missing_rank_p2p": _copy("fr.missing_rank_p2p", "repro_logs/alltoall_unpaired"),
    "fr.desync_op": _copy("fr.desync_op", "repro_logs/unseeded_split_desync"),
    "fr.late_rank": _copy("fr.late_rank", "repro_logs/slow_rank_checkpoint"),
    "fr.size_mismatch": _copy("fr.size_mismatch", "fr/size_mismatch"),
    "fr.missing_rank": _copy("fr.missing_rank", "fr/slow_rank"),
    # the same real runs without their dumps: the tracebacks alone say where each rank waited
    "p2p_wait_beside_collective": _copy("p2p_wait_beside_collective", "repro_logs/alltoall_unpaired", "rank*.log"),
    "traceback_desync": _copy("traceback_desync", "repro_logs/unseeded_split_desync", "rank*.log"),
    "traceback_rank_missing": _copy("traceback_rank_missing", "repro_logs/slow_rank_checkpoint", "rank*.log"),
    "fr.dtype_mismatch": fr_dtype_mismatch,
    "fr.extra_collective": fr_extra_collective,
    "fr.missing_rank_elsewhere": fr_missing_rank_elsewhere,
    "fr.p2p_unmatched": fr_p2p_unmatched,
    "fr.p2p_order": fr_p2p_order,
    "fr.p2p_size_mismatch": fr_p2p_size_mismatch,
    "fr.missing_dump": fr_missing_dump,
    "fr.duplicate_rank": fr_duplicate_rank,
    "fr.bad_dump": fr_bad_dump,
    "fr.dump_not_read": fr_dump_not_read,
    "plan.p2p_order": plan_p2p_order,
    "plan.p2p_size_mismatch": plan_p2p_size_mismatch,
    "input_truncated": input_truncated,
    "input_skipped": input_skipped,
    "input_changed": input_changed,
    "rank_table_cut": rank_table_cut,
}


# ---- the fallbacks: an unrecognised WARN, the candidate causes of a generic error ------------------

# the generic error of each kind as torch (or NCCL, for a closed connection) prints it; {v} is NCCL's version
GENERIC = {
    "system": "[rank{r}]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version {v}\n"
    "[rank{r}]: ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.",
    "internal": "[rank{r}]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:1970, internal error - please report this issue to the NCCL developers, NCCL version {v}\n"
    "[rank{r}]: ncclInternalError: Internal check failed.",
    "remote": "[rank{r}]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error, NCCL version {v}\n"
    "[rank{r}]: ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
    "cuda": "[rank{r}]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:1970, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version {v}\n"
    "[rank{r}]: ncclUnhandledCudaError: Call to CUDA function failed.",
    "reset": "{h}:{pid}:{tid} [0] misc/socket.cc:538 NCCL WARN Net : Connection closed by remote peer 10.0.0.12<42164>",
    "invalid_usage": "[rank{r}]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:1970, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version {v}\n"
    "[rank{r}]: ncclInvalidUsage: This usually reflects invalid usage of NCCL library.",
    "hang": "",  # NCCL's set-up, then nothing
}

# facts the candidates weigh (priors.LogContext), in the order they are tried
FACTS = (
    "several_hosts",
    "one_host",
    "container",
    "ib",
    "socket_only",
    "ifname_set",
    "bad_iface",
    "topo_env",
    "new_gpu",
    "old_gpu",
    "consumer_gpu",
    "old_stack",
    "p2p_disabled",
    "shm_disabled",
    "many_ranks",
)


def context_log(kind: str, facts: frozenset) -> str:
    """NCCL_DEBUG=INFO lines of a job's set-up as NCCL 2.19 prints them, holding ``facts``; then the error of ``kind``."""
    hosts = ["3f2a9c8e1b7d", "8c41d07e2a95"] if "container" in facts else ["gpu-node-1", "gpu-node-2"]
    hosts = hosts[:2] if "several_hosts" in facts else hosts[:1]
    version = "2.7.8+cuda11.0" if "old_stack" in facts else "2.19.3+cuda12.3"
    env = {
        "ifname_set": ("NCCL_SOCKET_IFNAME", "eth0"),
        "topo_env": ("NCCL_TOPO_FILE", "/etc/nccl/topo.xml"),
        "p2p_disabled": ("NCCL_P2P_DISABLE", "1"),
        "shm_disabled": ("NCCL_SHM_DISABLE", "1"),
    }
    gpu = "Tesla K80" if "old_gpu" in facts else "NVIDIA GeForce RTX 3090" if "consumer_gpu" in facts else ""
    lines = []
    if gpu:  # the device table torch's launcher helpers and nccl-tests print
        lines.append("# Using devices")
    for n, h in enumerate(hosts):
        pid, tid = 41210 + n, 41388 + n
        p = f"{h}:{pid}:{pid} [0] NCCL INFO "
        t = f"{h}:{pid}:{tid} [0] NCCL INFO "
        if gpu:
            lines.append(f"#  Rank  {n} Group  0 Pid  {pid} on {h} device  0 [0x1b] {gpu}")
        lines.append(
            p + ("Bootstrap : Using lo:127.0.0.1<0>" if "bad_iface" in facts else f"Bootstrap : Using eth0:10.0.0.{11 + n}<0>")
        )
        for fact, (var, value) in env.items():
            if fact in facts:
                lines.append(p + f"{var} set by environment to {value}")
        lines.append(p + f"NCCL version {version}")
        if "ib" in facts:
            lines.append(t + f"NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.{11 + n}<0>")
            lines.append(t + "Using network IB")
        elif "socket_only" in facts:
            lines.append(t + "NET/IB : No device found.")
            lines.append(t + f"NET/Socket : Using [0]eth0:10.0.0.{11 + n}<0>")
            lines.append(t + "Using network Socket")
        if "new_gpu" in facts:
            lines.append(t + "NVLS multicast support is available on dev 0")
        nnodes = " nNodes 2" if "several_hosts" in facts else " nNodes 1" if "one_host" in facts else ""
        nranks = 512 if "many_ranks" in facts else len(hosts)
        if "many_ranks" in facts:  # a large job: 64 nodes of 8 GPUs
            nnodes = " nNodes 64"
        if nnodes:
            lines.append(t + f"comm 0x55d8db252140 rank {n} nRanks {nranks}{nnodes} localRanks 1 localRank 0 MNNVL 0")
        else:
            lines.append(t + f"Trees [0] -1/-1/-1->{n}->-1 [1] -1/-1/-1->{n}->-1")
    if GENERIC[kind]:
        h = hosts[-1]
        lines.append(GENERIC[kind].format(r=len(hosts) - 1, v=version.split("+")[0], h=h, pid=41210, tid=41388))
    return "\n".join(lines) + "\n"


def _candidate_rank(rule: str, text: str) -> int:
    """1-based place of ``rule`` among the doctor's findings for ``text`` (0: absent)."""
    from ncclnb.doctor import diagnose

    rules = [f.rule for f in diagnose(text.encode()).findings]
    return rules.index(rule) + 1 if rule in rules else 0


def candidate_fixture(kind: str, category: str) -> None:
    """The fewest facts of the candidate's own that bring it first among the candidates (else as high as any set does)."""
    from itertools import combinations

    from ncclnb.doctor.priors import CANDIDATES

    cand = next(c for c in CANDIDATES[kind] if c.category == category)
    rule = f"candidate.{kind}.{category}"
    pool = [f for f in FACTS if f in cand.up]
    best = None
    for size in range(len(pool) + 1):
        for chosen in combinations(pool, size):
            facts = frozenset(chosen)
            if {"one_host", "several_hosts"} <= facts or {"ib", "socket_only"} <= facts:
                continue
            text = context_log(kind, facts)
            place = _candidate_rank(rule, text)
            if place and (best is None or place < best[0]):
                best = (place, text)
        if best and best[0] == 1:
            break
    if best is None:  # it cannot be shown (tests/test_rule_fixtures.py says why): the plain error it would explain
        print(f"build_rule_fixtures: no set of facts shows {rule}", file=sys.stderr)
        best = (0, context_log(kind, frozenset()))
    (DOCTOR / f"{rule}.log").write_text(best[1])


def _candidate_builders() -> dict:
    from ncclnb.doctor.priors import CANDIDATES

    return {
        f"candidate.{kind}.{c.category}": (lambda kind=kind, cat=c.category: candidate_fixture(kind, cat))
        for kind, cands in CANDIDATES.items()
        for c in cands
    }


BUILDERS.update(_candidate_builders())


def main(argv: list[str]) -> int:
    checks = _check_targets()
    wanted = argv or [*BUILDERS, *checks]
    unknown = [n for n in wanted if n not in BUILDERS and n not in checks]
    if unknown:
        print(f"build_rule_fixtures: unknown fixture {', '.join(unknown)}", file=sys.stderr)
        return 2
    for name in wanted:
        if name in BUILDERS:
            BUILDERS[name]()
        else:
            build_check(name)
        print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
