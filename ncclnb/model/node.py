"""NodeSnapshot: everything ncclnb knows about one host, as a frozen value.

Units are in the field names (``_mib``, ``_bytes``, ``_mbps``). Each field's
comment names the command that shows the same fact by hand, so a user can
check any number ncclnb shows. A fact that could not be read is ``None`` and
``missing`` says why, keyed by the field's path (``gpus[2].memory_total_mib``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from ._serde import SchemaError, from_dict, to_dict

NODE_SCHEMA = "ncclnb.node/1"

# RLIMIT values use -1 for RLIM_INFINITY ("unlimited" in `ulimit -n`).
UNLIMITED = -1


@dataclass(frozen=True)
class NumaNode:
    id: int
    cpus: str = ""  # cpulist, as /sys/devices/system/node/nodeN/cpulist
    memory_mib: Optional[int] = None  # MemTotal of /sys/devices/system/node/nodeN/meminfo


@dataclass(frozen=True)
class Host:
    hostname: str
    os: Optional[str] = None  # PRETTY_NAME of /etc/os-release
    kernel: Optional[str] = None  # uname -r
    cpu_model: Optional[str] = None  # lscpu "Model name"
    cpu_count: Optional[int] = None  # logical CPUs, nproc --all
    numa_nodes: tuple[NumaNode, ...] = ()  # numactl --hardware
    container: tuple[str, ...] = ()  # hints: "docker", "kubernetes", "slurm", "cgroup:<path>"
    iommu: Optional[str] = None  # "on", "off" or "passthrough" (/sys/class/iommu, /proc/cmdline)
    shm_total_bytes: Optional[int] = None  # df -B1 /dev/shm
    shm_free_bytes: Optional[int] = None
    rlimit_nofile_soft: Optional[int] = None  # ulimit -Sn; -1 = unlimited
    rlimit_nofile_hard: Optional[int] = None  # ulimit -Hn
    rlimit_memlock_soft: Optional[int] = None  # ulimit -Sl, in bytes; -1 = unlimited
    rlimit_memlock_hard: Optional[int] = None  # ulimit -Hl


@dataclass(frozen=True)
class Gpu:
    index: int  # NVML index = nvidia-smi's "GPU n"
    cuda_index: Optional[int] = None  # index CUDA uses under CUDA_VISIBLE_DEVICES; None if hidden
    uuid: Optional[str] = None  # nvidia-smi -L
    name: Optional[str] = None
    pci_bus_id: Optional[str] = None  # "00000000:07:00.0", nvidia-smi --query-gpu=pci.bus_id
    numa_node: Optional[int] = None  # nvidia-smi topo -m "NUMA Affinity"
    cpu_affinity: Optional[str] = None  # cpulist, nvidia-smi topo -m "CPU Affinity"
    memory_total_mib: Optional[int] = None  # nvidia-smi --query-gpu=memory.total
    mig_mode: Optional[str] = None  # "Enabled" / "Disabled", nvidia-smi -q | grep -A1 MIG
    compute_mode: Optional[str] = None  # "Default", "Exclusive_Process", "Prohibited"


# ``nvidia-smi topo -p2p`` statuses, the vocabulary of ``Links.p2p``: X the GPU itself,
# OK supported, CNS chipset not supported, GNS GPU not supported, TNS topology not
# supported, NS not supported, DR disabled by regkey, U unknown
P2P_STATUSES = ("X", "OK", "CNS", "GNS", "TNS", "NS", "DR", "U")


@dataclass(frozen=True)
class Links:
    """Link matrices in ``nvidia-smi topo -m`` terms.

    ``gpu_gpu[i][j]`` is the label between GPU i and GPU j in snapshot order
    ("X", "NV12", "PIX", "PXB", "PHB", "NODE", "SYS"; "?" where one GPU could
    not be read); ``gpu_nic[i][k]`` the label between GPU i and
    ``nic_names[k]``. ``p2p`` maps a capability ("read", "write", "atomics",
    "nvlink", "prop") to a GPU matrix of ``nvidia-smi topo -p2p`` statuses
    (``P2P_STATUSES``).
    Empty tuples mean not known (see ``missing``)."""

    gpu_gpu: tuple[tuple[str, ...], ...] = ()
    gpu_nic: tuple[tuple[str, ...], ...] = ()
    nic_names: tuple[str, ...] = ()
    p2p: dict[str, tuple[tuple[str, ...], ...]] = field(default_factory=dict)

    def label(self, i: int, j: int) -> Optional[str]:
        try:
            return self.gpu_gpu[i][j]
        except IndexError:
            return None


_NVLINK_RE = re.compile(r"NV([0-9]{1,3})")  # ASCII digits: "NV١٢" is not a label


def nvlink_count(label: Optional[str]) -> int:
    """Number of bonded NVLinks in a topo label: "NV12" -> 12, "PIX" -> 0
    (as is anything that is not ``NV`` and 1-3 ASCII digits)."""
    m = _NVLINK_RE.fullmatch(label) if isinstance(label, str) else None
    return int(m.group(1)) if m else 0


@dataclass(frozen=True)
class Nic:
    name: str  # ip link / ibv_devices name ("eth0", "mlx5_0")
    kind: Optional[str] = None  # "ethernet", "infiniband", "roce", "loopback", "virtual"
    state: Optional[str] = None  # operstate: "up", "down", "unknown"
    addresses: tuple[str, ...] = ()  # ip -brief addr
    speed_mbps: Optional[int] = None  # ethtool / sysfs speed; IB: ibstat "Rate" * 1000
    mtu: Optional[int] = None
    pci_bus_id: Optional[str] = None
    numa_node: Optional[int] = None  # /sys/class/net/<nic>/device/numa_node
    ib_device: Optional[str] = None  # mlx5_0 for a netdev backed by an HCA
    ib_port_state: Optional[str] = None  # ibstat "State": "ACTIVE", "DOWN", ...
    ib_link_layer: Optional[str] = None  # ibstat "Link layer": "InfiniBand" / "Ethernet"


@dataclass(frozen=True)
class Library:
    path: str
    version: Optional[str] = None  # from the file name (libnccl.so.2.19.3) when present
    source: Optional[str] = None  # "ldconfig", "LD_LIBRARY_PATH", "dir", "pip"


@dataclass(frozen=True)
class Versions:
    driver: Optional[str] = None  # nvidia-smi "Driver Version"
    cuda_driver: Optional[str] = None  # nvidia-smi "CUDA Version" (newest CUDA the driver runs)
    torch: Optional[str] = None  # torch.__version__
    torch_cuda: Optional[str] = None  # torch.version.cuda (CUDA torch was built with)
    nccl_torch: Optional[str] = None  # torch.cuda.nccl.version(), only if NCCL is available
    nccl_loaded: Optional[str] = None  # "NCCL version X" a process printed under NCCL_DEBUG=INFO: what it loaded
    nccl_pip: dict[str, str] = field(default_factory=dict)  # pip: nvidia-nccl-cu12 -> 2.21.5
    nccl_system: tuple[Library, ...] = ()  # libnccl.so* from ldconfig -p, LD_LIBRARY_PATH, usual dirs
    net_plugins: tuple[Library, ...] = ()  # libnccl-net*.so on the library path
    frameworks: dict[str, str] = field(default_factory=dict)  # lightning, deepspeed, accelerate, transformers
    python: Optional[str] = None


@dataclass(frozen=True)
class NodeSnapshot:
    """One host. ``origin`` says how it was made ("live", "ingest", "recorded"),
    ``sources`` where each group of facts came from, ``missing`` why a fact
    is absent."""

    host: Host
    gpus: tuple[Gpu, ...] = ()
    links: Links = field(default_factory=Links)
    nics: tuple[Nic, ...] = ()
    versions: Versions = field(default_factory=Versions)
    env: dict[str, str] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    origin: str = "live"
    description: str = ""
    captured_at: Optional[str] = None  # ISO 8601, UTC
    schema: str = NODE_SCHEMA

    def to_dict(self) -> dict:
        data = to_dict(self)
        return {"schema": data.pop("schema"), **data}

    @classmethod
    def from_dict(cls, data: object) -> NodeSnapshot:
        check_schema(data, NODE_SCHEMA, "node snapshot")
        return from_dict(cls, data)

    @property
    def hostname(self) -> str:
        return self.host.hostname

    def _repr_pretty_(self, p, cycle: bool) -> None:
        """IPython's text form: the snapshot as ``ncclnb show`` prints it."""
        from ._repr import pretty, summary_text

        pretty(p, "NodeSnapshot(...)" if cycle else summary_text(self))

    def _repr_html_(self) -> str:
        """A static HTML form: the same text, escaped."""
        from ._repr import pre_html, summary_text

        return pre_html(summary_text(self), "snapshot")


def check_schema(data: object, expected: str, what: str) -> None:
    """Refuse foreign JSON and newer schema versions with one clear line."""
    if not isinstance(data, dict):
        raise SchemaError("", f"not a {what}: expected a JSON object, got {type(data).__name__}")
    tag = data.get("schema")
    if not isinstance(tag, str):
        keys = ", ".join(_short(k, 30)[1:-1] for k in sorted(map(str, data))[:5]) or "none"
        raise SchemaError("schema", f"not a {what}: no 'schema' tag (top-level keys: {keys})")
    kind, _, version = tag.partition("/")
    want_kind, _, want_version = expected.partition("/")
    if kind != want_kind:
        raise SchemaError("schema", f"not a {what}: schema is {_short(tag)}, expected {expected!r}")
    if not _VERSION_RE.fullmatch(version):  # not str.isdigit(): that takes "¹" and "١"
        raise SchemaError("schema", f"malformed schema tag {_short(tag)} (expected {want_kind}/<version number>)")
    if int(version) > int(want_version):
        raise SchemaError(
            "schema",
            f"written by a newer ncclnb (schema {_short(tag)}; this version reads up to {expected!r}): upgrade ncclnb",
        )


_VERSION_RE = re.compile(r"[0-9]{1,9}")


def _short(text: str, limit: int = 60) -> str:
    quoted = repr(text)
    return quoted if len(quoted) <= limit else quoted[: limit - 4] + "...'"
