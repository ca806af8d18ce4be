"""Which GPU CUDA calls ``cuda:N``: ``CUDA_VISIBLE_DEVICES`` applied to the
NVML list.

CUDA reads the variable as a comma-separated list of device indices, GPU
UUIDs (a unique prefix is enough) or MIG UUIDs, and stops at the first entry
it cannot resolve (a bad index, an unknown UUID, a repeat): everything after
that is hidden. Indices refer to CUDA's own enumeration order, which is PCI
bus order (NVML's) only with ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` or when all GPUs
are the same model; otherwise CUDA puts the fastest first and this module
declines to guess.
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence


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
    value = environ.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return list(range(count)), None
    result: list[Optional[int]] = [None] * count
    position = 0
    for raw in value.split(","):
        token = raw.strip()
        index = _resolve(token, uuids, mig_uuids)
        if index is None or result[index] is not None:
            break  # CUDA ignores this entry and every one after it
        result[index] = position
        position += 1
    return result, None


def _resolve(token: str, uuids: Sequence[Optional[str]], mig_uuids) -> Optional[int]:
    if not token:
        return None
    if token.isdigit() or (token.startswith("-") and token[1:].isdigit()):
        i = int(token)
        return i if 0 <= i < len(uuids) else None
    if token.startswith("MIG-"):
        for i, migs in enumerate(mig_uuids or ()):
            if token in migs:
                return i
        # legacy form MIG-GPU-<uuid>/<gi>/<ci>
        parent = token[len("MIG-"):].split("/", 1)[0]
        if parent.startswith("GPU-"):
            return _by_uuid(parent, uuids)
        return None
    if token.startswith("GPU-"):
        return _by_uuid(token, uuids)
    return None


def _by_uuid(prefix: str, uuids: Sequence[Optional[str]]) -> Optional[int]:
    hits = [i for i, u in enumerate(uuids) if u and u.startswith(prefix)]
    return hits[0] if len(hits) == 1 else None
