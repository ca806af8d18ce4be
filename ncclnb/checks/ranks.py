"""Rank-table checks (seed 000's ranks beyond the world size), the GPU each
rank uses (seed 001's barrier on a guessed GPU), and where each rank sits
against its GPU: its CPU affinity and the NIC its NCCL would use."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Optional

from ..model import ClusterReport, NodeSnapshot, NumaNode, RankEntry
from ..model.cpulist import covers, overlaps, spans
from ..model.derive import job_world_size, link_distance, rdma_nics
from ..model.words import span
from ._facts import (
    NodeFacts,
    env_flag,
    how_many,
    index_list,
    is_docker,
    is_loopback,
    shorten,
    socket_interfaces,
)
from ._registry import fact, make, node_source, register

MAX_EVIDENCE = 8  # lines per finding; a 1024-node table must stay readable


SPAN = 24  # ranges in a title or an evidence line


def _capped(lines: list, source: str = "report", total: Optional[int] = None):
    """The first MAX_EVIDENCE lines, then "... and N more" (``total``: how many
    lines there would be, when the caller built only the first ones)."""
    total = len(lines) if total is None else total
    out = [fact(source, t) for t in lines[:MAX_EVIDENCE]]
    if total > MAX_EVIDENCE:
        out.append(fact(source, f"... and {total - MAX_EVIDENCE} more"))
    return out


def _entries(report: ClusterReport) -> list[RankEntry]:
    return [r for r in report.ranks or () if isinstance(r, RankEntry) and isinstance(r.rank, int)]


def _world_size(entries: list[RankEntry]) -> Optional[int]:
    return job_world_size(entries)


def _by_host(entries: list[RankEntry]) -> dict[str, list[RankEntry]]:
    out: dict[str, list[RankEntry]] = defaultdict(list)
    for r in entries:
        out[r.host].append(r)
    return out


def _agree(items, one: str, many: str) -> str:
    """The verb or pronoun that agrees with how many ``items``: "1 rank uses", "2 ranks use"."""
    return one if len(items) == 1 else many


@register("rank_out_of_range", "rank_world_size_mismatch", "report")
def rank_out_of_range(report: ClusterReport):
    """A rank is >= the WORLD_SIZE it was started with (NCCL: 'Invalid rank requested : 7/4')."""
    bad = [r for r in _entries(report) if isinstance(r.world_size, int) and not 0 <= r.rank < r.world_size]
    if not bad:
        return []
    lines = []
    for host, rs in _by_host(bad).items():
        sizes = sorted({r.world_size for r in rs})
        lines.append(f"{host}: RANK {span((r.rank for r in rs), SPAN)} with WORLD_SIZE={'/'.join(map(str, sizes[:8]))}")
    worst = max(bad, key=lambda r: r.rank)
    return [
        make(
            "rank_out_of_range",
            "error",
            0.95,
            _capped(lines),
            ranks=[r.rank for r in bad],
            hosts=[r.host for r in bad],
            count=how_many(len(bad), "rank"),
            rank_span=span((r.rank for r in bad), SPAN),
            worst_rank=worst.rank,
            worst_world=worst.world_size,
        )
    ]


@register("rank_table_gaps", "rank_world_size_mismatch", "report")
def rank_table_gaps(report: ClusterReport):
    """Ranks missing from 0..WORLD_SIZE-1, or the same rank started twice."""
    entries = _entries(report)
    world = _world_size(entries)
    if not entries or world is None:
        return []
    counts = Counter(r.rank for r in entries)
    dup = sorted(k for k, n in counts.items() if n > 1)
    missing = sorted(set(range(world)) - set(counts)) if world <= 1 << 20 else []
    out = []
    if dup:
        dup_set = set(dup)
        hosts_of: dict[int, set] = defaultdict(set)  # one pass, not one per duplicated rank
        for r in entries:
            if r.rank in dup_set:
                hosts_of[r.rank].add(r.host)
        lines = [f"RANK {k} on " + ", ".join(sorted(hosts_of[k])) for k in dup[:MAX_EVIDENCE]]
        out.append(
            make(
                "rank_table_gaps.duplicate",
                "error",
                0.9,
                _capped(lines, total=len(dup)),
                ranks=dup,
                hosts=[r.host for r in entries if r.rank in dup_set],
                ranks_word="Rank" if len(dup) == 1 else "Ranks",
                rank_span=span(dup, SPAN),
            )
        )
    if missing:
        out.append(
            make(
                "rank_table_gaps",
                "error",
                0.8,
                [fact("report", f"WORLD_SIZE={world}; ranks present: {span(counts, SPAN)}; missing: {span(missing, SPAN)}")],
                ranks=missing,
                count=len(missing),
                world=how_many(world, "rank"),
                rank_span=span(missing, SPAN),
            )
        )
    return out


@register("world_size_vs_nodes", "rank_world_size_mismatch", "report")
def world_size_vs_nodes(report: ClusterReport):
    """WORLD_SIZE is not nodes x ranks per node, or ranks disagree on WORLD_SIZE."""
    entries = _entries(report)
    if not entries:
        return []
    hosts = _by_host(entries)
    sizes = defaultdict(set)
    for r in entries:
        if isinstance(r.world_size, int):
            sizes[r.world_size].add(r.host)
    out = []
    if len(sizes) > 1:
        lines = [f"WORLD_SIZE={w} on {_hosts_text(h)}" for w, h in sorted(sizes.items())]
        common = _world_size(entries)
        odd = [r for r in entries if isinstance(r.world_size, int) and r.world_size != common]
        out.append(
            make(
                "world_size_vs_nodes.disagree",
                "error",
                0.9,
                _capped(lines),
                ranks=[r.rank for r in odd],
                hosts=[r.host for r in odd],
                sizes=shorten(", ".join(str(w) for w in sorted(sizes))),
            )
        )
    world = _world_size(entries)
    per_node = {h: len(rs) for h, rs in hosts.items()}
    if world is not None and len(set(per_node.values())) == 1:
        n = next(iter(per_node.values()))
        expected = len(hosts) * n
        if expected != world:
            out.append(
                make(
                    "world_size_vs_nodes",
                    "error",
                    0.85,
                    [
                        fact("report", f"{h}: {how_many(c, 'rank')}, RANK {span((r.rank for r in hosts[h]), SPAN)}")
                        for h, c in list(per_node.items())[:MAX_EVIDENCE]
                    ],
                    ranks=[r.rank for r in entries if r.rank >= world],
                    hosts=list(hosts),
                    world=world,
                    nodes=how_many(len(hosts), "node"),
                    per_node=how_many(n, "rank"),
                    expected=expected,
                )
            )
    return out


@register("local_rank_table", "device_mapping", "report")
def local_rank_table(report: ClusterReport):
    """Two ranks on one node hold the same LOCAL_RANK, or (in a complete rank
    table) a LOCAL_RANK is not below the number of ranks on its node."""
    entries = _entries(report)
    world = _world_size(entries)
    complete = world is not None and sorted(r.rank for r in entries) == list(range(world))
    dup_lines, dup_ranks, over_lines, over_ranks = [], [], [], []
    for host, rs in _by_host(entries).items():
        held: dict[int, list[RankEntry]] = defaultdict(list)
        for r in rs:
            if isinstance(r.local_rank, int):
                held[r.local_rank].append(r)
        for local, holders in sorted(held.items()):
            if len(holders) > 1:
                dup_lines.append(f"{host}: LOCAL_RANK {local} held by RANK {span((r.rank for r in holders), SPAN)}")
                dup_ranks += holders
            elif complete and not 0 <= local < len(rs):
                over_lines.append(
                    f"{host}: RANK {holders[0].rank} has LOCAL_RANK {local}, but the node runs "
                    f"{how_many(len(rs), 'rank')} (LOCAL_RANK 0-{len(rs) - 1})"
                )
                over_ranks += holders
    out = []
    if dup_lines:
        out.append(
            make(
                "local_rank_table",
                "error",
                0.85,
                _capped(dup_lines),
                ranks=[r.rank for r in dup_ranks],
                hosts=[r.host for r in dup_ranks],
                count=len(dup_ranks),
            )
        )
    if over_lines:
        out.append(
            make(
                "local_rank_table.beyond_node",
                "warning",
                0.6,
                _capped(over_lines),
                ranks=[r.rank for r in over_ranks],
                hosts=[r.host for r in over_ranks],
                count=how_many(len(over_ranks), "rank"),
                have=_agree(over_ranks, "has", "have"),
                their=_agree(over_ranks, "its", "their"),
            )
        )
    return out


class _Nodes:
    """NodeFacts of each host of a report, built on first use: a report
    check resolves every rank's GPU with one index per host, not one scan
    of the host's GPUs per rank."""

    def __init__(self, report: ClusterReport):
        self.report = report
        self._facts: dict[str, Optional[NodeFacts]] = {}

    def __call__(self, host) -> Optional[NodeFacts]:
        if host not in self._facts:
            snap = self.report.snapshot(host) if host else None
            self._facts[host] = NodeFacts(snap) if snap is not None else None
        return self._facts[host]


def _gpu_key(nodes: _Nodes, r: RankEntry):
    """(what names the rank's GPU on its host, how sure that is, the GPU where
    the snapshot resolves it): the GPU itself, else the UUID or CUDA index the
    rank recorded (a host with no snapshot)."""
    facts = nodes(r.host)
    g = facts.rank_gpu(r) if facts is not None else None
    if g is not None:
        return (r.host, f"GPU{g.index}"), 0.95, g
    if isinstance(r.gpu_uuid, str) and r.gpu_uuid:
        return (r.host, r.gpu_uuid), 0.9, None
    if isinstance(r.cuda_index, int):
        return (r.host, f"cuda:{r.cuda_index}"), 0.75, None
    return None, 0.0, None


def _rank_gpu(nodes: _Nodes, r: RankEntry):
    facts = nodes(r.host)
    return facts.rank_gpu(r) if facts is not None else None


def _gpu_refs(pairs) -> list:
    """``(host, GPU or None)`` pairs -> the ``(host, NVML index)`` a finding names."""
    return [(host, g.index) for host, g in pairs if g is not None and isinstance(g.index, int)]


def _hosts_text(hosts, limit: int = 8) -> str:
    names = sorted(hosts)
    return ", ".join(names[:limit]) + (f", ... ({len(names)} hosts)" if len(names) > limit else "")


@register("ranks_share_gpu", "device_mapping", "report")
def ranks_share_gpu(report: ClusterReport):
    """Two or more ranks use the same GPU (NCCL: 'Duplicate GPU detected')."""
    groups: dict[tuple, list[RankEntry]] = defaultdict(list)
    conf = {}
    gpu_of: dict[tuple, object] = {}
    nodes = _Nodes(report)
    for r in _entries(report):
        key, c, g = _gpu_key(nodes, r)
        if key is not None:
            groups[key].append(r)
            conf[key] = min(conf.get(key, 1.0), c)
            gpu_of[key] = g
    shared = {k: v for k, v in groups.items() if len(v) > 1}
    if not shared:
        return []
    lines = [
        f"{host} {gpu}: RANK {span((r.rank for r in rs), SPAN)} (LOCAL_RANK "
        f"{shorten(', '.join(str(r.local_rank) for r in rs[:64]))})"
        for (host, gpu), rs in list(shared.items())[:MAX_EVIDENCE]
    ]
    blamed = [r for rs in shared.values() for r in rs]
    return [
        make(
            "ranks_share_gpu",
            "error",
            min(conf[k] for k in shared),
            _capped(lines, total=len(shared)),
            ranks=[r.rank for r in blamed],
            hosts=[r.host for r in blamed],
            gpus=_gpu_refs((host, gpu_of[(host, gpu)]) for host, gpu in shared),
            count=len(blamed),
            gpu_count=how_many(len(shared), "GPU"),
        )
    ]


@register("local_rank_device", "device_mapping", "report")
def local_rank_device(report: ClusterReport):
    """A rank's GPU differs from its LOCAL_RANK, or no device was set and torch
    will guess one for barrier() (global rank % local device count)."""
    wrong, guessed_bad, guessed_ok = [], [], []
    nodes = _Nodes(report)
    for r in _entries(report):
        if not isinstance(r.local_rank, int):
            continue
        if isinstance(r.cuda_index, int):
            if r.cuda_index != r.local_rank:
                wrong.append(f"{r.host}: RANK {r.rank} LOCAL_RANK {r.local_rank} uses cuda:{r.cuda_index}")
            continue
        facts = nodes(r.host)
        count = facts.visible_count() if facts is not None else 0
        if count <= 0:
            continue
        guess = r.rank % count
        line = (
            f"{r.host}: RANK {r.rank} LOCAL_RANK {r.local_rank}, no device set: barrier() guesses "
            f"cuda:{guess} ({r.rank} % {count} visible GPUs)"
        )
        guessed = facts.cuda_gpu(guess) if facts is not None else None  # the GPU barrier() would create a context on
        (guessed_ok if guess == r.local_rank else guessed_bad).append((r, line, guessed))
    out = []
    if wrong:
        blamed = [
            r
            for r in _entries(report)
            if isinstance(r.cuda_index, int) and isinstance(r.local_rank, int) and r.cuda_index != r.local_rank
        ]
        on = [(r.host, _rank_gpu(nodes, r)) for r in blamed]
        out.append(
            make(
                "local_rank_device",
                "warning",
                0.6,
                _capped(wrong),
                ranks=[r.rank for r in blamed],
                hosts=[r.host for r in blamed],
                gpus=_gpu_refs(on),
                count=how_many(len(blamed), "rank"),
                use=_agree(blamed, "uses", "use"),
            )
        )
    barrier_src = (
        "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp guessDeviceForRank(): rank % localDeviceCount when no device is bound"
    )
    if guessed_bad:
        out.append(
            make(
                "local_rank_device.barrier_guess",
                "warning",
                0.75,
                _capped([line for _, line, _ in guessed_bad])
                + [fact(barrier_src, "using GPU N to perform barrier as devices used by this process are currently unknown")],
                ranks=[r.rank for r, _, _ in guessed_bad],
                hosts=[r.host for r, _, _ in guessed_bad],
                gpus=_gpu_refs((r.host, g) for r, _, g in guessed_bad),
                count=how_many(len(guessed_bad), "rank"),
                set=_agree(guessed_bad, "sets", "set"),
                their=_agree(guessed_bad, "its", "their"),
            )
        )
    if guessed_ok:
        out.append(
            make(
                "local_rank_device.barrier_guess_right",
                "info",
                0.5,
                _capped([line for _, line, _ in guessed_ok]),
                ranks=[r.rank for r, _, _ in guessed_ok],
                hosts=[r.host for r, _, _ in guessed_ok],
                gpus=_gpu_refs((r.host, g) for r, _, g in guessed_ok),
                count=how_many(len(guessed_ok), "rank"),
                set=_agree(guessed_ok, "sets", "set"),
                their=_agree(guessed_ok, "its", "their"),
            )
        )
    return out


@register("cuda_visible_devices_invalid", "device_mapping", "node")
def cuda_visible_devices_invalid(snap: NodeSnapshot, ranks=()):
    """CUDA_VISIBLE_DEVICES names a GPU this node does not have (CUDA hides it and every later entry)."""
    facts = NodeFacts(snap)
    if not facts.gpus:
        return []
    chosen, bad = facts.parse_visible()
    if not bad:
        return []
    raw = shorten(snap.env.get("CUDA_VISIBLE_DEVICES"))
    have = index_list(facts.gpus).replace(",", ", ")
    named = ",".join(bad[:16]) + (f",... ({len(bad)} entries)" if len(bad) > 16 else "")
    return [
        make(
            "cuda_visible_devices_invalid",
            "error" if not chosen else "warning",
            0.85,
            [
                fact(
                    node_source(snap.hostname),
                    f"CUDA_VISIBLE_DEVICES={raw}; GPUs present: {have}; visible to CUDA: {len(chosen or [])}",
                )
            ],
            hosts=(snap.hostname,),
            ranks=[r.rank for r in ranks or () if isinstance(r.rank, int)],
            value=raw,
            gpu_word="GPU" if len(bad) == 1 else "GPUs",
            named=named,
            hostname=snap.hostname,
        )
    ]


# --- where each rank sits: its CPUs and its NIC against its GPU --------------------------


def _gpu_numa(nodes: _Nodes, r: RankEntry):
    """(GPU or None, the NUMA node of the rank's GPU or None): the snapshot's
    GPU facts first; else the rank's own reading of its device's NUMA node,
    which it has only when it knew its device (a bus id)."""
    facts = nodes(r.host)
    g = facts.rank_gpu(r) if facts is not None else None
    if g is not None and isinstance(g.numa_node, int):
        return g, g.numa_node
    if isinstance(r.bus_id, str) and r.bus_id and isinstance(r.numa_node, int):
        return g, r.numa_node
    return g, None


def _gpu_name(g, r: RankEntry) -> str:
    if g is not None:
        return f"GPU{g.index}"
    return f"cuda:{r.cuda_index}" if isinstance(r.cuda_index, int) else f"GPU at {r.bus_id}"


@register("rank_affinity_numa", "p2p_topology", "report")
def rank_affinity_numa(report: ClusterReport):
    """A rank's CPU affinity lies outside the NUMA node of its GPU.

    A warning when none of the rank's CPUs is on its GPU's NUMA node (pinned
    to the other socket); info when it is pinned to a set that reaches past
    that node. A rank allowed every CPU of its host (no pinning, the default)
    is not flagged."""
    nodes = _Nodes(report)
    off, partly = [], []
    for r in _entries(report):
        if not isinstance(r.cpu_affinity, str) or not spans(r.cpu_affinity):
            continue
        g, numa = _gpu_numa(nodes, r)
        if numa is None:
            continue
        facts = nodes(r.host)
        numa_nodes = [n for n in (facts.snap.host.numa_nodes if facts is not None else ()) if isinstance(n, NumaNode)]
        node_cpus = next((n.cpus for n in numa_nodes if n.id == numa and n.cpus), None)
        if node_cpus is None and g is not None and isinstance(g.cpu_affinity, str) and spans(g.cpu_affinity):
            node_cpus = g.cpu_affinity
        if node_cpus is None or covers(node_cpus, r.cpu_affinity):
            continue
        line = (
            f"{r.host}: RANK {r.rank} on {_gpu_name(g, r)} (NUMA {numa}, CPUs {shorten(node_cpus, 40)}) "
            f"has CPU affinity {shorten(r.cpu_affinity, 40)}"
        )
        if not overlaps(node_cpus, r.cpu_affinity):
            off.append((r, line, g))
        elif numa_nodes and not all(covers(r.cpu_affinity, n.cpus) for n in numa_nodes if n.cpus):
            partly.append((r, line + ", partly on other NUMA nodes", g))
    out = []
    if off:
        out.append(
            make(
                "rank_affinity_numa",
                "warning",
                0.8,
                _capped([line for _, line, _ in off]),
                ranks=[r.rank for r, _, _ in off],
                hosts=[r.host for r, _, _ in off],
                gpus=_gpu_refs((r.host, g) for r, _, g in off),
                count=how_many(len(off), "rank"),
                run=_agree(off, "runs", "run"),
                their=_agree(off, "its", "their"),
                rank_span=span((r.rank for r, _, _ in off), SPAN),
            )
        )
    if partly:
        out.append(
            make(
                "rank_affinity_numa.spans",
                "info",
                0.5,
                _capped([line for _, line, _ in partly]),
                ranks=[r.rank for r, _, _ in partly],
                hosts=[r.host for r, _, _ in partly],
                gpus=_gpu_refs((r.host, g) for r, _, g in partly),
                count=how_many(len(partly), "rank"),
                are=_agree(partly, "is", "are"),
                their=_agree(partly, "its", "their"),
                rank_span=span((r.rank for r, _, _ in partly), SPAN),
            )
        )
    return out


class _HostNics:
    """The NICs of one snapshot, indexed once: which are HCAs NCCL's IB
    transport would use, which are socket interfaces, and each NIC's column
    in the GPU x NIC matrix (whose columns name a NIC by its HCA where it has
    one)."""

    def __init__(self, snap: NodeSnapshot):
        self.snap = snap
        names = list(snap.links.nic_names or ())
        self.column: dict[str, int] = {}
        for k, name in enumerate(names):
            if isinstance(name, str):
                self.column.setdefault(name, k)
        self.by_name: dict[str, object] = {}
        for n in snap.nics or ():
            for key in (n.name, n.ib_device):
                if isinstance(key, str):
                    self.by_name.setdefault(key, n)
            if isinstance(n.name, str) and isinstance(n.ib_device, str) and n.ib_device in self.column:
                self.column.setdefault(n.name, self.column[n.ib_device])
        hcas = rdma_nics(snap)
        self.hca_ids = {id(n) for n in hcas}
        self.ib_active = bool(hcas) and not env_flag(snap.env, "NCCL_IB_DISABLE")
        usable = [n for n in socket_interfaces(snap) if not is_loopback(n) and not is_docker(n)]
        self.peers = {True: hcas, False: usable}  # by "is the rank's NIC an HCA"


@register("rank_nic_far", "p2p_topology", "report")
def rank_nic_far(report: ClusterReport):
    """The NIC a rank's NCCL would use sits across the inter-socket link (SYS)
    from the rank's GPU, while a NIC nearer that GPU exists.

    The rank's NIC is the survey's reading of NCCL's choice
    (:mod:`ncclnb.survey.rankfacts`): an HCA where NCCL_IB_HCA names one, else
    the socket interface. A socket interface on a node where NCCL's IB
    transport is active is not judged: there NCCL picks the HCA per GPU.
    Distances come from the GPU x NIC matrix, else from NUMA nodes."""
    nodes = _Nodes(report)
    host_nics: dict[str, _HostNics] = {}
    far = []
    for r in _entries(report):
        if not isinstance(r.nic, str) or not r.nic:
            continue
        facts = nodes(r.host)
        g = facts.rank_gpu(r) if facts is not None else None
        if g is None:
            continue
        if r.host not in host_nics:
            host_nics[r.host] = _HostNics(facts.snap)
        nics = host_nics[r.host]
        mine = nics.by_name.get(r.nic)
        hca = mine is not None and id(mine) in nics.hca_ids
        if not hca and nics.ib_active:
            continue
        choice = _far_choice(nics, facts, g, r.nic, mine, [n for n in nics.peers[hca] if n is not mine])
        if choice is not None:
            far.append((r, g, choice))
    if not far:
        return []
    per_host = Counter(r.host for r in _entries(report))
    multi_node = len(report.snapshots or ()) > 1 or any(
        isinstance(r.world_size, int) and r.world_size > per_host[r.host] for r, _, _ in far
    )
    lines = [
        f"{r.host}: RANK {r.rank} on GPU{g.index} (NUMA {g.numa_node}) uses {r.nic} ({label}); {better} is {better_label}"
        for r, g, (label, better, better_label) in far[:MAX_EVIDENCE]
    ]
    links = []  # GPU -> the rank's NIC, as topo -m names them, where the GPU x NIC matrix has the pair
    for r, g, _ in far:
        col = host_nics[r.host].column.get(r.nic)
        if col is not None:
            links.append((r.host, f"GPU{g.index}", f"NIC{col}"))
    return [
        make(
            "rank_nic_far",
            "warning" if multi_node else "info",
            0.7,
            _capped(lines, total=len(far)),
            ranks=[r.rank for r, _, _ in far],
            hosts=[r.host for r, _, _ in far],
            gpus=_gpu_refs((r.host, g) for r, g, _ in far),
            links=links,
            count=how_many(len(far), "rank"),
            their=_agree(far, "its", "their"),
            rank_span=span((r.rank for r, _, _ in far), SPAN),
        )
    ]


SYS = link_distance("SYS")


def _far_choice(nics: _HostNics, facts: NodeFacts, g, nic: str, mine, peers):
    """(how far the rank's NIC is, a nearer NIC, how near it is) when the
    rank's NIC is SYS from the GPU (or on another NUMA node) and a peer is not;
    None otherwise, or when the distance is unknown."""
    row_at = facts.position(g)
    matrix = nics.snap.links.gpu_nic or ()
    col = nics.column.get(nic)
    if row_at is not None and row_at < len(matrix) and col is not None and col < len(matrix[row_at]):
        row = matrix[row_at]
        if (link_distance(row[col]) or 0) < SYS:
            return None
        best = None
        for n in peers:
            k = nics.column.get(n.name)
            d = link_distance(row[k]) if k is not None and k < len(row) else None
            if d is not None and d < SYS and (best is None or d < best[0]):
                best = (d, n.name, row[k])
        return (row[col], best[1], best[2]) if best else None
    if mine is None or not isinstance(mine.numa_node, int) or not isinstance(g.numa_node, int):
        return None
    if mine.numa_node == g.numa_node:
        return None
    near = next((n for n in peers if n.numa_node == g.numa_node), None)
    return None if near is None else (f"NUMA {mine.numa_node}", near.name, f"on NUMA {g.numa_node}")
