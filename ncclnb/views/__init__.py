"""Views: one module per view, each a pure figure builder and the thin widget
that shows it.

The only layer that imports plotly, pandas and ipywidgets. A view's module
holds its pure builder (facts + findings in, a plotly figure, a pandas Styler
or HTML out; no widget, no display) and, where the view has state a person
changes, a small ipywidgets class whose traitlets hold that state
(``TopologyWidget.host``, ``RankMapWidget.page``...), and its ``show_*``
function, which returns a :class:`~ncclnb.views.widgets.View`. The names
below are imported on first use, so importing this package stays cheap.

- ``topology``: :func:`topology_figure`, :func:`show_topology`
- ``numa``: :func:`numa_figure`, :func:`show_numa`
- ``ranks``: :func:`rank_map_figure`, :func:`analyse_ranks`, :func:`show_ranks`
- ``versions``: :func:`version_table`, :func:`show_versions`
- ``diagnosis``: :func:`diagnosis_html`, :func:`findings_html`, :func:`show_diagnosis`
- ``dashboard``: :func:`dashboard` (tabs of every view)
- ``alignment``: :func:`alignment_figure`, :func:`show_alignment` (flight recorder: ranks x sequence ids)
- ``pairing``: :func:`pairing_figure`, :func:`show_pairing` (sender x receiver)
- ``jobmap``: :func:`analyse_job`, :func:`job_map_figure`, :func:`show_job_map` (the survey's report)
- ``links``: :func:`busbw_figure`, :func:`pairs_figure`, :func:`show_links` (the survey's link test)

What every view's widget is made of (:class:`View`, the live figure, the
detail pane, the host picker) is in ``widgets`` and ``live``; the static SVG
copy in ``static``; the text forms the magics print in a terminal in ``text``.
"""

from __future__ import annotations

import importlib

# name -> the module of this package that defines it
_PUBLIC = {
    "View": "widgets",
    "run_checks": "_common",
    "topology_figure": "topology",
    "show_topology": "topology",
    "numa_figure": "numa",
    "show_numa": "numa",
    "analyse_ranks": "ranks",
    "rank_map_figure": "ranks",
    "show_ranks": "ranks",
    "version_table": "versions",
    "show_versions": "versions",
    "diagnosis_html": "diagnosis",
    "findings_html": "diagnosis",
    "show_diagnosis": "diagnosis",
    "dashboard": "dashboard",
    "alignment_figure": "alignment",
    "show_alignment": "alignment",
    "pairing_figure": "pairing",
    "show_pairing": "pairing",
    "analyse_job": "jobmap",
    "job_map_figure": "jobmap",
    "show_job_map": "jobmap",
    "busbw_figure": "links",
    "pairs_figure": "links",
    "show_links": "links",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    """Import the module that defines ``name`` on first use. Without the
    notebook extra a view says in one line what to install
    (:mod:`ncclnb.views._deps`), whether its module or its call needs it."""
    from ._deps import needs_views, views_not_installed

    try:
        module = _PUBLIC[name]
    except KeyError:
        raise AttributeError(f"module 'ncclnb.views' has no attribute {name!r}") from None
    try:
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    except ImportError as exc:
        raise views_not_installed(exc) from None
    if not isinstance(value, type):
        value = needs_views(value)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
