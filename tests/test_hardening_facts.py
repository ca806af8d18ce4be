"""Hostile input to the facts layer: cpulists, snapshots, pasted text, files.

Each case that could eat memory runs in a child process under a 1 GiB
address-space limit, so a regression fails the test (MemoryError, a crash)
instead of taking the machine down; CLI children also report their peak RSS.
No assertion here is about time.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ncclnb
from ncclnb.collectors.parsers import ParseError
from ncclnb.model import Host, NodeSnapshot, SchemaError, nvlink_count
from ncclnb.recorded import load_bytes
from ncclnb.summary import summary  # not ncclnb.summary: importing the module ncclnb.summary shadows it

REPO = Path(__file__).resolve().parents[1]
H100 = json.loads((REPO / "ncclnb" / "recorded" / "data" / "hgx-h100.json").read_text())
LIMIT_AS = 1 << 30

# Runs `ncclnb ARGS...` in-process under the address-space limit, then prints
# its own peak RSS (VmHWM, KiB) as the last line of stderr. Not ru_maxrss: that
# starts at the parent's RSS when it forked, so a large pytest would count.
_CLI_CHILD = r"""
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
from ncclnb.cli import main
try:
    rc = main(sys.argv[1:])
finally:
    sys.stderr.flush()
    with open("/proc/self/status") as fh:
        hwm = next(line.split()[1] for line in fh if line.startswith("VmHWM:"))
    sys.stderr.write("\nMAXRSS_KIB %s\n" % hwm)
sys.exit(rc)
"""


def run_limited_cli(*args: str, stdin=None, timeout: float = 120):
    """(exit status, stdout, stderr without the RSS line, peak RSS in MiB)."""
    proc = subprocess.run(
        [sys.executable, "-c", _CLI_CHILD.format(limit=LIMIT_AS), *args],
        stdin=stdin if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        timeout=timeout,
        cwd=REPO,
    )
    err = proc.stderr.decode("utf-8", "replace")
    rss = 0
    lines = err.rstrip("\n").split("\n")
    if lines and lines[-1].startswith("MAXRSS_KIB "):
        rss = int(lines[-1].split()[1]) // 1024
        err = "\n".join(lines[:-1]).strip("\n")
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), err, rss


def run_limited_python(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run Python ``code`` under the address-space limit; text output."""
    prelude = f"import resource\nresource.setrlimit(resource.RLIMIT_AS, ({LIMIT_AS}, {LIMIT_AS}))\n"
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=timeout, cwd=REPO)


def assert_one_line_error(rc: int, err: str, verb: str, *needles: str) -> str:
    assert "Traceback" not in err, err[-2000:]
    assert rc == 2, (rc, err[-2000:])
    lines = err.strip().splitlines()
    assert len(lines) == 1, err[-2000:]
    assert lines[0].startswith(f"ncclnb {verb}: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def big_cpulist(target_len: int = 4000, step: int = 1 << 20) -> str:
    """Many distinct ranges, each within the old per-range cap: ~200M CPUs in 4 KB."""
    parts, lo = [], 0
    while sum(map(len, parts)) + len(parts) < target_len:
        parts.append(f"{lo}-{lo + step}")
        lo += step + 1
    return ",".join(parts)


BIG = big_cpulist()


# --- 1. cpulists ---------------------------------------------------------------


def test_cpulist_spans_and_count_work_on_ranges():
    from ncclnb.model.cpulist import MAX_CPUS, count, format_spans, parse_cpulist, spans

    assert spans("0-3,8, 2-5,10-11") == ((0, 5), (8, 8), (10, 11))
    assert count("0-3,8, 2-5,10-11") == 9 and count(None) == 0 and count("zz") == 0
    assert count(f"0-{MAX_CPUS - 1}") == MAX_CPUS
    assert format_spans(spans("10-11,0-3,4,8")) == "0-4,8,10-11"
    assert parse_cpulist("0-3,x,9") == {0, 1, 2, 3, 9}
    # ids past the largest possible CPU are garbage: skipped leniently, refused strictly
    assert spans(f"0-1,{MAX_CPUS}") == ((0, 1),)
    with pytest.raises(ValueError, match="cpulist too large"):
        spans(f"0-{MAX_CPUS}", strict=True)
    # overlapping or repeated parts listing more CPUs than any machine has are refused strictly
    with pytest.raises(ValueError, match="cpulist too large"):
        spans(",".join(["0-40000"] * 4), strict=True)
    assert spans(",".join(["0-40000"] * 4)) == ((0, 40000),)
    # ASCII digits only
    assert spans("\u0660-\u0663") == () and count("\u00b3") == 0
    with pytest.raises(ValueError):
        spans("\u0660-\u0663", strict=True)


def test_cpulist_of_many_large_ranges_is_bounded():
    """~200 million CPUs in 4 KB of ranges: the old parser expanded them all (4.6 GB)."""
    code = f"""
from ncclnb.model.cpulist import count, parse_cpulist, spans
big = {BIG!r}
try:
    parse_cpulist(big, strict=True)
except ValueError as exc:
    assert "cpulist too large" in str(exc), exc
else:
    raise SystemExit("accepted")
assert len(parse_cpulist(big)) <= 1 << 16
assert count(big) <= 1 << 16
small = ",".join(["0-65535"] * 2000)   # in range, but listed 2000 times over
assert len(parse_cpulist(small)) == 65536 and count(small) == 65536
print("ok")
"""
    proc = run_limited_python(code)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_ingest_topo_m_with_a_huge_cpu_affinity_is_one_line(tmp_path):
    paste = tmp_path / "topo.txt"
    paste.write_text(f"\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t{BIG}\t0\n")
    rc, out, err, rss = run_limited_cli("ingest", str(paste))
    assert_one_line_error(rc, err, "ingest", "topo.txt", "cpulist too large")
    assert rss < 512, rss
    # with NUMA Affinity N/A the cell was stored unchecked before: it is checked too
    paste.write_text(f"\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t{BIG}\tN/A\n")
    with pytest.raises(ParseError, match="topo.txt: .*cpulist too large"):
        ncclnb.ingest(paste)
    # lscpu's NUMA lines in collect_env are checked the same way
    with pytest.raises(ParseError, match="cpulist too large"):
        ncclnb.ingest(f"PyTorch version: 2.1\nNUMA node0 CPU(s): {BIG}\n")


def test_numa_views_of_huge_cpulists_stay_small(tmp_path):
    pytest.importorskip("plotly")
    pytest.importorskip("ipywidgets")
    snap = json.loads(json.dumps(H100))
    snap["host"]["numa_nodes"][0]["cpus"] = BIG
    snap["gpus"][0]["cpu_affinity"] = BIG
    report = {
        "schema": "ncclnb.report/1",
        "snapshots": [snap],
        "ranks": [{"rank": 0, "host": snap["host"]["hostname"], "cuda_index": 0, "cpu_affinity": BIG}],
    }
    path = write_json(tmp_path / "report.json", report)
    code = f"""
import ncclnb
from ncclnb.views.numa import numa_summary, rank_placements
report = ncclnb.load({str(path)!r})
ncclnb.show_numa(report)
ncclnb.dashboard(report)
numa_summary(report.snapshots[0], report.ranks)
rank_placements(report.snapshots[0], report.ranks)
print(ncclnb.summary(report.snapshots[0]).count("NUMA"))
"""
    proc = run_limited_python(code)
    assert proc.returncode == 0, proc.stderr[-2000:]


# --- 2. show: missing keys far apart, huge numbers -------------------------------------


@pytest.mark.parametrize("far", [3 * 10**9, 10**30])
def test_show_groups_missing_keys_far_apart(tmp_path, far):
    snap = json.loads(json.dumps(H100))
    snap["missing"] = {"gpus[0].x": "gone", f"gpus[{far}].x": "gone", "gpus[1].y": "r", "gpus[2].y": "r"}
    path = write_json(tmp_path / "node.json", snap)
    rc, out, err, rss = run_limited_cli("show", str(path))
    assert rc == 0 and "Traceback" not in err, err[-2000:]
    assert f"gpus[0,{far}].x: gone" in out and "gpus[1..2].y: r" in out
    assert rss < 512, rss


def test_grouped_missing_still_folds_runs():
    from ncclnb.summary import _grouped_missing

    got = dict(
        _grouped_missing(
            {"gpus[0].x": "a", "gpus[1].x": "a", "gpus[2].x": "a", "gpus[5].y": "b", "gpus[7].y": "b", "nics[\u0661].z": "c"}
        )
    )
    assert got == {"gpus[0..2].x": "a", "gpus[5,7].y": "b", "nics[\u0661].z": "c"}


def test_show_huge_byte_count_is_one_line_or_sane(tmp_path):
    snap = json.loads(json.dumps(H100))
    snap["host"]["shm_total_bytes"] = 10**400
    path = write_json(tmp_path / "node.json", snap)
    rc, out, err, _ = run_limited_cli("show", str(path))
    assert_one_line_error(rc, err, "show", str(path), "host.shm_total_bytes")
    # a value built in Python (no schema check) still prints
    text = summary(
        NodeSnapshot(
            host=Host(
                hostname="h",
                shm_total_bytes=10**400,
                shm_free_bytes=10**5000,
                rlimit_memlock_soft=-(10**400),
                rlimit_nofile_soft=10**5000,
            )
        )
    )
    assert "/dev/shm" in text
    assert summary(NodeSnapshot(host=Host(hostname="h", shm_total_bytes=64 << 30))).count("64.0 GiB") == 1


def test_numbers_out_of_range_are_schema_errors():
    diag = {
        "schema": "ncclnb.diagnosis/1",
        "findings": [{"rule": "r", "category": "unknown", "severity": "info", "confidence": 10**400, "title": "t"}],
    }
    with pytest.raises(SchemaError, match=r"^d\.json: findings\[0\]\.confidence: "):
        load_bytes(json.dumps(diag).encode(), "d.json")
    snap = json.loads(json.dumps(H100))
    snap["gpus"][0]["memory_total_mib"] = -(2**70)
    with pytest.raises(SchemaError, match=r"^n\.json: gpus\[0\]\.memory_total_mib: "):
        load_bytes(json.dumps(snap).encode(), "n.json")


@pytest.mark.parametrize("snapshots", [5, True, 1.5, "ab", None, {"a": 1}, [5], [[]]])
def test_report_with_wrong_typed_snapshots_is_one_line(snapshots):
    raw = json.dumps({"schema": "ncclnb.report/1", "snapshots": snapshots}).encode()
    try:
        load_bytes(raw, "r.json")
    except SchemaError as exc:
        assert str(exc).startswith("r.json: snapshots"), exc
    # None is "no snapshots": a valid, empty report


# --- 3. bounded reads -------------------------------------------------------------------


@pytest.fixture
def sparse(tmp_path) -> Path:
    path = tmp_path / "sparse.bin"
    subprocess.run(["truncate", "-s", "2G", str(path)], check=True)
    return path


@pytest.mark.parametrize("verb", ["ingest", "show", "check"])
def test_sparse_file_is_refused_early(sparse, verb):
    rc, out, err, rss = run_limited_cli(verb, str(sparse), timeout=120)
    assert_one_line_error(rc, err, verb, "sparse.bin", "binary")
    assert rss < 256, rss


def test_ingest_stdin_dev_zero_is_refused_early():
    with open("/dev/zero", "rb") as zero:
        rc, out, err, rss = run_limited_cli("ingest", "-", stdin=zero, timeout=120)
    assert_one_line_error(rc, err, "ingest", "binary")
    assert rss < 256, rss


def test_endless_text_on_stdin_stops_at_the_limit():
    yes = subprocess.Popen(["yes", "GPU0 X"], stdout=subprocess.PIPE)
    try:
        rc, out, err, rss = run_limited_cli("ingest", "-", stdin=yes.stdout, timeout=300)
    finally:
        yes.kill()
        yes.wait()
        yes.stdout.close()
    assert_one_line_error(rc, err, "ingest", "too large")
    assert rss < 768, rss


@pytest.mark.parametrize("verb", ["ingest", "show"])
def test_text_then_a_huge_hole_is_refused_before_reading(tmp_path, verb):
    path = tmp_path / "huge.txt"
    path.write_text("\tGPU0\nGPU0\t X \n" * 5000)
    os.truncate(path, 2 << 30)
    rc, out, err, rss = run_limited_cli(verb, str(path))
    assert_one_line_error(rc, err, verb, "huge.txt", "too large")
    assert rss < 256, rss


def test_text_is_bounded_in_lines_too():
    from ncclnb.collectors.parsers import as_text
    from ncclnb.model.limits import TEXT_LINES

    as_text("a\r\n" * (TEXT_LINES - 10))  # CRLF counts once, as str.splitlines() sees it
    for sep in ("\n", "\r", "\x1c", "\u2028"):  # every break splitlines() knows
        with pytest.raises(ParseError, match="too many lines"):
            as_text("a" + sep * (TEXT_LINES + 1))


def test_python_twins_read_bounded(sparse):
    code = f"""
import ncclnb
from pathlib import Path
from ncclnb.collectors.parsers import ParseError
for source in (Path({str(sparse)!r}), {str(sparse)!r}):
    try:
        ncclnb.ingest(source)
    except ParseError as exc:
        assert "sparse.bin" in str(exc) and "binary" in str(exc), exc
    else:
        raise SystemExit("ingest accepted it")
try:
    ncclnb.load({str(sparse)!r})
except ValueError as exc:
    assert "sparse.bin" in str(exc) and "binary" in str(exc), exc
else:
    raise SystemExit("load accepted it")
print("ok")
"""
    proc = run_limited_python(code)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:] + proc.stdout


# --- 4. deep JSON -------------------------------------------------------------------


@pytest.mark.parametrize("verb", ["ingest", "show", "check"])
@pytest.mark.parametrize("opener", ["[", '{"a":'])
def test_deeply_nested_json_is_one_line(tmp_path, verb, opener):
    path = tmp_path / "deep.json"
    path.write_text(opener * 10000)
    rc, out, err, _ = run_limited_cli(verb, str(path))
    assert_one_line_error(rc, err, verb, "deep.json")


def test_deeply_nested_json_python_twins(tmp_path):
    with pytest.raises(ParseError, match="nested too deeply"):
        ncclnb.ingest(b"[" * 10000)
    with pytest.raises(ParseError):
        ncclnb.ingest("[" * 10000 + "\n")
    with pytest.raises(ValueError, match="^deep: .*nested too deeply"):
        load_bytes(b"[" * 10000, "deep")
    # nesting that JSON itself accepts, inside a field: one line naming the field
    raw = '{"schema":"ncclnb.node/1","host":{"hostname":"a"},"gpus":' + "[" * 900 + "]" * 900 + "}"
    with pytest.raises(SchemaError, match=r"^n: gpus\[0\]: expected an object"):
        load_bytes(raw.encode(), "n")


# --- 5. ASCII, bounded numbers --------------------------------------------------------


@pytest.mark.parametrize("version", ["\u00b9", "\u0661", "9" * 5000, "1" * 40, "", "1.0", " 1"])
@pytest.mark.parametrize("kind", ["ncclnb.node", "ncclnb.report", "ncclnb.diagnosis"])
def test_schema_tag_version_is_ascii_and_bounded(kind, version):
    data = json.loads(json.dumps(H100)) if kind == "ncclnb.node" else {}
    data["schema"] = f"{kind}/{version}"
    with pytest.raises(SchemaError, match=r"^tag\.json: schema: "):
        load_bytes(json.dumps(data, ensure_ascii=False).encode(), "tag.json")


def test_nvlink_count_is_ascii_and_bounded():
    assert nvlink_count("NV12") == 12 and nvlink_count("NV\u0661\u0662") == 0
    assert nvlink_count("NV" + "9" * 5000) == 0 and nvlink_count(None) == 0


BIGNUM = "9" * 5000
SMI = (
    "| NVIDIA-SMI 550.90.07              Driver Version: 550.90.07      CUDA Version: 12.4     |\n"
    "|   IDX  NVIDIA GeForce RTX 2080 Ti     On  |   00000000:B4:00.0 Off |                  N/A |\n"
    "| 29%   31C    P8             20W /  250W |       1MiB /  MEMMiB |      0%      Default |\n"
)
BAD_NUMBERS = {
    "smi_memory_long": SMI.replace("IDX", "0").replace("MEM", BIGNUM),
    "smi_index_long": SMI.replace("IDX", BIGNUM).replace("MEM", "11"),
    "smi_index_unicode": SMI.replace("IDX", "\u0661").replace("MEM", "11"),
    "smi_memory_unicode": SMI.replace("IDX", "0").replace("MEM", "\u0661\u0661"),
    "topo_numa_long": f"\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t0-3\t{BIGNUM}\n",
    "topo_gpu_long": f"\tGPU0\tGPU{BIGNUM}\nGPU0\t X \tPHB\nGPU{BIGNUM}\tPHB\t X \n",
    "topo_gpu_unicode": "\tGPU0\tGPU\u0661\nGPU0\t X \tPHB\nGPU\u0661\tPHB\t X \n",
    "topo_nvlink_unicode": "\tGPU0\tGPU1\nGPU0\t X \tNV\u0661\nGPU1\tNV\u0661\t X \n",
    "topo_nvlink_long": f"\tGPU0\tGPU1\nGPU0\t X \tNV{BIGNUM}\nGPU1\tNV{BIGNUM}\t X \n",
    "topo_numa_unicode": "\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t0-3\t\u0661\n",
    "topo_cpus_unicode": "\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t\u0660-\u0663\t0\n",
    "topo_cpus_long": f"\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t0-{BIGNUM}\t0\n",
    "p2p_gpu_long": f"\tGPU0\tGPU{BIGNUM}\nGPU0\tX\tOK\nGPU{BIGNUM}\tOK\tX\n",
    "cenv_cpu_count_long": f"PyTorch version: 2.1\nCPU(s): {BIGNUM}\n",
    "cenv_gpu_long": f"PyTorch version: 2.1\nGPU {BIGNUM}: NVIDIA A100\n",
    "cenv_numa_long": f"PyTorch version: 2.1\nNUMA node{BIGNUM} CPU(s): 0-3\n",
    "nccl_driver_long": f"host:1:1 [0] NCCL INFO cudaDriverVersion {BIGNUM}\n",
    "nccl_version_unicode": "NCCL version \u0662.\u0661\u0669.\u0663\n",
    "nccl_version_long": f"NCCL version 2.{BIGNUM}.3\n",
}


@pytest.mark.parametrize("case", sorted(BAD_NUMBERS))
def test_parser_numbers_are_ascii_and_bounded(tmp_path, case):
    path = tmp_path / "paste.txt"
    path.write_text(BAD_NUMBERS[case], encoding="utf-8")
    with pytest.raises(ParseError) as info:
        ncclnb.ingest(path)
    assert str(info.value).startswith("paste.txt: "), str(info.value)
    assert "\n" not in str(info.value) and len(str(info.value)) < 400


@pytest.mark.parametrize("value", ["\u00b3", "\u0664\u0668", "\uff14\uff18"])
def test_collect_env_cpu_count_in_other_digits_is_not_a_number(value):
    snap = ncclnb.ingest(f"PyTorch version: 2.1\nCPU(s): {value}\n")
    assert snap.host.cpu_count is None
    assert ncclnb.ingest("PyTorch version: 2.1\nCPU(s): 48\n").host.cpu_count == 48


def test_line_splitters_read_what_the_old_patterns_read():
    """collect_env's `Key: value` and `GPU n: name` lines and nvidia-smi's name
    cell are split by hand now (the lazy patterns backtracked quadratically on
    a long run of spaces): same results as those patterns on every line here."""
    import random
    import re

    from ncclnb.collectors.parsers.collect_env import _gpu_line, _key_value
    from ncclnb.collectors.parsers.nvidia_smi import _name_cell

    old_kv = re.compile(r"([A-Za-z][A-Za-z0-9 ()_./+-]*?)\s*:(?:\s(.*)|)$")
    old_gpu = re.compile(r"GPU ([0-9]+): (.+?)(?: \(UUID: [^)]*\))?\s*$")
    old_name = re.compile(r"\s*([0-9]+)\s+(.*?)\s+(On|Off|WDDM|TCC|N/A)\s*")
    pieces = [
        "GPU ",
        "0",
        "12",
        ":",
        " ",
        "\t",
        "a",
        "B",
        " (UUID: ",
        ")",
        "(",
        "-",
        "On",
        "Off",
        "N/A",
        "  ",
        "/",
        "\u00a0",
        "http://x",
    ]
    rng = random.Random(7)
    lines = [
        "OS: Ubuntu 22.04.1 LTS (x86_64)",
        "GPU 0: NVIDIA A100 (UUID: GPU-1a2b)",
        "Is debug build: False",
        "  0  NVIDIA GeForce RTX 2080 Ti     On  ",
        "CPU(s):",
        "Key: http://x",
    ]
    lines += ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 9))) for _ in range(20000)]
    for line in lines:
        m = old_kv.fullmatch(line)
        new = _key_value(line)
        assert ((" ".join(m.group(1).split()), (m.group(2) or "").strip()) if m else None) == (
            (" ".join(new[0].split()), new[1].strip()) if new else None
        ), line
        m = old_gpu.fullmatch(line)
        if not (m and not m.group(2).strip()):  # an empty name: now no GPU line at all
            assert ((m.group(1), m.group(2).strip()) if m else None) == _gpu_line(line), line
        m = old_name.fullmatch(line)
        if not (m and not m.group(2)):
            assert ((m.group(1), m.group(2)) if m else None) == _name_cell(line), line


# --- fuzz ---------------------------------------------------------------------------

_NASTY_SCALARS = st.one_of(
    st.sampled_from(
        [
            10**400,
            -(10**400),
            2**63,
            2**64,
            -(2**63) - 1,
            10**4000,
            1e308,
            -1,
            0,
            True,
            None,
            "",
            "\u00b3",
            "\u0661\u0662",
            "NV\u0661",
            "NV" + "9" * 4400,
            "0-99999999",
            big_cpulist(400),
            "gpus[99999999999].x",
            [],
            {},
            1.5,
        ]
    )
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=30)
)
_PATHS = [
    ("schema",),
    ("host",),
    ("host", "hostname"),
    ("host", "shm_total_bytes"),
    ("host", "cpu_count"),
    ("host", "numa_nodes"),
    ("host", "numa_nodes", 0),
    ("host", "numa_nodes", 0, "cpus"),
    ("host", "numa_nodes", 0, "id"),
    ("gpus",),
    ("gpus", 0),
    ("gpus", 0, "index"),
    ("gpus", 0, "cpu_affinity"),
    ("gpus", 3, "memory_total_mib"),
    ("links", "gpu_gpu"),
    ("links", "gpu_gpu", 0),
    ("links", "gpu_gpu", 0, 1),
    ("links", "p2p"),
    ("missing",),
    ("env",),
    ("versions", "nccl_pip"),
    ("nics",),
    ("sources",),
]


def _set(data, path, value):
    value = copy.deepcopy(value)  # sampled [] and {} are shared objects: never nest one in itself
    node = data
    for key in path[:-1]:
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            return
    try:
        node[path[-1]] = value
    except (IndexError, TypeError):
        pass


@st.composite
def hostile_snapshot_bytes(draw) -> bytes:
    data = json.loads(json.dumps(H100))
    kind = draw(st.sampled_from(["ncclnb.node", "ncclnb.report", "ncclnb.diagnosis", "ncclnb.repro", "x"]))
    for _ in range(draw(st.integers(1, 4))):
        _set(data, draw(st.sampled_from(_PATHS)), draw(_NASTY_SCALARS))
    if kind == "ncclnb.report":
        data = {
            "schema": "ncclnb.report/1",
            "snapshots": [data],
            "ranks": [{"rank": draw(_NASTY_SCALARS), "host": "hgx-h100", "cpu_affinity": draw(_NASTY_SCALARS)}],
        }
        for _ in range(draw(st.integers(0, 2))):
            data[draw(st.sampled_from(["snapshots", "ranks", "description", "captured_at"]))] = draw(_NASTY_SCALARS)
    elif kind != "ncclnb.node":
        data["schema"] = f"{kind}/{draw(st.sampled_from(['1', '2', '١', '¹', '9' * 50]))}"
    marker = "@@DEEP@@"
    if draw(st.booleans()):
        _set(data, draw(st.sampled_from(_PATHS)), marker)
    text = json.dumps(data, ensure_ascii=draw(st.booleans()))
    depth = draw(st.sampled_from([1, 50, 500, 990, 3000, 20000]))
    opener = draw(st.sampled_from(["[", '{"k":']))
    closer = "]" if opener == "[" else "}"
    text = text.replace(json.dumps(marker), opener * depth + "0" + closer * draw(st.sampled_from([0, depth])))
    raw = text.encode("utf-8")
    cut = draw(st.one_of(st.none(), st.integers(0, len(raw))))
    return raw if cut is None else raw[:cut]


def _assert_clean(exc: BaseException, label: str) -> None:
    text = str(exc)
    assert "\n" not in text.strip(), text[:500]
    assert text.startswith(f"{label}: "), text[:500]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(hostile_snapshot_bytes())
def test_fuzz_load_bytes_gives_only_one_line_errors(raw):
    try:
        value = load_bytes(raw, "fuzz.json")
    except (ValueError, OSError) as exc:  # SchemaError is a ValueError
        _assert_clean(exc, "fuzz.json")
        return
    if isinstance(value, (NodeSnapshot, ncclnb.ClusterReport)):
        assert summary(value)
    assert type(value).from_dict(value.to_dict()) == value


_TOKENS = st.sampled_from(
    [
        "GPU0",
        "GPU1",
        "GPU\u0661",
        "GPU" + "9" * 30,
        " X ",
        "X",
        "NV12",
        "NV\u0661",
        "PIX",
        "SYS",
        "OK",
        "CNS",
        "CPU Affinity",
        "NUMA Affinity",
        "GPU NUMA ID",
        "0-63",
        "0-99999999",
        big_cpulist(300),
        "N/A",
        "\u00b3",
        "\u0661",
        "9" * 4400,
        "|",
        "MiB",
        "NIC0",
        "mlx5_0",
        "NIC Legend:",
        "Legend:",
        "[",
        "{",
        "]",
        "}",
        "NCCL version 2.19.3+cuda12.3",
        "NCCL INFO cudaDriverVersion",
        "PyTorch version:",
        "CPU(s):",
        "NUMA node0 CPU(s):",
        "GPU 0:",
        "Collecting environment information...",
        "=====",
        "GPU Topology:",
        "Environment Variables",
        "NCCL_DEBUG=INFO",
        "root@node1:~#",
        "$ nvidia-smi topo -p2p r",
        "\t",
        ":",
        "-",
        ",",
        "| NVIDIA-SMI 550.90.07              Driver Version: 550.90.07      CUDA Version: 12.4     |",
        "|   0  NVIDIA A100     On  |   00000000:B4:00.0 Off |                  N/A |",
        "| 29%   31C    P8             20W /  250W |       1MiB /  11264MiB |      0%      Default |",
        "\x1b[31m",
        "\x00",
        "\u2028",
        "\r",
        "#",
    ]
)


@st.composite
def hostile_paste(draw):
    lines = draw(st.lists(st.lists(_TOKENS | st.text(max_size=8), max_size=10).map(lambda t: " ".join(t)), max_size=12))
    text = "\n".join(lines) + "\n"
    if draw(st.booleans()):
        text = draw(st.sampled_from(["[" * 5000, "{}", '{"schema": "ncclnb.node/\u0661"}', "[1, 2]"])) + text
    encoding = draw(st.sampled_from(["str", "utf-8", "utf-16", "latin-1", "raw"]))
    if encoding == "str":
        return text
    if encoding == "raw":
        return draw(st.binary(max_size=200))
    try:
        return text.encode(encoding)
    except UnicodeEncodeError:
        return text.encode("utf-8")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(hostile_paste())
def test_fuzz_ingest_gives_only_one_line_errors(source):
    try:
        snap = ncclnb.ingest(source)
    except (ValueError, OSError) as exc:  # ParseError is a ValueError
        text = str(exc)
        assert "\n" not in text.strip(), text[:500]
        return
    assert summary(snap)
    assert NodeSnapshot.from_dict(snap.to_dict()) == snap
