"""NCCL's own lines from an ``NCCL_DEBUG=INFO`` log: the version lines, and
the channel lines that say which transport NCCL chose between two ranks.

``NCCL version 2.19.3+cuda12.3`` names the NCCL the logging process loaded
(and the CUDA it was built for); ``NCCL INFO cudaDriverVersion 12040`` the
newest CUDA the driver supports (12040 -> "12.4"). Log lines start with
``host:pid:tid [dev]``, which gives the hostname.

Channel lines (:func:`peer_transports`), as NCCL 2.x prints them::

    Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
    Channel 01 : 1[1] -> 0[0] via SHM/direct/direct
    Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA

``src[dev] -> dst[dev]`` are global ranks with their CUDA device (older
NCCL prints the bus id there instead: ``0[1b000]``).
"""

from __future__ import annotations

import re
from typing import Optional

from ...model import PeerTransport
from ._common import ParseError, Partial, to_int

KIND = "NCCL log"

# ASCII digits (`\d` also takes "١"), version parts of at most 4 digits
VERSION_RE = re.compile(r"\bNCCL version ([0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4})(?![0-9])((?:[-+][A-Za-z0-9_.]+)?)")
CUDA_DRIVER_RE = re.compile(r"\bNCCL INFO cudaDriverVersion ([0-9]+)")
PREFIX_RE = re.compile(r"^\s*(?:\[[0-9]+\]\s*(?::\s*)?)?([A-Za-z0-9][A-Za-z0-9._-]*):([0-9]+):([0-9]+) \[[0-9]+\] NCCL ")


def nccl_versions(text: str) -> list[str]:
    """Every distinct NCCL version the log prints, in order ("2.19.3+cuda12.3")."""
    seen: list[str] = []
    for m in VERSION_RE.finditer(text):
        full = m.group(1) + m.group(2)
        if full not in seen:
            seen.append(full)
    return seen


def cuda_driver_versions(text: str) -> list[str]:
    """Every distinct ``cudaDriverVersion`` as "major.minor" (12040 -> "12.4")."""
    seen: list[str] = []
    for m in CUDA_DRIVER_RE.finditer(text):
        value = to_int(m.group(1), "NCCL log: cudaDriverVersion", 9)
        text_value = f"{value // 1000}.{(value % 1000) // 10}"
        if text_value not in seen:
            seen.append(text_value)
    return seen


def log_hosts(text: str) -> list[str]:
    """Distinct hostnames in the ``host:pid:tid [dev] NCCL`` prefixes, in order."""
    seen: list[str] = []
    for line in text.splitlines():
        m = PREFIX_RE.match(line)
        if m and m.group(1) not in seen:
            seen.append(m.group(1))
    return seen


CHANNEL_RE = re.compile(
    r"\bNCCL INFO Channel ([0-9]{1,4})(?:/[0-9]{1,4})? ?: ?([0-9]{1,7})\[[0-9a-fA-F]{1,16}\] -> ([0-9]{1,7})"
    r"\[[0-9a-fA-F]{1,16}\](?: \[(send|receive)\])? via ([A-Za-z0-9_./-]{1,80})"
)


def transport_kind(via: str) -> str:
    """``P2P/CUMEM/read`` -> ``P2P/CUMEM``, ``SHM/direct/direct`` -> ``SHM``,
    ``NET/IB/0/GDRDMA`` -> ``NET/IB``: the transport without the channel's
    details (the whole text stays in the line)."""
    parts = via.split("/")
    if parts[0] == "SHM":
        return "SHM"
    return "/".join(parts[:2])


def peer_transports(text: str) -> list[PeerTransport]:
    """One :class:`~ncclnb.model.PeerTransport` per (rank, peer, transport)
    named by the log's channel lines, ``channels`` the distinct channel
    numbers seen for it (a ``[send]`` and a ``[receive]`` line of the same
    channel count once), ``line`` the first such line without its
    ``host:pid:tid`` prefix. Sorted by rank, then peer."""
    seen: dict = {}
    for line in text.splitlines():
        m = CHANNEL_RE.search(line)
        if not m:
            continue
        channel, src, dst, _, via = m.groups()
        key = (int(src), int(dst), transport_kind(via))
        if key not in seen:
            seen[key] = (set(), line[m.start() :].strip()[len("NCCL INFO ") :][:300])
        seen[key][0].add(int(channel))
    return [
        PeerTransport(rank=r, peer=p, transport=t, channels=len(chans), line=first)
        for (r, p, t), (chans, first) in sorted(seen.items())
    ]


def is_nccl_line(line: str) -> bool:
    return bool(VERSION_RE.search(line) or CUDA_DRIVER_RE.search(line))


def parse_nccl_version(text: str) -> Partial:
    """Partial facts from NCCL log lines: the NCCL version the process loaded
    (as ``versions.nccl_loaded``), the driver's CUDA version, the hostname
    when the log shows exactly one."""
    versions_found = nccl_versions(text)
    drivers = cuda_driver_versions(text)
    if not versions_found and not drivers:
        raise ParseError("NCCL log: no 'NCCL version' or 'cudaDriverVersion' line")
    versions: dict = {}
    notes: dict = {}
    if versions_found:
        versions["nccl_loaded"] = versions_found[0].split("+")[0].split("-")[0]
        note = f"'NCCL version {versions_found[0]}' in an NCCL_DEBUG=INFO log: the NCCL the logging process loaded"
        if len(versions_found) > 1:
            note += "; the log also shows " + ", ".join(versions_found[1:])
        notes["versions.nccl_loaded"] = note
    if drivers:
        versions["cuda_driver"] = drivers[0]
        if len(drivers) > 1:
            notes["versions.cuda_driver"] = "the log also shows cudaDriverVersion " + ", ".join(drivers[1:])
    host: dict = {}
    hosts = log_hosts(text)
    hostname: Optional[str] = hosts[0] if len(hosts) == 1 else None
    if hostname:
        host["hostname"] = hostname
    elif len(hosts) > 1:
        notes["host.hostname"] = "the NCCL log comes from several hosts: " + ", ".join(hosts[:8])
    return Partial(kind=KIND, host=host, versions=versions, notes=notes)
