"""The launch check: each problem a rank can know alone is named in one
line before any rendezvous; on real gloo ranks, the drop-in
init_process_group compares NCCL_* settings across ranks."""

from __future__ import annotations

import socket

import pytest

from ncclnb.guard import PreflightError, launch_facts, preflight
from ncclnb.repro import get
from ncclnb.repro.runner import run
from ncclnb.repro.scenario import parse

TORCHRUN = {
    "TORCHELASTIC_RUN_ID": "x",
    "RANK": "5",
    "WORLD_SIZE": "8",
    "LOCAL_RANK": "1",
    "LOCAL_WORLD_SIZE": "4",
    "GROUP_RANK": "1",
}


def test_reads_torchrun_slurm_and_openmpi_variables():
    assert launch_facts(TORCHRUN).launcher == "torchrun" and launch_facts(TORCHRUN).node_rank == 1
    slurm = launch_facts(
        {
            "SLURM_PROCID": "3",
            "SLURM_NTASKS": "8",
            "SLURM_LOCALID": "3",
            "SLURM_NTASKS_PER_NODE": "4(x2)",
            "SLURM_NODEID": "0",
            "SLURM_NNODES": "2",
        }
    )
    assert (slurm.rank, slurm.world_size, slurm.local_world_size, slurm.nodes) == (3, 8, 4, 2)
    ompi = launch_facts({"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2"})
    assert (ompi.launcher, ompi.rank, ompi.world_size) == ("openmpi", 1, 2)


def test_a_healthy_launch_passes():
    assert preflight(dict(TORCHRUN), check_store=False).rank == 5


@pytest.mark.parametrize(
    "env, kwargs, message",
    [
        ({"RANK": "7", "WORLD_SIZE": "4"}, {}, "rank 7 >= world size 4"),
        ({"RANK": "1", "WORLD_SIZE": "4"}, {"rank": 7, "world_size": 4}, "rank 7 >= world size 4"),
        (dict(TORCHRUN, RANK="6"), {}, "rank 6 is not node 1 x 4 per node + local rank 1"),
        (
            {
                "SLURM_PROCID": "3",
                "SLURM_NTASKS": "8",
                "SLURM_LOCALID": "3",
                "SLURM_NTASKS_PER_NODE": "4",
                "SLURM_NODEID": "0",
                "SLURM_NNODES": "3",
            },
            {},
            "world size 8 is not 3 nodes x 4",
        ),
        (dict(TORCHRUN, CUDA_VISIBLE_DEVICES="6,7,7,8"), {"backend": "nccl", "gpus": 10}, "names 7 twice"),
        (dict(TORCHRUN, CUDA_VISIBLE_DEVICES="0,9,1"), {"backend": "nccl", "gpus": 8}, "GPU 9 does not exist"),
        (dict(TORCHRUN, LOCAL_RANK="3"), {"backend": "nccl", "gpus": 2}, "local rank 3 but only 2 GPUs visible"),
        # CUDA stops at GPU 9, so 1 GPU is visible to local rank 1
        (dict(TORCHRUN, CUDA_VISIBLE_DEVICES="0,9,1"), {"backend": "nccl", "gpus": 8}, "only 1 GPU visible"),
        (dict(TORCHRUN, CUDA_VISIBLE_DEVICES="0,gpu1"), {"backend": "nccl", "gpus": 8}, "'gpu1' is neither"),
    ],
)
def test_each_problem_is_named(env, kwargs, message):
    with pytest.raises(PreflightError) as err:
        preflight(env, check_store=False, **kwargs)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_store_reachable_or_named():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        env = {"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
        preflight(env, deadline_s=2)
    with pytest.raises(PreflightError, match="nobody listens at MASTER_ADDR:MASTER_PORT = 127.0.0.1"):
        preflight(env, deadline_s=0.5)  # the port is closed now
    # rank 0 hosts the store itself: nothing to reach yet
    preflight(dict(env, RANK="0"), deadline_s=0.5)


def _probe(variants: dict, nproc: int = 3):
    base = get("store_host_missing")
    return parse(
        {
            "name": "preflight_probe",
            "seed": "000",
            "title": "t",
            "story": "s",
            "worker": base.worker,
            "nproc": nproc,
            "nodes": 1,
            "launcher": "processes",
            "expected_category": "rendezvous_unreachable",
            "culprit_ranks": [0],
            "lesson": "l",
            "variants": variants,
        },
        "probe",
    )


def test_drop_in_init_compares_nccl_settings_across_real_ranks(tmp_path):
    args = {"ncclnb_init": True, "steps": 2}
    scenario = _probe({"broken": {"args": args, "rank_env": {"1": {"NCCL_ALGO": "Tree"}}}, "fixed": {"args": args}})
    ok = run(scenario, "fixed", keep=str(tmp_path / "ok"))
    assert ok.completed, ok.exit_codes
    bad = run(scenario, "broken", keep=str(tmp_path / "bad"))
    assert not bad.completed
    top = bad.diagnosis.top
    assert (top.rule, top.category, top.ranks) == ("ncclnb_guard_nccl_settings", "nccl_env_override", (1,))
    assert "NCCL_ALGO: rank 1 has Tree" in (tmp_path / "bad" / "rank0.log").read_text()


def test_a_rank_whose_store_host_never_started_stops_in_seconds(tmp_path):
    scenario = _probe({"broken": {"start": [1, 2], "args": {"preflight": True, "preflight_deadline_s": 1}}, "fixed": {}})
    result = run(scenario, "broken", keep=str(tmp_path / "run"))
    assert not result.completed and not result.deadline_hit
    assert result.diagnosis.top.rule == "ncclnb_preflight_store" and result.diagnosis.top.ranks == (0,)


def test_visible_devices_counted_against_the_node_not_the_visible_count():
    # 10 GPUs on the node, 4 visible: 6..9 exist (the visible count must not stand in for the node's)
    env = dict(TORCHRUN, CUDA_VISIBLE_DEVICES="6,7,8,9")
    assert preflight(env, check_store=False, backend="nccl", gpus=10).local_rank == 1


def test_derive_reads_the_entries_alone():
    from ncclnb.model.derive import visible_count, visible_problems

    assert visible_problems("6,7,7,8", 10) == (("7", "repeat"),)
    assert visible_problems("0,9,1", 8) == (("9", "absent"),)
    assert visible_problems("GPU-8f3a,8f3a-77,MIG-GPU-8f3a/1/0", 2) == ()
    assert visible_problems("0,,1", None) == (("", "empty"),)
    assert visible_count(None, 4) == 4
    assert visible_count("0,9,1", 8) == 1
    assert visible_count("2,3", 8) == 2
    assert visible_count("0,1,2,3,4", 2) == 2
    assert visible_count("", 4) == 0
