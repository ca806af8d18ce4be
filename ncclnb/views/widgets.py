"""Thin widget shells around the pure figure builders, and the public
``show_*`` / ``dashboard`` functions.

Each function returns a :class:`View`: in a kernel it renders as a live
ipywidgets box (a :class:`~ncclnb.views.live.LiveFigure` + controls + a
detail pane, updated in place), after a static copy: the view's summary and
its figure as an inline SVG drawn by :mod:`ncclnb.views.static` (no script,
no plotly.js), so GitHub's notebook renderer, nbconvert's HTML offline and
any reader without a kernel see the view, whatever order cells ran in."""

from __future__ import annotations

import uuid
from typing import Any, Callable, Iterable, Optional, Sequence, Union

from ..model import ClusterReport, Diagnosis, Finding, NodeSnapshot
from ..model.words import how_many
from ._common import esc, pick_snapshot, ranks_of, resolve, snapshots_of

DETAIL_HINT = "<i>Click a cell for details.</i>"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def figure_html(fig) -> str:
    """A plotly figure as an HTML fragment that shows without a kernel or a
    script: an inline SVG drawn by :mod:`ncclnb.views.static`."""
    from .static import figure_svg

    return f'<div class="ncclnb-static-figure">{figure_svg(fig)}</div>'


class View:
    """What ``show_*`` return: a live widget plus a static HTML copy.

    ``widget`` is the ipywidgets object; ``figure`` the pure plotly figure
    (or None); ``static_html()`` the static copy (escaped summary plus the
    figure as an inline SVG, :func:`figure_html`). ``text`` is a one-line
    summary; ``text_form``, where set, makes the full text form (what
    ``%ncclnb`` prints in a terminal), which is the view's text/plain wherever
    :func:`ncclnb.magics.renderer` says ``text``, such as a view called
    directly in a terminal IPython.

    Shown in a notebook, a view is two outputs: the static copy first, then
    the live widget. Whatever cannot run the widget (GitHub, an exported page
    offline, a notebook reopened without its kernel) shows the static copy;
    where the widget runs, the copy is hidden once the live figure has drawn
    (``reveal="figure"``, a view with figures) or once the widget is on the
    page (``reveal="render"``, and any view without a figure), so a reader
    never faces empty axes. Neither output carries plotly.js."""

    text_form: Optional[Callable[[], str]] = None

    def __init__(
        self,
        widget,
        figure=None,
        summary_html: str = "",
        text: str = "",
        parts: Sequence[View] = (),
        reveal: str = "figure",
    ):
        self.widget = widget
        self.figure = figure
        self.summary_html = summary_html
        self.text = text
        self.parts = tuple(parts)
        self.static_id = uuid.uuid4().hex
        self._static: Optional[str] = None
        self.live_figures = live_figures(widget)
        self._marker = None
        if reveal == "figure" and self.live_figures:
            for live in self.live_figures:
                live.static_id = self.static_id
        elif widget is not None:
            from .live import LiveFigure

            self._marker = LiveFigure(static_id=self.static_id)

    def plain_text(self) -> str:
        """The full text form where the frontend shows only text, else the one-line summary."""
        from .._frontend import renderer

        if self.text_form is not None and renderer() == "text":
            return self.text_form()
        return self.text or "ncclnb view"

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        printer.text("ncclnb view" if cycle else self.plain_text())

    def static_html(self) -> str:
        if self._static is None:
            pieces = [f'<div class="ncclnb-static" data-ncclnb-static="{self.static_id}">{self.summary_html}']
            if self.figure is not None:
                pieces.append(figure_html(self.figure))
            for part in self.parts:
                pieces.append(part.static_html())
            pieces.append("</div>")
            self._static = "".join(pieces)
        return self._static

    def _repr_mimebundle_(self, include=None, exclude=None):
        """The static copy: text/plain and text/html (summary + static figure).
        The live widget goes out beside it (:meth:`display`)."""
        return {"text/plain": self.plain_text(), "text/html": self.static_html()}

    def display(self, plain: Optional[str] = None) -> None:
        """Show the view: the static copy (with ``plain`` as its text/plain,
        default :meth:`plain_text`), then the live widget, each an output of
        its own (see the class)."""
        from IPython.display import display

        display({"text/plain": self.plain_text() if plain is None else plain, "text/html": self.static_html()}, raw=True)
        for live in (self.widget, self._marker):
            ref = widget_view(live)
            if ref is not None:
                display({"text/plain": "", WIDGET_MIME: ref}, raw=True)

    def _ipython_display_(self) -> None:
        self.display()

    def redraw(self) -> None:
        """Draw every live figure of the view again (where one could not draw)."""
        for live in self.live_figures:
            live.redraw()

    def __repr__(self) -> str:
        return self.text or "ncclnb view"


def live_figures(widget) -> list:
    """The live figures in a widget tree, in order."""
    from .live import LiveFigure

    found, stack = [], [widget]
    while stack:
        node = stack.pop()
        if isinstance(node, LiveFigure):
            found.append(node)
        stack.extend(reversed(getattr(node, "children", ()) or ()))
    return found


def widget_view(widget) -> Optional[dict]:
    """The widget-view reference a frontend renders ``widget`` from, or None."""
    if widget is None:
        return None
    bundle = widget._repr_mimebundle_()
    if isinstance(bundle, tuple):
        bundle = bundle[0]
    return bundle.get(WIDGET_MIME) if isinstance(bundle, dict) else None


# --- plumbing -------------------------------------------------------------


def with_text_form(view: View, name: str, *args, **kwargs) -> View:
    """``view`` whose full text form is the one the magics print for the
    view ``name`` of ``args`` (:mod:`ncclnb.views.text`): made only when a
    text-only frontend shows the view, so the text is not written twice."""

    def text_form() -> str:
        from .text import view_text

        return view_text(name, *args, **kwargs)

    view.text_form = text_form
    return view


def _detail_pane():
    import ipywidgets as w

    pane = w.HTML(value=DETAIL_HINT, layout=w.Layout(min_height="3em", border="1px solid #d9d9d9", padding="4px"))
    pane.add_class("ncclnb-detail")
    return pane


def _clicked(points):
    """(x, y) of the first clicked point, or None."""
    if not points.point_inds:
        return None
    return points.xs[0], points.ys[0], points.point_inds[0]


def _show_hover_on_click(detail):
    """A click handler that shows the clicked element's hover text (escaped
    by the figure builder) in the ``detail`` pane: a heatmap's cell, or the
    clicked point or bar of any other trace."""

    def on_click(trace, points, _state):
        hit = _clicked(points)
        if hit is None or trace.hovertext is None:
            return
        x, y, k = hit
        try:
            detail.value = (
                trace.hovertext[list(trace.y).index(y)][list(trace.x).index(x)] if trace.type == "heatmap" else trace.hovertext[k]
            )
        except (ValueError, IndexError, TypeError):
            return

    return on_click


PICKER_OPTIONS = 200  # hosts listed in the host picker; past that, type a hostname


def _host_picker(snaps: Sequence[NodeSnapshot], value: str):
    """A dropdown of the hosts, or for a large report a box to type a
    hostname in (suggesting the first PICKER_OPTIONS), so 6,250 nodes do not
    become 6,250 options in the page."""
    import ipywidgets as w

    names = [s.hostname for s in snaps]
    if len(names) <= PICKER_OPTIONS:
        picker = w.Dropdown(options=names, value=value, description="host")
    else:
        picker = w.Combobox(
            options=names[:PICKER_OPTIONS],
            value=value,
            description="host",
            placeholder=f"one of {len(names)} hostnames",
            ensure_option=False,
            continuous_update=False,
        )
    picker.add_class("ncclnb-host")
    return picker


def _snapshot_of(target, host):
    """The snapshot of ``host`` in ``target``, or None for a name it lacks (typed by hand)."""
    try:
        return pick_snapshot(target, host)
    except ValueError:
        return None


# --- topology ---------------------------------------------------------------


def _parse_gpu_list(text: str, snap: NodeSnapshot) -> Optional[list[int]]:
    tokens = [t.strip() for t in text.replace(" ", ",").split(",") if t.strip()]
    if not tokens:
        return None
    by_index = {g.index: p for p, g in enumerate(snap.gpus)}
    return sorted({by_index[int(t)] for t in tokens if t.isascii() and t.isdigit() and int(t) in by_index})


def show_topology(target, host: Optional[str] = None, highlight: Optional[Iterable[int]] = None) -> View:
    """GPU x GPU / GPU x NIC link matrix of one host, as a live widget.

    ``target`` is a NodeSnapshot, ClusterReport, bundled machine name or
    path; ``host`` picks a node of a report; ``highlight`` lists GPU
    positions in use (default: rank table, else CUDA_VISIBLE_DEVICES).
    Click a cell for its details; type GPU indices to change the set. A
    node too large to draw pair by pair shows blocks of GPUs: click a block
    to zoom into it (its pairs, or smaller blocks), "whole node" to go back."""
    import ipywidgets as w

    from ._common import gpus_in_use
    from .topology import block_details, topology_details, topology_figure
    from .live import LiveFigure

    target = resolve(target)
    snaps = snapshots_of(target)
    ranks = ranks_of(target)
    state: dict[str, Any] = {
        "snap": pick_snapshot(target, host),
        "highlight": None if highlight is None else list(highlight),
        "rows": None,
        "cols": None,
    }
    fig = topology_figure(state["snap"], state["highlight"], ranks)
    state["meta"] = dict(fig.layout.meta or {})
    detail = _detail_pane()
    back = w.Button(
        description="whole node", tooltip="back to the blocks of the whole node", layout=w.Layout(width="110px", display="none")
    )
    back.add_class("ncclnb-topology-back")

    def on_click(trace, points, _state):
        hit = _clicked(points)
        if hit is None:
            return
        x, y, _ = hit
        snap, meta = state["snap"], state["meta"]
        xs, ys = list(trace.x), list(trace.y)
        if x not in xs or y not in ys:
            return
        xi, yi = xs.index(x), ys.index(y)
        if meta.get("mode") == "blocks":
            rows = tuple(meta["row_blocks"][yi])
            col_blocks = meta["col_blocks"]
            if xi < len(col_blocks):
                cols = tuple(col_blocks[xi])
                detail.value = block_details(snap, rows, cols=cols)
            else:
                nics = tuple(meta["nic_blocks"][xi - len(col_blocks)])
                cols = (0, 0)  # the NIC columns only
                detail.value = block_details(snap, rows, nics=nics)
            state["rows"], state["cols"] = rows, cols
            redraw(keep_detail=True)
            return
        r0, _ = meta.get("rows", [0, len(snap.gpus)])
        c0, c1 = meta.get("cols", [0, len(snap.gpus)])
        column = c0 + xi if xi < c1 - c0 else len(snap.gpus) + (xi - (c1 - c0))
        detail.value = topology_details(snap, r0 + yi, column)

    slot = LiveFigure(fig, on_click)

    def in_use_text(snap):
        used = state["highlight"] if state["highlight"] is not None else gpus_in_use(snap, ranks)
        return "" if used is None else ",".join(str(snap.gpus[p].index) for p in used)

    gpus = w.Text(
        value=in_use_text(state["snap"]),
        description="GPUs in use",
        placeholder="e.g. 0,1 (empty: all)",
        continuous_update=False,
        style={"description_width": "initial"},
    )
    gpus.add_class("ncclnb-gpus")

    def redraw(keep_detail: bool = False):
        new = topology_figure(state["snap"], state["highlight"], ranks, rows=state["rows"], cols=state["cols"])
        state["meta"] = dict(new.layout.meta or {})
        slot.replace(new)
        back.layout.display = "none" if state["rows"] is None else None
        if not keep_detail:
            detail.value = DETAIL_HINT

    def on_back(_button):
        state["rows"] = state["cols"] = None
        redraw()

    back.on_click(on_back)

    def on_gpus(change):
        state["highlight"] = _parse_gpu_list(change["new"], state["snap"])
        redraw()

    gpus.observe(on_gpus, names="value")
    controls = [gpus, back]
    if len(snaps) > 1:
        picker = _host_picker(snaps, state["snap"].hostname)

        def on_host(change):
            snap = _snapshot_of(target, change["new"])
            if snap is None:
                return
            state["snap"] = snap
            state["highlight"] = None
            state["rows"] = state["cols"] = None
            gpus.unobserve(on_gpus, names="value")
            gpus.value = in_use_text(state["snap"])
            gpus.observe(on_gpus, names="value")
            redraw()

        picker.observe(on_host, names="value")
        controls.insert(0, picker)
    box = w.VBox([w.HBox(controls), slot, detail])
    box.add_class("ncclnb-topology")
    snap = state["snap"]
    return with_text_form(
        View(
            box,
            fig,
            f"<h4>Topology of {esc(snap.hostname)}</h4>",
            f"ncclnb topology view: {snap.hostname}, {len(snap.gpus)} GPUs",
        ),
        "show_topology",
        target,
        host=snap.hostname,
    )


# --- NUMA -------------------------------------------------------------------


def show_numa(target, host: Optional[str] = None) -> View:
    """NUMA placement of one host (CPUs, GPUs, NICs, ranks' CPU affinity),
    as a live widget; click a GPU, NIC or rank for its details."""
    import ipywidgets as w

    from .numa import affinity_findings, numa_figure, numa_summary
    from .live import LiveFigure

    target = resolve(target)
    snaps = snapshots_of(target)
    ranks = ranks_of(target)
    state = {"snap": pick_snapshot(target, host)}
    # the check runs once for the job; every host's figure and the summary read its verdicts
    job = target if isinstance(target, ClusterReport) else ClusterReport(snapshots=snaps, ranks=ranks)
    findings = affinity_findings(job)
    fig = numa_figure(state["snap"], ranks, findings)
    detail = _detail_pane()
    detail.value = "<i>Click a GPU, NIC or rank for details.</i>"
    slot = LiveFigure(fig, _show_hover_on_click(detail))
    children = [slot, detail]
    if len(snaps) > 1:
        picker = _host_picker(snaps, state["snap"].hostname)

        def on_host(change):
            snap = _snapshot_of(target, change["new"])
            if snap is None:
                return
            state["snap"] = snap
            slot.replace(numa_figure(state["snap"], ranks, findings))

        picker.observe(on_host, names="value")
        children.insert(0, picker)
    box = w.VBox(children)
    box.add_class("ncclnb-numa")
    snap = state["snap"]
    return with_text_form(
        View(
            box,
            fig,
            f"<h4>NUMA placement on {esc(snap.hostname)}</h4>" + numa_summary(snap, ranks, findings),
            f"ncclnb NUMA view: {snap.hostname}",
        ),
        "show_numa",
        target,
        host=snap.hostname,
    )


# --- ranks --------------------------------------------------------------------


def show_ranks(target, page_size: int = 32) -> View:
    """The rank map of a ClusterReport (nodes x local slots) as a live
    widget: anomalous nodes first, pages of ``page_size`` nodes, click a
    cell to see why it is coloured."""
    import ipywidgets as w

    from .ranks import analyse_ranks, cell_hover, rank_map_figure, rank_summary_html, slot_block_html
    from .live import LiveFigure

    target = resolve(target)
    if not isinstance(target, ClusterReport) or not target.ranks:
        note = "<p>No rank table: the rank map needs a ClusterReport with ranks.</p>"
        return View(w.HTML(note), None, note, "ncclnb rank map: no rank table")
    rm = analyse_ranks(target)
    state = {"page": 0, "only": False}
    fig = rank_map_figure(target, 0, page_size, rank_map=rm)
    blocks = (fig.layout.meta or {}).get("slot_blocks")  # the same for every page: they depend on rm only
    detail = _detail_pane()

    def on_click(trace, points, _state):
        hit = _clicked(points)
        if hit is None:
            return
        x, y, _ = hit
        nodes = rm.node_order(state["only"])[state["page"] * page_size : (state["page"] + 1) * page_size]
        if blocks:
            try:
                ni, (a, b) = nodes[int(y)], blocks[list(trace.x).index(x)]
            except (ValueError, IndexError):
                return
            detail.value = slot_block_html(rm, ni, a, b)
            return
        try:
            ni, s = nodes[int(y)], int(str(x).split()[-1])
        except (ValueError, IndexError):
            return
        cell = rm.cells.get((ni, s))
        detail.value = cell_hover(rm, cell) if cell else f"{esc(rm.hosts[ni])}, slot {s}: no rank"

    slot = LiveFigure(fig, on_click)
    pages = max(1, -(-len(rm.hosts) // page_size))
    pager = w.BoundedIntText(
        value=1,
        min=1,
        max=pages,
        description=f"page (of {pages})",
        style={"description_width": "initial"},
        layout=w.Layout(width="180px"),
    )
    only = w.Checkbox(value=False, description="only nodes with anomalies", indent=False)

    def redraw(_change=None):
        state["page"], state["only"] = pager.value - 1, only.value
        n = len(rm.node_order(only.value))
        pager.max = max(1, -(-n // page_size))
        pager.description = f"page (of {pager.max})"
        slot.replace(rank_map_figure(target, state["page"], page_size, only.value, rank_map=rm))
        detail.value = DETAIL_HINT

    pager.observe(redraw, names="value")
    only.observe(redraw, names="value")
    summary = rank_summary_html(rm)
    box = w.VBox([w.HTML(summary), w.HBox([pager, only]), slot, detail])
    box.add_class("ncclnb-ranks")
    return with_text_form(
        View(box, fig, "<h4>Rank map</h4>" + summary, f"ncclnb rank map: {len(rm.hosts)} nodes, WORLD_SIZE {rm.world_size}"),
        "show_ranks",
        target,
    )


# --- versions -----------------------------------------------------------------


def show_versions(target) -> View:
    """Version matrix (nodes x components) with differing cells highlighted;
    a toggle keeps only the columns that differ."""
    import ipywidgets as w

    from .versions import version_table

    target = resolve(target)
    html = version_table(target).to_html()
    table = w.HTML(html)
    only = w.Checkbox(value=False, description="only components that differ", indent=False)

    def redraw(change):
        table.value = version_table(target, only_differing=change["new"]).to_html()

    only.observe(redraw, names="value")
    box = w.VBox([only, table])
    box.add_class("ncclnb-versions")
    n = len(snapshots_of(target))
    return with_text_form(View(box, None, html, f"ncclnb version matrix: {how_many(n, 'node')}"), "show_versions", target)


# --- diagnosis ----------------------------------------------------------------


def show_diagnosis(diagnosis: Union[Diagnosis, Sequence[Finding]], title: str = "Findings") -> View:
    """A Diagnosis (or a list of findings, e.g. from ``ncclnb.check``) as
    ranked cards with evidence, fix and guide link."""
    import ipywidgets as w

    from .diagnosis import diagnosis_html, findings_html

    if isinstance(diagnosis, Diagnosis):
        html, n = diagnosis_html(diagnosis), len(diagnosis.findings)
    else:
        findings = list(diagnosis)
        html, n = findings_html(findings, title), len(findings)
    box = w.VBox([w.HTML(html)], layout=w.Layout())
    box.add_class("ncclnb-diagnosis-view")
    return with_text_form(View(box, None, html, f"ncclnb diagnosis: {how_many(n, 'finding')}"), "show_diagnosis", diagnosis)


def run_checks(target) -> tuple[list[Finding], Optional[str]]:
    """Findings of ``ncclnb.checks.check`` or, when the checks fail, no
    findings and the reason."""
    from ..checks import check

    try:
        return list(check(target)), None
    except Exception as exc:  # a broken check must not take the dashboard down
        return [], f"checks failed: {type(exc).__name__}: {exc}"


def report_findings(report: ClusterReport) -> tuple[list[Finding], Optional[str]]:
    """The findings a view of ``report`` marks: the report's own (what the
    survey's checks said when it wrote it) when it carries any, else
    :func:`run_checks` (then with its problem, if any)."""
    if report.findings:
        return list(report.findings), None
    return run_checks(report)


# --- dashboard ----------------------------------------------------------------


def dashboard(snapshot_or_report, diagnosis: Optional[Diagnosis] = None) -> View:
    """Tabs of every view: findings (checks, and the diagnosis if given),
    topology, NUMA, rank map and job map (for reports with ranks), link
    results (for reports with a link test) and versions. The job map and
    link results mark what these same findings name."""
    import ipywidgets as w

    from .diagnosis import diagnosis_html, findings_html

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
        from .jobmap import show_job_map

        parts.append(("Ranks", show_ranks(target)))
        parts.append(("Job map", show_job_map(target, None if problem else findings)))
    if isinstance(target, ClusterReport) and target.links:
        from .links import show_links

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
