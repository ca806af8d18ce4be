"""The registry of checks: each check is a pure function under a stable id.

A *node* check is called as ``fn(snapshot, ranks)`` where ``ranks`` are the
rank-table entries placed on that host (empty for a lone snapshot); a
*report* check is called as ``fn(report)``. Both return a list of
:class:`~ncclnb.model.Finding`. Ids never change once published: notebooks,
``--only`` and tests name them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal, Optional

from ..model import CATEGORIES, Evidence, Finding, GpuRef, LinkRef

Takes = Literal["node", "report"]


@dataclass(frozen=True)
class CheckInfo:
    """What the registry knows about one check."""

    id: str
    category: str
    takes: Takes  # "node": fn(snapshot, ranks); "report": fn(report)
    summary: str  # first paragraph of the function's docstring
    func: Callable


REGISTRY: dict[str, CheckInfo] = {}


def register(check_id: str, category: str, takes: Takes):
    """Decorator: register ``fn`` under ``check_id``. Refuses duplicate ids,
    unknown categories and unknown kinds at import time (a bug, not input)."""
    if category not in CATEGORIES:
        raise ValueError(f"check {check_id}: unknown category {category!r}")
    if takes not in ("node", "report"):
        raise ValueError(f"check {check_id}: takes must be 'node' or 'report', not {takes!r}")

    def wrap(fn):
        if check_id in REGISTRY:
            raise ValueError(f"duplicate check id {check_id!r}")
        first_paragraph = (fn.__doc__ or "").strip().split("\n\n")[0]
        summary = " ".join(line.strip() for line in first_paragraph.splitlines())
        REGISTRY[check_id] = CheckInfo(check_id, category, takes, summary, fn)
        fn.check_id = check_id
        fn.category = category
        return fn

    return wrap


def node_source(hostname: Optional[str]) -> str:
    return f"snapshot:{hostname or '?'}"


def fact(source: str, text: str) -> Evidence:
    """One evidence line for a fact (no line number: it is not from a log)."""
    return Evidence(source=source, line=None, text=text)


def make(
    check_id: str,
    severity: str,
    confidence: float,
    title: str,
    evidence=(),
    cause: str = "",
    fix: str = "",
    ranks=(),
    hosts=(),
    docs: str = "",
    gpus=(),
    links=(),
) -> Finding:
    """Build a Finding for ``check_id`` with the category it was registered under.

    ``gpus`` are ``(host, NVML index)`` pairs (or :class:`GpuRef`) and
    ``links`` ``(host, a, b)`` triples (or :class:`LinkRef`) with endpoints
    named as ``topo -m`` names them ("GPU0", "NIC1"): what a view marks."""
    info = REGISTRY[check_id]
    return Finding(
        rule=check_id,
        category=info.category,
        severity=severity,
        confidence=confidence,
        title=title,
        evidence=tuple(evidence),
        cause=cause,
        fix=fix,
        docs=docs,
        ranks=tuple(sorted(set(int(r) for r in ranks))),
        hosts=tuple(dict.fromkeys(h for h in hosts if h)),
        gpus=tuple(dict.fromkeys(g if isinstance(g, GpuRef) else GpuRef(*g) for g in gpus)),
        links=tuple(dict.fromkeys(x if isinstance(x, LinkRef) else LinkRef(*x) for x in links)),
    )
