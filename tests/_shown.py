"""What a person sees of displayed outputs: a view goes out as its static
copy followed by its live widget (and, for a view without a figure, a marker
widget), each an output of its own (ncclnb.views.widgets.View.display). The
tests of the magics speak of "the view shown": this folds a view's widget
outputs into the static copy before them, so each view is one bundle holding
its text/plain, its text/html and its widget reference."""

from __future__ import annotations

WIDGET = "application/vnd.jupyter.widget-view+json"


def shown_bundles(outputs) -> list[dict]:
    bundles: list[dict] = []
    for out in outputs:
        data = dict(getattr(out, "data", out))
        widget_only = WIDGET in data and not data.get("text/plain") and "text/html" not in data
        if widget_only and bundles and "text/html" in bundles[-1]:
            bundles[-1].setdefault(WIDGET, data[WIDGET])  # the view's own widget first, a marker after it
            continue
        bundles.append(data)
    return bundles


def drawn(live):
    """The figure a live figure (ncclnb.views.live.LiveFigure) sends the
    browser, read back from its synced state as a plotly Figure."""
    import plotly.graph_objects as go

    return go.Figure(live.figure)


def browser_click(live, curve: int, x, y, point=None) -> None:
    """A click on trace ``curve`` at (x, y), delivered as the browser's half
    of the live figure sends it: a custom widget message into the widget's
    own message handler."""
    content = {"kind": "click", "curve": curve, "x": x, "y": y, "point": point}
    live._handle_msg({"content": {"data": {"method": "custom", "content": content}}, "buffers": []})
