"""Real installs in fresh venvs (issue 12, packaging): the light core works on
a cluster node without the views' libraries (and says in one line how to get
them), and every dependency at its declared lower bound builds every view.

Both install from PyPI; they skip, saying so, only where PyPI cannot be
reached. torch is never installed here: the light core must not need it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import ncclnb
from ncclnb.views._deps import INSTALL, STACK

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
PIP_TIMEOUT = 900  # seconds for one pip install: a cold cache downloads pandas, numpy, jupyterlab
# a doctor fixture whose whole file names its rule (tests/test_rule_fixtures.py)
DOCTOR_LOG = ROOT / "ncclnb" / "doctor" / "fixtures" / "fr.desync_op"
MACHINE = "seed002-version-mismatch"  # a bundled machine the checks find something on


def _run(cmd, env, timeout=PIP_TIMEOUT, check=True):
    done = subprocess.run([str(c) for c in cmd], env=env, capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        pytest.fail(f"{' '.join(map(str, cmd))} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


@pytest.fixture(scope="session")
def pip_env(tmp_path_factory):
    """The environment for pip and the venvs' commands: one pip cache shared by
    both installs; skips when PyPI cannot be reached (a short download first)."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env.update(PIP_CACHE_DIR=str(tmp_path_factory.mktemp("pip-cache")), PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("NCCLNB_RENDERER", None)
    probe = tmp_path_factory.mktemp("probe")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(probe), "jinja2==3.1.2"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except subprocess.TimeoutExpired:
        pytest.skip("PyPI cannot be reached (pip download jinja2 took over 60 s): the install tests need it")
    if done.returncode != 0:
        pytest.skip(f"PyPI cannot be reached (pip download jinja2 failed: {done.stderr.strip().splitlines()[-1:]})")
    return env


@pytest.fixture(scope="session")
def wheel(pip_env, tmp_path_factory) -> Path:
    """ncclnb's wheel, built from a copy of the sources (an in-tree build would
    pack stale files left in build/)."""
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "ncclnb", src / "ncclnb", ignore=shutil.ignore_patterns("__pycache__"))
    dist = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", dist, src], pip_env)
    (built,) = dist.glob("ncclnb-*.whl")
    return built


def _venv(path: Path, env) -> Path:
    _run([sys.executable, "-m", "venv", path], env)
    return path / "bin"


LIGHT_SCRIPT = (
    """
import json, sys, importlib.util
import ncclnb
out = {"installed": [m for m in sys.argv[2:] if importlib.util.find_spec(m) is not None]}
out["rules"] = [f.rule for f in ncclnb.diagnose(sys.argv[1]).findings]
out["checks"] = sorted(f.rule for f in ncclnb.check(ncclnb.load("%s")))
import ncclnb.guard  # the guards import, torch or not
views = {}
for call in ("show_topology('hgx-h100')", "show_versions('hgx-h100')", "show_job_map('survey-demo')", "dashboard('hgx-h100')"):
    try:
        eval("ncclnb." + call)
        views[call] = None
    except ImportError as exc:
        views[call] = [type(exc).__name__, str(exc)]
out["views"] = views
print(json.dumps(out))
"""
    % MACHINE
)

MAGIC_SCRIPT = """
from IPython.core.error import UsageError
from ncclnb.magics import ncclnb_line
try:
    ncclnb_line("topo hgx-h100")
except UsageError as exc:
    print(exc)
"""


def test_light_core_runs_the_cli_and_names_the_extra_for_a_view(pip_env, wheel, tmp_path):
    """`pip install ncclnb` (no extras, no torch): the CLI and the Python API work,
    give what the full install gives, and a view says in one line what to install."""
    bin_dir = _venv(tmp_path / "light", pip_env)
    _run([bin_dir / "pip", "install", "-q", wheel], pip_env)
    heavy = [*STACK, "torch", "numpy", "IPython"]

    version = _run([bin_dir / "ncclnb", "--version"], pip_env, timeout=60)
    assert ncclnb.__version__ in version.stdout

    doctor = _run([bin_dir / "ncclnb", "doctor", DOCTOR_LOG, "--json"], pip_env, timeout=120)
    expected_rules = [f.rule for f in ncclnb.diagnose(str(DOCTOR_LOG)).findings]
    assert [f["rule"] for f in json.loads(doctor.stdout)["findings"]] == expected_rules
    assert "fr.desync_op" in expected_rules

    check = _run([bin_dir / "ncclnb", "check", MACHINE, "--json"], pip_env, timeout=120)
    expected_checks = sorted(f.rule for f in ncclnb.check(ncclnb.load(MACHINE)))
    assert sorted(f["rule"] for f in json.loads(check.stdout)["findings"]) == expected_checks
    assert expected_checks

    show = _run([bin_dir / "ncclnb", "show", "hgx-h100"], pip_env, timeout=60)
    assert show.stdout.startswith("hgx-h100")
    _run([bin_dir / "ncclnb", "repro", "list"], pip_env, timeout=60)
    # this machine described (pynvml and psutil from the core; no GPU here is a fact, not a failure)
    _run([bin_dir / "ncclnb", "collect", "-o", tmp_path / "node.json"], pip_env, timeout=120)
    _run([bin_dir / "ncclnb", "show", tmp_path / "node.json"], pip_env, timeout=60)

    done = _run([bin_dir / "python", "-c", LIGHT_SCRIPT, DOCTOR_LOG, *heavy], pip_env, timeout=120)
    light = json.loads(done.stdout.splitlines()[-1])
    assert light["installed"] == []
    assert light["rules"] == expected_rules
    assert light["checks"] == expected_checks
    for call, failure in light["views"].items():
        assert failure is not None, f"ncclnb.{call} ran without the views' libraries"
        kind, message = failure
        assert kind == "ViewsNotInstalled" and INSTALL in message and "\n" not in message, (call, failure)

    # a magic without the views: one usage line naming the extra (IPython alone, as a bare kernel has it)
    _run([bin_dir / "pip", "install", "-q", "ipython"], pip_env)
    magic = _run([bin_dir / "python", "-c", MAGIC_SCRIPT], {**pip_env, "NCCLNB_RENDERER": "widget"}, timeout=120)
    lines = magic.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("topo: ") and INSTALL in lines[0], magic.stdout


LOWEST_SCRIPT = r"""
import json, sys
from importlib.metadata import version
from pathlib import Path
import anywidget
import ncclnb, ncclnb.views as viz
from ncclnb.recorded import load

fixtures = Path(ncclnb.__file__).parent / "doctor" / "fixtures"
report, node = load("survey-demo"), load("hgx-h100")
diag = ncclnb.diagnose(str(fixtures / "fr.desync_op"))
views = {
    "topology": viz.show_topology(node),
    "numa": viz.show_numa(node),
    "ranks": viz.show_ranks(report),
    "versions": viz.show_versions(report),
    "diagnosis": viz.show_diagnosis(diag),
    "dashboard": viz.dashboard(report, diag),
    "job_map": viz.show_job_map(report),
    "links": viz.show_links(report),
    "alignment": viz.show_alignment(str(fixtures / "fr.desync_op")),
    "pairing": viz.show_pairing(str(fixtures / "fr.p2p_unmatched")),
}
# the notebook stack itself: a kernel of this venv shows `%ncclnb topo` as a live widget
from jupyter_client.manager import start_new_kernel
km, kc = start_new_kernel(kernel_name="python3")
shown = []
try:
    kc.execute_interactive("%load_ext ncclnb", timeout=120)
    reply = kc.execute_interactive("%ncclnb topo hgx-h100", timeout=120, output_hook=shown.append)
finally:
    kc.stop_channels()
    km.shutdown_kernel(now=True)
print(json.dumps({
    "versions": {name: version(name) for name in sys.argv[1:]},
    "kernel": [reply["content"]["status"]] + [sorted(m["content"]["data"]) for m in shown if m["msg_type"] == "display_data"],
    "static_html": {name: len(view.static_html()) for name, view in views.items()},
    "styler_html": len(viz.version_table(report).to_html()),
    "live_figure_on_anywidget": [isinstance(live, anywidget.AnyWidget) and bool(live.get_state()["figure"]["data"])
                                 for live in views["topology"].live_figures],
}))
"""


def lower_bounds() -> dict[str, str]:
    """Every dependency of the core and of the notebook extra -> its declared
    lower bound (each must declare one: a dependency without one is a failure)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    bounds = {}
    for line in project["dependencies"] + project["optional-dependencies"]["notebook"]:
        req = Requirement(line)
        if req.name == "ncclnb":
            continue
        lows = [spec.version for spec in req.specifier if spec.operator == ">="]
        assert len(lows) == 1, f"{line!r}: no lower bound (>=) in pyproject.toml"
        bounds[req.name] = lows[0]
    return bounds


def test_lowest_declared_versions_build_every_view(pip_env, wheel, tmp_path):
    """Every dependency pinned to its lower bound (what pip resolves beside them
    left free): pip finds a consistent set, every view and its static copy are
    built, the version table through pandas' Styler, the live figure on anywidget,
    and a kernel of that venv shows a magic's live widget."""
    bounds = lower_bounds()
    assert {"plotly", "pandas", "jinja2", "anywidget", "ipywidgets"} <= set(bounds)
    pins = tmp_path / "lowest.txt"
    pins.write_text("".join(f"{name}=={low}\n" for name, low in bounds.items()))
    bin_dir = _venv(tmp_path / "lowest", pip_env)
    _run([bin_dir / "pip", "install", "-q", "-c", pins, f"{wheel}[notebook]"], pip_env)
    _run([bin_dir / "python", "-m", "pip", "check"], pip_env, timeout=120)

    # the kernel from this venv's own kernelspec, not one in the user's data directory
    env = {**pip_env, "JUPYTER_DATA_DIR": str(tmp_path / "jupyter-data")}
    done = _run([bin_dir / "python", "-c", LOWEST_SCRIPT, *bounds], env, timeout=300)
    smoke = json.loads(done.stdout.splitlines()[-1])
    # installed at the bound itself (== compares versions: 8 is 8.0.0)
    assert {name: Requirement(f"{name}=={bounds[name]}").specifier.contains(v) for name, v in smoke["versions"].items()} == {
        name: True for name in bounds
    }, smoke["versions"]
    assert all(size > 0 for size in smoke["static_html"].values()), smoke["static_html"]
    assert smoke["styler_html"] > 0
    assert smoke["live_figure_on_anywidget"] == [True]
    status, *displays = smoke["kernel"]
    assert status == "ok" and any("application/vnd.jupyter.widget-view+json" in mimes for mimes in displays), smoke["kernel"]
