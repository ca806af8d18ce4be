"""The default ``nvidia-smi`` table: driver and CUDA version, one entry per GPU.

Both layouts are read: the old one (driver <= 470, 79 columns) and the new
one (>= 510, 89 columns; 580 drops the ``|---`` line under the title). Each
GPU takes two or three ``|``-separated lines: name and bus id; memory use and
compute mode; MIG mode (absent before driver 450). Only the first three
cells are read, so the Processes table below never matches.
"""

from __future__ import annotations

import re

from ._common import INDEX_DIGITS, ParseError, Partial, content_lines, is_number, to_int

KIND = "nvidia-smi"

HEADER_RE = re.compile(r"NVIDIA-SMI\s+(?P<smi>\S+)\s+Driver Version:\s*(?P<driver>\S+)(?:\s+CUDA Version:\s*(?P<cuda>\S+))?")
FAILED_RE = re.compile(r"NVIDIA-SMI has failed.*|No devices were found")
_PERSISTENCE = ("On", "Off", "WDDM", "TCC", "N/A")  # the last word of a GPU's name cell
_BUS_CELL = re.compile(r"\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s+\S+\s*")
_MEMORY = re.compile(r"(?<![0-9])([0-9]+)\s*MiB\s*/\s*([0-9]+)\s*MiB")  # starts only where a number does
_COMPUTE = {
    "Default": "Default",
    "E. Process": "Exclusive_Process",
    "E. Thread": "Exclusive_Thread",
    "Prohibited": "Prohibited",
    "Exclusive_Process": "Exclusive_Process",
}
_COMPUTE_RE = re.compile(r"(Default|E\. Process|E\. Thread|Prohibited|Exclusive_Process)\s*$")


def is_header(line: str) -> bool:
    return bool(HEADER_RE.search(line)) or bool(FAILED_RE.match(line.strip()))


def _cells(line: str) -> list[str]:
    s = line.strip()
    if not (s.startswith("|") and s.endswith("|")):
        return []
    return s[1:-1].split("|")


def parse_nvidia_smi(text: str) -> Partial:
    """Parse the ``nvidia-smi`` table into partial facts: driver and CUDA
    version; per GPU its name, PCI bus id, total memory (MiB), compute mode
    and MIG mode."""
    lines = content_lines(text)
    header = next(((i, HEADER_RE.search(ln)) for i, ln in enumerate(lines) if HEADER_RE.search(ln)), None)
    if header is None:
        failed = next((ln.strip() for ln in lines if FAILED_RE.match(ln.strip())), None)
        if failed:
            reason = "nvidia-smi: " + failed
            return Partial(kind=KIND, missing={"gpus": reason, "versions.driver": reason})
        raise ParseError("nvidia-smi: no 'NVIDIA-SMI ... Driver Version' line")
    start, m = header
    versions = {"driver": m.group("driver")}
    missing = {}
    cuda = m.group("cuda")
    if cuda and cuda != "N/A":
        versions["cuda_driver"] = cuda
    else:
        missing["versions.cuda_driver"] = "nvidia-smi shows no CUDA Version" + (" (N/A)" if cuda else "")

    gpus: dict[int, dict] = {}
    body = lines[start + 1 :]
    i = 0
    while i < len(body):
        cells = _cells(body[i])
        name_m = _name_cell(cells[0]) if len(cells) >= 3 else None
        bus_m = _BUS_CELL.fullmatch(cells[1]) if name_m else None
        if not (name_m and bus_m):
            i += 1
            continue
        index = to_int(name_m[0], "nvidia-smi: GPU index", INDEX_DIGITS)
        if index in gpus:
            raise ParseError(f"nvidia-smi: GPU {index} is listed twice")
        second = _cells(body[i + 1]) if i + 1 < len(body) else []
        mem = _MEMORY.search(second[1]) if len(second) >= 3 else None
        if mem is None:
            raise ParseError(f"nvidia-smi: the entry of GPU {index} is cut short (no memory line after its name)")
        facts = {
            "name": name_m[1],
            "pci_bus_id": bus_m.group(1),
            "memory_total_mib": to_int(mem.group(2), f"nvidia-smi: total memory (MiB) of GPU {index}"),
        }
        comp = _COMPUTE_RE.search(second[2])
        if comp:
            facts["compute_mode"] = _COMPUTE[comp.group(1)]
        i += 2
        third = _cells(body[i]) if i < len(body) else []
        if len(third) >= 3 and not third[0].strip() and not third[1].strip():
            mig = third[2].strip()
            if mig in ("Enabled", "Disabled"):
                facts["mig_mode"] = mig
            elif mig:
                missing[f"gpus[{index}].mig_mode"] = f"nvidia-smi shows MIG M. {mig}"
            i += 1
        else:
            missing[f"gpus[{index}].mig_mode"] = "this nvidia-smi table has no MIG M. line (driver before 450)"
        gpus[index] = facts
    if not gpus:
        raise ParseError("nvidia-smi: no GPU entries after the header (text cut short?)")
    return Partial(kind=KIND, gpus=gpus, versions=versions, missing=missing)


def _name_cell(cell: str):
    """``   0  NVIDIA A100-SXM4-80GB  On`` -> ("0", "NVIDIA A100-SXM4-80GB"),
    or None: split on whitespace, since a pattern with a lazy name between
    two whitespace runs backtracks quadratically on a long run of spaces."""
    parts = cell.split(None, 1)
    if len(parts) != 2 or not is_number(parts[0]):
        return None
    name = parts[1].rsplit(None, 1)
    if len(name) != 2 or name[1] not in _PERSISTENCE:
        return None
    return parts[0], name[0].strip()
