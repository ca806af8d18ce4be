"""A rank's placement facts (bus id, NUMA node, NCCL's NIC) from recorded
trees: the two-socket L40S host (tests/data/sysfs/l40s-2socket, whose GPUs
and NICs are the recorded snapshot l40s-2socket) and a Docker container."""

from __future__ import annotations

import os

import pytest
from _trees import materialize
from fakes.torch_cuda import FakeTorch

import ncclnb
from ncclnb.survey.rankfacts import cuda_device, nccl_nic, numa_node, rank_facts, socket_interface


@pytest.fixture(scope="module")
def l40s(tmp_path_factory):
    return str(materialize("l40s-2socket", tmp_path_factory.mktemp("trees")))


@pytest.fixture(scope="module")
def container(tmp_path_factory):
    return str(materialize("container-eth0", tmp_path_factory.mktemp("trees")))


SNAP = ncclnb.load("l40s-2socket")


@pytest.mark.parametrize("device", [0, 1, 2, 3])
def test_gpu_rank_on_the_two_socket_host(l40s, device):
    """The bus id is written as the snapshot writes it, and its sysfs NUMA node is the snapshot's."""
    facts = rank_facts(FakeTorch(SNAP, device), "0-127", sysfs_root=l40s, environ={})
    gpu = SNAP.gpus[device]
    assert facts["cuda_index"] == device
    assert facts["bus_id"] == gpu.pci_bus_id  # "00000000:CA:00.0"
    assert facts["numa_node"] == gpu.numa_node == (0 if device < 2 else 1)
    assert facts["nic"] == "ib0"  # NCCL's default order: ib* first


@pytest.mark.parametrize(
    "environ, nic",
    [
        ({}, "ib0"),
        ({"NCCL_SOCKET_IFNAME": "eno"}, "eno1"),  # a prefix
        ({"NCCL_SOCKET_IFNAME": "ens2,eno"}, "eno1"),  # interface order, not the list's
        ({"NCCL_SOCKET_IFNAME": "=ens2f1np1"}, "ens2f1np1"),  # exact
        ({"NCCL_SOCKET_IFNAME": "=ens2"}, None),  # exact: a prefix is not a name
        ({"NCCL_SOCKET_IFNAME": "^ib,docker,lo"}, "eno1"),  # exclusion
        ({"NCCL_SOCKET_IFNAME": "^=ib0,eno1"}, "ens2f1np1"),  # exclusion of exact names
        ({"NCCL_SOCKET_IFNAME": "docker"}, "docker0"),
        ({"NCCL_SOCKET_IFNAME": "e"}, "ib0"),  # one character: NCCL ignores it
        ({"NCCL_SOCKET_IFNAME": "eth0:29500"}, None),  # :port is dropped; no eth0 here
        ({"NCCL_SOCKET_FAMILY": "AF_INET6"}, "eno1"),  # ib0 has no IPv6; ::1 is skipped
        ({"NCCL_IB_HCA": "mlx5"}, "mlx5_0"),  # both HCAs NODE from GPU 2: the first
        ({"NCCL_IB_HCA": "^mlx5_0"}, "mlx5_1"),
        ({"NCCL_IB_HCA": "=mlx5_1:1"}, "mlx5_1"),  # port suffix ignored
        ({"NCCL_IB_HCA": "mlx5_1", "NCCL_IB_DISABLE": "1"}, "ib0"),  # IB off: the socket interface
        ({"NCCL_IB_HCA": "mlx5_1", "NCCL_NET": "Socket"}, "ib0"),
        ({"NCCL_IB_HCA": "mlx4"}, "ib0"),  # selects no HCA: sockets
    ],
)
def test_nccl_nic_rules(l40s, environ, nic):
    assert nccl_nic(environ, bus_id=SNAP.gpus[2].pci_bus_id, sysfs_root=l40s) == nic


def test_nic_order_is_the_address_tables_and_ipv4_first():
    table = {
        "lo": ["127.0.0.1/8", "::1/128"],
        "ens6": ["fe80::1/64"],
        "ens5": ["10.0.0.5/24"],
        "docker0": ["172.17.0.1/16"],
        "eth9": [],
    }
    assert socket_interface({}, table) == "ens5"  # IPv4 before an IPv6-only interface listed earlier
    assert socket_interface({"NCCL_SOCKET_IFNAME": "eth"}, table) is None  # eth9 has no address
    assert socket_interface({}, {"docker0": ["172.17.0.1/16"], "lo": ["127.0.0.1/8"]}) == "docker0"
    assert socket_interface({}, {"lo": ["127.0.0.1/8", "::1/128"]}) == "lo"
    assert socket_interface({"NCCL_SOCKET_FAMILY": "AF_INET6"}, {"lo": ["::1/128"]}) is None


@pytest.mark.parametrize("affinity, node", [("0,2,4,6", 0), ("1,3", 1), ("0-3", None), ("", None), (None, None)])
def test_cpu_only_rank_numa_from_its_affinity(l40s, affinity, node):
    assert numa_node(None, affinity, sysfs_root=l40s) == node


def test_container_rank(container):
    facts = rank_facts(None, "4-7", sysfs_root=container, environ={})
    assert facts == {"cuda_index": None, "gpu_uuid": None, "bus_id": None, "numa_node": 0, "nic": "eth0"}


def test_unreadable_facts_are_none(tmp_path, l40s):
    # CUDA not initialized in this process: nothing is asked of it
    assert cuda_device(FakeTorch(SNAP, None)) == {"cuda_index": None, "gpu_uuid": None, "bus_id": None}
    # a torch without the PCI fields: the device, no bus id
    assert cuda_device(FakeTorch(SNAP, 1, old_torch=True)) == {"cuda_index": 1, "gpu_uuid": None, "bus_id": None}
    assert cuda_device(FakeTorch(SNAP, 1, broken=True)) == {"cuda_index": 1, "gpu_uuid": None, "bus_id": None}
    # no tree at all
    empty = str(tmp_path / "nothing")
    assert rank_facts(FakeTorch(SNAP, 2), "0-3", sysfs_root=empty, environ={})["numa_node"] is None
    assert rank_facts(None, "0-3", sysfs_root=empty, environ={}) == {
        "cuda_index": None,
        "gpu_uuid": None,
        "bus_id": None,
        "numa_node": None,
        "nic": None,
    }
    # a bus id sysfs does not list, odd environment values, an odd address table
    assert numa_node("0000:ff:1f.7", None, sysfs_root=l40s) is None
    assert numa_node("not a bus id", "0", sysfs_root=l40s) is None
    odd = {"NCCL_SOCKET_IFNAME": "^", "NCCL_IB_HCA": "=", "NCCL_SOCKET_FAMILY": "AF_UNIX", "NCCL_IB_DISABLE": "yes"}
    assert nccl_nic(odd, sysfs_root=l40s, addresses={"x": [None, 7, "garbage"], "eth0": ["10.1.1.1/8"]}) == "eth0"


def test_live_rank_on_this_machine():
    """This machine (no GPU): whatever it has, the facts are read without error and the NIC is a real interface."""
    import psutil

    affinity = ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))
    facts = rank_facts(None, affinity)
    assert facts["bus_id"] is None and facts["cuda_index"] is None
    assert facts["nic"] in psutil.net_if_addrs()
    assert facts["numa_node"] is None or facts["numa_node"] >= 0
