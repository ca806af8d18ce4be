"""Cards: a rule's prose as data.

A data signature of the doctor is a card already (``doctor/signatures/<id>.json``
holds its title, cause, fix and docs beside its patterns). The rules written in
code (the doctor's cross-rank reasoning, the flight-recorder rules, the checks)
keep their prose in cards too, one JSON file a rule, ``<id>.json`` in a
``cards/`` folder beside the code that emits it, so a reviewer reads and edits
what a user will be told without reading the code, and a test can hold every
rule id to a card and a fixture of the same name.

A card's ``title``, ``cause`` and ``fix`` are templates: ``{name}`` fields are
filled by the code with what it found (ranks, hosts, sizes), by
:meth:`Card.text`. Templates come from the package, never from input; the
values put in them are plain text.
"""

from __future__ import annotations

import json
import string
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, TypedDict

CARD_FIELDS = ("id", "category", "title", "cause", "fix", "docs", "detects")
PROSE = ("title", "cause", "fix")


class CardText(TypedDict):
    """A card filled in: keyword arguments for a Finding."""

    title: str
    cause: str
    fix: str
    docs: str


@dataclass(frozen=True)
class Card:
    """The prose of one rule. ``detects`` is one line on what the rule finds
    (the rule list and ``ncclnb doctor --rules`` show it); ``category`` is
    the rule's category, or "" where the code picks it per finding."""

    id: str
    category: str
    title: str
    cause: str
    fix: str
    docs: str
    detects: str

    def placeholders(self) -> frozenset[str]:
        """The ``{name}`` fields the templates use."""
        names: set[str] = set()
        for template in (self.title, self.cause, self.fix):
            names.update(name for _, name, _, _ in string.Formatter().parse(template) if name)
        return frozenset(names)

    def text(self, **values: Any) -> CardText:
        """``title``, ``cause`` and ``fix`` with their fields filled from
        ``values``, plus ``docs``: keyword arguments for a Finding. A field a
        template names and ``values`` lack is a bug of the calling code
        (KeyError), not bad input."""
        return CardText(
            title=self.title.format_map(values),
            cause=self.cause.format_map(values),
            fix=self.fix.format_map(values),
            docs=self.docs,
        )


def card_from_json(data: dict, where: str) -> Card:
    """A card from its parsed JSON; ``where`` names the file in errors."""
    missing = [name for name in CARD_FIELDS if not isinstance(data.get(name), str)]
    if missing:
        raise ValueError(f"{where}: card lacks text for {', '.join(missing)}")
    extra = sorted(set(data) - set(CARD_FIELDS))
    if extra:
        raise ValueError(f"{where}: unknown card fields {', '.join(extra)}")
    return Card(**{name: data[name] for name in CARD_FIELDS})


@cache
def load_cards(folder: str) -> dict[str, Card]:
    """Every card in ``folder`` (``<id>.json`` files), by id. The file's name
    must be its id. Read once a process."""
    cards: dict[str, Card] = {}
    for path in sorted(Path(folder).glob("*.json")):
        card = card_from_json(json.loads(path.read_text(encoding="utf-8")), str(path))
        if card.id != path.stem:
            raise ValueError(f"{path}: card id {card.id!r} is not the file's name")
        cards[card.id] = card
    return cards
