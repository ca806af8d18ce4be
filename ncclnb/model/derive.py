"""Facts derived from a snapshot that more than one layer reads: derived
here once, so the checks, the views and the model's own tables
(``bandwidth``) agree. The one reading of each: the RDMA NICs NCCL would
use, ``CUDA_VISIBLE_DEVICES`` (:func:`read_visible`), the GPU a rank runs on
and the GPUs a job uses (:class:`RankGpus`), the class of a ``topo -m`` link
label (:func:`link_class`), the NCCL a node really uses
(:func:`effective_nccl`), the NUMA node of a NIC (:func:`nic_numa`) and which versions differ on which hosts
(:func:`version_splits`, :func:`nccl_env_splits`). Nothing else in ncclnb
re-derives them."""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass
from typing import Iterable, Optional, Sequence, Union

from .cluster import RankEntry
from .node import Gpu, NodeSnapshot, nvlink_count


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


# --- which GPU a rank runs on, and which GPUs a job uses -------------------------


_BDF = re.compile(r"([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])")
_SHORT_BDF = re.compile(r"([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])")


def bus_key(bus_id: object) -> Optional[str]:
    """A PCI bus id in NVML's form ("00000000:3B:00.0") whatever form it was
    written in ("0000:3b:00.0", "3b:00.0"); None if it is not one. The key a
    rank's recorded bus id and a GPU's are matched by (the collector's
    ``collectors.pci.nvml_bus_id`` writes the same form; a test holds them equal)."""
    if not isinstance(bus_id, str):
        return None
    text = bus_id.strip()
    m = _BDF.fullmatch(text)
    if m:
        domain, rest = int(m.group(1), 16), m.groups()[1:]
    else:
        m = _SHORT_BDF.fullmatch(text)
        if not m:
            return None
        domain, rest = 0, m.groups()
    bus, dev, fn = rest
    return f"{domain:08X}:{bus.upper()}:{dev.upper()}.{fn}"


@dataclass(frozen=True)
class InUse:
    """The GPUs a job uses on one node and how that is known.

    ``positions`` are positions in ``snapshot.gpus``: the GPUs the node's
    ranks run on (``source`` "rank table", in position order) where any rank
    resolves to one, else the GPUs CUDA enumerates under
    ``CUDA_VISIBLE_DEVICES`` (``source`` "CUDA_VISIBLE_DEVICES", in CUDA's
    order; empty when it hides every GPU). None when neither says: the
    variable is unset, so a job may use any GPU of the node."""

    positions: Optional[tuple[int, ...]]
    source: str = ""


class RankGpus:
    """The one reading of which GPU of a snapshot a rank runs on, built once
    per snapshot in O(GPUs) so that each rank then costs O(1).

    A rank's GPU is the one with its recorded GPU UUID, else the one at its
    recorded PCI bus id, else the one its CUDA index names through the
    node's ``CUDA_VISIBLE_DEVICES`` (:func:`read_visible`, :func:`cuda_device`).
    A rank that recorded none of them (no device set) runs on no known GPU.
    Positions are positions in ``snapshot.gpus``."""

    def __init__(self, snapshot: NodeSnapshot):
        self.snapshot = snapshot
        self.gpus: tuple[Gpu, ...] = tuple(g for g in snapshot.gpus or () if isinstance(g, Gpu))
        self.by_uuid: dict[str, int] = {}
        self.by_bus: dict[str, int] = {}  # NVML form
        for pos, g in enumerate(self.gpus):
            if isinstance(g.uuid, str) and g.uuid:
                self.by_uuid.setdefault(g.uuid, pos)
            bus = bus_key(g.pci_bus_id)
            if bus:
                self.by_bus.setdefault(bus, pos)
        self.visible = read_visible(self.gpus, (snapshot.env or {}).get("CUDA_VISIBLE_DEVICES"))

    def position(self, entry: RankEntry) -> Optional[int]:
        """Position of the GPU ``entry`` runs on; None when not known."""
        uuid = entry.gpu_uuid
        if isinstance(uuid, str) and uuid:
            pos = self.by_uuid.get(uuid)
            if pos is not None:
                return pos
        if self.by_bus:
            bus = bus_key(entry.bus_id)
            pos = self.by_bus.get(bus) if bus else None
            if pos is not None:
                return pos
        return cuda_device(self.visible.positions, entry.cuda_index)

    def in_use(self, ranks: Iterable[RankEntry] = ()) -> InUse:
        """:class:`InUse` of this node for the rank table ``ranks`` (entries of
        other hosts are skipped)."""
        host = self.snapshot.hostname
        used: set[int] = set()
        for r in ranks or ():
            if isinstance(r, RankEntry) and r.host == host:
                pos = self.position(r)
                if pos is not None:
                    used.add(pos)
        if used:
            return InUse(tuple(sorted(used)), "rank table")
        if self.visible.value is None:
            return InUse(None)
        return InUse(self.visible.positions, "CUDA_VISIBLE_DEVICES")


def rank_gpu(snapshot: NodeSnapshot, entry: RankEntry) -> Optional[int]:
    """:meth:`RankGpus.position` for one rank (build a :class:`RankGpus` for many)."""
    return RankGpus(snapshot).position(entry)


def gpus_in_use(snapshot: NodeSnapshot, ranks: Iterable[RankEntry] = ()) -> InUse:
    """:meth:`RankGpus.in_use` of ``snapshot``."""
    return RankGpus(snapshot).in_use(ranks)


def job_world_size(ranks: Iterable[RankEntry]) -> Optional[int]:
    """The WORLD_SIZE of a rank table: the one most ranks were started with
    (the first seen among equals); None when no rank says."""
    counts: dict[int, int] = {}
    for r in ranks or ():
        w = getattr(r, "world_size", None)
        if isinstance(w, int) and not isinstance(w, bool):
            counts[w] = counts.get(w, 0) + 1
    return max(counts, key=lambda w: counts[w]) if counts else None


# --- link classes ------------------------------------------------------------------

# ``nvidia-smi topo -m`` classes from nearest to farthest (its legend's order);
# "NV#" stands for any bonded set of NVLinks ("NV12").
LINK_CLASSES = ("NV#", "PIX", "PXB", "PHB", "NODE", "SYS")


def link_class(label: Optional[str]) -> str:
    """The class of a ``topo -m`` label: "NV12" -> "NV#", " sys " -> "SYS",
    "X" (the device itself) -> "X", anything else -> "?"."""
    text = label.strip().upper() if isinstance(label, str) else ""
    if nvlink_count(text):
        return "NV#"
    if text in LINK_CLASSES or text == "X":
        return text
    return "?"


def link_distance(label: Optional[str]) -> Optional[int]:
    """How far a ``topo -m`` label is: 0 = the device itself, 1 = NVLink,
    2 = PIX ... 6 = SYS; None when the label is not one."""
    cls = link_class(label)
    if cls == "X":
        return 0
    return LINK_CLASSES.index(cls) + 1 if cls in LINK_CLASSES else None


# --- the NUMA node of a NIC ----------------------------------------------------------

# ``topo -m`` classes that never leave a NUMA node: the NIC hangs off a host
# bridge of the node its GPU is on (nvidia-smi's legend: "NODE = ... within a
# NUMA node"). SYS crosses between NUMA nodes, NV# joins GPUs only.
_NODE_LOCAL = ("PIX", "PXB", "PHB", "NODE")


@dataclass(frozen=True)
class NicNuma:
    """The NUMA node of one NIC and how it is known.

    ``node`` is None when not known. ``source`` is "recorded" (the NIC's own
    ``numa_node``, from sysfs), "topo -m" (read off the GPU x NIC links:
    the node of the GPUs nearest to it through PCIe within a NUMA node) or ""
    (not known). ``why`` says it in words: the links it was read from, or
    why it cannot be (e.g. SYS to every GPU: a node that holds no GPU)."""

    node: Optional[int]
    source: str
    why: str


def nic_numa(snap: NodeSnapshot) -> tuple[NicNuma, ...]:
    """The one reading of each NIC's NUMA node, in ``snap.nics`` order: its
    recorded ``numa_node``, else the node of the GPUs its ``topo -m`` column
    reaches at the nearest class within a NUMA node (PIX, PXB, PHB, NODE),
    when those GPUs agree on one. A pasted ``nvidia-smi topo -m`` has NIC
    columns and no NIC NUMA node: this is how a DGX's NICs find theirs.
    Linear in GPUs x NICs."""
    links = snap.links
    column: dict[str, int] = {}
    for k, name in enumerate(links.nic_names or ()):
        if isinstance(name, str):
            column.setdefault(name, k)
    out = []
    for nic in snap.nics or ():
        if isinstance(nic.numa_node, int) and not isinstance(nic.numa_node, bool):
            out.append(NicNuma(nic.numa_node, "recorded", "the NIC's numa_node in sysfs"))
            continue
        at = column.get(nic.name)
        if at is None and nic.ib_device:
            at = column.get(nic.ib_device)
        out.append(_numa_from_links(snap, at))
    return tuple(out)


def _numa_from_links(snap: NodeSnapshot, k: Optional[int]) -> NicNuma:
    if k is None:
        return NicNuma(None, "", "no NUMA node recorded, and no column in nvidia-smi topo -m")
    near: dict[str, list[Gpu]] = {}
    classes = set()
    for i, g in enumerate(snap.gpus or ()):
        try:
            label = snap.links.gpu_nic[i][k]
        except (IndexError, TypeError):
            continue
        cls = link_class(label)
        classes.add(cls)
        if cls in _NODE_LOCAL and isinstance(g.numa_node, int):
            near.setdefault(cls, []).append(g)
    if not near:
        if classes == {"SYS"}:
            why = "no NUMA node recorded; SYS to every GPU in nvidia-smi topo -m: on a NUMA node that holds no GPU"
        else:
            why = "no NUMA node recorded, and no GPU of a known NUMA node near it in nvidia-smi topo -m"
        return NicNuma(None, "", why)
    cls = next(c for c in _NODE_LOCAL if c in near)
    gpus = near[cls]
    nodes = sorted({g.numa_node for g in gpus if g.numa_node is not None})
    named = ", ".join(f"GPU{g.index}" for g in gpus[:4]) + (" …" if len(gpus) > 4 else "")
    if len(nodes) != 1:
        return NicNuma(None, "", f"no NUMA node recorded; {cls} to GPUs on NUMA nodes {', '.join(map(str, nodes))}")
    return NicNuma(nodes[0], "topo -m", f"{cls} to {named} (NUMA {nodes[0]}) in nvidia-smi topo -m")


# --- versions ---------------------------------------------------------------------


def parse_version(text: Optional[str]) -> Optional[tuple[int, ...]]:
    """ "2.19.3+cuda12.3" -> (2, 19, 3); "535.54.03" -> (535, 54, 3); junk -> None."""
    if not isinstance(text, str):
        return None
    m = re.match(r"\s*v?([0-9]+(?:\.[0-9]+)*)", text)
    if not m:
        return None
    return tuple(int(p) for p in m.group(1).split("."))


def short_version(text: Optional[str]) -> Optional[str]:
    """ "2.19.3+cuda12.3" -> "2.19.3"; junk -> None."""
    v = parse_version(text)
    return ".".join(map(str, v)) if v else None


def effective_nccl(snap: NodeSnapshot) -> Optional[str]:
    """The NCCL a job on this node uses: what a process printed it loaded,
    else torch's own answer, else the pip wheel torch depends on, else a lone
    system copy (the last two marked as a guess)."""
    v = snap.versions
    if short_version(v.nccl_loaded):
        return short_version(v.nccl_loaded)
    if short_version(v.nccl_torch):
        return short_version(v.nccl_torch)
    pip = sorted({s for s in (short_version(x) for x in (v.nccl_pip or {}).values()) if s})
    if len(pip) == 1:
        return pip[0] + " (pip wheel, guessed)"
    system = sorted({s for s in (short_version(lib.version) for lib in v.nccl_system or ()) if s})
    if len(system) == 1 and not pip:
        return system[0] + " (system, guessed)"
    return None


# The components compared across the nodes of a job, by the names the checks
# and the version table give them.
VERSION_COMPONENTS = ("NVIDIA driver", "torch", "CUDA (torch build)", "NCCL (used by torch)", "NCCL (pip)", "NCCL (system)")
# components where a node without any is a difference too, once another node has one
_ABSENCE_COUNTS = {"NCCL (pip)", "NCCL (system)"}
NONE = "(none)"


def version_components(snap: NodeSnapshot) -> dict[str, Optional[str]]:
    """Each of :data:`VERSION_COMPONENTS` on one node, as compared across nodes
    (None where the node does not say)."""
    v = snap.versions
    pip = ", ".join(f"{k} {x}" for k, x in sorted((v.nccl_pip or {}).items()))
    system = ", ".join(sorted({short_version(lib.version) or "?" for lib in v.nccl_system or ()}))
    return {
        "NVIDIA driver": v.driver,
        "torch": v.torch,
        "CUDA (torch build)": v.torch_cuda,
        "NCCL (used by torch)": effective_nccl(snap),
        "NCCL (pip)": pip or None,
        "NCCL (system)": system or None,
    }


@dataclass(frozen=True)
class Split:
    """How the hosts of a job split on one component's value.

    ``by_value`` maps each value to its hosts (values and hosts first seen
    first). ``common`` is the value a strict majority of hosts share, and
    ``odd`` the other hosts; on a tie nothing says which side is wrong:
    ``common`` is None and ``odd`` is every host."""

    component: str
    by_value: dict[str, tuple[str, ...]]
    common: Optional[str]
    odd: tuple[str, ...]

    @property
    def tie(self) -> bool:
        return self.common is None


def split_hosts(component: str, values: Iterable[tuple[str, str]]) -> Optional[Split]:
    """The :class:`Split` of ``(host, value)`` pairs; None when every host has
    the same value."""
    groups: dict[str, list[str]] = {}
    for host, value in values:
        groups.setdefault(value, []).append(host)
    if len(groups) < 2:
        return None
    sizes = sorted((len(hs) for hs in groups.values()), reverse=True)
    common = max(groups, key=lambda k: len(groups[k])) if sizes[0] > sizes[1] else None
    odd = tuple(h for value, hs in groups.items() if value != common for h in hs)
    return Split(component, {k: tuple(v) for k, v in groups.items()}, common, odd)


def version_splits(snaps: Iterable[NodeSnapshot]) -> dict[str, Split]:
    """The components of :data:`VERSION_COMPONENTS` that differ across the
    nodes, each with its :class:`Split`: the one reading of "which component
    differs on which hosts" (the ``versions_differ`` check's findings and the
    version table's marks). A node that does not say is on no side, except
    for the NCCL copies on disk where having none is a value ("(none)"), and
    effective NCCL versions that differ only in how they are known ("2.19.3"
    and "2.19.3 (pip wheel, guessed)") do not differ."""
    table = {s.hostname: version_components(s) for s in snaps if isinstance(s, NodeSnapshot)}
    out: dict[str, Split] = {}
    if len(table) < 2:
        return out
    for comp in VERSION_COMPONENTS:
        pairs = [(host, comps[comp]) for host, comps in table.items() if comps.get(comp)]
        if comp in _ABSENCE_COUNTS and pairs:
            pairs += [(host, NONE) for host, comps in table.items() if not comps.get(comp)]
        split = split_hosts(comp, ((h, v) for h, v in pairs if isinstance(v, str)))
        if split is None:
            continue
        if comp == "NCCL (used by torch)" and len({short_version(k.split(" (")[0]) or k for k in split.by_value}) < 2:
            continue  # the same version, only the way it is known differs
        out[comp] = split
    return out


UNSET = "(unset)"


def nccl_env_splits(snaps: Iterable[NodeSnapshot]) -> dict[str, Split]:
    """The ``NCCL_*`` environment variables whose values differ across the
    nodes (unset is a value, "(unset)"), each with its :class:`Split`."""
    listed = [s for s in snaps if isinstance(s, NodeSnapshot)]
    if len(listed) < 2:
        return {}
    keys = sorted({k for s in listed for k in (s.env or {}) if isinstance(k, str) and k.startswith("NCCL_")})
    out: dict[str, Split] = {}
    for key in keys:
        values = []
        for s in listed:
            value = (s.env or {}).get(key)
            values.append((s.hostname, value if isinstance(value, str) else UNSET))
        split = split_hosts(key, values)
        if split is not None:
            out[key] = split
    return out
