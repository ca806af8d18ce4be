"""``%ncclnb alignment`` and ``%ncclnb pairing`` through IPython's own test
shell: on paths given, on the last diagnosis, and a one-line usage error
when there is nothing to show."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

from ncclnb import magics
from ncclnb.guard.p2p import p2p_plan_line
from tests._shown import shown_bundles

WIDGET = "application/vnd.jupyter.widget-view+json"
FR = Path(__file__).resolve().parents[1] / "doctor" / "fr"


def _run(ip, line):
    with capture_output() as cap:
        ip.run_line_magic("ncclnb", line)
    return shown_bundles(cap.outputs)


def test_alignment_on_a_directory_and_on_the_last_diagnosis(ip, tmp_path):
    shutil.copytree(FR / "desync", tmp_path / "run")
    (bundle,) = _run(ip, f"alignment {tmp_path / 'run'}")
    assert WIDGET in bundle and "Flight-recorder alignment" in bundle["text/html"]
    assert bundle["text/plain"].startswith("ncclnb flight-recorder alignment") and "#4" in bundle["text/plain"]
    _run(ip, f"doctor {tmp_path / 'run'}")
    (again,) = _run(ip, "alignment")
    assert again["text/plain"] == bundle["text/plain"]


def test_pairing_on_plan_lines(ip, tmp_path):
    for r, (sends, recvs) in enumerate([({1: (2, 8)}, {1: (2, 8)}), ({0: (2, 8)}, {0: (2, 8), 2: (1, 8)}), ({}, {})]):
        (tmp_path / f"rank{r}.log").write_text(p2p_plan_line(r, sends, recvs) + "\n")
    (bundle,) = _run(ip, f"pairing {tmp_path}")
    assert WIDGET in bundle and "Send/recv pairing" in bundle["text/html"]
    assert "1 unpaired op" in bundle["text/plain"]


def test_nothing_to_show_is_a_usage_error(ip, tmp_path):
    with pytest.raises(UsageError, match="no run to show"):
        ip.run_line_magic("ncclnb", "alignment")
    (tmp_path / "rank0.log").write_text("hello\n")
    with pytest.raises(UsageError, match="no send/recv in"):
        ip.run_line_magic("ncclnb", f"pairing {tmp_path}")
    with pytest.raises(UsageError, match="no flight-recorder dumps in"):
        ip.run_line_magic("ncclnb", f"alignment {tmp_path}")


def test_verbs_are_documented():
    for verb in ("alignment", "pairing"):
        assert verb in magics.USAGE and verb in magics.VERBS and verb in magics.HANDLERS
