"""Text and HTML forms: the model's ``_repr_pretty_`` / ``_repr_html_``, the
one place that decides between widget, static HTML and text
(``magics.renderer``), magics that return what they showed without the shell
echoing it twice, and ``autodiagnose`` as a ``post_run_cell`` callback that
leaves other extensions' handlers alone. Run through IPython's own shell and,
for the terminal, through a real ``python -m IPython`` process."""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.lib.pretty import pretty
from IPython.utils.capture import capture_output

import ncclnb
from tests._shown import shown_bundles
from ncclnb import magics
from ncclnb.terminal import render_diagnosis as render_text
from ncclnb.summary import summary

WIDGET = "application/vnd.jupyter.widget-view+json"
ROOT = Path(__file__).resolve().parents[2]
FR = ROOT / "tests" / "doctor" / "fr"
LOG = "[rank7]: torch.distributed.DistBackendError: NCCL error: invalid usage\nInvalid rank requested : 7/4\n"
HOSTILE = "<script>alert(1)</script>"


def _bundles(cap):
    return shown_bundles(cap.outputs)


def _hostile_snapshot():
    snap = ncclnb.load("l40s-2socket")
    return dataclasses.replace(snap, host=dataclasses.replace(snap.host, hostname=f"evil{HOSTILE}\x1b]0;pwned\x07"))


# --- the model's own forms -------------------------------------------------------


def test_diagnosis_text_form_is_the_full_report():
    diag = ncclnb.diagnose(LOG)
    text = pretty(diag)
    assert text == render_text(diag).rstrip("\n")
    assert "Most likely: Rank 7 started with a world size of 4" in text and "fix " in text
    assert "ncclnb diagnosis:" not in text


def test_snapshot_and_report_text_forms_are_the_summaries():
    snap = ncclnb.load("hgx-h100")
    assert pretty(snap) == summary(snap, width=160)
    report = ncclnb.load("seed002-version-mismatch")
    text = pretty(report)
    assert text.startswith(summary(report, width=160))
    rep = dataclasses.replace(
        report,
        findings=(
            ncclnb.model.Finding(
                rule="r", category="version_mismatch", severity="error", confidence=0.9, title="NCCL differs", ranks=(3,)
            ),
        ),
    )
    assert "ERROR   NCCL differs  ranks 3" in pretty(rep)


def test_text_forms_escape_terminal_controls():
    snap = _hostile_snapshot()
    assert "\x1b" not in pretty(snap) and "\\x1b]0;pwned\\x07" in pretty(snap)
    diag = ncclnb.diagnose(LOG + "NCCL WARN \x1b]0;pwned\x07 Invalid rank\n")
    assert "\x1b]" not in pretty(diag)


def test_html_forms_are_static_and_escape_what_comes_from_logs_and_hosts():
    snap = _hostile_snapshot()
    page = snap._repr_html_()
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    report = ncclnb.model.ClusterReport(snapshots=(snap,), ranks=(ncclnb.model.RankEntry(0, snap.hostname),))
    page = report._repr_html_()
    assert "<script" not in page and "&lt;script&gt;" in page
    diag = ncclnb.diagnose(
        f"[rank7]: NCCL WARN {HOSTILE} on host {HOSTILE}\n" + LOG,
    )
    page = diag._repr_html_()
    assert "<script" not in page and "Rank 7 started with a world size of 4" in page
    for value in (snap, report, diag):  # still frozen values whose JSON is unchanged
        assert type(value).from_dict(json.loads(json.dumps(value.to_dict()))) == value
        with pytest.raises(dataclasses.FrozenInstanceError):
            value.schema = "x"


def test_a_repro_result_reads_as_the_cli_prints_it():
    from ncclnb.model import ReproResult
    from ncclnb.repro import get
    from ncclnb.repro.report import render_text as repro_report

    result = ReproResult(
        "store_host_missing",
        "broken",
        "gloo",
        False,
        3.2,
        f"/tmp/run{HOSTILE}",
        diagnosis=ncclnb.diagnose(LOG),
        notes=("a note",),
    )
    assert pretty(result) == repro_report(result, get("store_host_missing"))
    page = result._repr_html_()
    assert "<script" not in page and "&lt;script&gt;" in page and "Lesson: " in page
    other = dataclasses.replace(result, scenario="from_a_newer_version")  # unknown here: what ran, and the doctor
    assert pretty(other).startswith("from_a_newer_version, broken, on gloo: failed in 3.2 s")
    assert "Most likely: Rank 7 started with a world size of 4" in pretty(other)


def test_a_notebook_shows_the_html_form_and_a_terminal_the_text():
    shell = InteractiveShell.instance()
    diag = ncclnb.diagnose(LOG)
    data, _ = shell.display_formatter.format(diag)
    assert data["text/plain"] == pretty(diag) and "ncclnb-diagnosis" in data["text/html"]


def test_the_model_imports_nothing_above_it():
    """The layer rule (DESIGN.md: imports flow down; model is the bottom):
    no module of ncclnb/model imports another package of ncclnb at import
    time, except the leaf ``ncclnb.errors`` every layer may import; the repr
    methods import their renderers inside the method."""
    leaf = "ncclnb.errors"
    for path in sorted((ROOT / "ncclnb" / "model").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:  # module level only: imports inside functions are lazy
            nodes = [node] + ([n for n in ast.walk(node)] if isinstance(node, (ast.If, ast.Try)) else [])
            for n in nodes:
                if isinstance(n, ast.ImportFrom):
                    up = (n.level >= 2 and not (n.level == 2 and n.module == "errors")) or (
                        n.level == 0
                        and (n.module or "").startswith("ncclnb")
                        and not (n.module or "").startswith("ncclnb.model")
                        and n.module != leaf
                    )
                    assert not up, f"{path.name}:{n.lineno} imports {'.' * n.level}{n.module}"
                if isinstance(n, ast.Import):
                    for alias in n.names:
                        assert not (
                            alias.name.startswith("ncclnb") and not alias.name.startswith("ncclnb.model") and alias.name != leaf
                        ), f"{path.name}:{n.lineno} imports {alias.name}"
    code = (
        "import sys, ncclnb.model; "
        "print([m for m in sys.modules if m.startswith('ncclnb.') and not m.startswith('ncclnb.model') and m != 'ncclnb.errors'])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


# --- the renderer --------------------------------------------------------------------


def test_renderer_is_decided_in_one_place(monkeypatch):
    monkeypatch.delenv("NCCLNB_RENDERER", raising=False)
    shell = InteractiveShell.instance()
    assert magics.renderer(shell) == "widget"  # a kernel-like shell with ipywidgets installed

    class TerminalInteractiveShell(InteractiveShell):  # matched by name, as the terminal's own class
        pass

    assert magics.renderer(object.__new__(TerminalInteractiveShell)) == "text"
    monkeypatch.setitem(sys.modules, "google.colab", type(sys)("google.colab"))
    assert magics.renderer(shell) == "static"
    monkeypatch.delitem(sys.modules, "google.colab")
    from ncclnb import _frontend

    assert magics.renderer is _frontend.renderer  # one function decides, for the magics and any other layer
    real = _frontend.importlib.util.find_spec
    monkeypatch.setattr(_frontend.importlib.util, "find_spec", lambda name, *a: None if name == "ipywidgets" else real(name, *a))
    assert magics.renderer(shell) == "static"
    for forced in ("text", "static", "widget"):
        monkeypatch.setenv("NCCLNB_RENDERER", forced.upper())
        assert magics.renderer(shell) == forced
    monkeypatch.setenv("NCCLNB_RENDERER", "bogus")  # ignored
    assert magics.renderer(shell) == "static"


def test_static_renderer_shows_html_and_the_full_text_but_no_widget(ip, monkeypatch, tmp_path):
    monkeypatch.setenv("NCCLNB_RENDERER", "static")
    with capture_output() as cap:
        view = ip.run_line_magic("ncclnb", "topo hgx-h100")
    (bundle,) = _bundles(cap)
    assert WIDGET not in bundle and "<svg" in bundle["text/html"] and "Topology of hgx-h100" in bundle["text/html"]
    assert "Links (nvidia-smi topo -m terms)" in bundle["text/plain"] and "NV18" in bundle["text/plain"]
    assert view.static_html() == bundle["text/html"]
    log = tmp_path / "rank7.log"
    log.write_text(LOG)
    with capture_output() as cap:
        diag = ip.run_line_magic("ncclnb", f"doctor {log}")
    (bundle,) = _bundles(cap)
    assert WIDGET not in bundle and bundle["text/plain"] == pretty(diag) and "Diagnosis" in bundle["text/html"]


def test_static_renderer_without_widgets_shows_the_text_as_html(ip, monkeypatch):
    """A kernel without ipywidgets (a bare JupyterLite): no view can be built,
    the full text is shown as escaped HTML; the widget renderer says what is missing."""
    import ncclnb.views

    def no_widgets(*_args, **_kw):
        raise ImportError("No module named 'ipywidgets'")

    monkeypatch.setattr(ncclnb.views, "show_topology", no_widgets)
    monkeypatch.setenv("NCCLNB_RENDERER", "static")
    with capture_output() as cap:
        shown = ip.run_line_magic("ncclnb", "topo hgx-h100")
    (bundle,) = _bundles(cap)
    assert bundle["text/html"].startswith('<pre class="ncclnb-text"') and "NV18" in bundle["text/html"]
    assert WIDGET not in bundle and shown.hostname == "hgx-h100"
    monkeypatch.setenv("NCCLNB_RENDERER", "widget")
    with pytest.raises(magics.UsageError, match="not available in this install.*ipywidgets"):
        ip.run_line_magic("ncclnb", "topo hgx-h100")


def test_text_renderer_prints_the_full_text_and_displays_nothing(ip, monkeypatch, tmp_path):
    monkeypatch.setenv("NCCLNB_RENDERER", "text")
    log = tmp_path / "rank7.log"
    log.write_text(LOG)
    with capture_output() as cap:
        diag = ip.run_line_magic("ncclnb", f"doctor {log}")
        target = ip.run_line_magic("ncclnb", "load seed000-2node-a10g")
        shown = ip.run_line_magic("ncclnb", "numa")
    assert not cap.outputs
    assert render_text(diag) in cap.stdout and "NUMA placement on seed000-node0" in cap.stdout
    assert shown is target and isinstance(target, ncclnb.ClusterReport)


@pytest.mark.parametrize(
    "line, marker",
    [
        ("jobmap hgx-h100", "Job map\nhgx-h100"),
        ("links hgx-h100", "no link test in this report"),
        ("ranks hgx-h100", "No rank table"),
        ("versions seed002-version-mismatch", "Versions on 2 nodes"),
    ],
)
def test_text_forms_of_views_take_what_the_views_take(ip, monkeypatch, line, marker):
    monkeypatch.setenv("NCCLNB_RENDERER", "text")
    with capture_output() as cap:
        ip.run_line_magic("ncclnb", line)
    assert marker in cap.stdout and not cap.outputs


def test_text_renderer_escapes_hostile_hostnames(ip, monkeypatch, tmp_path):
    monkeypatch.setenv("NCCLNB_RENDERER", "text")
    snap = _hostile_snapshot()
    report = ncclnb.model.ClusterReport(
        snapshots=(snap, ncclnb.load("hgx-h100")),
        ranks=(ncclnb.model.RankEntry(0, snap.hostname, local_rank=0, world_size=2, cpu_affinity="0-3\x1b[2J"),),
    )
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report.to_dict()))
    with capture_output() as cap:
        ip.run_line_magic("ncclnb", f"load {path}")
        for verb in ("topo", "numa", "ranks", "versions", "jobmap", "dashboard"):
            ip.run_line_magic("ncclnb", verb)
    assert "\x1b" not in cap.stdout and "\x07" not in cap.stdout
    assert "\\x1b]0;pwned\\x07" in cap.stdout and HOSTILE in cap.stdout  # shown, harmless on a terminal


# --- magics return what they showed, shown once -----------------------------------


def test_magics_return_what_they_showed(ip, tmp_path):
    log = tmp_path / "rank7.log"
    log.write_text(LOG)
    with capture_output() as cap:
        diag = ip.run_line_magic("ncclnb", f"doctor {log}")
        cell = ip.run_cell_magic("ncclnb_doctor", "", LOG)
        target = ip.run_line_magic("ncclnb", "load seed002-version-mismatch")
        findings = ip.run_line_magic("ncclnb", "check")
        topo = ip.run_line_magic("ncclnb", "topo")
        board = ip.run_line_magic("ncclnb", "dashboard")
    assert isinstance(diag, ncclnb.Diagnosis) and diag.top.category == "rank_world_size_mismatch"
    assert isinstance(cell, ncclnb.Diagnosis) and magics.STATE.diagnosis is cell
    assert target is magics.STATE.target
    assert findings and all(f.category == "version_mismatch" for f in findings)
    assert topo.text.startswith("ncclnb topology view") and board.text.startswith("ncclnb dashboard")
    bundles = _bundles(cap)
    assert [WIDGET in b for b in bundles] == [True] * 5  # doctor, cell, check, topo, dashboard
    # a frontend that shows only text (jupyter console) reads the full diagnosis and findings
    assert bundles[0]["text/plain"] == pretty(diag) and "fix: " in bundles[2]["text/plain"]
    assert bundles[3]["text/plain"].startswith("ncclnb topology view")


def test_a_verb_alone_in_a_cell_is_shown_once_and_still_is_the_result(ip, tmp_path):
    log = tmp_path / "rank7.log"
    log.write_text(LOG)
    with capture_output() as cap:
        result = ip.run_cell(f"%ncclnb doctor {log}")
    assert result.success and isinstance(result.result, ncclnb.Diagnosis)
    assert len(shown_bundles(cap.outputs)) == 1 and "Out[" not in cap.stdout
    assert ip.user_ns["_"] is result.result
    with capture_output() as cap:  # the next cell echoes it as any value
        again = ip.run_cell("_")
    assert again.result is result.result and ("Most likely" in cap.stdout or cap.outputs)
    with capture_output() as cap:  # an assignment shows it once too, and a later expression is echoed
        ip.run_cell("%ncclnb load hgx-h100\n41 + 1")
    assert "Out[" in cap.stdout and "42" in cap.stdout and "hgx-h100 ->" in cap.stdout


# --- autodiagnose ----------------------------------------------------------------------


class DistBackendError(RuntimeError):
    """Stands in for torch.distributed.DistBackendError: matched by name."""


def test_autodiagnose_is_a_post_run_cell_callback_beside_other_extensions(ip):
    seen = []

    def their_handler(shell, etype, value, tb, tb_offset=None):
        seen.append(value)
        return None

    def their_callback(result):
        seen.append("post")

    ip.set_custom_exc((ValueError,), their_handler)
    ip.events.register("post_run_cell", their_callback)
    try:
        ip.user_ns["DistBackendError"] = DistBackendError
        with capture_output():
            ip.run_line_magic("ncclnb", "autodiagnose on")
            ip.run_line_magic("ncclnb", "autodiagnose on")  # twice: still one callback
        callbacks = ip.events.callbacks["post_run_cell"]
        assert callbacks.count(magics._diagnose_failed_cell) == 1 and their_callback in callbacks
        assert ip.custom_exceptions == (ValueError,)  # their handler keeps the slot
        with capture_output() as cap:
            result = ip.run_cell('raise DistBackendError("NCCL error: ncclInvalidUsage: Invalid rank requested : 7/4")')
        assert not result.success and "DistBackendError" in cap.stdout + cap.stderr  # the traceback, then
        (bundle,) = _bundles(cap)
        assert "Diagnosis" in bundle["text/html"] and magics.STATE.diagnosis is not None
        with capture_output() as cap:
            ip.run_cell("raise ValueError('theirs')")
        assert isinstance(seen[-2], ValueError) and seen[-1] == "post" and not cap.outputs
        with capture_output():
            ip.run_line_magic("ncclnb", "autodiagnose off")
        assert magics._diagnose_failed_cell not in ip.events.callbacks["post_run_cell"]
        assert their_callback in ip.events.callbacks["post_run_cell"] and ip.custom_exceptions == (ValueError,)
        with capture_output() as cap:
            ip.run_cell('raise DistBackendError("NCCL error")')
        assert not cap.outputs
        with capture_output():
            ip.run_line_magic("ncclnb", "autodiagnose on")
        ip.run_line_magic("unload_ext", "ncclnb")  # unloading removes ours, not theirs
        assert magics._diagnose_failed_cell not in ip.events.callbacks["post_run_cell"]
        assert magics._forget_shown not in ip.events.callbacks["post_run_cell"]
        assert their_callback in ip.events.callbacks["post_run_cell"] and ip.custom_exceptions == (ValueError,)
        ip.run_line_magic("load_ext", "ncclnb")
    finally:
        ip.events.unregister("post_run_cell", their_callback)
        ip.set_custom_exc((), None)


# --- a real terminal IPython --------------------------------------------------------


def _terminal(tmp_path, *, code=None, stdin=None, timeout=300, extra=()):
    env = {k: v for k, v in os.environ.items() if k not in ("NCCLNB_RENDERER", "NO_COLOR")}
    env.update(IPYTHONDIR=str(tmp_path / "ipython"), TERM="dumb", COLUMNS="160")
    args = [sys.executable, "-m", "IPython", "--no-banner", "--simple-prompt", "--colors=NoColor", *extra]
    if code is not None:
        args += ["-c", code]
    out = subprocess.run(args, input=stdin, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=timeout)
    return out.stdout + out.stderr


def test_terminal_ipython_prints_the_full_text_of_every_magic(tmp_path):
    (tmp_path / "rank7.log").write_text(LOG)
    report = ncclnb.load("two-node-h100")
    test = ncclnb.model.LinkTest("gloo", "cpu", 16, 2, 5, (ncclnb.model.LinkMeasurement("all_reduce", 1 << 20, 10.0, 1.0, 1.9),))
    (tmp_path / "report.json").write_text(json.dumps(dataclasses.replace(report, links=(test,)).to_dict()))
    import shutil

    shutil.copytree(FR / "desync", tmp_path / "run")
    lines = (
        ["%load_ext ncclnb", "%ncclnb doctor rank7.log", "%ncclnb load report.json"]
        + [f"%ncclnb {verb}" for verb in ("topo", "numa", "ranks", "versions", "check", "jobmap", "links", "dashboard")]
        + ["%ncclnb alignment run"]
    )
    out = _terminal(tmp_path, code="\n".join(lines))
    assert "Most likely: Rank 7 started with a world size of 4" in out and "fix " in out
    for marker in (
        "Topology of h100-node0",
        "Links (nvidia-smi topo -m terms)",
        "NUMA placement on h100-node0",
        "Rank map: 16 ranks on 2 nodes",
        "Versions on 2 nodes",
        "checks on 2 nodes).",
        "Job map",
        "Link results",
        "gloo on cpu: 16 ranks on 2 nodes",
        "Checks",
        "Flight-recorder alignment:",
        "first divergence at #4",
    ):
        assert marker in out, marker
    for widget_repr in (
        "ncclnb diagnosis:",
        "ncclnb topology view",
        "ncclnb NUMA view",
        "ncclnb dashboard:",
        "VBox(",
        "Tab(",
        "Traceback",
        "UsageError",
    ):
        assert widget_repr not in out, widget_repr


def test_terminal_ipython_typed_line_by_line_shows_once_and_returns_the_diagnosis(tmp_path):
    (tmp_path / "rank7.log").write_text(LOG)
    out = _terminal(tmp_path, stdin="%load_ext ncclnb\n%ncclnb doctor rank7.log\nd = _\nd.top.rule\nexit\n")
    assert out.count("Most likely: Rank 7 started with a world size of 4") == 1
    assert "'ranks_beyond_world_size'" in out
    assert "ncclnb diagnosis:" not in out
    # the cell magic: the pasted lines, the full report once
    out = _terminal(tmp_path, code="%%ncclnb_doctor\n" + LOG, extra=["--ext=ncclnb"])
    assert out.count("Most likely: Rank 7 started with a world size of 4") == 1 and "ncclnb diagnosis:" not in out


def test_terminal_ipython_typed_views_show_their_text_once(tmp_path):
    # a view verb typed at the prompt prints its text and returns what it showed (the target, the recorder's
    # facts) without the shell echoing that again as Out[N]
    import shutil

    shutil.copytree(FR / "desync", tmp_path / "run")
    out = _terminal(
        tmp_path,
        stdin="%load_ext ncclnb\n%ncclnb load dgx-a100\n%ncclnb topo\n%ncclnb dashboard\n"
        "%ncclnb alignment run\nt = _\nt is not None\nexit\n",
    )
    assert "UsageError" not in out and "Traceback" not in out
    assert out.count("Topology of dgx-a100") == 1 and out.count("Flight-recorder alignment:") == 1
    assert not any(f"Out[{n}]" in out for n in (2, 3, 4, 5))
    assert "Out[7]: True" in out  # each still is the cell's result


def test_terminal_ipython_repro_pairing_snapshot_and_autodiagnose_print_text(tmp_path):
    from ncclnb.guard.p2p import p2p_plan_line

    plans = tmp_path / "plans"
    plans.mkdir()
    for r, (sends, recvs) in enumerate([({1: (2, 8)}, {1: (2, 8)}), ({0: (2, 8)}, {0: (2, 8), 2: (1, 8)}), ({}, {})]):
        (plans / f"rank{r}.log").write_text(p2p_plan_line(r, sends, recvs) + "\n")
    code = "\n".join(
        [
            "%load_ext ncclnb",
            "%ncclnb snapshot",
            "%ncclnb repro list",
            "%ncclnb pairing plans",
            "%ncclnb repro store_host_missing --timeout 3",
            "%ncclnb autodiagnose on",
            "class DistBackendError(RuntimeError): pass",
            "raise DistBackendError('NCCL error: ncclInvalidUsage: Invalid rank requested : 7/4')",
        ]
    )
    out = _terminal(tmp_path, code=code)
    assert "ncclnb: this machine -> node snapshot of" in out
    assert "unseeded_split_desync" in out
    assert "Send/recv pairing: 3 ranks, 1 unpaired op" in out and "no send on the other side" in out
    assert "store_host_missing (broken): ended" in out and "  rank 1: exited 1" in out
    assert "Most likely: Ranks cannot reach the rendezvous store" in out and "Verdict: as expected" in out
    # the traceback first, then the diagnosis of it, in text
    assert out.index("DistBackendError: NCCL error") < out.rindex("Most likely: Rank 7 started with a world size of 4")
    for widget_repr in ("ncclnb diagnosis:", "ncclnb send/recv pairing", "VBox(", "<IPython.core.display"):
        assert widget_repr not in out, widget_repr
