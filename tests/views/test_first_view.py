"""The first view in a fresh interpreter imports none of what plotly's
FigureWidget pulled in (nbformat, jsonschema and the IRI grammar
``rfc3987_syntax`` compiles at import: about 2 s of a first view before the
live figure replaced FigureWidget), and still makes a live figure holding the
whole figure. Each case runs in a fresh interpreter: what is imported is the
point. The time itself is measured by bench/first_view.py, not here."""

from __future__ import annotations

import json
import subprocess
import sys


def _child(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_first_view_imports_nothing_of_figurewidget_and_holds_the_figure():
    got = _child(
        r"""
import json, sys
import ncclnb
from ncclnb.recorded import load
view = ncclnb.show_topology(load("a30-nvlink-pairs"))
live = view.live_figures[0]
print(json.dumps({
    "imported": sorted(m for m in ("nbformat", "jsonschema", "rfc3987_syntax") if m in sys.modules),
    "traces": len(live.figure["data"]), "figure_traces": len(view.figure.data),
    "static_id": live.static_id == view.static_id,
}))
"""
    )
    assert got["imported"] == []
    assert got["traces"] == got["figure_traces"] > 0
    assert got["static_id"] is True
