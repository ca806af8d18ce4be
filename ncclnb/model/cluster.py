"""ClusterReport: snapshots of several hosts, the table of ranks on them, the
link tests the survey ran across them and the findings of the checks."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Optional

from ._serde import from_dict, to_dict
from .findings import Finding
from .node import NodeSnapshot, check_schema

REPORT_SCHEMA = "ncclnb.report/1"


@dataclass(frozen=True)
class RankEntry:
    rank: int  # global rank (RANK)
    host: str
    local_rank: Optional[int] = None  # LOCAL_RANK
    world_size: Optional[int] = None  # WORLD_SIZE as this rank saw it
    node_rank: Optional[int] = None  # NODE_RANK / GROUP_RANK
    pid: Optional[int] = None
    cuda_index: Optional[int] = None  # torch.cuda.current_device(), None if never set
    gpu_uuid: Optional[str] = None
    cpu_affinity: Optional[str] = None  # cpulist of os.sched_getaffinity
    bus_id: Optional[str] = None  # PCI bus id of its CUDA device, "00000000:3B:00.0" as NVML writes it
    numa_node: Optional[int] = None  # NUMA node of that device (sysfs); None when unknown or not one node
    nic: Optional[str] = None  # the network interface NCCL would use (see ncclnb.survey.rankfacts)


@dataclass(frozen=True)
class LinkMeasurement:
    """One collective at one message size, as nccl-tests reports it: time is
    the mean over iterations of the slowest rank; algbw = size / time; busbw =
    algbw x the collective's factor (all_reduce 2(n-1)/n; all_gather,
    reduce_scatter, all_to_all (n-1)/n; a point-to-point pair 1)."""

    collective: str  # all_reduce | all_gather | reduce_scatter | all_to_all
    size_bytes: int  # bytes per rank, nccl-tests' "size"
    time_us: float
    algbw_gbps: float  # GB/s, 1e9 bytes per second as nccl-tests prints
    busbw_gbps: float


@dataclass(frozen=True)
class PairMeasurement:
    """One point-to-point exchange of the ring between nodes (or ranks):
    ``src_rank`` on ``src_host`` sends ``size_bytes`` to ``dst_rank``."""

    src_rank: int
    dst_rank: int
    src_host: str
    dst_host: str
    size_bytes: int
    time_us: float
    busbw_gbps: float  # = algbw for a pair


@dataclass(frozen=True)
class PeerTransport:
    """The transport NCCL chose from ``rank`` to ``peer``, from its
    NCCL_DEBUG=INFO channel lines (``0[0] -> 1[1] via P2P/IPC``)."""

    rank: int
    peer: int
    transport: str  # P2P/IPC, P2P/CUMEM, P2P/direct, SHM, NET/IB, NET/Socket, ...
    channels: int = 1  # how many channel lines named this pair with this transport
    line: str = ""  # one such line, as NCCL printed it


@dataclass(frozen=True)
class LinkTest:
    """What the survey's link test measured over one backend."""

    backend: str  # nccl | gloo
    device: str  # cuda | cpu
    world_size: int
    nodes: int
    iterations: int
    results: tuple[LinkMeasurement, ...] = ()
    pairs: tuple[PairMeasurement, ...] = ()
    transports: tuple[PeerTransport, ...] = ()
    env: dict[str, str] = field(default_factory=dict)  # NCCL_ALGO, NCCL_PROTO, ... in force, as rank 0 saw them
    missing: dict[str, str] = field(default_factory=dict)  # {part: why it was not measured}


@dataclass(frozen=True)
class ClusterReport:
    snapshots: tuple[NodeSnapshot, ...] = ()
    ranks: tuple[RankEntry, ...] = ()
    description: str = ""
    captured_at: Optional[str] = None
    links: tuple[LinkTest, ...] = ()  # the survey's link tests, one per backend it ran
    findings: tuple[Finding, ...] = ()  # what the checks said when the report was written (`check` re-runs them)
    schema: str = REPORT_SCHEMA

    def to_dict(self) -> dict:
        data = to_dict(self)
        return {"schema": data.pop("schema"), **data}

    @classmethod
    def from_dict(cls, data: object) -> ClusterReport:
        check_schema(data, REPORT_SCHEMA, "cluster report")
        snapshots = data.get("snapshots")
        for i, snap in enumerate(snapshots if isinstance(snapshots, (list, tuple)) else ()):
            if isinstance(snap, dict):  # anything else is refused, with its path, by from_dict
                check_schema(snap, "ncclnb.node/1", f"node snapshot (snapshots[{i}])")
        return from_dict(cls, data)

    def _repr_pretty_(self, p, cycle: bool) -> None:
        """IPython's text form: the report as ``ncclnb show`` prints it, then its findings."""
        from ._repr import pretty, report_text

        pretty(p, "ClusterReport(...)" if cycle else report_text(self))

    def _repr_html_(self) -> str:
        """A static HTML form: the same text, escaped."""
        from ._repr import pre_html, report_text

        return pre_html(report_text(self), "report")

    def snapshot(self, host: str) -> Optional[NodeSnapshot]:
        """The snapshot of ``host``, or None."""
        return self._by_host.get(host)

    @cached_property
    def _by_host(self) -> dict[str, NodeSnapshot]:
        # not a field: outside to_dict and ==; first snapshot of a host wins, as before
        by_host: dict[str, NodeSnapshot] = {}
        for snap in self.snapshots:
            by_host.setdefault(snap.hostname, snap)
        return by_host
