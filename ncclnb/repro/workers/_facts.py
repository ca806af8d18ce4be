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
    go only to that rank, each rank's exactly as long as it is, by a send
    per rank (no padding: when a few ranks send a node snapshot and the rest
    ``null``, a padded gather would carry ranks x the longest snapshot); it
    gets the list, every other rank ``None``. The ncclnb survey uses it too:
    the one place for this."""
    import torch
    import torch.distributed as dist

    device = getattr(job, "device", job)
    data = json.dumps(value, sort_keys=True).encode("utf-8")
    world = dist.get_world_size(group)
    size = torch.tensor([len(data)], dtype=torch.int64, device=device)
    sizes = [torch.zeros_like(size) for _ in range(world)]
    dist.all_gather(sizes, size, group=group)
    if dst is not None:
        return _gather_to(dist, torch, device, data, [int(s.item()) for s in sizes], dst, group)
    longest = max(1, int(max(s.item() for s in sizes)))
    buf = torch.zeros(longest, dtype=torch.uint8, device=device)
    if data:
        buf[: len(data)] = torch.frombuffer(bytearray(data), dtype=torch.uint8).to(device)
    bufs = [torch.zeros_like(buf) for _ in range(world)]
    dist.all_gather(bufs, buf, group=group)
    return [json.loads(_raw(b)[: int(s.item())].decode("utf-8")) for b, s in zip(bufs, sizes)]


def _gather_to(dist, torch, device, data: bytes, sizes: list, dst: int, group):
    """``gather_json(..., dst=...)``: every other rank sends its bytes to
    ``dst``, which posts one receive per rank, each of that rank's length."""
    ranks = dist.get_process_group_ranks(group) if group is not None else list(range(len(sizes)))
    me = dist.get_rank()
    if me != dst:
        dist.send(torch.frombuffer(bytearray(data), dtype=torch.uint8).to(device), dst, group=group)
        return None
    bufs, pending = [], []
    for rank, size in zip(ranks, sizes):
        if rank == me:
            bufs.append(None)
            continue
        buf = torch.empty(size, dtype=torch.uint8, device=device)
        bufs.append(buf)
        pending.append(dist.irecv(buf, src=rank, group=group))
    for request in pending:
        request.wait()
    return [json.loads(data.decode("utf-8") if b is None else _raw(b).decode("utf-8")) for b in bufs]


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

    report = ClusterReport(snapshots=tuple(snapshots), ranks=tuple(RankEntry(**e) for e in rank_entries), description=description)
    path = os.path.join(job.run_dir, "report.json")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(report.to_dict(), fh, indent=1)
    return path
