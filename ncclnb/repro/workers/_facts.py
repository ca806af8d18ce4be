"""Facts exchanged between ranks as JSON bytes in tensors (never pickle), and
the cluster report rank 0 writes for the checks to read."""
from __future__ import annotations

import json
import os


def gather_json(job, value) -> list:
    """Every rank's ``value`` (JSON-ready), in rank order: one all_gather of
    the lengths, one of the padded bytes. Nothing is unpickled."""
    import torch
    import torch.distributed as dist

    data = json.dumps(value, sort_keys=True).encode("utf-8")
    world = dist.get_world_size()
    size = torch.tensor([len(data)], dtype=torch.int64, device=job.device)
    sizes = [torch.zeros_like(size) for _ in range(world)]
    dist.all_gather(sizes, size)
    longest = int(max(s.item() for s in sizes))
    buf = torch.zeros(longest, dtype=torch.uint8, device=job.device)
    buf[: len(data)] = torch.tensor(list(data), dtype=torch.uint8)
    bufs = [torch.zeros_like(buf) for _ in range(world)]
    dist.all_gather(bufs, buf)
    return [json.loads(bytes(b[: int(s.item())].tolist()).decode("utf-8")) for b, s in zip(bufs, sizes)]


def write_report(job, snapshots, rank_entries, description: str) -> str:
    """Rank 0: ``report.json`` in the run directory, a ClusterReport the
    runner hands to the checks."""
    from ncclnb.model import ClusterReport, RankEntry

    report = ClusterReport(snapshots=tuple(snapshots),
                           ranks=tuple(RankEntry(**e) for e in rank_entries),
                           description=description)
    path = os.path.join(job.run_dir, "report.json")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(report.to_dict(), fh, indent=1)
    return path
