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
from typing import Any, Callable, Optional, Sequence

import ipywidgets as w
import traitlets

from ..model import NodeSnapshot
from ._common import pick_snapshot, snapshots_of

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


def detail_pane():
    import ipywidgets as w

    pane = w.HTML(value=DETAIL_HINT, layout=w.Layout(min_height="3em", border="1px solid #d9d9d9", padding="4px"))
    pane.add_class("ncclnb-detail")
    return pane


def clicked(points):
    """(x, y) of the first clicked point, or None."""
    if not points.point_inds:
        return None
    return points.xs[0], points.ys[0], points.point_inds[0]


def hover_on_click(detail):
    """A click handler that shows the clicked element's hover text (escaped
    by the figure builder) in the ``detail`` pane: a heatmap's cell, or the
    clicked point or bar of any other trace."""

    def on_click(trace, points, _state):
        hit = clicked(points)
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


class PagedFigure(w.VBox):
    """A figure of many nodes shown a page at a time: a summary, a page
    box and an "only the marked nodes" box, the live figure, a detail pane.
    Its state is ``page`` (from 0) and ``only_marked``; the boxes set them
    and a change redraws the figure in place. A view subclasses it with
    :meth:`page_count` and :meth:`page_figure`."""

    page = traitlets.Int(0)
    only_marked = traitlets.Bool(False)

    def __init__(self, summary_html: str, figure, only_label: str, css_class: str, on_click=None):
        """``on_click(trace, points, state)`` handles a click on the figure;
        by default the clicked element's hover text fills the detail pane."""
        from .live import LiveFigure

        self.detail = detail_pane()
        self.live = LiveFigure(figure, on_click or hover_on_click(self.detail))
        pages = self.page_count()
        self.pager = w.BoundedIntText(
            value=1,
            min=1,
            max=pages,
            description=f"page (of {pages})",
            style={"description_width": "initial"},
            layout=w.Layout(width="180px"),
        )
        self.pager.add_class(f"{css_class}-page")
        self.only = w.Checkbox(value=False, description=only_label, indent=False)
        super().__init__([w.HTML(summary_html), w.HBox([self.pager, self.only]), self.live, self.detail])
        self.add_class(css_class)
        self.pager.observe(lambda change: setattr(self, "page", change["new"] - 1), names="value")
        self.only.observe(lambda change: setattr(self, "only_marked", change["new"]), names="value")

    def page_count(self) -> int:
        raise NotImplementedError

    def page_figure(self):
        raise NotImplementedError

    @traitlets.observe("page", "only_marked")
    def _redraw(self, _change) -> None:
        pages = self.page_count()
        if self.page > pages - 1:
            self.page = pages - 1  # past the last page (fewer pages of only the marked nodes): that change redraws
            return
        with self.pager.hold_trait_notifications():  # the controls follow the state, validated together
            self.pager.max = pages
            self.pager.value = self.page + 1
        self.pager.description = f"page (of {pages})"
        self.live.replace(self.page_figure())
        self.detail.value = DETAIL_HINT


PICKER_OPTIONS = 200  # hosts listed in the host picker; past that, type a hostname


def host_picker(snaps: Sequence[NodeSnapshot], value: str):
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


def snapshot_of(target, host):
    """The snapshot of ``host`` in ``target``, or None for a name it lacks (typed by hand)."""
    try:
        return pick_snapshot(target, host)
    except ValueError:
        return None


class OneHostView(w.VBox):
    """What a view of one host of its target shares: ``host``, a hostname of
    the target (any other name is refused: TraitError), ``snapshot`` its
    snapshot, and :meth:`picker` where the target has several hosts. A
    subclass sets ``target`` and ``snapshot`` before building its children,
    and redraws in its ``@traitlets.observe("host")`` method."""

    host = traitlets.Unicode()
    target: Any
    snapshot: NodeSnapshot

    @traitlets.default("host")
    def _first_host(self) -> str:
        return self.snapshot.hostname

    @traitlets.validate("host")
    def _a_host_of_the_target(self, proposal) -> str:
        if snapshot_of(self.target, proposal["value"]) is None:
            raise traitlets.TraitError(f"{proposal['value']!r} is not a host of this view")
        return proposal["value"]

    def picker(self):
        """The host picker where the target has several hosts, else None."""
        snaps = snapshots_of(self.target)
        if len(snaps) < 2:
            return None
        picker = host_picker(snaps, self.snapshot.hostname)
        picker.observe(self._pick, names="value")
        return picker

    def _pick(self, change) -> None:
        try:
            self.host = change["new"]
        except traitlets.TraitError:  # a name typed into a large report's picker that is no host of it changes nothing
            pass
