"""The text form of every view: what a view shows where the frontend
shows only text (a terminal IPython, ``renderer()`` is ``text``), made from
the same facts and findings as the figures, with the text renderers of
:mod:`ncclnb.summary` and :mod:`ncclnb.terminal`. No widget, no figure, no
plotly: usable where the notebook stack is not installed."""

from __future__ import annotations

import shutil

from ..model import ClusterReport, Diagnosis
from ..model._repr import terminal_text
from ..model.words import how_many
from ..summary import summary
from ..terminal import render_diagnosis, render_findings
from ._common import pick_snapshot, ranks_of, snapshots_of


def _width() -> int:
    return max(100, shutil.get_terminal_size((100, 24)).columns)


def summary_text(target) -> str:
    return terminal_text(summary(target, width=_width()))


def _sections(text: str, titles: tuple) -> str:
    """The head of a node summary and its sections whose title starts with one of ``titles``."""
    blocks = text.split("\n\n")
    return "\n\n".join(blocks[:1] + [b for b in blocks[1:] if b.split("\n", 1)[0].startswith(titles)])


def _node_of(target, host=None):
    """The node a one-node view shows (``host``, else the first of a report) and a line naming the others."""
    snap, n = pick_snapshot(target, host), len(snapshots_of(target))
    note = (
        terminal_text(
            f"\n\n(node {snap.hostname} of {n}: ncclnb.show_topology(report, host=NAME), "
            f"ncclnb.show_numa(report, host=NAME) or `ncclnb show` for the others)"
        )
        if n > 1
        else ""
    )
    return snap, note


def _rank_rows(ranks) -> list:
    def cell(value):
        return "-" if value is None or value == "" else terminal_text(str(value))

    rows = [["rank", "host", "local", "world", "node", "cuda", "bus id", "NUMA", "CPUs", "NIC", "pid"]]
    rows += [
        [
            cell(e.rank),
            cell(e.host),
            cell(e.local_rank),
            cell(e.world_size),
            cell(e.node_rank),
            cell(e.cuda_index),
            cell(e.bus_id),
            cell(e.numa_node),
            cell(e.cpu_affinity),
            cell(e.nic),
            cell(e.pid),
        ]
        for e in ranks
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def topology_text(target, host=None) -> str:
    snap, note = _node_of(target, host)
    return f"Topology of {_sections(summary_text(snap), ('GPUs', 'Links'))}{note}"


def numa_text(target, host=None) -> str:
    snap, note = _node_of(target, host)
    text = f"NUMA placement on {_sections(summary_text(snap), ('NUMA', 'NICs'))}"
    ranks = [e for e in ranks_of(target) if e.host == snap.hostname]
    if ranks:
        text += "\n\nRanks on this node\n" + "\n".join(_rank_rows(ranks))
    return text + note


def ranks_text(target, limit: int = 256) -> str:
    if not isinstance(target, ClusterReport) or not target.ranks:
        return "No rank table: the rank map needs a ClusterReport with ranks."
    hosts = len({e.host for e in target.ranks})
    ranks = sorted(target.ranks, key=lambda e: (e.host, e.rank))
    more = f"\n  ... and {len(ranks) - limit} more ranks (`ncclnb show REPORT --json`)" if len(ranks) > limit else ""
    return (
        f"Rank map: {how_many(len(ranks), 'rank')} on {how_many(hosts, 'node')}\n" + "\n".join(_rank_rows(ranks[:limit])) + more
    )


def versions_text(target, limit: int = 32) -> str:
    snaps = snapshots_of(target)
    parts = [f"Versions on {how_many(len(snaps), 'node')}"]
    for snap in snaps[:limit]:
        block = _sections(summary_text(snap), ("Versions",)).split("\n\n")
        parts.append(f"{snap.hostname}\n" + "\n".join(block[1].split("\n")[1:]) if len(block) > 1 else snap.hostname)
    if len(snaps) > limit:
        parts.append(f"... and {len(snaps) - limit} more nodes (`ncclnb show REPORT`)")
    return terminal_text("\n\n".join(parts))


def findings_text(findings, target=None) -> str:
    """Findings of the checks as ``ncclnb check`` prints them."""
    from ..checks import registry

    n_nodes = len(snapshots_of(target)) if target is not None else None
    return render_findings(list(findings), len(registry()), n_nodes)  # escaped there, line by line


def _target_findings(target):
    from ._common import report_findings, run_checks

    return report_findings(target) if isinstance(target, ClusterReport) else run_checks(target)


def jobmap_text(target) -> str:
    findings, problem = _target_findings(target)
    text = f"Job map\n{summary_text(target)}\n\nWhat the findings name\n{findings_text(findings, target)}"
    return text + (f"\n({problem})" if problem else "")


def links_text(target) -> str:
    if not isinstance(target, ClusterReport) or not target.links:
        return "Link results: no link test in this report (ran with --no-link-test?)"
    from ..model.bandwidth import size_text

    out = ["Link results"]
    for test in target.links:
        out.append(
            f"\n{test.backend} on {test.device}: {test.world_size} ranks on {test.nodes} "
            f"node{'s' if test.nodes != 1 else ''}, {test.iterations} iterations"
        )
        if test.results:
            out.append(f"  {'collective':15} {'size':>10} {'time (us)':>12} {'algbw GB/s':>11} {'busbw GB/s':>11}")
            out += [
                f"  {m.collective:15} {size_text(m.size_bytes):>10} {m.time_us:12.1f} {m.algbw_gbps:11.2f} {m.busbw_gbps:11.2f}"
                for m in test.results
            ]
        if test.pairs:
            out.append("  pairs")
            out += [
                f"    {p.src_rank} ({p.src_host}) -> {p.dst_rank} ({p.dst_host}): {size_text(p.size_bytes)}, "
                f"{p.busbw_gbps:.2f} GB/s"
                for p in test.pairs
            ]
        for t in test.transports[:64]:
            out.append(f"  rank {t.rank} -> {t.peer} via {t.transport}")
        for part, why in test.missing.items():
            out.append(f"  not measured: {part}: {why}")
    findings, problem = _target_findings(target)
    link = [f for f in findings if f.rule.startswith("link_")]
    out.append("\n" + findings_text(link, target) + (f"\n({problem})" if problem else ""))
    return terminal_text("\n".join(out))


def dashboard_text(target, diag=None, limit: int = 8) -> str:
    findings, problem = _target_findings(target)
    parts = ["Checks\n" + findings_text(findings, target) + (f"\n({problem})" if problem else "")]
    if diag is not None:
        parts.append(render_diagnosis(diag).rstrip("\n"))
    parts.append(summary_text(target))
    if isinstance(target, ClusterReport):
        snaps = snapshots_of(target)
        parts += [summary_text(snap) for snap in snaps[:limit]]
        if len(snaps) > limit:
            parts.append(f"... and {len(snaps) - limit} more nodes (`ncclnb show REPORT`)")
    return "\n\n".join(parts)


VIEW_TEXT = {
    "show_topology": topology_text,
    "show_numa": numa_text,
    "show_ranks": ranks_text,
    "show_job_map": jobmap_text,
    "show_links": links_text,
    "show_versions": versions_text,
}


def alignment_text(facts) -> str:
    first = facts.first_divergence
    lines = [
        f"Flight-recorder alignment: {how_many(len(facts.ranks), 'rank')}, {how_many(len(facts.groups), 'group')}; "
        + (f"first divergence at #{first[1].seq} of group {first[0].pg}" if first else "no divergence")
    ]
    for f in getattr(facts, "findings", ())[:8]:
        lines.append(f"  {f.severity.upper():8}{f.title}")
    return terminal_text("\n".join(lines))


def pairing_text(facts) -> str:
    n = len(facts.unpaired)
    lines = [f"Send/recv pairing: {len(facts.ranks)} ranks, {n} unpaired op{'s' if n != 1 else ''}"]
    lines += [f"  {u.text}: no {'receive' if u.kind == 'send' else 'send'} on the other side" for u in facts.unpaired[:64]]
    if n > 64:
        lines.append(f"  ... {n - 64} more")
    if not n:
        lines.append("  Every send has its receive.")
    return terminal_text("\n".join(lines))


RUN_TEXT = {"show_alignment": alignment_text, "show_pairing": pairing_text}


def view_text(name: str, *args, **kwargs) -> str:
    """The full text form printed in text mode for the view
    ``ncclnb.<name>(*args, **kwargs)`` (``name`` one of the ``show_*``
    functions, ``dashboard``, or ``findings`` for the checks' findings): what a view shows as text/plain where the
    frontend shows only text (:func:`renderer` is ``text``)."""
    if name == "dashboard":
        return dashboard_text(*args, **kwargs)
    if name == "findings":
        return findings_text(*args, **kwargs)
    if name == "show_diagnosis":
        (diag,) = args
        return render_diagnosis(diag).rstrip("\n") if isinstance(diag, Diagnosis) else findings_text(list(diag))
    if name in RUN_TEXT:
        return RUN_TEXT[name](*args)
    return VIEW_TEXT[name](*args, **kwargs)
