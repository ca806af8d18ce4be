"""ParallelScan with the caller's skip reads the file's first quarter-range in this process before handing
out tasks: the lines and their numbers are still LineScanner's on the whole file."""

from __future__ import annotations

import multiprocessing

import pytest

from ncclnb.doctor import scan
from ncclnb.doctor.collapse import InertRests

pytest.importorskip("numpy")


def _log() -> bytes:
    # many ranks print the same NCCL lines (candidates and not), with a failure now and then
    lines = []
    for i in range(6000):
        host, pid = f"gpu-node-{i % 16:03d}", 20000 + i % 128
        lines.append(f"{host}:{pid}:{pid} [{i % 8}] NCCL INFO Channel {i % 24:02d}/24 : 3[3] -> 4[4] via P2P/CUMEM/read")
        lines.append(f"{host}:{pid}:{pid} [{i % 8}] NCCL INFO NCCL version 2.27.3+cuda12.9")
        if i % 97 == 0:
            lines.append(
                f"[rank{i % 64}]:[E304 17:41:12.7 ProcessGroupNCCL.cpp:632] Watchdog caught collective operation timeout {i}"
            )
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
@pytest.mark.parametrize("step", [40_000, 150_000, 10_000_000])
def test_head_read_here_keeps_every_line_and_number(tmp_path, step):
    path = tmp_path / "ranks.log"
    data = _log()
    path.write_bytes(data)
    assert len(data) > 2 * 40_000  # several ranges, the head a part of the first
    with open(path, "rb") as fh:
        whole = scan.LineScanner(fh)
        want = list(whole)
    # nothing known inert: nothing may be left out, the head's lines and the workers' numbered as one file
    par = scan.ParallelScan(str(path), 2, step=step, skip=InertRests())
    assert list(par) == want
    assert par.lines_read == whole.lines_read == data.count(b"\n")
