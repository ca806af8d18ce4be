"""Facts derived from a snapshot that more than one layer reads: derived
here once, so the checks and the model's own tables (``bandwidth``) agree."""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass
from typing import Optional, Sequence, Union

from .node import Gpu, NodeSnapshot


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


# --- CUDA_VISIBLE_DEVICES ----------------------------------------------------

_FROM_SNAPSHOT = object()  # read CUDA_VISIBLE_DEVICES from the snapshot's env


@dataclass(frozen=True)
class VisibleDevices:
    """What CUDA makes of ``CUDA_VISIBLE_DEVICES`` on one node.

    ``positions`` are positions in ``snapshot.gpus`` (NVML order) in CUDA's
    order: ``positions[k]`` is the GPU CUDA calls ``cuda:k``. ``ignored`` are
    the entries from the first one CUDA could not resolve to the end (CUDA
    hides all of them). ``value`` is the variable as read, None when unset."""

    value: Optional[str]
    positions: tuple[int, ...]
    ignored: tuple[str, ...] = ()


def read_visible(
    gpus: Union[NodeSnapshot, Sequence[Gpu]],
    cuda_visible_devices: object = _FROM_SNAPSHOT,
    *,
    mig_uuids: Optional[Sequence[Sequence[str]]] = None,
) -> VisibleDevices:
    """The one reading of ``CUDA_VISIBLE_DEVICES``, with CUDA's rules.

    ``gpus`` is a snapshot (its GPUs and, unless ``cuda_visible_devices`` is
    given, its env) or the GPUs in NVML order. Unset: every GPU, in order.
    Otherwise a comma-separated list, each entry stripped of surrounding
    whitespace: ASCII digits are an index into CUDA's enumeration (taken as
    the NVML index, ``Gpu.index``: CUDA's own order whenever the collector could record
    ``Gpu.cuda_index``, i.e. same-model GPUs or ``CUDA_DEVICE_ORDER=PCI_BUS_ID``);
    anything else is a GPU UUID or a unique prefix of one, ``GPU-`` optional;
    ``MIG-`` entries name the GPU holding that MIG instance (from ``mig_uuids``,
    one list per GPU, which only the collector has, or the legacy
    ``MIG-GPU-<uuid>/<gi>/<ci>`` form). CUDA stops at the first entry it cannot
    resolve: an empty entry, an index out of range, a negative or non-ASCII
    number, an unknown or ambiguous UUID, or a GPU already listed (a repeat
    ends the list as the collector has always read it; not re-checked here
    against a CUDA runtime). Linear in GPUs and entries."""
    snap = gpus if isinstance(gpus, NodeSnapshot) else None
    given: Sequence[Gpu] = gpus.gpus if isinstance(gpus, NodeSnapshot) else gpus
    listed = tuple(g for g in given or () if isinstance(g, Gpu))
    if cuda_visible_devices is _FROM_SNAPSHOT:
        cuda_visible_devices = (snap.env or {}).get("CUDA_VISIBLE_DEVICES") if snap is not None else None
    value = cuda_visible_devices if isinstance(cuda_visible_devices, str) else None
    entries = split_visible(value)
    if entries is None:
        return VisibleDevices(None, tuple(range(len(listed))))
    if not entries:
        return VisibleDevices(value, ())
    lookup = _UuidLookup(listed, mig_uuids)
    chosen: list[int] = []
    seen: set[int] = set()
    for k, entry in enumerate(entries):
        pos = lookup.resolve(entry)
        if pos is None or pos in seen:
            return VisibleDevices(value, tuple(chosen), tuple(entries[k:]))
        chosen.append(pos)
        seen.add(pos)
    return VisibleDevices(value, tuple(chosen))


def split_visible(value: Optional[str]) -> Optional[tuple[str, ...]]:
    """``CUDA_VISIBLE_DEVICES`` as CUDA splits it: entries stripped of
    surrounding whitespace; None when unset, () when blank (no GPU)."""
    if value is None:
        return None
    if not value.strip():
        return ()
    return tuple(e.strip() for e in value.split(","))


def visible_entry(value: Optional[str], logical: int) -> Optional[str]:
    """The entry CUDA calls ``cuda:<logical>`` (an index or a GPU/MIG UUID, as
    written) where the GPUs themselves are not known (inside a running job);
    ``str(logical)`` when the variable is unset; None when no entry reaches
    that far (CUDA stops at the first empty entry)."""
    entries = split_visible(value)
    if entries is None:
        return str(logical)
    if "" in entries:
        entries = entries[: entries.index("")]
    return entries[logical] if 0 <= logical < len(entries) else None


_UUID_TEXT = re.compile(r"(?:MIG-)?(?:GPU-)?[0-9A-Fa-f][0-9A-Fa-f-]*(?:/[0-9]+/[0-9]+)?")


def visible_problems(value: Optional[str], gpu_count: Optional[int]) -> tuple[tuple[str, str], ...]:
    """What can be told wrong with ``CUDA_VISIBLE_DEVICES`` knowing only how
    many GPUs the driver lists (``gpu_count``; None: unknown), before CUDA
    reads it: ``(entry, why)`` pairs, ``why`` one of ``"repeat"`` (an entry
    named twice), ``"absent"`` (an index this node does not have), ``"empty"``
    and ``"form"`` (neither an index nor a UUID). CUDA hides each such entry
    and every entry after it; UUIDs are not checked here (no GPU list)."""
    return tuple((entry, why) for _, entry, why in _entry_problems(value, gpu_count))


def visible_count(value: Optional[str], gpu_count: int) -> int:
    """How many GPUs CUDA enumerates when the driver lists ``gpu_count`` and
    only that is known: the entries before the first one
    :func:`visible_problems` finds wrong (UUIDs taken as resolving)."""
    entries = split_visible(value)
    if entries is None:
        return gpu_count
    first = next((k for k, _, _ in _entry_problems(value, gpu_count)), len(entries))
    return min(first, gpu_count)


def _entry_problems(value: Optional[str], gpu_count: Optional[int]):
    seen: set[str] = set()
    for k, entry in enumerate(split_visible(value) or ()):
        if entry in seen:
            yield k, entry, "repeat"
        seen.add(entry)
        if not entry:
            yield k, entry, "empty"
        elif _DIGITS.fullmatch(entry):
            if gpu_count is not None and int(entry) >= gpu_count:
                yield k, entry, "absent"
        elif not _UUID_TEXT.fullmatch(entry):
            yield k, entry, "form"


def visible_gpus(
    gpus: Union[NodeSnapshot, Sequence[Gpu]],
    cuda_visible_devices: object = _FROM_SNAPSHOT,
    *,
    mig_uuids: Optional[Sequence[Sequence[str]]] = None,
) -> tuple[int, ...]:
    """Positions (in ``snapshot.gpus``) of the GPUs CUDA enumerates, in CUDA
    order: :func:`read_visible`'s ``positions``."""
    return read_visible(gpus, cuda_visible_devices, mig_uuids=mig_uuids).positions


def cuda_device(visible: Sequence[int], cuda_index: object) -> Optional[int]:
    """Position of the GPU a process calls ``cuda:<cuda_index>`` given the
    visible positions; None if there is no such device."""
    if isinstance(cuda_index, bool) or not isinstance(cuda_index, int):
        return None
    return visible[cuda_index] if 0 <= cuda_index < len(visible) else None


_DIGITS = re.compile(r"[0-9]+")  # ASCII only: "¹" and "١" name no GPU


class _UuidLookup:
    """Entries -> positions: indices directly, UUID prefixes by bisection in
    the sorted UUIDs (O(log GPUs) each)."""

    def __init__(self, gpus: tuple[Gpu, ...], mig_uuids):
        self.by_index: dict[int, int] = {}
        for p, g in enumerate(gpus):
            if isinstance(g.index, int):
                self.by_index.setdefault(g.index, p)
        self.uuids = sorted((g.uuid, p) for p, g in enumerate(gpus) if isinstance(g.uuid, str) and g.uuid)
        self.mig: dict[str, int] = {}
        for p, migs in enumerate(mig_uuids or ()):
            for m in migs or ():
                if isinstance(m, str):
                    self.mig.setdefault(m, p)

    def resolve(self, entry: str) -> Optional[int]:
        if not entry:
            return None
        if _DIGITS.fullmatch(entry):
            return self.by_index.get(int(entry))
        if entry.startswith("MIG-"):
            if entry in self.mig:
                return self.mig[entry]
            parent = entry[len("MIG-") :].split("/", 1)[0]  # legacy MIG-GPU-<uuid>/<gi>/<ci>
            return self.prefix(parent) if parent.startswith("GPU-") else None
        return self.prefix(entry if entry.startswith("GPU-") else "GPU-" + entry)

    def prefix(self, prefix: str) -> Optional[int]:
        """The one GPU whose UUID starts with ``prefix``; None if none or several."""
        if len(prefix) <= len("GPU-"):
            return None
        at = bisect_left(self.uuids, (prefix, -1))
        hits = [p for u, p in self.uuids[at : at + 2] if u.startswith(prefix)]
        return hits[0] if len(hits) == 1 else None
