"""Topology checks: where the job's GPUs sit (NUMA, SYS links, NIC distance)
and NCCL settings that throw NVLink or PCIe peer-to-peer away."""

from __future__ import annotations

from collections import Counter
from typing import Optional

from ..model import NodeSnapshot, nvlink_count
from ..model.derive import link_distance
from ._facts import NodeFacts, env_flag, how_many, index_list
from ._registry import fact, make, node_source, register

# all_reduce_perf bus bandwidth (busbw, out-of-place, largest size) read from
# the recorded nccl-tests outputs in ../shared/fixtures. Each is one machine.
BUSBW = {
    "h100_nvlink": (
        473.60,
        "8x H100 SXM, NVSwitch with NVLS, 4 GiB",
        "nccl_tests__hgx-h100-1node-8gpu-nvls__nccl-tests-issue-290.txt (NVIDIA/nccl-tests#290)",
    ),
    "a100_nvlink": (
        232.44,
        "8x A100-SXM4-80GB, NVSwitch, 4 GiB",
        "nccl_tests__hgx-a100-8x-sxm4-80gb-single-node__unidentified-repo-thanos.txt (repository unidentified)",
    ),
    "pcie_no_p2p": (
        4.00,
        "2x RTX 2080 Ti, PCIe Gen3 behind one switch, P2P not supported, 1 GiB",
        "nccl_tests__2x-rtx2080ti-pcie-no-p2p__anthony-hoo-autodl.txt",
    ),
    "pcie_p2p": (
        24.58,
        "6x RTX 4090, PCIe with P2P enabled (patched driver), 32 MiB",
        "nccl_tests__tinybox-6x-rtx4090-p2p-patched-single-size__tinygrad-ogkm-readme.txt",
    ),
}


def busbw_line(key: str) -> str:
    value, what, source = BUSBW[key]
    return f"all_reduce busbw {value:.2f} GB/s on {what} [{source}]"


ALL_GPUS = "all GPUs of the node"


def _set_or_all(facts: NodeFacts, ranks):
    chosen, how = facts.gpus_in_use(ranks)
    return (chosen, how) if chosen else (list(facts.gpus), ALL_GPUS)


def _some_of(part, chosen, how) -> str:
    """Which GPUs of a set, as a reader says it: "All 4 GPUs of the node",
    "GPU 2,3 (2 of the node's 4)", "GPU 5 (1 of the 3 in use, rank table)",
    "12 of the node's 16 GPUs"."""
    k, n = len(part), len(chosen)
    if k == n:
        return (
            (f"All {n} GPUs of the node" if how == ALL_GPUS else f"All {n} GPUs in use ({how})")
            if n > 1
            else f"GPU {index_list(part)}"
        )
    if k > 8:
        return f"{k} of the node's {n} GPUs" if how == ALL_GPUS else f"{k} of the {n} GPUs in use ({how})"
    return (
        f"GPU {index_list(part)} ({k} of the node's {n})"
        if how == ALL_GPUS
        else f"GPU {index_list(part)} ({k} of the {n} in use, {how})"
    )


def _names(gs) -> str:
    return index_list(gs)


def _refs(snap: NodeSnapshot, gs) -> list:
    """The ``(host, NVML index)`` a finding names for GPUs ``gs``."""
    return [(snap.hostname, g.index) for g in gs if isinstance(g.index, int)]


def _pair_refs(snap: NodeSnapshot, pairs) -> list:
    """The ``(host, "GPUa", "GPUb")`` links a finding names for GPU pairs (extra items ignored)."""
    return [(snap.hostname, f"GPU{p[0].index}", f"GPU{p[1].index}") for p in pairs]


EVIDENCE_GPUS = 16  # GPUs named in one evidence line; a 20,000-GPU node must stay readable


def _listed(gs, describe) -> str:
    text = ", ".join(describe(g) for g in gs[:EVIDENCE_GPUS])
    return text + (f", ... ({len(gs)} GPUs)" if len(gs) > EVIDENCE_GPUS else "")


@register("gpu_set_numa", "p2p_topology", "node")
def gpu_set_numa(snap: NodeSnapshot, ranks=()):
    """The GPUs a job uses straddle NUMA nodes or talk over SYS (inter-socket) links."""
    facts = NodeFacts(snap)
    chosen, how = facts.gpus_in_use(ranks)
    if len(chosen) < 2 or len(chosen) >= len(facts.gpus):
        return []  # a job on every GPU of the node had no other choice
    numas = {g.numa_node for g in chosen if isinstance(g.numa_node, int)}
    sys_pairs = [(a, b) for a, b, label in facts.linked_pairs(chosen) if label == "SYS"]
    if len(numas) < 2 and not sys_pairs:
        return []
    src = node_source(snap.hostname)
    ev = [fact(src, f"GPUs in use ({how}): " + _listed(chosen, lambda g: f"GPU{g.index} NUMA {g.numa_node}"))]
    for a, b in sys_pairs[:6]:
        ev.append(fact(src, f"GPU{a.index} NUMA {a.numa_node}, GPU{b.index} NUMA {b.numa_node}: SYS"))
    if len(sys_pairs) > 6:
        ev.append(fact(src, f"... {len(sys_pairs) - 6} more SYS pairs"))
    per_numa = Counter(g.numa_node for g in facts.gpus if isinstance(g.numa_node, int))
    room = [n for n, c in sorted(per_numa.items()) if c >= len(chosen)]
    better = ""
    if room:
        alt = [g for g in facts.gpus if g.numa_node == room[0]][: len(chosen)]
        if not any(label == "SYS" for _, _, label in facts.linked_pairs(alt)):
            better = ",".join(str(g.index) for g in alt)
    severity = "warning" if better and sys_pairs else "info"
    numa_text = sorted(numas) if len(numas) <= 16 else f"{sorted(numas)[:16]} ... ({len(numas)} nodes)"
    crosses = "crosses" if len(sys_pairs) == 1 else "cross"
    sys_note = f"; {how_many(len(sys_pairs), 'pair')} {crosses} the inter-socket link (SYS)" if sys_pairs else ""
    return [
        make(
            "gpu_set_numa" if better else "gpu_set_numa.no_better_set",
            severity,
            0.7 if sys_pairs else 0.5,
            ev,
            hosts=(snap.hostname,),
            ranks=[r.rank for r in ranks or ()],
            gpus=_refs(snap, chosen),
            links=_pair_refs(snap, sys_pairs),
            gpus_text=_names(chosen),
            numa_nodes=numa_text,
            sys_pairs=sys_note,
            better=better,
            better_node=room[0] if better else "",
        )
    ]


@register("nic_far_from_gpu", "p2p_topology", "node")
def nic_far_from_gpu(snap: NodeSnapshot, ranks=()):
    """A GPU's nearest NIC is on the other socket (SYS), so GPUDirect RDMA is not used for it."""
    facts = NodeFacts(snap)
    chosen, how = _set_or_all(facts, ranks)
    names = list(snap.links.nic_names or ())
    gpu_nic = snap.links.gpu_nic or ()
    src = node_source(snap.hostname)
    # without a GPU x NIC matrix: the RDMA NICs with a NUMA node, the first one per node (computed once)
    local = [n for n in snap.nics or () if (n.kind or "") in ("infiniband", "roce") and isinstance(n.numa_node, int)]
    first_on: dict[int, object] = {}
    for n in local:
        first_on.setdefault(n.numa_node, n)
    far = []
    for g in chosen:
        i = facts.position(g)
        best: Optional[tuple] = None  # (distance, NIC name, label, column in the GPU x NIC matrix or None)
        if names and i is not None and i < len(gpu_nic):
            row = gpu_nic[i]
            dists = [(link_distance(row[k]), names[k], row[k], k) for k in range(min(len(row), len(names)))]
            dists = [d for d in dists if d[0] is not None]
            if dists:
                best = min(dists)
        elif not names and local and isinstance(g.numa_node, int):
            same = first_on.get(g.numa_node)
            best = (5, same.name, "NODE", None) if same is not None else (6, local[0].name, "SYS", None)
        if best is not None and best[0] >= 6:
            far.append((g, best))
    if not far:
        return []
    multi_node = any(isinstance(r.world_size, int) and r.world_size > len(ranks) for r in ranks or ())
    ev = [fact(src, f"GPU{g.index} (NUMA {g.numa_node}): nearest NIC {nic} is {label}") for g, (_, nic, label, _) in far[:8]]
    if len(far) > 8:
        ev.append(fact(src, f"... and {len(far) - 8} more GPUs"))
    return [
        make(
            "nic_far_from_gpu",
            "warning" if multi_node else "info",
            0.6,
            ev,
            hosts=(snap.hostname,),
            gpus=_refs(snap, [g for g, _ in far]),
            links=[(snap.hostname, f"GPU{g.index}", f"NIC{k}") for g, (_, _, _, k) in far if k is not None],
            which=_some_of([g for g, _ in far], chosen, how),
            have="has" if len(far) == 1 else "have",
            their="its" if len(far) == 1 else "their",
        )
    ]


def _endpoints(pairs) -> list:
    """The GPUs of ``(a, b, ...)`` pairs, each once, first seen first."""
    return list({id(g): g for p in pairs for g in p[:2]}.values())


def _nvlink_pairs(facts: NodeFacts, chosen):
    return [(a, b, label) for a, b, label in facts.linked_pairs(chosen) if nvlink_count(label)]


@register("p2p_disabled_on_nvlink", "p2p_topology", "node")
def p2p_disabled_on_nvlink(snap: NodeSnapshot, ranks=()):
    """NCCL_P2P_DISABLE=1 (or NCCL_P2P_LEVEL=LOC) on GPUs joined by NVLink."""
    env = snap.env or {}
    level = (env.get("NCCL_P2P_LEVEL") or "").strip().upper()
    if not (env_flag(env, "NCCL_P2P_DISABLE") or level in ("LOC", "0")):
        return []
    facts = NodeFacts(snap)
    chosen, how = _set_or_all(facts, ranks)
    pairs = _nvlink_pairs(facts, chosen)
    if not pairs:
        return []
    src = node_source(snap.hostname)
    setting = "NCCL_P2P_DISABLE=" + env["NCCL_P2P_DISABLE"] if env_flag(env, "NCCL_P2P_DISABLE") else f"NCCL_P2P_LEVEL={level}"
    names = " ".join(sorted({g.name or "" for g in chosen})).upper()
    ev = [
        fact(src, setting),
        fact(
            src,
            f"{how_many(len(pairs), 'NVLink pair')} among GPUs {_names(chosen)} ({how}), e.g. "
            f"GPU{pairs[0][0].index}-GPU{pairs[0][1].index}: {pairs[0][2]}",
        ),
    ]
    if "H100" in names or "H200" in names or "H800" in names:
        ev.append(fact("fixtures", busbw_line("h100_nvlink")))
    elif "A100" in names or "A800" in names:
        ev.append(fact("fixtures", busbw_line("a100_nvlink")))
    else:  # no recorded all_reduce for this GPU: the two NVLink machines we have show the scale
        ev.append(fact("fixtures", busbw_line("h100_nvlink")))
        ev.append(fact("fixtures", busbw_line("a100_nvlink")))
    ev.append(fact("fixtures", busbw_line("pcie_no_p2p")))
    return [
        make(
            "p2p_disabled_on_nvlink",
            "warning",
            0.85,
            ev,
            hosts=(snap.hostname,),
            ranks=[r.rank for r in ranks or ()],
            gpus=_refs(snap, _endpoints(pairs)),
            links=_pair_refs(snap, pairs),
            setting=setting,
            pairs=how_many(len(pairs), "GPU pair"),
        )
    ]


@register("iommu_with_pcie_p2p", "p2p_topology", "node")
def iommu_with_pcie_p2p(snap: NodeSnapshot, ranks=()):
    """IOMMU is on (not passthrough) while the job's GPUs use PCIe peer-to-peer."""
    if (snap.host.iommu or "").lower() != "on":
        return []
    env = snap.env or {}
    if env_flag(env, "NCCL_P2P_DISABLE"):
        return []
    facts = NodeFacts(snap)
    chosen, how = _set_or_all(facts, ranks)
    pcie = [(a, b, label) for a, b, label in facts.linked_pairs(chosen) if link_distance(label) in (2, 3, 4, 5, 6)]
    if not pcie:
        return []
    src = node_source(snap.hostname)
    return [
        make(
            "iommu_with_pcie_p2p",
            "warning",
            0.6,
            [
                fact(src, "IOMMU: on (not iommu=pt)"),
                fact(src, f"GPUs {_names(chosen)} ({how}): e.g. GPU{pcie[0][0].index}-GPU{pcie[0][1].index} {pcie[0][2]}"),
                fact(
                    "NCCL troubleshooting guide, 'PCI Access Control Services (ACS)'",
                    "IO virtualization (VT-d / IOMMU) can redirect PCI peer-to-peer traffic to the CPU root complex: "
                    "a large slowdown or a hang",
                ),
            ],
            hosts=(snap.hostname,),
            ranks=[r.rank for r in ranks or ()],
            gpus=_refs(snap, _endpoints(pcie)),
            links=_pair_refs(snap, pcie),
            pairs=how_many(len(pcie), "GPU pair"),
            talk="talks" if len(pcie) == 1 else "talk",
        )
    ]
