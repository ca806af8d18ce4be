"""`--fail-on error|warning` on doctor and check: exit 1 when a finding of that
severity or worse exists, 0 otherwise, 2 still for bad input, so ncclnb can
gate a Slurm prolog or a CI step. Real processes."""

import json

import pytest

from tests.conftest import REPO

SIGNATURES = REPO / "ncclnb" / "doctor" / "signatures"
ERROR_LOG = SIGNATURES / "watchdog_timeout.log"  # error findings (and info)
WARNING_LOG = SIGNATURES / "barrier_device_unknown.log"  # one warning, nothing worse
QUIET_LOG = b"step 1 loss 2.31\nstep 2 loss 2.07\nsaved checkpoint\n"


def severities(cli, *args, input=None):
    proc = cli(*args, "--json", input=input)
    assert proc.returncode == 0, proc.stderr
    return {f["severity"] for f in json.loads(proc.stdout)["findings"]}


def test_the_fixtures_are_what_the_gates_need(cli):
    assert "error" in severities(cli, "doctor", str(ERROR_LOG))
    assert severities(cli, "doctor", str(WARNING_LOG)) == {"warning"}
    assert severities(cli, "doctor", "-", input=QUIET_LOG) <= {"info"}
    assert "error" in severities(cli, "check", "seed000-2node-a10g")
    assert severities(cli, "check", "seed002-version-mismatch", "--only", "nccl_multiple_libraries") == {"warning"}
    assert severities(cli, "check", "a30-nvlink-pairs") == {"info"}
    assert severities(cli, "check", "hgx-h100") == set()


@pytest.mark.parametrize(
    "args,input,without,on_error,on_warning",
    [
        (["doctor", str(ERROR_LOG)], None, 0, 1, 1),
        (["doctor", str(WARNING_LOG)], None, 0, 0, 1),
        (["doctor", "-"], QUIET_LOG, 0, 0, 0),
        (["check", "seed000-2node-a10g"], None, 0, 1, 1),
        (["check", "seed002-version-mismatch", "--only", "nccl_multiple_libraries"], None, 0, 0, 1),
        (["check", "a30-nvlink-pairs"], None, 0, 0, 0),  # info never fails a gate
        (["check", "hgx-h100"], None, 0, 0, 0),
    ],
    ids=lambda v: " ".join(map(str, v)) if isinstance(v, list) else None,
)
def test_fail_on(cli, args, input, without, on_error, on_warning):
    plain = cli(*args, input=input)
    assert plain.returncode == without, plain.stderr
    for level, code in (("error", on_error), ("warning", on_warning)):
        for extra in ([], ["--json"]):
            proc = cli(*args, *extra, "--fail-on", level, input=input)
            assert proc.returncode == code, (level, extra, proc.stderr)
            assert proc.stderr == ""
            if not extra:
                assert proc.stdout == plain.stdout  # the gate changes the status, not the output


def test_doctor_gate_sees_findings_that_top_hides(cli):
    proc = cli("doctor", str(ERROR_LOG), "--top", "0", "--json", "--fail-on", "error")
    assert proc.returncode == 1 and json.loads(proc.stdout)["findings"] == []


def test_doctor_gate_with_output_file(cli, tmp_path):
    out = tmp_path / "diagnosis.json"
    proc = cli("doctor", str(ERROR_LOG), "--json", "-o", str(out), "--fail-on", "warning")
    assert proc.returncode == 1 and proc.stdout == ""
    assert json.loads(out.read_text())["schema"] == "ncclnb.diagnosis/1"


@pytest.mark.parametrize(
    "args",
    [
        ["doctor", "--fail-on", "error"],  # no input
        ["doctor", "--fail-on", "error", "/no/such/log"],
        ["check", "--fail-on", "error", "no-such-machine"],
        ["check", "--fail-on", "warning"],
    ],
)
def test_bad_input_is_still_2(cli, args):
    proc = cli(*args)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@pytest.mark.parametrize("verb", ["doctor", "check"])
def test_fail_on_takes_error_or_warning_only(cli, verb):
    proc = cli(verb, "--fail-on", "info", "x")
    assert proc.returncode == 2 and "--fail-on" in proc.stderr


@pytest.mark.parametrize("verb", ["doctor", "check"])
def test_help_documents_the_gate(cli, verb):
    text = " ".join(cli(verb, "--help").stdout.split())
    assert "--fail-on error|warning" in text and "exit 1 when" in text
