"""The send/recv pairing view: a rank x rank matrix (rows: sender, columns:
receiver), each cell the sends posted from the row's rank to the column's
and the receives the column's rank posted from it; the pairs the doctor
found unmatched are marked.

The builder only draws :class:`ncclnb.doctor.pairing.Pairing` facts: which
send or receive has no partner is the doctor's verdict (the same match that
gives its ``p2p_pairing`` findings), never re-judged here."""

from __future__ import annotations

from ..model.words import how_many
from ._common import esc, shorten, step_colorscale

MAX_RANKS = 64  # ranks drawn on each axis (those in unpaired ops first)
TEXT_LIMIT = 24

KINDS = ("none", "paired", "unpaired_recv", "unpaired_send", "mismatch", "blind", "self")
KIND_COLOURS = {
    "none": "#ffffff",
    "paired": "#a6d96a",
    "unpaired_recv": "#d73027",
    "unpaired_send": "#f46d43",
    "mismatch": "#8073ac",
    "blind": "#d9d9d9",
    "self": "#f0f0f0",
}
KIND_LABELS = {
    "none": "no send, no receive",
    "paired": "every send has its receive",
    "unpaired_recv": "a receive with no send",
    "unpaired_send": "a send with no receive",
    "mismatch": "a pair of another shape or dtype",
    "blind": "one side not recorded (not compared)",
    "self": "the rank itself",
}
ORIGIN_TEXT = {"flight recorder": "recorded by the flight recorder", "plan": "planned (ncclnb guard: p2p plan lines)"}


def _kind(cell) -> str:
    if cell is None:
        return "none"
    if cell.unpaired_recvs:
        return "unpaired_recv"
    if cell.unpaired_sends:
        return "unpaired_send"
    if cell.mismatch:
        return "mismatch"
    if cell.blind:
        return "blind"
    return "paired"


def _list(messages: tuple, limit: int = 6) -> str:
    if not messages:
        return "none"
    shown = ", ".join(esc(shorten(m, 60)) for m in messages[:limit])
    return shown + (f" … ({len(messages)} in all)" if len(messages) > limit else "")


def cell_hover(pairing, src: int, dst: int, cell) -> str:
    """Hover HTML of one cell; every string from a log or dump is escaped."""
    if src == dst:
        return f"rank {src} itself"
    if cell is None:
        return f"<b>rank {src} → rank {dst}</b>: no send, no receive"
    lines = [
        f"<b>rank {src} → rank {dst}</b>",
        f"{how_many(len(cell.sends), 'send')} on rank {src}: {_list(cell.sends)}",
        f"{how_many(len(cell.recvs), 'receive')} on rank {dst}: {_list(cell.recvs)}",
    ]
    for op in [u for u in pairing.unpaired if u.src == src and u.dst == dst][:4]:
        what = "no receive on rank %d" % dst if op.kind == "send" else "no send on rank %d" % src
        lines.append(f"<b>unpaired {esc(op.kind)}</b>: {esc(shorten(op.text, 120))} ({what})")
    if cell.mismatch:
        lines.append(f"<b>sizes differ</b> ({'other order' if cell.mismatch == 'order' else 'other shape or dtype'})")
    if cell.blind:
        lines.append("one side's record is missing: not compared")
    return "<br>".join(lines)


def pairing_figure(pairing, max_ranks: int = MAX_RANKS):
    """Pure: a plotly Figure, sender (rows) x receiver (columns). Each cell
    shows "sends/receives" between the pair and, in hover, their shapes and
    dtypes; cells holding an op the doctor found unpaired are red (a receive
    with no send) or orange (a send with no receive) and marked "!". At most
    ``max_ranks`` ranks a side are drawn (those in unpaired ops first; the
    title says so); ``layout.meta`` lists the ranks drawn and the unpaired
    (src, dst, kind)."""
    import plotly.graph_objects as go

    involved = {r for u in pairing.unpaired for r in (u.src, u.dst)}
    ranks = list(pairing.ranks)
    if len(ranks) > max_ranks:
        ranks = sorted(sorted(ranks, key=lambda r: (r not in involved, r))[:max_ranks])
    cells = {(c.src, c.dst): c for c in pairing.cells}
    z, text, hover = [], [], []
    for src in ranks:
        zr, tr, hr = [], [], []
        for dst in ranks:
            cell = cells.get((src, dst))
            kind = "self" if src == dst and cell is None else _kind(cell)
            zr.append(KINDS.index(kind))
            if cell is None:
                tr.append("")
            else:
                mark = " !" if kind in ("unpaired_recv", "unpaired_send", "mismatch") else ""
                tr.append(f"{len(cell.sends)}/{len(cell.recvs)}{mark}")
            hr.append(cell_hover(pairing, src, dst, cell))
        z.append(zr)
        text.append(tr)
        hover.append(hr)
    k = len(KINDS)
    scale = step_colorscale(KIND_COLOURS[kind] for kind in KINDS)
    labels = [f"rank {r}" for r in ranks]
    heat = go.Heatmap(
        z=z,
        x=labels,
        y=labels,
        zmin=-0.5,
        zmax=k - 0.5,
        colorscale=scale,
        xgap=2,
        ygap=2,
        showscale=False,
        text=text,
        texttemplate="%{text}" if len(ranks) <= TEXT_LIMIT else None,
        textfont=dict(size=11),
        hovertext=hover,
        hovertemplate="%{hovertext}<extra></extra>",
        name="pairs",
    )
    present = [kd for kd in KINDS if kd not in ("none", "self") and any(KINDS.index(kd) in row for row in z)]
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
    n = len(pairing.unpaired)
    title = (
        f"Send/recv pairing · {esc(ORIGIN_TEXT.get(pairing.origin, pairing.origin))} · "
        f"{len(pairing.ranks)} ranks · cell: sends/receives · {n} unpaired op{'s' if n != 1 else ''}"
    )
    if len(ranks) < len(pairing.ranks):
        title += f" · showing {len(ranks)} of {len(pairing.ranks)} ranks (unpaired first)"
    top = next((f for f in pairing.findings if f.severity == "error"), None)
    sub = esc(shorten(top.title, 150)) if top else "the doctor found every send paired with its receive"
    title += f"<br><span style='font-size:12px'>{sub}</span>"
    fig.update_layout(
        title=dict(text=title, font=dict(size=14)),
        xaxis=dict(side="top", title=dict(text="receiver")),
        yaxis=dict(autorange="reversed", title=dict(text="sender")),
        height=max(300, 170 + 36 * len(ranks)),
        margin=dict(l=100, r=20, t=130, b=20),
        showlegend=True,
        plot_bgcolor="white",
        clickmode="event",
        legend=dict(title=dict(text="cell"), itemclick=False, itemdoubleclick=False),
        meta=dict(ranks=ranks, origin=pairing.origin, unpaired=[[u.src, u.dst, u.kind] for u in pairing.unpaired[:256]]),
    )
    return fig


def pairing_summary_html(pairing) -> str:
    """The doctor's unpaired ops, one line each (escaped)."""
    if not pairing.unpaired:
        return "<p>Every send has its receive.</p>"
    items = "".join(
        f"<li>{esc(shorten(u.text, 160))}: no {'receive' if u.kind == 'send' else 'send'} on the other side</li>"
        for u in pairing.unpaired[:12]
    )
    more = f"<li>… {len(pairing.unpaired) - 12} more</li>" if len(pairing.unpaired) > 12 else ""
    return f"<ul>{items}{more}</ul>"


def show_pairing(source):
    """The send/recv pairing of a run as a live widget: ``source`` is a run
    directory, a path or list of paths, a ``ReproResult``, a ``Diagnosis``
    made from files, or a ``Pairing``. Click a cell for its sends and
    receives. Raises ValueError (one line) when the run recorded no send/recv
    and printed no plan lines."""
    import ipywidgets as w

    from ..doctor.facts import run_pairing
    from ..doctor.pairing import Pairing
    from .widgets import View, detail_pane, hover_on_click, with_text_form
    from .live import LiveFigure

    facts = source if isinstance(source, Pairing) else run_pairing(source)
    fig = pairing_figure(facts)
    detail = detail_pane()

    slot = LiveFigure(fig, hover_on_click(detail))
    box = w.VBox([slot, detail])
    box.add_class("ncclnb-pairing")
    n = len(facts.unpaired)
    return with_text_form(
        View(
            box,
            fig,
            "<h4>Send/recv pairing</h4>" + pairing_summary_html(facts),
            f"ncclnb send/recv pairing: {len(facts.ranks)} ranks, {n} unpaired op{'s' if n != 1 else ''}",
        ),
        "show_pairing",
        facts,
    )
