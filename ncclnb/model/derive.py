"""Facts derived from a snapshot that more than one layer reads: derived
here once, so the checks and the model's own tables (``bandwidth``) agree."""
from __future__ import annotations

import re

from .node import NodeSnapshot


def rdma_nics(snap: NodeSnapshot):
    """NICs that NCCL's IB transport would use: InfiniBand or RoCE HCAs whose
    port is not known to be down."""
    out = []
    for n in snap.nics or ():
        kind = (n.kind or "").lower()
        # mlx5_N is the name the mlx5_ib driver gives a ConnectX HCA (IB or RoCE);
        # `nvidia-smi topo -m` lists such NICs with no other facts.
        hca_name = isinstance(n.name, str) and re.fullmatch(r"mlx\d+_\d+", n.name) and kind in ("", "infiniband", "roce")
        if kind in ("infiniband", "roce") or (n.ib_device and kind != "loopback") or hca_name:
            state = (n.ib_port_state or "").upper()
            if state and state != "ACTIVE" and "ACTIVE" not in state:
                continue
            out.append(n)
    return out
