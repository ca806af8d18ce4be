"""nccl-tests output -> a report with one LinkTest, and NCCL's channel lines
-> the transport per peer, on the real public outputs bundled in
ncclnb/recorded/links (and the 2x RTX 4090 capture the repro scenarios keep)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncclnb.collectors.parsers import ParseError, peer_transports
from ncclnb.collectors.parsers.nccl_tests import looks_like_nccl_tests, parse_nccl_tests
from ncclnb.model import ClusterReport

REPO = Path(__file__).resolve().parents[2]
LINKS = REPO / "ncclnb" / "recorded" / "links"
RTX4090 = REPO / "ncclnb" / "repro" / "recorded" / "net_plugin_not_found__2x-rtx4090-nccl-2.21.5.log"


def _text(name: str) -> str:
    return (LINKS / name).read_text(encoding="utf-8")


def test_h100_nvls_run():
    report = parse_nccl_tests(_text("nccl_tests__hgx-h100-1node-8gpu-nvls__nccl-tests-issue-290.txt"))
    [link] = report.links
    assert (link.backend, link.device, link.world_size, link.nodes, link.iterations) == ("nccl", "cuda", 8, 1, 2)
    assert [m.size_bytes for m in link.results] == [1 << s for s in range(27, 33)]
    last = link.results[-1]  # the out-of-place columns of the 4 GiB row
    assert (last.collective, last.time_us, last.algbw_gbps, last.busbw_gbps) == ("all_reduce", 15870.0, 270.63, 473.6)
    [node] = report.snapshots
    assert node.hostname == "node005" and [g.name for g in node.gpus] == ["NVIDIA H100 80GB HBM3"] * 8
    assert [r.rank for r in report.ranks] == list(range(8)) and {r.cuda_index for r in report.ranks} == set(range(8))
    assert ClusterReport.from_dict(report.to_dict()) == report


def test_two_node_and_small_runs():
    a3 = parse_nccl_tests(_text("nccl_tests__gcp-a3-mega-2node-16x-h100__lessizzmore-create-a3mega.txt"))
    [link] = a3.links
    assert (link.world_size, link.nodes) == (16, 2)
    assert [s.hostname for s in a3.snapshots] == ["ztan-mig-235z", "ztan-mig-gq73"]
    assert all(g.pci_bus_id == "0000:04:00" for s in a3.snapshots for g in s.gpus[:1])
    assert link.results[0].size_bytes == 8 and link.results[-1].busbw_gbps == 338.82
    rtx = parse_nccl_tests(_text("nccl_tests__2x-rtx2080ti-pcie-no-p2p__anthony-hoo-autodl.txt"))
    assert rtx.links[0].world_size == 2 and rtx.links[0].results[-1].busbw_gbps == 4.0


def test_table_interleaved_with_nccl_info_lines():
    text = RTX4090.read_text(encoding="utf-8")
    report = parse_nccl_tests(text)
    [link] = report.links
    assert link.world_size == 2 and len(link.results) > 10 and link.results[0].collective == "all_reduce"
    assert {(t.rank, t.peer, t.transport) for t in link.transports} == {(0, 1, "SHM"), (1, 0, "SHM")}


def test_collective_from_the_command_or_the_ratio():
    base = _text("nccl_tests__hgx-a100-8x-sxm4-80gb-single-node__unidentified-repo-thanos.txt")
    table = "\n".join(line for line in base.splitlines() if not line.startswith("# source"))
    assert "_perf" not in table
    assert parse_nccl_tests(table).links[0].results[0].collective == "all_reduce"  # busbw/algbw = 2(n-1)/n
    named = table.replace("# nThread", "$ ./build/reduce_scatter_perf -b 8 -e 4G -f 2 -g 8\n# nThread", 1)
    assert parse_nccl_tests(named).links[0].results[0].collective == "reduce_scatter"
    algo = "$ NCCL_ALGO=Ring ./build/all_reduce_perf -g 8\n" + table
    assert parse_nccl_tests(algo).links[0].env == {"NCCL_ALGO": "Ring"}
    with pytest.raises(ParseError, match="sendrecv_perf is not read"):
        parse_nccl_tests("$ ./build/sendrecv_perf\n" + table)
    gathered = table.replace(" sum ", " none ")
    halved = "\n".join(_halve_busbw(line) for line in gathered.splitlines())
    with pytest.raises(ParseError, match="include the command line"):
        parse_nccl_tests(halved)


def _halve_busbw(line: str) -> str:
    cells = line.split()
    if cells and cells[0].isdigit() and len(cells) >= 13:
        cells[7] = f"{float(cells[7]) / 2:.2f}"
        return "  ".join(cells)
    return line


def test_not_nccl_tests():
    assert not looks_like_nccl_tests("hello\nworld")
    with pytest.raises(ParseError, match="no table header"):
        parse_nccl_tests("hello")
    header = "#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
    with pytest.raises(ParseError, match="no rows"):
        parse_nccl_tests(header + "# Avg bus bandwidth    : 0\n")


def test_transports_of_real_logs():
    p4d = peer_transports(_text("nccl_info__aws-p4d-1node-4rank-p2p-cumem__gnosia93-training-on-eks.txt"))
    assert [(t.rank, t.peer, t.transport, t.channels) for t in p4d] == [
        (0, 1, "P2P/CUMEM", 24),
        (1, 2, "P2P/CUMEM", 24),
        (2, 3, "P2P/CUMEM", 24),
        (3, 0, "P2P/CUMEM", 24),
    ]
    assert p4d[0].line == "Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read"
    efa = peer_transports(_text("nccl_info__aws-g6e.48xlarge-4node-1rank-each-efa__gnosia93-training-on-eks.txt"))
    assert {t.transport for t in efa} == {"NET/Libfabric"}
    assert {(t.rank, t.peer) for t in efa} >= {(0, 1), (0, 2), (0, 3), (1, 0), (2, 0), (3, 0)}
    # [send] and [receive] lines of one channel count once; older NCCL writes bus ids in the brackets
    written = (
        "h:1:2 [0] NCCL INFO Channel 00/0 : 0[1b000] -> 1[3d000] [send] via NET/IB/0/GDRDMA\n"
        "h:1:2 [0] NCCL INFO Channel 00/0 : 0[1b000] -> 1[3d000] [receive] via NET/IB/0/GDRDMA\n"
        "h:1:2 [0] NCCL INFO Channel 01/0 : 0[1b000] -> 1[3d000] [send] via NET/IB/1/GDRDMA\n"
        "h:1:2 [0] NCCL INFO Channel 00 : 0[0] -> 2[2] via P2P/IPC\n"
    )
    assert [(t.rank, t.peer, t.transport, t.channels) for t in peer_transports(written)] == [
        (0, 1, "NET/IB", 2),
        (0, 2, "P2P/IPC", 1),
    ]
