"""Real browser: JupyterLab + headless Chromium run notebooks/views.ipynb,
and the guided notebooks 00 and 01.

Starts JupyterLab on 127.0.0.1 (free port, token, temp dirs), opens the
notebook in Debian's chromium through playwright (no browser download), runs
every cell, and checks that each view rendered, that clicking and hovering
update it, and that the planted <script>/<img onerror> never ran and shows as
text. Screenshots go to artifacts/screenshots/.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "notebooks" / "views.ipynb"
GUIDED = [REPO / "notebooks" / "00_start_here.ipynb", REPO / "notebooks" / "01_world_size_and_rendezvous.ipynb"]
SHOTS = REPO / "artifacts" / "screenshots"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _lab_page(playwright, failure_shot):
    """A headless Chromium page sized for JupyterLab; on failure the page is
    saved as SHOTS/``failure_shot`` before the error goes on; the browser is
    closed either way."""
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(30_000)
            try:
                yield page
            except BaseException:
                page.screenshot(path=str(SHOTS / failure_shot))
                raise
        finally:
            browser.close()


def _write_settings(settings: Path) -> None:
    """Lab settings that keep every cell in the DOM and silence news popups."""
    files = {
        "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none", "autoStartDefaultKernel": True},
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
    }
    for rel, value in files.items():
        path = settings / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))


def _stop(proc: subprocess.Popen, base: str, token: str) -> None:
    """Shut JupyterLab down with its kernels; then kill whatever is left."""
    import psutil

    try:
        children = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        children = []
    try:
        req = urllib.request.Request(f"{base}/api/shutdown", method="POST", headers={"Authorization": f"token {token}"})
        urllib.request.urlopen(req, timeout=5).close()
        proc.wait(timeout=15)
    except Exception:
        pass
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    for child in children:  # kernels run in their own session
        try:
            child.kill()
        except psutil.Error:
            pass


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lab")
    root = tmp / "root"
    root.mkdir()
    for nb in [NOTEBOOK, *GUIDED]:
        if nb.exists():
            shutil.copy(nb, root / nb.name)
    env = dict(os.environ)
    for name in ("config", "runtime", "data", "settings", "workspaces", "ipython"):
        (tmp / name).mkdir()
    # Temp user dirs; sys.prefix/share/jupyter (the widget and plotly lab
    # extensions, the python3 kernel) stays on the data path.
    env.update(
        JUPYTER_CONFIG_DIR=str(tmp / "config"),
        JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
        JUPYTER_DATA_DIR=str(tmp / "data"),
        JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"),
        IPYTHONDIR=str(tmp / "ipython"),
        JUPYTER_PLATFORM_DIRS="1",
    )
    env.pop("JUPYTER_PATH", None)
    _write_settings(tmp / "settings")
    port, token = _free_port(), os.urandom(12).hex()
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--LabApp.expose_app_in_browser=True",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log = open(tmp / "lab.log", "wb")
    proc = subprocess.Popen(cmd, env=env, cwd=root, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                raise RuntimeError("JupyterLab exited:\n" + (tmp / "lab.log").read_text(errors="replace")[-3000:])
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("JupyterLab did not answer within 90 s")
                time.sleep(0.5)
        yield base, token, tmp
    finally:
        _stop(proc, base, token)
        log.close()


JS_ALL_RAN = """() => {
  const prompts = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')]
      .map(e => e.textContent.trim());
  return prompts.length > 0 && prompts.every(t => /^\\[\\d+\\]:$/.test(t));
}"""


JS_KERNEL_READY = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.connectionStatus === 'connected' && k.status === 'idle';
}"""


def _wait_for_kernel(page, seconds=120):
    """Until the notebook's kernel is connected and idle; accepts the
    "Select Kernel" dialog (python3 preselected) if it shows up."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        accept = page.locator(".jp-Dialog .jp-mod-accept")
        if accept.count():
            accept.first.click()
        if page.evaluate(JS_KERNEL_READY):
            return
        page.wait_for_timeout(500)
    raise AssertionError(f"the notebook's kernel was not ready within {seconds} s")


def _cell_box(page, scope, row, col):
    """Page coordinates of heatmap cell (row, col) of the first plot in scope."""
    info = scope.locator(".js-plotly-plot").first.evaluate(
        """gd => { const r = gd.querySelector('.nsewdrag').getBoundingClientRect();
                   return {x: r.x, y: r.y, w: r.width, h: r.height,
                           rows: gd.data[0].z.length, cols: gd.data[0].z[0].length}; }"""
    )
    return (info["x"] + info["w"] * (col + 0.5) / info["cols"], info["y"] + info["h"] * (row + 0.5) / info["rows"])


def _click_and_wait_detail(page, scope, row, col, needle):
    detail = scope.locator(".ncclnb-detail").first
    before = detail.inner_text()
    scope.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
    x, y = _cell_box(page, scope, row, col)
    page.mouse.move(x, y)
    page.wait_for_selector(".hoverlayer .hovertext", timeout=10_000)  # hover shows the cell's label
    page.mouse.click(x, y)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        text = detail.inner_text()
        if text != before and needle in text:
            return text
        page.wait_for_timeout(200)
    raise AssertionError(f"detail pane did not change after a click (still {detail.inner_text()!r})")


def test_views_render_and_respond_in_jupyterlab(lab):
    playwright = pytest.importorskip("playwright.sync_api")
    base, token, tmp = lab
    SHOTS.mkdir(parents=True, exist_ok=True)
    with _lab_page(playwright, "failure.png") as page:
        page.goto(f"{base}/lab/tree/{NOTEBOOK.name}?token={token}")
        page.wait_for_selector(".jp-Notebook .jp-CodeCell", timeout=90_000)
        page.wait_for_function("() => window.jupyterapp && document.querySelector('.jp-Notebook')", timeout=30_000)
        _wait_for_kernel(page)
        # the committed notebook carries outputs: clear them so every prompt must be re-earned
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
        # fire and forget: the command's promise settles only when all cells ran
        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
        page.wait_for_function(JS_ALL_RAN, timeout=240_000, polling=500)

        errors = page.eval_on_selector_all(
            ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']", "els => els.map(e => e.textContent)"
        )
        tracebacks = [e for e in errors if "Traceback" in e or "Error" in e]
        assert not tracebacks, "cells failed:\n" + "\n---\n".join(t[-1500:] for t in tracebacks)

        # every view rendered in its output area
        for cls in ("ncclnb-topology", "ncclnb-numa", "ncclnb-ranks"):
            page.wait_for_selector(f".jp-OutputArea-output .jupyter-widgets.{cls} .js-plotly-plot .main-svg", timeout=60_000)
        page.wait_for_selector(".jp-OutputArea-output .jupyter-widgets.ncclnb-versions table", timeout=30_000)
        page.wait_for_selector(".jp-OutputArea-output .jupyter-widgets.ncclnb-diagnosis-view .ncclnb-finding", timeout=30_000)
        page.wait_for_selector(".jp-OutputArea-output .jupyter-widgets.ncclnb-dashboard .lm-TabBar-tab", timeout=30_000)
        # every live figure on show has drawn data, and every view's static copy gave way to its live widget
        page.wait_for_function(f"() => ({JS_LIVE_DRAWN})() === true", timeout=90_000, polling=500)
        assert page.locator(".jp-OutputArea-output .jupyter-widgets.ncclnb-topology").count() >= 3  # node, magic, hostile

        # topology: hover shows a label, click fills the detail pane
        topo = page.locator(".jp-OutputArea-output .jupyter-widgets.ncclnb-topology").first
        text = _click_and_wait_detail(page, topo, 0, 2, "↔")
        assert "GPU0" in text and "GPU" in text.split("↔")[1]
        topo.screenshot(path=str(SHOTS / "topology.png"))

        # typing a GPU set redraws the figure in place
        title_before = topo.locator(".gtitle").first.text_content()
        topo.locator(".ncclnb-gpus input").fill("2,3")
        topo.locator(".ncclnb-gpus input").press("Enter")
        page.wait_for_function(
            "el => el.querySelector('.gtitle').textContent.includes('GPUs in use: GPU2, GPU3')",
            arg=topo.element_handle(),
            timeout=20_000,
        )
        assert topo.locator(".gtitle").first.text_content() != title_before
        page.mouse.move(5, 5)  # no hover label over the picture
        topo.screenshot(path=str(SHOTS / "topology-gpus-2-3.png"))

        numa = page.locator(".jp-OutputArea-output .jupyter-widgets.ncclnb-numa").first
        numa.scroll_into_view_if_needed()
        assert numa.locator(".scatterlayer .point").count() >= 4
        numa.screenshot(path=str(SHOTS / "numa.png"))

        ranks = page.locator(".jp-OutputArea-output .jupyter-widgets.ncclnb-ranks").first
        text = _click_and_wait_detail(page, ranks, 0, 0, "rank")
        assert "WORLD_SIZE" in text or "missing" in text
        page.mouse.move(5, 5)
        ranks.screenshot(path=str(SHOTS / "ranks.png"))

        versions = page.locator(".jp-OutputArea-output .jupyter-widgets.ncclnb-versions").first
        versions.scroll_into_view_if_needed()
        red = versions.evaluate(
            "el => [...el.querySelectorAll('td')].filter(td => ['rgb(248, 215, 218)', 'rgb(255, 243, 205)'].includes(getComputedStyle(td).backgroundColor)).length"
        )
        assert red >= 1, "no version cell is highlighted as differing"
        cols_all = versions.locator("thead th").count()
        versions.screenshot(path=str(SHOTS / "versions.png"))
        versions.locator("input[type=checkbox]").check()
        page.wait_for_function(
            "([el, n]) => el.querySelectorAll('thead th').length < n", arg=[versions.element_handle(), cols_all], timeout=20_000
        )

        diag = page.locator(".jp-OutputArea-output .jupyter-widgets.ncclnb-diagnosis-view").first
        diag.scroll_into_view_if_needed()
        diag.screenshot(path=str(SHOTS / "diagnosis.png"))

        dash = page.locator(".jp-OutputArea-output .jupyter-widgets.ncclnb-dashboard").first
        dash.scroll_into_view_if_needed()
        dash.screenshot(path=str(SHOTS / "dashboard-findings.png"))
        dash.locator(".lm-TabBar-tab", has_text="Ranks").click()
        dash.locator(".ncclnb-ranks .js-plotly-plot .main-svg").first.wait_for(timeout=20_000)
        dash.screenshot(path=str(SHOTS / "dashboard-ranks.png"))

        # the planted markup never ran, and reads as text
        assert page.evaluate("() => window.__pwned") is None
        assert page.evaluate("() => document.querySelectorAll('img[src=\"x\"]').length") == 0
        hostile = page.locator(".jp-OutputArea-output .jupyter-widgets.ncclnb-topology").last
        hostile.scroll_into_view_if_needed()
        shown = hostile.text_content()
        assert '<script>window.__pwned=1</script>' in shown
        assert '<img src=x onerror="window.__pwned=2">' in shown
        hostile.screenshot(path=str(SHOTS / "hostile-hostname.png"))
        page.screenshot(path=str(SHOTS / "notebook.png"))


# True once every live figure with a place on the page (not a hidden tab's) has
# drawn marks, none says it could not draw, and no view's static copy is still
# shown beside its live widget; else a string saying what is missing.
JS_LIVE_DRAWN = """() => {
  const marks = '.plot .point, .plot .js-line, .plot .textpoint, .heatmaplayer image, .barlayer path, .shapelayer path';
  const shown = [...document.querySelectorAll('.jp-OutputArea-output .ncclnb-live-figure')]
      .filter(el => el.getBoundingClientRect().width > 0);
  if (!shown.length) return 'no live figure on the page';
  const failed = shown.filter(el => /could not/.test(el.textContent));
  if (failed.length) return 'could not draw: ' + failed[0].textContent;
  const blank = shown.filter(el => !el.querySelector('.js-plotly-plot') || !el.querySelector('.js-plotly-plot').querySelectorAll(marks).length);
  if (blank.length) return blank.length + ' of ' + shown.length + ' live figures have no data drawn';
  const statics = [...document.querySelectorAll('.jp-OutputArea-output .ncclnb-static[data-ncclnb-static]')]
      .filter(el => !el.parentElement.closest('.ncclnb-static') && el.style.display !== 'none');
  if (statics.length) return statics.length + ' static copies still shown beside their live view';
  return true;
}"""


JS_PLOTS_DRAWN = """(sel) => [...document.querySelectorAll(sel)].filter(svg => {
  const box = svg.getBoundingClientRect();
  return box.width > 0 && box.height > 0 && svg.querySelectorAll('path, rect').length > 0;
}).length"""


def _open_and_run_all(page, base, token, name, seconds):
    # a workspace of its own: the lab reopens no other notebook beside this one
    workspace = "w" + "".join(c for c in name.split(".")[0] if c.isalnum())
    page.goto(f"{base}/lab/workspaces/{workspace}/tree/{name}?reset&token={token}")
    page.wait_for_selector(".jp-Notebook .jp-CodeCell:visible", timeout=90_000)
    page.wait_for_function("() => window.jupyterapp && document.querySelector('.jp-Notebook')", timeout=30_000)
    _wait_for_kernel(page)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    page.wait_for_function(JS_ALL_RAN, timeout=seconds * 1000, polling=1000)
    errors = page.eval_on_selector_all(
        ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']", "els => els.map(e => e.textContent)"
    )
    tracebacks = [e for e in errors if "Traceback" in e]
    # cells tagged raises-exception fail on purpose; any other traceback is a bug
    allowed = page.evaluate("""() => window.jupyterapp.shell.currentWidget.content.widgets
        .filter(c => (c.model.getMetadata('tags') || []).includes('raises-exception')).length""")
    assert len(tracebacks) <= allowed, "cells failed:\n" + "\n---\n".join(t[-1500:] for t in tracebacks)


@pytest.mark.parametrize(
    "name, view, seconds",
    [
        ("00_start_here.ipynb", "ncclnb-dashboard", 150),
        ("01_world_size_and_rendezvous.ipynb", "ncclnb-ranks", 240),
    ],
)
def test_guided_notebook_runs_and_its_views_draw(lab, name, view, seconds):
    """Run all of a guided notebook (its live reproductions included) and
    check that its live view drew a non-empty plotly SVG."""
    playwright = pytest.importorskip("playwright.sync_api")
    if not (REPO / "notebooks" / name).exists():
        pytest.skip(f"notebooks/{name} is not built")
    base, token, tmp = lab
    SHOTS.mkdir(parents=True, exist_ok=True)
    with _lab_page(playwright, f"failure-{name.split('_')[0]}.png") as page:
        _open_and_run_all(page, base, token, name, seconds)
        scope = page.locator(f".jp-OutputArea-output .jupyter-widgets.{view}:visible").first  # not a hidden tab's copy
        scope.wait_for(timeout=30_000)
        scope.scroll_into_view_if_needed()
        if view == "ncclnb-dashboard":  # the first tab holds findings; the plots sit in the others
            scope.locator(".lm-TabBar-tab", has_text="Ranks").click()
        sel = f".jp-OutputArea-output .jupyter-widgets.{view} .js-plotly-plot .main-svg"
        page.wait_for_function(f"() => ({JS_PLOTS_DRAWN})({json.dumps(sel)}) > 0", timeout=30_000)
        # the doctor's card of the live reproduction is in the page too
        assert page.locator(".jp-OutputArea-output .jupyter-widgets.ncclnb-diagnosis-view .ncclnb-finding").count() >= 1
        page.mouse.move(5, 5)
        scope.screenshot(path=str(SHOTS / f"{name.split('_')[0]}-{view}.png"))


def test_static_fallback_renders_offline_after_nbconvert(tmp_path):
    """Run the notebook headless, convert it to HTML (no widget state, as a
    notebook saved from JupyterLab has by default) and open the file in
    Chromium with no network: every view's figure shows from the text/html
    fallback (an inline SVG, no plotly.js in the page), and the planted
    markup stays inert."""
    playwright = pytest.importorskip("playwright.sync_api")
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    nb = nbformat.read(NOTEBOOK, as_version=4)
    env_backup = os.environ.get("IPYTHONDIR")
    os.environ["IPYTHONDIR"] = str(tmp_path / "ipython")
    try:
        NotebookClient(
            nb, timeout=180, kernel_name="python3", store_widget_state=False, resources={"metadata": {"path": str(tmp_path)}}
        ).execute()
    finally:
        if env_backup is None:
            os.environ.pop("IPYTHONDIR", None)
        else:
            os.environ["IPYTHONDIR"] = env_backup
    html, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    assert "<script>window.__pwned=1</script>" not in html
    assert "Plotly.newPlot" not in html and "plotly.js" not in html  # the static copies need no script
    page_file = tmp_path / "views.html"
    page_file.write_text(html, encoding="utf-8")
    SHOTS.mkdir(parents=True, exist_ok=True)
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            context = browser.new_context(offline=True, viewport={"width": 1200, "height": 900})
            page = context.new_page()
            page.goto(page_file.as_uri())
            page.wait_for_function("() => document.querySelectorAll('svg.ncclnb-figure').length >= 6", timeout=60_000)
            # drawn, not just present: every figure has its cells or markers and a size on the page
            assert page.evaluate(
                "() => [...document.querySelectorAll('svg.ncclnb-figure')].every("
                "s => s.getBoundingClientRect().height > 100 && s.querySelector('rect, circle'))"
            )
            assert page.evaluate("() => window.__pwned") is None
            assert page.evaluate("() => document.querySelectorAll('img[src=\"x\"]').length") == 0
            assert page.locator("table", has_text="NCCL (torch)").count() >= 1
            page.locator("svg.ncclnb-figure").first.scroll_into_view_if_needed()
            page.screenshot(path=str(SHOTS / "offline-html.png"))
        finally:
            browser.close()


SURVEY_CELLS = [
    "import dataclasses\nimport ncclnb\nfrom ncclnb.model import Finding\n"
    "from ncclnb.model.cluster import LinkMeasurement, LinkTest, PairMeasurement",
    # the recorded two-node H100 job, one hostname made hostile, a link test and two findings naming ranks
    "HOSTILE = '<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\">'\n"
    "rep = ncclnb.load('two-node-h100')\n"
    "snaps = (rep.snapshots[0], dataclasses.replace(rep.snapshots[1], host=dataclasses.replace(rep.snapshots[1].host, hostname=HOSTILE)))\n"
    "ranks = tuple(dataclasses.replace(r, host=HOSTILE) if r.host == 'h100-node1' else r for r in rep.ranks)\n"
    "results = tuple(LinkMeasurement(c, 1 << k, 8 + (1 << k) / 4e4, (1 << k) / (8 + (1 << k) / 4e4) / 1e3,\n"
    "                                f * (1 << k) / (8 + (1 << k) / 4e4) / 1e3)\n"
    "                for c, f in (('all_reduce', 1.875), ('all_gather', 0.9375)) for k in range(3, 27, 2))\n"
    "pairs = tuple(PairMeasurement(s, (s + 8) % 16, ranks[s].host, ranks[(s + 8) % 16].host, 1 << 26,\n"
    "                              12000.0 if s == 3 else 3000.0, (1 << 26) / (12000.0 if s == 3 else 3000.0) / 1e3)\n"
    "              for s in range(16))\n"
    "test = LinkTest('nccl', 'cuda', 16, 2, 20, results, pairs)\n"
    "rep = dataclasses.replace(rep, snapshots=snaps, ranks=ranks, links=(test,))\n"
    "rep = dataclasses.replace(rep, findings=tuple(ncclnb.check(rep, only='link_slow_pair')) + (\n"
    "    Finding(rule='rank_affinity_numa', category='device_mapping', severity='warning', confidence=0.8,\n"
    "            title='rank 5 runs on the far NUMA node', ranks=(5,), hosts=('h100-node0',)),))",
    "ncclnb.show_job_map(rep)",
    "ncclnb.show_links(rep)",
]


def test_job_map_and_link_results_draw_in_jupyterlab(lab):
    """The survey's two views in a notebook of their own: the job map and
    both link figures draw non-empty plotly SVGs, the job map's diamond
    marks the ranks the findings name, the slow pair's bar is red, a
    click fills the detail pane, and the hostile hostname stays text."""
    playwright = pytest.importorskip("playwright.sync_api")
    import nbformat

    base, token, tmp = lab
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src) for src in SURVEY_CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp / "root" / "survey_views.ipynb")
    SHOTS.mkdir(parents=True, exist_ok=True)
    with _lab_page(playwright, "failure-survey-views.png") as page:
        _open_and_run_all(page, base, token, "survey_views.ipynb", 120)
        for view, plots in (("ncclnb-jobmap", 1), ("ncclnb-links", 2)):
            sel = f".jp-OutputArea-output .jupyter-widgets.{view} .js-plotly-plot .main-svg"
            page.wait_for_function(f"() => ({JS_PLOTS_DRAWN})({json.dumps(sel)}) >= {plots}", timeout=60_000)
        jobmap = page.locator(".jp-OutputArea-output .jupyter-widgets.ncclnb-jobmap").first
        jobmap.scroll_into_view_if_needed()
        # the heatmap's cells and one diamond per marked GPU cell: ranks 5 (finding) and 3, 11 (slow pair)
        assert jobmap.locator(".heatmaplayer image, .heatmaplayer path, .hm image").count() >= 1
        assert jobmap.locator(".scatterlayer .point").count() == 3
        text = _click_and_wait_detail(page, jobmap, 0, 1, "rank")
        assert "GPU" in text
        page.mouse.move(5, 5)
        jobmap.screenshot(path=str(SHOTS / "jobmap.png"))
        links = page.locator(".jp-OutputArea-output .jupyter-widgets.ncclnb-links").first
        links.scroll_into_view_if_needed()
        assert links.locator(".scatterlayer .trace").count() >= 2  # all_reduce and all_gather lines
        red = links.evaluate(
            "el => [...el.querySelectorAll('.barlayer .point path')]"
            ".filter(p => getComputedStyle(p).fill === 'rgb(215, 48, 39)').length"
        )
        assert red == 1, red
        links.screenshot(path=str(SHOTS / "links.png"))
        assert page.evaluate("() => window.__pwned") is None
        assert page.evaluate("() => document.querySelectorAll('img[src=\"x\"]').length") == 0
        assert '<script>window.__pwned=1</script>' in jobmap.text_content()
