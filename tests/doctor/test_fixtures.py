"""Every signature's fixture: lines marked hit must produce that signature, lines marked miss must not."""

from __future__ import annotations

import pytest

from ncclnb.doctor import diagnose
from ncclnb.doctor.kb import SIGNATURE_DIR, fixture_lines, load_signatures

SIGS = load_signatures()


def _rules(text: str) -> set[str]:
    return {f.rule for f in diagnose(text + "\n").findings}


@pytest.mark.parametrize("sig", SIGS, ids=lambda s: s.id)
def test_marked_lines(sig):
    for no, kind, text in fixture_lines(sig.id):
        rules = _rules(text)
        if kind == "hit":
            assert sig.id in rules, f"{sig.id}.log:{no} should hit {sig.id}: {text!r} gave {sorted(rules)}"
        else:
            assert sig.id not in rules, f"{sig.id}.log:{no} must not hit {sig.id}: {text!r}"


@pytest.mark.parametrize("sig", SIGS, ids=lambda s: s.id)
def test_whole_fixture_file_names_the_signature(sig):
    diag = diagnose(f"{SIGNATURE_DIR}/{sig.id}.log")
    assert sig.id in {f.rule for f in diag.findings}
    finding = next(f for f in diag.findings if f.rule == sig.id)
    assert finding.evidence and all(e.source.endswith(f"{sig.id}.log") and e.line for e in finding.evidence)
