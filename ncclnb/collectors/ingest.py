"""``ingest``: turn text pasted from a cluster into a NodeSnapshot.

Any subset of ``nvidia-smi``, ``nvidia-smi topo -m``, ``nvidia-smi topo
-p2p``, ``python -m torch.utils.collect_env`` and NCCL version lines, in any
order, in one source or several. Facts from all blocks are merged; the first
block that gives a fact wins, ``sources`` says which block gave which facts,
and ``missing`` says why every other fact is absent.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any, Optional, Union

from ..model import Gpu, Host, Links, NodeSnapshot, Versions
from ..model.limits import TEXT_LIMIT, human, looks_like_path, read_bounded
from .parsers import ParseError, Partial, parse_text
from .parsers._common import one_line

Source = Union[str, bytes, "os.PathLike[str]"]

NOT_IN_TEXT = "not in the pasted text"
# facts that none of the pasted formats can show, with the reason why
_NEVER_PASTED = {
    "host.container": "not in the pasted text (needs the live machine: ncclnb collect)",
    "host.iommu": "not in the pasted text (needs the live machine: ncclnb collect)",
    "host.shm_total_bytes": "not in the pasted text (df /dev/shm on the node)",
    "host.shm_free_bytes": "not in the pasted text (df /dev/shm on the node)",
    "host.rlimit_nofile_soft": "not in the pasted text (ulimit -Sn on the node)",
    "host.rlimit_nofile_hard": "not in the pasted text (ulimit -Hn on the node)",
    "host.rlimit_memlock_soft": "not in the pasted text (ulimit -Sl on the node)",
    "host.rlimit_memlock_hard": "not in the pasted text (ulimit -Hl on the node)",
    "versions.nccl_system": "not in the pasted text (ldconfig -p | grep nccl on the node)",
    "versions.net_plugins": "not in the pasted text (libnccl-net*.so on the node's library path)",
}


def ingest(
    *sources: Source, hostname: Optional[str] = None, description: str = "", p2p_capability: Optional[str] = None
) -> NodeSnapshot:
    """Build one NodeSnapshot (``origin="ingest"``) from pasted text.

    Each source is a path (``os.PathLike``, or a ``str`` that names an
    existing file and has no newline), raw text (``str``) or raw bytes.
    ``hostname`` is used when the text shows none (a shell prompt or an
    NCCL log prefix); failing both it is "unknown-host". ``p2p_capability``
    ("r", "w", "n", "a", "p" or the word) says what a ``topo -p2p`` matrix
    shows when the text does not. Raises ParseError (one line, naming the
    source) for empty, binary, JSON or unrecognised input, a broken block,
    blocks that disagree on which GPUs the machine has, or a source of more
    than ``TEXT_LIMIT`` bytes (a file's size and its first 64 KiB decide
    before the rest is read)."""
    if not sources:
        raise ParseError("ingest: no input given")
    parts: list[tuple[str, Partial]] = []
    for number, source in enumerate(sources, 1):
        data, name = _read(source, number, len(sources))
        try:
            found = parse_text(data, p2p_capability)
        except ParseError as exc:
            raise ParseError(f"{name}: {exc}" if name else str(exc)) from None
        for part in found:
            parts.append((f"{part.kind} ({name})" if name and name != "text" else part.kind, part))
    return merge(parts, hostname=hostname, description=description)


def _read(source: Source, number: int, total: int) -> tuple[Union[str, bytes], str]:
    """Source -> (data, a short name for messages and `sources`)."""
    if isinstance(source, os.PathLike) or (
        isinstance(source, str) and "\n" not in source and source.strip() and os.path.isfile(source)
    ):
        path = os.fspath(source)
        name = os.path.basename(path)
        return read_bounded(path, limit=TEXT_LIMIT, label=name, binary="input is binary data, not text", error=ParseError), name
    if isinstance(source, (str, bytes)):
        name = "text" if total == 1 else f"text #{number}"
        if isinstance(source, str) and looks_like_path(source):
            raise ParseError(f"{one_line(repr(source), 80)}: no such file, and not pasted text")
        if len(source) > TEXT_LIMIT:
            raise ParseError(f"{name}: too large ({human(len(source))}; ncclnb reads text of at most {human(TEXT_LIMIT)})")
        return source, name
    raise TypeError(f"ingest: a source must be a path, str or bytes, not {type(source).__name__}")


def merge(parts: list[tuple[str, Partial]], hostname: Optional[str] = None, description: str = "") -> NodeSnapshot:
    """Merge labelled partial facts into one snapshot (first fact wins)."""
    sources: dict[str, str] = {}
    missing: dict[str, str] = {}

    def note(key: str, label: str, part: Partial) -> None:
        extra = part.notes.get(key)
        sources.setdefault(key, f"{label}: {extra}" if extra else label)

    # -- which GPUs: every block that lists GPUs must list the same ones
    gpu_sets = [(label, set(p.gpus)) for label, p in parts if p.gpus]
    if gpu_sets:
        first_label, first_set = gpu_sets[0]
        for label, indices in gpu_sets[1:]:
            if indices != first_set:
                raise ParseError(
                    f"{first_label} shows {_gpu_list(first_set)} but {label} shows {_gpu_list(indices)}: "
                    "ingest the output of one machine (or one container) at a time"
                )
        sources["gpus"] = first_label
    indices = sorted(gpu_sets[0][1]) if gpu_sets else []
    position = {index: pos for pos, index in enumerate(indices)}

    # -- per-GPU facts
    gpu_fields: dict[int, dict[str, Any]] = {i: {} for i in indices}
    for label, part in parts:
        for index, facts in part.gpus.items():
            for key, value in facts.items():
                if value is None:
                    continue
                have = gpu_fields[index]
                if key not in have:
                    have[key] = value
                    note(f"gpus.{key}", label, part)
                elif have[key] != value and not _same_name(key, have[key], value):
                    sources.setdefault(
                        f"gpus[{position[index]}].{key}", f"{sources.get(f'gpus.{key}', '')}; {label} says {value!r}"
                    )
    gpus = tuple(Gpu(index=i, **gpu_fields[i]) for i in indices)

    # -- host
    host_fields: dict[str, Any] = {}
    for label, part in parts:
        for key, value in part.host.items():
            if value is not None and key not in host_fields:
                host_fields[key] = value
                note(f"host.{key}", label, part)
    if "numa_nodes" not in host_fields:
        derived = next(((label, p) for label, p in parts if p.derived_numa_nodes), None)
        if derived:
            host_fields["numa_nodes"] = derived[1].derived_numa_nodes
            note("host.numa_nodes", *derived)
    name = host_fields.pop("hostname", None)
    if name is None:
        name = hostname or "unknown-host"
        sources["host.hostname"] = "given by the caller" if hostname else "none in the pasted text"
    host = Host(hostname=name, **host_fields)

    # -- links and NICs
    links_fields: dict[str, Any] = {}
    p2p: dict[str, Any] = {}
    nics = None
    for label, part in parts:
        if "gpu_gpu" in part.links and "gpu_gpu" not in links_fields:
            for key in ("gpu_gpu", "gpu_nic", "nic_names"):
                links_fields[key] = part.links.get(key, ())
            note("links", label, part)
        for cap, matrix in part.links.get("p2p", {}).items():
            if cap not in p2p:
                p2p[cap] = matrix
                note(f"links.p2p.{cap}", label, part)
        if part.nics is not None and nics is None:
            nics = part.nics
            note("nics", label, part)
    links = Links(p2p=p2p, **links_fields)

    # -- versions and env
    version_fields: dict[str, Any] = {}
    env: Optional[dict[str, str]] = None
    for label, part in parts:
        for key, value in part.versions.items():
            if key not in version_fields:
                version_fields[key] = value
                note(f"versions.{key}", label, part)
            elif isinstance(value, dict):
                version_fields[key] = {**value, **version_fields[key]}
        if part.env is not None:
            env = {**part.env, **(env or {})}
            note("env", label, part)
    versions = Versions(**version_fields)

    # -- why each absent fact is absent: a block's own reason first
    for _, part in parts:
        for key, reason in part.missing.items():
            missing.setdefault(_renumber(key, position), reason)
    for f in dataclasses.fields(Host):
        if f.name != "hostname" and _empty(getattr(host, f.name)):
            missing.setdefault(f"host.{f.name}", _NEVER_PASTED.get(f"host.{f.name}", NOT_IN_TEXT))
    for pos, gpu in enumerate(gpus):
        for f in dataclasses.fields(Gpu):
            if getattr(gpu, f.name) is None:
                missing.setdefault(f"gpus[{pos}].{f.name}", NOT_IN_TEXT)
    if not gpus:
        missing.setdefault("gpus", NOT_IN_TEXT)
    for f in dataclasses.fields(Versions):
        if f.name not in version_fields:
            missing.setdefault(f"versions.{f.name}", _NEVER_PASTED.get(f"versions.{f.name}", NOT_IN_TEXT))
    if not links_fields:
        missing.setdefault("links.gpu_gpu", NOT_IN_TEXT + " (nvidia-smi topo -m shows it)")
        missing.setdefault("links.gpu_nic", NOT_IN_TEXT + " (nvidia-smi topo -m shows it)")
    if not p2p:
        missing.setdefault("links.p2p", NOT_IN_TEXT + " (nvidia-smi topo -p2p r shows it)")
    if nics is None:
        missing.setdefault("nics", NOT_IN_TEXT)
    if env is None:
        missing.setdefault("env", NOT_IN_TEXT)
    for key in [k for k in missing if k in sources]:
        del missing[key]  # a later block supplied what an earlier one lacked
    missing = {k: v for k, v in missing.items() if not _present(k, gpus, host, versions)}

    return NodeSnapshot(
        host=host,
        gpus=gpus,
        links=links,
        nics=nics or (),
        versions=versions,
        env=env or {},
        missing=dict(sorted(missing.items(), key=lambda kv: _sort_key(kv[0]))),
        sources=dict(sorted(sources.items(), key=lambda kv: _sort_key(kv[0]))),
        origin="ingest",
        description=description,
    )


def _gpu_list(indices: set[int]) -> str:
    ordered = sorted(indices)
    if ordered == list(range(len(ordered))):
        return f"{len(ordered)} GPUs (GPU0-GPU{len(ordered) - 1})" if len(ordered) > 1 else "1 GPU (GPU0)"
    return f"{len(ordered)} GPUs (" + ", ".join(f"GPU{i}" for i in ordered) + ")"


def _same_name(key: str, a: Any, b: Any) -> bool:
    # nvidia-smi cuts long names ("NVIDIA A100-SXM..."); that is not a conflict
    if key != "name" or not isinstance(a, str) or not isinstance(b, str):
        return False
    a_, b_ = a.rstrip("."), b.rstrip(".")
    return a_.startswith(b_) or b_.startswith(a_)


# `gpus[3].uuid`: ASCII digits of a sane length (str.isdigit() also takes "³")
_GPU_KEY = re.compile(r"gpus\[([0-9]{1,9})\](.*)", re.DOTALL)


def _renumber(key: str, position: dict[int, int]) -> str:
    """``gpus[<index>].x`` (as a block saw it) -> ``gpus[<position>].x``."""
    m = _GPU_KEY.fullmatch(key)
    if m and int(m.group(1)) in position:
        return f"gpus[{position[int(m.group(1))]}]{m.group(2)}"
    return key


def _empty(value: Any) -> bool:
    return value is None or value == () or value == {}


def _present(key: str, gpus, host, versions) -> bool:
    """True when the fact a `missing` key names has a value after all."""
    try:
        m = _GPU_KEY.fullmatch(key)
        if m and m.group(2).startswith("."):
            return getattr(gpus[int(m.group(1))], m.group(2)[1:]) is not None
        if key.startswith("host."):
            return not _empty(getattr(host, key[5:]))
        if key.startswith("versions."):
            return getattr(versions, key[9:]) is not None and getattr(versions, key[9:]) != ()
    except (ValueError, IndexError, AttributeError):
        return False
    return False


def _sort_key(key: str) -> tuple:
    # gpus[10] after gpus[9]
    m = _GPU_KEY.fullmatch(key)
    if m:
        return ("gpus", int(m.group(1)), m.group(2))
    return (key, -1, "")
