"""The gram table's line-level answers, which the bulk path cuts its lines from: every line that holds a
trigger has a flagged window, on the repository's real NCCL captures and on lines built around each trigger."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncclnb.doctor import scan
from ncclnb.doctor.kb import TRIGGERS

np = pytest.importorskip("numpy")

REPO = Path(__file__).resolve().parents[2]
CAPTURES = sorted((REPO / "ncclnb" / "recorded" / "links").glob("nccl_info__*"))


def _flagged_lines(table, data: bytes) -> set:
    newlines = table.newlines(data, 0, len(data))
    assert newlines.tolist() == [i for i, b in enumerate(data) if b == 10]
    return set(np.searchsorted(newlines, table.flagged(data, 0, len(data))).tolist())


def _trigger_lines(data: bytes) -> set:
    return {i for i, line in enumerate(data.split(b"\n")[:-1]) if scan._has_trigger(line)}


@pytest.mark.parametrize("path", CAPTURES[:4], ids=lambda p: p.name[:60])
def test_every_line_with_a_trigger_is_flagged_in_real_captures(path):
    data = path.read_bytes()
    data = data if data.endswith(b"\n") else data + b"\n"
    table = scan._QuadTable(np, data)
    want = _trigger_lines(data)
    assert want  # the captures hold candidate lines (versions, comm lines, plugin errors)
    assert want <= _flagged_lines(table, data)


@pytest.mark.parametrize("shift", range(4))
def test_every_trigger_is_flagged_at_every_alignment(shift):
    # each trigger once per line, at each offset mod 4 of the buffer, between lines that hold none
    lines = [b"x" * shift + b"gpu-node-001:20001:20001 [1] NCCL INFO " + lit.encode() + b" tail" for lit in TRIGGERS]
    data = b"".join(line + b"\nplain line\n" for line in lines)
    table = scan._QuadTable(np, data)
    want = {2 * i for i in range(len(lines))}
    assert _trigger_lines(data) == want
    assert want <= _flagged_lines(table, data)


def test_no_trigger_flags_the_heads_of_nccls_lines(monkeypatch):
    # A trigger's rarest gram can share its hash with a gram every NCCL prefix holds ("x L4" once collided with
    # " [2\n" and sent every head of a 1024-rank log through the per-trigger loop). The heads are checked the way the
    # bulk path checks them (scan._code_heads: each with the "]" after it), with a table built from a real capture.
    import random

    data = CAPTURES[0].read_bytes()
    table = scan._QuadTable(np, data)
    rng = random.Random(7)
    heads = {
        f"{host}:{rng.randrange(100, 99999)}:{rng.randrange(100, 99999)} [{dev}".encode()
        for host in ("node001", "gpu-node-113", "ip-10-0-12-44", "h200-a017", "dgx1-old", "srv4090", "worker-7")
        for dev in range(8)
        for _ in range(300)
    }
    pieces = [head + b"]" for head in sorted(heads)]
    blob = b"\n".join(pieces) + b"\n"
    flagged = _flagged_lines(table, blob)
    assert not any(scan._has_trigger(p) for p in pieces)  # no head holds a trigger
    assert len(flagged) < len(pieces) / 100, f"{len(flagged)} of {len(pieces)} heads flagged"
    # the check sees such a trigger: one whose grams are a head's own
    monkeypatch.setattr(scan, "_LITERALS", scan._LITERALS + (b"0 [3]",))
    bad = scan._QuadTable(np, data)
    assert len(_flagged_lines(bad, blob)) >= len(pieces) / 100


def _plain_lines_flagged(data: bytes) -> tuple[int, int]:
    table = scan._QuadTable(np, data)
    flagged = _flagged_lines(table, data)
    plain = [i for i, line in enumerate(data.split(b"\n")[:-1]) if not scan._has_trigger(line)]
    return sum(1 for i in plain if i in flagged), len(plain)


@pytest.mark.parametrize("path", CAPTURES[:4], ids=lambda p: p.name[:60])
def test_no_trigger_flags_the_plain_lines_nccl_prints(path, monkeypatch):
    # A trigger whose every gram at one alignment is common ("NCCL (" has only "CCL " there, on every line NCCL prints)
    # sends most lines of a log through the per-line path. The lines of a real capture that hold no trigger are
    # flagged rarely; a trigger made of NCCL's own prefix is caught by the same bound.
    data = path.read_bytes()
    data = data if data.endswith(b"\n") else data + b"\n"
    flagged, plain = _plain_lines_flagged(data)
    assert plain and flagged < plain / 10, f"{flagged} of {plain} lines without a trigger flagged"
    monkeypatch.setattr(scan, "_LITERALS", scan._LITERALS + (b"NCCL (",))
    flagged, plain = _plain_lines_flagged(data)
    assert flagged >= plain / 10
