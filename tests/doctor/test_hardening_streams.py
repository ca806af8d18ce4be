"""The doctor's input streams under stress: signals during a parallel scan, a
log replaced or cut while it is read, FIFOs and process substitution, endless
or binary streams, a rank table past its cap, directories that cannot be
walked, and inputs with no log text at all.

Real processes and real files, no mocks. Deadlines here only keep a failure
from hanging the suite; nothing asserts how fast anything ran."""

from __future__ import annotations

import gzip
import io
import json
import os
import signal
import subprocess
import sys
import threading

import pytest

from ncclnb.doctor import DoctorInputError, diagnose, scan
from ncclnb.doctor.rank_table import MAX_RANKS
from _procs import processes_where, stat_fields, wait_for
from tests.conftest import REPO, run_cli

ERROR_LINE = b"[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
LINUX = sys.platform.startswith("linux")
needs_proc = pytest.mark.skipif(not LINUX or not os.path.isdir("/proc/self"), reason="needs Linux /proc")
DEADLINE_S = 60  # only so that a failure cannot hang the suite


# ---- helpers ------------------------------------------------------------------
def _nccl_block() -> bytes:
    """Real-looking NCCL_DEBUG=INFO lines of 64 ranks; one line in nine is a
    candidate (a comm line), so the parent has work for seconds on 200 MB."""
    lines = []
    for i in range(2000):
        r, d = i % 64, i % 8
        host = f"node{r // 8:03d}:{10000 + r}:{10100 + r} [{d}]"
        lines.append(f"{host} NCCL INFO Channel {i % 24:02d}/24 : {r}[{d}] -> {(r + 1) % 64}[{(d + 1) % 8}] via P2P/CUMEM/read\n")
        if i % 8 == 0:
            lines.append(
                f"{host} NCCL INFO comm 0x55d8db2{r:05x} rank {r} nRanks 64 nNodes 8 localRanks 8 localRank {d} MNNVL 0\n"
            )
    return "".join(lines).encode()


@pytest.fixture(scope="module")
def big_log(tmp_path_factory):
    """About 200 MB of NCCL INFO lines ending with one OOM line: (path, lines)."""
    path = tmp_path_factory.mktemp("big") / "big.log"
    block = _nccl_block()
    size = lines = 0
    with open(path, "wb") as fh:
        while size < 200 << 20:
            fh.write(block)
            size += len(block)
            lines += block.count(b"\n")
        fh.write(ERROR_LINE)
    return path, lines + 1


def _session(sid: int) -> list[int]:
    return processes_where(lambda f: int(f[3]) == sid)


def _children(pid: int) -> list[int]:
    return processes_where(lambda f: int(f[1]) == pid)


def _start_doctor(args, tmp_path, workers: int = 2) -> tuple:
    """``python -m ncclnb doctor ARGS`` in a session of its own, output to files
    (a worker left behind must not hold a pipe the test waits on)."""
    out, err = open(tmp_path / "stdout", "wb"), open(tmp_path / "stderr", "wb")
    env = dict(os.environ, PYTHONUNBUFFERED="1", NCCLNB_DOCTOR_WORKERS=str(workers))
    proc = subprocess.Popen(
        [sys.executable, "-m", "ncclnb", "doctor", *args],
        stdout=out,
        stderr=err,
        stdin=subprocess.DEVNULL,
        cwd=REPO,
        env=env,
        start_new_session=True,
    )
    out.close()
    err.close()
    return proc, tmp_path / "stdout", tmp_path / "stderr"


def _kill_session(proc) -> None:
    for pid in _session(proc.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        proc.kill()
    except OSError:
        pass
    proc.wait(timeout=DEADLINE_S)


def _workers_of(proc) -> list[int]:
    def found():
        assert proc.poll() is None, "the doctor ended before its workers were seen"
        return _children(proc.pid)

    kids = wait_for(found)
    assert kids, "no worker process appeared"
    return kids


def _one_line(proc) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout == "" and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    return lines[0]


def _feed(path, data: bytes, chunks: int = 1) -> threading.Thread:
    """Write ``data`` into the FIFO ``path`` from a thread (open blocks until a reader comes)."""

    def write():
        try:
            with open(path, "wb") as fh:
                step = max(1, len(data) // chunks)
                for i in range(0, len(data), step):
                    fh.write(data[i : i + step])
                    fh.flush()
        except BrokenPipeError:
            pass

    t = threading.Thread(target=write, daemon=True)
    t.start()
    return t


def _unblock(path, writer: threading.Thread) -> None:
    """A writer still waiting for a reader (the doctor never opened the FIFO): let it finish."""
    if writer.is_alive():
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            writer.join(5)
            os.close(fd)
        except OSError:
            pass
    writer.join(5)


# ---- 1. no process left behind ------------------------------------------------
@needs_proc
@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP", "SIGKILL"])
def test_signal_to_the_doctor_leaves_no_worker(big_log, tmp_path, signame):
    sig = getattr(signal, signame)
    path, _ = big_log
    proc, _, err = _start_doctor([str(path)], tmp_path)
    try:
        _workers_of(proc)
        os.kill(proc.pid, sig)  # the parent alone, as `timeout` or a closing terminal does
        rc = proc.wait(timeout=DEADLINE_S)
        wait_for(lambda: not _session(proc.pid), 20)
        left = _session(proc.pid)
        assert left == [], f"processes of the doctor's session still alive after {signame}: {left}"
        if sig != signal.SIGKILL:
            stderr = err.read_text()
            assert rc == 128 + sig, (rc, stderr[-2000:])
            assert stderr.strip().splitlines() == [f"ncclnb doctor: interrupted (signal {int(sig)})"], stderr[-2000:]
    finally:
        _kill_session(proc)


# ---- 2. reads what it says it read --------------------------------------------
def test_parallel_scan_reads_the_file_it_opened_when_the_path_is_replaced(tmp_path):
    block = _nccl_block()
    data = block * 20 + ERROR_LINE
    path = tmp_path / "rank3.log"
    path.write_bytes(data)
    reference = list(scan.LineScanner(io.BytesIO(data), max_line=400))
    it = iter(scan.ParallelScan(str(path), 2, chunk=4096, max_line=400, step=50_000))
    got = [next(it)]
    fresh = tmp_path / "fresh.log"
    fresh.write_bytes(b"a new, short log after rotation\n")
    os.replace(fresh, path)  # logrotate: the path now names another file
    got.extend(it)
    assert got == reference


@needs_proc
@pytest.mark.parametrize("change", ["replaced", "truncated"])
def test_doctor_says_a_log_changed_during_a_parallel_scan(big_log, tmp_path, change):
    src, lines = big_log
    path = tmp_path / "rank3.log"
    if change == "replaced":
        os.link(src, path)  # replacing the path leaves the shared big log alone
    else:
        path.write_bytes(src.read_bytes())
    for attempt in range(3):
        proc, out, err = _start_doctor(["--json", str(path)], tmp_path)
        try:
            _workers_of(proc)
            os.kill(proc.pid, signal.SIGSTOP)
            wait_for(lambda: (stat_fields(proc.pid) or ["?"])[0] in "Tt")
            if not _children(proc.pid):  # it finished its scan before it stopped: try again
                os.kill(proc.pid, signal.SIGCONT)
                proc.wait(timeout=DEADLINE_S)
                continue
            if change == "replaced":
                fresh = tmp_path / "fresh.log"
                fresh.write_bytes(b"a new, short log after rotation\n")
                os.replace(fresh, path)
            else:
                os.truncate(path, 1 << 20)
            os.kill(proc.pid, signal.SIGCONT)
            assert proc.wait(timeout=DEADLINE_S * 2) == 0, err.read_text()[-2000:]
        finally:
            _kill_session(proc)
        break
    else:
        pytest.skip("the scan always finished before the doctor could be stopped")
    diag = json.loads(out.read_text())
    warning = [ln for ln in err.read_text().splitlines() if "changed while it was read" in ln]
    assert len(warning) == 1 and str(path) in warning[0], err.read_text()[-2000:]
    changed = [f for f in diag["findings"] if f["rule"] == "input_changed"]
    assert len(changed) == 1 and changed[0]["severity"] == "info"
    assert changed[0]["title"].startswith(f"{path} changed while it was read")
    if change == "replaced":
        # the file as opened was read to its end: the OOM on its last line is there
        assert "replaced" in changed[0]["title"]
        oom = next(f for f in diag["findings"] if f["rule"] == "cuda_oom")
        assert oom["evidence"][0]["line"] == lines
        assert diag["lines_read"] == lines
    else:
        assert "shrank" in changed[0]["title"]


# ---- 3. FIFOs, process substitution, /dev/stdin ----------------------------------
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_plain_and_gzip(tmp_path):
    log = b"step 1 loss 0.3\n" * 500 + ERROR_LINE
    plain, packed = tmp_path / "rank3.log", tmp_path / "rank3.log.gz"
    os.mkfifo(plain)
    os.mkfifo(packed)
    writers = [_feed(plain, log, chunks=7), _feed(packed, gzip.compress(log), chunks=300)]  # short writes
    try:
        proc = run_cli("doctor", "--json", str(plain), str(packed), timeout=DEADLINE_S)
    finally:
        for path, w in zip((plain, packed), writers):
            _unblock(path, w)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    oom = out["findings"][0]
    assert oom["rule"] == "cuda_oom" and oom["ranks"] == [3]
    assert [e["source"] for e in oom["evidence"]] == [str(plain), str(packed)]
    assert out["lines_read"] == 2 * 501


def test_process_substitution_and_dev_stdin(tmp_path):
    if not os.path.exists("/dev/stdin") or not os.path.exists("/bin/bash"):
        pytest.skip("needs bash and /dev/stdin")
    log = tmp_path / "rank3.log"
    log.write_bytes(ERROR_LINE)
    proc = subprocess.run(
        ["/bin/bash", "-c", 'exec "$0" -m ncclnb doctor --json <(cat "$1")', sys.executable, str(log)],
        capture_output=True,
        timeout=DEADLINE_S,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert json.loads(proc.stdout)["findings"][0]["rule"] == "cuda_oom"
    proc = run_cli("doctor", "--json", "/dev/stdin", input=gzip.compress(ERROR_LINE), timeout=DEADLINE_S)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["findings"][0]["rule"] == "cuda_oom"
    # '-' sniffs gzip too
    proc = run_cli("doctor", "--json", "-", input=gzip.compress(ERROR_LINE), timeout=DEADLINE_S)
    assert json.loads(proc.stdout)["findings"][0]["rule"] == "cuda_oom"


# ---- 4. endless or binary streams ------------------------------------------------
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_endless_binary_device_is_not_a_log(device):
    if not os.path.exists(device):
        pytest.skip(f"no {device}")
    line = _one_line(run_cli("doctor", device, timeout=DEADLINE_S * 2))
    assert line == f"ncclnb doctor: error: {device}: binary data, not a log"
    with pytest.raises(DoctorInputError, match="binary data, not a log"):
        diagnose(device)


def test_stdin_of_zeros_is_not_a_log():
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    with open("/dev/zero", "rb") as zero:
        done = subprocess.run(
            [sys.executable, "-m", "ncclnb", "doctor", "-"], stdin=zero, capture_output=True, timeout=DEADLINE_S * 2, cwd=REPO
        )
    proc = subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())
    assert _one_line(proc) == "ncclnb doctor: error: <stdin>: binary data, not a log"


def test_text_stream_without_a_line_break_stops(tmp_path):
    err = open(tmp_path / "stderr", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "ncclnb", "doctor", "-"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err, cwd=REPO
    )
    err.close()
    block = b"A" * (1 << 20)

    def write():  # at most 1 GiB, so that a doctor that reads forever still ends
        try:
            for _ in range(1024):
                proc.stdin.write(block)
            proc.stdin.close()
        except (BrokenPipeError, ValueError, OSError):
            pass

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        rc = proc.wait(timeout=DEADLINE_S * 2)
    finally:
        proc.kill()
        proc.wait()
        writer.join(DEADLINE_S)
    stderr = (tmp_path / "stderr").read_text()
    assert rc == 2, stderr[-2000:]
    assert stderr.strip().splitlines() == ["ncclnb doctor: error: <stdin>: no line break in the first 256 MiB, not a log"]


def test_text_given_in_python_is_always_read():
    # the Python twin's promise for text passed in: any content yields a Diagnosis
    assert diagnose(b"\x00" * 100_000).findings == ()
    assert diagnose(b"\x00" * 100_000 + b"\n" + ERROR_LINE).findings[0].rule == "cuda_oom"


# ---- 5. the rank table cap --------------------------------------------------------
def test_rank_table_cut_is_said_and_blamed_rows_kept():
    n = MAX_RANKS + 1000
    lines = [
        f"node{r // 8:04d}:{20000 + r}:{20000 + r} [{r % 8}] NCCL INFO comm 0x55d8 rank {r} nRanks {n} "
        f"nNodes {n // 8} localRanks 8 localRank {r % 8} MNNVL 0"
        for r in range(n)
    ]
    lines.append(f"[rank{n - 1}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    diag = diagnose("\n".join(lines).encode())
    oom = diag.findings[0]
    assert oom.rule == "cuda_oom" and oom.ranks == (n - 1,)
    blamed = [r for r in diag.ranks if r.rank == n - 1]
    assert len(blamed) == 1 and "out of memory" in blamed[0].first_error
    cut = [f for f in diag.findings if f.rule == "rank_table_cut"]
    assert len(cut) == 1 and cut[0].severity == "info"
    assert cut[0].title == f"Rank table cut at {MAX_RANKS} ranks: 999 more ranks not shown"
    assert len(diag.ranks) == MAX_RANKS + 1


# ---- 6. directories that cannot be walked whole -----------------------------------
def _drop_dac():
    """In the child, as root: give up the capabilities that let root read any
    directory, so a mode-000 directory cannot be listed (PR_CAPBSET_DROP)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "PR_CAPBSET_DROP")


@needs_proc
def test_unlistable_subdirectory_is_skipped_and_named(tmp_path):
    d = tmp_path / "logs"
    d.mkdir()
    (d / "rank0.log").write_bytes(ERROR_LINE.replace(b"rank3", b"rank0"))
    sub = d / "attempt1"
    sub.mkdir()
    (sub / "rank1.log").write_bytes(b"step 1\n")
    sub.chmod(0)
    preexec = _drop_dac if os.geteuid() == 0 else None
    try:
        probe = subprocess.run(
            [sys.executable, "-c", "import os, sys; os.listdir(sys.argv[1])", str(sub)],
            capture_output=True,
            preexec_fn=preexec,
            timeout=DEADLINE_S,
        )
        if probe.returncode == 0:
            pytest.skip("cannot make a directory this process cannot list")
        proc = subprocess.run(
            [sys.executable, "-m", "ncclnb", "doctor", "--json", str(d)],
            capture_output=True,
            preexec_fn=preexec,
            timeout=DEADLINE_S,
            cwd=REPO,
        )
    finally:
        sub.chmod(0o755)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    out = json.loads(proc.stdout)
    assert out["findings"][0]["rule"] == "cuda_oom" and out["findings"][0]["ranks"] == [0]
    skipped = [f for f in out["findings"] if f["rule"] == "input_skipped"]
    assert [f["title"] for f in skipped] == [f"{sub}: Permission denied; skipped"]
    assert skipped[0]["severity"] == "info"


def test_symlink_loop_and_dangling_symlink_in_a_directory(tmp_path):
    d = tmp_path / "logs"
    d.mkdir()
    (d / "rank0.log").write_bytes(ERROR_LINE.replace(b"rank3", b"rank0"))
    os.symlink("loop.log", d / "loop.log")
    os.symlink("gone.log", d / "rank1.log")
    diag = diagnose(str(d))
    assert diag.findings[0].rule == "cuda_oom"
    skipped = [f.title for f in diag.findings if f.rule == "input_skipped"]
    assert skipped == [
        f"2 inputs skipped: {d / 'loop.log'}: symbolic link loop; {d / 'rank1.log'}: dangling symbolic link (to gone.log)"
    ]
    assert diag.sources == (str(d / "rank0.log"),)


def test_symlink_loop_path_is_one_line(tmp_path):
    loop = tmp_path / "loop.log"
    os.symlink("loop.log", loop)
    assert _one_line(run_cli("doctor", str(loop))) == f"ncclnb doctor: error: {loop}: symbolic link loop"
    dangling = tmp_path / "rank1.log"
    os.symlink("gone.log", dangling)
    assert (
        _one_line(run_cli("doctor", str(dangling))) == f"ncclnb doctor: error: {dangling}: dangling symbolic link (to gone.log)"
    )


# ---- 7. no log text at all ----------------------------------------------------------
def test_empty_directory_is_one_line_exit_2(tmp_path):
    d = tmp_path / "empty"
    d.mkdir()
    (d / ".hidden").write_bytes(ERROR_LINE)
    assert _one_line(run_cli("doctor", str(d))) == f"ncclnb doctor: error: {d}: no log files in this directory"


def test_directory_of_binary_files_is_one_line_exit_2(tmp_path):
    d = tmp_path / "cores"
    d.mkdir()
    (d / "core.1234").write_bytes(bytes(range(256)) * 400)
    (d / "rank0.log").write_bytes(b"\x00" * 8192)
    line = _one_line(run_cli("doctor", str(d)))
    assert line == f"ncclnb doctor: error: {d}: no log text in it (2 files, all binary data)"
    single = d / "core.1234"
    assert _one_line(run_cli("doctor", str(single))) == f"ncclnb doctor: error: {single}: binary data, not a log"


def test_binary_file_beside_logs_is_skipped_and_named(tmp_path):
    d = tmp_path / "logs"
    d.mkdir()
    (d / "rank0.log").write_bytes(ERROR_LINE.replace(b"rank3", b"rank0"))
    (d / "core.1234").write_bytes(b"\x7fELF\x02\x01\x01" + b"\x00" * 100_000)
    proc = run_cli("doctor", "--json", str(d))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["findings"][0]["rule"] == "cuda_oom"
    skipped = [f["title"] for f in out["findings"] if f["rule"] == "input_skipped"]
    assert skipped == [f"{d / 'core.1234'}: binary data, not a log; skipped"]
