"""Collapsing lines that repeat behind NCCL's per-rank prefix changes nothing
but the time: the same Diagnosis (findings, ranks, evidence) with and
without it, on the repository's fixture and recorded logs and on a generated
log of many ranks; the memoised trigger test says what the plain one says."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from ncclnb.doctor import collapse, diagnose, scan
from ncclnb.doctor.kb import TRIGGERS
from ncclnb.doctor.normalize import normalize

PKG = Path(__file__).resolve().parents[2] / "ncclnb"
FIXTURE_LOGS = sorted((PKG / "doctor" / "signatures").glob("*.log"))
RECORDED = sorted((PKG / "repro" / "recorded").glob("*.log")) + sorted((PKG / "recorded" / "links").glob("nccl_info__*"))
REPRO_DIRS = sorted(p for p in (Path(__file__).parent / "repro_logs").iterdir() if p.is_dir())
_PREFIXED = re.compile(r"^[A-Za-z0-9][\w.-]*:\d+:\d+ \[\d+\] (.*)$")


def _both(*sources) -> tuple[dict, dict]:
    return diagnose(*sources, collapse=True).to_dict(), diagnose(*sources, collapse=False).to_dict()


def _messages() -> list[str]:
    """The NCCL messages of the recorded captures, prefix stripped."""
    out = []
    for path in RECORDED:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            m = _PREFIXED.match(line)
            if m:
                out.append(m.group(1))
    return out


def _many_ranks_log(seed: int) -> str:
    """64 ranks on 8 hosts replaying the captures, with what the short way must not swallow planted among them:
    a watchdog timeout and its wrappers, a second NCCL version on one host, unrecognised and known WARNs,
    a hard-wrapped message, colours and CRs, hostless lines, comm lines, and prefixes inside messages."""
    rng = random.Random(seed)
    msgs = _messages()
    lines = []
    for i in range(6000):
        r = rng.randrange(64)
        h, d = divmod(r, 8)
        msg = msgs[rng.randrange(len(msgs))]
        msg = re.sub(
            r"rank \d+ nRanks \d+ nNodes \d+ localRanks \d+ localRank \d+",
            f"rank {r} nRanks 64 nNodes 8 localRanks 8 localRank {d}",
            msg,
        )
        msg = re.sub(r"NCCL version \S+", "NCCL version 2.21.5+cuda12.4" if h != 5 else "NCCL version 2.18.1+cuda12.1", msg)
        prefix = f"host-{h}:{3000 + r}:{3000 + r + i % 3} [{d}]"
        if i % 997 == 0:
            lines.append(f"\x1b[33m{prefix} {msg}\x1b[0m\r")
        else:
            lines.append(f"{prefix} {msg}")
        if i == 2500:
            lines.append(f"{prefix} transport/nvls.cc:244 NCCL WARN Cuda failure 1 'invalid argument' in a place no one knows")
            lines.append(f"{prefix} misc/socket.cc:50 NCCL WARN Net : Connection closed by remote peer 10.0.0.1<443>")
            lines.append(f"{prefix} NCCL INFO host-9: 12 some pdsh-looking tail")
            lines.append(f"{prefix} NCCL INFO (RayWorker pid=77) hello from a ray actor")
            lines.append(f"{prefix} NCCL INFO ")
        if i == 3000:
            lines.append(
                f"[rank{r}]:[E304 17:41:12.735149131 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught "
                "collective operation timeout: WorkNCCL(SeqNum=52, OpType=ALLREDUCE, NumelIn=10, NumelOut=10, "
                "Timeout(ms)=600000) ran for 600031 milliseconds before timing out."
            )
            lines.append(f"{prefix} NCCL INFO [Service thread] Connection closed by localRank {d}")
            lines.append("NCCL INFO NCCL version 2.21.5+cuda12.4")
        if i == 4000:
            lines.append(f"{prefix} NCCL WARN NET/IB : Got completion from peer 10.0.0.2<0> with error 12, opcode 0,")
            lines.append("    len 0, vendor err 129 (Recv) localGid ::ffff:10.0.0.1 remoteGids ::ffff:10.0.0.2")
    return "\n".join(lines) + "\n"


def test_fixture_logs_same_with_and_without_collapsing():
    assert FIXTURE_LOGS
    for path in FIXTURE_LOGS:
        a, b = _both(str(path))
        assert a == b, path.name


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name[:40])
def test_recorded_logs_same_with_and_without_collapsing(path):
    a, b = _both(str(path))
    assert a == b


@pytest.mark.parametrize("folder", REPRO_DIRS, ids=lambda p: p.name)
def test_repro_logs_same_with_and_without_collapsing(folder):
    a, b = _both(str(folder))
    assert a == b


@pytest.mark.parametrize("seed", [1, 2])
def test_many_ranks_same_with_and_without_collapsing(tmp_path, seed):
    log = tmp_path / "ranks.log"
    log.write_text(_many_ranks_log(seed), encoding="utf-8")
    a, b = _both(str(log))
    assert a == b
    rules = [f["rule"] for f in a["findings"]]
    # the timeouts are a card of their own or, as the consequence of the top card's cause, in it (issue 12)
    assert any("watchdog" in r for r in rules) or "timed out" in a["findings"][0]["cause"]
    assert "nccl_version_differs_across_hosts" in rules
    assert any(e["text"].startswith("host-") for f in a["findings"] for e in f["evidence"])
    # the same bytes as text: the collapsed path was taken, and most lines took the short way
    norm = collapse.Normalizer()
    lines = log.read_bytes().splitlines()
    tpls = [norm(raw)[1] for raw in lines]
    assert sum(t is not None for t in tpls) > len(lines) * 0.9
    assert len(norm.templates) < len(lines) / 5


def test_many_ranks_same_as_one_file_per_rank(tmp_path):
    # a directory of per-rank files: each file its own source, the same result either way
    text = _many_ranks_log(3)
    folder = tmp_path / "ranks"
    folder.mkdir()
    by_rank: dict = {}
    for line in text.splitlines():
        m = re.match(r"(?:\x1b\[33m)?host-(\d+):(\d+):", line)
        by_rank.setdefault(int(m.group(2)) - 3000 if m else 0, []).append(line)
    for r, lines in by_rank.items():
        (folder / f"rank{r}.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    a, b = _both(str(folder))
    assert a == b and a["findings"]


_LINES = [
    "host-1:123:456 [0] NCCL INFO Using network IB",
    "host-1:123:456 [0] transport/nvls.cc:244 NCCL WARN NVLS multicast failed",
    "host-1:123:456 [0] NCCL INFO node7x: 12 a pdsh prefix inside",
    "host-1:123:456 [0] NCCL INFO host-9:55:55 [1] NCCL WARN a second NCCL prefix inside",
    "host-1:123:456 [0] NCCL INFO (Worker pid=77) a Ray prefix inside",
    "host-1:123:456 [0] NCCL INFO (Worker pid=1234567890123) a pid too long to be one",
    "host-1:123:456 [0] NCCL INFO [Rank 7] a rank in the message",
    "host-1:123:456 [0] NCCL INFO [rank3]: a torch rank prefix inside",
    "host-1:123:456 [0] \x1b[31mNCCL WARN\x1b[0m coloured\r",
    "host-1:123:456 [0]    ",
    "host-1:123:456 [0] ",
    "host-1:123:456 [0] no level at all",
    "host-1:123:456 [0] NCCL INFO \x01a:1:1 [0] NCCL INFO made-up host",
    "host-1:0123:456 [0] NCCL INFO leading zero pid",
    "INFO:123:456 [0] NCCL INFO a host named like a level",
    "W1234:123:456 [0] NCCL INFO a host named like glog",
    "Abc:123:456 [0] NCCL INFO a three-letter host",
    "h:1:2 [3] frame #3: not a frame",
    "1host:1:1 [0] NCCL INFO digit-led host: normalised whole",
]


@pytest.mark.parametrize("text", _LINES)
def test_normalizer_gives_what_normalize_gives(text):
    norm = collapse.Normalizer()
    for host in ("host-1", "gpu-node-077", "x"):
        raw = text.replace("host-1", host, 1).encode()
        for _ in range(2):  # the first line makes the template, the second uses it
            got, _ = norm(raw)
            assert got == normalize(raw.decode("utf-8", "replace"))


def test_normalizer_refuses_a_rest_that_sets_host_or_pid():
    assert collapse.template_of(b" NCCL INFO node7x: 12 a pdsh prefix inside") is None
    assert collapse.template_of(b" NCCL INFO (Worker pid=77) a Ray prefix") is None
    assert collapse.template_of(b"   ") is None
    assert collapse.template_of(b" NCCL INFO Using network IB") is not None


def test_memoised_trigger_test_says_what_the_plain_one_says():
    rng = random.Random(5)
    words = [t for t in TRIGGERS] + ["plain words", "NCCL INFO Channel 00", "]", "[0]", " H100", "Trees ["]
    for _ in range(3000):
        host = rng.choice(["node1", "Errorhost", "mlx5_host", "a.b-c", "9lead"])
        line = (
            f"{host}:{rng.randrange(99)}:{rng.randrange(99)} [{rng.randrange(8)}]"
            + rng.choice(["", " "])
            + rng.choice(words)
            + rng.choice(["", " tail", "H100 x"])
        )
        raw = line.encode()
        assert scan.has_trigger(raw) == scan._has_trigger(raw), line
        assert scan.has_trigger(raw) == any(t.encode() in raw for t in TRIGGERS), line


@pytest.mark.parametrize("match_cache", [None, 40])
def test_parallel_scan_with_worker_skipping_same_as_plain(tmp_path, monkeypatch, match_cache):
    # workers drop lines whose rest the caller knows inert (a snapshot per task); a small match cache empties
    # often, so snapshots go stale and ranges are read again here: the same Diagnosis all the same
    from ncclnb.doctor import match

    log = tmp_path / "ranks.log"
    log.write_text(_many_ranks_log(4) * 4, encoding="utf-8")
    if match_cache:
        monkeypatch.setattr(match, "MATCH_CACHE", match_cache)
    monkeypatch.setattr(scan, "NUMPY_MIN", 1024)
    monkeypatch.setattr(scan, "RANGE", 60_000)
    monkeypatch.setattr(scan, "PARALLEL_MIN", 1 << 40)
    plain = diagnose(str(log), collapse=False).to_dict()
    monkeypatch.setattr(scan, "PARALLEL_MIN", 1024)
    monkeypatch.setenv("NCCLNB_DOCTOR_WORKERS", "2")
    found = []
    orig = scan.ParallelScan.__iter__

    def counting(self):
        for item in orig(self):
            found.append(item[0])
            yield item

    monkeypatch.setattr(scan.ParallelScan, "__iter__", counting)
    parallel = diagnose(str(log)).to_dict()
    assert parallel == plain
    assert found == sorted(found) and len(found) == len(set(found))  # file order, no line twice
    if match_cache is None:
        # the workers did drop lines: fewer came back than the file has candidates
        candidates = sum(1 for line in log.read_bytes().splitlines() if scan.has_trigger(line))
        assert len(found) < candidates / 2


# ---- the bulk path (scan.BulkSkip): the scanner leaves out lines read before, decided per distinct message
class _Inert:
    """A caller's inert rests, as collapse.InertRests holds them."""

    def __init__(self, rests=()):
        self.rests, self.generation = set(rests), 0


def _bulk_input(seed: int) -> bytes:
    text = _many_ranks_log(seed)
    rng = random.Random(seed)
    # non-NCCL lines between them: torch banners, wrapped continuations, lines with "]" early
    extra = [
        "[rank3]:[E304 17:41:12.7 ProcessGroupNCCL.cpp:1] Watchdog caught collective operation timeout",
        "    continued after a wrap: Error in the middle",
        "x] NCCL WARN a bracket first",
        "plain Error line",
    ]
    lines = text.splitlines()
    for _ in range(200):
        lines.insert(rng.randrange(len(lines)), rng.choice(extra))
    return ("\n".join(lines) + "\n").encode()


def _check_valid_skip(cands: list, out: list, inert: set) -> None:
    """What the collector needs of a scanner that leaves lines out (collapse.skip_inert's contract)."""
    nos = [no for no, _ in out]
    assert nos == sorted(set(nos))
    by_no = dict(cands)
    assert all(by_no.get(no) == raw for no, raw in out)  # only candidates, unchanged
    kept, shown = set(nos), set()

    def skippable(raw: bytes) -> bool:
        m = collapse.PREFIX.match(raw)
        return m is not None and raw[m.end() :] in inert and m.group(1) in shown

    for i, (no, raw) in enumerate(cands):
        if no not in kept:
            assert skippable(raw), raw  # a line left out was read before, and its host shown
        else:
            before_no, before_raw = cands[i - 1] if i else (None, b"")
            if i and before_no not in kept and before_no == no - 1 and collapse.looks_back(raw, before_raw):
                # a line whose reading looks at the line right before it (a hard-wrapped continuation)
                raise AssertionError(f"line {no} kept without the line it continues: {raw!r}")
            m = collapse.PREFIX.match(raw)
            if m is not None:
                shown.add(m.group(1))
    assert not cands or cands[-1][0] in kept  # the last line's state is the source's state at its end


@pytest.mark.parametrize("chunk", [None, 20_000, 65_536])
@pytest.mark.parametrize("seed", [1, 2])
def test_bulk_skip_leaves_out_only_what_was_read_before(monkeypatch, chunk, seed):
    import io

    monkeypatch.setattr(scan, "BULK_MIN", 0)
    data = _bulk_input(seed)
    cands = list(scan.LineScanner(io.BytesIO(data), chunk=chunk))
    rests = [raw[m.end() :] for _, raw in cands if (m := collapse.PREFIX.match(raw))]
    # most messages read before (as in a long log), not the warnings nor a few others
    rng = random.Random(seed)
    inert = {r for r in set(rests) if b"WARN" not in r and rng.random() < 0.9}
    s = scan.LineScanner(io.BytesIO(data), chunk=chunk, skip=_Inert(inert))
    out = list(s)
    assert s.lines_read == data.count(b"\n")
    _check_valid_skip(cands, out, inert)
    assert len(out) < len(cands) / 2  # it did leave lines out
    # a continuation right after a skipped line came with it: the input has such pairs
    by_no = dict(cands)
    assert any(raw[:1] == b" " and no - 1 in dict(out) and by_no.get(no - 1, b"").partition(b"]")[2] in inert for no, raw in out)
    # with nothing inert, nothing is left out
    assert list(scan.LineScanner(io.BytesIO(data), chunk=chunk, skip=_Inert())) == cands


def test_skip_inert_hands_over_a_skipped_line_only_to_the_line_that_continues_it():
    a, b = b"h1:1:1 [0] NCCL INFO A", b"h1:1:1 [0] NCCL INFO B"
    lines = [(1, a), (2, a), (3, b), (4, a), (5, b"   continued"), (6, a), (8, b"   continued"), (9, a)]
    out = [no for no, _ in collapse.skip_inert(iter(lines), {b" NCCL INFO A"})]
    # 1 shows the host; 2 and 6 precede lines that do not read them; 4 is what 5 continues; 9 ends the source
    assert out == [1, 3, 4, 5, 8]


def test_bulk_skip_hands_over_every_line_once_the_cache_is_emptied(monkeypatch):
    import io

    monkeypatch.setattr(scan, "BULK_MIN", 0)
    data = _bulk_input(3)
    cands = list(scan.LineScanner(io.BytesIO(data), chunk=40_000))
    rests = {raw[m.end() :] for _, raw in cands if (m := collapse.PREFIX.match(raw))}
    inert = _Inert(rests)
    out = []
    for item in scan.LineScanner(io.BytesIO(data), chunk=40_000, skip=inert):
        out.append(item)
        if len(out) == 50:  # the caller empties its cache: nothing it read is known any more
            inert.rests.clear()
            inert.generation += 1
    assert len(cands) > 200 and len(out) > 50
    at = [no for no, _ in cands].index(out[49][0])
    assert out[50:] == cands[at + 1 :]


def test_bulk_skip_leaves_the_path_on_mostly_new_messages(monkeypatch):
    import io

    monkeypatch.setattr(scan, "BULK_MIN", 0)
    data = b"".join(b"h%d:1:1 [0] NCCL WARN unique message %d Error\n" % (i % 5, i) for i in range(5000))
    s = scan.LineScanner(io.BytesIO(data), skip=_Inert())
    assert len(list(s)) == 5000 and s._bulk.off


@pytest.mark.parametrize("match_cache", [None, 40])
def test_many_ranks_same_with_bulk_skipping_in_small_chunks(tmp_path, monkeypatch, match_cache):
    # many regions, lines cut across chunks, and (with a small match cache) the cache emptied often
    from ncclnb.doctor import match

    log = tmp_path / "ranks.log"
    log.write_bytes(_bulk_input(5) * 2)
    plain = diagnose(str(log), collapse=False).to_dict()
    monkeypatch.setattr(scan, "CHUNK", 30_000)
    monkeypatch.setattr(scan, "BULK_MIN", 0)
    if match_cache:
        monkeypatch.setattr(match, "MATCH_CACHE", match_cache)
    assert diagnose(str(log)).to_dict() == plain


def test_bulk_path_only_where_candidates_are_many(monkeypatch):
    # a sparse log (1 line in 100 a candidate) goes the ordinary way after its first region; a dense stretch
    # after it brings the bulk path back; the lines handed over are the same either way
    import io

    monkeypatch.setattr(scan, "BULK_MIN", 0)
    sparse = b"".join(
        b"h%d:1:1 [0] NCCL INFO Channel %02d/24 : 3[3] -> 4[4] via P2P\n" % (i % 3, i % 24)
        if i % 100
        else b"h1:1:1 [0] NCCL WARN Error %d\n" % (i % 7)
        for i in range(20_000)
    )
    dense = b"".join(b"h%d:1:1 [0] NCCL INFO NCCL version 2.%d.3\n" % (i % 3, i % 5) for i in range(20_000))
    data = sparse + dense
    calls = []
    orig = scan.BulkSkip.region

    def counting(self, data, start, end, *a):
        calls.append(data.count(b"NCCL version", start, end) > 0)
        return orig(self, data, start, end, *a)

    monkeypatch.setattr(scan.BulkSkip, "region", counting)
    got = list(scan.LineScanner(io.BytesIO(data), chunk=100_000, skip=_Inert()))
    assert got == list(scan.LineScanner(io.BytesIO(data), chunk=100_000))
    assert calls[0] is False and calls.count(False) == 1 and calls.count(True) >= 5
