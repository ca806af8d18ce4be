"""GPU facts from NVML: the only module of ncclnb that imports pynvml (from
``nvidia-ml-py``), and only when a collection asks for it.

Every NVML call goes through :class:`NvmlGuard`, which runs it on a worker
thread with a deadline and turns any failure into a reason string, so a fact
NVML cannot give is ``None`` plus a reason in ``missing``, never an
exception. A hung call costs one deadline: NVML serialises calls behind a
lock, so after a hang it is not asked again and the rest reads "not asked".
A GPU that fails (lost, fallen off the bus) loses only its own facts.

Each fact matches an ``nvidia-smi`` view: ``nvidia-smi -q`` (per GPU),
``nvidia-smi topo -m`` (link labels), ``nvidia-smi topo -p2p r|w|a|n|p``.
"""

from __future__ import annotations

import os
import queue
import threading
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from ..model import Gpu
from ..model.cpulist import format_cpulist
from ._fs import read_int, read_text
from .pci import nvml_bus_id, pci_path, sysfs_bus_id, topo_label
from .visible import cuda_indices

# nvmlReturn_t codes (nvml.h); named here because pynvml's own constants are
# not reliable (NVML_P2P_CAPS_INDEX_READ is the tuple ``(0,)`` in 13.x).
ERROR_UNINITIALIZED = 1
ERROR_INVALID_ARGUMENT = 2
ERROR_NOT_SUPPORTED = 3
ERROR_NO_PERMISSION = 4
ERROR_NOT_FOUND = 6
ERROR_DRIVER_NOT_LOADED = 9
ERROR_TIMEOUT = 10
ERROR_LIBRARY_NOT_FOUND = 12
ERROR_FUNCTION_NOT_FOUND = 13
ERROR_GPU_IS_LOST = 15
ERROR_RESET_REQUIRED = 16
ERROR_LIB_RM_VERSION_MISMATCH = 18
ERROR_GPU_NOT_FOUND = 28

REASONS = {
    ERROR_UNINITIALIZED: "NVML is not initialized",
    ERROR_INVALID_ARGUMENT: "invalid argument",
    ERROR_NOT_SUPPORTED: "not supported by this GPU",
    ERROR_NO_PERMISSION: "permission denied",
    ERROR_NOT_FOUND: "not found",
    ERROR_DRIVER_NOT_LOADED: "NVIDIA driver not loaded",
    ERROR_TIMEOUT: "NVML reported a timeout",
    ERROR_LIBRARY_NOT_FOUND: "NVML library not found (libnvidia-ml.so.1: no NVIDIA driver installed)",
    ERROR_FUNCTION_NOT_FOUND: "not supported by this driver (function not found)",
    ERROR_GPU_IS_LOST: "GPU is lost",
    ERROR_RESET_REQUIRED: "GPU requires a reset",
    ERROR_LIB_RM_VERSION_MISMATCH: "driver/library version mismatch (reload the driver or reboot)",
    ERROR_GPU_NOT_FOUND: "GPU not found",
}
# After one of these, the GPU answers nothing else: stop asking it.
GPU_GONE = {ERROR_GPU_IS_LOST, ERROR_RESET_REQUIRED, ERROR_GPU_NOT_FOUND}

# nvmlGpuP2PCapsIndex_t, in ``nvidia-smi topo -p2p`` letter order r, w, n, a, p
P2P_CAPS = (("read", 0), ("write", 1), ("nvlink", 2), ("atomics", 3), ("prop", 4))
# nvmlGpuP2PStatus_t -> the letters of ``nvidia-smi topo -p2p``'s legend (model.node.P2P_STATUSES)
P2P_STATUS = {0: "OK", 1: "CNS", 2: "GNS", 3: "TNS", 4: "DR", 5: "NS", 6: "U"}
# nvmlGpuTopologyLevel_t -> ``nvidia-smi topo -m`` label
TOPOLOGY = {0: "PIX", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
COMPUTE_MODES = {0: "Default", 1: "Exclusive_Thread", 2: "Prohibited", 3: "Exclusive_Process"}
NVLINK_DEVICE_SWITCH = 2
NVLINK_MAX_LINKS = 18  # fallback when the binding does not say
AFFINITY_SCOPE_NODE = 0
UNKNOWN_LABEL = "?"  # a cell of gpu_gpu that NVML could not give (see missing)


class NvmlFailure(Exception):
    """An NVML call that gave no answer; ``reason`` is what ``missing`` says."""

    def __init__(self, reason: str, code: Optional[int] = None):
        super().__init__(reason)
        self.reason = reason
        self.code = code


def reason_for(exc: BaseException) -> NvmlFailure:
    """Map an exception from pynvml (or a stand-in) to a failure with a reason."""
    code = getattr(exc, "value", None)
    if isinstance(code, int) and not isinstance(code, bool):
        return NvmlFailure(REASONS.get(code, f"NVML error {code}: {exc}"), code)
    return NvmlFailure(f"{type(exc).__name__}: {exc}".rstrip(": "))


class NvmlGuard:
    """Calls NVML functions by name on one daemon worker thread, each with a
    deadline of ``timeout`` seconds. A daemon thread because a call stuck in
    the driver cannot be interrupted, and must not keep Python from exiting."""

    def __init__(self, lib: Any, timeout: float = 2.0):
        self.lib = lib
        self.timeout = timeout
        self.hung: Optional[str] = None
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._worker: Optional[threading.Thread] = None

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fn, args, box, done = job
            try:
                box.append((True, fn(*args)))
            except BaseException as exc:  # reported to the caller, never raised here
                box.append((False, exc))
            finally:
                done.set()

    def call(self, name: str, *args: Any) -> Any:
        """``lib.<name>(*args)``, or raise :class:`NvmlFailure`."""
        if self.hung:
            raise NvmlFailure(f"not asked: an earlier NVML call {self.hung}", ERROR_TIMEOUT)
        fn = getattr(self.lib, name, None)
        if fn is None:
            raise NvmlFailure(f"not supported by this nvidia-ml-py ({name} missing)", ERROR_FUNCTION_NOT_FOUND)
        if self._worker is None:
            self._worker = threading.Thread(target=self._serve, name="ncclnb-nvml", daemon=True)
            self._worker.start()
        box: list = []
        done = threading.Event()
        self._jobs.put((fn, args, box, done))
        if not done.wait(self.timeout):
            self.hung = f"timed out after {self.timeout:g} s"
            raise NvmlFailure(self.hung, ERROR_TIMEOUT)
        ok, value = box[0]
        if ok:
            return value
        raise reason_for(value)

    def close(self) -> None:
        """Let the worker end; a hung one ends when its call returns."""
        if self._worker is not None:
            self._jobs.put(None)


@dataclass
class NvmlFacts:
    """What :func:`read_gpus` found: GPUs in NVML order, the GPU x GPU link
    labels, the P2P status matrices, driver versions and ``missing``."""

    gpus: list[Gpu] = field(default_factory=list)
    gpu_gpu: tuple = ()
    p2p: dict = field(default_factory=dict)
    driver: Optional[str] = None
    cuda_driver: Optional[str] = None
    missing: dict[str, str] = field(default_factory=dict)
    source: str = "NVML"
    mig_uuids: list = field(default_factory=list)


def load_pynvml() -> Any:
    """The pynvml module from nvidia-ml-py, or raise NvmlFailure."""
    try:
        import pynvml
    except ImportError as exc:
        raise NvmlFailure(f"nvidia-ml-py is not installed ({exc}); pip install nvidia-ml-py") from None
    return pynvml


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace").rstrip("\x00")
    return str(value)


def cuda_version_text(code: int) -> str:
    """NVML's CUDA driver version 12040 -> "12.4" (``nvidia-smi``'s "CUDA Version")."""
    return f"{code // 1000}.{code % 1000 // 10}"


def mask_to_cpulist(words: Any) -> str:
    """``nvmlDeviceGetCpuAffinity`` words (64 CPUs each, lowest first) -> "0-11,24-35"."""
    cpus = []
    for w, word in enumerate(words):
        word = int(word)
        bit = 0
        while word:
            if word & 1:
                cpus.append(w * 64 + bit)
            word >>= 1
            bit += 1
    return format_cpulist(cpus)


def read_gpus(
    nvml: Any = None,
    *,
    environ: Mapping[str, str],
    root: str = "/",
    timeout: float = 2.0,
    cpu_count: Optional[int] = None,
) -> NvmlFacts:
    """Read every GPU NVML lists. ``nvml`` is the pynvml module (default) or
    any object with the same functions (tests pass a fake built from a
    recorded machine). Never raises."""
    facts = NvmlFacts()
    try:
        lib = load_pynvml() if nvml is None else nvml
    except NvmlFailure as exc:
        _all_missing(facts, exc.reason)
        return facts
    facts.source = "NVML via " + getattr(lib, "__name__", type(lib).__name__)
    guard = NvmlGuard(lib, timeout)
    try:
        try:
            guard.call("nvmlInit")
        except NvmlFailure as exc:
            _all_missing(facts, exc.reason)
            return facts
        try:
            _read_all(guard, facts, environ=environ, root=root, cpu_count=cpu_count)
        finally:
            if not guard.hung:
                try:
                    guard.call("nvmlShutdown")
                except NvmlFailure:
                    pass
    finally:
        guard.close()
    return facts


def _all_missing(facts: NvmlFacts, reason: str) -> None:
    for key in ("gpus", "versions.driver", "versions.cuda_driver", "links.gpu_gpu", "links.p2p"):
        facts.missing[key] = reason


def _read_all(guard: NvmlGuard, facts: NvmlFacts, *, environ, root, cpu_count) -> None:
    missing = facts.missing
    try:
        facts.driver = _text(guard.call("nvmlSystemGetDriverVersion"))
    except NvmlFailure as exc:
        missing["versions.driver"] = exc.reason
    try:
        facts.cuda_driver = cuda_version_text(int(guard.call("nvmlSystemGetCudaDriverVersion")))
    except NvmlFailure as exc:
        missing["versions.cuda_driver"] = exc.reason
    try:
        count = int(guard.call("nvmlDeviceGetCount"))
    except NvmlFailure as exc:
        missing["gpus"] = missing["links.gpu_gpu"] = missing["links.p2p"] = exc.reason
        return
    if count == 0:
        missing["gpus"] = "NVML lists no GPU"
        return

    handles: list = []
    gone: dict[int, str] = {}
    rows: list[dict] = []
    for i in range(count):
        try:
            handles.append(guard.call("nvmlDeviceGetHandleByIndex", i))
        except NvmlFailure as exc:
            handles.append(None)
            gone[i] = exc.reason
            rows.append({"index": i})
            continue
        rows.append(_read_gpu(guard, i, handles[i], gone, missing, root=root, cpu_count=cpu_count))
    for i, reason in gone.items():
        missing[f"gpus[{i}]"] = reason
        for key in [k for k in missing if k.startswith(f"gpus[{i}].")]:
            del missing[key]
        rows[i] = {"index": i}
        handles[i] = None

    facts.mig_uuids = [row.pop("_mig_uuids", []) for row in rows]
    indices, order_reason = cuda_indices(
        environ,
        [row.get("uuid") for row in rows],
        [row.get("name") for row in rows],
        facts.mig_uuids,
    )
    if order_reason:
        missing["gpus.cuda_index"] = order_reason
    facts.gpus = [Gpu(cuda_index=indices[i], **row) for i, row in enumerate(rows)]

    bus_ids = [g.pci_bus_id for g in facts.gpus]
    nvlinks, nvlink_reasons = {}, {}
    for i, handle in enumerate(handles):
        if handle is None:
            continue
        try:
            nvlinks[i] = _nvlinks(guard, handle)
        except NvmlFailure as exc:
            nvlink_reasons[i] = exc.reason
    facts.gpu_gpu = _gpu_gpu(guard, handles, bus_ids, nvlinks, nvlink_reasons, gone, missing, root)
    facts.p2p = _p2p(guard, handles, gone, missing)


def _read_gpu(guard: NvmlGuard, i: int, handle, gone: dict, missing: dict, *, root, cpu_count) -> dict:
    row: dict[str, Any] = {"index": i}

    def ask(field_name: str, name: str, *args, convert=lambda v: v):
        if i in gone:
            return None
        try:
            return convert(guard.call(name, handle, *args))
        except NvmlFailure as exc:
            if exc.code in GPU_GONE or exc.code == ERROR_TIMEOUT:
                gone[i] = exc.reason
            else:
                missing[f"gpus[{i}].{field_name}"] = exc.reason
            return None

    row["uuid"] = ask("uuid", "nvmlDeviceGetUUID", convert=_text)
    row["name"] = ask("name", "nvmlDeviceGetName", convert=_text)
    row["pci_bus_id"] = ask("pci_bus_id", "nvmlDeviceGetPciInfo", convert=lambda p: nvml_bus_id(_text(p.busId)))
    memory = ask("memory_total_mib", "nvmlDeviceGetMemoryInfo", convert=lambda m: int(m.total) // (1024 * 1024))
    row["memory_total_mib"] = memory
    mig = ask("mig_mode", "nvmlDeviceGetMigMode", convert=lambda m: "Enabled" if int(m[0]) == 1 else "Disabled")
    row["mig_mode"] = mig
    row["compute_mode"] = ask(
        "compute_mode", "nvmlDeviceGetComputeMode", convert=lambda m: COMPUTE_MODES.get(int(m), f"mode {m}")
    )
    words = max(1, -(-(cpu_count or 1024) // 64))
    row["cpu_affinity"] = ask("cpu_affinity", "nvmlDeviceGetCpuAffinity", words, convert=mask_to_cpulist)
    if row["cpu_affinity"] == "":
        row["cpu_affinity"] = None
        missing[f"gpus[{i}].cpu_affinity"] = "NVML reports an empty CPU affinity mask"
    if i in gone:
        return row
    sysfs = pci_device_dir(root, row["pci_bus_id"])
    if row["cpu_affinity"] is None and sysfs:
        local = read_text(os.path.join(sysfs, "local_cpulist"))
        if local:
            row["cpu_affinity"] = local
            missing.pop(f"gpus[{i}].cpu_affinity", None)
    row["numa_node"] = _numa(guard, handle, i, sysfs, missing)
    row["_mig_uuids"] = _mig_uuids(guard, handle) if mig == "Enabled" else []
    return row


def pci_device_dir(root: str, bus_id: Optional[str]) -> Optional[str]:
    """``<root>/sys/bus/pci/devices/<bus id>`` if sysfs lists the device."""
    short = sysfs_bus_id(bus_id) if bus_id else None
    if short is None:
        return None
    path = os.path.join(root, "sys/bus/pci/devices", short)
    return path if os.path.exists(path) else None


def _numa(guard: NvmlGuard, handle, i: int, sysfs: Optional[str], missing: dict) -> Optional[int]:
    """NUMA node the GPU hangs off (``topo -m`` "NUMA Affinity"): the PCI
    device's sysfs ``numa_node``, else NVML's memory affinity."""
    if sysfs:
        node = read_int(os.path.join(sysfs, "numa_node"))
        if node is not None and node >= 0:
            return node
        if node is not None:
            missing[f"gpus[{i}].numa_node"] = "sysfs numa_node is -1: the platform reports no NUMA affinity"
            return None
    try:
        words = guard.call("nvmlDeviceGetMemoryAffinity", handle, 1, AFFINITY_SCOPE_NODE)
    except NvmlFailure as exc:
        missing[f"gpus[{i}].numa_node"] = exc.reason
        return None
    nodes = [w * 64 + b for w, word in enumerate(words) for b in range(64) if int(word) >> b & 1]
    if len(nodes) == 1:
        return nodes[0]
    missing[f"gpus[{i}].numa_node"] = f"NVML memory affinity spans NUMA nodes {nodes}" if nodes else "no NUMA affinity"
    return None


def _mig_uuids(guard: NvmlGuard, handle) -> list[str]:
    out = []
    try:
        slots = int(guard.call("nvmlDeviceGetMaxMigDeviceCount", handle))
    except NvmlFailure:
        return out
    for k in range(slots):
        try:
            mig = guard.call("nvmlDeviceGetMigDeviceHandleByIndex", handle, k)
            out.append(_text(guard.call("nvmlDeviceGetUUID", mig)))
        except NvmlFailure:
            continue
    return out


def _nvlinks(guard: NvmlGuard, handle) -> list[tuple[Optional[str], Optional[int]]]:
    """Active NVLinks of one GPU: (remote PCI bus id, remote device type)."""
    links = []
    max_links = getattr(guard.lib, "NVML_NVLINK_MAX_LINKS", NVLINK_MAX_LINKS)
    if not isinstance(max_links, int):
        max_links = NVLINK_MAX_LINKS
    for link in range(max_links):
        try:
            active = guard.call("nvmlDeviceGetNvLinkState", handle, link)
        except NvmlFailure as exc:
            if exc.code not in (ERROR_NOT_SUPPORTED, ERROR_INVALID_ARGUMENT, ERROR_FUNCTION_NOT_FOUND, ERROR_NOT_FOUND):
                raise
            if link == 0 or exc.code == ERROR_FUNCTION_NOT_FOUND:
                break  # no NVLink on this GPU (or driver)
            continue  # an absent link in the middle, or past this GPU's last one
        if int(active) != 1:
            continue
        remote = nvml_bus_id(_text(guard.call("nvmlDeviceGetNvLinkRemotePciInfo", handle, link).busId))
        try:
            kind: Optional[int] = int(guard.call("nvmlDeviceGetNvLinkRemoteDeviceType", handle, link))
        except NvmlFailure:
            kind = None
        links.append((remote, kind))
    return links


def _gpu_gpu(guard, handles, bus_ids, nvlinks, nvlink_reasons, gone, missing, root) -> tuple:
    n = len(handles)
    ours = {b for b in bus_ids if b}

    def to_switch(links) -> int:
        return sum(1 for remote, kind in links if kind == NVLINK_DEVICE_SWITCH or (kind is None and remote not in ours))

    switch = {i: to_switch(links) for i, links in nvlinks.items()}
    unknown: list[str] = []
    rows = []
    for i in range(n):
        row = []
        for j in range(n):
            if i == j:
                row.append("X")
                continue
            if i in gone or j in gone:
                row.append(UNKNOWN_LABEL)
                continue
            count = 0
            if i in nvlinks and j in nvlinks:
                direct = max(
                    sum(1 for remote, kind in nvlinks[i] if remote == bus_ids[j] and kind != NVLINK_DEVICE_SWITCH),
                    sum(1 for remote, kind in nvlinks[j] if remote == bus_ids[i] and kind != NVLINK_DEVICE_SWITCH),
                )
                count = direct + (min(switch[i], switch[j]) if switch[i] and switch[j] else 0)
            if count:
                row.append(f"NV{count}")
                continue
            label, reason = _pcie_label(guard, handles[i], handles[j], bus_ids[i], bus_ids[j], root)
            if label is None:
                row.append(UNKNOWN_LABEL)
                unknown.append(f"GPU{i}-GPU{j}: {reason}")
            else:
                row.append(label)
        rows.append(tuple(row))
    problems = [f"GPU{i}: {r}" for i, r in sorted(gone.items())]
    problems += [f"GPU{i} NVLink: {r}" for i, r in sorted(nvlink_reasons.items())]
    problems += unknown[:4] + ([f"and {len(unknown) - 4} more pairs"] if len(unknown) > 4 else [])
    if problems:
        missing["links.gpu_gpu"] = f"cells marked {UNKNOWN_LABEL!r} are unknown: " + "; ".join(problems)
    return tuple(rows)


def _pcie_label(guard, h1, h2, bus1, bus2, root) -> tuple[Optional[str], str]:
    try:
        level = int(guard.call("nvmlDeviceGetTopologyCommonAncestor", h1, h2))
        if level in TOPOLOGY:
            return TOPOLOGY[level], ""
        reason = f"unknown topology level {level}"
    except NvmlFailure as exc:
        reason = exc.reason
    # NVML would not say: the PCI tree in sysfs still can
    a = pci_path(root, bus1) if bus1 else None
    b = pci_path(root, bus2) if bus2 else None
    if a and b:
        label = topo_label(a, b)
        if label:
            return label, ""
    return None, reason


def _p2p(guard, handles, gone, missing) -> dict:
    n = len(handles)
    out = {}
    for cap, index in P2P_CAPS:
        rows = []
        failures: list[str] = []
        asked = 0
        for i in range(n):
            row = []
            for j in range(n):
                if i == j:
                    row.append("X")
                    continue
                if i in gone or j in gone:
                    row.append("U")
                    continue
                asked += 1
                try:
                    status = int(guard.call("nvmlDeviceGetP2PStatus", handles[i], handles[j], index))
                    row.append(P2P_STATUS.get(status, "U"))
                except NvmlFailure as exc:
                    row.append("U")
                    failures.append(exc.reason)
            rows.append(tuple(row))
        if asked and len(failures) == asked:
            missing[f"links.p2p.{cap}"] = failures[0]
            continue
        out[cap] = tuple(rows)
        if failures:
            missing[f"links.p2p.{cap}"] = f"{len(failures)} pairs read 'U': {failures[0]}"
        elif gone:
            missing[f"links.p2p.{cap}"] = (
                "pairs with " + ", ".join(f"GPU{i}" for i in sorted(gone)) + " read 'U': " + "; ".join(sorted(set(gone.values())))
            )
    return out
