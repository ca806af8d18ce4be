"""A stand-in for ``torch`` on a GPU machine, as far as the survey's rank
facts ask it: ``torch.cuda.is_initialized``, ``current_device`` and
``get_device_properties``, answered from a recorded machine (a NodeSnapshot).

Device properties carry what torch's ``_CudaDeviceProperties`` has for these
facts: ``name``, ``uuid`` (the UUID without ``GPU-``, as torch prints it) and
``pci_domain_id`` / ``pci_bus_id`` / ``pci_device_id`` (ints, from the
recorded bus id). ``old_torch=True`` leaves out the PCI fields (torch
releases before they were added); ``broken=True`` makes
``get_device_properties`` raise, as a lost device does.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Optional

from ncclnb.model import NodeSnapshot


class FakeTorch:
    def __init__(self, snapshot: NodeSnapshot, device: Optional[int] = 0, *, old_torch: bool = False, broken: bool = False):
        gpus = list(snapshot.gpus)
        initialized = device is not None

        def properties(index: int):
            if broken:
                raise RuntimeError("CUDA error: unspecified launch failure")
            g = gpus[index]
            props = {"name": g.name, "uuid": (g.uuid or "").removeprefix("GPU-") or None}
            if not old_torch and g.pci_bus_id:
                domain, bus, rest = g.pci_bus_id.split(":")
                props.update(pci_domain_id=int(domain, 16), pci_bus_id=int(bus, 16), pci_device_id=int(rest.split(".")[0], 16))
            return SimpleNamespace(**props)

        self.cuda = SimpleNamespace(
            is_initialized=lambda: initialized,
            current_device=lambda: device,
            get_device_properties=properties,
            device_count=lambda: len(gpus),
        )
