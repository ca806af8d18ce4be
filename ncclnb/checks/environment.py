"""NCCL_* settings that differ between the nodes of one job."""

from __future__ import annotations

from collections import defaultdict

from ..model import ClusterReport, NodeSnapshot
from ._registry import fact, make, register

# Settings that name host-local things (interfaces, HCAs, files) or only
# change logging: differing values are normal, so they are reported as info.
HOST_LOCAL = {
    "NCCL_SOCKET_IFNAME",
    "NCCL_IB_HCA",
    "NCCL_DEBUG",
    "NCCL_DEBUG_SUBSYS",
    "NCCL_DEBUG_FILE",
    "NCCL_TOPO_DUMP_FILE",
    "NCCL_GRAPH_DUMP_FILE",
    "NCCL_HOSTID",
    "NCCL_COMM_ID",
}
ABSENT = "(unset)"


@register("nccl_env_differs", "nccl_env_override", "report")
def nccl_env_differs(report: ClusterReport):
    """NCCL_* environment variables differ across the nodes of a job."""
    snaps = [s for s in report.snapshots or () if isinstance(s, NodeSnapshot)]
    if len(snaps) < 2:
        return []
    keys = sorted({k for s in snaps for k in (s.env or {}) if isinstance(k, str) and k.startswith("NCCL_")})
    differing = {}
    for key in keys:
        by_value: dict[str, list[str]] = defaultdict(list)
        for s in snaps:
            value = (s.env or {}).get(key)
            by_value[value if isinstance(value, str) else ABSENT].append(s.hostname)
        if len(by_value) > 1:
            differing[key] = by_value
    if not differing:
        return []
    out = []
    for local in (False, True):
        group = {k: v for k, v in differing.items() if (k in HOST_LOCAL) == local}
        if not group:
            continue
        lines, hosts = [], set()
        for key, by_value in group.items():
            common = max(by_value.items(), key=lambda kv: len(kv[1]))[0]
            parts = []
            for value, hs in sorted(by_value.items(), key=lambda kv: -len(kv[1])):
                names = ", ".join(hs[:4]) + (f" (+{len(hs) - 4})" if len(hs) > 4 else "")
                parts.append(f"{value} on {names}")
                if value != common:
                    hosts.update(hs)
            lines.append(f"{key}: " + "; ".join(parts))
        ranks = [r.rank for r in report.ranks or () if r.host in hosts and isinstance(r.rank, int)]
        if local:
            out.append(
                make(
                    "nccl_env_differs",
                    "info",
                    0.3,
                    f"Host-specific NCCL settings differ across nodes: {', '.join(group)}",
                    [fact("report", t) for t in lines[:12]],
                    cause="These name local interfaces, HCAs or log files, which may rightly differ per host.",
                    fix="Nothing to do if each value is right for its host (see the socket_ifname check).",
                    hosts=sorted(hosts),
                )
            )
        else:
            out.append(
                make(
                    "nccl_env_differs",
                    "warning",
                    0.6,
                    f"NCCL settings differ across nodes: {', '.join(group)}",
                    [fact("report", t) for t in lines[:12]],
                    cause="Ranks on different nodes then choose different transports, algorithms, protocols or "
                    "buffer sizes; NCCL expects every rank to agree, and a disagreement shows up as a hang or "
                    "a crash far from its cause.",
                    fix="Export the same NCCL_* settings on every node (one launcher script or env file), or none.",
                    hosts=sorted(hosts),
                    ranks=ranks,
                )
            )
    return out
