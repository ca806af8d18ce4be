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

import re
from dataclasses import replace
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
    page, for a family whose card leaves it to the finding's category.
    "Rank {behind} is" becomes "Ranks 1, 2 are" when the code fills in more than one rank."""
    found = card(rule)
    found = replace(found, **{part: agree(getattr(found, part), values) for part in ("title", "cause", "fix")})
    text = found.text(**values)
    if docs is not None:
        text["docs"] = docs
    return text


# "rank {field}" in a card, and the verb after it
_RANK_FIELD = re.compile(r"\b([Rr])ank \{(\w+)\}(?: (is|was|has|does)\b)?")
_PLURAL_VERB = {"is": "are", "was": "were", "has": "have", "does": "do"}
_MANY = re.compile(r"\d(?:, ?| and |-)\d")  # a filled-in value naming more than one rank: "1, 2", "0-3", "1 and 2"


def agree(template: str, values: dict) -> str:
    """``template`` with "rank {field}" made "ranks {field}", and the verb after it plural, where
    ``values`` fills that field with more than one rank."""

    def plural(m: re.Match) -> str:
        if not _MANY.search(str(values.get(m.group(2), ""))):
            return m.group(0)
        verb = m.group(3)
        return f"{m.group(1)}anks {{{m.group(2)}}}" + (f" {_PLURAL_VERB[verb]}" if verb else "")

    return _RANK_FIELD.sub(plural, template)
