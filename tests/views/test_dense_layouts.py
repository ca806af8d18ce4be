"""Views of dense machines (issue 12): the bundled DGX A100 (8 GPUs, 12 NICs)
and the other 8-GPU machines. Column labels, titles and the NUMA boxes are
checked from the figure's layout (the geometry a browser lays out from it),
NICs against their NUMA node, and the version table's words against the
checks' findings."""

from __future__ import annotations

import dataclasses

import pytest

import ncclnb
from ncclnb.checks import check
from ncclnb.model import ClusterReport
from ncclnb.recorded import names
from ncclnb.views.versions import ROW_LIMIT, version_table

REPORTS = [n for n in names() if isinstance(ncclnb.load(n), ClusterReport)]


# --- the version table ----------------------------------------------------------


def _differing(report) -> set[str]:
    """What ``versions_differ`` and ``nccl_env_differs`` name: their findings' titles."""
    return {f.title for f in check(report, only=["versions_differ", "nccl_env_differs"])}


@pytest.mark.parametrize("name", REPORTS)
def test_version_caption_agrees_with_the_checks(name):
    report = ncclnb.load(name)
    caption = version_table(report).caption
    assert "all the same" not in caption
    if _differing(report):
        assert "none differs" not in caption and "differ" in caption
    else:
        assert " differ (" not in caption


def test_version_caption_names_no_sameness_where_no_node_reports_a_version():
    report = ncclnb.load("two-node-h100")  # recorded without any version
    assert version_table(report).data.empty
    caption = version_table(report).caption
    assert "no node reports a version" in caption and "none differs" not in caption


def test_a_node_off_the_others_is_drawn_even_when_its_configuration_is_the_rarest():
    base = ncclnb.load("survey-demo").snapshots[0]
    snaps = []
    for i in range(ROW_LIMIT + 12):  # each node its own python: one configuration per node, past the rows drawn
        odd = i == ROW_LIMIT + 11  # last seen, so the least common in the table's order
        versions = dataclasses.replace(base.versions, python=f"3.11.{i}", torch="2.1.2" if odd else base.versions.torch)
        snaps.append(dataclasses.replace(base, host=dataclasses.replace(base.host, hostname=f"n{i:03d}"), versions=versions))
    report = ClusterReport(snapshots=tuple(snaps))
    assert any("torch" in t for t in _differing(report))
    styler = version_table(report)
    caption = styler.caption
    assert "1 component differs" in caption and "all the same" not in caption and "none differs" not in caption
    assert "12 more configurations (12 nodes) not shown" in caption
    assert len(styler.data) == ROW_LIMIT
    odd_row = [k for k, label in enumerate(styler.data.index) if f"n{ROW_LIMIT + 11:03d}" in label]
    assert odd_row, "the node whose torch differs is not drawn"
    styler._compute()
    col = list(styler.data.columns).index("torch")
    marked = {(r, c) for (r, c), props in styler.ctx.items() if props}
    assert (odd_row[0], col) in marked
