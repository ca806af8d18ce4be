"""The magics, run through IPython's own shell; assertions on what they
display (the mime bundles sent), not on pixels."""

from __future__ import annotations

import dataclasses
import json

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import ncclnb
from tests._shown import shown_bundles
from ncclnb import magics

WIDGET = "application/vnd.jupyter.widget-view+json"


def _bundles(captured):
    return shown_bundles(captured.outputs)


def _run(ip, line):
    with capture_output() as cap:
        ip.run_line_magic("ncclnb", line)
    return cap


def test_load_ext_registers_both_magics(ip):
    assert "ncclnb" in ip.magics_manager.magics["line"]
    assert "ncclnb_doctor" in ip.magics_manager.magics["cell"]


def test_unload_removes_them():
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "ncclnb")
    shell.run_line_magic("unload_ext", "ncclnb")
    assert "ncclnb" not in shell.magics_manager.magics["line"]
    assert "ncclnb_doctor" not in shell.magics_manager.magics["cell"]


def test_load_then_views_display_widget_and_static_html(ip):
    cap = _run(ip, "load seed000-2node-a10g")
    assert "cluster report: 2 nodes, 8 ranks" in cap.stdout
    for verb, marker in (
        ("topo", "Topology of seed000-node0"),
        ("numa", "NUMA placement"),
        ("ranks", "Rank map"),
        ("versions", "Versions on 2 nodes"),
    ):
        (bundle,) = _bundles(_run(ip, verb))
        assert WIDGET in bundle, verb
        assert marker in bundle["text/html"], verb
        assert bundle["text/plain"].startswith("ncclnb ")


def test_view_verbs_take_a_name_directly(ip):
    (bundle,) = _bundles(_run(ip, "topo hgx-h100"))
    assert "NV18" in bundle["text/html"]
    assert magics.STATE.target is None  # a one-off look does not change the target


def test_load_a_json_path(ip, tmp_path):
    path = tmp_path / "node.json"
    path.write_text(json.dumps(ncclnb.load("l40s-2socket").to_dict()))
    cap = _run(ip, f"load {path}")
    assert "node snapshot of" in cap.stdout and "4 GPUs" in cap.stdout


def test_view_without_target_is_a_usage_error(ip):
    with pytest.raises(UsageError, match="no machine loaded"):
        ip.run_line_magic("ncclnb", "topo")


@pytest.mark.parametrize(
    "line, match",
    [
        ("", "Usage: %ncclnb snapshot"),
        ("frobnicate", "unknown verb 'frobnicate'"),
        ("load", "Usage: %ncclnb load PATH|NAME"),
        ("load a b", "Usage: %ncclnb load PATH|NAME"),
        ("load no-such-machine", "unknown machine"),
        ("load 'unterminated", "No closing quotation"),
        ("doctor", "Usage: %ncclnb doctor PATH"),
        ("autodiagnose maybe", "autodiagnose on\\|off"),
    ],
)
def test_bad_arguments_raise_usage_error(ip, line, match):
    with pytest.raises(UsageError, match=match):
        ip.run_line_magic("ncclnb", line)


def test_bad_arguments_in_a_cell_do_not_kill_the_shell(ip):
    with capture_output() as cap:
        result = ip.run_cell("%ncclnb load /no/such/file.json")
    assert not result.success and isinstance(result.error_in_exec, UsageError)
    assert "UsageError" in cap.stderr or "UsageError" in cap.stdout
    assert ip.run_cell("1 + 1").result == 2


def test_dashboard_runs_checks_and_shows_tabs(ip):
    _run(ip, "load seed000-2node-a10g")
    (bundle,) = _bundles(_run(ip, "dashboard"))
    html = bundle["text/html"]
    assert WIDGET in bundle
    for part in ("Checks", "Topology of", "NUMA placement", "Rank map", "Versions on"):
        assert part in html, part


def test_check_verb_shows_findings(ip):
    pytest.importorskip("ncclnb.checks")
    _run(ip, "load seed002-version-mismatch")
    (bundle,) = _bundles(_run(ip, "check"))
    assert "Checks:" in bundle["text/html"] and "version_mismatch" in bundle["text/html"]


LOG = "[rank7]: torch.distributed.DistBackendError: NCCL error: invalid usage\nInvalid rank requested : 7/4\n"


def test_doctor_verb_and_cell_magic(ip, tmp_path):
    pytest.importorskip("ncclnb.doctor")
    log = tmp_path / "rank7.log"
    log.write_text(LOG)
    (bundle,) = _bundles(_run(ip, f"doctor {log}"))
    assert "Diagnosis" in bundle["text/html"] and "rank7.log" in bundle["text/html"]
    with capture_output() as cap:
        ip.run_cell_magic("ncclnb_doctor", "", LOG + '<img src=x onerror="window.__pwned=1">\n')
    (bundle,) = _bundles(cap)
    assert "Invalid rank" in bundle["text/html"] and "<img" not in bundle["text/html"]
    assert magics.STATE.diagnosis is not None


def test_empty_doctor_cell_is_a_usage_error(ip):
    with pytest.raises(UsageError):
        ip.run_cell_magic("ncclnb_doctor", "", "   \n")


class DistBackendError(RuntimeError):
    """Stands in for torch.distributed.DistBackendError: matched by name."""


def test_is_distributed_error():
    assert magics.is_distributed_error(DistBackendError("whatever"))
    assert magics.is_distributed_error(RuntimeError("NCCL error in: ProcessGroupNCCL.cpp:1275"))
    assert magics.is_distributed_error(RuntimeError("[../gloo/transport/tcp/pair.cc:534] Connection closed"))
    assert not magics.is_distributed_error(RuntimeError("CUDA out of memory"))
    assert not magics.is_distributed_error(ValueError("nccl"))


def test_autodiagnose_shows_traceback_then_diagnosis(ip):
    pytest.importorskip("ncclnb.doctor")
    ip.user_ns["DistBackendError"] = DistBackendError
    _run(ip, "autodiagnose on")
    with capture_output() as cap:
        result = ip.run_cell('raise DistBackendError("NCCL error: ncclInvalidUsage: Invalid rank requested : 7/4")')
    assert not result.success
    assert "DistBackendError" in cap.stdout + cap.stderr  # the normal traceback is still there
    (bundle,) = _bundles(cap)
    assert "Diagnosis" in bundle["text/html"]

    with capture_output() as cap:
        ip.run_cell("raise KeyError('unrelated')")
    assert "KeyError" in cap.stdout + cap.stderr and not cap.outputs

    _run(ip, "autodiagnose off")
    with capture_output() as cap:
        ip.run_cell('raise DistBackendError("NCCL error")')
    assert not cap.outputs and "DistBackendError" in cap.stdout + cap.stderr


def test_repro_verb_shows_live_ranks_then_the_diagnosis_and_returns_the_result(ip, tmp_path):
    with capture_output() as cap:
        result = ip.run_line_magic("ncclnb", f"repro store_host_missing --timeout 3 --keep {tmp_path / 'run'}")
    assert isinstance(result, ncclnb.ReproResult)
    assert result.diagnosis.top.ranks == (0,)
    bundles = _bundles(cap)
    progress = [b for b in bundles if "text/html" in b and "rank" in b["text/html"] and "<table>" in b["text/html"]]
    assert progress, "the live per-rank table was displayed"
    final = progress[-1]["text/html"]  # once the run ended, the table still shows how every rank ended
    assert final.count("<tr>") == 1 + len(result.exits) and "exited" in final, final
    assert any(WIDGET in b or "findings" in str(b.get("text/plain", "")) for b in bundles)
    assert "Verdict: as expected" in cap.stdout
    assert magics.STATE.diagnosis is result.diagnosis


@pytest.mark.parametrize(
    "line, match",
    [
        ("repro", "Usage: %ncclnb repro"),
        ("repro no_such", "unknown scenario"),
        ("repro duplicate_rank --guarded", "no 'guarded' variant"),
        ("repro duplicate_rank --nproc x", "needs a number"),
    ],
)
def test_repro_bad_arguments_are_usage_errors(ip, line, match):
    with pytest.raises(UsageError, match=match):
        ip.run_line_magic("ncclnb", line)


def test_repro_list(ip):
    cap = _run(ip, "repro list")
    assert "unseeded_split_desync" in cap.stdout and "alltoall_unpaired" in cap.stdout
    with capture_output():
        found = ip.run_line_magic("ncclnb", "repro list")
    assert "unseeded_split_desync" in found and found["unseeded_split_desync"].seed == "003"


def _survey_report(tmp_path):
    """two-node-h100 with a link test and a finding naming rank 9, saved as the survey writes it."""
    from ncclnb.model import Finding
    from ncclnb.model.cluster import LinkMeasurement, LinkTest

    rep = ncclnb.load("two-node-h100")
    test = LinkTest(
        "gloo", "cpu", 16, 2, 5, tuple(LinkMeasurement("all_reduce", 1 << k, 10.0 + k, 0.1 * k, 0.2 * k) for k in range(3, 20, 4))
    )
    flagged = Finding(
        rule="rank_affinity_numa",
        category="device_mapping",
        severity="warning",
        confidence=0.6,
        title="rank 9 runs on CPUs of the far NUMA node",
        ranks=(9,),
        hosts=("h100-node1",),
    )
    path = tmp_path / "report.json"
    path.write_text(json.dumps(dataclasses.replace(rep, links=(test,), findings=(flagged,)).to_dict()))
    return path


def test_jobmap_and_links_verbs(ip, tmp_path):
    _run(ip, f"load {_survey_report(tmp_path)}")
    (bundle,) = _bundles(_run(ip, "jobmap"))
    assert WIDGET in bundle and "Job map" in bundle["text/html"]
    assert "rank 9 runs on CPUs of the far NUMA node" in bundle["text/html"]  # the report's own finding, marked
    assert bundle["text/plain"].startswith("ncclnb job map: 2 nodes, 16 ranks, 1 named")
    (bundle,) = _bundles(_run(ip, "links"))
    assert WIDGET in bundle and "Link results" in bundle["text/html"] and "gloo on cpu" in bundle["text/html"]
    (bundle,) = _bundles(_run(ip, "dashboard"))
    for part in ("Job map", "Link results"):
        assert part in bundle["text/html"], part
    # a report with no link test: the view says so
    (bundle,) = _bundles(_run(ip, "links two-node-h100"))
    assert "no link test in this report (ran with --no-link-test?)" in bundle["text/html"]
    for verb in ("jobmap", "links"):
        assert verb in magics.USAGE and verb in magics.VERBS and verb in magics.HANDLERS
