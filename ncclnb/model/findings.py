"""Finding: what a check or the doctor concludes, with the lines that prove it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ._serde import SchemaError, from_dict, to_dict
from .categories import TABLE as CATEGORY_TABLE

CATEGORIES = tuple(CATEGORY_TABLE)  # the ids; their titles and pages are in categories.TABLE
SEVERITIES = ("error", "warning", "info")  # most severe first
SEVERITY_ORDER = {s: i for i, s in enumerate(SEVERITIES)}  # sort key: most severe first


@dataclass(frozen=True)
class Evidence:
    source: str  # file name, "<stdin>", "snapshot:<host>"
    line: Optional[int]  # 1-based line number in source, None for facts
    text: str


@dataclass(frozen=True)
class GpuRef:
    """A GPU a finding is about: its host and NVML index (``Gpu.index``)."""

    host: str
    index: int


@dataclass(frozen=True)
class LinkRef:
    """A link a finding is about: two endpoints on one host, named as
    ``nvidia-smi topo -m`` names them (``GPU0``, ``NIC1``)."""

    host: str
    a: str
    b: str


@dataclass(frozen=True)
class Finding:
    rule: str
    category: str
    severity: str
    confidence: float  # 0..1
    title: str
    evidence: tuple[Evidence, ...] = ()
    cause: str = ""
    fix: str = ""
    docs: str = ""  # the guided notebook or page that teaches this failure
    ranks: tuple[int, ...] = ()  # global ranks the finding blames
    hosts: tuple[str, ...] = ()
    gpus: tuple[GpuRef, ...] = ()  # GPUs the finding is about (a view marks them)
    links: tuple[LinkRef, ...] = ()
    # the rule this finding is another reading of ("also consistent with"); "" for a finding in its own right
    alternative_of: str = ""

    def __post_init__(self):
        if self.category not in CATEGORIES:
            raise SchemaError("category", f"unknown category {self.category!r}")
        if self.severity not in SEVERITIES:
            raise SchemaError("severity", f"unknown severity {self.severity!r}")
        if not 0.0 <= self.confidence <= 1.0:
            raise SchemaError("confidence", f"must be within 0..1, got {self.confidence}")

    def to_dict(self) -> dict:
        return to_dict(self)

    @classmethod
    def from_dict(cls, data: object) -> Finding:
        return from_dict(cls, data)
