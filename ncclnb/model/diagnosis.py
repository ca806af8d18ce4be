"""Diagnosis: what the doctor concludes from the logs of a job."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ._serde import from_dict, to_dict
from .findings import Finding
from .node import check_schema

DIAGNOSIS_SCHEMA = "ncclnb.diagnosis/1"


@dataclass(frozen=True)
class RankStatus:
    """What one rank said, as read from the logs; unknown facts are None."""

    rank: Optional[int]
    host: Optional[str] = None
    local_rank: Optional[int] = None
    pid: Optional[int] = None
    nccl_version: Optional[str] = None
    last_seq: Optional[int] = None  # last collective sequence number it reached
    last_op: Optional[str] = None  # e.g. "_ALLGATHER_BASE"
    first_error: Optional[str] = None
    source: Optional[str] = None  # file the rank's lines came from


@dataclass(frozen=True)
class Diagnosis:
    findings: tuple[Finding, ...] = ()  # most likely root cause first
    ranks: tuple[RankStatus, ...] = ()
    sources: tuple[str, ...] = ()  # inputs read
    lines_read: int = 0
    schema: str = DIAGNOSIS_SCHEMA

    @property
    def top(self) -> Optional[Finding]:
        return self.findings[0] if self.findings else None

    def to_dict(self) -> dict:
        data = to_dict(self)
        return {"schema": data.pop("schema"), **data}

    @classmethod
    def from_dict(cls, data: object) -> Diagnosis:
        check_schema(data, DIAGNOSIS_SCHEMA, "diagnosis")
        return from_dict(cls, data)

    def _repr_pretty_(self, p, cycle: bool) -> None:
        """IPython's text form: the full diagnosis as ``ncclnb doctor`` prints it."""
        from ._repr import diagnosis_text, pretty

        pretty(p, "Diagnosis(...)" if cycle else diagnosis_text(self))

    def _repr_html_(self) -> str:
        """A static, escaped HTML form: the findings as cards, then what each rank said."""
        from ._repr import diagnosis_html

        return diagnosis_html(self)
