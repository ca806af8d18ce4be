"""Network interfaces from sysfs: ``/sys/class/net/*`` (state, MTU, speed,
PCI function, NUMA node) joined with ``/sys/class/infiniband/*`` (HCA, port
state, link layer, rate), the same facts ``ip link``, ``ethtool`` and
``ibstat`` show.

Addresses come from ``psutil.net_if_addrs()`` on the live machine; a recorded
tree carries them in ``<root>/ncclnb-addresses.json`` as
``{"eth0": ["10.0.0.5/24", "fe80::1/64"], ...}``.
"""

from __future__ import annotations

import json
import os
import re
from typing import Optional

from ..model import Nic
from ._fs import listdir, read_int, read_text, under
from .pci import bus_id_in_path

ADDRESSES_FILE = "ncclnb-addresses.json"

# /sys/class/net/<if>/type (ARPHRD_*)
_ARPHRD = {1: "ethernet", 32: "infiniband", 772: "loopback"}


def read_nics(root: str = "/") -> tuple[list[Nic], dict[str, str]]:
    """All network interfaces, then RDMA devices that have no netdev; and the
    ``missing`` reasons (keys ``nics`` or ``nics[i].field``)."""
    missing: dict[str, str] = {}
    net = under(root, "/sys/class/net")
    names = listdir(net)
    if not names:
        missing["nics"] = f"no interfaces under {net}"
    ib = _ib_devices(root)
    ib_by_netdev = {nd: dev for dev, info in ib.items() for nd in info["netdevs"]}
    ib_by_bus = {info["bus"]: dev for dev, info in ib.items() if info["bus"]}
    addresses, addr_reason = _addresses(root)
    if addr_reason:
        missing["nics.addresses"] = addr_reason

    nics: list[Nic] = []
    used_ib = set()
    for name in names:
        base = os.path.join(net, name)
        kind = _ARPHRD.get(read_int(os.path.join(base, "type")) or -1)
        device = os.path.join(base, "device")
        bus = bus_id_in_path(os.path.realpath(device)) if os.path.exists(device) else None
        if kind != "loopback" and bus is None:
            kind = "virtual"  # bridges, veth, docker0, ifb: no hardware below
        elif kind is None:
            kind = "ethernet" if bus else "virtual"
        numa = read_int(os.path.join(device, "numa_node")) if bus else None
        speed = read_int(os.path.join(base, "speed"))
        state = read_text(os.path.join(base, "operstate"))
        ib_dev = ib_by_netdev.get(name) or (ib_by_bus.get(bus) if bus else None)
        port = ib.get(ib_dev, {}) if ib_dev else {}
        if ib_dev:
            used_ib.add(ib_dev)
            kind = "roce" if port.get("link_layer") == "Ethernet" else "infiniband"
            if (speed is None or speed <= 0) and port.get("rate_mbps"):
                speed = port["rate_mbps"]
        nics.append(
            Nic(
                name=name,
                kind=kind,
                state=state,
                addresses=tuple(addresses.get(name, ())),
                speed_mbps=speed if speed is not None and speed > 0 else None,
                mtu=read_int(os.path.join(base, "mtu")),
                pci_bus_id=bus,
                numa_node=numa if numa is not None and numa >= 0 else None,
                ib_device=ib_dev,
                ib_port_state=port.get("state"),
                ib_link_layer=port.get("link_layer"),
            )
        )
    for dev, info in ib.items():
        if dev in used_ib:
            continue
        nics.append(
            Nic(
                name=dev,
                kind="roce" if info.get("link_layer") == "Ethernet" else "infiniband",
                speed_mbps=info.get("rate_mbps"),
                pci_bus_id=info["bus"],
                numa_node=info["numa"],
                ib_device=dev,
                ib_port_state=info.get("state"),
                ib_link_layer=info.get("link_layer"),
            )
        )
    for i, nic in enumerate(nics):
        if nic.kind not in ("ethernet", "infiniband", "roce"):
            continue
        if nic.speed_mbps is None and nic.state == "up":
            missing[f"nics[{i}].speed_mbps"] = "the driver reports no link speed"
        if nic.numa_node is None and nic.pci_bus_id:
            missing[f"nics[{i}].numa_node"] = "sysfs numa_node is -1: the platform reports no NUMA affinity"
    return nics, missing


def _ib_devices(root: str) -> dict[str, dict]:
    """mlx5_0 -> {bus, numa, netdevs, state, link_layer, rate_mbps} (first port)."""
    base = under(root, "/sys/class/infiniband")
    out: dict[str, dict] = {}
    for dev in listdir(base):
        path = os.path.join(base, dev)
        device = os.path.join(path, "device")
        bus = bus_id_in_path(os.path.realpath(device)) if os.path.exists(device) else None
        numa = read_int(os.path.join(device, "numa_node")) if bus else None
        info = {
            "bus": bus,
            "numa": numa if numa is not None and numa >= 0 else None,
            "netdevs": listdir(os.path.join(device, "net")),
        }
        ports = listdir(os.path.join(path, "ports"))
        if ports:
            port = os.path.join(path, "ports", ports[0])
            state = read_text(os.path.join(port, "state"))  # "4: ACTIVE"
            if state:
                info["state"] = state.split(":", 1)[-1].strip()
            info["link_layer"] = read_text(os.path.join(port, "link_layer"))
            rate = read_text(os.path.join(port, "rate")) or ""  # "100 Gb/sec (4X EDR)"
            m = re.match(r"([\d.]+)\s*Gb/sec", rate)
            if m:
                info["rate_mbps"] = int(float(m.group(1)) * 1000)
        out[dev] = info
    return out


def _addresses(root: str) -> tuple[dict[str, list[str]], Optional[str]]:
    if root in ("/", ""):
        return _live_addresses()
    path = under(root, "/" + ADDRESSES_FILE)
    text = read_text(path)
    if text is None:
        return {}, f"no {ADDRESSES_FILE} in the recorded tree"
    try:
        data = json.loads(text)
    except ValueError as exc:
        return {}, f"{ADDRESSES_FILE}: not JSON ({exc})"
    if not isinstance(data, dict) or not all(isinstance(v, list) and all(isinstance(a, str) for a in v) for v in data.values()):
        return {}, f"{ADDRESSES_FILE}: expected {{interface: [address, ...]}}"
    return {str(k): list(v) for k, v in data.items()}, None


def _live_addresses() -> tuple[dict[str, list[str]], Optional[str]]:
    """IPv4 and IPv6 addresses with prefix length, as ``ip -brief addr``."""
    try:
        import ipaddress
        import socket

        import psutil
    except ImportError:
        return {}, "psutil is not installed"
    try:
        table = psutil.net_if_addrs()
    except OSError as exc:
        return {}, f"psutil.net_if_addrs: {exc}"
    out: dict[str, list[str]] = {}
    for name, addrs in table.items():
        for a in addrs:
            if a.family not in (socket.AF_INET, socket.AF_INET6):
                continue
            addr = a.address.split("%", 1)[0]  # fe80::1%eth0 -> fe80::1
            prefix = ""
            if a.netmask:
                try:
                    net = ipaddress.ip_network(f"{addr}/{a.netmask.split('/')[0]}", strict=False)
                    prefix = f"/{net.prefixlen}"
                except ValueError:
                    pass
            out.setdefault(name, []).append(addr + prefix)
    return out, None
