"""Issue 13: the doctor stays bounded and says why on hostile input. Each
test here failed on the main before the fix (a MemoryError or RecursionError
traceback, or an abort with no diagnosis)."""

from __future__ import annotations

import gzip
import subprocess
import sys

import pytest

from ncclnb import diagnose

CHILD_LIMIT = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, resource.RLIM_INFINITY))
from ncclnb.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _doctor_limited(*args):
    """`ncclnb doctor ARGS` in a child limited to 1.5 GB of address space."""
    return subprocess.run([sys.executable, "-c", CHILD_LIMIT, "doctor", *args], capture_output=True, text=True, timeout=300)


def test_a_small_gz_shaped_like_a_dump_stays_bounded(tmp_path):
    # 40 million empty entries: 120 MB of JSON in a 0.1 MB gz (was: ~6 GB, then MemoryError)
    body = b'{"pg_config":{},"version":"2.4","entries":[' + b",".join([b"[]"] * 40_000_000) + b"]}"
    with gzip.open(tmp_path / "rank0.json.gz", "wb") as fh:
        fh.write(body)
    (tmp_path / "rank1.log").write_text("RuntimeError: NCCL error in: x.cpp:1, unhandled cuda error\n")
    proc = _doctor_limited(str(tmp_path), "--json")
    assert proc.returncode == 0, proc.stderr[-500:]
    assert "Traceback" not in proc.stderr
    assert "Skipped flight-recorder dump" in proc.stdout and "larger than" in proc.stdout
    assert '"rule": "fr.dump_not_read"' in proc.stdout


def test_many_small_values_under_the_byte_cap_are_refused_before_parsing(tmp_path):
    body = b'{"pg_config":{},"version":"2.4","entries":[' + b",".join([b"[]"] * 5_000_000) + b"]}"
    (tmp_path / "rank0.json").write_bytes(body)  # 15 MB, under the byte cap
    proc = _doctor_limited(str(tmp_path / "rank0.json"))
    assert proc.returncode == 0, proc.stderr[-500:]
    assert "JSON values" in proc.stdout


def test_deeply_nested_dump_is_skipped_and_the_rest_diagnosed(tmp_path):
    (tmp_path / "rank0.json").write_text('{"pg_config":{},"version":"2.4","entries":' + "[" * 10000 + "]" * 10000 + "}")
    (tmp_path / "rank1.log").write_text("Timed out after 5 seconds waiting for clients. 1/2 clients joined.\n")
    diag = diagnose(str(tmp_path))
    assert diag.top.category == "rendezvous_unreachable"
    skipped = [f for f in diag.findings if f.rule == "fr.dump_not_read"]
    assert skipped and "nested too deeply" in skipped[0].title


def test_every_skipped_dump_is_named(tmp_path):
    for i in range(3):
        (tmp_path / f"rank{i}.json").write_text('{"pg_config":{},"version":"2.4","entries":' + "[" * 5000 + "}")
    diag = diagnose(str(tmp_path))
    skipped = [f for f in diag.findings if f.rule == "fr.dump_not_read"]
    assert len(skipped) == 1 and "(and 2 more)" in skipped[0].title and len(skipped[0].evidence) == 3


HUGE = "9" * 5000


@pytest.mark.parametrize(
    "line",
    [
        f"[rank{HUGE}]: NCCL WARN Cuda failure 'out of memory'",
        f"comm 0x1 rank {HUGE} nRanks {HUGE} nNodes 1 localRanks 1 localRank 0 - Init COMPLETE",
        f"RuntimeError: [enforce fail at context.cc:23] rank < size. {HUGE} vs 4",
        f"Initializing distributed: GLOBAL_RANK: {HUGE}, MEMBER: 1/4",
        f"DistStoreError: Timed out after 5 seconds waiting for clients. {HUGE}/8 clients joined.",
        f"Watchdog caught collective operation timeout: WorkNCCL(SeqNum={HUGE}, OpType=ALLREDUCE, NumelIn=1, "
        "NumelOut=1, Timeout(ms)=600000) ran for 600068 milliseconds before timing out.",
        f"{HUGE}: NCCL WARN NET/IB : Got completion with error 12",
        "[rank³]: RuntimeError: NCCL error in: x.cpp:1, unhandled system error",
        "Initializing distributed: GLOBAL_RANK: ٣, MEMBER: 1/4",
        "Timed out after 5 seconds waiting for clients. ³/8 clients joined.",
    ],
)
def test_numbers_too_long_or_not_ascii_never_abort_the_diagnosis(line):
    diag = diagnose(line + "\nRuntimeError: NCCL error in: x.cpp:1, unhandled cuda error\n")
    assert diag.findings, line[:60]
    for f in diag.findings:
        assert all(isinstance(r, int) and r < 10**18 for r in f.ranks)


def test_log_files_named_with_huge_or_unicode_numbers(tmp_path):
    (tmp_path / ("rank" + "9" * 200 + ".log")).write_text("RuntimeError: NCCL error in: x.cpp:1, unhandled cuda error\n")
    (tmp_path / "rank³.log").write_text("RuntimeError: NCCL error in: x.cpp:1, unhandled cuda error\n")
    assert diagnose(str(tmp_path)).findings
