"""Which NCCL builds and net plugins this machine could load, and the
versions of the training frameworks installed, without importing any of them.

Sources, each tagged on the :class:`Library` it yields: ``pip`` (a
``nvidia-nccl-*`` wheel and the ``libnccl.so.2`` inside it), ``ldconfig``
(``ldconfig -p``), ``LD_LIBRARY_PATH`` and ``dir`` (the usual install dirs).
Versions come from file names (``libnccl.so.2.19.3``, after following
symlinks) and from ``*.dist-info`` directory names.
"""

from __future__ import annotations

import glob
import os
import re
import sys
from typing import Callable, Iterable, Mapping, Optional, Sequence

from ..model import Library
from ._fs import listdir, under
from .runner import CommandResult

USUAL_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib/powerpc64le-linux-gnu",
    "/usr/local/cuda/lib64",
    "/usr/local/cuda/lib",
    "/usr/local/nccl*/lib",
    "/usr/local/lib",
    "/usr/lib64",
    "/usr/lib",
    "/opt/nccl*/lib",
    "/opt/nccl*/build/lib",
    "/opt/amazon/ofi-nccl/lib",  # aws-ofi-nccl (EFA) net plugin
    "/opt/amazon/efa/lib",
    "/opt/hpcx/nccl_rdma_sharp_plugin/lib",  # HPC-X SHARP net plugin
    "/opt/aws-ofi-nccl/lib",
)

FRAMEWORKS = ("lightning", "pytorch-lightning", "deepspeed", "accelerate", "transformers")

_NCCL_NAME = re.compile(r"libnccl\.so(?:\.\d+)*$")
_PLUGIN_NAME = re.compile(r"libnccl-net[\w.+-]*\.so(?:\.\d+)*$")


def normalize_dist(name: str) -> str:
    """PEP 503 name: "Nvidia_NCCL.cu12" -> "nvidia-nccl-cu12"."""
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_distributions(paths: Optional[Sequence[str]] = None) -> dict[str, tuple[str, str]]:
    """normalized name -> (version, site dir) from the ``*.dist-info`` and
    versioned ``*.egg-info`` names on ``sys.path``; the first hit wins, as
    for imports. Reads directory names only: tens of times cheaper than
    importlib.metadata, which reads every METADATA file."""
    out: dict[str, tuple[str, str]] = {}
    for site in paths if paths is not None else sys.path:
        if not site or not os.path.isdir(site):
            continue
        for entry in listdir(site):
            if entry.endswith(".dist-info"):
                stem = entry[: -len(".dist-info")]
            elif entry.endswith(".egg-info"):
                stem = entry[: -len(".egg-info")]
            else:
                continue
            name, sep, rest = stem.partition("-")
            if not sep:
                continue
            version = rest.split("-py", 1)[0]
            out.setdefault(normalize_dist(name), (version, site))
    return out


def version_from_name(filename: str) -> Optional[str]:
    """``libnccl.so.2.19.3`` -> "2.19.3"; ``libnccl.so.2`` -> "2"; none -> None."""
    m = re.search(r"\.so\.(\d+(?:\.\d+)*)$", filename)
    return m.group(1) if m else None


def find_libraries(
    *,
    root: str = "/",
    environ: Mapping[str, str],
    run: Callable[[Sequence[str], float], CommandResult],
    timeout: float = 2.0,
    distributions: Optional[Mapping[str, tuple[str, str]]] = None,
) -> tuple[dict, dict[str, str], list[str]]:
    """NCCL libraries and net plugins. Returns (fields for :class:`Versions`:
    ``nccl_pip``, ``nccl_system``, ``net_plugins``; missing reasons; the
    sources used)."""
    missing: dict[str, str] = {}
    dists = installed_distributions() if distributions is None else distributions
    nccl_pip = {name: version for name, (version, _site) in sorted(dists.items()) if name.startswith("nvidia-nccl")}

    seen: set[str] = set()
    system: list[Library] = []
    plugins: list[Library] = []

    def add(path: str, source: str) -> None:
        """Record one library file, once per real file."""
        real = os.path.realpath(path)
        if real in seen or not os.path.isfile(real):
            return
        seen.add(real)
        shown = real if root in ("/", "") else "/" + os.path.relpath(real, root)
        name = os.path.basename(real)
        if _PLUGIN_NAME.match(name) or _PLUGIN_NAME.match(os.path.basename(path)):
            plugins.append(Library(path=shown, version=version_from_name(name), source=source))
        else:
            system.append(Library(path=shown, version=version_from_name(name), source=source))

    # pip wheels: site-packages/nvidia/nccl/lib/libnccl.so.2, version from the wheel
    for name, (version, site) in sorted(dists.items()):
        if not name.startswith("nvidia-nccl"):
            continue
        for lib in sorted(glob.glob(os.path.join(site, "nvidia", "nccl", "lib", "libnccl.so*"))):
            real = os.path.realpath(lib)
            if real not in seen:
                seen.add(real)
                system.append(Library(path=real, version=version, source="pip"))

    result = run(["ldconfig", "-p"], timeout)
    if result.ok:
        for line in result.stdout.splitlines():
            left, sep, target = line.partition("=>")
            lib = left.strip().split(" ", 1)[0]
            if sep and (_NCCL_NAME.match(lib) or _PLUGIN_NAME.match(lib)):
                add(under(root, target.strip()), "ldconfig")
    else:
        missing["versions.nccl_system.ldconfig"] = result.reason("ldconfig -p")

    for folder in _split_path(environ.get("LD_LIBRARY_PATH", "")):
        for path in _libs_in(under(root, folder)):
            add(path, "LD_LIBRARY_PATH")
    for pattern in USUAL_DIRS:
        for folder in sorted(glob.glob(under(root, pattern))):
            for path in _libs_in(folder):
                add(path, "dir")
    return (
        {"nccl_pip": nccl_pip, "nccl_system": tuple(system), "net_plugins": tuple(plugins)},
        missing,
        ["pip dist-info", "ldconfig -p", "LD_LIBRARY_PATH", "usual dirs"],
    )


def _split_path(value: str) -> Iterable[str]:
    for part in value.split(":"):
        if part.strip():
            yield part.strip()


def _libs_in(folder: str) -> list[str]:
    return [os.path.join(folder, name) for name in listdir(folder) if _NCCL_NAME.match(name) or _PLUGIN_NAME.match(name)]


def framework_versions(distributions: Optional[Mapping[str, tuple[str, str]]] = None) -> dict[str, str]:
    """Installed versions of lightning, pytorch-lightning, deepspeed,
    accelerate and transformers (only those present)."""
    dists = installed_distributions() if distributions is None else distributions
    return {name: dists[name][0] for name in FRAMEWORKS if name in dists}


def nvidia_smi_driver(
    run: Callable[[Sequence[str], float], CommandResult], timeout: float
) -> tuple[Optional[str], Optional[str]]:
    """Driver version from ``nvidia-smi`` when NVML is unusable from Python
    (an nvidia-ml-py that does not load, say). Returns (version, reason)."""
    result = run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], timeout)
    if not result.ok:
        return None, result.reason("nvidia-smi")
    lines = [line.strip() for line in result.stdout.splitlines() if line.strip()]
    if lines and re.fullmatch(r"\d+(\.\d+)+", lines[0]):
        return lines[0], None
    return None, "nvidia-smi printed no driver version"
