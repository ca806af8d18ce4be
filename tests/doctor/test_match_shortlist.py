"""Matcher.shortlist: trying only the matchers a message's shape leaves gives the hits of trying them all,
on every line of the signature logs and fixtures (real and recorded failures) and on their digits changed."""

from __future__ import annotations

import random
import re
from pathlib import Path

from ncclnb.doctor.kb import load_signatures
from ncclnb.doctor.match import Matcher
from ncclnb.doctor.normalize import normalize
from ncclnb.doctor.rank_table import RankRows

DOCTOR = Path(__file__).resolve().parents[2] / "ncclnb" / "doctor"


def _messages() -> list:
    out = []
    for path in sorted((DOCTOR / "signatures").glob("*.log")) + sorted(
        p for p in (DOCTOR / "fixtures").rglob("*") if p.is_file()
    ):
        for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
            ln = normalize(re.sub(r"\s+# ncclnb: (hit|miss)\s*$", "", raw))
            if ln is not None and ln.text:
                out.append(ln.text)
    return out


def _every_matcher(matcher: Matcher, msg: str) -> list:
    """What Matcher.matches found before shortlists: every matcher tried, in order."""
    hits, matched = [], set()
    for sig, lit, rx in matcher._matchers:
        if lit is not None and lit not in msg or sig.id in matched:
            continue
        m = rx.search(msg)
        if m:
            matched.add(sig.id)
            hits.append((sig.id, m.span(), m.groupdict()))
    return hits


def test_shortlisted_matches_are_every_matcher_s_matches():
    matcher = Matcher(load_signatures(), RankRows())
    rng = random.Random(9)
    msgs = _messages()
    # the same messages with other numbers (a shape seen before, digits that a literal or a pattern reads)
    msgs += [re.sub(r"[0-9]", lambda _: str(rng.randrange(10)), m) for m in msgs]
    assert len(msgs) > 1000
    hit = 0
    for msg in msgs:
        got = [(sig.id, m.span(), m.groupdict()) for sig, m in matcher.matches(msg)]
        assert got == _every_matcher(matcher, msg), msg
        hit += bool(got)
    assert hit > 100  # the logs' hit lines did match
    assert len(matcher._shortlists) < len(set(msgs))  # shapes are shared


def test_a_shortlist_keeps_the_matchers_whose_literal_has_a_digit():
    matcher = Matcher(load_signatures(), RankRows())
    with_digit = [e for e in matcher._matchers if e[1] is not None and any(c.isdigit() for c in e[1])]
    assert with_digit  # "Cuda failure 35 " and the like
    for entry in with_digit:
        assert entry in matcher.shortlist("nothing here at all")
