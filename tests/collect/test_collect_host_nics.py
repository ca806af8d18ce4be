"""Host and NIC facts from recorded filesystem trees."""

from __future__ import annotations

import os

from ncclnb.collectors.host import read_host
from ncclnb.collectors.nics import read_nics
from ncclnb.collectors.pci import nvml_bus_id, pci_path, sysfs_bus_id, topo_label
from ncclnb.model import UNLIMITED


def nic_by_name(nics):
    return {n.name: n for n in nics}


def test_two_socket_host_nics_and_infiniband(tree):
    nics, missing = read_nics(tree("l40s-2socket"))
    by = nic_by_name(nics)
    assert sorted(by) == ["docker0", "eno1", "ens2f1np1", "ib0", "lo"]
    ib0 = by["ib0"]
    assert (ib0.kind, ib0.ib_device, ib0.ib_port_state, ib0.ib_link_layer) == ("infiniband", "mlx5_0", "ACTIVE", "InfiniBand")
    assert (ib0.pci_bus_id, ib0.numa_node, ib0.speed_mbps, ib0.mtu) == ("0000:b1:00.0", 1, 400000, 4092)
    roce = by["ens2f1np1"]
    assert (roce.kind, roce.ib_device, roce.ib_link_layer) == ("roce", "mlx5_1", "Ethernet")
    assert roce.speed_mbps == 200000  # no netdev speed: the IB port rate stands in
    eno1 = by["eno1"]
    assert (eno1.kind, eno1.state, eno1.speed_mbps, eno1.numa_node) == ("ethernet", "up", 10000, 0)
    assert eno1.addresses == ("10.20.0.11/24", "fe80::3eec:efff:fe12:3456/64")
    assert by["docker0"].kind == "virtual" and by["docker0"].pci_bus_id is None
    assert by["lo"].kind == "loopback"
    assert missing == {}


def test_container_has_only_virtual_eth0_and_lo(tree):
    nics, missing = read_nics(tree("container-eth0"))
    by = nic_by_name(nics)
    assert sorted(by) == ["eth0", "lo"]
    assert by["eth0"].kind == "virtual" and by["eth0"].addresses == ("172.17.0.2/16",)
    assert missing == {}


def test_recorded_tree_without_address_file_says_so(tree):
    root = tree("container-eth0")
    os.remove(os.path.join(root, "ncclnb-addresses.json"))
    nics, missing = read_nics(root)
    assert all(n.addresses == () for n in nics)
    assert "ncclnb-addresses.json" in missing["nics.addresses"]


def test_hca_without_netdev_still_listed(tree):
    root = tree("l40s-2socket")
    os.remove(os.path.join(root, "sys/class/net/ib0"))
    nics, _ = read_nics(root)
    by = nic_by_name(nics)
    assert "mlx5_0" in by and by["mlx5_0"].kind == "infiniband" and by["mlx5_0"].pci_bus_id == "0000:b1:00.0"


def test_host_facts_from_the_two_socket_tree(tree):
    root = tree("l40s-2socket")
    procfs = tree("procfs-container")
    host, missing = read_host(root=root, procfs_root=procfs, environ={})
    assert host.hostname == "shockwave"
    assert host.os == "Ubuntu 22.04.5 LTS"
    assert host.cpu_count == 128
    assert [n.id for n in host.numa_nodes] == [0, 1]
    assert host.numa_nodes[1].cpus.startswith("1,3,5")
    assert host.numa_nodes[0].memory_mib == 528151620 // 1024
    assert host.iommu == "passthrough"  # identity domains
    assert host.kernel == "5.15.0-105-generic"
    assert host.cpu_model == "AMD EPYC 7543 32-Core Processor"
    # the recorded tree has no /dev/shm to statvfs: that, and only that, is missing
    assert set(missing) == {"host.shm_total_bytes", "host.shm_free_bytes"}
    assert host.shm_total_bytes is None


def test_container_hints_and_docker_memlock(tree):
    host, missing = read_host(
        root=tree("container-eth0"),
        procfs_root=tree("procfs-container"),
        environ={"KUBERNETES_SERVICE_HOST": "10.0.0.1", "SLURM_JOB_ID": "42"},
    )
    assert host.container[:3] == ("docker", "kubernetes", "slurm")
    assert "cgroup:/docker/3f2a9c1d7b6e" in host.container
    assert (host.rlimit_memlock_soft, host.rlimit_memlock_hard) == (65536, 65536)
    assert host.rlimit_nofile_soft == 1048576
    assert host.iommu == "off"


def test_shm_size_from_the_given_path(tree, tmp_path):
    host, missing = read_host(
        root=tree("container-eth0"), procfs_root=tree("procfs-container"), environ={}, shm_path=str(tmp_path)
    )
    st = os.statvfs(tmp_path)
    assert host.shm_total_bytes == st.f_blocks * st.f_frsize
    assert 0 <= host.shm_free_bytes <= host.shm_total_bytes
    assert "host.shm_total_bytes" not in missing


def test_unlimited_memlock_is_minus_one(tmp_path):
    (tmp_path / "self").mkdir()
    (tmp_path / "self" / "limits").write_text(
        "Limit                     Soft Limit           Hard Limit           Units     \n"
        "Max open files            1024                 4096                 files     \n"
        "Max locked memory         unlimited            unlimited            bytes     \n"
    )
    host, missing = read_host(root=str(tmp_path), procfs_root=str(tmp_path), environ={}, hostname="h")
    assert (host.rlimit_memlock_soft, host.rlimit_memlock_hard) == (UNLIMITED, UNLIMITED)
    assert (host.rlimit_nofile_soft, host.rlimit_nofile_hard) == (1024, 4096)
    # an empty tree: each fact that cannot be read is None with its reason
    assert host.os is None and "host.os" in missing
    assert host.numa_nodes == () and "host.numa_nodes" in missing
    assert "host.shm_total_bytes" in missing


def test_bus_id_forms():
    assert sysfs_bus_id("00000000:4A:00.0") == "0000:4a:00.0"
    assert nvml_bus_id("0000:4a:00.0") == "00000000:4A:00.0"
    assert sysfs_bus_id("4a:00.0") == "0000:4a:00.0"
    assert sysfs_bus_id("not a bus id") is None


def test_pci_labels_from_the_recorded_tree(tree):
    root = tree("l40s-2socket")
    gpu0, gpu2 = pci_path(root, "00000000:4A:00.0"), pci_path(root, "00000000:CA:00.0")
    nic0, nic1 = pci_path(root, "0000:b1:00.0"), pci_path(root, "0000:b1:00.1")
    assert topo_label(nic0, nic1) == "PIX"  # two ports of one card
    assert topo_label(gpu2, nic0) == "NODE"
    assert topo_label(gpu0, nic0) == "SYS"
    assert pci_path(root, "0000:99:00.0") is None
