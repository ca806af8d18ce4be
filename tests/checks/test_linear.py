"""The checks are linear in GPUs and ranks, proved by counting, not timing.

A check that scans the GPU list once per GPU (or once per rank) does n^2
work: at 20,000 GPUs that was 24 s, and at 1e6 it did not finish. Here each
check runs under ``sys.settrace``, counting the lines ncclnb executes and
every Python call (a dataclass ``__eq__`` in a ``list.__contains__``
included), on inputs of n and 4n GPUs and ranks: linear work grows 4x,
quadratic 16x. The tracer gives up (a BaseException the checks do not
swallow) once the count passes what linear work could reach, so a
quadratic check fails in seconds instead of hanging the suite.

The full sizes (a 20,000-GPU node with a partial link matrix, that node
with a 20,000-rank table, a 50,000-rank report) run in a child process
under a memory limit and a generous deadline that only catches a hang.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _work import work

from ncclnb.checks import check, registry

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

from large_inputs import huge_node, huge_report, many_ranks_report  # noqa: E402

SMALL, FACTOR = 400, 4
LINEAR_SLACK = 1.5  # n log n sorting and fixed costs stay well under 1.5 x 4; n^2 is 16
STEPS_PER_ITEM = 1_000  # the linear checks take under 150 steps per GPU or rank


@functools.lru_cache(maxsize=2)  # built once for every check's test
def _targets(n: int) -> dict:
    # the node: CUDA_VISIBLE_DEVICES names n-1 GPUs, P2P and IB off, IOMMU on; a 64 x 64 link matrix
    return {
        "node": huge_node(n),
        "node with P2P on": huge_node(n, env={"NCCL_P2P_DISABLE": "0"}),  # iommu_with_pcie_p2p walks its pairs
        "node with a rank per GPU": many_ranks_report(n),
        "report of n ranks on n/8 nodes": huge_report(ranks=n, per_node=8),
    }


@pytest.mark.parametrize("check_id", sorted(registry()))
def test_every_check_is_linear_in_gpus_and_ranks(check_id):
    small, large = _targets(SMALL), _targets(SMALL * FACTOR)
    for name in small:
        w_small = work(lambda: check(small[name], only=[check_id]), budget=STEPS_PER_ITEM * SMALL)
        assert w_small <= STEPS_PER_ITEM * SMALL, (
            f"{check_id} on the {name}: more than {STEPS_PER_ITEM} steps per GPU or rank at n={SMALL}"
        )
        ceiling = LINEAR_SLACK * FACTOR * w_small + 20_000
        w_large = work(lambda: check(large[name], only=[check_id]), budget=ceiling)
        assert w_large <= ceiling, (
            f"{check_id} on the {name}: {w_small} steps at n={SMALL}, more than {w_large} at n={SMALL * FACTOR} "
            f"(x{w_large / max(1, w_small):.1f} for x{FACTOR} the input: not linear)"
        )


def test_linked_pairs_reads_only_the_cells_the_matrix_has():
    from ncclnb.checks._facts import NodeFacts

    snap = huge_node(5_000, matrix=64)
    facts = NodeFacts(snap)
    visited = work(lambda: list(facts.linked_pairs(facts.gpus)))
    # a few steps per GPU to find its row, and per cell of the 64 x 64 matrix; not 5,000^2 / 2 pairs
    assert visited < 10 * len(snap.gpus) + 4 * 64 * 64
    pairs = list(facts.linked_pairs(facts.gpus))
    assert len(pairs) == 64 * 63 // 2
    assert all(label == snap.links.gpu_gpu[facts.position(a)][facts.position(b)] for a, b, label in pairs)
    # a ragged matrix (20,000 rows of one cell each) costs its cells, not the square of its rows
    import dataclasses

    from ncclnb.model import Links

    ragged = dataclasses.replace(snap, links=Links(gpu_gpu=tuple(("X",) for _ in snap.gpus)))
    facts = NodeFacts(ragged)
    assert work(lambda: list(facts.linked_pairs(facts.gpus))) < 60 * len(snap.gpus)
    assert list(facts.linked_pairs(facts.gpus)) == []


def test_visible_devices_and_rank_gpus_resolve_like_before():
    from ncclnb.checks._facts import NodeFacts

    snap = huge_node(100)
    facts = NodeFacts(snap)
    chosen, bad = facts.parse_visible()
    assert [g.index for g in chosen] == list(range(99)) and bad == []
    # a UUID prefix that two GPUs share is ambiguous; CUDA stops there
    env = dict(snap.env, CUDA_VISIBLE_DEVICES="3,GPU-,5")
    import dataclasses

    chosen, bad = NodeFacts(dataclasses.replace(snap, env=env)).parse_visible()
    assert [g.index for g in chosen] == [3] and bad == ["GPU-", "5"]
    env = dict(snap.env, CUDA_VISIBLE_DEVICES="3,4,3")
    chosen, bad = NodeFacts(dataclasses.replace(snap, env=env)).parse_visible()
    assert [g.index for g in chosen] == [3, 4] and bad == ["3"]
    # digits CUDA does not read ("¹", "١": str.isdigit() takes them, int() does not) name no GPU, and raise nothing
    for odd in ("¹", "١"):
        env = dict(snap.env, CUDA_VISIBLE_DEVICES=f"2,{odd}", NCCL_P2P_DISABLE=odd, WORLD_SIZE=odd)
        chosen, bad = NodeFacts(dataclasses.replace(snap, env=env)).parse_visible()
        assert [g.index for g in chosen] == [2] and bad == [odd]
        found = check(dataclasses.replace(snap, env=env))
        assert not [f for f in found if f.category == "unknown"], [f.title for f in found]


CHILD = textwrap.dedent("""
    import json, resource, sys
    sys.path.insert(0, {bench!r})
    resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
    from large_inputs import huge_node, huge_report, many_ranks_report
    from ncclnb.checks import check
    out = {{}}
    for name, make in (("node", lambda: huge_node(20_000)), ("ranks", lambda: many_ranks_report(20_000)),
                       ("report", lambda: huge_report(50_000))):
        found = check(make())
        out[name] = [dict(rule=f.rule, severity=f.severity, title=f.title, ranks=len(f.ranks),
                          evidence=[e.text for e in f.evidence]) for f in found]
        print(name, len(found), file=sys.stderr, flush=True)
    print(json.dumps(out))
""")


def test_20000_gpus_and_50000_ranks_are_checked_with_readable_findings():
    limit = 4 << 30  # 4 GiB of address space for all three inputs and their checks
    code = CHILD.format(bench=str(REPO / "bench"), limit=limit)
    env = dict(os.environ, PYTHONHASHSEED="0")
    try:  # a deadline against a hang only: linear checks take seconds here, the quadratic ones took hours
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"checks of 20,000 GPUs / 50,000 ranks did not finish in 600 s (stderr: {exc.stderr!r})")
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    node = {f["rule"]: f for f in out["node"]}
    # the 64 x 64 matrix: boards of 8 on NVLink, 8 boards, all on NUMA node 0 (2,500 GPUs per node)
    assert "gpu_set_numa" in node and "NUMA nodes" in node["gpu_set_numa"]["title"]
    assert "p2p_disabled_on_nvlink" in node and f"between {8 * 28} GPU pairs" in node["p2p_disabled_on_nvlink"]["title"]
    assert {"shm_too_small", "ib_disabled", "nofile_low", "nic_far_from_gpu", "nccl_multiple_libraries"} <= set(node)
    ranks = {f["rule"] for f in out["ranks"]}
    assert {"rank_table_gaps", "local_rank_device"} <= ranks
    report = {f["rule"]: f for f in out["report"]}
    assert {"rank_table_gaps", "rank_out_of_range", "local_rank_device", "versions_differ"} <= set(report)
    for name, found in out.items():  # every finding stays readable at this size
        for f in found:
            assert len(f["title"]) < 400, (name, f["rule"], f["title"][:200])
            assert len(f["evidence"]) <= 16 and all(len(t) < 1200 for t in f["evidence"]), (name, f["rule"])
