"""Version checks: what differs across nodes, which NCCL a node really loads,
and whether the driver can run the CUDA that torch was built with."""

from __future__ import annotations

import re
from typing import Optional

from ..model import ClusterReport, NodeSnapshot
from ..model.derive import parse_version, short_version, version_splits
from ._registry import fact, make, node_source, register

# Minimum Linux x86_64 driver for each CUDA toolkit's GA release, from NVIDIA's
# CUDA Toolkit Release Notes, Table 3 "CUDA Toolkit and Corresponding Driver
# Versions" ("Toolkit Driver Version", Linux column).
TOOLKIT_DRIVER_MIN: dict[tuple[int, int], tuple[int, ...]] = {
    (11, 0): (450, 36, 6),
    (11, 1): (455, 23),
    (11, 2): (460, 27, 3),
    (11, 3): (465, 19, 1),
    (11, 4): (470, 42, 1),
    (11, 5): (495, 29, 5),
    (11, 6): (510, 39, 1),
    (11, 7): (515, 43, 4),
    (11, 8): (520, 61, 5),
    (12, 0): (525, 60, 13),
    (12, 1): (530, 30, 2),
    (12, 2): (535, 54, 3),
    (12, 3): (545, 23, 6),
    (12, 4): (550, 54, 14),
    (12, 5): (555, 42, 2),
    (12, 6): (560, 28, 3),
    (12, 8): (570, 26),
    (12, 9): (575, 51, 3),
    (13, 0): (580, 65, 6),
}
# Minimum driver for CUDA *minor version compatibility* (an app built with any
# 12.x runs on a >= 525.60.13 driver, with limits such as no JIT of newer PTX),
# from the same release notes, Table 2 "CUDA Toolkit and Minimum Required
# Driver Version for CUDA Minor Version Compatibility".
MINOR_COMPAT_DRIVER_MIN: dict[int, tuple[int, ...]] = {
    11: (450, 80, 2),
    12: (525, 60, 13),
    13: (580,),
}
DRIVER_TABLE_SOURCE = "NVIDIA CUDA Toolkit Release Notes, Tables 2 and 3 (minimum Linux driver per CUDA version)"


def _fmt(v: tuple[int, ...]) -> str:
    return ".".join(f"{p:02d}" if i else str(p) for i, p in enumerate(v))


@register("driver_too_old", "version_mismatch", "node")
def driver_too_old(snap: NodeSnapshot, ranks=()):
    """The NVIDIA driver is older than the CUDA version torch was built with needs."""
    v = snap.versions
    cuda = parse_version(v.torch_cuda)
    if not cuda or len(cuda) < 2:
        return []
    src = node_source(snap.hostname)
    host = (snap.hostname,)
    driver = parse_version(v.driver)
    cuda_s = f"{cuda[0]}.{cuda[1]}"
    if driver:
        floor = MINOR_COMPAT_DRIVER_MIN.get(cuda[0])
        need = TOOLKIT_DRIVER_MIN.get(cuda[:2])
        if need is None:  # an unlisted minor (12.7): the nearest lower listed one
            lower = [k for k in TOOLKIT_DRIVER_MIN if k[0] == cuda[0] and k[1] <= cuda[1]]
            need = TOOLKIT_DRIVER_MIN[max(lower)] if lower else None
        ev = [fact(src, f"driver {v.driver}, torch {v.torch or '?'} built with CUDA {v.torch_cuda}")]
        if floor and driver < floor:
            return [
                make(
                    "driver_too_old",
                    "error",
                    0.9,
                    ev
                    + [
                        fact(
                            DRIVER_TABLE_SOURCE,
                            f"CUDA {cuda[0]}.x needs driver >= {_fmt(floor)} even with minor version compatibility",
                        )
                    ],
                    hosts=host,
                    driver=v.driver,
                    cuda_major=cuda[0],
                    cuda=cuda_s,
                    need=_fmt(need or floor),
                )
            ]
        if need and driver < need:
            return [
                make(
                    "driver_too_old.minor_compat",
                    "info",
                    0.5,
                    ev
                    + [
                        fact(
                            DRIVER_TABLE_SOURCE,
                            f"CUDA {cuda_s} ships with driver >= {_fmt(need)}; minor version compatibility needs >= {_fmt(floor)}"
                            if floor
                            else f"CUDA {cuda_s} ships with driver >= {_fmt(need)}",
                        )
                    ],
                    hosts=host,
                    driver=v.driver,
                    cuda=cuda_s,
                    need=_fmt(need),
                )
            ]
        return []
    top = parse_version(v.cuda_driver)  # nvidia-smi "CUDA Version": newest CUDA this driver runs
    if top and len(top) >= 2 and top[0] < cuda[0]:
        return [
            make(
                "driver_too_old.cuda_version",
                "error",
                0.8,
                [fact(src, f"nvidia-smi CUDA Version {v.cuda_driver}, torch.version.cuda {v.torch_cuda}")],
                hosts=host,
                cuda_driver=v.cuda_driver,
                cuda=cuda_s,
            )
        ]
    return []


# --- which NCCL a node loads -------------------------------------------------


def _pip_nccl_cuda_major(package: str) -> Optional[int]:
    m = re.search(r"cu(\d+)", package)
    return int(m.group(1)) if m else None


@register("nccl_multiple_libraries", "version_mismatch", "node")
def nccl_multiple_libraries(snap: NodeSnapshot, ranks=()):
    """More than one NCCL library on a node, and which one torch loads."""
    v = snap.versions
    env = snap.env or {}
    src = node_source(snap.hostname)
    copies: list[tuple[str, str, str]] = []  # (where, version, label)
    for pkg, ver in sorted((v.nccl_pip or {}).items()):
        if isinstance(ver, str):
            copies.append(("pip", short_version(ver) or ver, f"pip {pkg} {ver} (site-packages/nvidia/nccl/lib/libnccl.so.2)"))
    for lib in v.nccl_system or ():
        if not isinstance(getattr(lib, "path", None), str):
            continue
        ver = short_version(lib.version) or "?"
        copies.append((lib.source or "system", ver, f"{lib.path} ({lib.source or 'system'}, {lib.version or 'version unknown'})"))
    versions = {c[1] for c in copies if c[1] != "?"}
    pip_pkgs = [p for p in (v.nccl_pip or {}) if isinstance(p, str)]
    torch_nccl = short_version(v.nccl_torch)
    if torch_nccl:
        versions.add(torch_nccl)
    loaded = short_version(v.nccl_loaded)
    if loaded:
        versions.add(loaded)
    if len(versions) <= 1 and len(pip_pkgs) <= 1:
        return []

    ev = [fact(src, c[2]) for c in copies[:12]]
    if len(copies) > 12:
        ev.append(fact(src, f"... and {len(copies) - 12} more copies"))
    if v.nccl_torch:
        ev.append(fact(src, f"torch.cuda.nccl.version() = {v.nccl_torch}"))
    if v.nccl_loaded:
        ev.append(fact(src, f"NCCL_DEBUG=INFO printed 'NCCL version {v.nccl_loaded}'"))
    preload = env.get("LD_PRELOAD", "")
    said: dict = {}  # the case (which copy torch loads) picks the card; these fill it
    if isinstance(preload, str) and "libnccl" in preload:
        case, said = "nccl_multiple_libraries.preload", dict(preload=preload)
        ev.append(fact(src, f"LD_PRELOAD={preload}"))
    elif torch_nccl:
        match = [c for c in copies if c[1] == torch_nccl]
        if match:
            case, said = "nccl_multiple_libraries", dict(torch_nccl=torch_nccl, copy=match[0][2])
        else:
            case, said = "nccl_multiple_libraries.built_in", dict(torch_nccl=torch_nccl)
    elif pip_pkgs and v.torch:
        case = "nccl_multiple_libraries.pip_wheel"
    else:
        case = "nccl_multiple_libraries.loader_order"
    cuda = parse_version(v.torch_cuda)
    notes = []
    if len(pip_pkgs) > 1:
        notes.append(
            f"{' and '.join(sorted(pip_pkgs))} both install site-packages/nvidia/nccl/lib/libnccl.so.2: "
            "the one installed last overwrote the other's file"
        )
    for pkg in pip_pkgs:
        major = _pip_nccl_cuda_major(pkg)
        if cuda and major and major != cuda[0]:
            notes.append(f"{pkg} is built for CUDA {major}, torch for CUDA {cuda[0]}")
    severity = "warning" if (notes or (torch_nccl and len(versions) > 1)) else "info"
    system_versions = sorted({c[1] for c in copies if c[0] != "pip" and c[1] != "?"} - {torch_nccl})
    system = (
        f" Programs linked against the system library (nccl-tests, MPI jobs, other frameworks) load "
        f"{', '.join(system_versions)} instead, so a test that passes with one says nothing about the other."
        if system_versions
        else ""
    )
    return [
        make(
            case,
            severity,
            0.7,
            ev,
            hosts=(snap.hostname,),
            count=len(versions),
            hostname=snap.hostname,
            versions=", ".join(sorted(versions)),
            system=system,
            notes=" " + "; ".join(notes) + "." if notes else "",
            **said,
        )
    ]


# --- differences across nodes ------------------------------------------------


# component -> (severity, confidence, why it matters)
_COMPONENT_WEIGHT = {
    "NCCL (used by torch)": (
        "error",
        0.9,
        "NCCL does not promise that different versions interoperate: for example "
        "2.14.3 against 2.19.3 fails at connect with 'address with family 0 is neither AF_INET nor AF_INET6'",
    ),
    "torch": ("warning", 0.7, "different torch versions can disagree on collective order and on the c10d store protocol"),
    "CUDA (torch build)": ("warning", 0.6, "torch builds for different CUDA versions ship different NCCL builds"),
    "NCCL (pip)": ("warning", 0.5, "the NCCL wheels differ, so the NCCL torch loads is likely to differ"),
    "NCCL (system)": ("info", 0.4, "programs linked against the system NCCL (nccl-tests, MPI) run different versions"),
    "NVIDIA driver": ("info", 0.4, "drivers of one branch interoperate, but a mixed fleet hides per-node bugs"),
}


def _group(hosts_by_value: dict[str, list[str]], limit: int = 5) -> list[str]:
    lines = []
    for value, hosts in sorted(hosts_by_value.items(), key=lambda kv: -len(kv[1])):
        names = ", ".join(hosts[:limit]) + (f", ... ({len(hosts)} hosts)" if len(hosts) > limit else "")
        lines.append(f"{value}: {names}")
    return lines


def _ranks_on(report: ClusterReport, hosts: set[str]) -> list[int]:
    return [r.rank for r in report.ranks or () if r.host in hosts and isinstance(r.rank, int)]


@register("versions_differ", "version_mismatch", "report")
def versions_differ(report: ClusterReport):
    """NCCL, torch, CUDA or driver versions differ across the nodes of a job.

    Which component differs on which hosts is
    :func:`ncclnb.model.derive.version_splits` (the version table marks the
    same cells): a strict majority's value is taken as the intended one and the
    other hosts are blamed; on a tie every host is."""
    splits = version_splits(report.snapshots or ())
    out = []
    for comp, (severity, conf, why) in _COMPONENT_WEIGHT.items():
        split = splits.get(comp)
        if split is None:
            continue
        by_value = {value: list(hosts) for value, hosts in split.by_value.items()}
        odd = set(split.odd)
        sev = severity
        if comp == "NVIDIA driver":
            majors = {(parse_version(k) or (0,))[0] for k in by_value}
            sev = "warning" if len(majors) > 1 else "info"
        out.append(
            make(
                "versions_differ",
                sev,
                conf,
                [fact("report", line) for line in _group(by_value)],
                hosts=sorted(odd),
                ranks=_ranks_on(report, odd),
                component=comp,
                values=" vs ".join(sorted(by_value)),
                why=why,
            )
        )
    return out
