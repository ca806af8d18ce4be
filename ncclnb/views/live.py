"""The live figure every view draws in: a small anywidget that holds one
plotly figure as JSON and draws it with plotly.js in the browser.

Why not plotly's FigureWidget: its widget state carries plotly.js (4.8 MB) in
every figure, so a notebook executed by nbconvert saved 40+ MB of it, and it
drew as soon as it was rendered, before JupyterLab had given it a width,
which left empty axes about one "Run All" in five. This widget's state is the
figure alone; plotly.js comes from the kernel once per page in a custom
message (``live_figure.js`` says how), the figure draws only once its element
has a width, and only a figure checked to have drawn hides the view's static
copy (``static_id``), so a reader sees a figure, never empty axes. The
browser reports back in ``status``: "drawn", or "failed: why".
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Optional

import anywidget
import traitlets

ESM = Path(__file__).with_name("live_figure.js")


@cache
def plotly_js() -> bytes:
    """plotly.js as plotly.py bundles it (the version its figures are written for)."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs().encode("utf-8")


def figure_json(fig) -> dict:
    """A plotly figure as the JSON plotly.js takes (numpy arrays as lists)."""
    return json.loads(fig.to_json(validate=False)) if fig is not None else {}


ClickHandler = Callable[[Any, SimpleNamespace, None], None]


class LiveFigure(anywidget.AnyWidget):
    """One plotly figure, drawn in the browser; ``replace`` swaps in another.

    ``on_click(trace, points, None)`` is called for a click on a trace, with
    the clicked trace of the current figure and ``points.xs``, ``points.ys``,
    ``points.point_inds`` (one point), as plotly's FigureWidget called its
    click callbacks. Without a figure the widget draws nothing and only
    hides the static copy ``static_id`` names (a view that is a table)."""

    _esm = ESM
    figure = traitlets.Dict().tag(sync=True)
    static_id = traitlets.Unicode("").tag(sync=True)
    redraws = traitlets.Int(0).tag(sync=True)
    status = traitlets.Unicode("").tag(sync=True)  # set by the browser

    def __init__(self, fig=None, on_click: Optional[ClickHandler] = None, static_id: str = "", **kwargs):
        super().__init__(figure=figure_json(fig), static_id=static_id, **kwargs)
        self.plotly_figure = fig
        self.on_click = on_click
        self.add_class("ncclnb-live")
        self.on_msg(self._message)

    def replace(self, fig) -> None:
        """Show ``fig`` instead of the current figure (redrawn in place)."""
        self.plotly_figure = fig
        self.figure = figure_json(fig)

    def redraw(self) -> None:
        """Ask every browser showing this figure to draw it again."""
        self.redraws += 1

    def _message(self, _widget, content, _buffers) -> None:
        if not isinstance(content, dict):
            return
        kind = content.get("kind")
        if kind == "plotly.js?":
            self.send({"kind": "plotly.js"}, buffers=[plotly_js()])
        elif kind == "click":
            self._click(content)

    def _click(self, content: dict) -> None:
        fig, curve = self.plotly_figure, content.get("curve")
        if self.on_click is None or fig is None or not isinstance(curve, int) or not 0 <= curve < len(fig.data):
            return
        point = content.get("point")
        points = SimpleNamespace(xs=[content.get("x")], ys=[content.get("y")], point_inds=[point])
        self.on_click(fig.data[curve], points, None)
