"""Host facts: name, OS, kernel, CPU, NUMA nodes, container hints, IOMMU,
/dev/shm and resource limits.

Everything is read from files under ``root`` (the filesystem, or a recorded
tree) and ``procfs_root``, so a recorded machine reads exactly like a live one.
"""

from __future__ import annotations

import glob
import os
import re
from typing import Mapping, Optional

from ..model import UNLIMITED, Host, NumaNode
from ..model.cpulist import parse_cpulist
from ._fs import listdir, read_text, under


def read_host(
    *,
    root: str = "/",
    procfs_root: str = "/proc",
    environ: Mapping[str, str],
    hostname: Optional[str] = None,
    shm_path: Optional[str] = None,
) -> tuple[Host, dict[str, str]]:
    """Build :class:`Host` and the ``missing`` reasons for what it lacks
    (keys like ``host.iommu``)."""
    missing: dict[str, str] = {}

    def note(field: str, reason: str) -> None:
        missing[f"host.{field}"] = reason

    name = hostname or _hostname(root)
    os_name = _os_release(root)
    if os_name is None:
        note("os", "no PRETTY_NAME in /etc/os-release")
    kernel = read_text(os.path.join(procfs_root, "sys/kernel/osrelease"))
    if not kernel:
        kernel = None
        note("kernel", f"cannot read {procfs_root}/sys/kernel/osrelease")
    cpuinfo = read_text(os.path.join(procfs_root, "cpuinfo")) or ""
    cpu_model = _cpu_model(cpuinfo)
    if cpu_model is None:
        note("cpu_model", "no model name in /proc/cpuinfo")
    cpu_count = _cpu_count(root, cpuinfo)
    if cpu_count is None:
        note("cpu_count", "cannot read /sys/devices/system/cpu/present")
    numa = _numa_nodes(root)
    if not numa:
        note("numa_nodes", "no /sys/devices/system/node/node* (kernel without NUMA support)")
    iommu, iommu_reason = _iommu(root, procfs_root)
    if iommu is None:
        note("iommu", iommu_reason)
    shm_total, shm_free, shm_reason = _shm(shm_path if shm_path is not None else under(root, "/dev/shm"))
    if shm_reason:
        note("shm_total_bytes", shm_reason)
        note("shm_free_bytes", shm_reason)
    limits = _limits(procfs_root)
    for key in ("rlimit_nofile_soft", "rlimit_nofile_hard", "rlimit_memlock_soft", "rlimit_memlock_hard"):
        if limits.get(key) is None:
            note(key, f"cannot read {procfs_root}/self/limits")

    host = Host(
        hostname=name,
        os=os_name,
        kernel=kernel,
        cpu_model=cpu_model,
        cpu_count=cpu_count,
        numa_nodes=tuple(numa),
        container=tuple(container_hints(root, procfs_root, environ)),
        iommu=iommu,
        shm_total_bytes=shm_total,
        shm_free_bytes=shm_free,
        **limits,
    )
    return host, missing


def _hostname(root: str) -> str:
    if root not in ("/", ""):
        recorded = read_text(under(root, "/etc/hostname"))
        if recorded:
            return recorded.splitlines()[0]
    import socket

    return socket.gethostname() or "unknown"


def _os_release(root: str) -> Optional[str]:
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        text = read_text(under(root, path))
        if text is None:
            continue
        fields = {}
        for line in text.splitlines():
            key, sep, value = line.partition("=")
            if sep:
                fields[key.strip()] = value.strip().strip("\"'")
        name = fields.get("PRETTY_NAME") or " ".join(filter(None, (fields.get("NAME"), fields.get("VERSION"))))
        return name or None
    return None


_MODEL_KEYS = ("model name", "Model Name", "cpu model", "Processor", "Hardware")


def _cpu_model(cpuinfo: str) -> Optional[str]:
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in _MODEL_KEYS and value.strip():
            return value.strip()
    return None


def _cpu_count(root: str, cpuinfo: str) -> Optional[int]:
    present = read_text(under(root, "/sys/devices/system/cpu/present"))
    if present:
        try:
            return len(parse_cpulist(present, strict=True))
        except ValueError:
            pass
    count = sum(1 for line in cpuinfo.splitlines() if re.match(r"processor\s*:", line))
    if count:
        return count
    return os.cpu_count() if root in ("/", "") else None


def _numa_nodes(root: str) -> list[NumaNode]:
    base = under(root, "/sys/devices/system/node")
    nodes = []
    for entry in listdir(base):
        m = re.fullmatch(r"node(\d+)", entry)
        if not m:
            continue
        cpus = read_text(os.path.join(base, entry, "cpulist")) or ""
        memory = None
        meminfo = read_text(os.path.join(base, entry, "meminfo")) or ""
        mm = re.search(r"MemTotal:\s*(\d+)\s*kB", meminfo)
        if mm:
            memory = int(mm.group(1)) // 1024
        nodes.append(NumaNode(id=int(m.group(1)), cpus=cpus, memory_mib=memory))
    return sorted(nodes, key=lambda n: n.id)


def container_hints(root: str, procfs_root: str, environ: Mapping[str, str]) -> list[str]:
    """Signs that this runs in a container or under a scheduler: "docker",
    "podman", "kubernetes", "slurm", and the first non-root cgroup path."""
    hints = []
    if os.path.exists(under(root, "/.dockerenv")):
        hints.append("docker")
    if os.path.exists(under(root, "/run/.containerenv")):
        hints.append("podman")
    if environ.get("KUBERNETES_SERVICE_HOST"):
        hints.append("kubernetes")
    if environ.get("SLURM_JOB_ID"):
        hints.append("slurm")
    cgroup = read_text(os.path.join(procfs_root, "1/cgroup")) or ""
    for line in cgroup.splitlines():
        path = line.split(":", 2)[-1]
        if path not in ("/", "", "/init.scope") and not path.startswith("/user.slice"):
            for word, hint in (("docker", "docker"), ("kubepods", "kubernetes"), ("libpod", "podman"), ("lxc", "lxc")):
                if word in path and hint not in hints:
                    hints.append(hint)
            hints.append(f"cgroup:{path}")
            break
    return hints


def _iommu(root: str, procfs_root: str) -> tuple[Optional[str], str]:
    """ "on" (DMA translated: can break GPU peer-to-peer), "passthrough"
    (identity domains) or "off". The group types are the ground truth; the
    kernel command line is a fallback."""
    types = set()
    for path in glob.glob(under(root, "/sys/kernel/iommu_groups/*/type")):
        value = read_text(path)
        if value:
            types.add(value)
    if any(t.startswith("DMA") for t in types):
        return "on", ""
    if types:
        return "passthrough", ""
    cmdline = read_text(os.path.join(procfs_root, "cmdline"))
    units = listdir(under(root, "/sys/class/iommu"))
    words = set((cmdline or "").split())
    if words & {"iommu=pt", "iommu.passthrough=1"}:
        return "passthrough", ""
    if units or words & {"intel_iommu=on", "amd_iommu=on", "amd_iommu=force_isolation"}:
        return "on", ""
    if words & {"intel_iommu=off", "amd_iommu=off", "iommu=off"}:
        return "off", ""
    if cmdline is None and not os.path.isdir(under(root, "/sys/class/iommu")):
        return None, "cannot read /sys/class/iommu or /proc/cmdline"
    return "off", ""


def _shm(path: str) -> tuple[Optional[int], Optional[int], Optional[str]]:
    try:
        st = os.statvfs(path)
    except FileNotFoundError:
        return None, None, f"{path} does not exist"
    except OSError as exc:
        return None, None, f"statvfs {path}: {exc.strerror or exc}"
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize, None


_LIMIT_ROWS = {"Max open files": "nofile", "Max locked memory": "memlock"}


def _limit_value(text: str) -> Optional[int]:
    if text == "unlimited":
        return UNLIMITED
    return int(text) if text.isdigit() else None


def _limits(procfs_root: str) -> dict[str, Optional[int]]:
    """Soft and hard RLIMIT_NOFILE / RLIMIT_MEMLOCK from ``/proc/self/limits``
    (recordable), falling back to the resource module for a live /proc."""
    out: dict[str, Optional[int]] = {}
    text = read_text(os.path.join(procfs_root, "self/limits")) or ""
    for line in text.splitlines():
        for label, name in _LIMIT_ROWS.items():
            if line.startswith(label):
                parts = line[len(label) :].split()
                if len(parts) >= 2:
                    out[f"rlimit_{name}_soft"] = _limit_value(parts[0])
                    out[f"rlimit_{name}_hard"] = _limit_value(parts[1])
    if len(out) < 4 and os.path.realpath(procfs_root) == "/proc":
        import resource

        for name, which in (("nofile", resource.RLIMIT_NOFILE), ("memlock", resource.RLIMIT_MEMLOCK)):
            soft, hard = resource.getrlimit(which)
            out[f"rlimit_{name}_soft"] = UNLIMITED if soft == resource.RLIM_INFINITY else soft
            out[f"rlimit_{name}_hard"] = UNLIMITED if hard == resource.RLIM_INFINITY else hard
    return {k: out.get(k) for k in ("rlimit_nofile_soft", "rlimit_nofile_hard", "rlimit_memlock_soft", "rlimit_memlock_hard")}
