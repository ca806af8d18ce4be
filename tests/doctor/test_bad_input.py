"""Bad input: never a traceback; unreadable paths exit 2 with one line."""

from __future__ import annotations

import gzip
import json
import os
import random

import pytest

from ncclnb.doctor import DoctorInputError, diagnose
from tests.conftest import run_cli

ERROR_LINE = b"[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"


def _ok_json(proc) -> dict:
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout)


def test_missing_path_exits_2_with_one_line(tmp_path):
    proc = run_cli("doctor", str(tmp_path / "nope" / "rank0.log"))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "No such file or directory" in proc.stderr and "rank0.log" in proc.stderr


def test_missing_pathlike_str_raises_in_python_but_text_is_text(tmp_path):
    with pytest.raises(DoctorInputError):
        diagnose(str(tmp_path / "missing.log"))
    with pytest.raises(OSError):
        diagnose("logs/rank0.txt")
    # a short str without a path shape is log text
    assert diagnose("Invalid rank requested : 7/4").findings[0].category == "rank_world_size_mismatch"


def test_unreadable_file_exits_2(tmp_path):
    p = tmp_path / "secret.log"
    p.write_text("x\n")
    p.chmod(0)
    if os.access(p, os.R_OK):  # running as root: permissions do not apply
        pytest.skip("root can read any file")
    proc = run_cli("doctor", str(p))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1


def test_binary_and_invalid_utf8(tmp_path):
    rng = random.Random(7)
    blob = bytes(rng.randrange(256) for _ in range(200_000))
    p = tmp_path / "core.bin"
    p.write_bytes(blob + b"\n\xff\xfe" + ERROR_LINE.replace(b"CUDA", b"CUDA\xc3") + blob[:1000])
    out = _ok_json(run_cli("doctor", "--json", str(p)))
    assert out["lines_read"] > 0
    # the line with a broken UTF-8 byte still reads as an OOM (decoded with replacement)
    diag = diagnose(b"\xff\xfe\n" + ERROR_LINE)
    assert diag.findings[0].category == "oom_or_resource"


def test_empty_file(tmp_path):
    # no log text at all is unreadable input, not "no known failure" (more in test_inputs.py)
    p = tmp_path / "empty.log"
    p.write_bytes(b"")
    proc = run_cli("doctor", "--json", str(p))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [f"ncclnb doctor: error: {p}: empty, no log text"]


def test_100mb_line_without_newline(tmp_path):
    p = tmp_path / "huge.log"
    with open(p, "wb") as fh:
        fh.write(ERROR_LINE)
        block = b"A" * (1 << 20)
        for _ in range(100):
            fh.write(block)
        fh.write(b"\n" + ERROR_LINE.replace(b"rank1", b"rank2"))
    diag = diagnose(str(p))
    assert diag.lines_read == 3
    oom = next(f for f in diag.findings if f.category == "oom_or_resource")
    assert [e.line for e in oom.evidence] == [1, 3]
    assert oom.ranks == (1, 2)


def test_directory_with_thousands_of_small_files(tmp_path):
    d = tmp_path / "ranks"
    d.mkdir()
    for r in range(2000):
        (d / f"rank{r}.log").write_bytes(b"step 1 loss 0.1\n" + (ERROR_LINE.replace(b"[rank1]: ", b"") if r == 1234 else b""))
    diag = diagnose(str(d))
    assert len(diag.sources) == 2000
    top = diag.findings[0]
    assert top.category == "oom_or_resource"
    assert top.ranks == (1234,)  # the rank comes from the file name
    assert top.evidence[0].source.endswith("rank1234.log")


def test_truncated_gz(tmp_path):
    data = gzip.compress(b"hello\n" * 10000 + ERROR_LINE + b"bye\n" * 200000)
    p = tmp_path / "rank1.log.gz"
    p.write_bytes(data[: len(data) // 2])
    out = _ok_json(run_cli("doctor", "--json", str(p)))
    rules = [f["rule"] for f in out["findings"]]
    assert "cuda_oom" in rules and "input_truncated" in rules


def test_stdin_and_gz_whole(tmp_path):
    p = tmp_path / "r.log.gz"
    p.write_bytes(gzip.compress(ERROR_LINE))
    assert _ok_json(run_cli("doctor", "--json", str(p)))["findings"][0]["rule"] == "cuda_oom"
    assert _ok_json(run_cli("doctor", "--json", "-", input=ERROR_LINE))["findings"][0]["rule"] == "cuda_oom"


def test_text_report_and_top(tmp_path):
    p = tmp_path / "r.log"
    p.write_bytes(ERROR_LINE + b"h:1:1 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal\n")
    proc = run_cli("doctor", str(p))
    assert proc.returncode == 0
    assert "Most likely: A rank ran out of GPU memory" in proc.stdout
    assert f"{p}:1" in proc.stdout and "\x1b[" not in proc.stdout
    out = _ok_json(run_cli("doctor", "--json", "--top", "1", str(p)))
    assert len(out["findings"]) == 1
    f = out["findings"][0]
    assert {"rule", "category", "severity", "confidence", "title", "evidence", "fix", "ranks"} <= set(f)
    assert f["evidence"][0] == {"source": str(p), "line": 1, "text": ERROR_LINE.decode().strip()}


def test_no_args_is_usage_error():
    proc = run_cli("doctor")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
