"""Build every view at scale and print JSON: build time and bytes sent.

    python bench/views.py            # both scenarios
    python bench/views.py --repeat 3 # best of 3

Scenarios: a synthetic report of 1024 nodes x 8 GPUs, and one node with 72
GPUs in one NVLink domain (NV18 everywhere), from bench/synthetic.py.
For each view: ``build_s`` is the pure builder (figure / Styler HTML / HTML),
``figure_json_bytes`` the plotly figure JSON the live figure sends
(ncclnb/views/live.py; plotly.js, about 4.8 MB, goes once a page in a custom
message and is not counted), ``static_html_bytes`` the static copy (the
figure as inline SVG), ``widget_s`` the whole ``show_*`` call
(widget + fallback HTML). Targets: under 1 s and under 5 MB each. The
one-time cost of importing plotly/pandas/ipywidgets on first use is
measured on a tiny report first and printed as ``first_use_imports_s``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import best_of  # noqa: E402
from synthetic import big_report, nvl72_report  # noqa: E402

from ncclnb.model import Diagnosis, Evidence, Finding, RankStatus  # noqa: E402
from ncclnb.views import (  # noqa: E402
    dashboard,
    diagnosis_html,
    numa_figure,
    run_checks,
    rank_map_figure,
    show_diagnosis,
    show_numa,
    show_ranks,
    show_topology,
    show_versions,
    topology_figure,
    version_table,
)

LIMIT_S, LIMIT_BYTES = 1.0, 5 * 1024 * 1024


def _diagnosis(report) -> Diagnosis:
    ev = tuple(
        Evidence(
            f"rank{r}.log",
            100 + r,
            f"[rank{r}]: Watchdog caught collective operation timeout: "
            f"WorkNCCL(SeqNum=1474236, OpType=_ALLGATHER_BASE) ran for 600068 milliseconds",
        )
        for r in range(64)
    )
    findings = tuple(
        Finding(
            rule=f"bench.{i}",
            category="collective_desync",
            severity="error",
            confidence=0.5,
            title=f"finding {i}",
            evidence=ev,
            fix="make every rank run the same collectives",
            ranks=tuple(range(64)),
        )
        for i in range(10)
    )
    ranks = tuple(
        RankStatus(rank=r.rank, host=r.host, local_rank=r.local_rank, pid=r.pid, last_seq=1474236, last_op="_ALLGATHER_BASE")
        for r in report.ranks
    )
    return Diagnosis(findings=findings, ranks=ranks, sources=("bench",), lines_read=len(ranks) * 40)


def bench(name, report, repeat):
    snap = report.snapshots[0]
    diag = _diagnosis(report)
    rows = []

    def row(view, build, show, size_of):
        build_s, value = best_of(build, repeat)
        widget_s, shown = best_of(show, repeat)
        static = shown.static_html()
        rows.append(
            {
                "scenario": name,
                "view": view,
                "build_s": round(build_s, 4),
                "widget_s": round(widget_s, 4),
                **size_of(value),
                "static_html_bytes": len(static.encode()),
            }
        )

    fig_size = lambda fig: {"figure_json_bytes": len(fig.to_json().encode())}  # noqa: E731
    html_size = lambda html: {"html_bytes": len(html.encode())}  # noqa: E731
    row("topology", lambda: topology_figure(snap, None, report.ranks), lambda: show_topology(report), fig_size)
    row("numa", lambda: numa_figure(snap, report.ranks), lambda: show_numa(report), fig_size)
    row("ranks", lambda: rank_map_figure(report), lambda: show_ranks(report), fig_size)
    row("versions", lambda: version_table(report).to_html(), lambda: show_versions(report), html_size)
    row("diagnosis", lambda: diagnosis_html(diag), lambda: show_diagnosis(diag), html_size)
    # the dashboard also runs ncclnb.checks.check over the whole report
    row("dashboard", lambda: dashboard(report, diag).static_html(), lambda: dashboard(report, diag), html_size)
    checks_s, _ = best_of(lambda: run_checks(report), 1)
    rows[-1]["of_which_checks_s"] = round(checks_s, 4)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv)
    # first use imports plotly, pandas, jinja2 and ipywidgets: timed apart from the views
    t = time.perf_counter()
    bench("warm-up", big_report(nodes=2, per_node=2), 1)
    warm = time.perf_counter() - t
    t = time.perf_counter()
    big = big_report()
    nvl = nvl72_report()
    made = time.perf_counter() - t
    rows = bench("1024 nodes x 8 GPUs", big, args.repeat) + bench("1 node x 72 GPUs NV18", nvl, args.repeat)
    for r in rows:
        size = max(v for k, v in r.items() if k.endswith("bytes"))
        r["within_targets"] = r["build_s"] < LIMIT_S and r["widget_s"] < LIMIT_S and size < LIMIT_BYTES
    print(
        json.dumps(
            {
                "first_use_imports_s": round(warm, 2),
                "synthetic_data_s": round(made, 2),
                "targets": {"seconds": LIMIT_S, "bytes": LIMIT_BYTES},
                "views": rows,
            },
            indent=1,
        )
    )
    return 0 if all(r["within_targets"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
