"""Lint of the knowledge base itself: ids, categories, patterns, fixtures, prefilter."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

from ncclnb.doctor.kb import (SIGNATURE_DIR, TRIGGERS, KnowledgeBaseError, fixture_lines, grep_patterns,
                              load_signatures, to_grep)
from ncclnb.model import CATEGORIES

SIGS = load_signatures()


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
    assert sig.docs.startswith("https://") or re.fullmatch(r"notebooks/[a-z_]+\.ipynb", sig.docs)
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
    triggers = [re.compile(t) for t in TRIGGERS]
    for no, kind, text in fixture_lines(sig.id):
        if kind == "hit":
            assert any(t.search(text) for t in triggers), (
                f"{sig.id}.log:{no} contains no trigger of kb.TRIGGERS; the scanner would never look at it")


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
