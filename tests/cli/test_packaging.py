"""Packaging: one version source, an SPDX licence with its LICENSE file, no
extra that can pull torch, and the install commands (README, .ci/run) that
put the pinned CPU torch first."""

import importlib.metadata
import re

import pytest

from tests.conftest import REPO

import ncclnb

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")


@pytest.fixture(scope="module")
def project():
    with open(REPO / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)


def test_one_version_source(project):
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "ncclnb.__version__"}
    assert re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+([a-z]+[0-9]+)?", ncclnb.__version__)


def test_installed_metadata_agrees_with_the_package():
    try:
        installed = importlib.metadata.version("ncclnb")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("ncclnb is not installed (only on sys.path)")
    assert installed == ncclnb.__version__


def test_spdx_licence_and_its_file(project):
    meta = project["project"]
    assert meta["license"] == "Apache-2.0" and meta["license-files"] == ["LICENSE"]
    text = (REPO / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text  # the full text, not a notice
    # a licence classifier beside an SPDX expression is refused by setuptools >= 77
    assert not [c for c in meta["classifiers"] if c.startswith("License ::")]
    requires = project["build-system"]["requires"]
    assert any(re.fullmatch(r"setuptools>=(\d+)", r) and int(r.split(">=")[1]) >= 77 for r in requires), requires


def test_classifiers_and_no_invented_urls(project):
    meta = project["project"]
    assert "Programming Language :: Python :: 3" in meta["classifiers"]
    assert "urls" not in meta  # no public home yet: none rather than an invented one


def test_no_dependency_or_extra_names_torch(project):
    """torch is the user's own build, installed first and pinned: an extra that named it would let pip
    pick a multi-GB CUDA build (`pip install -e '.[dev]'` on a fresh venv)."""
    meta = project["project"]
    every = list(meta["dependencies"]) + [r for reqs in meta["optional-dependencies"].values() for r in reqs]
    named = [r for r in every if re.match(r"torch\b", r.strip(), re.I)]
    assert named == []


def _installs(text):
    return [ln for ln in text.splitlines() if "pip install" in ln and not ln.lstrip().startswith("#")]


def test_install_commands_put_the_pinned_cpu_torch_first():
    ci = _installs((REPO / ".ci" / "run").read_text())
    assert "torch==2.13.0" in ci[0] and "-e '.[dev]'" in ci[1], ci
    readme = (REPO / "README.md").read_text()
    fresh = [ln for ln in _installs(readme) if "torch" in ln]
    assert fresh, "the README's fresh-machine command"
    for line in fresh:
        assert line.index("torch==2.13.0") < line.index("-e '.["), line
