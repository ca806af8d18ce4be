"""ClusterReport: snapshots of several hosts plus the table of ranks on them."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Optional

from ._serde import from_dict, to_dict
from .node import NodeSnapshot, check_schema

REPORT_SCHEMA = "ncclnb.report/1"


@dataclass(frozen=True)
class RankEntry:
    rank: int                            # global rank (RANK)
    host: str
    local_rank: Optional[int] = None     # LOCAL_RANK
    world_size: Optional[int] = None     # WORLD_SIZE as this rank saw it
    node_rank: Optional[int] = None      # NODE_RANK / GROUP_RANK
    pid: Optional[int] = None
    cuda_index: Optional[int] = None     # torch.cuda.current_device(), None if never set
    gpu_uuid: Optional[str] = None
    cpu_affinity: Optional[str] = None   # cpulist of os.sched_getaffinity


@dataclass(frozen=True)
class ClusterReport:
    snapshots: tuple[NodeSnapshot, ...] = ()
    ranks: tuple[RankEntry, ...] = ()
    description: str = ""
    captured_at: Optional[str] = None
    schema: str = REPORT_SCHEMA

    def to_dict(self) -> dict:
        data = to_dict(self)
        return {"schema": data.pop("schema"), **data}

    @classmethod
    def from_dict(cls, data: object) -> "ClusterReport":
        check_schema(data, REPORT_SCHEMA, "cluster report")
        snapshots = data.get("snapshots")
        for i, snap in enumerate(snapshots if isinstance(snapshots, (list, tuple)) else ()):
            if isinstance(snap, dict):   # anything else is refused, with its path, by from_dict
                check_schema(snap, "ncclnb.node/1", f"node snapshot (snapshots[{i}])")
        return from_dict(cls, data)

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
