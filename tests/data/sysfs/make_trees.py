"""Write the recorded filesystem trees that the collect tests read.

Each tree under ``tests/data/sysfs/<name>/`` holds only the files ncclnb's
collectors read, with the contents those files have on the machine the tree
is modeled on. git keeps plain files well and symlinks badly, so sysfs's
symlinks (``/sys/class/net/eth0``, ``.../device``, ``/sys/bus/pci/devices/*``)
are listed in ``<name>/SYMLINKS.txt`` as ``path -> target`` (targets relative,
as in real sysfs) and created when a test copies the tree
(``tests/collect/conftest.py``). Run ``python tests/data/sysfs/make_trees.py``
to rewrite the trees after changing this file.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent


class Tree:
    def __init__(self, name: str, description: str):
        self.name = name
        self.files: dict[str, str] = {"DESCRIPTION.txt": description.strip() + "\n"}
        self.links: dict[str, str] = {}

    def file(self, path: str, text: str) -> None:
        self.files[path.lstrip("/")] = text if text.endswith("\n") else text + "\n"

    def link(self, path: str, target: str) -> None:
        self.links[path.lstrip("/")] = target

    def pci(self, host_bridge: str, chain: list[str], numa: int, local_cpulist: str) -> str:
        """A PCI function at /sys/devices/<host_bridge>/<chain...>; returns its dir."""
        path = "sys/devices/" + "/".join([host_bridge] + chain)
        for depth in range(1, len(chain) + 1):
            sub = "sys/devices/" + "/".join([host_bridge] + chain[:depth])
            self.file(f"{sub}/numa_node", str(numa))
            self.file(f"{sub}/local_cpulist", local_cpulist)
            self.link(f"sys/bus/pci/devices/{chain[depth - 1]}", "../../../devices/" + "/".join([host_bridge] + chain[:depth]))
        return path

    def netdev(self, name: str, *, type_: int, operstate: str, mtu: int, speed: str | None, device_dir: str | None):
        if device_dir:
            real = f"{device_dir}/net/{name}"
        else:
            real = f"sys/devices/virtual/net/{name}"
        self.file(f"{real}/type", str(type_))
        self.file(f"{real}/operstate", operstate)
        self.file(f"{real}/mtu", str(mtu))
        if speed is not None:
            self.file(f"{real}/speed", speed)
        self.link(f"sys/class/net/{name}", os.path.relpath(real, "sys/class/net"))
        if device_dir:
            self.link(f"{real}/device", os.path.relpath(device_dir, real))

    def hca(self, name: str, device_dir: str, *, state: str, link_layer: str, rate: str):
        real = f"{device_dir}/infiniband/{name}"
        self.file(f"{real}/ports/1/state", state)
        self.file(f"{real}/ports/1/link_layer", link_layer)
        self.file(f"{real}/ports/1/rate", rate)
        self.link(f"sys/class/infiniband/{name}", os.path.relpath(real, "sys/class/infiniband"))
        self.link(f"{real}/device", os.path.relpath(device_dir, real))

    def write(self) -> None:
        root = HERE / self.name
        if root.exists():
            shutil.rmtree(root)
        for path, text in sorted(self.files.items()):
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        lines = [f"{p} -> {t}" for p, t in sorted(self.links.items())]
        (root / "SYMLINKS.txt").write_text("\n".join(lines) + "\n")


def l40s_2socket() -> Tree:
    """Host 'shockwave' of ../shared/fixtures/*kagaho-vllm-l40s*: 2x Xeon
    Platinum 8562Y+ (128 threads, even CPUs on node 0, odd on node 1), 4x L40S
    at 4A:00.0, 61:00.0 (node 0), CA:00.0, E1:00.0 (node 1), each on its own
    root complex (Sapphire/Emerald Rapids), and a dual-port ConnectX (mlx5_0,
    mlx5_1) on node 1: PIX to each other, NODE to GPU2/3, SYS to GPU0/1, as
    that host's `nvidia-smi topo -m` shows. The port types (mlx5_0 InfiniBand
    ACTIVE, mlx5_1 RoCE), the onboard eno1, docker0 and the NCCL libraries
    (two system NCCLs as in seed 002, an aws-ofi-nccl plugin) are added to
    exercise every reader."""
    t = Tree("l40s-2socket", l40s_2socket.__doc__)
    even = ",".join(str(c) for c in range(0, 128, 2))
    odd = ",".join(str(c) for c in range(1, 128, 2))
    t.file("etc/hostname", "shockwave")
    t.file(
        "etc/os-release", 'NAME="Ubuntu"\nVERSION="22.04.5 LTS (Jammy Jellyfish)"\nPRETTY_NAME="Ubuntu 22.04.5 LTS"\nID=ubuntu'
    )
    t.file("sys/devices/system/cpu/present", "0-127")
    for node, cpus in (
        (
            0,
            "0,2,4,6,8,10,12,14,16,18,20,22,24,26,28,30,32,34,36,38,40,42,44,46,48,50,52,54,56,58,60,62,64,66,68,70,72,74,76,78,80,82,84,86,88,90,92,94,96,98,100,102,104,106,108,110,112,114,116,118,120,122,124,126",
        ),
        (
            1,
            "1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31,33,35,37,39,41,43,45,47,49,51,53,55,57,59,61,63,65,67,69,71,73,75,77,79,81,83,85,87,89,91,93,95,97,99,101,103,105,107,109,111,113,115,117,119,121,123,125,127",
        ),
    ):
        t.file(f"sys/devices/system/node/node{node}/cpulist", cpus)
        t.file(
            f"sys/devices/system/node/node{node}/meminfo",
            f"Node {node} MemTotal:       528151620 kB\nNode {node} MemFree:        498000000 kB",
        )
    t.file("sys/devices/system/node/online", "0-1")
    # GPUs, one per root complex
    for host_bridge, root_port, gpu, numa, cpus in (
        ("pci0000:49", "0000:49:01.0", "0000:4a:00.0", 0, even),
        ("pci0000:60", "0000:60:01.0", "0000:61:00.0", 0, even),
        ("pci0000:c9", "0000:c9:01.0", "0000:ca:00.0", 1, odd),
        ("pci0000:e0", "0000:e0:01.0", "0000:e1:00.0", 1, odd),
    ):
        t.pci(host_bridge, [root_port, gpu], numa, cpus)
    # dual-port ConnectX on node 1: two functions below one root port
    port0 = t.pci("pci0000:b0", ["0000:b0:01.0", "0000:b1:00.0"], 1, odd)
    port1 = t.pci("pci0000:b0", ["0000:b0:01.0", "0000:b1:00.1"], 1, odd)
    t.netdev("ib0", type_=32, operstate="up", mtu=4092, speed="400000", device_dir=port0)
    t.hca("mlx5_0", port0, state="4: ACTIVE", link_layer="InfiniBand", rate="400 Gb/sec (4X NDR)")
    t.netdev("ens2f1np1", type_=1, operstate="up", mtu=9000, speed=None, device_dir=port1)
    t.hca("mlx5_1", port1, state="4: ACTIVE", link_layer="Ethernet", rate="200 Gb/sec (4X HDR)")
    # onboard 10 GbE on node 0, docker bridge, loopback
    eno1 = t.pci("pci0000:16", ["0000:16:02.0", "0000:17:00.0"], 0, even)
    t.netdev("eno1", type_=1, operstate="up", mtu=1500, speed="10000", device_dir=eno1)
    t.netdev("docker0", type_=1, operstate="down", mtu=1500, speed=None, device_dir=None)
    t.netdev("lo", type_=772, operstate="unknown", mtu=65536, speed=None, device_dir=None)
    t.file(
        "ncclnb-addresses.json",
        json.dumps(
            {
                "eno1": ["10.20.0.11/24", "fe80::3eec:efff:fe12:3456/64"],
                "ib0": ["192.168.100.11/24"],
                "ens2f1np1": ["192.168.200.11/24"],
                "docker0": ["172.17.0.1/16"],
                "lo": ["127.0.0.1/8", "::1/128"],
            },
            indent=1,
        ),
    )
    # IOMMU on, identity (passthrough) domains
    t.file("sys/class/iommu/dmar0/uevent", "")
    for group in (0, 1, 2):
        t.file(f"sys/kernel/iommu_groups/{group}/type", "identity")
    # NCCL libraries: a system NCCL with its soname links, an old one, a net plugin
    t.file("usr/lib/x86_64-linux-gnu/libnccl.so.2.19.3", "not a real library")
    t.link("usr/lib/x86_64-linux-gnu/libnccl.so.2", "libnccl.so.2.19.3")
    t.link("usr/lib/x86_64-linux-gnu/libnccl.so", "libnccl.so.2")
    t.file("usr/local/nccl2/lib/libnccl.so.2.17.1", "not a real library")
    t.file("opt/amazon/ofi-nccl/lib/libnccl-net.so", "not a real library")
    t.file("opt/custom/lib/libnccl.so.2.14.3", "not a real library")
    return t


def container_eth0() -> Tree:
    """A Docker container on a one-socket host: eth0 is a veth (no PCI device
    below it), lo; cgroup v1 paths under /docker/; the Docker default
    RLIMIT_MEMLOCK of 64 KiB; no IOMMU. Modeled on the containers of
    ../shared/fixtures/nccl_info__2x-rtx4090-container-* (NET/Socket on eth0)."""
    t = Tree("container-eth0", container_eth0.__doc__)
    t.file("etc/hostname", "0fed198eb8ba")
    t.file(".dockerenv", "")
    t.file("etc/os-release", 'PRETTY_NAME="Ubuntu 22.04.4 LTS"\nNAME="Ubuntu"')
    t.file("sys/devices/system/cpu/present", "0-31")
    t.file("sys/devices/system/node/node0/cpulist", "0-31")
    t.file("sys/devices/system/node/node0/meminfo", "Node 0 MemTotal:       131811248 kB")
    t.netdev("eth0", type_=1, operstate="up", mtu=1500, speed="10000", device_dir=None)
    t.netdev("lo", type_=772, operstate="unknown", mtu=65536, speed=None, device_dir=None)
    t.file("ncclnb-addresses.json", json.dumps({"eth0": ["172.17.0.2/16"], "lo": ["127.0.0.1/8"]}))
    return t


def procfs() -> Tree:
    """/proc files of the container above (cgroup v1, Docker's default limits)."""
    t = Tree("procfs-container", procfs.__doc__)
    t.file(
        "cpuinfo",
        "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7543 32-Core Processor\n\n"
        "processor\t: 1\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7543 32-Core Processor",
    )
    t.file("sys/kernel/osrelease", "5.15.0-105-generic")
    t.file("cmdline", "BOOT_IMAGE=/vmlinuz-5.15.0-105-generic root=/dev/mapper/vg-root ro quiet")
    t.file("1/cgroup", "12:pids:/docker/3f2a9c1d7b6e\n11:memory:/docker/3f2a9c1d7b6e\n0::/")
    t.file(
        "self/limits",
        "Limit                     Soft Limit           Hard Limit           Units     \n"
        "Max cpu time              unlimited            unlimited            seconds   \n"
        "Max open files            1048576              1048576              files     \n"
        "Max locked memory         65536                65536                bytes     ",
    )
    return t


if __name__ == "__main__":
    for make in (l40s_2socket, container_eth0, procfs):
        tree = make()
        tree.write()
        print(f"wrote {HERE / tree.name}: {len(tree.files)} files, {len(tree.links)} links")
