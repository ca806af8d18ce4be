"""Where one rank sits: its CUDA device's PCI bus id, the NUMA node of that
device (or of the rank's CPUs), and the network interface its NCCL would use.

Every source is a parameter (``torch``, ``sysfs_root``, ``environ``,
``addresses``), so tests feed recorded trees and a stand-in for ``torch.cuda``.
A fact that cannot be read is None, never an exception.

**bus_id**: only where torch already created a CUDA context in this process
(a job that set its device before calling the survey); the survey never
creates one. From ``torch.cuda.get_device_properties(i)``'s
``pci_domain_id``/``pci_bus_id``/``pci_device_id``, written as NVML writes it
(``00000000:3B:00.0``, the form of :attr:`ncclnb.model.Gpu.pci_bus_id`), so
the two compare. Function 0: torch does not say the function, and GPUs are
function 0.

**numa_node**: the device's ``/sys/bus/pci/devices/<bus>/numa_node`` (-1, "no
affinity", is None); with no CUDA device, the NUMA node whose
``/sys/devices/system/node/node*/cpulist`` contains every CPU of the rank's
affinity, None when the affinity spans nodes.

**nic**, what is modelled of NCCL's choice, and what is not:

- ``NCCL_IB_HCA`` set (and IB not turned off by ``NCCL_IB_DISABLE=1`` or
  ``NCCL_NET=Socket``): the HCAs under ``/sys/class/infiniband`` it selects
  (its syntax: comma list of prefixes, leading ``^`` excludes, then ``=``
  exact names, ``:port`` ignored) whose first port is ACTIVE, in name
  order; with several and a known GPU, the one nearest the GPU by PCIe path
  (PIX < PXB < PHB < NODE < SYS, as NCCL's topology search prefers); the
  HCA's name (``mlx5_0``) is the fact. If it selects none, the socket rule
  below applies (NCCL would fail to find an IB device and fall back).
- Otherwise the interface NCCL's socket layer uses (bootstrap, and the data
  path of NET/Socket): ``NCCL_SOCKET_IFNAME`` (same syntax; a value of one
  character is ignored, as NCCL ignores it), else NCCL's default order:
  interfaces named ``ib*``, then any but ``docker*`` and ``lo``, then
  ``docker*``, then ``lo``. Only interfaces with an IPv4 or non-loopback
  IPv6 address count (NCCL walks ``getifaddrs``), IPv4 ones first, each in
  the order the address table lists them (``psutil.net_if_addrs``: interface
  index order); ``NCCL_SOCKET_FAMILY=AF_INET|AF_INET6`` restricts the family.
- Not modelled: without ``NCCL_IB_HCA``, the HCA NCCL's IB transport picks
  per GPU by its topology search (``nic`` is then the socket interface, which
  still carries the bootstrap); ``NCCL_COMM_ID``'s subnet match; net plugins
  (``NCCL_NET_PLUGIN``, aws-ofi-nccl's EFA devices); ``NCCL_IB_HCA`` port
  numbers; ``NCCL_TOPO_FILE``.
"""

from __future__ import annotations

import ipaddress
import os
from typing import Mapping, Optional

from ..checks._facts import env_flag, link_distance
from ..checks.network import ifname_matches, parse_ifname
from ..collectors._fs import listdir, read_int, read_text, under
from ..collectors.nics import _addresses
from ..collectors.pci import bus_id_in_path, gpu_nic_matrix, sysfs_bus_id
from ..errors import tolerate
from ..model.cpulist import covers, spans


def rank_facts(
    torch=None,
    affinity: Optional[str] = None,
    *,
    sysfs_root: str = "/",
    environ: Optional[Mapping[str, str]] = None,
    addresses: Optional[Mapping[str, list]] = None,
) -> dict:
    """This rank's ``cuda_index``, ``gpu_uuid``, ``bus_id``, ``numa_node`` and
    ``nic`` (the :class:`~ncclnb.model.RankEntry` fields), each None where it
    cannot be read. ``torch`` is the module if this process already imported
    it (never imported here); ``affinity`` the rank's cpulist."""
    environ = os.environ if environ is None else environ
    out = cuda_device(torch)
    out["numa_node"] = _guarded(lambda: numa_node(out["bus_id"], affinity, sysfs_root=sysfs_root))
    out["nic"] = _guarded(lambda: nccl_nic(environ, bus_id=out["bus_id"], sysfs_root=sysfs_root, addresses=addresses))
    return out


def _guarded(read):
    try:
        return read()
    except Exception as exc:  # a fact that cannot be read is None (under NCCLNB_STRICT, a bug raises)
        tolerate(exc, (OSError, ValueError, RuntimeError))
        return None


# --- the CUDA device ----------------------------------------------------------------


def cuda_device(torch) -> dict:
    """``cuda_index``, ``gpu_uuid`` and ``bus_id`` of the current CUDA device,
    all None unless ``torch`` has already initialized CUDA (asking would create
    a context, which the survey must not do)."""
    out = {"cuda_index": None, "gpu_uuid": None, "bus_id": None}
    try:
        if torch is None or not torch.cuda.is_initialized():
            return out
        index = torch.cuda.current_device()
        out["cuda_index"] = index if isinstance(index, int) else None
        props = torch.cuda.get_device_properties(index)
    except Exception:
        return out
    uuid = _guarded(lambda: str(getattr(props, "uuid", "") or ""))
    if uuid:
        out["gpu_uuid"] = uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"
    out["bus_id"] = _guarded(lambda: bus_id_of(props))
    return out


def bus_id_of(props) -> Optional[str]:
    """``00000000:3B:00.0`` from CUDA device properties (torch's
    ``pci_domain_id``, ``pci_bus_id``, ``pci_device_id``); None when torch
    does not give them."""
    domain, bus, device = (getattr(props, k, None) for k in ("pci_domain_id", "pci_bus_id", "pci_device_id"))
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (domain, bus, device)):
        return None
    if not (0 <= domain < 1 << 32 and 0 <= bus < 256 and 0 <= device < 32):
        return None
    return f"{domain:08X}:{bus:02X}:{device:02X}.0"


# --- NUMA -----------------------------------------------------------------------------


def numa_node(bus_id: Optional[str], affinity: Optional[str], *, sysfs_root: str = "/") -> Optional[int]:
    """The NUMA node of the device at ``bus_id`` (sysfs), or with no device the
    node whose CPUs contain all of ``affinity``; None when unknown."""
    if bus_id:
        short = sysfs_bus_id(bus_id)
        node = read_int(under(sysfs_root, f"/sys/bus/pci/devices/{short}/numa_node")) if short else None
        return node if isinstance(node, int) and node >= 0 else None
    if not spans(affinity):
        return None
    base = under(sysfs_root, "/sys/devices/system/node")
    for name in listdir(base):
        if name.startswith("node") and name[4:].isascii() and name[4:].isdigit():
            if covers(read_text(os.path.join(base, name, "cpulist")), affinity):
                return int(name[4:])
    return None


# --- the NIC ---------------------------------------------------------------------------


def _selected(name: str, value: str) -> bool:
    """Whether NCCL's list ``value`` (prefixes, ``^`` to exclude, ``=`` exact) selects ``name``."""
    exclude, exact, names = parse_ifname(value)
    return ifname_matches(name, names, exact) != exclude


def nccl_nic(
    environ: Mapping[str, str],
    *,
    bus_id: Optional[str] = None,
    sysfs_root: str = "/",
    addresses: Optional[Mapping[str, list]] = None,
) -> Optional[str]:
    """The interface (or, under ``NCCL_IB_HCA``, the HCA) this rank's NCCL
    would use, by the rules in this module's docstring; None when none
    qualifies or the facts cannot be read."""
    net = (environ.get("NCCL_NET") or "").strip().lower()
    ib_off = env_flag(environ, "NCCL_IB_DISABLE") or net == "socket"
    hca_value = environ.get("NCCL_IB_HCA")
    if not ib_off and isinstance(hca_value, str) and hca_value.strip():
        hca = _ib_hca(hca_value, bus_id, sysfs_root)
        if hca is not None:
            return hca
    if addresses is None:
        addresses, _ = _addresses(sysfs_root)
    return socket_interface(environ, addresses)


def socket_interface(environ: Mapping[str, str], addresses: Mapping[str, list]) -> Optional[str]:
    """The first interface NCCL's ``ncclFindInterfaces`` would return."""
    family = (environ.get("NCCL_SOCKET_FAMILY") or "").strip().upper()
    versions = {name: {_ip_version(a) for a in addrs or ()} for name, addrs in addresses.items()}
    if family == "AF_INET":
        order = [name for name, v in versions.items() if 4 in v]
    elif family == "AF_INET6":
        order = [name for name, v in versions.items() if 6 in v]
    else:  # getifaddrs lists the IPv4 addresses before the IPv6 ones
        order = [name for name, v in versions.items() if 4 in v] + [name for name, v in versions.items() if 6 in v and 4 not in v]
    user = environ.get("NCCL_SOCKET_IFNAME")
    if isinstance(user, str) and len(user) > 1:
        rules = [user]
    else:
        rules = ["ib", "^docker,lo", "docker", "lo"]
    for rule in rules:
        for name in order:
            if _selected(name, rule):
                return name
    return None


def _ip_version(address: object) -> Optional[int]:
    if not isinstance(address, str):
        return None
    try:
        ip = ipaddress.ip_address(address.split("/", 1)[0].split("%", 1)[0])
    except ValueError:
        return None
    if ip.version == 6 and ip.is_loopback:
        return None  # NCCL skips the IPv6 loopback address
    return ip.version


def _ib_hca(value: str, bus_id: Optional[str], sysfs_root: str) -> Optional[str]:
    base = under(sysfs_root, "/sys/class/infiniband")
    chosen = []
    for dev in listdir(base):
        if not _selected(dev, value):
            continue
        ports = listdir(os.path.join(base, dev, "ports"))
        state = read_text(os.path.join(base, dev, "ports", ports[0], "state")) if ports else None
        if state is None or "ACTIVE" not in state.upper():
            continue
        device = os.path.join(base, dev, "device")
        chosen.append((dev, bus_id_in_path(os.path.realpath(device)) if os.path.exists(device) else None))
    if len(chosen) <= 1 or not bus_id:
        return chosen[0][0] if chosen else None
    matrix, _ = gpu_nic_matrix(sysfs_root, [bus_id], [bus for _, bus in chosen])
    if not matrix:
        return chosen[0][0]
    distances = [link_distance(label) for label in matrix[0]]
    best = min(range(len(chosen)), key=lambda k: (99 if distances[k] is None else distances[k], k))
    return chosen[best][0]
