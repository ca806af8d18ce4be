"""PCI bus ids and the PCIe path between two devices, from sysfs.

NVML says how two GPUs connect, but not how a GPU reaches a NIC; this module
answers that from ``/sys/bus/pci/devices/<bus id>``, whose real path is the
chain of bridges from the host bridge down to the device, and labels the
pair the way ``nvidia-smi topo -m`` does (PIX, PXB, PHB, NODE, SYS).
"""

from __future__ import annotations

import os
import re

from ..model.derive import bus_key
from dataclasses import dataclass
from typing import Optional, Sequence

from ._fs import read_int, under

_BDF = re.compile(r"([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])")
_HOST_BRIDGE = re.compile(r"pci[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}")


def sysfs_bus_id(bus_id: str) -> Optional[str]:
    """Any PCI bus id form ("00000000:3B:00.0", "0000:3b:00.0", "3b:00.0") ->
    sysfs's "0000:3b:00.0"; None if it is not a bus id."""
    text = bus_id.strip()
    m = _BDF.fullmatch(text)
    if not m:
        m = re.fullmatch(r"([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])", text)
        if not m:
            return None
        return f"0000:{m.group(1).lower()}:{m.group(2).lower()}.{m.group(3)}"
    domain = int(m.group(1), 16)
    return f"{domain:04x}:{m.group(2).lower()}:{m.group(3).lower()}.{m.group(4)}"


def nvml_bus_id(bus_id: str) -> Optional[str]:
    """Any bus id form -> NVML's "00000000:3B:00.0" (``nvidia-smi`` shows this):
    ``model.derive.bus_key``, the form ranks and GPUs are matched by."""
    return bus_key(bus_id)


def bus_id_in_path(path: str) -> Optional[str]:
    """The last PCI bus id among the components of a sysfs path (a virtio or
    auxiliary device hangs below its PCI function)."""
    found = None
    for part in path.split(os.sep):
        if _BDF.fullmatch(part):
            found = part
    return sysfs_bus_id(found) if found else None


@dataclass(frozen=True)
class PciPath:
    """Host bridge ("pci0000:17") and the bus ids from its root port down to
    the device itself (last)."""

    host_bridge: str
    chain: tuple[str, ...]
    numa_node: Optional[int]


def pci_path(root: str, bus_id: str) -> Optional[PciPath]:
    """Where ``bus_id`` sits in the PCI tree of the machine at ``root``; None
    if sysfs does not list it."""
    short = sysfs_bus_id(bus_id)
    if short is None:
        return None
    link = under(root, f"/sys/bus/pci/devices/{short}")
    if not os.path.exists(link):
        return None
    real = os.path.realpath(link)
    parts = real.split(os.sep)
    bridges = [i for i, p in enumerate(parts) if _HOST_BRIDGE.fullmatch(p)]
    if not bridges:
        return None
    start = bridges[-1]
    chain = tuple(p.lower() for p in parts[start + 1 :] if _BDF.fullmatch(p))
    if not chain:
        return None
    numa = read_int(os.path.join(real, "numa_node"))
    return PciPath(parts[start].lower(), chain, numa if numa is not None and numa >= 0 else None)


def topo_label(a: PciPath, b: PciPath) -> Optional[str]:
    """``nvidia-smi topo -m`` label for the PCIe path between two devices.

    Different host bridges: NODE within one NUMA node, SYS across (None when
    NUMA is unknown). Same host bridge: PHB if the paths meet only at the host
    bridge, PIX if at most one bridge lies below the shared one, else PXB."""
    if a.chain == b.chain:
        return "X"
    if a.host_bridge != b.host_bridge:
        if a.numa_node is None or b.numa_node is None:
            return None
        return "NODE" if a.numa_node == b.numa_node else "SYS"
    bridges_a, bridges_b = a.chain[:-1], b.chain[:-1]
    common = 0
    for x, y in zip(bridges_a, bridges_b):
        if x != y:
            break
        common += 1
    if common == 0:
        return "PHB"
    below = max(len(bridges_a) - common, len(bridges_b) - common)
    return "PIX" if below <= 1 else "PXB"


def gpu_nic_matrix(
    root: str, gpu_bus_ids: Sequence[Optional[str]], nic_bus_ids: Sequence[Optional[str]]
) -> tuple[tuple[tuple[str, ...], ...], Optional[str]]:
    """GPU x NIC labels (rows are GPUs), or ``((), reason)`` when any device
    cannot be placed: a half-known matrix would read as a real one."""
    gpu_paths = [pci_path(root, b) if b else None for b in gpu_bus_ids]
    nic_paths = [pci_path(root, b) if b else None for b in nic_bus_ids]
    if any(p is None for p in gpu_paths):
        return (), "GPU PCI devices not found under /sys/bus/pci/devices"
    if any(p is None for p in nic_paths):
        return (), "NIC PCI devices not found under /sys/bus/pci/devices"
    rows = []
    for g in gpu_paths:
        row = []
        for n in nic_paths:
            label = topo_label(g, n)
            if label is None:
                return (), "NUMA node of a GPU or NIC unknown: cannot tell NODE from SYS"
            row.append(label)
        rows.append(tuple(row))
    return tuple(rows), None
