"""Facts exchanged between ranks as JSON bytes in tensors (never pickle), and
the cluster report rank 0 writes for the checks to read."""
from __future__ import annotations

import json
import os


def gather_json(job, value, *, group=None, dst=None):
    """Every rank's ``value`` (JSON-ready), in rank order: one all_gather of
    the lengths, one of the padded bytes (uint8 tensors). Nothing is
    unpickled. ``job`` is a repro ``Job`` or anything with a ``device``
    (a ``torch.device`` works too). With ``dst`` (a global rank) the bytes
    go only to that rank by one ``gather``: it gets the list, every other
    rank ``None``, so a large payload (a node snapshot) is not copied to
    every rank. The ncclnb survey uses it too: the one place for this."""
    import torch
    import torch.distributed as dist

    device = getattr(job, "device", job)
    data = json.dumps(value, sort_keys=True).encode("utf-8")
    world = dist.get_world_size(group)
    size = torch.tensor([len(data)], dtype=torch.int64, device=device)
    sizes = [torch.zeros_like(size) for _ in range(world)]
    dist.all_gather(sizes, size, group=group)
    longest = max(1, int(max(s.item() for s in sizes)))
    buf = torch.zeros(longest, dtype=torch.uint8, device=device)
    if data:
        buf[: len(data)] = torch.frombuffer(bytearray(data), dtype=torch.uint8).to(device)
    if dst is None:
        bufs = [torch.zeros_like(buf) for _ in range(world)]
        dist.all_gather(bufs, buf, group=group)
    else:
        mine = dist.get_rank() == dst
        bufs = [torch.zeros_like(buf) for _ in range(world)] if mine else None
        dist.gather(buf, bufs, dst=dst, group=group)
        if not mine:
            return None
    return [json.loads(_raw(b)[: int(s.item())].decode("utf-8")) for b, s in zip(bufs, sizes)]


def _raw(tensor) -> bytes:
    tensor = tensor.cpu()
    try:
        return tensor.numpy().tobytes()
    except Exception:  # torch without numpy
        return bytes(tensor.tolist())


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
