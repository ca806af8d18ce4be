"""NCCL_* settings that differ between the nodes of one job."""

from __future__ import annotations

from ..model import ClusterReport
from ..model.derive import nccl_env_splits
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


@register("nccl_env_differs", "nccl_env_override", "report")
def nccl_env_differs(report: ClusterReport):
    """NCCL_* environment variables differ across the nodes of a job.

    Which variable differs on which hosts is
    :func:`ncclnb.model.derive.nccl_env_splits` (the version table marks the
    same cells): the hosts off a strict majority's value are blamed, every
    host on a tie."""
    differing = nccl_env_splits(report.snapshots or ())
    if not differing:
        return []
    out = []
    for local in (False, True):
        group = {k: v for k, v in differing.items() if (k in HOST_LOCAL) == local}
        if not group:
            continue
        lines: list[str] = []
        hosts: set[str] = set()
        for key, split in group.items():
            parts = []
            for value, hs in sorted(split.by_value.items(), key=lambda kv: -len(kv[1])):
                names = ", ".join(hs[:4]) + (f" (+{len(hs) - 4})" if len(hs) > 4 else "")
                parts.append(f"{value} on {names}")
            hosts.update(split.odd)
            lines.append(f"{key}: " + "; ".join(parts))
        ranks = [r.rank for r in report.ranks or () if r.host in hosts and isinstance(r.rank, int)]
        out.append(
            make(
                "nccl_env_differs.host_local" if local else "nccl_env_differs",
                "info" if local else "warning",
                0.3 if local else 0.6,
                [fact("report", t) for t in lines[:12]],
                hosts=sorted(hosts),
                ranks=() if local else ranks,
                settings=", ".join(group),
            )
        )
    return out
