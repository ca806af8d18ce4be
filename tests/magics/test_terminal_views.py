"""A view called directly in a terminal IPython (``ncclnb.show_topology(x)``
at the prompt, no magic) prints the full text form the magics print there,
not its one-line summary; in a notebook its text/plain stays that line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from IPython.lib.pretty import pretty

import ncclnb
from ncclnb.views.text import view_text

FR = Path(__file__).resolve().parents[2] / "tests" / "doctor" / "fr"


def _terminal(tmp_path, stdin: str, timeout: int = 300) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("NCCLNB_RENDERER", "NO_COLOR")}
    env.update(IPYTHONDIR=str(tmp_path / "ipython"), TERM="dumb", COLUMNS="160")
    args = [sys.executable, "-m", "IPython", "--no-banner", "--simple-prompt", "--colors=NoColor"]
    out = subprocess.run(args, input=stdin, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=timeout)
    return out.stdout + out.stderr


def test_views_at_a_terminal_prompt_print_their_full_text(tmp_path):
    calls = [
        'ncclnb.show_topology("l40s-2socket")',
        'ncclnb.show_numa("two-node-h100", host="h100-node1")',
        'ncclnb.show_ranks("two-node-h100")',
        'ncclnb.show_versions("seed002-version-mismatch")',
        'ncclnb.show_job_map("survey-demo")',
        'ncclnb.show_links("survey-demo")',
        'ncclnb.show_diagnosis(ncclnb.check(ncclnb.load("seed000-2node-a10g")))',
        'ncclnb.dashboard("l40s-2socket")',
        f'ncclnb.show_alignment({str(FR / "desync")!r})',
    ]
    out = _terminal(tmp_path, "import ncclnb\n" + "\n".join(calls) + "\n")
    assert "Traceback" not in out, out[-3000:]
    for marker in (
        "Topology of shockwave",
        "Links (nvidia-smi topo -m terms)",  # show_topology
        "NUMA placement on h100-node1",
        "Ranks on this node",  # show_numa, the host asked for
        "Rank map: 16 ranks on 2 nodes",  # show_ranks
        "Versions on 2 nodes",  # show_versions
        "Job map\nCluster report: 4 nodes, 33 ranks",
        "What the findings name",  # show_job_map
        "Link results",  # show_links
        "fix: Launch every node",  # show_diagnosis: evidence and fix
        "Checks\n",  # dashboard
        "Flight-recorder alignment: 3 ranks",
        "first divergence at #4",
    ):  # show_alignment
        assert marker in out, marker
    for one_line in (
        "ncclnb topology view:",
        "ncclnb NUMA view:",
        "ncclnb rank map:",
        "ncclnb version matrix:",
        "ncclnb job map:",
        "ncclnb diagnosis:",
        "ncclnb dashboard:",
        "ncclnb flight-recorder alignment:",
    ):
        assert one_line not in out, one_line


def test_the_text_form_is_the_views_own_and_only_where_text_is_all_there_is(monkeypatch):
    view = ncclnb.show_topology("two-node-h100", host="h100-node1")
    monkeypatch.setenv("NCCLNB_RENDERER", "text")
    full = view_text("show_topology", ncclnb.load("two-node-h100"), host="h100-node1")
    assert full.startswith("Topology of h100-node1") and "Links (nvidia-smi topo -m terms)" in full
    assert pretty(view) == full and view._repr_mimebundle_()["text/plain"] == full
    monkeypatch.setenv("NCCLNB_RENDERER", "widget")
    assert view._repr_mimebundle_()["text/plain"] == view.text == pretty(view)
    assert view.text.startswith("ncclnb topology view: h100-node1")
