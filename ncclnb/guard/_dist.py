"""torch.distributed plumbing for the guards: which ranks, which device, and
one all_gather of a fixed-size tensor. torch is imported here only inside
functions, through :func:`ncclnb.collectors.torchinfo.import_torch`."""

from __future__ import annotations

from typing import Optional, Sequence


def torch_dist():
    """(torch, torch.distributed), with a process group up, or RuntimeError."""
    from ncclnb.collectors.torchinfo import import_torch

    torch = import_torch()
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError(
            "ncclnb guard: torch.distributed is not initialized: call torch.distributed.init_process_group() first"
        )
    return torch, dist


def group_ranks(dist, group) -> Optional[list[int]]:
    """Global ranks of ``group`` in group-rank order, or None when this
    process is not a member (then the guards do nothing, like torch's own
    collectives)."""
    if dist.get_rank(group) < 0:
        return None
    size = dist.get_world_size(group)
    if group is None or group is dist.group.WORLD:
        return list(range(size))
    return [dist.get_global_rank(group, i) for i in range(size)]


def device_for(torch, dist, group):
    """CPU for gloo/mpi/ucc and for a mixed ``cpu:gloo,cuda:nccl`` group;
    the current CUDA device for a NCCL-only group; the current XPU for xccl."""
    backend = str(dist.get_backend(group)).lower()
    if ":" in backend:  # "cpu:gloo,cuda:nccl"
        devices = dict(part.split(":", 1) for part in backend.split(",") if ":" in part)
        if "cpu" in devices:
            return torch.device("cpu")
        backend = next(iter(devices.values()), backend)
    if backend == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    if backend == "xccl":
        return torch.device("xpu", torch.xpu.current_device())
    return torch.device("cpu")


def _gather(torch, dist, group, tensor, size: int):
    out = torch.empty(size * tensor.numel(), dtype=tensor.dtype, device=tensor.device)
    gather_single = getattr(dist, "all_gather_single", None)  # torch >= 2.13; all_gather_into_tensor before
    if gather_single is not None:
        gather_single(out, tensor, group=group)
    else:
        parts = list(out.chunk(size))
        dist.all_gather(parts, tensor, group=group)
    return out.cpu()


def all_gather_bytes(torch, dist, group, payload: bytes, device, size: int) -> list[bytes]:
    """Every rank sends ``len(payload)`` bytes (the same on every rank) in
    one all_gather of a uint8 tensor; returns the rows in group-rank order."""
    tensor = torch.frombuffer(bytearray(payload), dtype=torch.uint8).to(device)
    data = _gather(torch, dist, group, tensor, size)
    try:
        raw = data.numpy().tobytes()
    except Exception:  # torch without numpy
        raw = bytes(data.tolist())
    n = len(payload)
    return [raw[i * n : (i + 1) * n] for i in range(size)]


def all_gather_int64(torch, dist, group, values: Sequence[int], device, size: int) -> list[list[int]]:
    """One all_gather of a small int64 tensor; rows in group-rank order."""
    tensor = torch.tensor(list(values), dtype=torch.int64, device=device)
    flat = _gather(torch, dist, group, tensor, size).tolist()
    n = len(values)
    return [flat[i * n : (i + 1) * n] for i in range(size)]
