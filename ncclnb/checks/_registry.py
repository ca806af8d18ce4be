"""The registry of checks: each check is a pure function under a stable id.

A *node* check is called as ``fn(snapshot, ranks)`` where ``ranks`` are the
rank-table entries placed on that host (empty for a lone snapshot); a
*report* check is called as ``fn(report)``. Both return a list of
:class:`~ncclnb.model.Finding`. Ids never change once published: notebooks,
``--only`` and tests name them.

What a finding says (title, cause, fix, docs) is the check's card,
``cards/<id>.json``, or for a case of the check with wording of its own,
``cards/<id>.<case>.json`` (:mod:`ncclnb.model.cards`); the code fills the
card's ``{fields}`` with what it found. The card's ``detects`` is the check's
one-line summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal, Optional

from ..model import CATEGORIES, Evidence, Finding, GpuRef, LinkRef
from ..model.cards import Card, load_cards

CARDS = Path(__file__).resolve().parent / "cards"

Takes = Literal["node", "report"]


@dataclass(frozen=True)
class CheckInfo:
    """What the registry knows about one check."""

    id: str
    category: str
    takes: Takes  # "node": fn(snapshot, ranks); "report": fn(report)
    summary: str  # what its card detects
    func: Callable


REGISTRY: dict[str, CheckInfo] = {}


def card(card_id: str) -> Card:
    """The card ``card_id`` (a check id, or ``<check id>.<case>``) from ``cards/``.
    A missing card is a bug of ncclnb (KeyError naming it), not bad input."""
    cards = load_cards(str(CARDS))
    if card_id not in cards:
        raise KeyError(f"no card {card_id!r} in {CARDS}")
    return cards[card_id]


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
        REGISTRY[check_id] = CheckInfo(check_id, category, takes, card(check_id).detects, fn)
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
    card_id: str,
    severity: str,
    confidence: float,
    evidence=(),
    *,
    ranks=(),
    hosts=(),
    gpus=(),
    links=(),
    **values: Any,
) -> Finding:
    """Build a Finding of the check ``card_id`` names (``<check id>`` or
    ``<check id>.<case>``), with the category it was registered under and the
    card's title, cause, fix and docs, their ``{fields}`` filled from
    ``values``.

    ``gpus`` are ``(host, NVML index)`` pairs (or :class:`GpuRef`) and
    ``links`` ``(host, a, b)`` triples (or :class:`LinkRef`) with endpoints
    named as ``topo -m`` names them ("GPU0", "NIC1"): what a view marks."""
    check_id = card_id.split(".")[0]
    info = REGISTRY[check_id]
    return Finding(
        rule=check_id,
        category=info.category,
        severity=severity,
        confidence=confidence,
        evidence=tuple(evidence),
        **card(card_id).text(**values),
        ranks=tuple(sorted(set(int(r) for r in ranks))),
        hosts=tuple(dict.fromkeys(h for h in hosts if h)),
        gpus=tuple(dict.fromkeys(g if isinstance(g, GpuRef) else GpuRef(*g) for g in gpus)),
        links=tuple(dict.fromkeys(x if isinstance(x, LinkRef) else LinkRef(*x) for x in links)),
    )
