"""Inputs of the doctor beyond log text: torch's pickled flight-recorder dumps
(read with no globals at all, so a hostile pickle runs nothing), and inputs
that hold no log text at all (exit 2 with one line, not "no known failure").

The pickled dumps in fr/pickled/desync/ were written by torch 2.13 itself on
a real 3-rank gloo run (rank 1 broadcasts where ranks 0 and 2 all-reduce),
``_dump_fr_trace()`` beside ``_dump_fr_trace_json()`` taken at the same moment:

    python tests/doctor/fr/make_dumps.py --pickle --out tests/doctor/fr/pickled desync
"""

from __future__ import annotations

import gzip
import os
import pickle
import pickletools
import shutil
from pathlib import Path

import pytest

from ncclnb.doctor import DoctorInputError, diagnose
from ncclnb.doctor.unpickle import PickleRefused, load_plain, looks_like_pickle, read_pickled_dump
from tests.conftest import run_cli

PICKLED = Path(__file__).resolve().parent / "fr" / "pickled" / "desync"
ERROR_LINE = b"[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"


def _one_line_exit_2(proc) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def _copy(suffix: str, dest: Path, rename=lambda name: name) -> Path:
    dest.mkdir()
    for f in sorted(PICKLED.glob(f"rank*{suffix}")):
        shutil.copy(f, dest / rename(f.name))
    return dest


def _analysis(diag) -> list:
    """What a diagnosis says, with each evidence line's source reduced to its
    rank file's stem (the two forms differ only in their file names)."""

    def stem(source):
        return Path(source).name.split(".")[0] if source else source

    return [
        (f.rule, f.category, f.severity, f.confidence, f.title, f.ranks, [(stem(e.source), e.line, e.text) for e in f.evidence])
        for f in diag.findings
    ] + [(r.rank, r.last_seq, r.last_op) for r in diag.ranks]


# ----------------------------------------------------------------- the real pickled dump


def test_the_fixture_is_what_torch_pickles():
    """The recorded files are torch's own: protocol 2, plain data only, and the
    stock unpickler reads the same data as ours (tuples aside)."""
    raw = (PICKLED / "rank0.pkl").read_bytes()
    assert raw[:2] == b"\x80\x02" and looks_like_pickle(raw)
    assert {op.name for op, _, _ in pickletools.genops(raw)} & {"GLOBAL", "STACK_GLOBAL", "REDUCE"} == set()
    stock = pickle.loads(raw)  # the repo's own fixture, written by torch: safe to load plainly here
    ours = load_plain(raw)
    assert stock["entries"][0]["process_group"] == ("0", "default_pg")
    assert ours["entries"][0]["process_group"] == ["0", "default_pg"]
    assert [e["profiling_name"] for e in ours["entries"]] == [e["profiling_name"] for e in stock["entries"]]
    assert ours["entries"][0]["frames"] == stock["entries"][0]["frames"] != []


def test_pickled_dumps_get_the_same_analysis_as_their_json(tmp_path):
    from_pickle = diagnose(str(_copy(".pkl", tmp_path / "pkl")))
    from_json = diagnose(str(_copy(".json", tmp_path / "json")))
    assert from_pickle.findings[0].rule == "fr.desync_op" and from_pickle.findings[0].ranks == (1,)
    assert _analysis(from_pickle) == _analysis(from_json)
    assert [r.rank for r in from_pickle.ranks] == [0, 1, 2]


def test_a_pickle_is_told_by_its_content_not_its_name(tmp_path):
    # torch's dump-on-timeout file has no extension (TORCH_FR_DUMP_TEMP_FILE=/tmp/nccl_trace_rank_<N>);
    # a pickle named .log, or gzipped, is still a dump
    names = {"rank0.pkl": "nccl_trace_rank_0", "rank1.pkl": "rank1.log", "rank2.pkl": "rank2.json"}
    d = _copy(".pkl", tmp_path / "odd", lambda n: names[n])
    gz = d / "rank2.json"
    gz.write_bytes(gzip.compress(gz.read_bytes()))
    odd = diagnose(str(d))
    plain = diagnose(str(_copy(".pkl", tmp_path / "pkl")))
    assert [(f.rule, f.ranks, f.title) for f in odd.findings] == [(f.rule, f.ranks, f.title) for f in plain.findings]
    assert odd.findings[0].rule == "fr.desync_op"


def test_pickled_dump_through_the_cli_and_stdin(tmp_path):
    d = _copy(".pkl", tmp_path / "pkl")
    import json

    out = json.loads(run_cli("doctor", "--json", str(d)).stdout)
    assert out["findings"][0]["rule"] == "fr.desync_op" and out["findings"][0]["ranks"] == [1]
    # from stdin the dump is read (no file name tells its rank, so it is named as skipped, not lost)
    proc = run_cli("doctor", "--json", "-", input=(d / "rank0.pkl").read_bytes())
    assert proc.returncode == 0, proc.stderr
    assert [f["rule"] for f in json.loads(proc.stdout)["findings"]] == ["fr.bad_dump"]


# ----------------------------------------------------------------- hostile pickles


class _Mkdir:
    """Pickles to a call of os.mkdir(path): what a planted dump would run."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return os.mkdir, (self.path,)


def _planted(marker: Path, protocol: int) -> bytes:
    """A dump-shaped pickle whose last entry runs os.mkdir(marker) when loaded."""
    entries = [
        {"profiling_name": "gloo:all_reduce", "process_group": ("0", "default_pg"), "collective_seq_id": i, "input_sizes": [[8]]}
        for i in range(1, 50)
    ]
    return pickle.dumps({"version": "2.10", "pg_status": {}, "entries": entries + [_Mkdir(str(marker))]}, protocol=protocol)


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_planted_pickle_is_refused_and_runs_nothing(tmp_path, protocol):
    marker = tmp_path / "ran"
    payload = _planted(marker, protocol)
    pickle.loads(payload)  # the control: loaded plainly, the payload does run
    assert marker.is_dir()
    marker.rmdir()

    with pytest.raises(PickleRefused, match=r"global (posix|os)\.mkdir"):
        load_plain(payload)
    evil = tmp_path / "rank0.pkl"
    evil.write_bytes(payload)
    with pytest.raises(DoctorInputError, match="refused"):
        diagnose(str(evil))
    line = _one_line_exit_2(run_cli("doctor", str(evil)))
    assert "rank0.pkl" in line and "mkdir" in line and "nothing in it was run" in line
    assert not marker.exists()


def test_a_text_protocol_pickle_is_never_unpickled(tmp_path):
    # protocols 0 and 1 have no b"\x80" header: such a file is read as (odd) log text, never loaded
    marker = tmp_path / "ran"
    payload = _planted(marker, 0)
    assert not looks_like_pickle(payload)
    pickle.loads(payload)  # the control: this payload runs too when loaded plainly
    assert marker.is_dir()
    marker.rmdir()
    planted = tmp_path / "rank0.pkl"
    planted.write_bytes(payload)
    diag = diagnose(str(planted))
    assert diag.lines_read > 0 and not marker.exists()


def test_planted_pickle_among_real_dumps_is_skipped_and_named(tmp_path):
    marker = tmp_path / "ran"
    d = _copy(".pkl", tmp_path / "dumps")
    (d / "rank3.pkl").write_bytes(_planted(marker, 2))
    diag = diagnose(str(d))
    assert diag.findings[0].rule == "fr.desync_op"
    skipped = next(f for f in diag.findings if f.rule == "input_skipped")
    assert "rank3.pkl" in skipped.title and "refused" in skipped.title
    assert not marker.exists()


def _ops(*parts: bytes) -> bytes:
    return b"\x80\x02" + b"".join(parts) + b"."


@pytest.mark.parametrize(
    "payload,why",
    [
        (_ops(b"cbuiltins\neval\n", b"X\x04\x00\x00\x001+1", b"\x85R"), "global builtins.eval"),
        (pickle.dumps({"entries": {1, 2}}, protocol=2), "global __builtin__.set"),
        (pickle.dumps({"entries": bytearray(b"x")}, protocol=5), "opcode BYTEARRAY8"),
        (_ops(b"}", b"r\xff\xff\xff\x7f"), "memo index"),  # LONG_BINPUT 2**31-1: a memo that size
        (b"\x80\x02(K\x01K\x02", "not a readable pickle"),  # cut short: no STOP
        (_ops(b"(K\x01K\x02"), "plain data \\(an int\\)"),  # a mark left behind: torch never writes one
        (b"\x80\x02" + b"\x00" * 64, "not a readable pickle"),  # binary data behind a pickle's header
        (pickle.dumps([1, 2, 3], protocol=2), "no flight-recorder dump"),
        (pickle.dumps({"a": 1}, protocol=2), "no flight-recorder dump"),
    ],
)
def test_pickles_that_are_not_plain_dumps_are_refused(payload, why):
    import io

    with pytest.raises(PickleRefused, match=why):
        read_pickled_dump(io.BytesIO(payload))


def test_pickle_bounds():
    import io

    many = pickle.dumps({"entries": list(range(5000))}, protocol=2)
    with pytest.raises(PickleRefused, match="more than 1,000 values"):
        load_plain(many, max_values=1000)
    assert len(load_plain(many)["entries"]) == 5000
    with pytest.raises(PickleRefused, match="larger than 1 KiB"):
        read_pickled_dump(io.BytesIO(many), limit=1024)
    # nested far past the stack: refused in one line, not a crash
    deep = b"]" * 200_000 + b"a" * 199_999
    with pytest.raises(PickleRefused, match="nested too deeply"):
        read_pickled_dump(io.BytesIO(b"\x80\x02}X\x07\x00\x00\x00entries" + deep + b"s."))


def test_shared_and_self_referencing_values_are_read_once():
    import io

    shared = ["x"] * 8
    doubled = shared
    for _ in range(40):  # 2**40 leaves if each reference were copied
        doubled = (doubled, doubled)
    loop: list = []
    loop.append(loop)
    data = load_plain(pickle.dumps({"entries": [], "pg_config": {"a": doubled}, "loop": loop}, protocol=2))
    inner = data["pg_config"]["a"]
    assert inner[0] is inner[1] and isinstance(inner, list)
    assert data["loop"][0] is data["loop"]
    # as a dump, the 2**40 copies are never written out: refused once the JSON passes its bound
    with pytest.raises(PickleRefused, match="written out as JSON it would pass 48 MiB"):
        read_pickled_dump(io.BytesIO(pickle.dumps({"entries": [], "pg_config": {"a": doubled}}, protocol=2)))
    with pytest.raises(PickleRefused, match="refers to itself"):
        read_pickled_dump(io.BytesIO(pickle.dumps({"entries": [loop]}, protocol=2)))


# ----------------------------------------------------------------- no log text at all


def test_inputs_with_no_log_text_exit_2_with_one_line(tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    blank = tmp_path / "blank.log"
    blank.write_bytes(b"\n  \n\t\n")
    assert _one_line_exit_2(run_cli("doctor", str(empty))) == f"ncclnb doctor: error: {empty}: empty, no log text"
    assert "empty, no log text" in _one_line_exit_2(run_cli("doctor", "-", input=b""))
    d = tmp_path / "logs"
    d.mkdir()
    (d / "rank0.log").write_bytes(b"")
    (d / "rank1.log.gz").write_bytes(gzip.compress(b""))
    assert _one_line_exit_2(run_cli("doctor", str(d))).endswith("no log text in it (2 files, all empty)")
    (d / "core.bin").write_bytes(b"\x00\x01" * 100)
    assert _one_line_exit_2(run_cli("doctor", str(d))).endswith("no log text in it (3 files: 2 empty, 1 binary data)")
    with pytest.raises(DoctorInputError, match="empty, no log text"):
        diagnose(str(empty), str(blank))


def test_an_empty_log_beside_real_ones_is_still_a_source(tmp_path):
    d = tmp_path / "logs"
    d.mkdir()
    (d / "rank0.log").write_bytes(b"")
    (d / "rank1.log").write_bytes(ERROR_LINE)
    diag = diagnose(str(d))
    assert diag.findings[0].category == "oom_or_resource"
    assert [Path(s).name for s in diag.sources] == ["rank0.log", "rank1.log"]


def test_text_handed_over_in_python_always_gets_a_diagnosis():
    assert diagnose("").findings == () and diagnose(b"\n").lines_read == 1


# ----------------------------------------------------------------- kernel log: Xid lines


def test_every_xid_number_lands_on_the_signature_of_its_kind():
    """0..999 each hit exactly one Xid signature, and the one XIDS says:
    program faults and the cleanup Xid are not blamed on the hardware."""
    from ncclnb.doctor.match import Matcher
    from ncclnb.doctor.rank_table import RankRows
    from ncclnb.doctor.kb import load_signatures
    from ncclnb.doctor.xid import XIDS

    matcher = Matcher(load_signatures(), RankRows())
    want_for = {"program": "gpu_xid_program_fault", "consequence": "gpu_xid_cleanup"}
    for n in range(1000):
        hits = {sig.id for sig, _ in matcher.matches(f"NVRM: Xid (PCI:0000:3b:00): {n}, pid=4121, name=python")}
        kind = XIDS[n].kind if n in XIDS else "hardware"
        assert hits & {"gpu_xid", "gpu_xid_program_fault", "gpu_xid_cleanup"} == {want_for.get(kind, "gpu_xid")}, n


def test_dmesg_beside_rank_logs_names_the_xid_and_what_it_means(tmp_path):
    d = tmp_path / "job"
    d.mkdir()
    (d / "rank0.log").write_bytes(
        b"[rank0]:[E ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: "
        b"WorkNCCL(SeqNum=812, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) "
        b"ran for 600012 milliseconds before timing out.\n"
    )
    (d / "dmesg-node17.txt").write_bytes(
        b"[ 8812.100000] nvidia-nvswitch0: open\n"
        b"[ 8813.431012] NVRM: Xid (PCI:0000:b7:00): 79, pid=22190, name=python3, GPU has fallen off the bus.\n"
        b"[ 8813.431050] NVRM: GPU 0000:b7:00.0: GPU has fallen off the bus.\n"
        b"[ 8820.000000] NVRM: Xid (PCI:0000:b7:00): 45, pid=22190, name=python3, Ch 00000008\n"
    )
    diag = diagnose(str(d))
    top = diag.findings[0]
    assert top.category == "driver_or_hardware"
    xid = next(f for f in diag.findings if f.rule == "gpu_xid")
    assert "Xid 79: the GPU has fallen off the bus" in xid.title
    cleanup = next(f for f in diag.findings if f.rule == "gpu_xid_cleanup")
    assert diag.findings.index(cleanup) > diag.findings.index(xid)


def test_an_xid_of_the_program_is_not_blamed_on_the_hardware():
    diag = diagnose(
        "[rank2]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "[ 5210.118273] NVRM: Xid (PCI:0000:3b:00): 31, pid=4121, name=python, Ch 00000008, intr 00000000. "
        "MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f1b_c0000000\n"
    )
    fault = next(f for f in diag.findings if f.rule == "gpu_xid_program_fault")
    assert fault.category != "driver_or_hardware" and "Xid 31: GPU memory page fault" in fault.title
    assert "gpu_xid" not in {f.rule for f in diag.findings}


@pytest.mark.parametrize(
    "line, host",
    [
        # journalctl -k (and classic syslog), journalctl -o short-precise, -o short-iso / rsyslog's RFC 3339
        (
            "Nov 25 10:00:01 gpu-node-7 kernel: NVRM: Xid (PCI:0000:3b:00): 48, pid=4121, name=python, "
            "An uncorrectable double bit error",
            "gpu-node-7",
        ),
        ("Nov 25 10:00:01.123456 gpu-node-7 kernel: NVRM: Xid (PCI:0000:3b:00): 48, pid=4121, name=python", "gpu-node-7"),
        ("2025-11-25T10:00:01+0000 gpu-node-7 kernel: NVRM: Xid (PCI:0000:3b:00): 48, pid=4121, name=python", "gpu-node-7"),
        (
            "2025-11-25T10:00:01.123456+00:00 gpu-node-7.cluster kernel: [ 8813.431012] NVRM: Xid (PCI:0000:3b:00): 48, "
            "pid=4121, name=python",
            "gpu-node-7.cluster",
        ),
        # dmesg -T, dmesg, dmesg -r: no host on the line, none named
        ("[Tue Nov 25 10:00:01 2025] NVRM: Xid (PCI:0000:3b:00): 48, pid=4121, name=python", None),
        ("[ 8813.431012] NVRM: Xid (PCI:0000:3b:00): 48, pid=4121, name=python", None),
        ("<4>[ 8813.431012] NVRM: Xid (PCI:0000:3b:00): 48, pid=4121, name=python", None),
    ],
)
def test_an_xid_names_the_host_its_kernel_line_names(line, host):
    xid = next(f for f in diagnose(line + "\n").findings if f.rule == "gpu_xid")
    assert xid.hosts == ((host,) if host else ())
    assert xid.title.endswith(f" on {host}") if host else " on " not in xid.title


def test_a_hostless_dmesg_xid_never_borrows_the_host_of_the_line_before():
    text = (
        "gpu-node-3:123:456 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
        "[Tue Nov 25 10:00:01 2025] NVRM: Xid (PCI:0000:3b:00): 79, pid=4121, name=python, GPU has fallen off "
        "the bus.\n"
    )
    diag = diagnose(text)
    for rule in ("gpu_xid", "gpu_fallen_off_bus"):
        f = next(f for f in diag.findings if f.rule == rule)
        assert f.hosts == () and "gpu-node-3" not in f.title


def test_xids_of_several_hosts_name_each():
    text = (
        "Nov 25 10:00:01 node17 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off "
        "the bus.\nNov 25 10:00:05 node18 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=2, name=python, GPU has "
        "fallen off the bus.\n"
    )
    diag = diagnose(text)
    assert next(f for f in diag.findings if f.rule == "gpu_fallen_off_bus").title.endswith(" on node17, node18")


def test_a_python_log_line_with_an_iso_time_is_not_read_as_a_host():
    from ncclnb.doctor.normalize import normalize

    assert normalize("2025-11-25T10:00:01Z INFO root: epoch 3").host is None


# ----------------------------------------------------------------- NCCL RAS and nccl-tests beside the logs

_RAS_REPORT = b"""Job summary
===========

  Nodes  Processes         GPUs  Processes     GPUs
(total)   per node  per process    (total)  (total)
      4          8            1         32       32

Errors
======

#0-0 (cf264af53edbe986) INCOMPLETE
  Missing communicator data from 2 ranks
  The missing ranks: 5, 21
"""


def test_ras_report_names_the_ranks_it_could_not_reach(tmp_path):
    d = tmp_path / "job"
    d.mkdir()
    for r in (0, 1):  # ranks that print the timeout are not the ones RAS names
        (d / f"rank{r}.log").write_bytes(
            f"[rank{r}]:[E ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=812, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) "
            "ran for 600012 milliseconds before timing out.\n".encode()
        )
    (d / "ncclras.txt").write_bytes(_RAS_REPORT)
    ras = next(f for f in diagnose(str(d)).findings if f.rule == "ras_missing_ranks")
    assert ras.ranks == (5, 21) and ras.category == "slow_rank_timeout"


def test_ras_dead_process_leads_the_ranks_it_left_missing():
    dead = _RAS_REPORT.replace(
        b"Errors\n======\n",
        b"Errors\n======\n\nDEAD\n"
        b"  1 job process is considered dead (unreachable via the RAS network)\n"
        b"  Process 3487984 on node 172.16.64.213 managing GPU 5\n",
    )
    rules = [f.rule for f in diagnose(dead).findings]
    assert rules.index("ras_dead_process") < rules.index("ras_missing_ranks")
    assert diagnose(dead).findings[0].category == "driver_or_hardware"


# ncclras -f json: the layout of libnccl.so.2 2.32.3's format strings (tests/doctor/ras/README.md)
RAS = Path(__file__).parent / "ras"


def _timeouts_beside(tmp_path: Path, report: bytes) -> Path:
    d = tmp_path / "job"
    d.mkdir()
    for r in (0, 1):  # the ranks that print the timeout are not the ones RAS names
        (d / f"rank{r}.log").write_bytes(
            f"[rank{r}]:[E ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=812, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) "
            "ran for 600012 milliseconds before timing out.\n".encode()
        )
    (d / "ncclras.json").write_bytes(report)
    return d


def test_ras_text_report_of_nccl_2_32_is_read(tmp_path):
    # the text report as NCCL 2.32.3's format strings print it (tests/doctor/ras/README.md): it counts
    # the missing ranks but does not list them; the dead process is named on the line after
    report = (
        b"Errors\n======\n\n"
        b"DEAD\n  1 job process is considered dead (unreachable via the RAS network)\n"
        b"  Process 31878 on node gpu-node-02 managing GPU 1\n\n"
        b"#0-0 (5c1d3e0f7a9b2c41) INCOMPLETE\n  Missing communicator data from 1 rank\n\n"
        b"Warnings\n========\n\n#0-0 (5c1d3e0f7a9b2c41) MISMATCH\n"
        b"  Communicator ranks have different AllReduce operation counts\n"
        b"  2 ranks have launched up to operation 812\n"
        b"  Rank 2 has launched up to operation 811 -- GPU 0 managed by process 31877 on node gpu-node-02\n"
    )
    diag = diagnose(str(_timeouts_beside(tmp_path, report)))
    rules = [f.rule for f in diag.findings]
    assert rules[0] == "ras_dead_process" and "ras_missing_ranks" in rules
    assert next(f for f in diag.findings if f.rule == "ras_rank_count_differs").ranks == (2,)


def test_ras_json_names_the_dead_process_and_the_rank_it_left_missing(tmp_path):
    diag = diagnose(str(_timeouts_beside(tmp_path, (RAS / "ncclras_dead_rank.json").read_bytes())))
    first = diag.findings[0]
    assert first.rule == "ras_dead_process" and first.ranks == (3,)
    # the evidence points at the JSON line it was read from, and says it is a reading of the JSON
    ev = first.evidence[0]
    assert ev.source.endswith("ncclras.json") and ev.line == 76 and ev.text.startswith("ncclras JSON: ")
    assert "process 31878 on node gpu-node-02" in ev.text
    missing = next(f for f in diag.findings if f.rule == "ras_missing_ranks")
    assert missing.ranks == (3,) and missing.evidence[0].line == 74


def test_ras_json_blames_the_rank_whose_operation_count_is_behind(tmp_path):
    diag = diagnose(str(_timeouts_beside(tmp_path, (RAS / "ncclras_rank_behind.json").read_bytes())))
    first = diag.findings[0]
    assert (first.rule, first.category, first.ranks) == ("ras_rank_count_differs", "slow_rank_timeout", (2,))
    assert "behind the 3 ranks that launched up to operation 812" in first.evidence[0].text


def test_ras_json_rank_ahead_of_the_others_is_the_one_named(tmp_path):
    import json

    report = json.loads((RAS / "ncclras_rank_behind.json").read_bytes())
    for entry in report["communicators"][0]["ranks"]:
        entry["collective_counts"]["AllReduce"] = 813 if entry["rank"] == 1 else 812
    # reformatted onto one line (jq -c): still read, the evidence at line 1
    diag = diagnose(str(_timeouts_beside(tmp_path, json.dumps(report).encode())))
    odd = next(f for f in diag.findings if f.rule == "ras_rank_count_differs")
    assert odd.ranks == (1,) and "ahead of the 3 ranks" in odd.evidence[0].text and odd.evidence[0].line == 1


def test_ras_json_with_every_count_equal_adds_nothing(tmp_path):
    import json

    report = json.loads((RAS / "ncclras_rank_behind.json").read_bytes())
    for entry in report["communicators"][0]["ranks"]:
        entry["collective_counts"]["AllReduce"] = 812
    rules = {f.rule for f in diagnose(str(_timeouts_beside(tmp_path, json.dumps(report, indent=2).encode()))).findings}
    assert not {r for r in rules if r.startswith("ras_")} and "input_skipped" not in rules


@pytest.mark.parametrize(
    "report, why",
    [
        ((RAS / "ncclras_dead_rank.json").read_bytes()[:900], "not valid JSON"),
        (b'{"nccl_version": "2.32.3", "communicators": ' + b"[" * 200_000 + b"]" * 200_000 + b"}", "nested too deeply"),
        (b'{"nccl_version": "2.32.3", "communicators": {"a": 1}}', "is not a list"),
        (b'{"nccl_version": "2.32.3", "communicators": [' + b"{}," * 600_000 + b"{}]}", "JSON values"),
    ],
)
def test_a_broken_ras_json_is_skipped_in_one_line_and_the_logs_still_read(tmp_path, report, why):
    diag = diagnose(str(_timeouts_beside(tmp_path, report)))
    skipped = next(f for f in diag.findings if f.rule == "input_skipped")
    assert "ncclras JSON report that cannot be read" in skipped.title and why in skipped.title
    assert any(f.rule == "watchdog_all_waiting" for f in diag.findings)  # the rank logs were read


def test_nccl_tests_output_is_evidence_only_when_it_failed():
    run = (
        b"#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
        b"     1048576        262144     float     sum      -1    55.81   18.79   35.23    {wrong}\n"
        b"# Out of bounds values : {oob}\n"
        b"# Avg bus bandwidth    : 35.2345 \n"
    )
    good = diagnose(run.replace(b"{wrong}", b"0").replace(b"{oob}", b"0 OK"))
    assert [f for f in good.findings if f.severity in ("error", "warning")] == []
    bad = diagnose(run.replace(b"{wrong}", b"2944").replace(b"{oob}", b"2944 FAILED"))
    assert bad.findings[0].rule == "nccl_tests_wrong_results" and "2944 values" in bad.findings[0].cause


def test_fatal_nvswitch_sxid_in_a_kernel_log_is_hardware():
    diag = diagnose(
        b"[ 6512.203411] nvidia-nvswitch2: SXid (PCI:0000:87:00.0): 20034, Fatal, Link 30 LTSSM Fault Up\n"
        b"[ 6512.300000] nvidia-nvswitch2: SXid (PCI:0000:87:00.0): 12028, Non-fatal, Link 31 egress "
        b"non-posted PRIV error (First)\n"
    )
    assert [(f.rule, f.category) for f in diag.findings if f.severity == "error"] == [
        ("nvswitch_sxid_fatal", "driver_or_hardware")
    ]
    assert "20034" in diag.findings[0].cause


def test_ncclnb_json_alone_is_no_log_but_beside_logs_changes_nothing(tmp_path):
    import ncclnb

    snap = sorted((Path(ncclnb.__file__).parent / "recorded" / "data").glob("*.json"))[0]  # a bundled snapshot
    d = tmp_path / "run"
    d.mkdir()
    shutil.copy(snap, d / "node0.json")
    shutil.copy(snap, d / "node1.json")
    assert _one_line_exit_2(run_cli("doctor", str(d))).endswith("no log text in it (2 files, all ncclnb's own JSON)")
    with pytest.raises(DoctorInputError, match="ncclnb check or ncclnb show reads it"):
        diagnose(str(d / "node0.json"))
    (d / "rank1.log").write_bytes(ERROR_LINE)
    diag = diagnose(str(d))
    assert diag.findings[0].category == "oom_or_resource"
    assert "input_skipped" not in {f.rule for f in diag.findings}


def test_a_repro_run_whose_ranks_wrote_nothing_gets_an_empty_diagnosis(tmp_path):
    from ncclnb.repro.runner import diagnose_run_dir

    for r in range(2):
        (tmp_path / f"rank{r}.log").write_bytes(b"")
    with pytest.raises(DoctorInputError):
        diagnose(str(tmp_path))
    diag = diagnose_run_dir(tmp_path)
    assert diag.findings == () and diag.lines_read == 0


def test_a_scripts_own_rank_print_names_the_rank():
    from ncclnb.doctor.normalize import normalize

    assert normalize("[rank0] val shard: 2501 samples -> 2501 batches").rank == 0
    assert normalize("[rank 3] loss 2.31").rank == 3
    assert normalize("waiting on [rank3] now").rank is None  # only where the line starts with it


def test_uneven_batches_printed_by_the_script_itself_explain_a_rank_behind():
    log = (
        "[rank3]:[E1121 02:31:07.118 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=25011, OpType=ALLREDUCE, NumelIn=2120, NumelOut=2120, Timeout(ms)=1800000) ran for 1800071 "
        "milliseconds before timing out.\n"
        + "".join(
            f"[rank{r}]:[E1121 02:31:07.120 ProcessGroupNCCL.cpp:2271] [PG ID 0 PG GUID 0(default_pg) Rank {r}]  failure "
            f"detected by watchdog at work sequence id: 25011 PG status: last enqueued work: {25010 if r == 2 else 25011}, "
            "last completed work: 25010\n"
            for r in range(4)
        )
        + "".join(f"[rank{r}] val shard: {n} samples -> {n} batches\n" for r, n in enumerate((2501, 2501, 2500, 2501)))
    )
    top = diagnose(log).findings[0]
    assert (top.rule, top.category) == ("watchdog_uneven_data", "collective_desync")


def test_a_rank_that_printed_its_batches_but_no_timeout_is_the_one_the_others_waited_for():
    # its count line names it with a prefix of the script's own ("[eval] rank 2 ..."): it left a trace, and no timeout
    log = "".join(f"[eval] rank {r} finished after {n} batches\n" for r, n in ((0, 126), (1, 126), (3, 126), (2, 125)))
    log += "".join(
        f"[E ProcessGroupNCCL.cpp:475] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=90412, "
        "OpType=ALLGATHER, NumelIn=16, NumelOut=64, Timeout(ms)=1800000) ran for 1800519 milliseconds before timing out.\n"
        for r in (0, 1, 3)
    )
    top = diagnose(log).findings[0]
    assert (top.rule, top.category, top.ranks) == ("watchdog_uneven_data", "collective_desync", (0, 1, 3))


def test_an_all_to_all_whose_receive_splits_are_not_the_senders_is_a_pairing_mistake():
    truncated = (
        "moe-n1:60312:60581 [3] transport/net_socket.cc:419 NCCL WARN NET/Socket : message truncated : receiving 1179648 "
        "bytes instead of 1048576. If you believe your socket network is in healthy state, there may be a mismatch in "
        "collective sizes or environment settings (e.g. NCCL_PROTO, NCCL_ALGO) between ranks\n"
    )
    top = diagnose(truncated).findings[0]
    assert (top.rule, top.category) == ("net_message_truncated", "version_mismatch")  # NCCL versions differ, most often
    code = "    dist.all_to_all_single(out, x, output_splits, input_splits, group=ep_group)\n"
    assert diagnose(truncated + code).findings[0].category == "p2p_pairing"
    # bootstrap's own size check is another mechanism: the peer speaks another NCCL
    boot = "node-a:4121:4188 [3] bootstrap.cc:89 NCCL WARN Message truncated : received 1024 bytes instead of 4096\n"
    assert diagnose(boot + code).findings[0].rule == "socket_wrong_magic"


def test_a_pairs_unique_id_never_published_at_a_recv_is_a_pairing_mistake():
    wait = (
        "[rank5]: torch.distributed.DistBackendError: [5] is setting up NCCL communicator and retrieving ncclUniqueId from "
        "[0] via c10d key-value store by key '2', but store->get('2') got error: Socket Timeout\n"
    )
    assert diagnose(wait).findings[0].category == "collective_desync"
    frame = "[rank5]: frame #5: c10d::ProcessGroupNCCL::recv(std::vector<at::Tensor>&, int, int) + 0x1a2\n"
    top = diagnose(wait + frame).findings[0]
    assert (top.rule, top.category) == ("nccl_unique_id_store_timeout", "p2p_pairing")


def test_a_pastes_own_host_label_in_front_of_ncclss_or_torchs_prefix():
    from ncclnb.doctor.normalize import normalize

    ln = normalize("[nodeB] a3-vm-2:2987:2987 [0] NCCL INFO NCCL version 2.26.2+cuda12.6")
    assert (ln.host, ln.pid, ln.text) == ("a3-vm-2", 2987, "NCCL version 2.26.2+cuda12.6")
    ln = normalize("[nodeA] [rank0]: torch.distributed.DistBackendError: NCCL error")
    assert (ln.host, ln.rank) == ("nodeA", 0)
    assert normalize("[INFO] starting").host is None  # a bracketed word before anything else is not a host


def test_versions_of_labelled_hosts_are_compared():
    log = (
        "[nodeB] a3-vm-2:2987:2987 [0] NCCL INFO NCCL version 2.26.2+cuda12.6\n"
        "[nodeA] [rank0]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:2027, internal error - please report this issue to the NCCL developers, NCCL version 2.21.5\n"
    )
    assert diagnose(log).findings[0].rule == "nccl_version_differs_across_hosts"


def test_timeouts_that_only_say_who_waited_leave_a_socket_errors_category_to_the_rest_of_the_log():
    # rank 0's timeout and rank 4's error make a cross-rank reading of who waited; the firewall still settles the
    # category of the refused connection
    log = (
        "host-a:44120:44120 [0] NCCL INFO Bootstrap : Using enp94s0f0:192.168.50.11<0>\n"
        "host-b:9021:9088 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 192.168.50.11<38817> "
        "failed : No route to host\n"
        "[rank4]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:"
        "1691, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.6\n"
        "[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL("
        "SeqNum=1, OpType=BROADCAST, NumelIn=31268, NumelOut=31268, Timeout(ms)=600000) ran for 600388 milliseconds before "
        "timing out.\n"
        "# on host-a: firewall-cmd --list-ports -> 29500/tcp 22/tcp\n"
    )
    assert diagnose(log).findings[0].category == "rendezvous_unreachable"
