"""The survey with real processes on 127.0.0.1: two torchrun "nodes" side by
side, --local, and one planted problem per run (a rank beyond the world
size, a wrong LOCAL_RANK, a rank that exits before joining). No mocks, no
timed assertions; each test checks that nothing it started is left."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _procs import processes_mentioning

import ncclnb
from ncclnb.repro.runner import free_port

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = "10"  # the survey's --timeout in these tests: a partial report comes after it


def _env(**extra) -> dict:
    drop = (
        "RANK",
        "WORLD_SIZE",
        "LOCAL_RANK",
        "LOCAL_WORLD_SIZE",
        "NODE_RANK",
        "GROUP_RANK",
        "MASTER_ADDR",
        "MASTER_PORT",
        "TORCHELASTIC_RUN_ID",
        "TORCHELASTIC_USE_AGENT_STORE",
    )
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith(("SLURM_", "OMPI_"))}
    env.update(PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", PYTHONPATH=str(REPO))
    env.update({k: str(v) for k, v in extra.items()})
    return env


def _ranks(out: Path, ranks: dict, argv=None) -> list:
    """Start one plain process per entry of ``ranks`` ({name: env}), the way
    the repro scenarios do; returns their CompletedProcess-like results."""
    argv = argv or [sys.executable, "-m", "ncclnb", "survey", "--out", str(out), "--timeout", TIMEOUT]
    procs = {
        name: subprocess.Popen(cmd if cmd else argv, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for name, (env, cmd) in ranks.items()
    }
    results = {}
    try:
        for name, p in procs.items():
            stdout, stderr = p.communicate(timeout=120)
            results[name] = (p.returncode, stdout, stderr)
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
    return results


def _plain(out: Path, port: int, rank: int, world: int, local: int, *, cmd=None):
    return _env(
        RANK=rank,
        WORLD_SIZE=world,
        LOCAL_RANK=local,
        LOCAL_WORLD_SIZE=world,
        NODE_RANK=0,
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=port,
        SURVEY_TEST=out,
    ), cmd


def _rules(report_path: Path) -> set:
    return {f.rule for f in ncclnb.check(ncclnb.load(str(report_path)))}


@pytest.mark.parametrize("rendezvous", ["static", "c10d"])
def test_two_torchrun_nodes_side_by_side(tmp_path, rendezvous):
    out, port = tmp_path / "out", free_port()

    def argv(node):
        rdzv = (
            ["--node-rank", str(node), "--master-addr", "127.0.0.1", "--master-port", str(port)]
            if rendezvous == "static"
            else ["--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", out.name]
        )
        return [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nnodes",
            "2",
            "--nproc-per-node",
            "2",
            *rdzv,
            "--max-restarts",
            "0",
            "-m",
            "ncclnb",
            "survey",
            "--out",
            str(out),
            "--timeout",
            TIMEOUT,
        ]

    env = _env(SURVEY_TEST=out)
    results = _ranks(out, {0: (env, argv(0)), 1: (env, argv(1))})
    assert [results[n][0] for n in (0, 1)] == [0, 0], results
    summary = results[0][1] + results[1][1]
    assert "4 ranks on 2 node snapshots" in summary and "verdict: READY" in summary
    report = ncclnb.load(str(out / "report.json"))
    assert sorted(r.rank for r in report.ranks) == [0, 1, 2, 3]
    assert {r.world_size for r in report.ranks} == {4}
    # both "nodes" are this machine: one hostname, two node ranks -> HOST#node0, HOST#node1
    hosts = {r.node_rank: r.host for r in report.ranks}
    assert hosts[0].endswith("#node0") and hosts[1].endswith("#node1")
    assert sorted(s.hostname for s in report.snapshots) == sorted(hosts.values())
    assert "several node ranks" in report.description
    assert {(r.node_rank, r.local_rank) for r in report.ranks} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert all(r.pid and r.cpu_affinity for r in report.ranks)
    # the link test ran over gloo across both "nodes": busbw for the four collectives, a pair ring node to node
    [link] = report.links
    assert (link.backend, link.world_size, link.nodes) == ("gloo", 4, 2) and "links    gloo on cpu" in summary
    assert {m.collective for m in link.results} == {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"}
    assert all(m.busbw_gbps > 0 and m.time_us > 0 for m in link.results)
    assert sorted((p.src_rank, p.dst_rank) for p in link.pairs) == [(0, 2), (2, 0)]
    assert {p.src_host for p in link.pairs} == set(hosts.values())
    ncclnb.dashboard(report)  # every view renders it
    assert processes_mentioning(str(out)) == []


def test_local_two_ranks(tmp_path, cli):
    out = tmp_path / "out"
    proc = cli("survey", "--local", "--nproc", "2", "--out", str(out), "--timeout", TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert "verdict: READY" in proc.stdout and str(out / "report.json") in proc.stdout
    report = ncclnb.load(str(out / "report.json"))
    assert [r.rank for r in report.ranks] == [0, 1] and len(report.snapshots) == 1
    assert report.ranks[0].host == report.snapshots[0].hostname  # one hostname, one node rank: the plain name
    assert processes_mentioning(str(out)) == []


def test_rank_beyond_world_size(tmp_path, cli):
    """RANK 0 and RANK 2 with WORLD_SIZE=2 (the launcher numbered node 1's
    rank 2 for a world of 2): rank 2 says so in one line and exits 1; rank 0
    waits --timeout for rank 1, then writes a partial report that has rank
    2's facts (from the survey's registry) and names rank 1 as missing."""
    out, port = tmp_path / "out", free_port()
    results = _ranks(out, {0: _plain(out, port, 0, 2, 0), 2: _plain(out, port, 2, 2, 1)})
    code, stdout, stderr = results[2]
    assert code == 1 and "Traceback" not in stderr
    assert stderr.strip().count("\n") == 0 and "RANK 2 >= WORLD_SIZE 2" in stderr, stderr
    code0, stdout0, stderr0 = results[0]
    assert code0 == 1 and "PARTIAL" in stdout0 and "Traceback" not in stderr0
    report = ncclnb.load(str(out / "report.json"))
    assert sorted(r.rank for r in report.ranks) == [0, 2]
    assert "PARTIAL" in report.description and "Rank 1 of 0-1 never registered" in report.description
    assert {"rank_out_of_range", "rank_table_gaps"} <= _rules(out / "report.json")
    ncclnb.dashboard(report)  # a partial report renders like any other
    checked = cli("check", "--json", str(out / "report.json"))
    assert checked.returncode == 0
    found = json.loads(checked.stdout)["findings"]
    beyond = [f for f in found if f["rule"] == "rank_out_of_range"]
    assert beyond and beyond[0]["ranks"] == [2] and beyond[0]["category"] == "rank_world_size_mismatch"
    assert processes_mentioning(str(out)) == []


def test_wrong_local_rank(tmp_path, cli):
    out, port = tmp_path / "out", free_port()
    results = _ranks(out, {0: _plain(out, port, 0, 2, 0), 1: _plain(out, port, 1, 2, 0)})  # both LOCAL_RANK=0
    assert results[1][0] == 0
    code, stdout, _ = results[0]
    assert code == 1 and "NOT READY" in stdout and "LOCAL_RANK" in stdout
    checked = cli("check", str(out / "report.json"))
    assert checked.returncode == 0 and "local_rank_table" in checked.stdout and "LOCAL_RANK 0" in checked.stdout
    assert processes_mentioning(str(out)) == []


def test_rank_that_exits_before_joining(tmp_path):
    """Rank 2's process ends before it joins: after --timeout, rank 0 writes
    a partial report naming it; ranks 0 and 1 exit 1 with one line or the summary."""
    out, port = tmp_path / "out", free_port()
    quitter = [sys.executable, "-c", "import sys; sys.exit(3)"]
    results = _ranks(
        out, {0: _plain(out, port, 0, 3, 0), 1: _plain(out, port, 1, 3, 1), 2: _plain(out, port, 2, 3, 2, cmd=quitter)}
    )
    assert results[2][0] == 3
    code1, _, stderr1 = results[1]
    assert code1 == 1 and "Traceback" not in stderr1 and stderr1.strip().count("\n") == 0, stderr1
    code0, stdout0, _ = results[0]
    assert code0 == 1 and "PARTIAL" in stdout0 and "missing rank 2" in stdout0
    report = ncclnb.load(str(out / "report.json"))
    assert sorted(r.rank for r in report.ranks) == [0, 1] and len(report.snapshots) == 1
    assert "Rank 2 of 0-2 never registered" in report.description
    gaps = [f for f in ncclnb.check(report) if f.rule == "rank_table_gaps"]
    assert gaps and list(gaps[0].ranks) == [2]
    assert processes_mentioning(str(out)) == []


@pytest.mark.parametrize("launcher", ["slurm", "openmpi"])
def test_srun_and_mpirun_variables(tmp_path, launcher):
    """The rank variables srun and mpirun set, on plain processes (MASTER_ADDR/PORT exported, as the docs say)."""
    out, port = tmp_path / "out", free_port()

    def env(rank):
        names = (
            {
                "SLURM_PROCID": rank,
                "SLURM_NTASKS": 2,
                "SLURM_LOCALID": rank,
                "SLURM_NTASKS_PER_NODE": 2,
                "SLURM_NODEID": 0,
                "SLURM_NNODES": 1,
            }
            if launcher == "slurm"
            else {
                "OMPI_COMM_WORLD_RANK": rank,
                "OMPI_COMM_WORLD_SIZE": 2,
                "OMPI_COMM_WORLD_LOCAL_RANK": rank,
                "OMPI_COMM_WORLD_LOCAL_SIZE": 2,
            }
        )
        return _env(MASTER_ADDR="127.0.0.1", MASTER_PORT=port, SURVEY_TEST=out, **names), None

    results = _ranks(out, {0: env(0), 1: env(1)})
    assert [results[r][0] for r in (0, 1)] == [0, 0], results
    assert f"launcher {launcher}" in results[0][1]
    report = ncclnb.load(str(out / "report.json"))
    assert [(r.rank, r.local_rank, r.world_size) for r in report.ranks] == [(0, 0, 2), (1, 1, 2)]
    assert report.ranks[0].node_rank == (0 if launcher == "slurm" else None)  # Open MPI names no node index
    assert processes_mentioning(str(out)) == []


def test_usage_errors_are_one_line(tmp_path, cli):
    for args in (
        ("survey", "--out", str(tmp_path)),  # no launcher variables
        ("survey", "--local", "--out", str(tmp_path)),  # --local without --nproc
        ("survey", "--nproc", "2", "--out", str(tmp_path)),  # --nproc without --local
        ("survey", "--local", "--nproc", "0", "--out", str(tmp_path)),
    ):
        proc = cli(*args)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, (args, proc.stderr)
        assert "Traceback" not in proc.stderr
    help_text = cli("survey", "--help").stdout
    assert "torchrun" in help_text and "--timeout" in help_text and "partial report" in help_text


def test_node_on_another_nccl(tmp_path, cli):
    """Seed 002 on loopback: two torchrun "nodes", each with LD_LIBRARY_PATH
    on a directory holding a differently named NCCL build (the collector reads
    versions from file names). The report's version check names the NCCL of
    each node, and `ncclnb check` prints it."""
    out, port = tmp_path / "out", free_port()
    libs = {0: "libnccl.so.2.21.5", 1: "libnccl.so.2.18.1"}
    runs = {}
    for node, name in libs.items():
        folder = tmp_path / f"node{node}-lib"
        folder.mkdir()
        (folder / name).touch()
        argv = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nnodes",
            "2",
            "--nproc-per-node",
            "1",
            "--node-rank",
            str(node),
            "--master-addr",
            "127.0.0.1",
            "--master-port",
            str(port),
            "--max-restarts",
            "0",
            "-m",
            "ncclnb",
            "survey",
            "--out",
            str(out),
            "--timeout",
            TIMEOUT,
            "--no-link-test",
        ]
        runs[node] = (_env(SURVEY_TEST=out, LD_LIBRARY_PATH=folder), argv)
    results = _ranks(out, runs)
    assert results[1][0] == 0, results[1]
    code, stdout, _ = results[0]
    assert code == 1 and "NOT READY" in stdout and "NCCL (used by torch) differs" in stdout, stdout
    report = ncclnb.load(str(out / "report.json"))
    nccl = {
        s.hostname: [lib.version for lib in s.versions.nccl_system if lib.source == "LD_LIBRARY_PATH"] for s in report.snapshots
    }
    hosts = {r.node_rank: r.host for r in report.ranks}
    assert nccl == {hosts[0]: ["2.21.5"], hosts[1]: ["2.18.1"]}
    assert all(r.nic for r in report.ranks)  # rankfacts on a real rank: every Linux has at least lo
    assert list(report.findings) == ncclnb.check(report)  # the survey stored what the checks say
    differ = [f for f in report.findings if f.rule == "versions_differ" and f.title.startswith("NCCL (used")]
    assert len(differ) == 1 and differ[0].severity == "error" and hosts[1] in differ[0].hosts
    assert "2.18.1" in differ[0].title and "2.21.5" in differ[0].title
    checked = cli("check", str(out / "report.json"))
    assert checked.returncode == 0 and "versions_differ" in checked.stdout
    assert "2.18.1" in checked.stdout and hosts[1] in checked.stdout
    assert processes_mentioning(str(out)) == []
