"""Link checks: the survey's link test (or a user's nccl-tests run) against
what the hardware should reach, slow pairs, NCCL falling back to sockets,
and a link test that did not finish. They read ``report.links``; which
reference row applies is :func:`ncclnb.model.bandwidth.match_reference`'s
answer, never re-derived here."""

from __future__ import annotations

from ..model import ClusterReport, LinkTest
from ..model.bandwidth import BusbwReference, match_reference, size_text
from ..model.derive import rdma_nics
from ._facts import how_many
from ._registry import fact, make, register

SOURCE = "link test"
SLOW_PAIR_RATIO = 3.0  # a pair at under a third of the others' median is not noise (loopback gloo varies ~2x)
ABOVE_SLACK = 1.10  # 10% over the band's top before "above the band" is worth saying


def _links(report: ClusterReport):
    return [link for link in (report.links or ()) if isinstance(link, LinkTest)]


def _gb(value: float) -> str:
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def _row_evidence(row: BusbwReference, why: str) -> list:
    return [
        fact(
            f"reference:{row.id}",
            f"{row.hardware}, {row.scope}, {row.collective} ({row.algo}): "
            f"{row.low_gbps:g}-{row.high_gbps:g} GB/s busbw from {size_text(row.min_size_bytes)} "
            f"messages; chosen because {why}",
        ),
        fact(f"reference:{row.id}", f"basis {row.basis}: {row.source}"[:1000]),
    ]


def _where(link: LinkTest) -> str:
    return f"{link.backend} on {link.device}, {how_many(link.world_size, 'rank')} on {how_many(link.nodes, 'node')}"


@register("link_busbw_low", "p2p_topology", "report")
def link_busbw_low(report: ClusterReport):
    """The link test's large-message all_reduce busbw against the reference table: normal, low (and by how much),
    too small a message to judge, or unknown hardware; only "low" is a warning."""
    found = []
    for link in _links(report):
        ar = [m for m in link.results if m.collective == "all_reduce"]
        if not ar:
            continue  # nothing measured: link_test_incomplete says why
        largest = max(ar, key=lambda m: m.size_bytes)
        measured = fact(
            SOURCE,
            f"{_where(link)}: all_reduce busbw {_gb(largest.busbw_gbps)} GB/s at "
            f"{size_text(largest.size_bytes)} ({largest.time_us:g} us, algbw "
            f"{_gb(largest.algbw_gbps)} GB/s)",
        )
        algo = link.env.get("NCCL_ALGO")
        env_line = [fact(SOURCE, f"NCCL_ALGO={algo}")] if algo else []
        row, why = match_reference(link, report.snapshots)
        if row is None:
            found.append(
                make(
                    "link_busbw_low.no_reference",
                    "info",
                    0.5,
                    [measured, *env_line],
                    measured=_gb(largest.busbw_gbps),
                    why=why,
                )
            )
            continue
        big = [m for m in ar if m.size_bytes >= row.min_size_bytes]
        evidence = [measured, *env_line, *_row_evidence(row, why)]
        if not big:
            found.append(
                make(
                    "link_busbw_low.too_small",
                    "info",
                    0.6,
                    evidence,
                    largest=size_text(largest.size_bytes),
                    min_size=size_text(row.min_size_bytes),
                    min_gib=row.min_size_bytes >> 30 or 1,
                    hardware=row.hardware,
                    band=f"{row.low_gbps:g}-{row.high_gbps:g} GB/s",
                )
            )
            continue
        best = max(big, key=lambda m: m.busbw_gbps)
        best_line = fact(
            SOURCE,
            f"best all_reduce busbw from {size_text(row.min_size_bytes)} up: "
            f"{_gb(best.busbw_gbps)} GB/s at {size_text(best.size_bytes)}",
        )
        judged = dict(best=_gb(best.busbw_gbps), band=f"{row.low_gbps:g}-{row.high_gbps:g} GB/s", hardware=row.hardware)
        if best.busbw_gbps < row.low_gbps:
            short = 1 - best.busbw_gbps / row.low_gbps
            found.append(
                make(
                    "link_busbw_low",
                    "warning",
                    round(min(0.9, 0.5 + short), 2),
                    [best_line, *evidence],
                    short=f"{short:.0%}",
                    basis=row.basis,
                    **judged,
                )
            )
        elif best.busbw_gbps > row.high_gbps * ABOVE_SLACK:
            found.append(make("link_busbw_low.above", "info", 0.6, [best_line, *evidence], **judged))
        else:
            found.append(make("link_busbw_low.normal", "info", 0.8, [best_line, *evidence], **judged))
    return found


def _median_without(values: list, k: int) -> float:
    """Median of sorted ``values`` with the k-th left out (O(1))."""
    n = len(values) - 1

    def at(j):
        return values[j if j < k else j + 1]

    return (at((n - 1) // 2) + at(n // 2)) / 2


@register("link_slow_pair", "p2p_topology", "report")
def link_slow_pair(report: ClusterReport):
    """A pair of the link test's point-to-point ring runs at under a third of the median busbw of the other pairs:
    the link (or a node) between those two ranks is slower than the rest."""
    found = []
    for link in _links(report):
        pairs = sorted((p for p in link.pairs if p.busbw_gbps >= 0), key=lambda p: p.busbw_gbps)
        if len(pairs) < 2:
            continue
        values = [p.busbw_gbps for p in pairs]
        for k, p in enumerate(pairs):
            median = _median_without(values, k)
            if median <= 0 or p.busbw_gbps * SLOW_PAIR_RATIO >= median:
                break  # sorted: every later pair is faster still
            found.append(
                make(
                    "link_slow_pair",
                    "warning",
                    0.7,
                    evidence=[
                        fact(
                            SOURCE,
                            f"{_where(link)}: pair {p.src_rank} -> {p.dst_rank}, {size_text(p.size_bytes)}: "
                            f"{p.time_us:g} us, {_gb(p.busbw_gbps)} GB/s",
                        ),
                        fact(
                            SOURCE,
                            f"the other {how_many(len(pairs) - 1, 'pair')} of the ring: median {_gb(median)} GB/s, "
                            f"fastest {_gb(pairs[-1].busbw_gbps if k != len(pairs) - 1 else pairs[-2].busbw_gbps)} GB/s",
                        ),
                    ],
                    ranks=(p.src_rank, p.dst_rank),
                    hosts=(p.src_host, p.dst_host),
                    src_rank=p.src_rank,
                    src_host=p.src_host,
                    dst_rank=p.dst_rank,
                    dst_host=p.dst_host,
                    busbw=_gb(p.busbw_gbps),
                    ratio=f"{median / max(p.busbw_gbps, 1e-9):.1f}",
                    median=_gb(median),
                )
            )
    return found


def _hosts_by_rank(report: ClusterReport) -> dict:
    return {r.rank: r.host for r in report.ranks or ()}


@register("link_socket_fallback", "ib_misconfig", "report")
def link_socket_fallback(report: ClusterReport):
    """NCCL moved data between nodes over NET/Socket (TCP) although the snapshots show an InfiniBand/RoCE NIC
    that is up on both nodes."""
    host_of = _hosts_by_rank(report)
    rdma = {s.hostname: [n.name for n in rdma_nics(s)] for s in report.snapshots}
    found = []
    for link in _links(report):
        culprits, lines = [], []
        for t in link.transports:
            if not t.transport.startswith("NET/Socket"):
                continue
            a, b = host_of.get(t.rank), host_of.get(t.peer)
            if a is None or b is None or a == b or not rdma.get(a) or not rdma.get(b):
                continue
            culprits.append(t)
            if len(lines) < 8:
                lines.append(fact(SOURCE, f"rank {t.rank} ({a}) -> rank {t.peer} ({b}): {t.line}"))
        if not culprits:
            continue
        hosts = sorted({host_of[t.rank] for t in culprits} | {host_of[t.peer] for t in culprits})
        nics = sorted({n for h in hosts for n in rdma[h]})
        found.append(
            make(
                "link_socket_fallback",
                "warning",
                0.8,
                evidence=[*lines, fact(SOURCE, f"{how_many(len(culprits), 'rank pair')} over NET/Socket between nodes")],
                ranks=sorted({t.rank for t in culprits} | {t.peer for t in culprits}),
                hosts=hosts,
                nodes=how_many(len(hosts), "node"),
                nics=f"{', '.join(nics[:4])}{', ...' if len(nics) > 4 else ''}",
            )
        )
    return found


@register("link_net_within_node", "p2p_topology", "report")
def link_net_within_node(report: ClusterReport):
    """NCCL sent data between two ranks of one node through the network (NET/...) instead of P2P or shared memory."""
    host_of = _hosts_by_rank(report)
    found = []
    for link in _links(report):
        culprits = [
            t
            for t in link.transports
            if t.transport.startswith("NET/") and host_of.get(t.rank) is not None and host_of.get(t.rank) == host_of.get(t.peer)
        ]
        if not culprits:
            continue
        hosts = sorted({host_of[t.rank] for t in culprits})
        found.append(
            make(
                "link_net_within_node",
                "warning",
                0.7,
                evidence=[fact(SOURCE, f"rank {t.rank} -> rank {t.peer} ({host_of[t.rank]}): {t.line}") for t in culprits[:8]],
                ranks=sorted({t.rank for t in culprits} | {t.peer for t in culprits}),
                hosts=hosts,
                hostnames=", ".join(hosts[:4]),
            )
        )
    return found


@register("link_test_incomplete", "unknown", "report")
def link_test_incomplete(report: ClusterReport):
    """The link test stopped before it measured everything (a collective or exchange failed or timed out): what
    is missing, and why."""
    found = []
    for link in _links(report):
        if not link.missing:
            continue
        found.append(
            make(
                "link_test_incomplete",
                "warning",
                0.6,
                [fact(SOURCE, f"{part}: {why}"[:1000]) for part, why in list(link.missing.items())[:8]],
                backend=link.backend,
                missing="; ".join(f"{part}: {why}" for part, why in list(link.missing.items())[:3])[:300],
            )
        )
    return found
