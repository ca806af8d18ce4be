"""A stand-in for pynvml built from a recorded machine (a NodeSnapshot).

It answers the subset of the pynvml API that ``ncclnb.collectors.nvml`` calls
with the recorded GPUs, link labels and P2P statuses, raising errors shaped
like pynvml's (an ``NVMLError`` subclass carrying the nvmlReturn_t code in
``.value``). Facts the recording lacks are answered the way NVML answers a
GPU that lacks them: "Not Supported". Only identity that every real GPU has
and the collector needs (UUID, PCI bus id) is made up when absent, and
``synthetic`` lists which.

NVLink is modeled from the labels: a set of three or more GPUs joined
pairwise by the same NV# label is an NVSwitch fabric (each GPU has # links to
switches, as on HGX/DGX boards); other NV# pairs are direct bridges.

Failures to inject: ``library_missing`` (nvmlInit raises LibraryNotFound),
``init_error`` (any code at nvmlInit), ``lost`` (GPU indices whose every call
raises GpuIsLost), ``unsupported`` / ``denied`` (function names, or
(function name, GPU index) pairs, raising NotSupported / NoPermission) and
``hang`` (same form; the call blocks until ``release()`` or ``hang_seconds``).
"""

from __future__ import annotations

import re
import threading
from types import SimpleNamespace
from typing import Iterable, Optional

from ncclnb.model import NodeSnapshot

NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_UNINITIALIZED = 1

_ERROR_NAMES = {
    1: "Uninitialized",
    2: "InvalidArgument",
    3: "NotSupported",
    4: "NoPermission",
    6: "NotFound",
    9: "DriverNotLoaded",
    10: "Timeout",
    12: "LibraryNotFound",
    13: "FunctionNotFound",
    15: "GpuIsLost",
    16: "ResetRequired",
    18: "LibRmVersionMismatch",
}


class NVMLError(Exception):
    """pynvml's error shape: subclass per code, the code in ``.value``."""

    def __init__(self, value: int):
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return _ERROR_NAMES.get(self.value, f"NVML error {self.value}")


_CLASSES = {code: type(f"NVMLError_{name}", (NVMLError,), {}) for code, name in _ERROR_NAMES.items()}


def nvml_error(code: int) -> NVMLError:
    return _CLASSES.get(code, NVMLError)(code)


_LEVELS = {"PIX": 10, "PXB": 20, "PHB": 30, "NODE": 40, "SYS": 50}
_P2P_CODES = {"OK": 0, "CNS": 1, "GNS": 2, "TNS": 3, "DR": 4, "NS": 5, "U": 6}
_COMPUTE = {"Default": 0, "Exclusive_Thread": 1, "Prohibited": 2, "Exclusive_Process": 3}
_CAPS = {0: "read", 1: "write", 2: "nvlink", 3: "atomics", 4: "prop"}
SWITCH = 2
GPU = 0


class _Handle:
    def __init__(self, index: int, mig: Optional[int] = None):
        self.index = index
        self.mig = mig

    def __repr__(self) -> str:
        return f"<fake handle GPU{self.index}{'' if self.mig is None else f' MIG{self.mig}'}>"


def _cpus(cpulist: str) -> list[int]:
    out = []
    for part in cpulist.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            out.extend(range(int(lo), int(hi) + 1))
        elif part.strip():
            out.append(int(part))
    return out


class FakeNvml:
    """pynvml-like object answering from ``snapshot`` (see the module doc)."""

    NVML_NVLINK_MAX_LINKS = 18
    __name__ = "FakeNvml"

    def __init__(
        self,
        snapshot: NodeSnapshot,
        *,
        library_missing: bool = False,
        init_error: Optional[int] = None,
        lost: Iterable[int] = (),
        unsupported: Iterable = (),
        denied: Iterable = (),
        hang: Iterable = (),
        hang_seconds: float = 30.0,
        mig_uuids: Optional[dict[int, list[str]]] = None,
    ):
        self.snapshot = snapshot
        self.gpus = list(snapshot.gpus)
        self.init_error = NVML_ERROR_LIBRARY_NOT_FOUND if library_missing else init_error
        self.lost = set(lost)
        self.unsupported = set(unsupported)
        self.denied = set(denied)
        self.hang = set(hang)
        self.hang_seconds = hang_seconds
        self._released = threading.Event()
        self.mig_uuids = mig_uuids or {}
        self.calls: list[str] = []
        self.initialized = False
        self.synthetic: list[str] = []
        self.uuids = []
        self.bus_ids = []
        for i, g in enumerate(self.gpus):
            if g.uuid:
                self.uuids.append(g.uuid)
            else:
                self.uuids.append(f"GPU-{i:08x}-0000-4000-8000-{i:012x}")
                self.synthetic.append(f"gpus[{i}].uuid")
            if g.pci_bus_id:
                self.bus_ids.append(g.pci_bus_id)
            else:
                self.bus_ids.append(f"00000000:{0x10 * (i + 1) % 0x100:02X}:00.0")
                self.synthetic.append(f"gpus[{i}].pci_bus_id")
        self.nvlinks = self._model_nvlinks()

    # -- failure injection -------------------------------------------------
    def release(self) -> None:
        """Let every hung call return (tests call this at teardown)."""
        self._released.set()

    def _enter(self, name: str, handle: Optional[_Handle] = None) -> None:
        self.calls.append(name)
        index = handle.index if handle is not None else None
        if name != "nvmlInit" and not self.initialized:
            raise nvml_error(NVML_ERROR_UNINITIALIZED)
        for rule_set, action in (
            (self.hang, "hang"),
            (self.unsupported, NVML_ERROR_NOT_SUPPORTED),
            (self.denied, NVML_ERROR_NO_PERMISSION),
        ):
            if name in rule_set or (name, index) in rule_set:
                if action == "hang":
                    self._released.wait(self.hang_seconds)
                else:
                    raise nvml_error(action)
        if index is not None and index in self.lost:
            raise nvml_error(NVML_ERROR_GPU_IS_LOST)

    # -- NVLink model -------------------------------------------------------
    def _model_nvlinks(self) -> dict[int, list[tuple[str, int]]]:
        n = len(self.gpus)
        labels = self.snapshot.links.gpu_gpu
        count = {
            (i, j): int(m.group(1))
            for i in range(n)
            for j in range(n)
            if i != j
            for m in [re.fullmatch(r"NV(\d+)", labels[i][j] if labels else "")]
            if m
        }
        links: dict[int, list[tuple[str, int]]] = {i: [] for i in range(n)}
        in_fabric: set[int] = set()
        for i in range(n):
            peers = [j for j in range(n) if (i, j) in count]
            group = [i] + peers
            values = {count[(a, b)] for a in group for b in group if a != b and (a, b) in count}
            complete = all((a, b) in count for a in group for b in group if a != b)
            if len(group) >= 3 and complete and len(values) == 1 and i not in in_fabric:
                per_gpu = values.pop()
                for g in group:
                    in_fabric.add(g)
                    links[g] = [(f"00000000:{0xC0 + k % 4:02X}:00.0", SWITCH) for k in range(per_gpu)]
        for (i, j), c in sorted(count.items()):
            if i in in_fabric and j in in_fabric:
                continue
            links[i].extend([(self.bus_ids[j], GPU)] * c)
        for i, lst in links.items():
            if len(lst) > self.NVML_NVLINK_MAX_LINKS:
                raise ValueError(f"GPU{i}: {len(lst)} NVLinks do not fit the fake's {self.NVML_NVLINK_MAX_LINKS}")
        return links

    # -- system -------------------------------------------------------------
    def nvmlInit(self):
        self._enter("nvmlInit")
        if self.init_error is not None:
            raise nvml_error(self.init_error)
        self.initialized = True

    def nvmlShutdown(self):
        self._enter("nvmlShutdown")
        self.initialized = False

    def nvmlSystemGetDriverVersion(self):
        self._enter("nvmlSystemGetDriverVersion")
        if not self.snapshot.versions.driver:
            raise nvml_error(NVML_ERROR_NOT_SUPPORTED)
        return self.snapshot.versions.driver

    def nvmlSystemGetCudaDriverVersion(self):
        self._enter("nvmlSystemGetCudaDriverVersion")
        text = self.snapshot.versions.cuda_driver
        if not text:
            raise nvml_error(NVML_ERROR_NOT_SUPPORTED)
        major, minor = (int(x) for x in text.split(".")[:2])
        return major * 1000 + minor * 10

    def nvmlDeviceGetCount(self):
        self._enter("nvmlDeviceGetCount")
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index):
        self._enter("nvmlDeviceGetHandleByIndex")
        if not 0 <= index < len(self.gpus):
            raise nvml_error(NVML_ERROR_INVALID_ARGUMENT)
        return _Handle(index)

    # -- per GPU --------------------------------------------------------------
    def _gpu(self, name: str, handle: _Handle):
        self._enter(name, handle)
        return self.gpus[handle.index]

    def nvmlDeviceGetUUID(self, handle):
        if handle.mig is not None:
            self._enter("nvmlDeviceGetUUID", handle)
            return self.mig_uuids[handle.index][handle.mig]
        self._gpu("nvmlDeviceGetUUID", handle)
        return self.uuids[handle.index]

    def nvmlDeviceGetName(self, handle):
        g = self._gpu("nvmlDeviceGetName", handle)
        if g.name is None:
            raise nvml_error(NVML_ERROR_NOT_SUPPORTED)
        return g.name

    def nvmlDeviceGetPciInfo(self, handle):
        self._gpu("nvmlDeviceGetPciInfo", handle)
        return SimpleNamespace(busId=self.bus_ids[handle.index].encode())  # pynvml gives bytes

    def nvmlDeviceGetMemoryInfo(self, handle):
        g = self._gpu("nvmlDeviceGetMemoryInfo", handle)
        if g.memory_total_mib is None:
            raise nvml_error(NVML_ERROR_NOT_SUPPORTED)
        return SimpleNamespace(total=g.memory_total_mib * 1024 * 1024, used=0, free=g.memory_total_mib * 1024 * 1024)

    def nvmlDeviceGetMigMode(self, handle):
        g = self._gpu("nvmlDeviceGetMigMode", handle)
        if g.mig_mode is None:
            raise nvml_error(NVML_ERROR_NOT_SUPPORTED)
        mode = 1 if g.mig_mode == "Enabled" else 0
        return [mode, mode]

    def nvmlDeviceGetComputeMode(self, handle):
        g = self._gpu("nvmlDeviceGetComputeMode", handle)
        if g.compute_mode is None:
            raise nvml_error(NVML_ERROR_NOT_SUPPORTED)
        return _COMPUTE[g.compute_mode]

    def nvmlDeviceGetCpuAffinity(self, handle, cpu_set_size):
        g = self._gpu("nvmlDeviceGetCpuAffinity", handle)
        if g.cpu_affinity is None:
            raise nvml_error(NVML_ERROR_NOT_SUPPORTED)
        words = [0] * cpu_set_size
        for cpu in _cpus(g.cpu_affinity):
            if cpu // 64 < cpu_set_size:
                words[cpu // 64] |= 1 << (cpu % 64)
        return words

    def nvmlDeviceGetMemoryAffinity(self, handle, node_set_size, scope):
        g = self._gpu("nvmlDeviceGetMemoryAffinity", handle)
        if g.numa_node is None:
            raise nvml_error(NVML_ERROR_NOT_SUPPORTED)
        words = [0] * node_set_size
        words[g.numa_node // 64] |= 1 << (g.numa_node % 64)
        return words

    def nvmlDeviceGetMaxMigDeviceCount(self, handle):
        self._gpu("nvmlDeviceGetMaxMigDeviceCount", handle)
        return 7

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle, index):
        self._gpu("nvmlDeviceGetMigDeviceHandleByIndex", handle)
        if index >= len(self.mig_uuids.get(handle.index, [])):
            raise nvml_error(NVML_ERROR_NOT_FOUND)
        return _Handle(handle.index, mig=index)

    # -- links ----------------------------------------------------------------
    def nvmlDeviceGetNvLinkState(self, handle, link):
        self._gpu("nvmlDeviceGetNvLinkState", handle)
        links = self.nvlinks[handle.index]
        if not links:
            raise nvml_error(NVML_ERROR_NOT_SUPPORTED)
        if not 0 <= link < len(links):
            raise nvml_error(NVML_ERROR_INVALID_ARGUMENT)
        return 1

    def nvmlDeviceGetNvLinkRemotePciInfo(self, handle, link):
        self._gpu("nvmlDeviceGetNvLinkRemotePciInfo", handle)
        return SimpleNamespace(busId=self.nvlinks[handle.index][link][0].encode())

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, handle, link):
        self._gpu("nvmlDeviceGetNvLinkRemoteDeviceType", handle)
        return self.nvlinks[handle.index][link][1]

    def nvmlDeviceGetTopologyCommonAncestor(self, h1, h2):
        self._gpu("nvmlDeviceGetTopologyCommonAncestor", h1)
        self._enter("nvmlDeviceGetTopologyCommonAncestor", h2)
        label = self.snapshot.links.gpu_gpu[h1.index][h2.index]
        if label in _LEVELS:
            return _LEVELS[label]
        # NVLink pairs: the recording does not say the PCIe path; NVML still
        # gives one, so answer by socket.
        a, b = self.gpus[h1.index].numa_node, self.gpus[h2.index].numa_node
        return _LEVELS["NODE"] if a is not None and a == b else _LEVELS["SYS"]

    def nvmlDeviceGetP2PStatus(self, h1, h2, cap_index):
        self._gpu("nvmlDeviceGetP2PStatus", h1)
        self._enter("nvmlDeviceGetP2PStatus", h2)
        matrix = self.snapshot.links.p2p.get(_CAPS[cap_index])
        if not matrix:
            return _P2P_CODES["U"]
        return _P2P_CODES[matrix[h1.index][h2.index]]
