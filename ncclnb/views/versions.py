"""The version matrix: nodes x components, as a pandas Styler so it reads
well without a kernel too.

The table never decides what differs: a cell is marked where the checks'
reading says its node is off the others
(:func:`ncclnb.model.derive.version_splits`, which ``versions_differ``
reports, for the version components; :func:`ncclnb.model.derive.nccl_env_splits`,
which ``nccl_env_differs`` reports, for the ``NCCL_*`` settings): red where a
strict majority has another value, amber for every node where no value has
one. The other columns (the NCCL torch reports and the one a process
printed, CUDA of the driver, net plugins, python, frameworks) are facts
shown, never marked."""

from __future__ import annotations

import os
from collections import Counter
from typing import Iterable, Union

import ipywidgets as w
import traitlets

from ..model import ClusterReport, NodeSnapshot
from ..model.derive import Split, effective_nccl, nccl_env_splits, version_components, version_splits
from ..model.words import how_many
from ._common import esc, shorten, snapshots_of

MISSING = "—"
DIFFERS = "background-color:#f8d7da;color:#842029;font-weight:bold"
NO_MAJORITY = "background-color:#fff3cd;color:#664d03"
GROUP_OVER = 16  # more nodes than this: one row per distinct configuration
ENV_LIMIT = 12  # at most this many NCCL_* columns, the most varied first
ROW_LIMIT = 48  # rows (configurations) drawn; the most common first, the rest counted in the caption


def _libs(libs) -> str:
    return (
        "; ".join(
            f"{os.path.basename(lib.path)}{' ' + lib.version if lib.version and lib.version not in lib.path else ''}"
            + (f" ({lib.source})" if lib.source else "")
            for lib in libs
        )
        or MISSING
    )


def version_row(snapshot: NodeSnapshot) -> dict[str, str]:
    """One node's components as display strings (not yet escaped). The
    columns that ``versions_differ`` compares carry its component names
    (``model.derive.VERSION_COMPONENTS``)."""
    v = snapshot.versions
    row = {
        "NVIDIA driver": v.driver or MISSING,
        "CUDA (driver)": v.cuda_driver or MISSING,
        "torch": v.torch or MISSING,
        "CUDA (torch build)": v.torch_cuda or MISSING,
        "NCCL (used by torch)": effective_nccl(snapshot) or MISSING,
        "NCCL (torch)": v.nccl_torch or MISSING,
        "NCCL (loaded)": v.nccl_loaded or MISSING,
        "NCCL (pip)": "; ".join(f"{k} {val}" for k, val in sorted(v.nccl_pip.items())) or MISSING,
        "NCCL (system)": _libs(v.nccl_system),
        "net plugins": _libs(v.net_plugins),
        "python": v.python or MISSING,
    }
    for name, ver in sorted(v.frameworks.items()):
        row[name] = ver
    for key, val in sorted(snapshot.env.items()):
        if key.startswith("NCCL_"):
            row[key] = val
    return row


def _splits(snaps) -> list[Split]:
    """Every component and NCCL_* setting that differs, as the checks read it."""
    return list(version_splits(snaps).values()) + list(nccl_env_splits(snaps).values())


def _marks_by_host(snaps) -> dict[str, dict[str, str]]:
    """host -> column -> "differs" (off a strict majority) or "no_majority" (a tie)."""
    out: dict[str, dict[str, str]] = {}
    for split in _splits(snaps):
        for host in split.odd:
            out.setdefault(host, {})[split.component] = "no_majority" if split.tie else "differs"
    return out


def _table(target, group: object = "auto"):
    """(DataFrame of strings, per-row node counts, (row, column) -> mark)."""
    import pandas as pd

    snaps = snapshots_of(target) if isinstance(target, (ClusterReport, NodeSnapshot)) else tuple(target)
    rows = [version_row(s) for s in snaps]
    columns = list(dict.fromkeys(k for r in rows for k in r))  # first seen, in one pass
    env_cols = [c for c in columns if c.startswith("NCCL_")]
    if len(env_cols) > ENV_LIMIT:
        varied = sorted(env_cols, key=lambda c: -len({r.get(c, MISSING) for r in rows}))
        keep = set(varied[:ENV_LIMIT])
        columns = [c for c in columns if not c.startswith("NCCL_") or c in keep]
    by_host = _marks_by_host(snaps)
    table = [[r.get(c, MISSING) for c in columns] for r in rows]
    marks = [tuple(sorted(by_host.get(s.hostname, {}).items())) for s in snaps]
    hosts = [s.hostname for s in snaps]
    if group == "auto":
        group = len(snaps) > GROUP_OVER
    weights = [1] * len(rows)
    if group:
        # nodes with the same row and the same marks fold into one row
        grouped: dict[tuple, list[str]] = {}
        for host, vals, mark in zip(hosts, table, marks):
            grouped.setdefault((tuple(vals), mark), []).append(host)
        # the most common configuration first (the reference), then the others by size, then first seen
        grouped = dict(sorted(grouped.items(), key=lambda kv: -len(kv[1])))
        table = [list(vals) for vals, _ in grouped]
        marks = [mark for _, mark in grouped]
        weights = [len(h) for h in grouped.values()]
        hosts = [
            f"{len(h)} node{'s' if len(h) > 1 else ''}: {', '.join(shorten(x, 24) for x in h[:3])}{' …' if len(h) > 3 else ''}"
            for h in grouped.values()
        ]
    seen: Counter = Counter()
    unique = []
    for h in hosts:  # Styler needs unique labels; two snapshots may share a hostname
        seen[h] += 1
        unique.append(h if seen[h] == 1 else f"{h} ({seen[h]})")
    frame = pd.DataFrame(table, index=pd.Index(unique), columns=columns)
    keep_cols = [c for c in columns if (frame[c] != MISSING).any()]
    shown = set(keep_cols)
    cells = {(i, col): kind for i, mark in enumerate(marks) for col, kind in mark if col in shown}
    return frame[keep_cols], weights, cells


def version_frame(target: Union[ClusterReport, NodeSnapshot, Iterable[NodeSnapshot]], group: object = "auto"):
    """Pure: (DataFrame of strings, per-row node counts). Columns that no
    node reports are dropped; ``group`` ("auto", True, False) folds nodes
    with identical rows (and marks) into one row naming them."""
    frame, weights, _ = _table(target, group)
    return frame, weights


def version_marks(target, group: object = "auto") -> dict[tuple[int, str], str]:
    """(row of :func:`version_frame`, column) -> "differs" (the node is off a
    strict majority) or "no_majority" (no value has one): the checks'
    reading (:func:`ncclnb.model.derive.version_splits` and
    :func:`~ncclnb.model.derive.nccl_env_splits`), never the table's own."""
    return _table(target, group)[2]


def version_table(report_or_snapshots, group: object = "auto", only_differing: bool = False):
    """Pure: a pandas Styler, nodes x components (driver, CUDA, torch, NCCL
    per source, net plugins, frameworks, NCCL_* env). A cell is red where
    the checks find its node off the majority (``versions_differ``,
    ``nccl_env_differs``), amber where no value has a majority. Every value
    is HTML-escaped. With ``only_differing`` only the marked columns remain."""
    frame, weights, marks = _table(report_or_snapshots, group)  # marks over every row, before any is left out
    snaps = _snaps(report_or_snapshots)
    differing = [split.component for split in _splits(snaps)]  # the checks' reading, over every node
    hidden_rows, hidden_nodes = 0, 0
    if len(frame) > ROW_LIMIT:
        keep = _rows_kept(len(frame), marks)
        hidden_rows, hidden_nodes = len(frame) - len(keep), sum(weights) - sum(weights[i] for i in keep)
        at = {old: new for new, old in enumerate(keep)}
        frame = frame.iloc[keep]
        weights = [weights[i] for i in keep]
        marks = {(at[i], c): v for (i, c), v in marks.items() if i in at}
    if only_differing:
        varied = [c for c in frame.columns if any(k[1] == c for k in marks)]
        frame = frame[varied] if varied else frame.iloc[:, :0]
    cols = list(frame.columns)

    def paint(df):
        import pandas as pd

        styles = pd.DataFrame("", index=df.index, columns=df.columns)
        where = {c: k for k, c in enumerate(cols)}
        for (i, col), kind in marks.items():
            if col in where:
                styles.iat[i, where[col]] = DIFFERS if kind == "differs" else NO_MAJORITY
        return styles

    n_nodes = sum(weights) + hidden_nodes
    n_rows = len(weights) + hidden_rows
    caption = (
        f"Versions on {how_many(n_nodes, 'node')}"
        + (f" ({n_rows} distinct configurations)" if n_rows != n_nodes else "")
        + _sameness(snaps, differing, {c for (_, c) in marks if c in cols})
        + (
            f" · {hidden_rows} more configurations ({hidden_nodes} nodes) not shown, the least common; "
            f"ncclnb.views.versions.version_frame() has them all"
            if hidden_rows
            else ""
        )
    )
    styler = (
        frame.style.format(escape="html")
        .format_index(escape="html", axis=0)
        .format_index(escape="html", axis=1)
        .apply(paint, axis=None)
        .set_caption(esc(caption))
        .set_table_styles(
            [
                {"selector": "", "props": "border-collapse:collapse;font-size:12px;font-family:monospace"},
                {
                    "selector": "caption",
                    "props": "caption-side:top;text-align:left;font-weight:bold;padding:4px 0;font-family:sans-serif",
                },
                {"selector": "th, td", "props": "border:1px solid #d9d9d9;padding:2px 6px;text-align:left;white-space:nowrap"},
                {"selector": "thead th", "props": "background:#f0f0f0"},
            ]
        )
    )
    return styler


def _snaps(target) -> tuple:
    return snapshots_of(target) if isinstance(target, (ClusterReport, NodeSnapshot)) else tuple(target)


def _rows_kept(n_rows: int, marks: dict) -> list[int]:
    """The ROW_LIMIT rows drawn: the most common configurations, except that
    each differing component keeps its first marked row, so that a node off
    the others is never among the rows left out only for being rare."""
    first = list(range(ROW_LIMIT))
    reserve: list[int] = []
    marked: dict[str, int] = {}
    for (i, col), _ in sorted(marks.items()):
        marked.setdefault(col, i)
    for col, i in sorted(marked.items(), key=lambda kv: kv[1]):
        if i >= ROW_LIMIT and i not in reserve and len(reserve) < ROW_LIMIT // 2:
            reserve.append(i)
    return first[: ROW_LIMIT - len(reserve)] + reserve


def _sameness(snaps, differing: list[str], marked: set) -> str:
    """The caption's words on what differs: the checks' count (``versions_differ``
    and ``nccl_env_differs`` over every node), never the drawn cells' alone; no
    claim that versions are the same where no node reports one."""
    if differing:
        unseen = [c for c in differing if c not in marked]
        verb = "differs" if len(differing) == 1 else "differ"
        return f" · {how_many(len(differing), 'component')} {verb} (red: not the majority; amber: no majority)" + (
            f"; not marked in the rows and columns drawn: {esc(shorten(', '.join(unseen), 120))}" if unseen else ""
        )
    known = [s for s in snaps if any(version_components(s).values())]
    if not known:
        return " · no node reports a version"
    if len(known) < len(snaps):
        return f" · none differs among the {how_many(len(known), 'node')} that report versions; the others report none"
    return " · none differs"


def version_differences(report_or_snapshots) -> list[str]:
    """Plain sentences naming each component and NCCL_* setting that differs
    across nodes, as the checks read it."""
    snaps = _snaps(report_or_snapshots)
    out = []
    for split in _splits(snaps):
        values = sorted(split.by_value.items(), key=lambda kv: -len(kv[1]))
        out.append(f"{split.component}: " + ", ".join(f"{value} on {how_many(len(hosts), 'node')}" for value, hosts in values))
    return out


# --- the live widget ---------------------------------------------------------------------------


class VersionsWidget(w.VBox):
    """The version matrix, live: ``only_differing`` (a checkbox sets it)
    keeps only the components that differ."""

    only_differing = traitlets.Bool(False)

    def __init__(self, target, html: str):
        self.target = target
        self.table = w.HTML(html)
        self.only = w.Checkbox(value=False, description="only components that differ", indent=False)
        super().__init__([self.only, self.table])
        self.add_class("ncclnb-versions")
        self.only.observe(lambda change: setattr(self, "only_differing", change["new"]), names="value")

    @traitlets.observe("only_differing")
    def _redraw(self, change) -> None:
        self.table.value = version_table(self.target, only_differing=change["new"]).to_html()


def show_versions(target):
    """Version matrix (nodes x components) with differing cells highlighted;
    a toggle keeps only the columns that differ."""
    from ._common import resolve
    from .widgets import View, with_text_form

    target = resolve(target)
    html = version_table(target).to_html()
    n = len(snapshots_of(target))
    return with_text_form(
        View(VersionsWidget(target, html), None, html, f"ncclnb version matrix: {how_many(n, 'node')}"), "show_versions", target
    )
