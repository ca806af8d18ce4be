"""ncclnb.errors: the user's mistakes are InputErrors (one line, exit 2); any
other exception is a bug and keeps its traceback; NCCLNB_STRICT makes the
readers that never raise on purpose raise a bug again."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError as MagicUsageError

from ncclnb import errors, magics
from ncclnb.cli import UsageError, main
from ncclnb.collectors import _safely
from ncclnb.collectors.parsers import ParseError
from ncclnb.doctor import KnowledgeBaseError
from ncclnb.doctor.sources import DoctorInputError
from ncclnb.doctor.unpickle import PickleRefused
from ncclnb.errors import InputError, NcclnbError, PathError, tolerate
from ncclnb.guard.errors import GuardError
from ncclnb.model import SchemaError
from ncclnb.repro import ScenarioError
from ncclnb.survey import SurveyUsageError
from ncclnb.survey.links import LinkTestUsageError


@pytest.mark.parametrize(
    "cls, kept",
    [
        (SchemaError, ValueError),
        (PickleRefused, ValueError),
        (DoctorInputError, OSError),
        (KnowledgeBaseError, ValueError),
        (ScenarioError, ValueError),
        (SurveyUsageError, ValueError),
        (LinkTestUsageError, SurveyUsageError),
        (ParseError, ValueError),
        (UsageError, InputError),
        (PathError, OSError),
    ],
)
def test_every_input_error_is_one_and_keeps_its_old_base(cls, kept):
    assert issubclass(cls, InputError) and issubclass(cls, NcclnbError) and issubclass(cls, kept)


def test_a_guard_error_is_ncclnbs_own_but_not_an_input_error():
    # it stops a training job on every rank: a RuntimeError as torch.distributed's errors are, never "exit 2"
    assert issubclass(GuardError, NcclnbError) and issubclass(GuardError, RuntimeError)
    assert not issubclass(GuardError, InputError)


def test_a_path_error_keeps_errno_and_file_name():
    try:
        open("/nonexistent-ncclnb-dir/x.json")
    except OSError as exc:
        err = errors.path_error(exc, "x.json")
    assert isinstance(err, OSError) and isinstance(err, InputError) and err.errno == 2
    assert (err.filename, err.strerror) == ("x.json", "No such file or directory")


# --- the strict switch --------------------------------------------------------------------------


def test_strict_raises_a_bug_again_but_not_input_or_expected_failures():
    assert errors.strict()  # tests/conftest.py
    with pytest.raises(KeyError):
        tolerate(KeyError("a bug"))
    tolerate(SchemaError("x", "bad input"))
    tolerate(FileNotFoundError(2, "No such file or directory"), (OSError,))


def test_without_strict_everything_is_tolerated(tolerant):
    assert not errors.strict()
    tolerate(KeyError("a bug"))


def test_a_collector_bug_is_raised_under_strict_and_recorded_without(monkeypatch):
    missing: dict = {}
    with pytest.raises(KeyError):
        _safely("host", lambda: {}["a bug"], None, missing)
    assert _safely("nics", lambda: open("/nonexistent-ncclnb-dir/x").read(), "default", missing) == "default"
    assert missing["nics"].startswith("collector failed: FileNotFoundError")
    monkeypatch.delenv("NCCLNB_STRICT")
    assert _safely("host", lambda: {}["a bug"], None, missing) is None
    assert missing["host"].startswith("collector failed: KeyError")


# --- the command: InputError is one line and exit 2; a bug is a traceback ----------------------------


def test_a_bug_that_raises_valueerror_is_a_traceback_not_a_usage_line(monkeypatch):
    import ncclnb.summary

    def broken(*args, **kwargs):
        raise ValueError("a bug in the summary")

    monkeypatch.setattr(ncclnb.summary, "summary", broken)
    with pytest.raises(ValueError, match="a bug in the summary"):
        main(["show", "hgx-h100"])


def test_an_input_error_at_the_same_place_is_one_line_exit_2(monkeypatch, capsys):
    import ncclnb.summary

    def refuses(*args, **kwargs):
        raise InputError("what to do about it")

    monkeypatch.setattr(ncclnb.summary, "summary", refuses)
    assert main(["show", "hgx-h100"]) == 2
    assert capsys.readouterr().err == "ncclnb show: error: what to do about it\n"


def test_an_output_path_that_cannot_be_written_is_one_line(tmp_path, capsys):
    assert main(["check", "--list", "-o", str(tmp_path / "no-such-dir" / "out.txt")]) == 2
    err = capsys.readouterr().err
    assert err == f"ncclnb check: error: {tmp_path / 'no-such-dir' / 'out.txt'}: No such file or directory\n"


def test_an_unknown_check_id_is_one_line(capsys):
    assert main(["check", "hgx-h100", "--only", "versions_differ,nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ncclnb check: error: --only: unknown check id: nope (known: ") and err.count("\n") == 1


def test_a_survey_out_that_is_a_file_is_one_line(tmp_path, capsys):
    out = tmp_path / "report.json"
    out.write_text("{}")
    assert main(["survey", "--local", "--nproc", "1", "--no-link-test", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ncclnb survey: error: {out}: ") and err.count("\n") == 1


# --- the magics: the same split -------------------------------------------------------------------


@pytest.fixture
def fresh_state(monkeypatch):
    """The magics' remembered target and diagnosis, for this test only."""
    monkeypatch.setattr(magics, "STATE", magics.State())


def test_a_magic_shows_bad_input_as_one_line_and_lets_a_bug_raise(monkeypatch, fresh_state):
    with pytest.raises(MagicUsageError) as got:
        magics.ncclnb_line("load no-such-machine")
    assert "\n" not in str(got.value) and "unknown machine 'no-such-machine'" in str(got.value)
    import ncclnb.views._common

    def broken(target):
        raise LookupError("a bug in resolve")

    monkeypatch.setattr(ncclnb.views._common, "resolve", broken)
    with pytest.raises(LookupError, match="a bug in resolve"):
        magics.ncclnb_line("load hgx-h100")


def test_a_repro_keep_that_is_a_file_is_one_line(tmp_path, capsys):
    keep = tmp_path / "a-file"
    keep.write_text("not a folder")
    assert main(["repro", "run", "duplicate_rank", "--keep", str(keep / "run")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == f"ncclnb repro: error: {keep / 'run'}: Not a directory", err


def test_a_magic_repro_keep_that_is_a_file_is_one_line(tmp_path, fresh_state):
    keep = tmp_path / "a-file"
    keep.write_text("not a folder")
    with pytest.raises(MagicUsageError) as got:
        magics.ncclnb_line(f"repro duplicate_rank --keep {keep / 'run'}")
    assert str(got.value) == f"PathError: {keep / 'run'}: Not a directory"


@pytest.mark.parametrize("strict", [True, False])
def test_the_scanners_numpy_fallback_hides_a_bug_only_without_strict(monkeypatch, strict):
    from ncclnb.doctor import scan

    def broken(*args):
        raise KeyError("a bug in the numpy prefilter")

    monkeypatch.setattr(scan, "_TABLE", None)
    monkeypatch.setattr(scan, "_NUMPY_FAILED", False)
    monkeypatch.setattr(scan, "_QuadTable", broken)
    if not strict:
        monkeypatch.delenv("NCCLNB_STRICT")
    data = b"node1:12:34 [0] NCCL WARN Call to connect returned Connection refused\nplain line\n"
    if strict:
        with pytest.raises(KeyError):
            scan._filter(data, 0, len(data), 4096, numpy_min=0)
    else:  # the pure-Python sweeps give the same lines a user would get
        got = scan._filter(data, 0, len(data), 4096, numpy_min=0)
        assert got == scan._py_filter(data, 0, len(data), 4096) and got[0]  # the WARN line is a candidate
        assert scan._NUMPY_FAILED


def test_a_view_of_a_report_without_snapshots_is_one_line(tmp_path, fresh_state):
    import dataclasses
    import json

    import ncclnb

    empty = dataclasses.replace(ncclnb.load("survey-demo"), snapshots=())  # a valid report: ranks, no node snapshot
    path = tmp_path / "report.json"
    path.write_text(json.dumps(empty.to_dict()))
    magics.ncclnb_line(f"load {path}")
    for verb in ("topo", "numa"):
        with pytest.raises(MagicUsageError, match="the report holds no node snapshot to draw"):
            magics.ncclnb_line(verb)
