"""The committed guided notebooks are what their reviewable sources say.

``notebooks/src/<name>.py`` (jupytext-style percent format) is what people
review; ``notebooks/<name>.ipynb`` is built from it with outputs by
``notebooks/build.py``. ``--check`` starts no kernel, so this stays fast; the
notebooks themselves are executed and exported by
``tests/browser/test_exported_notebooks.py``.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BUILD = REPO / "notebooks" / "build.py"


def _build_module():
    spec = importlib.util.spec_from_file_location("ncclnb_notebooks_build", BUILD)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_committed_notebooks_match_their_sources():
    proc = subprocess.run([sys.executable, str(BUILD), "--check"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "match their sources" in proc.stdout


def test_parser_reads_percent_format():
    build = _build_module()
    cells = build.parse(
        "# a header comment\n\n"
        "# %% [markdown]\n# # Title\n#\n# text\n\n"
        "# %%\nimport os\n\nx = 1\n\n"
        '# %% tags=["raises-exception"]\nraise ValueError\n\n'
        '# %% tags=["gpu"]\nimport torch\n'
    )
    assert cells == [
        {"cell_type": "markdown", "source": "# Title\n\ntext", "tags": []},
        {"cell_type": "code", "source": "import os\n\nx = 1", "tags": []},
        {"cell_type": "code", "source": "raise ValueError", "tags": ["raises-exception"]},
        {"cell_type": "code", "source": "import torch", "tags": ["gpu"]},
    ]


@pytest.mark.parametrize(
    "text, needle",
    [
        ("x = 1\n# %%\ny = 2\n", "before the first"),
        ("# %% [markdown]\nnot a comment\n", "must start with '# '"),
        ("# %% tags=[raises]\nx\n", "tags"),
        ("# %% something\nx\n", "unreadable cell options"),
        ("# only a comment\n", "no cells"),
    ],
)
def test_parser_refuses_malformed_sources(text, needle):
    build = _build_module()
    with pytest.raises(build.SourceError, match=needle):
        build.parse(text, "bad.py")


def test_check_names_the_drifted_cell(tmp_path, monkeypatch):
    build = _build_module()
    src = tmp_path / "src"
    src.mkdir()
    (src / "demo.py").write_text("# %% [markdown]\n# Hello\n\n# %%\nprint(1)\n")
    nb = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": "Hello"},
            {"cell_type": "code", "metadata": {}, "source": "print(2)", "outputs": []},
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / "demo.ipynb").write_text(json.dumps(nb))
    (tmp_path / "orphan.ipynb").write_text(json.dumps(nb))
    monkeypatch.setattr(build, "HERE", tmp_path)
    monkeypatch.setattr(build, "SRC", src)
    problems = build.check(sorted(src.glob("*.py")), whole=True)
    assert any("demo.ipynb cell 2" in p and "source" in p for p in problems)
    assert any("orphan.ipynb has no source" in p for p in problems)
