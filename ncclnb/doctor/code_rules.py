"""Every rule id the doctor emits from code rather than from a signature record.

The data rules (``signatures/<id>.json``) list themselves; the doctor's code
rules (cross-rank reasoning over the ranks' logs, the flight recorder, the
point-to-point plans, the notes about its own input, and the fallbacks for an
NCCL WARN no signature knows and for a generic error) are listed here, as
data: each has a card, ``cards/<id>.json`` (its title, cause, fix, docs and one
line on what it detects), and the list below is read from the cards. Each has a fixture of its own name in
``fixtures/`` (``<id>.log``, or ``<id>/`` holding per-rank logs and dumps as
the doctor reads a directory); ``tests/test_rule_fixtures.py`` checks that the
list, the ids the doctor's sources emit and the fixtures agree.

Two families are parametric: ``nccl_warn.<category>`` for each category an
unrecognised WARN can lean to (``priors.WARN_SOURCES``) and
``candidate.<kind>.<category>`` for each candidate cause of a generic error
(``priors.CANDIDATES``); every member is a rule id of its own. An
alternative reading of a finding (``<rule>~<category>``) is not a rule.
"""

from __future__ import annotations

from .cards import FAMILIES, card, cards
from .priors import CANDIDATE_KIND_TITLES, CANDIDATES, WARN_SOURCES

# id -> what it detects: the ``detects`` line of each rule's card (``cards/<id>.json``)
FIXED: dict[str, str] = {rule: c.detects for rule, c in cards().items() if rule not in FAMILIES}

# rules no file can trigger by itself: the fixture holds the input, the test makes the event
NEEDS_EVENT: dict[str, str] = {
    "input_changed": "the file must shrink or be replaced while the doctor reads it",
}


def warn_rules() -> dict[str, str]:
    """``nccl_warn.<category>``: an NCCL WARN no signature knows, leaning to that category."""
    cats = dict.fromkeys(cat for _, cat, _ in WARN_SOURCES)
    return {f"nccl_warn.{cat}": card("nccl_warn").detects.format(category=cat) for cat in cats}


def candidate_rules() -> dict[str, str]:
    """``candidate.<kind>.<category>``: a candidate cause of a generic error (or of a stop with no error)."""
    return {
        f"candidate.{kind}.{c.category}": card("candidate").detects.format(kind=CANDIDATE_KIND_TITLES[kind], category=c.category)
        for kind, cands in CANDIDATES.items()
        for c in cands
    }


# the prefixes of the parametric families, as the doctor's sources spell them in f-strings
FAMILY_PREFIXES = ("nccl_warn.", "candidate.")


def code_rules() -> dict[str, str]:
    """Every code rule id -> what it detects."""
    return {**FIXED, **warn_rules(), **candidate_rules()}
