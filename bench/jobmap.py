"""The job map at 1024 nodes x 8 GPUs, against the obvious alternative; JSON.

    python bench/jobmap.py              # 1024 x 8, best of 3
    python bench/jobmap.py --nodes 256 --repeat 5

The report is bench/synthetic.py's ``big_report`` (anomalies planted on five
nodes) and its findings are ``ncclnb.check`` of it, measured first
(``check_s``). Then:

- ``analyse_s``: ``analyse_job`` once for the job (which ranks and hosts the
  findings name, the page order);
- ``page_s``: ``job_map_figure`` of one page (32 nodes) from that analysis,
  the figure the widget redraws when the page changes; ``page_json_bytes``
  its plotly JSON (what a FigureWidget sends) and ``page_static_bytes`` its
  inline-SVG copy;
- ``show_s``: the whole ``show_job_map`` call (checks not included:
  findings passed in);
- ``naive_s`` / ``naive_json_bytes``: the obvious alternative, one plotly
  Scatter trace per rank of the whole job (hover = its host, GPU and
  findings), built with ``go.Figure(traces)``, as a first attempt would.

Target: a page in well under 1 s.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import best_of  # noqa: E402
from synthetic import big_report  # noqa: E402

import ncclnb  # noqa: E402
from ncclnb.views.jobmap import PAGE_SIZE, analyse_job, job_map_figure, show_job_map  # noqa: E402
from ncclnb.views.static import figure_svg  # noqa: E402


def naive_figure(report, findings):
    """One Scatter trace per rank: x = its CUDA index, y = its node."""
    import plotly.graph_objects as go

    named = {}
    for f in findings:
        for r in f.ranks:
            named.setdefault(r, []).append(f.title)
    row = {s.hostname: i for i, s in enumerate(report.snapshots)}
    traces = [
        go.Scatter(
            x=[r.cuda_index],
            y=[row.get(r.host, -1)],
            mode="markers+text",
            text=[str(r.rank)],
            name=f"rank {r.rank}",
            hovertext=[f"{r.host} cuda:{r.cuda_index} " + "; ".join(named.get(r.rank, []))],
            marker=dict(color="red" if r.rank in named else "green"),
        )
        for r in report.ranks
    ]
    return go.Figure(traces)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1024)
    ap.add_argument("--per-node", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    report = big_report(args.nodes, args.per_node)
    show_job_map(big_report(2, 2), ())  # first use: plotly and ipywidgets imports, not counted below
    check_s, findings = best_of(lambda: ncclnb.check(report), 1)
    analyse_s, jm = best_of(lambda: analyse_job(report, findings), args.repeat)
    page_s, fig = best_of(lambda: job_map_figure(report, page_size=PAGE_SIZE, job_map=jm), args.repeat)
    last_s, _ = best_of(lambda: job_map_figure(report, page=jm.pages() - 1, job_map=jm), args.repeat)
    show_s, view = best_of(lambda: show_job_map(report, findings), args.repeat)
    naive_s, naive = best_of(lambda: naive_figure(report, findings), 1)
    out = {
        "nodes": args.nodes,
        "ranks": len(report.ranks),
        "findings": len(findings),
        "nodes_named": sum(1 for h in jm.hosts if h in jm.host_marks),
        "pages": jm.pages(),
        "check_s": round(check_s, 4),
        "analyse_s": round(analyse_s, 4),
        "page_s": round(page_s, 4),
        "last_page_s": round(last_s, 4),
        "show_s": round(show_s, 4),
        "page_json_bytes": len(fig.to_json().encode()),
        "page_static_bytes": len(figure_svg(fig).encode()),
        "show_static_html_bytes": len(view.static_html().encode()),
        "naive_s": round(naive_s, 4),
        "naive_json_bytes": len(naive.to_json().encode()),
        "naive_traces": len(naive.data),
    }
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
