"""ReproResult: what one run of a reproduction scenario did and what the
doctor made of its logs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ._serde import from_dict, to_dict
from .diagnosis import Diagnosis
from .node import check_schema

REPRO_SCHEMA = "ncclnb.repro/1"
VARIANTS = ("broken", "fixed", "guarded")


@dataclass(frozen=True)
class RankExit:
    """How one process of the run ended."""

    process: int  # index of the process the runner started (0-based)
    rank: Optional[int]  # the global rank it was told (RANK); None for a launcher
    exit_code: Optional[int]  # None: still running at the deadline, then killed
    log: str  # its stdout+stderr, relative to the run directory
    node: int = 0  # the "node" (torchrun agent) it ran under
    last_line: str = ""  # the last line it printed


@dataclass(frozen=True)
class ReproResult:
    scenario: str
    variant: str  # "broken", "fixed" or "guarded"
    backend: str  # "gloo" or "nccl"
    completed: bool  # the program ran to its end on every rank
    seconds: float  # wall time from the first start to the last exit
    run_dir: str  # kept: per-rank logs and flight-recorder dumps
    exits: tuple[RankExit, ...] = ()
    timeout_s: float = 0.0  # the process-group / store timeout the ranks used
    deadline_hit: bool = False  # the runner killed what was still running
    expected_category: str = ""  # what the doctor must name first for a broken run
    culprit_ranks: tuple[int, ...] = ()
    diagnosis: Optional[Diagnosis] = None
    notes: tuple[str, ...] = ()  # what the reader should know (gloo for NCCL, replayed logs, ...)
    schema: str = REPRO_SCHEMA

    @property
    def exit_codes(self) -> dict:
        """Global rank -> exit code (None: killed); a launcher, or a second
        process told the same rank, is keyed ``process<i>``."""
        out: dict = {}
        for e in self.exits:
            key = e.rank if e.rank is not None and e.rank not in out else f"process{e.process}"
            out[key] = e.exit_code
        return out

    @property
    def diagnosed_as_expected(self) -> bool:
        """The doctor named the expected category first and blamed every culprit rank."""
        top = self.diagnosis.top if self.diagnosis else None
        if top is None or top.category != self.expected_category:
            return False
        return set(self.culprit_ranks) <= set(top.ranks)

    def to_dict(self) -> dict:
        data = to_dict(self)
        return {"schema": data.pop("schema"), **data}

    @classmethod
    def from_dict(cls, data: object) -> ReproResult:
        check_schema(data, REPRO_SCHEMA, "repro result")
        return from_dict(cls, data)

    def _repr_pretty_(self, p, cycle: bool) -> None:
        """IPython's text form: the run as ``ncclnb repro run`` prints it."""
        from ._repr import pretty, repro_text

        pretty(p, "ReproResult(...)" if cycle else repro_text(self))

    def _repr_html_(self) -> str:
        """A static HTML form: the same text, escaped."""
        from ._repr import pre_html, repro_text

        return pre_html(repro_text(self), "repro")
