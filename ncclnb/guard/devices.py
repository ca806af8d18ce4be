"""``check_devices``: every rank uses its own GPU, checked once after the
group exists, so ranks that all landed on one GPU (seed 001: a process that
never called ``torch.cuda.set_device`` under ``CUDA_VISIBLE_DEVICES=6,7,8,9``
runs on physical GPU 6, like every other rank) are named at once instead of
showing as a hang, a ``Duplicate GPU detected`` or a guessed barrier device.

Each rank describes the GPU it uses (host, physical index, UUID, PCI bus id)
as JSON in a fixed-size uint8 row; one all_gather moves the rows (over a gloo
group when the job's group is NCCL). Nothing is pickled.
"""

from __future__ import annotations

import json
import os
import re
import socket
from typing import Mapping, Optional

from ..model.derive import visible_entry
from . import _compare as cmp
from ._dist import all_gather_bytes, device_for, group_ranks, torch_dist
from .errors import GuardError

ROW_BYTES = 256  # one rank's identity, JSON padded with spaces
_FIELD_CAP = {"h": 64, "i": 16, "u": 64, "b": 32}
_BUS = re.compile(r"^(?:(?P<dom>[0-9A-Fa-f]{1,8}):)?(?P<bus>[0-9A-Fa-f]{1,2}):(?P<dev>[0-9A-Fa-f]{1,2})\.(?P<fn>[0-7])$")
_NOT_GPU = ("cpu", "meta", "mps", "xpu", "hpu")
_CUDA = re.compile(r"^cuda(?::(?P<n>[0-9]+))?$")
FIX = "call torch.cuda.set_device(local_rank) before the first collective, or pass device_id= to init_process_group"


# -- what this rank uses (pure apart from torch.cuda, which is optional) -----------------


def _clean(value, cap: int) -> Optional[str]:
    """A short printable text for the JSON row (no quotes, no control characters)."""
    if value is None:
        return None
    text = "".join(c if c.isprintable() and c not in '"\\' else "?" for c in str(value).strip())
    return cmp.cut(text, cap).decode("utf-8", "ignore") or None


def norm_bus_id(text: Optional[str]) -> Optional[str]:
    """ "00000000:8A:00.0" and "0000:8a:00.0" -> "0000:8a:00.0"; None if not a PCI address."""
    m = _BUS.match(text.strip()) if isinstance(text, str) else None
    if not m:
        return None
    return f"{int(m.group('dom') or '0', 16):04x}:{int(m.group('bus'), 16):02x}:{int(m.group('dev'), 16):02x}.{m.group('fn')}"


def _logical(device) -> Optional[int]:
    """A logical CUDA index from an int, a ``torch.device`` or "cuda:N"; None otherwise."""
    if isinstance(device, bool):
        return None
    if isinstance(device, int):
        return device
    kind, index = getattr(device, "type", None), getattr(device, "index", None)
    if kind == "cuda":
        return index  # None: "the current device"
    if isinstance(device, str):
        m = _CUDA.match(device.strip())
        if m:
            return int(m.group("n")) if m.group("n") else None
    return None


def _explicit(device) -> Optional[dict]:
    """An explicit physical identity: a mapping (``host``, ``index``, ``uuid``,
    ``bus_id``, ``logical``) or a string that is not "cuda[:N]" (a physical
    index, a GPU/MIG UUID or a PCI bus id)."""
    if isinstance(device, Mapping):
        return {
            "h": device.get("host"),
            "i": device.get("index"),
            "u": device.get("uuid"),
            "b": device.get("bus_id"),
            "l": device.get("logical"),
        }
    if isinstance(device, str) and not _CUDA.match(device.strip()):
        text = device.strip()
        if text.startswith(("GPU-", "MIG-")):
            return {"u": text}
        if norm_bus_id(text):
            return {"b": text}
        return {"i": text}
    return None


def device_identity(device=None, environ: Optional[Mapping] = None, torch=None) -> Optional[dict]:
    """What this process uses: ``{"h": host, "i": physical index, "u": UUID,
    "b": PCI bus id, "l": logical CUDA index}`` (absent facts None), or None
    when it uses no GPU (no ``device`` and no CUDA).

    ``device``: None (``torch.cuda.current_device()``); an int, a
    ``torch.device`` or "cuda:N" (a logical index in this process, mapped
    through ``CUDA_VISIBLE_DEVICES``); or an explicit physical identity: a
    string (a physical index such as "6", a GPU/MIG UUID, a PCI bus id) or a
    mapping with ``host``/``index``/``uuid``/``bus_id``/``logical``."""
    environ = os.environ if environ is None else environ
    if isinstance(device, str) and device.strip().split(":")[0] in _NOT_GPU:
        return None
    ident = _explicit(device)
    if ident is None:
        logical = _logical(device)
        cuda = torch is not None and _cuda_available(torch)
        if logical is None:
            if device is not None and getattr(device, "type", "cuda") != "cuda":
                return None  # a CPU (or other) device: no GPU to compare
            if not cuda:
                return None
            logical = torch.cuda.current_device()
        entry = visible_entry(environ.get("CUDA_VISIBLE_DEVICES"), logical)
        ident = {"l": logical}
        if entry is not None and entry.startswith(("GPU-", "MIG-")):
            ident["u"] = entry
        elif entry is not None:
            ident["i"] = entry
        if cuda:
            ident.update({k: v for k, v in _torch_facts(torch, logical).items() if v})
    out = {k: _clean(ident.get(k), cap) for k, cap in _FIELD_CAP.items()}
    out["h"] = out["h"] or _clean(socket.gethostname(), _FIELD_CAP["h"]) or "?"
    logical = ident.get("l")
    out["l"] = logical if isinstance(logical, int) and not isinstance(logical, bool) else None
    if not (out["i"] or out["u"] or out["b"]):
        return None
    return out


def _cuda_available(torch) -> bool:
    try:
        return bool(torch.cuda.is_available())
    except Exception:
        return False


def _torch_facts(torch, logical: int) -> dict:
    """UUID and PCI bus id of ``cuda:<logical>`` where this torch tells them."""
    try:
        props = torch.cuda.get_device_properties(logical)
    except Exception:
        return {}
    out = {}
    uuid = getattr(props, "uuid", None)
    if uuid is not None:
        text = str(uuid)
        out["u"] = text if text.startswith(("GPU-", "MIG-")) else "GPU-" + text
    bus = getattr(props, "pci_bus_id", None)
    if isinstance(bus, int):
        dom, dev = getattr(props, "pci_domain_id", 0) or 0, getattr(props, "pci_device_id", 0) or 0
        out["b"] = f"{int(dom):08X}:{bus:02X}:{int(dev):02X}.0"
    return out


def encode_row(ident: Optional[dict]) -> bytes:
    """The fixed-size row a rank sends: JSON padded with spaces to :data:`ROW_BYTES`."""
    raw = json.dumps(ident, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    if len(raw) > ROW_BYTES:  # cannot happen with the field caps; never send a longer row
        raw = json.dumps({"h": "?", "i": "?", "u": None, "b": None, "l": None}).encode("utf-8")
    return raw.ljust(ROW_BYTES, b" ")


def decode_row(row: bytes) -> Optional[dict]:
    try:
        value = json.loads(row.decode("utf-8", "replace"))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


# -- who shares a GPU (pure) -------------------------------------------------------------


def _key(ident: dict):
    """Ranks with equal keys use one GPU: by UUID, else bus id, else physical index, on one host."""
    if ident.get("u"):
        return ("u", ident["u"])
    bus = norm_bus_id(ident.get("b"))
    if bus:
        return ("b", ident.get("h"), bus)
    return ("i", ident.get("h"), ident.get("i"))


def describe(ident: dict) -> str:
    """ "physical GPU 6 (GPU-8f3a..., bus 00000000:8A:00.0)" as far as known."""
    extra = [x for x in (ident.get("u"), ident.get("b") and f"bus {ident['b']}") if x]
    if ident.get("i"):
        head = f"physical GPU {ident['i']}"
    elif ident.get("u"):
        head, extra = f"GPU {ident['u']}", extra[1:]
    else:
        head, extra = f"the GPU at bus {ident.get('b')}", []
    return head + (f" ({', '.join(extra)})" if extra else "")


def _shown(ident: Optional[dict]) -> str:
    if not ident:
        return "no GPU"
    logical = f", cuda:{ident['l']}" if ident.get("l") is not None else ""
    return f"{ident.get('h')}: {describe(ident)}{logical}"


def devices_report(rows: Mapping[int, Optional[dict]]) -> Optional[tuple[str, list[int], dict]]:
    """{global rank: identity or None} -> (message, blamed ranks, values), or
    None when no two ranks use one GPU. In each group of ranks on one GPU the
    lowest rank keeps it; the others are blamed."""
    groups: dict = {}
    for rank in sorted(rows):
        ident = rows[rank]
        if ident:
            groups.setdefault(_key(ident), []).append(rank)
    shared = [ranks for ranks in groups.values() if len(ranks) > 1]
    if not shared:
        return None
    shared.sort(key=lambda ranks: ranks[0])
    keepers = [ranks[0] for ranks in shared]
    blamed = sorted(r for ranks in shared for r in ranks[1:])
    clauses = []
    for ranks in shared[: cmp.MAX_SHOWN_GROUPS]:
        ident = rows[ranks[0]]
        logicals = {rows[r].get("l") for r in ranks}
        how = f", cuda:{logicals.pop()} in each process" if len(logicals) == 1 and None not in logicals else ""
        clauses.append(f"{cmp.fmt_ranks(ranks)} on host {ident.get('h')} all use {describe(ident)}{how}")
    if len(shared) > cmp.MAX_SHOWN_GROUPS:
        clauses.append(f"and {len(shared) - cmp.MAX_SHOWN_GROUPS} more shared GPUs")
    verb = "shares" if len(blamed) == 1 else "share"
    message = (
        f"ncclnb guard: {cmp.fmt_ranks(blamed)} {verb} a GPU with {cmp.fmt_ranks(keepers)}: " + "; ".join(clauses) + f": {FIX}"
    )
    values = {"device": {r: _shown(ident) for r, ident in sorted(rows.items())}}
    return message, blamed, values


# -- the collective ----------------------------------------------------------------------


def check_devices(device=None, group=None) -> None:
    """Check that no two ranks of ``group`` (default: the world) use one GPU;
    raise :class:`GuardError` (``check="devices"``) on every rank if they do::

        ncclnb guard: ranks 1-3 share a GPU with rank 0: ranks 0-3 on host h all use physical
        GPU 6, cuda:0 in each process: call torch.cuda.set_device(local_rank) before the first
        collective, or pass device_id= to init_process_group

    Each rank reports its host and the physical GPU it uses: by default
    ``torch.cuda.current_device()`` mapped through ``CUDA_VISIBLE_DEVICES``
    to the physical index (or UUID), plus the UUID and PCI bus id where
    torch tells them; ``device`` overrides it (see :func:`device_identity`:
    a logical ``torch.device``/int, or an explicit physical identity such as
    "6", a UUID or a ``{"host", "index", "uuid", "bus_id"}`` mapping, as a
    reproduction with recorded facts passes). Ranks are on one GPU when their
    UUIDs match, else their bus ids, else their physical indices on one host.
    A rank without a GPU (no CUDA, or ``device="cpu"``: pass it in a CPU job
    on a machine with GPUs) takes part and is not compared.

    Call it on every rank after the device is chosen and before the first
    collective (:func:`~ncclnb.guard.init_process_group` does it for NCCL).
    Cost: one all_gather of 256 bytes per rank, over a gloo group built over
    the world when the default group is not a CPU group (NCCL), so it needs
    no working NCCL; an explicit ``group`` is used as given.
    """
    torch, dist = torch_dist()
    if group is None and device_for(torch, dist, None).type != "cpu":
        group = dist.new_group(backend="gloo")
    ranks = group_ranks(dist, group)
    if ranks is None:
        return
    ident = device_identity(device, torch=torch)
    rows = all_gather_bytes(torch, dist, group, encode_row(ident), device_for(torch, dist, group), len(ranks))
    report = devices_report({ranks[i]: decode_row(row) for i, row in enumerate(rows)})
    if report is not None:
        message, blamed, values = report
        raise GuardError(message, blamed, values, check="devices")
