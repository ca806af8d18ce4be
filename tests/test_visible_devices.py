"""One reading of CUDA_VISIBLE_DEVICES: ``model.derive.read_visible`` against a
table of values, and every caller (the collector's ``cuda_index``, the checks,
the views) giving its answer."""

from __future__ import annotations

import dataclasses

import pytest

from ncclnb import recorded
from ncclnb.model import ClusterReport, NodeSnapshot, RankEntry
from ncclnb.model.derive import VisibleDevices, cuda_device, read_visible, visible_gpus

UUIDS = (
    "GPU-3b5f0a2c-1111-2222-3333-444444444444",
    "GPU-3b5f9d71-aaaa-bbbb-cccc-dddddddddddd",
    "GPU-77c1e0aa-0000-1111-2222-333333333333",
    "GPU-e9012345-9999-8888-7777-666666666666",
)
MIGS = ((), ("MIG-5d1c2a4e-0000-1111-2222-333333333333",), (), ())


def machine(value=None, uuids=UUIDS) -> NodeSnapshot:
    """The recorded l40s-2socket (4 GPUs), with UUIDs (it was recorded
    without) and ``CUDA_VISIBLE_DEVICES=value`` (None: unset)."""
    return machine_like(recorded.load("l40s-2socket"), uuids, value)


# (value, GPUs CUDA enumerates in CUDA order, the entries it ignores)
CASES = [
    pytest.param(None, (0, 1, 2, 3), (), id="unset: every GPU"),
    pytest.param("", (), (), id="empty: none"),
    pytest.param("   ", (), (), id="blank: none"),
    pytest.param("0,1", (0, 1), (), id="0,1"),
    pytest.param("1,0", (1, 0), (), id="1,0 keeps CUDA's order"),
    pytest.param("2,3", (2, 3), (), id="2,3"),
    pytest.param("0,9,1", (0,), ("9", "1"), id="0,9,1 stops at 9"),
    pytest.param(UUIDS[2], (2,), (), id="full UUID"),
    pytest.param("GPU-e90,GPU-77c1", (3, 2), (), id="UUID prefixes"),
    pytest.param("77c1e0aa,e9", (2, 3), (), id="GPU- omitted"),
    pytest.param("GPU-3b5f,0", (), ("GPU-3b5f", "0"), id="ambiguous prefix stops"),
    pytest.param("GPU-", (), ("GPU-",), id="GPU- alone names no GPU"),
    pytest.param("GPU-ffff,0", (), ("GPU-ffff", "0"), id="unknown UUID stops"),
    pytest.param(MIGS[1][0] + ",0", (1, 0), (), id="MIG id"),
    pytest.param("MIG-" + UUIDS[3] + "/1/0", (3,), (), id="legacy MIG-GPU- id"),
    pytest.param("MIG-00000000-dead", (), ("MIG-00000000-dead",), id="unknown MIG id"),
    pytest.param(" 3 , 0 ", (3, 0), (), id="whitespace around entries"),
    pytest.param("0,,1", (0,), ("", "1"), id="empty entry stops"),
    pytest.param("1,1,2", (1,), ("1", "2"), id="repeat stops"),
    pytest.param("1," + UUIDS[1], (1,), (UUIDS[1],), id="repeat by UUID stops"),
    pytest.param("-1,0", (), ("-1", "0"), id="negative stops"),
    pytest.param("0,abc", (0,), ("abc",), id="garbage stops"),
    pytest.param("2,¹", (2,), ("¹",), id="non-ASCII digit stops"),
    pytest.param("0x1", (), ("0x1",), id="hex stops"),
]


@pytest.mark.parametrize("value, positions, ignored", CASES)
def test_visible_gpus_reads_cuda_visible_devices_as_cuda_does(value, positions, ignored):
    snap = machine(value)
    seen = read_visible(snap, mig_uuids=MIGS)
    assert seen == VisibleDevices(value, positions, ignored)
    assert visible_gpus(snap, mig_uuids=MIGS) == positions
    # the same answer from the GPUs and the value given apart
    assert visible_gpus(snap.gpus, value, mig_uuids=MIGS) == positions
    # JSON-ready: plain ints and strings in tuples
    assert all(type(p) is int for p in seen.positions) and all(type(e) is str for e in seen.ignored)


def test_an_explicit_value_wins_over_the_snapshot_env():
    snap = machine("0,1")
    assert visible_gpus(snap, "3") == (3,)
    assert visible_gpus(snap, None) == (0, 1, 2, 3)


def test_indices_are_nvml_indices_not_positions():
    snap = machine()
    partial = dataclasses.replace(snap, gpus=snap.gpus[2:])  # a snapshot that lists GPUs 2 and 3 only
    assert visible_gpus(partial, "3,2") == (1, 0)
    assert visible_gpus(partial, "0") == ()


def test_cuda_device_maps_a_cuda_index_through_the_visible_gpus():
    assert cuda_device((2, 3), 0) == 2 and cuda_device((2, 3), 1) == 3
    for odd in (2, -1, None, True, "0"):
        assert cuda_device((2, 3), odd) is None


# --- every caller gives the derive answer --------------------------------------


def test_collector_cuda_index_is_the_derive_answer_for_0_9_1():
    from ncclnb.collectors.visible import cuda_indices

    indices, reason = cuda_indices({"CUDA_VISIBLE_DEVICES": "0,9,1"}, list(UUIDS), ["NVIDIA L40S"] * 4)
    assert reason is None
    assert indices == [0, None, None, None]
    assert tuple(p for k in range(4) for p, c in enumerate(indices) if c == k) == visible_gpus(machine("0,9,1"))
    # UUID prefixes without GPU- and MIG ids, as the reading takes them
    indices, _ = cuda_indices({"CUDA_VISIBLE_DEVICES": f"e9,{MIGS[1][0]}"}, list(UUIDS), mig_uuids=MIGS)
    assert indices == [None, 1, None, 0]


def test_check_finding_is_the_derive_answer_for_0_9_1():
    from ncclnb.checks import check
    from ncclnb.checks._facts import NodeFacts

    snap = machine("0,9,1")
    seen = read_visible(snap)
    facts = NodeFacts(snap)
    assert [facts.gpus.index(g) for g in facts.visible()] == list(seen.positions) == [0]
    found = [f for f in check(snap) if f.rule == "cuda_visible_devices_invalid"]
    assert len(found) == 1
    assert "names GPUs 9,1 that" in found[0].title and found[0].severity == "warning"
    assert f"visible to CUDA: {len(seen.positions)}" in found[0].evidence[0].text


def test_view_highlights_the_derive_answer_for_0_9_1():
    from ncclnb.views import show_topology
    from ncclnb.views._common import gpus_in_use

    snap = machine("0,9,1")
    assert gpus_in_use(snap) == sorted(visible_gpus(snap)) == [0]  # was [0, 1]: the view skipped the 9
    assert "GPUs in use: GPU0<" in show_topology(snap).figure.layout.title.text
    # UUIDs: a prefix, not a substring ("5f0a2c" is inside GPU 0's UUID but starts none)
    assert gpus_in_use(machine("77c1")) == [2]
    assert gpus_in_use(machine("5f0a2c")) == []


def test_a_rank_cuda_index_goes_through_the_visible_gpus_in_checks_and_views():
    """A rank on cuda:0 under CUDA_VISIBLE_DEVICES=2,3 is on GPU 2 for the
    checks and the views alike, even where the snapshot's GPUs carry the
    cuda_index of another CUDA_VISIBLE_DEVICES (the env replaced afterwards)."""
    from ncclnb.checks._facts import NodeFacts
    from ncclnb.views._common import GpuPositions
    from ncclnb.views.numa import rank_placements

    base = machine()
    stale = dataclasses.replace(
        base,
        gpus=tuple(dataclasses.replace(g, cuda_index=k) for k, g in enumerate(base.gpus)),
        env=dict(base.env, CUDA_VISIBLE_DEVICES="2,3"),
    )
    ranks = tuple(RankEntry(rank=k, host=stale.hostname, local_rank=k, cuda_index=k) for k in range(3))
    facts, where = NodeFacts(stale), GpuPositions(stale)
    want = [2, 3, None]
    assert [cuda_device(visible_gpus(stale), r.cuda_index) for r in ranks] == want
    assert [None if (g := facts.rank_gpu(r)) is None else g.index for r in ranks] == want
    assert [where.rank_position(r) for r in ranks] == want
    assert [p.gpu_pos for p in rank_placements(stale, ranks)] == want


@pytest.mark.parametrize("name", recorded.names())
@pytest.mark.parametrize("value", [None, "", "2,3", "0,9,1", "1,0", "GPU-", "UUID"])
def test_collector_checks_and_views_agree_on_every_bundled_machine(name, value):
    from ncclnb.checks._facts import NodeFacts
    from ncclnb.collectors.visible import cuda_indices
    from ncclnb.views._common import gpus_in_use

    target = recorded.load(name)
    snaps = target.snapshots if isinstance(target, ClusterReport) else (target,)
    for snap in snaps:
        uuids = [f"GPU-{name}-{snap.hostname}-{k:04d}" for k in range(len(snap.gpus))]
        env_value = uuids[-1] if value == "UUID" and uuids else value
        snap = machine_like(snap, uuids, env_value)
        want = visible_gpus(snap)
        env = {} if env_value is None else {"CUDA_VISIBLE_DEVICES": env_value}
        indices, _ = cuda_indices(dict(env, CUDA_DEVICE_ORDER="PCI_BUS_ID"), uuids)
        assert tuple(p for k in range(len(uuids)) for p, c in enumerate(indices) if c == k) == want
        facts = NodeFacts(snap)
        assert tuple(facts.gpus.index(g) for g in facts.visible()) == want
        assert gpus_in_use(snap) == (None if env_value is None else sorted(want))


def machine_like(snap: NodeSnapshot, uuids, value) -> NodeSnapshot:
    gpus = tuple(dataclasses.replace(g, uuid=u) for g, u in zip(snap.gpus, uuids))
    env = {k: v for k, v in snap.env.items() if k != "CUDA_VISIBLE_DEVICES"}
    if value is not None:
        env["CUDA_VISIBLE_DEVICES"] = value
    return dataclasses.replace(snap, gpus=gpus, env=env)
