"""What a user reads in a view, in the summary and from the CLI speaks as a
person does: counts with their noun ("1 rank", "4 ranks", never "rank(s)"),
an unknown value said in words ("pid not known", "NUMA node not known",
never "pid ?" / "NUMA ?"), and no "rank ≥ world size" shorthand. Every view of
every bundled machine and report (its text and its static HTML), the views of
the flight-recorder dumps, the summary, the magics' text forms and the CLI's
`show` and `doctor` output are read."""

from __future__ import annotations

import dataclasses
import html
import io
import json
import re
from contextlib import redirect_stdout
from pathlib import Path

import pytest

import ncclnb
from ncclnb.views import text as vtext
from ncclnb.cli import main as cli_main
from ncclnb.model import ClusterReport, NodeSnapshot
from ncclnb.model.words import how_many
from ncclnb.recorded import load, names
from ncclnb.summary import summary

ROOT = Path(__file__).resolve().parents[2]
FR = ROOT / "tests" / "doctor" / "fr"

# "(s)" plurals; a word, then " ?" standing for a value ("pid ?", "bus ?",
# "NUMA ?", "cpu ?", "GPU ?", "local ?"); "rank ≥" shorthand
ARTEFACTS = re.compile(r"\(s\)|\w \?(?=$|[\s,;:.)<·/|→])|rank[s]? ≥|≥ world")


def _plain(markup: str) -> str:
    """HTML as a reader sees it, tooltips included: entities undone, tags kept
    apart from their text by a newline."""
    return html.unescape(re.sub(r"<[^>]*>", "\n", markup)) + "\n" + html.unescape(markup)


def _hits(text: str) -> list[str]:
    return [text[max(0, m.start() - 40) : m.end() + 20] for m in ARTEFACTS.finditer(text)]


def _views(target):
    yield "show_topology", ncclnb.show_topology(target)
    yield "show_numa", ncclnb.show_numa(target)
    yield "show_ranks", ncclnb.show_ranks(target)
    yield "show_versions", ncclnb.show_versions(target)
    yield "show_diagnosis", ncclnb.show_diagnosis(ncclnb.check(target))
    yield "dashboard", ncclnb.dashboard(target)
    if isinstance(target, ClusterReport):
        yield "show_job_map", ncclnb.show_job_map(target)
        yield "show_links", ncclnb.show_links(target)


def _all_views(view):
    yield view
    for part in getattr(view, "parts", ()) or ():
        yield from _all_views(part)


def _bundled():
    return [n for n in names() if isinstance(load(n), (NodeSnapshot, ClusterReport))]


def test_how_many_says_a_count_as_a_reader_does():
    assert how_many(1, "rank") == "1 rank"
    assert how_many(0, "rank") == "0 ranks"
    assert how_many(3, "NUMA node") == "3 NUMA nodes"
    assert how_many(2, "pair") == "2 pairs"
    assert how_many(2, "host", "hosts") == "2 hosts"
    assert how_many(2, "GPU pair") == "2 GPU pairs"


def test_the_pattern_catches_what_it_is_for():
    for bad in ("4 rank(s)", "pid ?", "bus ?)", "NUMA ?<br>", "cpu ?", "2 rank ≥ world size", "GPU ?, NUMA 0"):
        assert ARTEFACTS.search(bad), bad
    for good in ("4 ranks", "pid not known", "NUMA node not known", "(ran with --no-link-test?)", "NUMA 0"):
        assert not ARTEFACTS.search(good), good


@pytest.mark.parametrize("name", _bundled())
def test_views_of_every_bundled_machine_read_as_a_person_says(name):
    target = load(name)
    hits = []
    for label, view in _views(target):
        for v in _all_views(view):
            hits += [(label, "text", h) for h in _hits(v.text or "")]
            hits += [(label, "html", h) for h in _hits(_plain(v.static_html()))]
    assert not hits, hits


@pytest.mark.parametrize("name", _bundled())
def test_summary_and_text_forms_read_as_a_person_says(name):
    target = load(name)
    texts = {
        "summary": summary(target),
        "topology": vtext.topology_text(target),
        "numa": vtext.numa_text(target),
        "ranks": vtext.ranks_text(target),
        "versions": vtext.versions_text(target),
        "findings": vtext.findings_text(ncclnb.check(target), target),
        "dashboard": vtext.dashboard_text(target),
    }
    if isinstance(target, ClusterReport):
        texts["jobmap"] = vtext.jobmap_text(target)
        texts["links"] = vtext.links_text(target)
    hits = [(k, h) for k, t in texts.items() for h in _hits(t)]
    assert not hits, hits


@pytest.mark.parametrize("name", ["l40s-2socket", "survey-demo", "seed000-2node-a10g"])
def test_cli_show_and_check_read_as_a_person_says(name):
    for argv in (["show", name], ["check", name]):
        out = io.StringIO()
        with redirect_stdout(out):
            cli_main(argv)
        assert not _hits(out.getvalue()), (argv, _hits(out.getvalue()))


@pytest.mark.parametrize("scenario", sorted(p.name for p in FR.iterdir() if p.is_dir() and any(p.glob("rank*.json"))))
def test_flight_recorder_views_and_the_doctor_read_as_a_person_says(scenario):
    run = str(FR / scenario)
    hits = []
    for label, make in (("show_alignment", ncclnb.show_alignment), ("show_pairing", ncclnb.show_pairing)):
        try:
            view = make(run)
        except ValueError:  # a scenario this view has nothing to show for
            continue
        for v in _all_views(view):
            hits += [(label, "text", h) for h in _hits(v.text or "")]
            hits += [(label, "html", h) for h in _hits(_plain(v.static_html()))]
    out = io.StringIO()
    with redirect_stdout(out):
        cli_main(["doctor", *sorted(str(p) for p in (FR / scenario).glob("rank*.json"))])
    hits += [("doctor", "text", h) for h in _hits(out.getvalue())]
    assert not hits, hits


def test_an_unknown_numa_node_and_pid_are_said_in_words():
    snap = load("l40s-2socket")
    gpus = tuple(dataclasses.replace(g, numa_node=None) for g in snap.gpus)
    nics = tuple(dataclasses.replace(n, numa_node=None, pci_bus_id=None) for n in snap.nics)
    snap = dataclasses.replace(snap, gpus=gpus, nics=nics)
    for label, view in (("topology", ncclnb.show_topology(snap)), ("numa", ncclnb.show_numa(snap))):
        page = _plain(view.static_html())
        assert "NUMA node not known" in page, label
        assert not _hits(page), (label, _hits(page))
    report = load("survey-demo")
    ranks = tuple(dataclasses.replace(r, pid=None) for r in report.ranks)
    report = dataclasses.replace(report, ranks=ranks)
    for label, view in (("job map", ncclnb.show_job_map(report)), ("ranks", ncclnb.show_ranks(report))):
        page = "".join(_plain(v.static_html()) for v in _all_views(view))
        assert "pid ?" not in page and not _hits(page), (label, _hits(page))
    json.dumps(report.to_dict())
