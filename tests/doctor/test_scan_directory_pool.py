"""A directory of per-rank logs scanned by worker processes (scan.FilesAhead)
gives the diagnosis one process gives: the same lines reach the matcher in
the same order with the same per-file numbers, whatever else the directory
holds (a .gz, an unreadable file, a binary one, an empty one, a dangling
link) and however often the matcher empties its cache."""

from __future__ import annotations

import gzip
import json
import multiprocessing
import os
import signal
import subprocess
import sys

import pytest

from _procs import processes_where, wait_for
from tests.conftest import REPO
from ncclnb.doctor import scan

pytest.importorskip("numpy")

DEADLINE_S = 300

# run in a fresh process: the thresholds made small enough for a few MB of logs, the tasks sent counted
DRIVER = """
import json, os, sys
import ncclnb.doctor.match as match
import ncclnb.doctor.scan as scan
scan.PARALLEL_MIN = 1 << 20  # a directory of a few MB gets workers (its files, each smaller, none of their own)
scan.FILES_TASK, scan.MAX_FILES_TASK = 300_000, 3  # several tasks, each of a few files
if os.environ.get("TEST_MATCH_CACHE"):
    match.MATCH_CACHE = int(os.environ["TEST_MATCH_CACHE"])  # emptied often: snapshots go stale
sent = [0]
submit = scan.FilesAhead.submit
def counted(self):
    sent[0] += bool(self._queued)
    submit(self)
scan.FilesAhead.submit = counted
from ncclnb.doctor import diagnose
diag = diagnose(sys.argv[1])
print(json.dumps({"diagnosis": diag.to_dict(), "tasks": sent[0]}))
"""


def _rank_lines(r: int, n: int) -> list[str]:
    """An NCCL_DEBUG=INFO log of rank ``r``: set-up lines every rank prints, a few of its own."""
    p = f"node{r // 8:03d}:{1000 + r}:{2000 + r} [{r % 8}]"
    lines = [
        f"{p} NCCL INFO Bootstrap : Using eth0:10.0.{r // 8}.1<0>",
        f"{p} NCCL INFO NCCL version {'2.18.1+cuda12.1' if r == 3 else '2.21.5+cuda12.4'}",
        f"{p} NCCL INFO comm 0x55d8 rank {r} nRanks 16 nNodes 2 localRanks 8 localRank {r % 8} MNNVL 0",
    ]
    for i in range(n):
        lines.append(f"{p} NCCL INFO Channel {i % 24:02d}/24 : {r}[{r % 8}] -> {(r + 1) % 16}[{(r + 1) % 8}] via P2P/CUMEM/read")
        if i % 97 == 0:
            lines.append(f"{p} NCCL INFO Connected all rings, use ring PXN 0 GDR {i % 2}")
        if i % 311 == 0:
            lines.append(f"{p} NCCL INFO NET/Plugin: No plugin found (libnccl-net.so)")
    if r == 5:
        lines.insert(
            n // 2,
            "[rank5]:[E304 17:41:12.735149131 ProcessGroupNCCL.cpp:632] [Rank 5] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=10, NumelOut=10, "
            "Timeout(ms)=600000) ran for 600068 milliseconds before timing out.",
        )
    return lines


def _drop_dac():
    """In the child, as root: give up the capabilities that let root read any file (PR_CAPBSET_DROP)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "PR_CAPBSET_DROP")


def _run(args: list, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        args,
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=DEADLINE_S,
        preexec_fn=_drop_dac if os.geteuid() == 0 else None,
    )


@pytest.fixture(scope="module")
def rank_dir(tmp_path_factory):
    """16 ranks' logs (~160 KB each), rank 12's gzipped; an unreadable file, a binary, an empty one, a dangling link."""
    d = tmp_path_factory.mktemp("ranks")
    counted = 0
    for r in range(16):
        text = "\n".join(_rank_lines(r, 1500)) + "\n"
        counted += text.count("\n")
        if r == 12:
            (d / f"rank{r}.log.gz").write_bytes(gzip.compress(text.encode()))
        else:
            (d / f"rank{r}.log").write_text(text)
    (d / "rank16.log").write_text("\n".join(_rank_lines(16, 1500)) + "\n")
    (d / "rank16.log").chmod(0)
    (d / "rank17.log").write_bytes(bytes(range(256)) * 400)
    (d / "rank18.log").write_bytes(b"")
    os.symlink("gone.log", d / "rank19.log")
    yield d, counted
    (d / "rank16.log").chmod(0o644)


def _unreadable_here(path) -> bool:
    probe = _run([sys.executable, "-c", "import sys; open(sys.argv[1], 'rb')", str(path)], dict(os.environ))
    return probe.returncode != 0


@pytest.mark.parametrize("match_cache", ["", "40"], ids=["cache-kept", "cache-emptied-often"])
def test_a_directory_diagnosed_with_workers_equals_one_process(rank_dir, match_cache):
    d, counted = rank_dir
    got = {}
    for workers in ("0", "2"):
        env = dict(os.environ, NCCLNB_DOCTOR_WORKERS=workers, TEST_MATCH_CACHE=match_cache)
        proc = _run([sys.executable, "-c", DRIVER, str(d)], env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        got[workers] = json.loads(proc.stdout)
    assert got["0"]["tasks"] == 0 and got["2"]["tasks"] >= 4  # the workers did read the files
    assert got["2"]["diagnosis"] == got["0"]["diagnosis"]
    diag = got["2"]["diagnosis"]
    assert diag["lines_read"] == counted  # every rank's lines, the gzipped one's too
    rules = {f["rule"] for f in diag["findings"]}
    assert "nccl_version_differs_across_hosts" in rules
    watchdog = [f for f in diag["findings"] if f["rule"].startswith("watchdog")]
    assert watchdog and any("[Rank 5] Watchdog caught" in e["text"] for e in watchdog[0]["evidence"])
    skipped = " ".join(f["title"] for f in diag["findings"] if f["rule"] == "input_skipped")
    assert "rank17.log: binary data" in skipped and "rank19.log: dangling symbolic link" in skipped
    if _unreadable_here(d / "rank16.log"):
        assert "rank16.log: Permission denied" in skipped


def _lines_alone(path) -> tuple[list, int]:
    with open(path, "rb") as fh:
        s = scan.LineScanner(fh)
        return list(s), s.lines_read


def test_files_ahead_read_the_file_opened_not_what_the_path_names_later(tmp_path):
    first, second = tmp_path / "rank0.log", tmp_path / "rank1.log"
    first.write_text("\n".join(_rank_lines(0, 3000)) + "\n")
    second.write_text("\n".join(_rank_lines(5, 2000)) + "\n")
    want = _lines_alone(first)
    files = scan.FilesAhead(2)
    try:
        with open(first, "rb") as fh:
            ahead = files.add(fh.fileno(), str(first), os.fstat(fh.fileno()))
            os.replace(second, first)  # rotated before any worker opened it
            assert (list(ahead), ahead.lines_read) == want
    finally:
        files.close()
    assert not multiprocessing.active_children()


def test_a_task_past_its_candidates_leaves_the_rest_to_the_caller(tmp_path):
    paths = []
    for r in range(5):
        p = tmp_path / f"rank{r}.log"
        p.write_text("\n".join(_rank_lines(r, 2000)) + "\n")
        paths.append(p)
    handles = [open(p, "rb") for p in paths]
    files = scan.FilesAhead(2, max_candidates=7)  # a task stops after 7 candidates: the files left over are read here
    try:
        ahead = [files.add(fh.fileno(), str(p), os.fstat(fh.fileno())) for fh, p in zip(handles, paths)]
        files.submit()
        for a, p in zip(ahead, paths):
            assert (list(a), a.lines_read) == _lines_alone(p)
    finally:
        files.close()
        for fh in handles:
            fh.close()
    assert not multiprocessing.active_children()


def test_a_worker_reads_no_file_but_the_one_handed_over(tmp_path):
    p, other = tmp_path / "rank0.log", tmp_path / "rank1.log"
    p.write_text("\n".join(_rank_lines(0, 100)) + "\n")
    other.write_text("x\n")
    st, wrong = os.stat(p), os.stat(other)
    assert scan.scan_files([(str(p), st.st_size, (wrong.st_dev, wrong.st_ino))]) == [None]
    found, lines, truncated, stopped = scan.scan_files([(str(p), st.st_size, (st.st_dev, st.st_ino))])[0]
    assert (found, lines, truncated, stopped) == (*_lines_alone(p), "", None)


def test_closing_midway_leaves_no_workers(tmp_path):
    paths = []
    for r in range(4):
        p = tmp_path / f"rank{r}.log"
        p.write_text("\n".join(_rank_lines(r, 2000)) + "\n")
        paths.append(p)
    handles = [open(p, "rb") for p in paths]
    files = scan.FilesAhead(2)
    try:
        ahead = [files.add(fh.fileno(), str(p), os.fstat(fh.fileno())) for fh, p in zip(handles, paths)]
        files.submit()
        it = iter(ahead[0])
        next(it)
        it.close()
    finally:
        files.close()
        for fh in handles:
            fh.close()
    assert not multiprocessing.active_children()


# ---- signals: the doctor stopped mid-directory leaves no worker behind ---------------------------
needs_proc = pytest.mark.skipif(not sys.platform.startswith("linux") or not os.path.isdir("/proc/self"), reason="needs /proc")

CLI = """
import sys
import ncclnb.doctor.scan as scan
scan.PARALLEL_MIN = 1 << 20
from ncclnb.cli import main
sys.exit(main(["doctor", "--json", sys.argv[1]]))
"""


@pytest.fixture(scope="module")
def many_ranks(tmp_path_factory):
    """64 ranks' logs of 1 MB each: seconds of work for the doctor."""
    d = tmp_path_factory.mktemp("many")
    for r in range(64):
        (d / f"rank{r}.log").write_text("\n".join(_rank_lines(r, 10_000)) + "\n")
    return d


@needs_proc
@pytest.mark.parametrize("signame", ["SIGTERM", "SIGKILL"])
def test_a_signal_mid_directory_leaves_no_worker(many_ranks, tmp_path, signame):
    sig = getattr(signal, signame)
    err = tmp_path / "stderr"
    with open(tmp_path / "stdout", "wb") as out, open(err, "wb") as errfh:
        proc = subprocess.Popen(
            [sys.executable, "-c", CLI, str(many_ranks)],
            stdout=out,
            stderr=errfh,
            stdin=subprocess.DEVNULL,
            cwd=REPO,
            env=dict(os.environ, NCCLNB_DOCTOR_WORKERS="2"),
            start_new_session=True,
        )
    try:
        workers = wait_for(lambda: proc.poll() is None and processes_where(lambda f: int(f[1]) == proc.pid))
        assert workers, "no worker process appeared while the doctor ran"
        os.kill(proc.pid, sig)  # the doctor alone, as `timeout` does
        rc = proc.wait(timeout=DEADLINE_S)
        wait_for(lambda: not processes_where(lambda f: int(f[3]) == proc.pid), 20)
        left = processes_where(lambda f: int(f[3]) == proc.pid)
        assert left == [], f"processes of the doctor's session still alive after {signame}: {left}"
        if sig != signal.SIGKILL:
            assert rc == 128 + sig, (rc, err.read_text()[-2000:])
            assert err.read_text().strip().splitlines() == [f"ncclnb doctor: interrupted (signal {int(sig)})"]
    finally:
        for pid in processes_where(lambda f: int(f[3]) == proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=DEADLINE_S)
