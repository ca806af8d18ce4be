"""The first view in a fresh interpreter, over a warm ``import plotly.graph_objects``.

Each run is a new process that imports plotly.graph_objects first (untimed:
the "warm" import the target is set over), then times ``import ncclnb``,
loading a bundled machine and ``ncclnb.show_topology`` on it: the first
view a person sees in a new kernel. Two ways, in the same run:

* ``shipped``: as ncclnb ships (the figure in ncclnb's own live figure,
  ncclnb/views/live.py);
* ``figurewidget``: the same view, plus wrapping its figure in plotly's
  FigureWidget inside the timed span, as the views did before (FigureWidget
  imports nbformat, jsonschema and, where installed, the IRI grammar
  ``rfc3987_syntax`` compiles at import).

Prints JSON: per way the median and best of ``--runs`` runs, the ratio, and
whether the shipped first view is under the 1 s target.

Usage: python bench/first_view.py [--runs 5] [--machine a30-nvlink-pairs]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

_CHILD = r"""
import json, sys, time
import plotly.graph_objects
t0 = time.perf_counter()
import ncclnb
from ncclnb.recorded import load
snap = load(sys.argv[2])
t1 = time.perf_counter()
view = ncclnb.show_topology(snap)
if sys.argv[1] == "figurewidget":
    plotly.graph_objects.FigureWidget(view.figure)
t2 = time.perf_counter()
assert view.widget is not None and view.figure is not None and view.figure.data
print(json.dumps({"total_s": t2 - t0, "view_s": t2 - t1,
                  "grammar_compiled": "rfc3987_syntax.syntax_helpers" in sys.modules}))
"""


def _run(way: str, machine: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, way, machine], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{way} run failed: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}")
    return json.loads(out.stdout)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="fresh processes per way (default 5)")
    ap.add_argument("--machine", default="a30-nvlink-pairs", help="bundled machine to show (default a30-nvlink-pairs)")
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    result: dict = {"machine": args.machine, "runs": args.runs, "target_s": 1.0}
    for way in ("shipped", "figurewidget"):
        runs = [_run(way, args.machine) for _ in range(args.runs)]
        totals = [r["total_s"] for r in runs]
        result[way] = {
            "median_s": round(statistics.median(totals), 3),
            "best_s": round(min(totals), 3),
            "grammar_compiled": runs[0]["grammar_compiled"],
        }
    result["speedup"] = round(result["figurewidget"]["median_s"] / result["shipped"]["median_s"], 2)
    result["under_target"] = result["shipped"]["median_s"] < result["target_s"]
    result["note"] = (
        "seconds from after a warm 'import plotly.graph_objects' to the first view built "
        "(import ncclnb + load a bundled machine + show_topology), each run a fresh process"
    )
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
