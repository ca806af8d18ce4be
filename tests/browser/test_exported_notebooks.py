"""Every notebook as people export it: ``jupyter nbconvert --execute --to html``
(the real command, widget state stored as it stores it by default), then
the page opened in Debian's chromium with the network blocked.

Each page must stay under 5 MB and carry no plotly.js; every figure of every
view must show (the static SVG copy is what an offline page draws, since the
live widget's JavaScript comes from a CDN it cannot reach); and every view's
live widget output must come after its static copy, so nbconvert, which
prefers a widget whose state it stored, still has the copy to show. The
gallery is also run out of order (its first view's cell again, last), as a
person re-running cells would, and exported the same way.

Executing the notebooks is also what proves they run: a cell that fails
fails ``nbconvert --execute`` (cells tagged ``raises-exception`` fail on
purpose)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
PAGE_LIMIT = 5_000_000
WIDGET = "application/vnd.jupyter.widget-view+json"
SHOTS = REPO / "artifacts" / "screenshots"


def _browser():
    """Skip the in-browser half where no chromium (or playwright) is here; the
    export and its checks above it have run by then."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api")


def _kernel_env(tmp: Path) -> dict:
    env = dict(os.environ)
    env.update(IPYTHONDIR=str(tmp / "ipython"), JUPYTER_PLATFORM_DIRS="1", PYDEVD_DISABLE_FILE_VALIDATION="1")
    return env


def _export(notebook: Path, out: Path, env: dict) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "jupyter", "nbconvert", "--execute", "--to", "html", "--output-dir", str(out), str(notebook)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Every notebook exported as ``nbconvert --execute --to html`` does it,
    two at a time (the guided notebooks wait on their reproductions)."""
    tmp = tmp_path_factory.mktemp("exported")
    env = _kernel_env(tmp)
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = dict(zip(NOTEBOOKS, pool.map(lambda nb: _export(nb, tmp, env), NOTEBOOKS)))
    return tmp, runs


def _drawn_offline(page_file: Path, shot: str) -> dict:
    """Open ``page_file`` with the network blocked; what its figures show."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            context = browser.new_context(offline=True, viewport={"width": 1200, "height": 900})
            page = context.new_page()
            page.goto(page_file.as_uri())
            page.wait_for_load_state("load")
            seen = page.evaluate(
                """() => {
                  const figures = [...document.querySelectorAll('svg.ncclnb-figure')];
                  const drawn = figures.filter(s => {
                    const box = s.getBoundingClientRect();
                    return box.width > 100 && box.height > 100 && s.querySelector('rect, circle, path, polygon')
                      && getComputedStyle(s).visibility !== 'hidden' && s.closest('[style*="display: none"]') === null;
                  });
                  return {figures: figures.length, drawn: drawn.length, pwned: window.__pwned ?? null};
                }"""
            )
            if seen["figures"]:
                page.locator("svg.ncclnb-figure").first.scroll_into_view_if_needed()
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / shot))
            return seen
        finally:
            browser.close()


def _check_outputs(nb) -> int:
    """Every live widget output of a view follows the view's static copy in
    its cell; the number of views."""
    views = 0
    for cell in nb.cells:
        outputs = [o for o in cell.get("outputs", ()) if o.get("output_type") in ("display_data", "execute_result")]
        for k, out in enumerate(outputs):
            if WIDGET in out.get("data", {}):
                static = [o for o in outputs[:k] if "data-ncclnb-static" in str(o.get("data", {}).get("text/html", ""))]
                assert static, f"a widget output with no static copy before it: {cell.source[:80]!r}"
            if "data-ncclnb-static" in str(out.get("data", {}).get("text/html", "")):
                views += 1
    return views


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[nb.stem for nb in NOTEBOOKS])
def test_exported_notebook_is_small_and_every_figure_draws_offline(exported, notebook):
    tmp, runs = exported
    run = runs[notebook]
    assert run.returncode == 0, f"nbconvert --execute {notebook.name} failed:\n{run.stderr[-3000:]}"
    page_file = tmp / f"{notebook.stem}.html"
    html = page_file.read_text(encoding="utf-8")
    assert len(html.encode()) < PAGE_LIMIT, f"{notebook.name}: {len(html.encode())} bytes"
    assert "plotly.js v" not in html and "Plotly.newPlot" not in html
    static_figures = html.count('class="ncclnb-figure"')
    _browser()
    seen = _drawn_offline(page_file, f"exported-{notebook.stem}.png")
    assert seen["pwned"] is None
    assert seen["figures"] == static_figures
    # each figure on show is drawn; a dashboard's copies of its parts sit in one copy, all shown
    assert seen["drawn"] == seen["figures"], seen


def test_gallery_run_out_of_order_exports_small_and_draws_offline(tmp_path):
    """views.ipynb executed with widget state stored, its first view's cell run
    again after the rest, then exported: the page is small and every figure,
    the re-run one included, draws offline."""
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    source = REPO / "notebooks" / "views.ipynb"
    nb = nbformat.read(source, as_version=4)
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    first_view = next(i for i in code if "show_" in nb.cells[i].source or "dashboard" in nb.cells[i].source)
    old = os.environ.get("IPYTHONDIR")
    os.environ["IPYTHONDIR"] = str(tmp_path / "ipython")
    try:
        client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(source.parent)}})
        with client.setup_kernel():
            for i in code + [first_view]:
                client.execute_cell(nb.cells[i], i)
            client.set_widgets_metadata()
    finally:
        if old is None:
            os.environ.pop("IPYTHONDIR", None)
        else:
            os.environ["IPYTHONDIR"] = old
    assert nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]  # stored, as nbconvert does
    assert _check_outputs(nb) >= 8
    html, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    assert len(html.encode()) < PAGE_LIMIT
    page_file = tmp_path / "views-out-of-order.html"
    page_file.write_text(html, encoding="utf-8")
    _browser()
    seen = _drawn_offline(page_file, "exported-views-out-of-order.png")
    assert seen["figures"] >= 6 and seen["drawn"] == seen["figures"], seen
    assert seen["pwned"] is None
