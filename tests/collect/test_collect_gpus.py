"""GPU facts through a fake NVML built from bundled recorded machines."""

from __future__ import annotations

import json
import threading
import time

import pytest

from fakes.runner import no_commands
from ncclnb.collectors import collect
from ncclnb.collectors.nvml import read_gpus
from ncclnb.recorded import load
from ncclnb.model import NodeSnapshot

MACHINES = ["l40s-2socket", "dgx-a100", "hgx-h100", "a30-nvlink-pairs", "rtx4090-8x-sys", "seed001-10x-pcie"]


def gpus_from(fake, environ=None, root="/nonexistent", timeout=2.0):
    return read_gpus(fake, environ=environ or {}, root=root, timeout=timeout, cpu_count=256)


@pytest.mark.parametrize("name", MACHINES)
def test_fake_nvml_reads_back_the_recorded_machine(name, fakes):
    recorded = load(name)
    fake = fakes(recorded)
    facts = gpus_from(fake)
    assert len(facts.gpus) == len(recorded.gpus)
    # link labels (NV# from NVLink counts, PCIe levels from the common ancestor)
    assert facts.gpu_gpu == recorded.links.gpu_gpu
    for got, want in zip(facts.gpus, recorded.gpus):
        assert got.numa_node == want.numa_node
        assert got.cpu_affinity == want.cpu_affinity
        assert got.name == want.name
        assert got.memory_total_mib == want.memory_total_mib
        assert got.compute_mode == want.compute_mode
        assert got.mig_mode == want.mig_mode
        if want.pci_bus_id:
            assert got.pci_bus_id == want.pci_bus_id
    for cap, matrix in recorded.links.p2p.items():
        assert facts.p2p[cap] == matrix
    assert fake.initialized is False, "nvmlShutdown must be called"


def test_nvswitch_and_bridge_pairs_are_counted_differently(fakes):
    dgx = gpus_from(fakes(load("dgx-a100")))
    assert {dgx.gpu_gpu[i][j] for i in range(8) for j in range(8) if i != j} == {"NV12"}
    a30 = gpus_from(fakes(load("a30-nvlink-pairs")))
    assert a30.gpu_gpu[0][1] == a30.gpu_gpu[2][3] == "NV4"
    assert a30.gpu_gpu[0][2] == "SYS"


def test_cuda_visible_devices_6789_on_the_seed001_machine(fakes):
    recorded = load("seed001-10x-pcie")
    facts = gpus_from(fakes(recorded), environ={"CUDA_VISIBLE_DEVICES": "6,7,8,9"})
    assert [g.cuda_index for g in facts.gpus] == [None] * 6 + [0, 1, 2, 3]
    # the job's GPUs straddle the sockets: that is what seed 001 is about
    assert [facts.gpus[i].numa_node for i in (6, 7, 8, 9)] == [recorded.gpus[i].numa_node for i in (6, 7, 8, 9)]
    assert facts.gpus[6].numa_node != facts.gpus[9].numa_node


def test_cuda_visible_devices_uuid_forms_and_reordering(fakes):
    fake = fakes(load("l40s-2socket"))
    uuids = fake.uuids
    facts = gpus_from(fake, environ={"CUDA_VISIBLE_DEVICES": f"{uuids[3][:12]},1"})
    assert [g.cuda_index for g in facts.gpus] == [None, 1, None, 0]
    # CUDA stops at the first entry it cannot resolve
    facts = gpus_from(fake, environ={"CUDA_VISIBLE_DEVICES": "2,7,0"})
    assert [g.cuda_index for g in facts.gpus] == [None, None, 0, None]
    facts = gpus_from(fake, environ={"CUDA_VISIBLE_DEVICES": ""})
    assert [g.cuda_index for g in facts.gpus] == [None] * 4
    facts = gpus_from(fake, environ={})
    assert [g.cuda_index for g in facts.gpus] == [0, 1, 2, 3]


def test_mig_uuid_in_cuda_visible_devices_maps_to_its_gpu(fakes):
    recorded = load("l40s-2socket")
    gpus = tuple(g.__class__(**{**g.__dict__, "mig_mode": "Enabled" if g.index == 2 else "Disabled"}) for g in recorded.gpus)
    snap = NodeSnapshot(host=recorded.host, gpus=gpus, links=recorded.links)
    mig = "MIG-4f3c2b1a-0000-5000-8000-000000000002"
    facts = gpus_from(fakes(snap, mig_uuids={2: [mig]}), environ={"CUDA_VISIBLE_DEVICES": mig})
    assert [g.cuda_index for g in facts.gpus] == [None, None, 0, None]
    assert facts.gpus[2].mig_mode == "Enabled"


def test_no_nvml_library_makes_every_gpu_fact_missing_with_the_reason(fakes):
    facts = gpus_from(fakes(load("hgx-h100"), library_missing=True))
    assert facts.gpus == []
    for key in ("gpus", "versions.driver", "versions.cuda_driver", "links.gpu_gpu", "links.p2p"):
        assert "NVML library not found" in facts.missing[key]


def test_lost_gpu_loses_only_its_own_facts(fakes):
    recorded = load("l40s-2socket")
    facts = gpus_from(fakes(recorded, lost={1}))
    assert len(facts.gpus) == 4
    lost = facts.gpus[1]
    assert (lost.uuid, lost.name, lost.pci_bus_id, lost.numa_node) == (None, None, None, None)
    assert facts.missing["gpus[1]"] == "GPU is lost"
    for i in (0, 2, 3):
        assert facts.gpus[i].pci_bus_id == recorded.gpus[i].pci_bus_id
        assert facts.gpus[i].name == "NVIDIA L40S"
    assert facts.gpu_gpu[0][1] == "?" and facts.gpu_gpu[1][3] == "?"
    assert facts.gpu_gpu[0][2] == "SYS" and facts.gpu_gpu[2][3] == "NODE"
    assert "GPU is lost" in facts.missing["links.gpu_gpu"]
    assert facts.driver == "580.119.02"


def test_unsupported_call_is_a_missing_reason_and_the_rest_stays(fakes):
    facts = gpus_from(
        fakes(load("l40s-2socket"), unsupported={("nvmlDeviceGetComputeMode", 2), "nvmlSystemGetCudaDriverVersion"})
    )
    assert facts.gpus[2].compute_mode is None
    assert facts.missing["gpus[2].compute_mode"] == "not supported by this GPU"
    assert facts.gpus[1].compute_mode == "Default"
    assert facts.gpus[2].name == "NVIDIA L40S"
    assert facts.cuda_driver is None and facts.missing["versions.cuda_driver"] == "not supported by this GPU"


def test_permission_denied_is_reported(fakes):
    facts = gpus_from(fakes(load("a30-nvlink-pairs"), denied={"nvmlDeviceGetCpuAffinity"}))
    assert all(g.cpu_affinity is None for g in facts.gpus)
    assert facts.missing["gpus[0].cpu_affinity"] == "permission denied"
    assert facts.gpu_gpu[0][1] == "NV4"


def test_p2p_status_unsupported_drops_the_p2p_matrices_but_not_the_links(fakes):
    recorded = load("hgx-h100")
    facts = gpus_from(fakes(recorded, unsupported={"nvmlDeviceGetP2PStatus"}))
    assert facts.p2p == {}
    for cap in ("read", "write", "nvlink", "atomics", "prop"):
        assert facts.missing[f"links.p2p.{cap}"] == "not supported by this GPU"
    assert facts.gpu_gpu == recorded.links.gpu_gpu


def test_mixed_gpu_models_without_pci_bus_order_leave_cuda_index_unknown(fakes):
    recorded = load("l40s-2socket")
    gpus = tuple(g.__class__(**{**g.__dict__, "name": "NVIDIA L4" if g.index == 0 else g.name}) for g in recorded.gpus)
    fake = fakes(NodeSnapshot(host=recorded.host, gpus=gpus, links=recorded.links))
    facts = gpus_from(fake, environ={"CUDA_VISIBLE_DEVICES": "0,1"})
    assert [g.cuda_index for g in facts.gpus] == [None] * 4
    assert "CUDA_DEVICE_ORDER" in facts.missing["gpus.cuda_index"]
    facts = gpus_from(fake, environ={"CUDA_VISIBLE_DEVICES": "0,1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    assert [g.cuda_index for g in facts.gpus] == [0, 1, None, None]


def test_a_hung_nvml_call_costs_one_deadline_and_is_not_asked_again(fakes):
    fake = fakes(load("dgx-a100"), hang={("nvmlDeviceGetPciInfo", 3)}, hang_seconds=30)
    start = time.monotonic()
    facts = gpus_from(fake, timeout=0.3)
    elapsed = time.monotonic() - start
    assert elapsed < 5, f"a hung call held collection for {elapsed:.1f} s"
    assert facts.missing["gpus[3]"] == "timed out after 0.3 s"
    # GPUs read before the hang keep their facts; later ones say why not
    assert facts.gpus[0].numa_node == 3 and facts.gpus[2].cpu_affinity == "16-31,144-159"
    assert facts.missing["gpus[5]"].startswith("not asked: an earlier NVML call timed out after 0.3 s")
    calls_after = len(fake.calls)
    time.sleep(0.05)
    assert len(fake.calls) == calls_after  # nothing keeps calling a hung NVML
    # once the driver call returns, the worker thread ends too
    fake.release()
    deadline = time.monotonic() + 5
    while any(t.name == "ncclnb-nvml" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not any(t.name == "ncclnb-nvml" for t in threading.enumerate())


def test_hung_nvml_init_keeps_collect_alive(fakes, tree):
    fake = fakes(load("hgx-h100"), hang={"nvmlInit"})
    snap = collect(nvml=fake, sysfs_root=tree("container-eth0"), timeout=0.3, run=no_commands, probe_torch=False)
    assert snap.gpus == ()
    assert snap.missing["gpus"] == "timed out after 0.3 s"
    assert snap.host.hostname == "0fed198eb8ba"


def test_collect_with_fake_nvml_round_trips_through_json(fakes, tree):
    recorded = load("dgx-a100")
    snap = collect(
        nvml=fakes(recorded),
        sysfs_root=tree("container-eth0"),
        run=no_commands,
        environ={"CUDA_VISIBLE_DEVICES": "0,1"},
        probe_torch=False,
    )
    assert snap.origin == "live" and len(snap.gpus) == 8
    assert [g.cuda_index for g in snap.gpus[:3]] == [0, 1, None]
    data = json.loads(json.dumps(snap.to_dict()))
    assert NodeSnapshot.from_dict(data) == snap


def test_gpu_nic_matrix_from_sysfs_matches_the_recorded_topology(fakes, tree):
    """The recorded L40S host's PCI tree places its GPUs and mlx5 ports; the
    labels computed from it must equal that host's `nvidia-smi topo -m`."""
    recorded = load("l40s-2socket")
    snap = collect(nvml=fakes(recorded), sysfs_root=tree("l40s-2socket"), run=no_commands, probe_torch=False)
    assert snap.links.gpu_gpu == recorded.links.gpu_gpu
    assert [g.numa_node for g in snap.gpus] == [0, 0, 1, 1]
    got = {name: [row[k] for row in snap.links.gpu_nic] for k, name in enumerate(snap.links.nic_names)}
    want = {name: [row[k] for row in recorded.links.gpu_nic] for k, name in enumerate(recorded.links.nic_names)}
    for name in want:
        assert got[name] == want[name], name
    assert got["eno1"] == ["NODE", "NODE", "SYS", "SYS"]  # onboard NIC on socket 0
