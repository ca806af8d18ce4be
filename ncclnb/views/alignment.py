"""The flight-recorder alignment view: ranks x sequence ids of one process
group, each cell the collective that rank recorded there, the doctor's
divergences highlighted.

The builder only draws :class:`ncclnb.doctor.flight_recorder.Alignment`
facts: which cells diverged is what the doctor decided (a divergence's
sequence id and the ranks its finding blames), never re-judged here."""

from __future__ import annotations

from typing import Optional

import ipywidgets as w
import traitlets

from ..errors import InputError
from ..model.words import how_many
from ._common import esc, shorten, step_colorscale
from .widgets import DETAIL_HINT, View, detail_pane, hover_on_click, with_text_form

MAX_SEQS = 48  # sequence ids drawn (a window ending a few past the first divergence)
MAX_RANKS = 64  # ranks drawn (the blamed ones first)
TEXT_LIMIT = 24  # past this many columns the cells carry no text (colour and hover do)

# cell kinds: a recorded collective, one the doctor blames, the others at that
# sequence id, a blamed rank with no record there, no record, not compared
KINDS = ("recorded", "blamed", "peer", "blamed_absent", "absent", "uncompared")
KIND_COLOURS = {
    "recorded": "#a6d96a",
    "blamed": "#d73027",
    "peer": "#fee08b",
    "blamed_absent": "#f46d43",
    "absent": "#f0f0f0",
    "uncompared": "#d9d9d9",
}
KIND_LABELS = {
    "recorded": "recorded",
    "blamed": "diverged (the doctor blames it)",
    "peer": "the other ranks at the divergence",
    "blamed_absent": "never reached (the doctor blames it)",
    "absent": "no record",
    "uncompared": "before every ring buffer's start (not compared)",
}


def _group(alignment, group: Optional[str]):
    if not alignment.groups:
        raise InputError("no collectives in these flight-recorder dumps")
    if group is not None:
        for g in alignment.groups:
            if g.pg == str(group) or g.desc == str(group):
                return g
        names = ", ".join(f"{g.pg} ({g.desc})" for g in alignment.groups[:8])
        raise InputError(f"no process group {group!r} in these dumps (groups: {names})")
    first = alignment.first_divergence
    return first[0] if first else alignment.groups[0]


def _seq_window(seqs: tuple, focus: Optional[int], most: int) -> list:
    seqs = list(seqs)
    if len(seqs) <= most:
        return seqs
    if focus is None or focus not in seqs:
        return seqs[-most:]
    i = seqs.index(focus)
    end = min(len(seqs), i + 1 + min(4, most // 4))
    return seqs[max(0, end - most) : end]


def _size_text(sizes: tuple) -> str:
    if not sizes:
        return "[]"
    return " ".join("[" + ", ".join(map(str, s)) + "]" for s in sizes[:4]) + (
        f" (+{len(sizes) - 4} tensors)" if len(sizes) > 4 else ""
    )


def call_hover(call, divergence=None) -> str:
    """Hover HTML of one cell; every string from a dump is escaped."""
    lines = [
        f"<b>rank {call.rank}, collective #{call.seq}</b>: {esc(shorten(call.op, 80))}",
        f"input sizes {esc(_size_text(call.in_sizes))}, output sizes {esc(_size_text(call.out_sizes))}",
        f"dtypes {esc(', '.join(call.dtypes) or 'not known')}; state {esc(call.state or 'not known')}",
        f"from {esc(shorten(call.source, 80))}",
    ]
    if divergence is not None:
        lines.append(f"<b>{esc(divergence.rule)}</b>: {esc(shorten(divergence.title, 160))}")
    return "<br>".join(lines)


def alignment_figure(alignment, group: Optional[str] = None, max_seqs: int = MAX_SEQS, max_ranks: int = MAX_RANKS):
    """Pure: a plotly Figure, ranks (rows) x sequence ids (columns) of one
    process group (default: the group of the divergence the doctor ranks
    first, else the default group). Each cell names the collective the rank
    recorded at that id; hover gives op, sizes, dtypes, state and file. At
    each divergence the doctor found, the ranks its finding blames are red
    (orange when they never reached it) and the others amber; the first one
    is framed. At most ``max_seqs`` ids and ``max_ranks`` ranks are drawn
    (the title says so); ``layout.meta`` holds the group, the ids and ranks
    drawn and the first divergence."""
    import plotly.graph_objects as go

    g = _group(alignment, group)
    first = g.first_divergence
    seqs = _seq_window(g.seqs, first.seq if first else None, max_seqs)
    blamed_all = {r for d in g.divergences for r in d.ranks}
    ranks = list(g.ranks)
    if len(ranks) > max_ranks:
        ranks = sorted(sorted(ranks, key=lambda r: (r not in blamed_all, r))[:max_ranks])
    calls = {(c.rank, c.seq): c for c in g.calls}
    divs = {d.seq: d for d in reversed(g.divergences)}  # the first one found at an id wins
    z, text, hover = [], [], []
    for r in ranks:
        zr, tr, hr = [], [], []
        for s in seqs:
            call, div = calls.get((r, s)), divs.get(s)
            if div is not None and r in div.ranks:
                kind = "blamed" if call is not None else "blamed_absent"
            elif div is not None and call is not None:
                kind = "peer"
            elif call is None:
                kind = "absent"
            elif g.start is not None and s < g.start:
                kind = "uncompared"
            else:
                kind = "recorded"
            zr.append(KINDS.index(kind))
            if call is not None:
                tr.append(esc(shorten(call.op, 14)))
                hr.append(call_hover(call, div))
            else:
                tr.append("—" if kind == "blamed_absent" else "")
                note = f"<br><b>{esc(div.rule)}</b>: {esc(shorten(div.title, 160))}" if div is not None else ""
                hr.append(f"<b>rank {r}, collective #{s}</b>: no record{note}")
        z.append(zr)
        text.append(tr)
        hover.append(hr)
    k = len(KINDS)
    scale = step_colorscale(KIND_COLOURS[kind] for kind in KINDS)
    columns = [f"#{s}" for s in seqs]
    rows = [f"rank {r}" for r in ranks]
    heat = go.Heatmap(
        z=z,
        x=columns,
        y=rows,
        zmin=-0.5,
        zmax=k - 0.5,
        colorscale=scale,
        xgap=2,
        ygap=2,
        showscale=False,
        text=text,
        texttemplate="%{text}" if len(columns) <= TEXT_LIMIT else None,
        textfont=dict(size=10),
        hovertext=hover,
        hovertemplate="%{hovertext}<extra></extra>",
        name="collectives",
    )
    present = [kd for kd in KINDS if any(KINDS.index(kd) in row for row in z)]
    keys = [
        go.Scatter(
            x=[None],
            y=[None],
            mode="markers",
            name=KIND_LABELS[kd],
            hoverinfo="skip",
            marker=dict(symbol="square", size=12, color=KIND_COLOURS[kd], line=dict(color="#636363", width=1)),
        )
        for kd in present
    ]
    fig = go.Figure([heat] + keys)
    where = f"process group {esc(shorten(g.pg, 40))}" + (f" ({esc(shorten(g.desc, 40))})" if g.desc else "")
    title = f"Flight recorder · {where} · {g.ranks_total} ranks × {g.seqs_total} collectives"
    cut = []
    if len(seqs) < g.seqs_total:
        cut.append(f"showing #{seqs[0]}–#{seqs[-1]} of {g.seqs_total} sequence ids" if seqs else "no ids drawn")
    if len(ranks) < g.ranks_total:
        cut.append(f"showing {len(ranks)} of {g.ranks_total} ranks (blamed first)")
    if cut:
        title += " · " + ", ".join(cut)
    sub = (
        f"first divergence at #{first.seq}: {esc(shorten(first.title, 150))}"
        if first
        else "the doctor found no divergence in this group"
    )
    title += f"<br><span style='font-size:12px'>{sub}</span>"
    shapes = []
    if first is not None and first.seq in seqs:
        x = seqs.index(first.seq)
        shapes.append(
            dict(
                type="rect",
                xref="x",
                yref="y",
                x0=x - 0.5,
                x1=x + 0.5,
                y0=-0.5,
                y1=len(ranks) - 0.5,
                line=dict(color="#67001f", width=3),
                fillcolor="rgba(0,0,0,0)",
            )
        )
    fig.update_layout(
        title=dict(text=title, font=dict(size=14)),
        xaxis=dict(side="top", title=dict(text="collective sequence id")),
        yaxis=dict(autorange="reversed"),
        height=max(260, 150 + 30 * len(ranks)),
        margin=dict(l=90, r=20, t=120, b=20),
        shapes=shapes,
        showlegend=True,
        plot_bgcolor="white",
        clickmode="event",
        legend=dict(title=dict(text="cell"), itemclick=False, itemdoubleclick=False),
        meta=dict(
            pg=g.pg,
            seqs=seqs,
            ranks=ranks,
            divergence=None if first is None else dict(seq=first.seq, rule=first.rule, ranks=list(first.ranks)),
        ),
    )
    return fig


def alignment_summary_html(alignment) -> str:
    """One line per group: its size and what the doctor found (escaped)."""
    items = []
    for g in alignment.groups:
        what = (
            f"{how_many(len(g.divergences), 'divergence')}, first at #{g.first_divergence.seq}: "
            f"{esc(shorten(g.first_divergence.title, 160))}"
            if g.divergences
            else "no divergence"
        )
        items.append(
            f"<li>process group {esc(shorten(g.pg, 40))} ({esc(shorten(g.desc, 40))}): "
            f"{g.ranks_total} ranks, {g.seqs_total} collectives; {what}</li>"
        )
    return "<ul>" + "".join(items[:16]) + (f"<li>… {len(items) - 16} more groups</li>" if len(items) > 16 else "") + "</ul>"


class AlignmentWidget(w.VBox):
    """The flight-recorder alignment of a run, live: the process group
    ``group`` (a picker sets it where the run has several); a click on a
    cell shows its details."""

    group = traitlets.Unicode()

    def __init__(self, facts, figure):
        from .live import LiveFigure

        self.facts = facts
        self.detail = detail_pane()
        self.live = LiveFigure(figure, hover_on_click(self.detail))
        children = [self.live, self.detail]
        group = figure.layout.meta["pg"]
        if len(facts.groups) > 1:
            picker = w.Dropdown(
                options=[(f"{g.pg} ({g.desc})", g.pg) for g in facts.groups[:200]], value=group, description="group"
            )
            picker.observe(lambda change: setattr(self, "group", change["new"]), names="value")
            children.insert(0, picker)
        self.first_group = group
        super().__init__(children)
        self.add_class("ncclnb-alignment")

    @traitlets.default("group")
    def _first(self) -> str:
        return self.first_group

    @traitlets.observe("group")
    def _redraw(self, change) -> None:
        self.live.replace(alignment_figure(self.facts, change["new"]))
        self.detail.value = DETAIL_HINT


def show_alignment(source, group: Optional[str] = None):
    """The flight-recorder alignment of a run as a live widget: ``source`` is
    a run directory, a path or list of paths (logs and dumps), a
    ``ReproResult``, a ``Diagnosis`` made from files, or an ``Alignment``.
    A picker switches process groups; click a cell for its details. Raises
    ValueError (one line) when there are no dumps."""
    from ..doctor.facts import run_alignment
    from ..doctor.flight_recorder import Alignment

    facts = source if isinstance(source, Alignment) else run_alignment(source)
    fig = alignment_figure(facts, group)
    summary = alignment_summary_html(facts)
    first = facts.first_divergence
    text = f"ncclnb flight-recorder alignment: {how_many(len(facts.ranks), 'rank')}, {how_many(len(facts.groups), 'group')}; " + (
        f"first divergence at #{first[1].seq} of group {first[0].pg}" if first else "no divergence"
    )
    view = View(AlignmentWidget(facts, fig), fig, "<h4>Flight-recorder alignment</h4>" + summary, text)
    return with_text_form(view, "show_alignment", facts)
