"""The dashboard: every view of a machine or a job in tabs, the checks'
findings (and a diagnosis, if given) in the first. It holds no state of its
own: each tab is the view's own widget."""

from __future__ import annotations

from typing import Optional

import ipywidgets as w

from ..model import ClusterReport, Diagnosis, NodeSnapshot
from ._common import esc, resolve, run_checks, snapshots_of
from .diagnosis import diagnosis_html, findings_html
from .jobmap import show_job_map
from .links import show_links
from .ranks import show_ranks
from .versions import show_versions
from .numa import show_numa
from .topology import show_topology
from .widgets import View, with_text_form


def dashboard(snapshot_or_report, diagnosis: Optional[Diagnosis] = None) -> View:
    """Tabs of every view: findings (checks, and the diagnosis if given),
    topology, NUMA, rank map and job map (for reports with ranks), link
    results (for reports with a link test) and versions. The job map and
    link results mark what these same findings name."""
    target = resolve(snapshot_or_report)
    findings, problem = run_checks(target)
    html = findings_html(findings, "Checks")
    if problem:
        html += f"<p><i>{esc(problem)}</i></p>"
    if diagnosis is not None:
        html += diagnosis_html(diagnosis)
    first = View(w.VBox([w.HTML(html)], layout=w.Layout()), None, html, "findings")
    parts = [("Findings", first), ("Topology", show_topology(target)), ("NUMA", show_numa(target))]
    if isinstance(target, ClusterReport) and target.ranks:
        parts.append(("Ranks", show_ranks(target)))
        parts.append(("Job map", show_job_map(target, None if problem else findings)))
    if isinstance(target, ClusterReport) and target.links:
        parts.append(("Links", show_links(target, None if problem else findings)))
    parts.append(("Versions", show_versions(target)))
    tabs = w.Tab(children=[v.widget for _, v in parts])
    for i, (name, _) in enumerate(parts):
        tabs.set_title(i, name)
    tabs.add_class("ncclnb-dashboard")
    label = snapshots_of(target)[0].hostname if isinstance(target, NodeSnapshot) else f"{len(target.snapshots)} nodes"
    return with_text_form(
        View(
            tabs,
            None,
            f"<h3>ncclnb dashboard: {esc(label)}</h3>",
            f"ncclnb dashboard: {label}",
            parts=[v for _, v in parts],
            reveal="render",  # its first tab is the findings: the figures draw when their tab is opened
        ),
        "dashboard",
        target,
        diagnosis,
    )
