"""Hostile flight-recorder dumps and numbers: memory stays bounded, a dump
that cannot be read is skipped with a one-line reason while the other inputs
are still diagnosed, numbers from logs and dumps are ASCII-only and bounded,
and a genuine bug in the dump reader is not swallowed.

Memory is asserted by running the input in a child process whose address
space is limited to 1.5 GB (``RLIMIT_AS``: past it, Python raises
MemoryError and the child dies with a traceback), and whose peak RSS
(``VmHWM``) must stay under 1 GiB, with no dump refused for lack of
memory (a MemoryError caught as a reason would hide the problem). No timed
assertions.
"""

from __future__ import annotations

import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ncclnb import diagnose
from ncclnb.doctor import DoctorInputError
from ncclnb.doctor import flight_recorder as fr
from ncclnb.doctor.flight_recorder import analyze_dumps, dump_rank_status
from ncclnb.model import Diagnosis, Finding

REPO = Path(__file__).resolve().parents[2]
FR_DIR = Path(__file__).resolve().parent / "fr"
AS_LIMIT = 1536 << 20
CUDA_ERROR = "RuntimeError: NCCL error in: x.cpp:1, unhandled cuda error\n"
DUMP_HEAD = b'{"pg_config":{},"version":"2.4","entries":['


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


# Runs ``python ARGV`` and writes the child's own peak RSS (VmHWM, KiB) to
# $NCCLNB_TEST_HWM at exit. Not ru_maxrss: that starts at the RSS of the
# parent's memory image when it forked, so a large pytest process would be
# counted against the child.
_HWM_WRAPPER = r"""
import atexit, os, runpy, sys
def _hwm():
    with open("/proc/self/status") as fh:
        kib = next(line.split()[1] for line in fh if line.startswith("VmHWM:"))
    with open(os.environ["NCCLNB_TEST_HWM"], "w") as out:
        out.write(kib)
atexit.register(_hwm)
argv = sys.argv[1:]
if argv[0] == "-m":
    sys.argv = [argv[1], *argv[2:]]
    runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
else:
    sys.argv = ["-c", *argv[2:]]
    exec(compile(argv[1], "<child>", "exec"), {"__name__": "__main__"})
"""


def _limited(*argv: str) -> subprocess.CompletedProcess:
    """Run ``python ARGV`` from the repository with 1.5 GB of address space;
    the result also carries the child's peak RSS in KiB (``maxrss_kib``)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile("r") as hwm:
        proc = subprocess.Popen(
            [sys.executable, "-c", _HWM_WRAPPER, *argv],
            stdout=out,
            stderr=err,
            cwd=REPO,
            preexec_fn=_limit_memory,
            env=dict(os.environ, NCCLNB_DOCTOR_WORKERS="0", NCCLNB_TEST_HWM=hwm.name),
        )
        try:
            proc.wait(timeout=900)  # never hang the suite; not a timing assertion
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        out.seek(0)
        err.seek(0)
        done = subprocess.CompletedProcess(
            proc.args, proc.returncode, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace")
        )
        text = hwm.read().strip()
    done.maxrss_kib = int(text) if text else 0
    assert text or proc.returncode != 0, f"the child wrote no peak RSS: {done.stderr[-500:]}"
    return done


def _doctor(*args: str) -> subprocess.CompletedProcess:
    return _limited("-m", "ncclnb", "doctor", *args)


DIAGNOSE_CHILD = """
import json, sys
from ncclnb import diagnose
d = diagnose(sys.argv[1])
print(json.dumps({"rules": [f.rule for f in d.findings], "titles": [f.title for f in d.findings],
                  "evidence": [e.text for f in d.findings for e in f.evidence if f.rule.startswith("fr.")],
                  "ranks": [r.rank for r in d.ranks]}))
"""
MAX_RSS_KIB = 1 << 20  # 1 GiB: far above what a bounded read needs, far below what these inputs expand to


def _diagnose_limited(path) -> dict:
    proc = _limited("-c", DIAGNOSE_CHILD, str(path))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-800:]
    out = json.loads(proc.stdout)
    out["maxrss_kib"] = proc.maxrss_kib
    return out


def _ok(proc) -> dict:
    assert proc.returncode == 0, proc.stderr[-800:]
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr, proc.stderr[-800:]
    out = json.loads(proc.stdout)
    out["maxrss_kib"] = proc.maxrss_kib
    return out


def _skipped(out: dict) -> list:
    """Titles of the findings that name a dump that was not read."""
    return [t for r, t in zip(out["rules"], out["titles"]) if r in ("fr.dump_not_read", "fr.bad_dump")]


def _diagnosed(out: dict) -> bool:
    """Something other than a note about dumps was found (the log beside them)."""
    return any(not r.startswith("fr.") for r in out["rules"])


def _as_lists(out: dict) -> dict:
    return {
        "rules": [f["rule"] for f in out["findings"]],
        "titles": [f["title"] for f in out["findings"]],
        "evidence": [e["text"] for f in out["findings"] for e in f["evidence"] if f["rule"].startswith("fr.")],
        "ranks": [r["rank"] for r in out["ranks"]],
        "last_ops": [r["last_op"] for r in out["ranks"]],
        "maxrss_kib": out["maxrss_kib"],
    }


def _bounded(out: dict) -> None:
    """Memory stayed small, by the caps, not by running out (a MemoryError caught as a reason)."""
    assert out["maxrss_kib"] < MAX_RSS_KIB, out["maxrss_kib"]
    assert not any("memory" in t for t in out["evidence"] + _skipped(out))


def _entry(seq: int, name: str = "nccl:all_reduce", **extra) -> dict:
    e = {
        "record_id": seq,
        "process_group": ["0", "default_pg"],
        "collective_seq_id": seq,
        "p2p_seq_id": 0,
        "profiling_name": name,
        "input_sizes": [[16]],
        "output_sizes": [[16]],
        "input_dtypes": ["Float"],
        "output_dtypes": ["Float"],
        "state": "completed",
        "is_p2p": False,
        "timeout_ms": 600000,
        "time_created_ns": 1_700_000_000_000_000_000 + seq,
    }
    e.update(extra)
    return e


def _dump(entries: list, **top) -> dict:
    d = {
        "version": "2.10",
        "comm_lib_version": "2.21.5",
        "pg_status": {},
        "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}},
        "entries": entries,
    }
    d.update(top)
    return d


# ----------------------------------------------------------------- 1. dumps that expand to gigabytes


def test_cli_small_gz_dump_of_millions_of_tiny_entries_is_skipped_within_1_5_gb(tmp_path):
    """0.5 MB of gzip holding ~80 million empty entries (240 MB of JSON)."""
    with gzip.open(tmp_path / "rank0.json.gz", "wb", compresslevel=9) as fh:
        fh.write(DUMP_HEAD)
        block = b"[]," * (1 << 20)
        for _ in range(80):
            fh.write(block)
        fh.write(b"[]]}")
    assert (tmp_path / "rank0.json.gz").stat().st_size < 600_000
    (tmp_path / "rank1.log").write_text(CUDA_ERROR)
    out = _as_lists(_ok(_doctor("--json", str(tmp_path))))
    (skipped,) = _skipped(out)
    assert "rank0.json.gz" in skipped and "larger than" in skipped
    assert _diagnosed(out)  # the log beside the dump was diagnosed too
    _bounded(out)


def test_cli_gz_dump_of_a_few_huge_strings_is_skipped_within_1_5_gb(tmp_path):
    with gzip.open(tmp_path / "rank0.json.gz", "wb", compresslevel=9) as fh:
        fh.write(DUMP_HEAD + b'["')
        block = b"A" * (1 << 20)
        for _ in range(300):
            fh.write(block)
        fh.write(b'"]]}')
    (tmp_path / "rank1.log").write_text(CUDA_ERROR)
    out = _as_lists(_ok(_doctor("--json", str(tmp_path))))
    (skipped,) = _skipped(out)
    assert "larger than" in skipped
    assert _diagnosed(out)
    _bounded(out)


def test_plain_dump_file_over_the_byte_cap_is_skipped_and_the_rest_diagnosed(tmp_path):
    """A plain 100 MB dump-shaped file through ncclnb.diagnose(dir), in a limited child."""
    with open(tmp_path / "rank0.json", "wb") as fh:
        fh.write(DUMP_HEAD)
        block = b"[]," * (1 << 20)
        for _ in range(33):
            fh.write(block)
        fh.write(b"[]]}")
    (tmp_path / "rank1.log").write_text(CUDA_ERROR)
    out = _diagnose_limited(tmp_path)
    (skipped,) = _skipped(out)
    assert "rank0.json" in skipped and "larger than" in skipped
    assert 1 in out["ranks"] and _diagnosed(out)
    _bounded(out)


def test_many_small_gz_dumps_together_stay_within_1_5_gb(tmp_path):
    """Each dump stays under the per-file caps (bytes, JSON values) but 16 of
    them held ~2 GB once parsed, all kept until the end of the diagnosis."""
    body = DUMP_HEAD + b",".join([b'"ab"'] * 1_990_000) + b"]}"
    packed = gzip.compress(body, compresslevel=9)
    for i in range(16):
        (tmp_path / f"rank{i}.json.gz").write_bytes(packed)
    (tmp_path / "rank16.log").write_text(CUDA_ERROR)
    out = _diagnose_limited(tmp_path)
    skipped = _skipped(out)
    assert skipped and "rank0.json.gz" in skipped[0]
    assert 16 in out["ranks"] and _diagnosed(out)
    _bounded(out)


def _wide_dump_bytes(n_entries: int, tensors: int = 8, dims: int = 64) -> bytes:
    """A dump of ``n_entries`` well-formed all_reduce entries, each with
    ``tensors`` tensors of ``dims`` distinct sizes: ~1.8 million JSON values
    for 3,500 entries, under the per-file caps."""
    parts = [DUMP_HEAD]
    for i in range(n_entries):
        sizes = ",".join("[" + ",".join(str((i * tensors + j) * dims + k) for k in range(dims)) + "]" for j in range(tensors))
        parts.append(
            b'{"process_group":["0","default_pg"],"collective_seq_id":%d,"profiling_name":"nccl:all_reduce",'
            b'"input_sizes":[%s],"record_id":%d},' % (i, sizes.encode(), i)
        )
    parts[-1] = parts[-1][:-1]
    parts.append(b"]}")
    return b"".join(parts)


def test_many_dumps_of_valid_entries_keep_memory_bounded(tmp_path):
    """Dumps whose every entry is well formed and under every per-file cap:
    20 of them held ~1.8 GB (the parsed JSON of each, kept to the end). What
    is kept across all of them is bounded now; the dumps past the budget are
    named with why, the others analysed, the log beside them diagnosed."""
    (tmp_path / "rank0.json.gz").write_bytes(gzip.compress(_wide_dump_bytes(3500), compresslevel=6))
    for i in range(1, 20):  # the same bytes under 20 names, without 20 copies on disk
        os.link(tmp_path / "rank0.json.gz", tmp_path / f"rank{i}.json.gz")
    (tmp_path / "rank20.log").write_text(CUDA_ERROR)
    out = _as_lists(_ok(_doctor("--json", str(tmp_path))))
    assert _diagnosed(out)
    _bounded(out)
    assert "all_reduce" in out["last_ops"]  # the dumps within the budget were analysed
    skipped = _skipped(out)
    assert skipped and "MiB" in skipped[0]  # those past it are named, with why


# ----------------------------------------------------------------- 2. nesting


def test_cli_deeply_nested_dump_is_skipped_with_a_reason_and_other_logs_diagnosed(tmp_path):
    (tmp_path / "rank0.json").write_text('{"pg_config":{},"version":"2.4","entries": ' + "[" * 10000)
    (tmp_path / "rank1.json").write_text('{"pg_config":{},"version":"2.4","entries":[' + "[" * 10000 + "]" * 10000 + "]}")
    (tmp_path / "rank2.log").write_text(CUDA_ERROR)
    out = _as_lists(_ok(_doctor("--json", str(tmp_path))))
    (skipped,) = _skipped(out)
    assert "\n" not in skipped and ("nested too deeply" in skipped or "not valid JSON" in skipped)
    assert _diagnosed(out)


def test_deeply_nested_text_inside_a_dump_does_not_lose_the_dump():
    """pg_config writes ``ranks`` as JSON text; a deeply nested one is ignored,
    the dump itself is still read (it used to be dropped whole)."""
    deep = "[" * 100_000 + "]" * 100_000
    dumps = [("rank0.json", _dump([_entry(1)], pg_config={"0": {"ranks": deep}})), ("rank1.json", _dump([_entry(1)]))]
    assert [f for f in analyze_dumps(dumps) if f.rule == "fr.bad_dump"] == []
    assert [r.rank for r in dump_rank_status(dumps)] == [0, 1]


# ----------------------------------------------------------------- 3. numbers

HUGE = "9" * 5000


@pytest.mark.parametrize("peer", [HUGE, "١", "³", "1" * 10])
def test_p2p_peer_numbers_too_long_or_not_ascii_never_abort(tmp_path, peer):
    """``nccl:send 0->N`` with N past int()'s digit limit aborted the doctor
    with a ValueError; Unicode digits were read as ranks."""
    send = _dump([_entry(1, f"nccl:send 0->{peer}", is_p2p=True)])
    recv = _dump([_entry(1, f"nccl:recv 1<-{peer}", is_p2p=True)])
    (tmp_path / "rank0.json").write_text(json.dumps(send))
    (tmp_path / "rank1.json").write_text(json.dumps(recv))
    (tmp_path / "rank2.log").write_text(CUDA_ERROR)
    diag = diagnose(str(tmp_path))
    assert diag.findings
    assert not [f for f in diag.findings if f.category == "p2p_pairing"]
    assert all(isinstance(r, int) and r < 10**9 for f in diag.findings for r in f.ranks)


def test_huge_integers_in_dump_fields_never_abort():
    """Timestamps and timeouts are JSON integers of any size; arithmetic on
    them (seconds between collectives) overflowed a float."""
    big = 10**400
    three = {"0": {"ranks": "[0, 1, 2]"}}
    d0 = _dump([_entry(1, time_created_ns=0), _entry(2, time_created_ns=big, timeout_ms=big)], pg_config=three)
    d1 = _dump([_entry(1, time_created_ns=0), _entry(2, time_created_ns=1, timeout_ms=1)], pg_config=three)
    d2 = _dump([_entry(1, time_created_ns=0), _entry(2, time_created_ns=1, timeout_ms=1)], pg_config=three)
    findings = analyze_dumps([("rank0.json", d0), ("rank1.json", d1), ("rank2.json", d2)])
    assert all(isinstance(f, Finding) for f in findings)
    d3 = _dump([_entry(big, record_id=big, p2p_seq_id=big)], rank=big)
    assert all(f.severity == "info" for f in analyze_dumps([("rank3.json", d3)]))


@pytest.mark.parametrize(
    "text, expect",
    [
        ("[rank1234567890]: " + CUDA_ERROR, None),  # ten digits: not a rank
        ("[rank123456789]: " + CUDA_ERROR, 123456789),  # nine digits: a rank
        ("[rank³]: " + CUDA_ERROR, None),
        ("[rank٣]: " + CUDA_ERROR, None),
    ],
)
def test_rank_prefixes_are_ascii_and_at_most_nine_digits(text, expect):
    diag = diagnose(text.encode())
    ranks = [r.rank for r in diag.ranks if r.rank is not None]
    assert ranks == ([] if expect is None else [expect])


def test_log_numbers_past_nine_digits_are_not_ranks_or_sizes():
    lines = [
        "comm 0x1 rank 1234567890 nRanks 1234567891 nNodes 1 localRanks 1 localRank 0 - Init COMPLETE",
        "Initializing distributed: GLOBAL_RANK: 1234567890, MEMBER: 1/4",
        "RuntimeError: [enforce fail at context.cc:23] rank < size. 1234567890 vs 4",
        CUDA_ERROR.strip(),
    ]
    diag = diagnose("\n".join(lines).encode())
    assert diag.findings
    assert all(r < 10**9 for f in diag.findings for r in f.ranks)
    assert all(r.rank is None or r.rank < 10**9 for r in diag.ranks)


def test_nccl_version_parts_are_bounded():
    """A version part of 5,000 digits is not a version (it was kept whole and
    printed in the version table)."""
    log = f"[rank0]: NCCL version 2.19.{HUGE}+cuda12.2\n[rank1]: NCCL version 2.18.1+cuda12.1\n"
    diag = diagnose(log.encode())
    assert [r.nccl_version for r in diag.ranks if r.nccl_version] == ["2.18.1+cuda12.1"]
    assert not [f for f in diag.findings if f.category == "version_mismatch"]


# ----------------------------------------------------------------- 4. genuine bugs are not swallowed


def test_a_genuine_bug_in_the_dump_reader_shows_as_a_traceback(monkeypatch):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug, not bad input")

    monkeypatch.setattr(fr, "_parse_entry", broken)
    good = json.loads((FR_DIR / "healthy" / "rank0.json").read_text())
    with pytest.raises(ZeroDivisionError):
        analyze_dumps([("rank0.json", good)])


def test_bad_input_is_still_a_skipped_dump_with_one_line():
    dumps = [
        ("rank0.json", _dump([_entry(1)])),
        ("rank1.json", _dump([{"profiling_name": 3}])),
        ("rank2.json", _dump([_entry(1, input_sizes=[[1] * 10_000])])),
        ("rank3.json", _dump([_entry(1, profiling_name="nccl:" + "x" * 100_000)])),
    ]
    bad = [f for f in analyze_dumps(dumps) if f.rule == "fr.bad_dump"]
    assert len(bad) == 3 and all("\n" not in f.title and len(f.title) < 300 for f in bad)


# ----------------------------------------------------------------- property: any dump-shaped JSON

_DIGITS = st.sampled_from(["0", "1", "7", "١", "³", "٣", "９", "1" * 10, "9" * 30])
_NAMES = st.builds(
    lambda op, a, b: f"nccl:{op} {a}{'->' if op == 'send' else '<-'}{b}", st.sampled_from(["send", "recv"]), _DIGITS, _DIGITS
) | st.sampled_from(["nccl:all_reduce", "gloo:broadcast", "nccl:coalesced", "", ":", "nccl:", "x" * 300])
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.sampled_from([10**300, -1, 0])
    | st.floats(allow_nan=False)
    | st.text(max_size=12)
    | _DIGITS
    | _NAMES
)
_JSON = st.recursive(
    _SCALARS, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids, max_size=4), max_leaves=25
)
_ENTRY_KEYS = [
    "profiling_name",
    "collective_seq_id",
    "p2p_seq_id",
    "process_group",
    "input_sizes",
    "output_sizes",
    "input_dtypes",
    "output_dtypes",
    "state",
    "time_created_ns",
    "timeout_ms",
    "is_p2p",
    "record_id",
]


@st.composite
def _entries(draw):
    e = _entry(draw(st.integers(0, 5)), draw(_NAMES), is_p2p=draw(st.booleans()))
    for key in draw(st.lists(st.sampled_from(_ENTRY_KEYS), max_size=4)):
        e[key] = draw(_JSON)
    return e if draw(st.integers(0, 9)) else draw(_JSON)


@st.composite
def _dump_texts(draw):
    top = _dump(draw(st.lists(_entries(), max_size=6)))
    for key in draw(st.lists(st.sampled_from(["pg_config", "rank", "comm_lib_version", "pg_status", "entries"]), max_size=2)):
        top[key] = draw(_JSON)
    if draw(st.booleans()):
        top["pg_config"] = {"0": {"ranks": draw(st.sampled_from(["[0, 1]", "[" * 3000, "[" + HUGE + "]", "[١]"]))}}
    text = json.dumps(top, ensure_ascii=draw(st.booleans()))
    how = draw(st.sampled_from(["as is", "nest", "huge int", "cut"]))
    if how == "nest":  # random nesting deep enough to break a recursive parser
        depth = draw(st.integers(100, 5000))
        text = text.replace('"entries": [', '"entries": [' + "[" * depth, 1) + "]" * draw(st.integers(0, depth))
    elif how == "huge int":  # an integer past int()'s 4300-digit limit
        text = text.replace('"collective_seq_id": ', '"collective_seq_id": ' + HUGE, 1)
    elif how == "cut":
        text = text[: draw(st.integers(0, len(text)))]
    return text


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(texts=st.lists(_dump_texts(), min_size=1, max_size=3), as_path=st.booleans())
def test_any_dump_shaped_json_gives_a_diagnosis(texts, as_path):
    try:
        if as_path:
            with tempfile.TemporaryDirectory() as d:
                for i, text in enumerate(texts):
                    Path(d, f"rank{i}.json").write_text(text, encoding="utf-8")
                Path(d, f"rank{len(texts)}.log").write_text(CUDA_ERROR)
                diag = diagnose(d)
        else:
            diag = diagnose(*(t.encode("utf-8") for t in texts))
    except DoctorInputError as exc:  # the project's one-line error, never anything else
        assert "\n" not in str(exc)
        return
    assert isinstance(diag, Diagnosis)
    for f in diag.findings:
        assert all(isinstance(r, int) and 0 <= r < 10**9 for r in f.ranks)
        assert "\n" not in f.title
    assert Diagnosis.from_dict(json.loads(json.dumps(diag.to_dict()))) == diag
