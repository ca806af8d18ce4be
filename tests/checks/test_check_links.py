"""The link checks on constructed LinkTests (each verdict, made to hit and
made to miss) and on the real public nccl-tests runs and NCCL logs bundled
in ncclnb/recorded/links."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from ncclnb.checks import check
from ncclnb.collectors.parsers import peer_transports
from ncclnb.collectors.parsers.nccl_tests import parse_nccl_tests
from ncclnb.model import ClusterReport, Gpu, Host, LinkMeasurement, LinkTest, Nic, NodeSnapshot, PairMeasurement, RankEntry

REPO = Path(__file__).resolve().parents[2]
LINKS = REPO / "ncclnb" / "recorded" / "links"
GIB = 1 << 30
RULES = ["link_busbw_low", "link_slow_pair", "link_socket_fallback", "link_net_within_node", "link_test_incomplete"]


def only(report, rule):
    found = check(report, only=[rule])
    assert all(f.rule == rule for f in found)
    return found


def _node(host, gpu="NVIDIA H100 80GB HBM3", count=8, nics=()):
    return NodeSnapshot(host=Host(hostname=host), gpus=tuple(Gpu(index=i, name=gpu) for i in range(count)), nics=tuple(nics))


def _ar(size, busbw):
    return LinkMeasurement("all_reduce", size, 1000.0, busbw / 1.75, busbw)


def _report(
    results=(),
    hosts=("a",),
    per_node=8,
    gpu="NVIDIA H100 80GB HBM3",
    nics=(),
    pairs=(),
    transports=(),
    missing=None,
    backend="nccl",
    device="cuda",
    **env,
):
    world = per_node * len(hosts)
    link = LinkTest(
        backend=backend,
        device=device,
        world_size=world,
        nodes=len(hosts),
        iterations=20,
        results=tuple(results),
        pairs=tuple(pairs),
        transports=tuple(transports),
        env=env,
        missing=missing or {},
    )
    return ClusterReport(
        snapshots=tuple(_node(h, gpu, per_node, nics) for h in hosts),
        ranks=tuple(RankEntry(rank=i * per_node + j, host=h) for i, h in enumerate(hosts) for j in range(per_node)),
        links=(link,),
    )


def _nccl_tests(name):
    return parse_nccl_tests((LINKS / name).read_text(encoding="utf-8"), name)


# --- link_busbw_low ------------------------------------------------------------------


def test_real_runs_get_their_verdicts():
    h100 = only(_nccl_tests("nccl_tests__hgx-h100-1node-8gpu-nvls__nccl-tests-issue-290.txt"), "link_busbw_low")
    assert [f.severity for f in h100] == ["info"] and "is normal for 8x H100 SXM" in h100[0].title
    evidence = " ".join(e.text for e in h100[0].evidence)
    assert "h100-sxm-8x-nvls" in " ".join(e.source for e in h100[0].evidence)
    assert "https://github.com/NVIDIA/nccl-tests/issues/290" in evidence and "474 GB/s at 4 GiB" in evidence
    a100 = only(_nccl_tests("nccl_tests__hgx-a100-8x-sxm4-80gb-single-node__unidentified-repo-thanos.txt"), "link_busbw_low")
    assert [f.severity for f in a100] == ["info"] and "232 GB/s is normal for 8x A100 SXM4" in a100[0].title
    rtx = only(_nccl_tests("nccl_tests__2x-rtx2080ti-pcie-no-p2p__anthony-hoo-autodl.txt"), "link_busbw_low")
    assert [f.severity for f in rtx] == ["info"] and "no reference" in rtx[0].title
    assert "RTX 2080 Ti" in rtx[0].title and "NCCL_ALGO=Ring" in rtx[0].cause
    a3 = only(_nccl_tests("nccl_tests__gcp-a3-mega-2node-16x-h100__lessizzmore-create-a3mega.txt"), "link_busbw_low")
    assert "no reference" in a3[0].title and "records no NICs" in a3[0].title


def test_the_same_h100_run_forced_to_ring_is_above_the_ring_band_and_low_when_slowed():
    nvls = _nccl_tests("nccl_tests__hgx-h100-1node-8gpu-nvls__nccl-tests-issue-290.txt")
    ring = dataclasses.replace(nvls, links=(dataclasses.replace(nvls.links[0], env={"NCCL_ALGO": "Ring"}),))
    above = only(ring, "link_busbw_low")
    assert above[0].severity == "info" and "above the 350-390 GB/s" in above[0].title
    slowed = tuple(dataclasses.replace(m, busbw_gbps=m.busbw_gbps * 0.6) for m in nvls.links[0].results)
    low = only(dataclasses.replace(nvls, links=(dataclasses.replace(nvls.links[0], results=slowed),)), "link_busbw_low")
    assert [f.severity for f in low] == ["warning"]
    assert "284 GB/s is low: 38% under the 455-490 GB/s" in low[0].title and low[0].ranks == ()


def test_too_small_unknown_and_gloo():
    small = only(_report([_ar(8, 0.001), _ar(64 << 20, 300.0)]), "link_busbw_low")
    assert small[0].severity == "info" and "cannot be judged yet" in small[0].title and "64 MiB" in small[0].title
    assert "--sizes 8B:1G" in small[0].fix
    four = only(_report([_ar(GIB, 100.0)], per_node=4), "link_busbw_low")
    assert "no reference" in four[0].title and "ran 4" in four[0].title
    gloo = only(_report([_ar(1 << 20, 0.3)], per_node=2, backend="gloo", device="cpu"), "link_busbw_low")
    assert [f.severity for f in gloo] == ["info"] and "gloo on cpu" in gloo[0].title
    assert only(_report([]), "link_busbw_low") == []  # nothing measured: link_test_incomplete's matter


def test_two_nodes_compare_per_nic_and_warn_about_tree():
    ndr = [Nic(name=f"mlx5_{i}", kind="infiniband", speed_mbps=400_000, ib_port_state="ACTIVE") for i in range(8)]
    fine = only(_report([_ar(GIB, 380.0)], hosts=("a", "b"), nics=ndr, NCCL_ALGO="Ring"), "link_busbw_low")
    assert "normal" in fine[0].title and "x 8 per node" in fine[0].title
    slow = only(_report([_ar(GIB, 200.0)], hosts=("a", "b"), nics=ndr), "link_busbw_low")
    assert slow[0].severity == "warning" and "44% under the 360-400 GB/s" in slow[0].title
    one = only(_report([_ar(GIB, 90.0)], hosts=("a", "b"), per_node=1, nics=ndr[:1]), "link_busbw_low")
    assert "above" in one[0].title and "NCCL_ALGO=Ring" in one[0].fix and "two nodes" in one[0].cause


# --- link_slow_pair -------------------------------------------------------------------


def _pairs(*busbw, hosts="abcd"):
    n = len(busbw)
    return [
        PairMeasurement(
            src_rank=8 * i,
            dst_rank=8 * ((i + 1) % n),
            src_host=hosts[i],
            dst_host=hosts[(i + 1) % n],
            size_bytes=64 << 20,
            time_us=(64 << 20) / (bw * 1e3),
            busbw_gbps=bw,
        )
        for i, bw in enumerate(busbw)
    ]


def test_slow_pair_blames_its_ranks_and_hosts():
    found = only(_report(hosts=("a", "b", "c", "d"), pairs=_pairs(40.0, 41.0, 3.0, 39.0)), "link_slow_pair")
    assert len(found) == 1 and found[0].severity == "warning"
    assert found[0].ranks == (16, 24) and found[0].hosts == ("c", "d")
    assert "rank 16 (c) -> rank 24 (d)" in found[0].title and "median 40 GB/s" in found[0].title
    assert only(_report(hosts=("a", "b", "c", "d"), pairs=_pairs(40.0, 41.0, 20.0, 39.0)), "link_slow_pair") == []
    two = only(_report(hosts=("a", "b"), pairs=_pairs(45.0, 5.0, hosts="ab")), "link_slow_pair")
    assert [f.ranks for f in two] == [(0, 8)] and two[0].hosts == ("b", "a")
    assert only(_report(hosts=("a", "b"), pairs=_pairs(45.0, hosts="ab")[:1]), "link_slow_pair") == []


# --- transports -------------------------------------------------------------------------


def _ib():
    return [Nic(name="mlx5_0", kind="infiniband", speed_mbps=200_000, ib_port_state="ACTIVE")]


def test_socket_between_nodes_with_infiniband():
    # channel lines written in NCCL 2.x's format: no public log with "via NET/Socket" and a known source was found
    lines = (
        "a:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n"
        "b:1:2 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [send] via NET/Socket/0\n"
    )
    report = _report(hosts=("a", "b"), per_node=1, nics=_ib(), transports=peer_transports(lines))
    found = only(report, "link_socket_fallback")
    assert len(found) == 1 and found[0].ranks == (0, 1) and found[0].hosts == ("a", "b")
    assert "mlx5_0" in found[0].title and "NET/Socket/0" in found[0].evidence[0].text
    assert (
        only(dataclasses.replace(report, snapshots=tuple(_node(h, count=1) for h in "ab")), "link_socket_fallback") == []
    )  # no RDMA NIC: sockets are all there is
    ib = peer_transports(lines.replace("NET/Socket", "NET/IB"))
    assert only(_report(hosts=("a", "b"), per_node=1, nics=_ib(), transports=ib), "link_socket_fallback") == []
    assert only(report, "link_net_within_node") == []


def test_real_logs_give_no_transport_findings():
    p4d = peer_transports(
        (LINKS / "nccl_info__aws-p4d-1node-4rank-p2p-cumem__gnosia93-training-on-eks.txt").read_text(encoding="utf-8")
    )
    one_node = _report(hosts=("ip-172-31-3-153",), per_node=4, gpu="NVIDIA A100-SXM4-40GB", transports=p4d)
    assert only(one_node, "link_net_within_node") == [] and only(one_node, "link_socket_fallback") == []
    efa = peer_transports(
        (LINKS / "nccl_info__aws-g6e.48xlarge-4node-1rank-each-efa__gnosia93-training-on-eks.txt").read_text(encoding="utf-8")
    )
    four = _report(hosts=("a", "b", "c", "d"), per_node=1, gpu="NVIDIA L40S", nics=_ib(), transports=efa)
    assert only(four, "link_socket_fallback") == [] and only(four, "link_net_within_node") == []
    # the same EFA lines with every rank placed on one host: NCCL used the network inside a node
    squeezed = dataclasses.replace(four, ranks=tuple(dataclasses.replace(r, host="a") for r in four.ranks))
    inside = only(squeezed, "link_net_within_node")
    assert len(inside) == 1 and inside[0].ranks == (0, 1, 2, 3) and inside[0].hosts == ("a",)


# --- link_test_incomplete and the report as a whole -------------------------------------


def test_incomplete_and_the_json_contract(tmp_path, cli):
    report = _report([_ar(8, 0.0)], missing={"measurements": "stopped at 'after all_gather 4096' (timed out)"})
    found = only(report, "link_test_incomplete")
    assert [f.severity for f in found] == ["warning"] and "timed out" in found[0].title
    assert only(_report([_ar(8, 0.0)]), "link_test_incomplete") == []
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report.to_dict()), encoding="utf-8")
    proc = cli("check", "--json", str(path))
    assert proc.returncode == 0
    rules = {f["rule"] for f in json.loads(proc.stdout)["findings"]}
    assert {"link_test_incomplete", "link_busbw_low"} <= rules
    listed = cli("check", "--list").stdout
    assert all(rule in listed for rule in RULES)


def test_check_cli_reads_an_nccl_tests_file(cli):
    path = LINKS / "nccl_tests__hgx-a100-8x-sxm4-80gb-single-node__unidentified-repo-thanos.txt"
    proc = cli("check", "--json", str(path))
    assert proc.returncode == 0, proc.stderr
    [verdict] = [f for f in json.loads(proc.stdout)["findings"] if f["rule"] == "link_busbw_low"]
    assert "normal for 8x A100 SXM4" in verdict["title"]
    piped = cli("check", "-", input=path.read_bytes())
    assert piped.returncode == 0 and "normal for 8x A100 SXM4" in piped.stdout
    bad = cli("check", str(REPO / "README.md"))
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr
