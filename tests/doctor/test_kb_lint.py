"""Lint of the knowledge base itself: ids, categories, patterns, fixtures, prefilter."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

from ncclnb.doctor.kb import (
    SIGNATURE_DIR,
    TRIGGERS,
    KnowledgeBaseError,
    fixture_lines,
    grep_patterns,
    load_signatures,
    pattern_covered,
    required_any,
    required_literal,
    to_grep,
)
from ncclnb.model import CATEGORIES

SIGS = load_signatures()
NOTEBOOKS = os.path.join(os.path.dirname(__file__), "..", "..", "notebooks")


def test_enough_signatures_across_every_category():
    assert len(SIGS) >= 45
    assert {s.category for s in SIGS} >= set(CATEGORIES)


def test_ids_unique_and_match_files():
    ids = [s.id for s in SIGS]
    assert len(ids) == len(set(ids))
    files = {n[:-5] for n in os.listdir(SIGNATURE_DIR) if n.endswith(".json")}
    assert files == set(ids)


@pytest.mark.parametrize("sig", SIGS, ids=lambda s: s.id)
def test_record_fields(sig):
    assert sig.category in CATEGORIES
    assert all(c in CATEGORIES and c != sig.category for c in sig.also)
    assert sig.title and sig.cause and sig.fix
    assert re.fullmatch(r"https://[a-z0-9.-]+\.[a-z]+/\S*", sig.docs), f"{sig.id}: docs must be an https URL, not {sig.docs!r}"
    for p in sig.patterns:
        re.compile(p)
        # the grep-compatible subset: no Perl classes, no lookarounds, no lazy quantifiers
        assert not re.search(r"\\[dswDSWbB]|\(\?[=!<]|[*+?]\?", p.replace("(?P<", "")), p


@pytest.mark.parametrize("sig", SIGS, ids=lambda s: s.id)
def test_fixture_present_with_hits_and_misses(sig):
    marked = fixture_lines(sig.id)
    kinds = [k for _, k, _ in marked]
    assert "hit" in kinds, f"{sig.id}.log has no line marked hit"
    assert "miss" in kinds, f"{sig.id}.log has no line marked miss"


@pytest.mark.parametrize("sig", SIGS, ids=lambda s: s.id)
def test_every_hit_line_contains_a_prefilter_trigger(sig):
    for no, kind, text in fixture_lines(sig.id):
        if kind == "hit":
            assert any(t in text for t in TRIGGERS), (
                f"{sig.id}.log:{no} contains no trigger of kb.TRIGGERS; the scanner would never look at it"
            )


def test_required_literal_reads_through_groups_but_not_branches_or_flags():
    assert required_literal("(?P<value>[0-9]{1,12})(?P<what> batches)") == " batches"
    assert required_literal("Watchdog (?:caught) collective") == "Watchdog caught collective"
    assert required_literal("(?:abcdef|ghijkl)") is None  # either branch: neither is required
    assert required_literal("x(?i:abcdef)y") is None  # case-insensitive: not the literal as written


def test_required_any_takes_one_literal_from_each_branch_of_a_required_alternation():
    assert required_any("Watchdog (?:caught) collective") == ("Watchdog caught collective",)
    assert required_any("ab(?:cdef|ghij)k") == ("cdef", "ghij")  # the runs beside it are too short
    assert required_any(r"\b(?:[Hh]angs?|[Hh]anging|[Ss]tuck)\b") == ("ang", "tuck")  # "anging" holds "ang"
    assert required_any("(?:abcd)+xy") == ("abcd",)  # repeated at least once
    assert required_any("(?:abcd)*xy") is None  # perhaps never
    assert required_any("(?:abcdef|[0-9]+)") is None  # a branch with no literal: none is required
    assert required_any("(?i)abcdef") is None and required_any("abcdef", re.IGNORECASE) is None
    assert required_any("x(?i:abcdef)y") is None


def test_the_gated_searches_of_the_run_facts_answer_as_their_regexes():
    # priors._Gated skips a regex when none of its required literals shows: the same answers, on every line
    # the fixtures hold and on lines written to hit each branch
    from ncclnb.doctor import priors

    gated = [v for v in vars(priors).values() if isinstance(v, priors._Gated)]
    assert len(gated) >= 4 and all(g.lits for g in gated)
    lines = [text for sig in SIGS for _, _, text in fixture_lines(sig.id)]
    lines += [
        "the job hangs",
        "it was Hanging",
        "rank 3 is STUCK",
        "HANG",
        "froze at step 3",
        "it never returns",
        "Thread 0x7f00 (idle): x",
        "2x RTX 3090",
        "NVIDIA GeForce RTX 4090",
        "GH200",
        "MNNVL 1",
        "MNNVL 0",
        "Fabric Manager",
        "NCCL Error 2: x",
        "NCCL 1.3",
        "compiled with NCCL 1.",
        "H20 node",
        "B200",
    ]
    for g in gated:
        for text in lines:
            assert bool(g.search(text)) == bool(g.rx.search(text)), (g.rx.pattern, text)


@pytest.mark.parametrize("sig", SIGS, ids=lambda s: s.id)
def test_every_required_literal_is_in_every_line_its_pattern_matches(sig):
    # the literal gates the regex (Signature.match, Matcher.shortlist): a line the regex alone matches must hold it
    for _, _, text in fixture_lines(sig.id):
        for literal, rx in sig.compiled:
            if literal is not None and rx.search(text):
                assert literal in text, f"{sig.id}: {literal!r} is not required by {rx.pattern!r}"
            alts = required_any(rx.pattern, rx.flags) if literal is None else None
            if alts is not None and rx.search(text):  # Matcher.shortlist keeps such a matcher only where one shows
                assert any(a in text for a in alts), f"{sig.id}: none of {alts!r} is in a line {rx.pattern!r} matches"


def test_triggers_are_plain_literals_long_enough_for_the_pair_filter():
    # (bytes: the gram filter needs a 4-byte gram at both alignments; two CJK characters are six)
    assert all(isinstance(t, str) and len(t.encode("utf-8")) >= 5 and "\n" not in t for t in TRIGGERS)
    assert len(set(TRIGGERS)) == len(TRIGGERS)
    # the scanner's bulk path splits a line at its first "]" (NCCL's prefix) and reads head and rest apart: a
    # trigger holding one would turn it off for every log (scan._SPLIT), silently, at several times the cost
    assert not [t for t in TRIGGERS if "]" in t]


@pytest.mark.parametrize("sig", SIGS, ids=lambda s: s.id)
def test_every_pattern_requires_a_trigger(sig):
    # stronger than the fixtures: any line the pattern can match contains a trigger
    for p in sig.patterns:
        assert pattern_covered(p), f"{sig.id}: pattern {p!r} requires no literal of kb.TRIGGERS; add one"


def test_reasoning_inputs_require_a_trigger():
    from ncclnb.doctor.reason import REASONING_PATTERNS

    for p in REASONING_PATTERNS:
        assert pattern_covered(p), p
    # the lines the cross-rank reasoning reads, as real logs print them
    for line in (
        "node-a:4121:4188 [3] NCCL INFO NCCL version 2.21.5+cuda12.4",
        "node-a:4121:4188 [3] NCCL INFO comm 0x55d8db252140 rank 3 nRanks 8 nNodes 1 localRanks 8 localRank 3 MNNVL 0",
        "[rank3]:[E304 17:41:12.735149131 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600068 ms",
        "[Rank 3] Timeout at NCCL work: 7, last enqueued NCCL work: 7, last completed NCCL work: 6.",
        "[rank7]: Invalid rank requested : 7/4",
        "[enforce fail at ../gloo/transport/tcp/pair.cc:446] rank < size. 7 vs 4",
        "Timed out after 1801 seconds waiting for clients. 3/4 clients joined.",
    ):
        assert any(t in line for t in TRIGGERS), line


def test_pattern_covered_understands_alternation():
    assert pattern_covered("foo (bar|qux)", ("bar", "qux"))
    assert not pattern_covered("foo (bar|qux)", ("bar",))
    assert pattern_covered("[Oo]ut of memory", ("ut of",))
    assert not pattern_covered("x(abc)?y", ("abc",))


def test_malformed_record_is_refused(tmp_path):
    good = json.load(open(os.path.join(SIGNATURE_DIR, SIGS[0].id + ".json")))
    bad = dict(good, category="not_a_category")
    (tmp_path / f"{good['id']}.json").write_text(json.dumps(bad))
    with pytest.raises(KnowledgeBaseError, match="unknown category"):
        load_signatures(str(tmp_path))
    bad = dict(good, patterns=["(unclosed"])
    (tmp_path / f"{good['id']}.json").write_text(json.dumps(bad))
    load_signatures.cache_clear()
    with pytest.raises(KnowledgeBaseError, match="does not compile"):
        load_signatures(str(tmp_path))
    load_signatures.cache_clear()
    bad = dict(good, nccl_min="2.18.1")  # a version range was never evaluated, so it is not a field
    (tmp_path / f"{good['id']}.json").write_text(json.dumps(bad))
    with pytest.raises(KnowledgeBaseError, match="unknown field nccl_min"):
        load_signatures(str(tmp_path))
    load_signatures.cache_clear()


def test_grep_export():
    pats = grep_patterns()
    assert len(pats) >= sum(len(s.patterns) for s in SIGS)
    assert all("(?" not in p and "\\d" not in p for p in pats)
    assert to_grep(r"rank (?P<rank>[0-9]+)/(?:a|b)") == "rank ([0-9]+)/(a|b)"


@pytest.mark.skipif(not shutil.which("grep"), reason="grep is not installed")
def test_grep_accepts_exported_patterns_and_finds_the_fixture_hits(tmp_path):
    pfile = tmp_path / "patterns"
    pfile.write_text("\n".join(grep_patterns()) + "\n")
    hits = [text for s in SIGS for _, kind, text in fixture_lines(s.id) if kind == "hit"]
    log = tmp_path / "hits.log"
    log.write_text("\n".join(hits) + "\n")
    proc = subprocess.run(["grep", "-E", "-c", "-f", str(pfile), str(log)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) == len(hits)


def test_every_category_has_a_title_and_an_https_page():
    from ncclnb.model.categories import TABLE

    assert tuple(TABLE) == CATEGORIES
    for cat in TABLE.values():
        assert re.fullmatch(r"https://[a-z0-9.-]+\.[a-z]+/\S*", cat.docs), cat.docs
        assert cat.title and cat.title == cat.title.strip().lower(), cat.id
        assert not cat.notebook or os.path.isfile(os.path.join(NOTEBOOKS, f"{cat.notebook}.ipynb")), cat.notebook


def test_signature_examples_show_each_signature_of_a_category_with_a_line_it_hits():
    from ncclnb.doctor import load_signatures, signature_examples

    rows = signature_examples("p2p_pairing", ids=("duplicate_gpu",), width=60)
    want = {s.id for s in load_signatures() if s.category == "p2p_pairing"} | {"duplicate_gpu"}
    assert {r["signature"] for r in rows} == want
    assert rows == sorted(rows, key=lambda r: (r["category"], r["signature"]))
    for r in rows:
        first_hit = next(t.strip() for _, kind, t in fixture_lines(r["signature"]) if kind == "hit")
        assert r["example line"] == (first_hit if len(first_hit) <= 60 else first_hit[:59] + "…")
        assert r["title"] and len(r["example line"]) <= 60
    assert signature_examples("no_such_category") == []
