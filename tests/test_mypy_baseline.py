"""tools/mypy_baseline.py: mypy's errors counted per file, held to a baseline that may only shrink.

mypy itself runs in CI (.ci/run); here its output is given as text, the
lines in the form mypy 2.4 prints them."""

from __future__ import annotations

import importlib.util
import json

import pytest

from tests.conftest import REPO

_spec = importlib.util.spec_from_file_location("mypy_baseline", REPO / "tools" / "mypy_baseline.py")
mb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mb)

OUTPUT = f"""\
ncclnb/views/ranks.py:12: error: Need type annotation for "seen"  [var-annotated]
ncclnb/views/ranks.py:40:7: error: Item "None" of "Gpu | None" has no attribute "name"  [union-attr]
ncclnb/doctor/scan.py:357: note: By default the bodies of untyped functions are not checked  [annotation-unchecked]
{REPO}/ncclnb/model/node.py:9: error: Incompatible return value type (got "int", expected "str")  [return-value]
ncclnb/cli/show_verb.py: note: In function "main":
"""


def test_errors_are_counted_per_file_and_notes_are_not():
    errors = mb.errors_by_file(OUTPUT, REPO)
    assert {f: len(v) for f, v in errors.items()} == {"ncclnb/views/ranks.py": 2, "ncclnb/model/node.py": 1}
    assert errors["ncclnb/model/node.py"][0].endswith("[return-value]")


def test_compare_names_files_over_and_under_their_baseline():
    over, under = mb.compare({"a.py": 3, "b.py": 1, "new.py": 1}, {"a.py": 2, "b.py": 4, "gone.py": 5})
    assert over == {"a.py": (3, 2), "new.py": (1, 0)}
    assert under == {"b.py": (1, 4), "gone.py": (0, 5)}


def test_update_only_lowers():
    assert mb.lowered({"a.py": 3, "b.py": 1, "new.py": 7}, {"a.py": 2, "b.py": 4, "gone.py": 5}) == {"a.py": 2, "b.py": 1}


@pytest.fixture
def baseline(tmp_path, monkeypatch):
    """A baseline file, and mypy's run replaced by OUTPUT (exit 1: errors found)."""
    path = tmp_path / "baseline.json"
    monkeypatch.setattr(mb, "run_mypy", lambda: (1, OUTPUT))

    def write(files):
        path.write_text(json.dumps({"files": files}))
        return path

    return write


def test_a_file_over_its_baseline_fails_and_its_errors_are_printed(baseline, capsys):
    path = baseline({"ncclnb/views/ranks.py": 1, "ncclnb/model/node.py": 1})
    assert mb.main(["--baseline", str(path)]) == 1
    out = capsys.readouterr().out
    assert "ncclnb/views/ranks.py: 2 mypy errors, baseline 1:" in out
    assert 'no attribute "name"' in out and "node.py: 1" not in out


def test_fewer_errors_pass_and_say_the_baseline_can_be_lowered(baseline, capsys):
    path = baseline({"ncclnb/views/ranks.py": 5, "ncclnb/model/node.py": 1})
    assert mb.main(["--baseline", str(path)]) == 0
    assert "ncclnb/views/ranks.py: 2 mypy errors, baseline 5: lower it" in capsys.readouterr().out
    assert mb.main(["--baseline", str(path), "--update"]) == 0
    assert json.loads(path.read_text())["files"] == {"ncclnb/views/ranks.py": 2, "ncclnb/model/node.py": 1}


def test_a_mypy_crash_is_not_a_pass(baseline, monkeypatch, capsys):
    path = baseline({"ncclnb/views/ranks.py": 9, "ncclnb/model/node.py": 9})
    monkeypatch.setattr(mb, "run_mypy", lambda: (2, "x.py:870: error: INTERNAL ERROR -- Please try using mypy master"))
    assert mb.main(["--baseline", str(path)]) == 2
    assert "mypy did not finish (exit 2)" in capsys.readouterr().err


@pytest.mark.parametrize(
    "text, says",
    [
        ("{", "baseline.json: Expecting property name"),
        ('{"files": {"a.py": -1}}', 'expected {"files": {path: error count}}'),
        ("[]", 'expected {"files": {path: error count}}'),
    ],
)
def test_a_bad_baseline_is_one_line(tmp_path, text, says):
    path = tmp_path / "baseline.json"
    path.write_text(text)
    with pytest.raises(SystemExit) as exc:
        mb.main(["--baseline", str(path)])
    message = str(exc.value)
    assert says in message and "\n" not in message and message.startswith("mypy_baseline: error: ")


def test_the_committed_baseline_reads_and_names_existing_files():
    files = mb.read_baseline(mb.BASELINE)
    assert files and all((REPO / f).is_file() for f in files)
