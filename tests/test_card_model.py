"""The card model: a rule's prose as data (ncclnb/model/cards.py)."""

import json

import pytest

from ncclnb.model.cards import Card, card_from_json, load_cards

CARD = {
    "id": "r",
    "category": "collective_desync",
    "title": "Rank {ranks} ran {op}",
    "cause": "The others ran {other}.",
    "fix": "Make every rank call the same collectives.",
    "docs": "https://example.org/doc",
    "detects": "ranks in different collectives",
}


def test_text_fills_every_template_and_keeps_docs():
    card = card_from_json(CARD, "r.json")
    assert card.placeholders() == {"ranks", "op", "other"}
    text = card.text(ranks="1", op="allreduce", other="broadcast")
    assert text == {
        "title": "Rank 1 ran allreduce",
        "cause": "The others ran broadcast.",
        "fix": "Make every rank call the same collectives.",
        "docs": "https://example.org/doc",
    }


def test_a_value_is_text_not_a_template():
    card = card_from_json(CARD, "r.json")
    assert card.text(ranks="{op}", op="x", other="{0}")["title"] == "Rank {op} ran x"


def test_missing_value_is_a_bug_of_the_caller():
    with pytest.raises(KeyError):
        card_from_json(CARD, "r.json").text(ranks="1")


@pytest.mark.parametrize("change", [{"fix": None}, {"extra": "x"}])
def test_malformed_card_is_refused_naming_the_file(change):
    data = {**CARD, **change}
    data = {k: v for k, v in data.items() if v is not None}
    with pytest.raises(ValueError, match="r.json"):
        card_from_json(data, "r.json")


def test_folder_cards_by_id_and_the_name_must_be_the_id(tmp_path):
    (tmp_path / "r.json").write_text(json.dumps(CARD))
    assert load_cards(str(tmp_path)) == {"r": Card(**CARD)}
    other = tmp_path / "other"
    other.mkdir()
    (other / "s.json").write_text(json.dumps(CARD))
    with pytest.raises(ValueError, match="not the file's name"):
        load_cards(str(other))
