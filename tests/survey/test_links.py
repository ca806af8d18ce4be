"""The survey's link test: the pure parts (sizes, steps, busbw factors, the
pair ring, rank 0's assembly of every rank's timings) on constructed input,
and real gloo runs through `ncclnb survey --local`. No timed assertions:
the figures must exist and obey nccl-tests' arithmetic, not reach a speed."""

from __future__ import annotations

import pytest
from _procs import processes_mentioning

import ncclnb
from ncclnb.survey.links import (
    COLLECTIVES,
    LinkTestUsageError,
    assemble,
    busbw_factor,
    element_count,
    pair_ring,
    parse_size,
    parse_sizes,
    size_steps,
)

TIMEOUT = "10"


def test_sizes_read_like_nccl_tests():
    assert parse_size("8") == parse_size("8B") == 8
    assert parse_size("64K") == parse_size("64KiB") == 64 << 10
    assert parse_size("64MB") == parse_size("64m") == 64 << 20
    assert parse_size("1G") == 1 << 30
    assert parse_sizes("8B:64MB") == (8, 64 << 20, 2)
    assert parse_sizes("8:1G:4") == (8, 1 << 30, 4)
    for bad, said in [
        ("64MB", "MIN:MAX"),
        ("8B:x", "not a size"),
        ("1M:8", "below MIN"),
        ("2:8", "4 bytes"),
        ("8:16G", "over 8G"),
        ("8:64M:1", "step factor"),
        ("8:64M:x", "step factor"),
        ("-8:64M", "not a size"),
        ("8:64M:4:2", "MIN:MAX"),
    ]:
        with pytest.raises(LinkTestUsageError, match=said):
            parse_sizes(bad)


def test_steps_factors_and_counts():
    assert size_steps(8, 64, 2) == (8, 16, 32, 64)
    assert size_steps(8, 100, 4) == (8, 32, 100)  # the maximum is always measured
    assert size_steps(64, 64, 2) == (64,)
    assert busbw_factor("all_reduce", 4) == 1.5 and busbw_factor("all_gather", 4) == 0.75
    assert busbw_factor("reduce_scatter", 8) == busbw_factor("all_to_all", 8) == 7 / 8
    assert busbw_factor("all_reduce", 1) == 0.0
    assert element_count("all_reduce", 8, 4) == 2
    assert element_count("all_gather", 8, 4) == 4  # at least one float per rank
    assert element_count("all_to_all", 1 << 20, 3) % 3 == 0


def test_pair_ring_goes_node_to_node():
    entries = [
        {"rank": r, "host": h, "node_rank": nr}
        for r, h, nr in [(0, "a", 0), (1, "a", 0), (2, "b", 1), (3, "b", 1), (4, "c", 2), (5, "c", 2)]
    ]
    labels = {("a", 0): "a", ("b", 1): "b", ("c", 2): "c"}
    assert pair_ring(entries, labels) == [(0, 2), (2, 4), (4, 0)]
    assert pair_ring(entries[:4], labels) == [(0, 2), (2, 0)]  # two nodes: both directions
    one = [dict(e, host="a", node_rank=0) for e in entries[:3]]
    assert pair_ring(one, labels) == [(0, 1), (1, 2), (2, 0)]  # one node: rank to rank
    assert pair_ring(one[:1], labels) == []


def test_assemble_takes_the_slowest_rank_and_the_best_round():
    entries = [{"rank": 0, "host": "a", "node_rank": 0}, {"rank": 1, "host": "b", "node_rank": 1}]
    labels = {("a", 0): "a", ("b", 1): "b"}
    size = 1 << 20
    payloads = [
        {
            "times": [["all_reduce", size, 0.001], ["all_gather", size, 0.002]],
            "pairs": [[0, 1, size, 0.004, 0], [0, 1, size, 0.001, 1], [1, 0, size, 0.002, 0]],
            "missing": {},
            "transports": ["h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0"],
        },
        {
            "times": [["all_reduce", size, 0.002]],  # rank 1 never finished all_gather: not a measurement
            "pairs": [[0, 1, size, 0.002, 0], [0, 1, size, 0.0005, 1], [1, 0, size, 0.003, 0]],
            "missing": {"measurements": "stopped"},
            "transports": [],
        },
    ]
    link = assemble(
        payloads,
        backend="nccl",
        device="cuda",
        world=2,
        nodes=2,
        iters=5,
        entries=entries,
        labels=labels,
        env={"NCCL_ALGO": "Ring"},
        missing={},
    )
    [ar] = link["results"]
    assert (ar["collective"], ar["time_us"]) == ("all_reduce", 2000.0)  # max over ranks of the mean
    assert ar["algbw_gbps"] == pytest.approx(size / 0.002 / 1e9, rel=1e-3)
    assert ar["busbw_gbps"] == pytest.approx(ar["algbw_gbps"] * 1.0, rel=1e-3)  # 2(n-1)/n = 1 for n = 2
    pairs = {(p["src_rank"], p["dst_rank"]): p for p in link["pairs"]}
    assert pairs[(0, 1)]["time_us"] == 1000.0  # round 1: max(1 ms, 0.5 ms); round 0 was 4 ms
    assert pairs[(1, 0)]["time_us"] == 3000.0 and pairs[(1, 0)]["src_host"] == "b"
    assert link["missing"] == {"measurements": "rank 1: stopped"}
    assert [(t["rank"], t["peer"], t["transport"]) for t in link["transports"]] == [(0, 1, "NET/Socket")]


def _links(report):
    [link] = report.links
    return link


def test_local_survey_measures_every_collective_and_the_ring(tmp_path, cli):
    """Three gloo ranks: every collective at every size, busbw = algbw x nccl-tests' factor, a pair ring of three,
    the findings stored in the report; then a bad --sizes is one line and exit 2."""
    out = tmp_path / "out"
    proc = cli(
        "survey", "--local", "--nproc", "3", "--out", str(out), "--timeout", TIMEOUT, "--sizes", "8B:64K:8", "--iters", "3"
    )
    assert proc.returncode == 0, proc.stderr
    assert "links    gloo on cpu, 3 ranks on 1 node: busbw at 64 KiB" in proc.stdout
    assert "pair ring: 3 pairs" in proc.stdout and "  INFO     bandwidth: " in proc.stdout
    report = ncclnb.load(str(out / "report.json"))
    link = _links(report)
    assert (link.backend, link.device, link.world_size, link.nodes, link.iterations) == ("gloo", "cpu", 3, 1, 3)
    assert link.missing == {}
    by = {}
    for m in link.results:
        by.setdefault(m.collective, []).append(m)
        assert m.time_us > 0 and m.busbw_gbps == pytest.approx(m.algbw_gbps * busbw_factor(m.collective, 3), rel=1e-2)
        assert m.algbw_gbps == pytest.approx(m.size_bytes / (m.time_us * 1e3), rel=1e-2)
    assert set(by) == set(COLLECTIVES)
    assert [m.size_bytes for m in by["all_reduce"]] == [8, 64, 512, 4096, 32768, 65536]
    assert all(m.size_bytes % 12 == 0 for c in ("all_gather", "reduce_scatter", "all_to_all") for m in by[c])
    assert sorted((p.src_rank, p.dst_rank) for p in link.pairs) == [(0, 1), (1, 2), (2, 0)]
    assert all(p.size_bytes == 65536 and p.busbw_gbps > 0 for p in link.pairs)
    stored = {f.rule for f in report.findings}
    assert "link_busbw_low" in stored and stored == {f.rule for f in ncclnb.check(report)}
    verdict = [f for f in report.findings if f.rule == "link_busbw_low"][0]
    assert verdict.severity == "info" and "gloo on cpu" in verdict.title
    bad = cli("survey", "--local", "--nproc", "2", "--out", str(tmp_path / "bad"), "--sizes", "64MB")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--sizes takes MIN:MAX" in bad.stderr
    assert "Traceback" not in bad.stderr
    assert cli("survey", "--local", "--nproc", "2", "--out", str(tmp_path / "bad"), "--iters", "0").returncode == 2
    both = cli("survey", "--local", "--nproc", "2", "--out", str(tmp_path / "bad"), "--no-link-test", "--iters", "3")
    assert both.returncode == 2 and "--no-link-test" in both.stderr
    assert not (tmp_path / "bad" / "report.json").exists()
    assert processes_mentioning(str(out)) == [] and processes_mentioning(str(tmp_path / "bad")) == []


def test_no_link_test_gives_no_links(tmp_path, cli):
    out = tmp_path / "out"
    proc = cli("survey", "--local", "--nproc", "2", "--out", str(out), "--timeout", TIMEOUT, "--no-link-test")
    assert proc.returncode == 0, proc.stderr
    assert "links " not in proc.stdout and "bandwidth:" not in proc.stdout
    report = ncclnb.load(str(out / "report.json"))
    assert report.links == () and not any(f.rule.startswith("link_") for f in report.findings)
    assert processes_mentioning(str(out)) == []
