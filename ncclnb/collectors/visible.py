"""Which GPU CUDA calls ``cuda:N``: ``CUDA_VISIBLE_DEVICES`` applied to the
NVML list.

How CUDA reads the variable (indices, UUID prefixes, MIG UUIDs; it stops at
the first entry it cannot resolve) is :func:`ncclnb.model.derive.read_visible`,
the one reading the checks and the views use too; this module adds what only
the collector knows: whether CUDA's order is NVML's. Indices refer to CUDA's
own enumeration order, which is PCI bus order (NVML's) only with
``CUDA_DEVICE_ORDER=PCI_BUS_ID`` or when all GPUs are the same model;
otherwise CUDA puts the fastest first and this module declines to guess.
"""

from __future__ import annotations

import os
from typing import Mapping, Optional, Sequence

from ..model import Gpu
from ..model.derive import visible_count, visible_gpus


def cuda_indices(
    environ: Mapping[str, str],
    uuids: Sequence[Optional[str]],
    names: Sequence[Optional[str]] = (),
    mig_uuids: Optional[Sequence[Sequence[str]]] = None,
) -> tuple[list[Optional[int]], Optional[str]]:
    """``cuda_index`` for each GPU (in NVML order), and a reason when they
    cannot be known. A GPU hidden by ``CUDA_VISIBLE_DEVICES`` gets None."""
    count = len(uuids)
    known_names = {n for n in names if n}
    order_known = environ.get("CUDA_DEVICE_ORDER") == "PCI_BUS_ID" or len(known_names) <= 1
    if not order_known:
        return [None] * count, (
            "GPUs of different models and CUDA_DEVICE_ORDER is not PCI_BUS_ID: "
            "CUDA orders them fastest first, which NVML does not say"
        )
    gpus = [Gpu(index=i, uuid=u) for i, u in enumerate(uuids)]
    result: list[Optional[int]] = [None] * count
    for cuda, pos in enumerate(visible_gpus(gpus, environ.get("CUDA_VISIBLE_DEVICES"), mig_uuids=mig_uuids)):
        result[pos] = cuda
    return result, None


def driver_gpu_count(proc_root: str = "/proc/driver/nvidia/gpus") -> int:
    """GPUs the NVIDIA driver lists; 0 with no driver. Touches no GPU and imports nothing."""
    try:
        return len(os.listdir(proc_root))
    except OSError:
        return 0


def visible_gpu_count(environ=os.environ, proc_root: str = "/proc/driver/nvidia/gpus") -> int:
    """GPUs the NVIDIA driver lists, narrowed by ``CUDA_VISIBLE_DEVICES`` as
    ``model.derive`` reads it; 0 with no driver."""
    return visible_count(environ.get("CUDA_VISIBLE_DEVICES"), driver_gpu_count(proc_root))
