"""normalize tries on a text only the prefixes its first character allows (normalize._CAN_START): no prefix
matches from a character left out of its set, and normalize reads every line of the signature logs and
fixtures as it does trying every prefix."""

from __future__ import annotations

import re
from pathlib import Path

from ncclnb.doctor import normalize as nz

DOCTOR = Path(__file__).resolve().parents[2] / "ncclnb" / "doctor"
_MARK = re.compile(r"\s+# ncclnb: (hit|miss)\s*$")


# one line per prefix normalize peels (the module docstring's examples), so each prefix's own tails are tried
EXAMPLES = {
    "syslog_iso": ["2025-11-25T10:00:01.123+00:00 node7 kernel: NVRM: Xid 79"],
    "ts": ["[2025-11-25 10:00:01,123] Error x", "2025-11-25T10:00:01Z Error x"],
    "syslog": ["Nov 25 10:00:01 node7 kernel: NVRM: Xid 79"],
    "dmesg": ["<4>[ 12.345678] NVRM: Xid 79", "[Tue Nov 25 10:00:01 2025] NVRM: Xid 79"],
    "rank": ["[rank3]: Error x"],
    "local": ["[default3]: Error x"],
    "tag": ["[trainer3]: Error x"],
    "label": ["[nodeB] a3-vm-2:2987:2987 [0] NCCL INFO Error x", "[nodeA] [rank0]: Error x"],
    "ray": ["(RayWorkerWrapper pid=11305) Error x", "(pid=11305, ip=10.0.0.1) Error x"],
    "pylog": [f"{lvl} 08-27 05:12:18 worker.py:38] Error x" for lvl in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")],
    "glog2": [f"{lvl}0104 13:46:27.896000 80302 run.py:792] Error x" for lvl in "IWEF"],
    "quote": ["> Error x", ">> Error x"],
    "mpi": ["[1,3]<stderr>: Error x"],
    "glog": ["[W304 17:41:12.735149131 ProcessGroupNCCL.cpp:4561] Error x"],
    "nccl": ["gpu-node-001:20001:20004 [3] NCCL INFO Error x", "h:1 [0] misc/socket.cc:50 NCCL WARN Error x"],
    "nccl_bare": ["[3] include/shm.h:28 NCCL WARN Error x", "WARN NET/IB: Error x", "NCCL INFO Error x"],
    "slurm": ["3: Error x"],
    "stream": ["worker-1 [stdout] Error x"],
    "pdsh": ["node7: Error x", "10.0.0.1: Error x"],
    "space": ["   Error x", "\tError x"],
}


def test_every_example_begins_with_its_prefix():
    for kind, rx in nz._PREFIXES:
        for text in EXAMPLES[kind]:
            m = rx.match(text)
            assert m is not None and m.end() > 0, (kind, text)


def _lines() -> list:
    out = []
    for path in sorted((DOCTOR / "signatures").glob("*.log")) + sorted(
        p for p in (DOCTOR / "fixtures").rglob("*") if p.is_file()
    ):
        out += [_MARK.sub("", raw) for raw in path.read_text(encoding="utf-8", errors="replace").splitlines()]
    return out


def _every_prefix(raw: str):
    """normalize as it was: every prefix tried on every text."""
    saved = nz._PREFIXES_BY_FIRST
    nz._PREFIXES_BY_FIRST = {}
    try:
        return nz.normalize(raw)
    finally:
        nz._PREFIXES_BY_FIRST = saved


def test_no_prefix_matches_from_a_character_left_out():
    lines = _lines()
    # the tails every prefix is tried on: what follows a line's first character, at every depth a prefix is cut
    tails = {text[1:] for texts in EXAMPLES.values() for text in texts}
    for raw in lines[:3000]:
        text = nz.clean(raw)
        for _ in range(6):
            tails.add(text[1:80])
            ln = nz.normalize(text)
            if ln is None or ln.text == text or not ln.text:
                break
            text = ln.text
    chars = [chr(c) for c in range(256)] + ["é", "中", "\u2003", "١"]
    for kind, rx in nz._PREFIXES:
        allowed = nz._CAN_START[kind]
        if allowed is None:
            continue
        for c in chars:
            if c in allowed:
                continue
            for tail in tails:
                m = rx.match(c + tail)
                assert m is None or m.end() == 0, (kind, c, tail)


def test_normalize_reads_every_line_as_trying_every_prefix():
    lines = _lines()
    assert len(lines) > 1000
    lines += [text for texts in EXAMPLES.values() for text in texts]
    for raw in lines:
        assert nz.normalize(raw) == _every_prefix(raw), raw
        # behind the prefixes launchers add, and behind NCCL's, as the collapser probes a rest
        for wrapped in (f"[rank3]:{raw}", f"\x01a:1:1 [0] {raw}", f"gpu-node-001:20001:20004 [3] NCCL INFO {raw}"):
            assert nz.normalize(wrapped) == _every_prefix(wrapped), wrapped
