"""The link results view: what the survey's link test measured. One figure of
busbw by message size, one line per collective, the size axis in powers of
two, with the "is this normal?" band of :func:`ncclnb.model.bandwidth.reference_for`
where one applies; one figure of the point-to-point pairs of the ring, the
pairs named by the ``link_*`` findings highlighted.

The verdict (low, normal, too small to judge, a fallback to sockets) is the
checks' (``ncclnb/checks/links.py``): this view draws the measurements, the
reference row and the findings, and never compares them itself.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

import ipywidgets as w
import traitlets

from ..errors import InputError
from ..model import ClusterReport, Finding
from ..model.bandwidth import size_text
from ..model.cluster import LinkTest
from ..model.words import how_many
from ._common import esc, report_findings, resolve, shorten
from .widgets import View, detail_pane, hover_on_click, with_text_form

NO_LINK_TEST = "no link test in this report (ran with --no-link-test?)"
COLLECTIVE_COLOURS = {"all_reduce": "#1f77b4", "all_gather": "#ff7f0e", "reduce_scatter": "#2ca02c", "all_to_all": "#9467bd"}
OTHER_COLOURS = ("#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
PAIR_COLOURS = {"named": "#d73027", "measured": "#74add1"}
PAIRS_SHOWN = 64  # pair bars drawn; past that the named pairs and the slowest, and the title says so
FINDINGS_SHOWN = 6


def link_findings(findings: Sequence[Finding]) -> list[Finding]:
    """The findings about the link test: every rule id that starts with ``link_``."""
    return [f for f in findings if isinstance(f.rule, str) and f.rule.startswith("link_")]


def _log2(size: int) -> Optional[float]:
    return math.log2(size) if isinstance(size, (int, float)) and size > 0 else None


def _colour(collective: str, k: int) -> str:
    return COLLECTIVE_COLOURS.get(collective, OTHER_COLOURS[k % len(OTHER_COLOURS)])


def _titles(findings: Sequence[Finding]) -> str:
    shown = "<br>".join(
        f"⚠ [{esc(f.severity)}] {esc(shorten(f.title, 140))} <i>({esc(f.rule)})</i>" for f in findings[:FINDINGS_SHOWN]
    )
    return shown + (f"<br>… and {len(findings) - FINDINGS_SHOWN} more" if len(findings) > FINDINGS_SHOWN else "")


def _pick(report: ClusterReport, link: int) -> LinkTest:
    if not report.links:
        raise InputError(NO_LINK_TEST)
    if not 0 <= link < len(report.links):
        raise InputError(f"no link test {link}: the report holds {len(report.links)} (0-{len(report.links) - 1})")
    return report.links[link]


def _references(test: LinkTest, report: ClusterReport, collectives: Sequence[str]):
    """{collective: (reference row or None, why)} from the model's one reading."""
    from ..model.bandwidth import match_reference

    return {c: match_reference(test, report.snapshots, c) for c in collectives}


def _test_label(test: LinkTest) -> str:
    return (
        f"{esc(test.backend)} on {esc(test.device)}, {test.world_size} ranks on {test.nodes} "
        f"node{'s' if test.nodes != 1 else ''}, {test.iterations} iterations"
    )


def busbw_figure(report: ClusterReport, findings: Optional[Sequence[Finding]] = None, link: int = 0):
    """Pure: busbw (GB/s, nccl-tests' bus bandwidth) by message size of the
    report's ``link``-th link test, one line per collective; x is log2 of
    the size in bytes per rank (ticks name the sizes). Where
    ``reference_for`` has a row, its band is shaded from its smallest
    size on and named with its hardware and basis; the subtitle says why
    there is none otherwise. The titles of the ``link_*`` findings
    (``findings`` default to the report's own) are in the subtitle.
    Raises ValueError (one line) when the report holds no link test."""
    import plotly.graph_objects as go

    test = _pick(report, link)
    found = link_findings(report.findings if findings is None else findings)
    by_collective: dict[str, list] = {}
    for m in test.results:
        by_collective.setdefault(m.collective, []).append(m)
    traces, sizes = [], set()
    for k, (coll, ms) in enumerate(by_collective.items()):
        ms = sorted((m for m in ms if _log2(m.size_bytes) is not None), key=lambda m: m.size_bytes)
        sizes.update(m.size_bytes for m in ms)
        traces.append(
            go.Scatter(
                x=[_log2(m.size_bytes) for m in ms],
                y=[m.busbw_gbps for m in ms],
                mode="lines+markers",
                name=esc(coll),
                line=dict(color=_colour(coll, k), width=2),
                marker=dict(size=7, color=_colour(coll, k)),
                hovertext=[
                    f"<b>{esc(coll)}</b> · {size_text(m.size_bytes)} ({m.size_bytes} B per rank)<br>"
                    f"busbw {m.busbw_gbps:.3g} GB/s · algbw {m.algbw_gbps:.3g} GB/s · {m.time_us:.4g} µs"
                    for m in ms
                ],
                hovertemplate="%{hovertext}<extra></extra>",
            )
        )
    refs = _references(test, report, list(by_collective) or ["all_reduce"])
    shapes, annotations, notes = [], [], []
    hi_size = max(sizes) if sizes else 1
    top = max([m.busbw_gbps for m in test.results] + [0.0])
    for k, (coll, (row, why)) in enumerate(refs.items()):
        if row is None:
            notes.append(f"{coll}: no reference band ({why})")
            continue
        x0 = _log2(row.min_size_bytes) or 0.0
        x1 = max(x0 + 1, _log2(hi_size) or 0.0) + 0.5
        colour = _colour(coll, k)
        shapes.append(
            dict(
                type="rect",
                xref="x",
                yref="y",
                x0=x0,
                x1=x1,
                y0=row.low_gbps,
                y1=row.high_gbps,
                fillcolor=colour,
                opacity=0.15,
                line=dict(color=colour, width=1, dash="dot"),
                layer="below",
            )
        )
        annotations.append(
            dict(
                x=x0,
                y=row.high_gbps,
                xref="x",
                yref="y",
                xanchor="left",
                yanchor="bottom",
                showarrow=False,
                font=dict(size=10, color=colour),
                text=f"{esc(coll)} reference: {esc(shorten(row.hardware, 60))}, "
                f"{row.low_gbps:g}-{row.high_gbps:g} GB/s from {size_text(row.min_size_bytes)} "
                f"({esc(row.basis)})",
            )
        )
        top = max(top, row.high_gbps)
        # the band starts at 1 GiB while a survey may stop at 64 MiB: keep both in view
        sizes.add(row.min_size_bytes)
    ticks = sorted(sizes)
    if len(ticks) > 12:  # every other size, so the labels do not overlap
        step = -(-len(ticks) // 12)
        ticks = ticks[::step] + ([ticks[-1]] if (len(ticks) - 1) % step else [])
    for part, why in sorted(test.missing.items()):
        notes.append(f"not measured: {part} ({why})")
    if not test.results:
        notes.append("the link test recorded no collective measurement")
    fig = go.Figure(traces)
    title = f"Link test · busbw by message size · {_test_label(test)}"
    sub = [esc(n) for n in notes]
    if found:
        sub.append(f"{how_many(len(found), 'link finding')}: " + "; ".join(esc(shorten(f.title, 100)) for f in found[:3]))
    if test.env:
        sub.append("env: " + esc(shorten(", ".join(f"{k}={v}" for k, v in sorted(test.env.items())), 120)))
    if sub:
        title += "<br><span style='font-size:12px'>" + "<br>".join(sub[:5]) + "</span>"
    xs = [_log2(s) for s in ticks]
    fig.update_layout(
        title=dict(text=title, font=dict(size=14)),
        xaxis=dict(
            title=dict(text="message size (bytes per rank, log scale)"),
            tickmode="array",
            tickvals=xs,
            ticktext=[size_text(s) for s in ticks],
            zeroline=False,
            range=[(min(xs) if xs else 0) - 0.5, (max(xs) if xs else 1) + 0.5],
        ),
        yaxis=dict(title=dict(text="busbw (GB/s)"), rangemode="tozero", range=[0, max(top, 1e-9) * 1.15]),
        shapes=shapes,
        annotations=annotations,
        height=480 + 16 * min(len(sub), 5),
        margin=dict(l=70, r=20, t=80 + 16 * min(len(sub), 5), b=90),
        showlegend=True,
        legend=dict(title=dict(text="collective")),
        plot_bgcolor="white",
        clickmode="event",
        meta=dict(
            link=link,
            collectives=list(by_collective),
            references={c: (None if r is None else r.id) for c, (r, _) in refs.items()},
        ),
    )
    return fig


def named_pairs(test: LinkTest, findings: Sequence[Finding]) -> dict[int, list[Finding]]:
    """Index of each pair (in ``test.pairs``) -> the ``link_*`` findings that
    name it. A finding naming two ranks names the pair from the first to the
    second when the ring has it (``link_slow_pair``: sender, receiver), else
    both directions; one naming more names every pair among them; one naming
    a single rank, every pair that rank is in."""
    found = [f for f in link_findings(findings) if f.ranks]
    out: dict[int, list[Finding]] = {}
    if not found:
        return out
    at: dict[tuple[int, int], list[int]] = {}
    for i, p in enumerate(test.pairs):
        at.setdefault((p.src_rank, p.dst_rank), []).append(i)
    for f in found:
        ranks = set(f.ranks)
        if len(f.ranks) == 2 and tuple(f.ranks) in at:
            hits = at[tuple(f.ranks)]
        elif len(ranks) == 1:
            hits = [i for i, p in enumerate(test.pairs) if p.src_rank in ranks or p.dst_rank in ranks]
        else:
            hits = [i for i, p in enumerate(test.pairs) if p.src_rank in ranks and p.dst_rank in ranks]
        for i in hits:
            out.setdefault(i, []).append(f)
    return out


def pairs_figure(report: ClusterReport, findings: Optional[Sequence[Finding]] = None, link: int = 0):
    """Pure: one bar per point-to-point pair of the ring (busbw in GB/s),
    the pairs named by ``link_*`` findings in red, with an x on top, and
    their titles in hover. Past PAIRS_SHOWN pairs, the named ones and then the slowest are
    drawn, in ring order, and the title says how many. Raises ValueError
    when the report has no link test; a test with no pairs gives a figure
    that says so."""
    import plotly.graph_objects as go

    test = _pick(report, link)
    named = named_pairs(test, report.findings if findings is None else findings)
    idx = list(range(len(test.pairs)))
    if len(idx) > PAIRS_SHOWN:
        idx = sorted(sorted(idx, key=lambda i: (i not in named, test.pairs[i].busbw_gbps))[:PAIRS_SHOWN])
    labels, ys, colours, hovers = [], [], [], []
    for i in idx:
        p = test.pairs[i]
        labels.append(f"{p.src_rank}→{p.dst_rank}")
        ys.append(p.busbw_gbps)
        colours.append(PAIR_COLOURS["named" if i in named else "measured"])
        hovers.append(
            f"<b>rank {p.src_rank} ({esc(shorten(p.src_host, 40))}) → rank {p.dst_rank} "
            f"({esc(shorten(p.dst_host, 40))})</b><br>{size_text(p.size_bytes)} in {p.time_us:.4g} µs · "
            f"busbw {p.busbw_gbps:.3g} GB/s" + ("<br>" + _titles(named[i]) if i in named else "")
        )
    bars = go.Bar(
        x=labels,
        y=ys,
        marker=dict(color=colours, line=dict(color="#252525", width=0.5)),
        hovertext=hovers,
        hovertemplate="%{hovertext}<extra></extra>",
        name="pairs",
        showlegend=False,
    )
    keys = [
        go.Scatter(
            x=[None],
            y=[None],
            mode="markers",
            name="pair",
            hoverinfo="skip",
            marker=dict(symbol="square", size=12, color=PAIR_COLOURS["measured"]),
        )
    ]
    if named:
        # a named pair is a shape as well as a colour (never colour alone): an x on top of its bar
        shown = [k for k, i in enumerate(idx) if i in named]
        keys.append(
            go.Scatter(
                x=[labels[k] for k in shown],
                y=[ys[k] for k in shown],
                mode="markers",
                name="named by a link finding",
                hoverinfo="skip",
                cliponaxis=False,
                marker=dict(symbol="x", size=10, color=PAIR_COLOURS["named"], line=dict(color="#252525", width=1)),
            )
        )
    fig = go.Figure([bars] + keys)
    title = f"Point-to-point pairs · {how_many(len(test.pairs), 'pair')} · {_test_label(test)}"
    if len(idx) < len(test.pairs):
        title += f" · showing {len(idx)} (named and slowest first)"
    if not test.pairs:
        why = test.missing.get("pairs") or "the link test measured no point-to-point pair"
        title += f"<br><span style='font-size:12px'>{esc(why)}</span>"
    elif named:
        titles = {id(f): f for fs in named.values() for f in fs}
        title += (
            "<br><span style='font-size:12px'>"
            + "; ".join(esc(shorten(f.title, 100)) for f in list(titles.values())[:2])
            + "</span>"
        )
    fig.update_layout(
        title=dict(text=title, font=dict(size=14)),
        xaxis=dict(title=dict(text="sender → receiver (global ranks)"), type="category"),
        yaxis=dict(title=dict(text="busbw (GB/s)"), rangemode="tozero"),
        height=380,
        margin=dict(l=70, r=20, t=90, b=60),
        showlegend=True,
        plot_bgcolor="white",
        clickmode="event",
        meta=dict(
            link=link,
            pairs=[[test.pairs[i].src_rank, test.pairs[i].dst_rank] for i in idx],
            named=[[test.pairs[i].src_rank, test.pairs[i].dst_rank] for i in idx if i in named],
        ),
    )
    return fig


def links_summary_html(report: ClusterReport, findings: Sequence[Finding], link: int = 0) -> str:
    """Escaped HTML: what was measured, the reference rows and why, NCCL's
    transports per pair, and the ``link_*`` findings."""
    if not report.links:
        return f"<p>{esc(NO_LINK_TEST)}</p>"
    test = _pick(report, link)
    colls = sorted({m.collective for m in test.results}) or ["all_reduce"]
    sizes = sorted({m.size_bytes for m in test.results})
    parts = [
        f"<p><b>{_test_label(test)}</b>: {how_many(len(test.results), 'measurement')} of {esc(', '.join(colls))}"
        + (f" from {size_text(sizes[0])} to {size_text(sizes[-1])}" if sizes else "")
        + f"; {how_many(len(test.pairs), 'point-to-point pair')}.</p>"
    ]
    items = []
    for coll, (row, why) in _references(test, report, colls).items():
        if row is None:
            items.append(f"<li>{esc(coll)}: no reference band: {esc(why)}</li>")
        else:
            items.append(
                f"<li>{esc(coll)}: reference {esc(row.hardware)}, {row.low_gbps:g}-{row.high_gbps:g} GB/s "
                f"from {size_text(row.min_size_bytes)} ({esc(row.basis)}; {esc(why)})<br>"
                f"<small>source: {esc(shorten(row.source, 300))}</small></li>"
            )
    parts.append("<ul class='ncclnb-links-references'>" + "".join(items) + "</ul>")
    if test.transports:
        tally: dict[str, int] = {}
        for t in test.transports:
            tally[t.transport] = tally.get(t.transport, 0) + 1
        parts.append(
            "<p>NCCL's transports (NCCL_DEBUG=INFO): "
            + ", ".join(f"{esc(k)} {how_many(v, 'pair')}" for k, v in sorted(tally.items()))
            + "</p>"
        )
    found = link_findings(findings)
    if found:
        parts.append(
            "<ul class='ncclnb-links-findings'>"
            + "".join(f"<li>[{esc(f.severity)}] {esc(shorten(f.title, 200))} <i>({esc(f.rule)})</i></li>" for f in found[:12])
            + (f"<li>… and {len(found) - 12} more</li>" if len(found) > 12 else "")
            + "</ul>"
        )
    return "".join(parts)


class LinksWidget(w.VBox):
    """The link results of a report, live: busbw by size and the pairs of
    the link test ``test`` (an index into ``report.links``; a picker sets
    it where the report holds several), a click on a point or bar shows its
    details."""

    test = traitlets.Int(0)

    def __init__(self, report: ClusterReport, findings: Sequence[Finding], busbw, pairs, problem: Optional[str]):
        from .live import LiveFigure

        self.report, self.findings, self.problem = report, list(findings), problem
        self.detail = detail_pane()
        self.detail.value = "<i>Click a point or a bar for details.</i>"
        on_click = hover_on_click(self.detail)
        self.busbw, self.pairs = LiveFigure(busbw, on_click), LiveFigure(pairs, on_click)
        self.summary = w.HTML(self._summary())
        children = [self.summary, self.busbw, self.pairs, self.detail]
        if len(report.links) > 1:
            picker = w.Dropdown(
                options=[(f"{t.backend} on {t.device} ({t.world_size} ranks)", i) for i, t in enumerate(report.links)],
                value=0,
                description="link test",
            )
            picker.observe(lambda change: setattr(self, "test", change["new"]), names="value")
            children.insert(0, picker)
        super().__init__(children)
        self.add_class("ncclnb-links")

    def _summary(self) -> str:
        problem = f"<p><i>{esc(self.problem)}</i></p>" if self.problem else ""
        return links_summary_html(self.report, self.findings, self.test) + problem

    @traitlets.observe("test")
    def _redraw(self, _change) -> None:
        self.busbw.replace(busbw_figure(self.report, self.findings, self.test))
        self.pairs.replace(pairs_figure(self.report, self.findings, self.test))
        self.summary.value = self._summary()


def show_links(target, findings: Optional[Sequence[Finding]] = None):
    """The link test of a report as a live widget: busbw by size against
    the reference band, the point-to-point pairs (those named by ``link_*``
    findings highlighted), a picker when the report holds several link
    tests, click a point or bar for its details. ``findings`` default to
    the report's own or, when it carries none, to ``ncclnb.check(target)``.
    With no link test, the view says so."""
    target = resolve(target)
    if not isinstance(target, ClusterReport) or not target.links:
        note = f"<p>{esc(NO_LINK_TEST)}</p>"
        box = w.HTML(note)
        box.add_class("ncclnb-links")
        return with_text_form(View(box, None, note, f"ncclnb link results: {NO_LINK_TEST}"), "show_links", target)
    report = target
    problem = None
    if findings is None:
        findings, problem = report_findings(report)
    findings = list(findings)
    first, first_pairs = busbw_figure(report, findings, 0), pairs_figure(report, findings, 0)
    widget = LinksWidget(report, findings, first, first_pairs, problem)
    test = report.links[0]
    view = View(
        widget,
        first,
        "<h4>Link results</h4>" + widget.summary.value,
        f"ncclnb link results: {test.backend} on {test.device}, {how_many(len(test.results), 'measurement')}, "
        f"{how_many(len(test.pairs), 'pair')}, {how_many(len(link_findings(findings)), 'link finding')}",
        parts=[View(None, first_pairs)],
    )
    return with_text_form(view, "show_links", target)
