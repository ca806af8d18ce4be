"""Frozen, JSON-ready facts: the bottom layer, importing nothing else of ncclnb."""

from ._serde import SchemaError
from .cluster import REPORT_SCHEMA, ClusterReport, LinkMeasurement, LinkTest, PairMeasurement, PeerTransport, RankEntry
from .diagnosis import DIAGNOSIS_SCHEMA, Diagnosis, RankStatus
from .repro import REPRO_SCHEMA, VARIANTS, RankExit, ReproResult
from .findings import CATEGORIES, SEVERITIES, SEVERITY_ORDER, Evidence, Finding, GpuRef, LinkRef
from .node import (
    NODE_SCHEMA,
    UNLIMITED,
    Gpu,
    Host,
    Library,
    Links,
    Nic,
    NodeSnapshot,
    NumaNode,
    Versions,
    nvlink_count,
)

__all__ = [
    "CATEGORIES",
    "SEVERITIES",
    "SEVERITY_ORDER",
    "NODE_SCHEMA",
    "REPORT_SCHEMA",
    "UNLIMITED",
    "ClusterReport",
    "LinkMeasurement",
    "LinkTest",
    "PairMeasurement",
    "PeerTransport",
    "DIAGNOSIS_SCHEMA",
    "Diagnosis",
    "RankStatus",
    "Evidence",
    "Finding",
    "GpuRef",
    "LinkRef",
    "Gpu",
    "Host",
    "Library",
    "Links",
    "Nic",
    "NodeSnapshot",
    "REPRO_SCHEMA",
    "RankExit",
    "ReproResult",
    "VARIANTS",
    "NumaNode",
    "RankEntry",
    "SchemaError",
    "Versions",
    "nvlink_count",
]
