"""Checks: pure functions from facts (a NodeSnapshot or a ClusterReport) to
findings, each registered under a stable id.

>>> import ncclnb
>>> findings = ncclnb.check(ncclnb.load("hgx-h100"))      # doctest: +SKIP

``check`` never raises because of what it is given: a check that fails on
odd input becomes an info finding naming the check, and the others still run.
"""

from __future__ import annotations

from typing import Iterable, Optional, Union

from ..errors import InputError
from ..errors import tolerate
from ..model import SEVERITY_ORDER, ClusterReport, Evidence, Finding, NodeSnapshot, RankEntry
from ._registry import REGISTRY, CheckInfo, card, register
from . import environment, links, network, ranks, resources, topology, versions  # noqa: F401  (registers the checks)

__all__ = ["check", "registry", "CheckInfo", "register", "SEVERITY_ORDER"]


CRASHED = "check_crashed"  # the card of what check() says of a check that raised

Target = Union[NodeSnapshot, ClusterReport, Iterable[NodeSnapshot]]


def registry() -> dict[str, CheckInfo]:
    """Every registered check by id (a copy: changing it changes nothing)."""
    return dict(sorted(REGISTRY.items()))


def _selected(only) -> list[CheckInfo]:
    if only is None:
        return list(registry().values())
    ids = [p.strip() for p in only.split(",")] if isinstance(only, str) else [str(p).strip() for p in only]
    ids = [i for i in ids if i]
    unknown = [i for i in ids if i not in REGISTRY]
    if unknown:
        ids_word = "id" if len(unknown) == 1 else "ids"
        raise InputError(f"unknown check {ids_word}: {', '.join(unknown)} (known: {', '.join(sorted(REGISTRY))})")
    return [REGISTRY[i] for i in dict.fromkeys(ids)]


def as_report(target: Target) -> ClusterReport:
    """A ClusterReport view of any accepted target (a lone snapshot becomes a
    one-node report with no rank table)."""
    if isinstance(target, ClusterReport):
        return target
    if isinstance(target, NodeSnapshot):
        return ClusterReport(snapshots=(target,))
    if isinstance(target, (str, bytes, dict)) or not hasattr(target, "__iter__"):
        raise TypeError(f"check() takes a NodeSnapshot, a ClusterReport or snapshots, not {type(target).__name__}")
    snaps = tuple(target)
    bad = [type(s).__name__ for s in snaps if not isinstance(s, NodeSnapshot)]
    if bad:
        raise TypeError(f"check() got {bad[0]} among the snapshots")
    return ClusterReport(snapshots=snaps)


def _crashed(info: CheckInfo, exc: BaseException, where: str) -> Finding:
    return Finding(
        rule=info.id,
        category="unknown",
        severity="info",
        confidence=0.0,
        evidence=(Evidence(source=where, line=None, text=f"{type(exc).__name__}: {exc}"[:300]),),
        **card(CRASHED).text(check=info.id, where=where),
    )


def _ranks_by_host(report: ClusterReport) -> dict[str, tuple[RankEntry, ...]]:
    # grouped once: a 1024-node report has 8192 ranks, and every node check needs its host's
    groups: dict[str, list[RankEntry]] = {}
    for r in report.ranks or ():
        if isinstance(r, RankEntry):
            groups.setdefault(r.host, []).append(r)
    return {host: tuple(entries) for host, entries in groups.items()}


def _sort_key(f: Finding):
    return (SEVERITY_ORDER.get(f.severity, 3), -f.confidence, f.rule, f.hosts, f.title)


def check(target: Target, only: Optional[Union[str, Iterable[str]]] = None) -> list[Finding]:
    """Run the registered checks on a snapshot, a report, or several snapshots
    (treated as the nodes of one job) and return the findings, errors first,
    then warnings, then info, each group by confidence.

    ``only`` limits the run to check ids (a list, or "id1,id2"); an unknown id
    raises InputError (a ValueError). Node checks run once per snapshot with the rank-table
    entries on that host; report checks run once."""
    report = as_report(target)
    ranks_by_host = _ranks_by_host(report)
    findings: list[Finding] = []
    for info in _selected(only):
        if info.takes == "node":
            for snap in report.snapshots:
                where = f"snapshot:{getattr(getattr(snap, 'host', None), 'hostname', '?')}"
                try:
                    findings.extend(info.func(snap, ranks_by_host.get(snap.hostname, ())) or [])
                except Exception as exc:  # a broken check must not hide the others (under NCCLNB_STRICT: a bug raises)
                    tolerate(exc)
                    findings.append(_crashed(info, exc, where))
        else:
            try:
                findings.extend(info.func(report) or [])
            except Exception as exc:
                tolerate(exc)
                findings.append(_crashed(info, exc, "report"))
    findings.sort(key=_sort_key)
    return findings
