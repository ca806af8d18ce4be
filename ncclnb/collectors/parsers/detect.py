"""Find the known blocks in pasted text, in any order and any number.

A paste may hold several outputs one after another, with prompts, prose
or ``#`` comments between them. Each block starts at a line only its format
has (the ``NVIDIA-SMI ... Driver Version`` title, a ``GPU0 ...`` matrix
header, ``Collecting environment information`` or ``PyTorch version:``) and
ends where its own structure ends; lines between blocks go with the block
that follows them (so a ``$ nvidia-smi topo -p2p w`` prompt reaches the
matrix it names). NCCL version lines are read wherever they are.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Optional, Union

from ...model.limits import TEXT_LIMIT, TEXT_LINES, human
from . import collect_env, nccl_version, nvidia_smi, topo_m
from ._common import ParseError, Partial, one_line, snippet
from .collect_env import parse_collect_env
from .nccl_version import parse_nccl_version
from .nvidia_smi import parse_nvidia_smi
from .p2p import STATUSES as P2P_STATUSES, parse_p2p
from .topo_m import LABEL_RE, parse_topo_m

# kind id -> what the snapshot's `sources` calls it
KINDS = {
    "topo_m": topo_m.KIND,
    "p2p": "nvidia-smi topo -p2p",
    "nvidia_smi": nvidia_smi.KIND,
    "collect_env": collect_env.KIND,
    "nccl_version": nccl_version.KIND,
}

# an OSC title ends at BEL, and within its line: never scan past the next ESC (quadratic)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b\n]*\x07")
_LEGEND_ENTRY = re.compile(r"\s*\S+\s*=\s*\S.*")
_NIC_LEGEND_ENTRY = re.compile(r"\s*NIC[0-9]+\s*:\s*\S+\s*")
_PROMPTS = (
    re.compile(r"(?:^|\s)[\w.-]+@([A-Za-z0-9][A-Za-z0-9.-]*):\S*\s?[#$]\s"),
    re.compile(r"\[[\w.-]+@([A-Za-z0-9][A-Za-z0-9.-]*) [^\]]*\][#$]\s"),
)


@dataclass(frozen=True)
class Block:
    """One recognised output inside a paste: its kind id, its text (with the
    lines that led up to it) and the 1-based line where its own output starts."""

    kind: str
    text: str
    line: int


# every line break str.splitlines() knows: lines are counted before anything splits them
_LINE_BREAKS = ("\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
_JSON_SNIFF = 8 << 20  # larger text that starts like JSON is left to the text parsers


def as_text(data: Union[str, bytes]) -> str:
    """Bytes or str -> text with ANSI colour codes removed; binary data
    (NUL bytes, undecodable) and text past ``TEXT_LIMIT`` bytes or
    ``TEXT_LINES`` lines raise ParseError."""
    if not isinstance(data, (str, bytes)):
        raise ParseError(f"input must be text or bytes, not {type(data).__name__}")
    if len(data) > TEXT_LIMIT:
        raise ParseError(f"input too large ({human(len(data))}; ncclnb reads text of at most {human(TEXT_LIMIT)})")
    if isinstance(data, bytes):
        if data.startswith((b"\xff\xfe", b"\xfe\xff")):
            try:
                data = data.decode("utf-16")
            except UnicodeDecodeError:
                raise ParseError("input is not text: a UTF-16 mark followed by undecodable bytes") from None
        else:
            if b"\x00" in data:
                raise ParseError("input is binary data, not text (it contains NUL bytes)")
            try:
                data = data.decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                raise ParseError(f"input is not UTF-8 text (undecodable byte at offset {exc.start})") from None
    if "\x00" in data:
        raise ParseError("input is binary data, not text (it contains NUL bytes)")
    lines = sum(data.count(br) for br in _LINE_BREAKS) - data.count("\r\n")  # CRLF is one break
    if lines > TEXT_LINES:
        raise ParseError(f"input has too many lines ({lines}; ncclnb reads text of at most {TEXT_LINES} lines)")
    return _ANSI.sub("", data)


def _is_matrix_header(lines: list[str], i: int) -> bool:
    return topo_m.is_header(lines[i])


def _matrix_kind(lines: list[str], i: int) -> str:
    header = lines[i]
    if "Affinity" in header or any(not topo_m.GPU_RE.fullmatch(t) for t in header.split()):
        return "topo_m"
    for line in lines[i + 1 : i + 3]:
        cells = line.split()[1:]
        if any(c in P2P_STATUSES and c != "X" for c in cells):
            return "p2p"
        if any(LABEL_RE.fullmatch(c) and c != "X" for c in cells):
            return "topo_m"
    return "p2p"


def _matrix_end(lines: list[str], i: int) -> int:
    devices = set(lines[i].split())
    j = i + 1
    while j < len(lines) and lines[j].split()[:1] and lines[j].split()[0] in devices:
        j += 1
    end = j
    # optional "Legend:" and "NIC Legend:" sections
    for title, entry in (("Legend:", _LEGEND_ENTRY), ("NIC Legend:", _NIC_LEGEND_ENTRY)):
        k = end
        while k < len(lines) and not lines[k].strip():
            k += 1
        if k < len(lines) and lines[k].strip() == title:
            k += 1
            last = k
            while k < len(lines) and (not lines[k].strip() or entry.fullmatch(lines[k])):
                if lines[k].strip():
                    last = k + 1
                k += 1
            end = last
    return end


def _smi_end(lines: list[str], i: int) -> int:
    last = i
    j = i + 1
    while j < len(lines):
        s = lines[j].strip()
        if s.startswith(("|", "+")):
            last = j
        elif s:
            break
        j += 1
    return last + 1


def _collect_env_end(lines: list[str], i: int) -> int:
    seen_torch = bool(re.match(r"\s*PyTorch version\s*:", lines[i]))
    for j in range(i + 1, len(lines)):
        s = lines[j].strip()
        if s.startswith("Collecting environment information"):
            return j
        if re.match(r"PyTorch version\s*:", s):
            if seen_torch:
                return j
            seen_torch = True
        if nvidia_smi.is_header(lines[j]):
            # the title line sits under a "+----" line, which belongs to the table
            return j - 1 if j - 1 > i and lines[j - 1].strip().startswith("+") else j
        if _is_matrix_header(lines, j):
            previous = next((lines[k].strip() for k in range(j - 1, i, -1) if lines[k].strip()), "")
            if not previous.startswith("GPU Topology:") and not lines[j].strip().startswith("GPU Topology:"):
                return j
    return len(lines)


def split_blocks(text: str) -> list[Block]:
    """Every known block in ``text``, in order; the NCCL version lines, when
    there are any, come last as one ``nccl_version`` block."""
    lines = text.splitlines()
    blocks: list[Block] = []
    free_from = 0  # first line not yet given to a block
    i = 0
    while i < len(lines):
        line = lines[i]
        kind: Optional[str] = None
        if collect_env.is_start(line):
            kind, end = "collect_env", _collect_env_end(lines, i)
        elif nvidia_smi.is_header(line):
            kind, end = "nvidia_smi", _smi_end(lines, i)
        elif _is_matrix_header(lines, i):
            kind, end = _matrix_kind(lines, i), _matrix_end(lines, i)
        if kind is None:
            i += 1
            continue
        blocks.append(Block(kind, "\n".join(lines[free_from:end]), i + 1))
        i = free_from = max(end, i + 1)
    nccl_lines = [ln for ln in lines if nccl_version.is_nccl_line(ln) and not ln.lstrip().startswith("#")]
    if nccl_lines:
        blocks.append(Block("nccl_version", "\n".join(nccl_lines), 1))
    return blocks


def detect(text: str) -> str:
    """The kind of the first known block in ``text``: "topo_m", "p2p",
    "nvidia_smi", "collect_env" or "nccl_version"; ParseError if none."""
    text = as_text(text)
    _refuse_json(text)
    blocks = split_blocks(text)
    if not blocks:
        raise ParseError(_nothing_found(text))
    return blocks[0].kind


def parse_block(block: Block, p2p_capability: Optional[str] = None) -> Partial:
    """Run the parser of ``block.kind`` on the block's text."""
    if block.kind == "topo_m":
        return parse_topo_m(block.text)
    if block.kind == "p2p":
        return parse_p2p(block.text, p2p_capability)
    if block.kind == "nvidia_smi":
        return parse_nvidia_smi(block.text)
    if block.kind == "collect_env":
        return parse_collect_env(block.text)
    if block.kind == "nccl_version":
        return parse_nccl_version(block.text)
    raise ValueError(f"unknown block kind {block.kind!r}")


def parse_text(text: Union[str, bytes], p2p_capability: Optional[str] = None) -> list[Partial]:
    """All partial facts in a paste, one per block; ParseError (one line) for
    empty, binary or JSON input, text with no known block, or a broken block."""
    text = as_text(text)
    if not text.strip():
        raise ParseError("empty input")
    _refuse_json(text)
    blocks = split_blocks(text)
    if not blocks:
        raise ParseError(_nothing_found(text))
    hosts = hostnames_in(text)
    parts = []
    for block in blocks:
        try:
            parts.append(parse_block(block, p2p_capability))
        except ParseError as exc:
            raise ParseError(f"line {block.line}: {exc}") from None
    if len(hosts) == 1:
        parts.append(Partial(kind="shell prompt", host={"hostname": hosts[0]}))
    return parts


def hostnames_in(text: str) -> list[str]:
    """Hostnames shown by shell prompts (``root@node1:~# ...``) in the text,
    outside ``#`` comment lines."""
    seen: list[str] = []
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        for pattern in _PROMPTS:
            m = pattern.search(line)
            if m and m.group(1) not in seen:
                seen.append(m.group(1))
    return seen


def _refuse_json(text: str) -> None:
    stripped = text.lstrip()
    if not stripped.startswith(("{", "[")) or len(stripped) > _JSON_SNIFF:
        return
    try:
        data = json.loads(stripped)
    except ValueError:
        return
    except RecursionError:
        raise ParseError("this is JSON nested too deeply (or starts like it), not nvidia-smi / topo / collect_env text") from None
    if isinstance(data, dict) and isinstance(data.get("schema"), str) and data["schema"].startswith("ncclnb."):
        raise ParseError(
            f"this is an ncclnb JSON file (schema {data['schema']!r}), not pasted text: open it with ncclnb.load / ncclnb show"
        )
    shape = "object with keys " + ", ".join(map(str, list(data)[:5])) if isinstance(data, dict) else type(data).__name__
    raise ParseError(f"this is JSON ({one_line(shape, 80)}), not nvidia-smi / topo / collect_env text")


def _nothing_found(text: str) -> str:
    first = next((ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")), "")
    where = f" (first line: {snippet(first)})" if first else " (only # comment lines)"
    return "no nvidia-smi, nvidia-smi topo -m / -p2p, collect_env or NCCL version output found" + where
