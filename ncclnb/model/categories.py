"""The failure categories: the one table of each category's id, title and pages.

A finding names its category by id (:data:`ncclnb.model.CATEGORIES`, in this
table's order). Text that speaks of a category uses its ``title``; a finding
with no page of its own (an alternative reading, a candidate cause, a
cross-rank conclusion) links the category's ``docs``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Category:
    id: str
    title: str  # how text names it: "also consistent with <title>"
    docs: str  # the page a finding of this category links when it has none of its own
    notebook: str = ""  # the guided notebook (notebooks/<name>.ipynb) that walks through it; "" where none does


# upstream pages until the guided notebooks are linked from the cards
_NCCL_TS = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"
_NCCL_ENV = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
_TORCH_RUN = "https://pytorch.org/docs/stable/elastic/run.html"
_TORCH_DIST = "https://pytorch.org/docs/stable/distributed.html"
_TORCH_DEBUG = "https://pytorch.org/docs/stable/distributed.html#debugging-torch-distributed-applications"

TABLE: dict[str, Category] = {
    c.id: c
    for c in (
        Category("rank_world_size_mismatch", "rank world size mismatch", _TORCH_RUN, "01_world_size_and_rendezvous"),
        Category("rendezvous_unreachable", "rendezvous unreachable", _TORCH_RUN, "01_world_size_and_rendezvous"),
        Category("socket_ifname", "socket ifname", _NCCL_ENV),
        Category("net_plugin_missing", "net plugin missing", _NCCL_ENV),
        Category("ib_misconfig", "ib misconfig", _NCCL_ENV),
        Category("p2p_topology", "p2p topology", _NCCL_TS),
        Category("shm_too_small", "shm too small", _NCCL_TS),
        Category("device_mapping", "device mapping", _TORCH_DIST, "02_cuda_visible_devices"),
        Category("version_mismatch", "version mismatch", _NCCL_TS, "03_nccl_versions_across_nodes"),
        Category("collective_desync", "collective desync", _TORCH_DEBUG, "04_desync_at_save"),
        Category("p2p_pairing", "p2p pairing", _TORCH_DEBUG, "05_alltoall_pairing"),
        Category("oom_or_resource", "oom or resource", _NCCL_TS),
        Category("slow_rank_timeout", "slow rank timeout", _TORCH_DIST),
        Category("driver_or_hardware", "driver or hardware", _NCCL_TS),
        Category("nccl_env_override", "nccl env override", _NCCL_ENV),
        Category("unknown", "unknown", _NCCL_TS),
    )
}
