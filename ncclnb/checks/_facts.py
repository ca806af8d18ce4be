"""Small pure helpers the checks share: parsing env syntax, evidence text,
and per-snapshot indices. The readings of the facts themselves (which GPUs
CUDA sees, the GPU a rank runs on, link classes, versions) are
:mod:`ncclnb.model.derive`'s, imported from there. Nothing here raises on
odd input."""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter
from typing import Iterable, Iterator, Optional

from ..model import Gpu, NodeSnapshot, RankEntry
from ..model.derive import RankGpus, VisibleDevices, cuda_device
from ..model.derive import link_distance  # noqa: F401  (survey.rankfacts and recorded.build_reports import it from here)
from ..model.words import how_many  # noqa: F401  (the checks import it from here)
from ..model.words import span_parts


def env_flag(env: dict, name: str) -> bool:
    """NCCL reads integer flags with atoi-like parsing: "1" on, "0"/unset off."""
    value = (env or {}).get(name)
    if not isinstance(value, str):
        return False
    v = value.strip()
    return is_number(v) and int(v) != 0


def majority(values: Iterable) -> object:
    """Most common value; ties broken by first seen."""
    counts = Counter(values)
    return counts.most_common(1)[0][0] if counts else None


def gpus(snap: NodeSnapshot) -> tuple[Gpu, ...]:
    return tuple(g for g in (snap.gpus or ()) if isinstance(g, Gpu))


class NodeFacts:
    """Index maps of one snapshot, built once per check call in O(GPUs):
    a GPU's row in the link matrices, GPUs by NVML index, and
    ``model.derive``'s reading of which GPU each rank runs on and which GPUs
    CUDA sees (:class:`~ncclnb.model.derive.RankGpus`). Every per-GPU or
    per-rank lookup the checks make goes through one of these, so a check is
    linear in the GPUs and ranks it is given; the only pairwise loop
    (:meth:`linked_pairs`) reads each cell of the GPU x GPU matrix at most
    once, so it is linear in the matrix the snapshot holds."""

    def __init__(self, snap: NodeSnapshot):
        self.snap = snap
        self.where = RankGpus(snap)
        self.gpus = self.where.gpus
        self._pos = {id(g): i for i, g in enumerate(self.gpus)}
        self.by_index: dict[int, Gpu] = {}
        for g in self.gpus:
            self.by_index.setdefault(g.index, g)
        self._chosen: Optional[list[Gpu]] = None

    # --- lookups ---------------------------------------------------------

    def position(self, gpu: Gpu) -> Optional[int]:
        """Row of ``gpu`` in the link matrices (snapshot order)."""
        return self._pos.get(id(gpu))

    def label(self, a: Gpu, b: Gpu) -> Optional[str]:
        """``topo -m`` label between two GPUs, None where the matrix has no cell."""
        i, j = self.position(a), self.position(b)
        if i is None or j is None:
            return None
        try:
            cell = self.snap.links.gpu_gpu[i][j]
        except (IndexError, TypeError, AttributeError, KeyError):
            return None
        return cell if isinstance(cell, str) else None

    def parse_visible(self) -> tuple[Optional[list[Gpu]], list[str]]:
        """GPUs named by ``CUDA_VISIBLE_DEVICES`` in the snapshot env, in CUDA
        order, as :func:`ncclnb.model.derive.read_visible` reads it.

        Returns ``(gpus, bad_entries)``; ``gpus`` is None when the variable is
        unset (every GPU visible). CUDA stops at the first entry it cannot
        resolve, so later entries are invisible too; those are ``bad_entries``."""
        seen = self._read()
        if seen.value is None:
            return None, []
        if self._chosen is None:
            self._chosen = [self.gpus[p] for p in seen.positions]
        return list(self._chosen), list(seen.ignored)

    def _read(self) -> VisibleDevices:
        return self.where.visible

    def visible(self) -> list[Gpu]:
        """GPUs a process on this node sees, in CUDA order."""
        chosen, _ = self.parse_visible()
        return list(self.gpus) if chosen is None else chosen

    def visible_count(self) -> int:
        return len(self._read().positions)

    def cuda_gpu(self, cuda_index: int) -> Optional[Gpu]:
        """The GPU a process on this node calls ``cuda:<cuda_index>`` (O(1))."""
        pos = cuda_device(self.where.visible.positions, cuda_index)
        return None if pos is None else self.gpus[pos]

    def rank_gpu(self, entry: RankEntry) -> Optional[Gpu]:
        """The physical GPU a rank used (:meth:`ncclnb.model.derive.RankGpus.position`)."""
        pos = self.where.position(entry)
        return None if pos is None else self.gpus[pos]

    def gpus_in_use(self, ranks: Iterable[RankEntry]) -> tuple[list[Gpu], str]:
        """The GPU set a job uses on this node and how we know it
        (:meth:`ncclnb.model.derive.RankGpus.in_use`): the rank table's GPUs
        if any resolve, else ``CUDA_VISIBLE_DEVICES``; empty when neither
        names a GPU (then the job may use any GPU)."""
        seen = self.where.in_use(ranks)
        if not seen.positions:
            return [], ""
        chosen = [self.gpus[p] for p in seen.positions]
        if seen.source == "rank table":
            return sorted(chosen, key=lambda g: g.index), "rank table"
        return chosen, f"CUDA_VISIBLE_DEVICES={shorten(self.snap.env.get('CUDA_VISIBLE_DEVICES'))}"

    # --- pairs -------------------------------------------------------------

    def linked_pairs(self, chosen: Iterable[Gpu]) -> Iterator[tuple[Gpu, Gpu, str]]:
        """``(a, b, label)`` for each pair of ``chosen`` (a before b, in the
        order given) whose label the GPU x GPU matrix holds, in that order.

        GPUs with no row are skipped, and for each row only the columns it
        has are looked at, so the work is bounded by the cells present (a
        snapshot of 20,000 GPUs with a 64 x 64 matrix costs 64 x 64), never
        by the square of the GPU set."""
        rows = self.snap.links.gpu_gpu or ()
        have: list[tuple[Gpu, int]] = []
        seen: set[int] = set()
        for g in chosen:
            p = self.position(g)
            if p is not None and p < len(rows) and id(g) not in seen:
                seen.add(id(g))
                have.append((g, p))
        if len(have) < 2:
            return
        order = {p: k for k, (_, p) in enumerate(have)}
        by_pos = sorted(order)
        for x, (a, i) in enumerate(have):
            row = rows[i]
            try:
                width = len(row)
            except TypeError:
                continue
            later = len(have) - x - 1
            in_row = bisect_left(by_pos, width)  # chosen GPUs whose column this row has
            if later <= in_row:
                cols = ((have[y][0], have[y][1]) for y in range(x + 1, len(have)) if have[y][1] < width)
            else:
                ys = sorted(order[p] for p in by_pos[:in_row] if order[p] > x)
                cols = ((have[y][0], have[y][1]) for y in ys)
            for b, j in cols:
                cell = row[j]
                if isinstance(cell, str):
                    yield a, b, cell


def is_number(text: object) -> bool:
    """ASCII digits only: str.isdigit() also takes "¹" and "١", which int() refuses."""
    return isinstance(text, str) and text.isascii() and text.isdigit()


def shorten(text: object, limit: int = 120) -> str:
    """Text for a title or an evidence line: at most ``limit`` characters."""
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def index_list(gs: Iterable[Gpu], limit: int = 32) -> str:
    """GPU indices for a title: "6,7,8,9" up to ``limit`` GPUs; beyond that
    ranges ("0-9998,10000") shortened to fit, with the count."""
    indices = [g.index for g in gs]
    if len(indices) <= limit:
        return ",".join(str(i) for i in indices)
    parts, _, cut = span_parts((i for i in indices if isinstance(i, int)), limit)
    return f"{','.join(parts)}{' …' if cut else ''} ({len(indices)} GPUs)"


_RDMA_NAME = re.compile(r"[a-z]+\d*_\d+")  # mlx5_0, efa_0, bnxt_re0 is not matched but has no netdev use


def socket_interfaces(snap: NodeSnapshot):
    """NICs that are network interfaces (what NCCL_SOCKET_IFNAME selects from),
    leaving out RDMA device names such as ``mlx5_0`` that have no netdev."""
    return [n for n in snap.nics or () if isinstance(n.name, str) and not _RDMA_NAME.fullmatch(n.name)]


def is_loopback(nic) -> bool:
    return (nic.kind or "").lower() == "loopback" or nic.name == "lo"


def is_docker(nic) -> bool:
    return nic.name.startswith("docker")
