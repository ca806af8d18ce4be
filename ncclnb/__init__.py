"""ncclnb: make NCCL / torch.distributed failures understandable from a notebook.

``import ncclnb`` is cheap: it touches no hardware and imports neither torch,
pynvml, plotly, pandas nor ipywidgets. Each public name below is resolved
from its layer on first use.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# public name -> (module, attribute); resolved lazily by __getattr__
_PUBLIC = {
    # model
    "NodeSnapshot": ("ncclnb.model", "NodeSnapshot"),
    "ClusterReport": ("ncclnb.model", "ClusterReport"),
    "Finding": ("ncclnb.model", "Finding"),
    "Diagnosis": ("ncclnb.model", "Diagnosis"),
    "SchemaError": ("ncclnb.model", "SchemaError"),
    # collect
    "collect": ("ncclnb.collectors", "collect"),
    "ingest": ("ncclnb.collectors.ingest", "ingest"),
    "load": ("ncclnb.recorded", "load"),
    "machines": ("ncclnb.recorded", "machines"),
    "summary": ("ncclnb.summary", "summary"),
    # doctor
    "diagnose": ("ncclnb.doctor", "diagnose"),
    # reproductions
    "reproduce": ("ncclnb.repro", "reproduce"),
    "ReproResult": ("ncclnb.model", "ReproResult"),
    # checks
    "check": ("ncclnb.checks", "check"),
    # views
    "show_topology": ("ncclnb.views", "show_topology"),
    "show_numa": ("ncclnb.views", "show_numa"),
    "show_ranks": ("ncclnb.views", "show_ranks"),
    "show_versions": ("ncclnb.views", "show_versions"),
    "show_diagnosis": ("ncclnb.views", "show_diagnosis"),
    "dashboard": ("ncclnb.views", "dashboard"),
    "show_alignment": ("ncclnb.views", "show_alignment"),
    "show_pairing": ("ncclnb.views", "show_pairing"),
    "show_job_map": ("ncclnb.views", "show_job_map"),
    "show_links": ("ncclnb.views", "show_links"),
}

__all__ = sorted(_PUBLIC) + ["load_ipython_extension", "unload_ipython_extension"]


def __getattr__(name: str):
    try:
        module, attr = _PUBLIC[name]
    except KeyError:
        raise AttributeError(f"module 'ncclnb' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))


def load_ipython_extension(ipython):
    """``%load_ext ncclnb``: the magics module is imported only now."""
    from .magics import register

    register(ipython)


def unload_ipython_extension(ipython):
    from .magics import unregister

    unregister(ipython)
