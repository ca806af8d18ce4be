"""Views: pure figure builders and thin widget shells.

The only layer that imports plotly, pandas and ipywidgets, always inside
functions, so importing this package stays cheap.

Pure builders (no widget, no display): :func:`topology_figure`,
:func:`numa_figure`, :func:`rank_map_figure` (plotly figures),
:func:`version_table` (pandas Styler), :func:`diagnosis_html` (HTML).
Shells (live widget plus static fallback): :func:`show_topology`,
:func:`show_numa`, :func:`show_ranks`, :func:`show_versions`,
:func:`show_diagnosis`, :func:`dashboard`.
Flight recorder and point to point: :func:`alignment_figure` /
:func:`show_alignment` (ranks x sequence ids), :func:`pairing_figure` /
:func:`show_pairing` (sender x receiver).
The survey's report: :func:`job_map_figure` / :func:`show_job_map` (every
node a row: its GPUs, NUMA nodes, NICs and ranks, marked where findings name
them), :func:`busbw_figure`, :func:`pairs_figure` / :func:`show_links` (the
link test against the reference band, the pairs named by findings).
"""

from .alignment import alignment_figure, show_alignment
from .diagnosis import diagnosis_html, findings_html
from .jobmap import analyse_job, job_map_figure, show_job_map
from .links import busbw_figure, pairs_figure, show_links
from .numa import numa_figure
from .pairing import pairing_figure, show_pairing
from .ranks import analyse_ranks, rank_map_figure
from .topology import topology_figure
from .versions import version_table
from .widgets import (
    View,
    dashboard,
    run_checks,
    show_diagnosis,
    show_numa,
    show_ranks,
    show_topology,
    show_versions,
)

__all__ = [
    "View",
    "alignment_figure",
    "analyse_job",
    "analyse_ranks",
    "busbw_figure",
    "dashboard",
    "diagnosis_html",
    "findings_html",
    "job_map_figure",
    "numa_figure",
    "pairing_figure",
    "pairs_figure",
    "rank_map_figure",
    "run_checks",
    "show_alignment",
    "show_diagnosis",
    "show_job_map",
    "show_links",
    "show_numa",
    "show_pairing",
    "show_ranks",
    "show_topology",
    "show_versions",
    "topology_figure",
    "version_table",
]

# Without the notebook extra a view says in one line what to install (ncclnb.views._deps).
from ._deps import needs_views  # noqa: E402

globals().update(
    {name: needs_views(value) for name, value in list(globals().items()) if name in __all__ and not isinstance(value, type)}
)
