"""The prose of the doctor's code rules: ``cards/<id>.json``, one card a rule.

A rule the doctor decides in code (cross-rank reasoning, the flight
recorder, the point-to-point plans, the notes about its input) says what it
found through its card (:class:`ncclnb.model.cards.Card`): title, cause and
fix are templates its code fills with what it found, so the words a user is
told are read and edited here, not in the code. The two parametric families
(``nccl_warn.<category>``, ``candidate.<kind>.<category>``) share one card
each, named after the family; their category's page is their docs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from ..model.cards import Card, CardText, load_cards

CARDS_DIR = str(Path(__file__).with_name("cards"))
# parametric rule ids ``<family>.<...>``: every member says what it found through the family's card
FAMILIES = ("nccl_warn", "candidate")


def cards() -> dict[str, Card]:
    """Every card of the doctor's code rules, by id (a rule id, or a family's name)."""
    return load_cards(CARDS_DIR)


def card(rule: str) -> Card:
    """The card of code rule ``rule``: its own, or its family's. An id with
    neither is a bug of the calling code (KeyError)."""
    found = cards()
    if rule in found:
        return found[rule]
    family = rule.split(".", 1)[0]
    if family in FAMILIES and family != rule:
        return found[family]
    raise KeyError(f"no card for rule {rule!r} in {CARDS_DIR}")


def prose(rule: str, /, docs: Optional[str] = None, **values: Any) -> CardText:
    """The title, cause, fix and docs of code rule ``rule``: its card filled
    with ``values`` (:meth:`~ncclnb.model.cards.Card.text`). ``docs``: the
    page, for a family whose card leaves it to the finding's category."""
    text = card(rule).text(**values)
    if docs is not None:
        text["docs"] = docs
    return text
