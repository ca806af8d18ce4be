"""The bundled cluster reports are what build_reports.py makes of the bundled snapshots."""

import pytest

from ncclnb.recorded import load
from tests._tools import load_tool

from ncclnb.model import ClusterReport

build_reports = load_tool("build_reports")


def test_bundled_reports_are_up_to_date():
    assert build_reports.main(["--check"]) == 0


@pytest.mark.parametrize("name", sorted(build_reports.REPORTS))
def test_bundled_report_loads_and_says_how_it_was_made(name):
    report = load(name)
    assert isinstance(report, ClusterReport)
    assert "Constructed from recorded snapshots" in report.description
    assert len(report.snapshots) >= 2 and report.ranks
    assert ClusterReport.from_dict(report.to_dict()) == report


def test_seed_numbers():
    seed002 = load("seed002-version-mismatch")
    a, b = seed002.snapshots
    assert (a.versions.nccl_torch, a.versions.torch_cuda) == ("2.14.3", "11.7")
    assert a.versions.nccl_pip == {"nvidia-nccl-cu11": "2.14.3"}
    assert [lib.version for lib in a.versions.nccl_system] == ["2.17.1"]
    assert (b.versions.nccl_torch, b.versions.torch_cuda) == ("2.19.3", "12.3")
    seed000 = load("seed000-2node-a10g")
    assert {r.world_size for r in seed000.ranks} == {4}
    assert sorted(r.rank for r in seed000.ranks) == list(range(8))
