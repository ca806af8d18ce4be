"""``ncclnb.load()`` opens every schema ncclnb writes, each as its own type,
from the file the writer made: a snapshot and a report (the bundled catalog,
``ncclnb collect``), a diagnosis (``ncclnb doctor --json -o``); a repro
result is loaded in tests/repro/test_scenarios.py from a real run's
``result.json``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ncclnb
from ncclnb.cli import main as cli_main
from ncclnb.errors import InputError
from ncclnb.model import ClusterReport, Diagnosis, NodeSnapshot, SchemaError

SIGNATURES = Path(ncclnb.__file__).resolve().parent / "doctor" / "signatures"


def test_a_diagnosis_written_by_the_doctor_loads_as_a_diagnosis(tmp_path):
    log = SIGNATURES / "gloo_rank_out_of_range.log"
    out = tmp_path / "diagnosis.json"
    assert cli_main(["doctor", str(log), "--json", "-o", str(out)]) == 0
    loaded = ncclnb.load(str(out))
    assert isinstance(loaded, Diagnosis)
    assert loaded == ncclnb.diagnose(str(log))
    assert json.loads(out.read_text())["schema"].startswith("ncclnb.diagnosis/")


def test_snapshots_and_reports_round_trip_through_their_files(tmp_path):
    for name, kind in (("dgx-a100", NodeSnapshot), ("two-node-h100", ClusterReport)):
        value = ncclnb.load(name)
        assert isinstance(value, kind)
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(value.to_dict()))
        assert ncclnb.load(str(path)) == value


def test_a_foreign_or_newer_schema_is_one_line(tmp_path):
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps({"schema": "someone.else/1"}))
    with pytest.raises(SchemaError) as err:
        ncclnb.load(str(foreign))
    assert "foreign.json" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(InputError):
        ncclnb.load(str(tmp_path / "absent.json"))


def test_a_diagnosis_from_a_newer_ncclnb_says_upgrade(tmp_path):
    data = ncclnb.diagnose(str(SIGNATURES / "gloo_rank_out_of_range.log")).to_dict()
    data["schema"] = "ncclnb.diagnosis/99"
    path = tmp_path / "newer.json"
    path.write_text(json.dumps(data))
    with pytest.raises(SchemaError, match="newer ncclnb"):
        ncclnb.load(str(path))
