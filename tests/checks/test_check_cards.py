"""Lint of the checks' cards (ncclnb/checks/cards/): every check and every case
a check emits has its card, every card is used, categories agree with the
registry, and no check writes its prose inline any more."""

import ast
import inspect
import re
import string
from pathlib import Path

import pytest

from ncclnb.checks import CRASHED, check, registry
from ncclnb.checks._registry import CARDS, make
from ncclnb.model import ClusterReport, NodeSnapshot
from ncclnb.model.cards import PROSE, load_cards
from ncclnb.recorded import load, names

CHECKS = Path(CARDS).parent
SOURCES = {p.name: ast.parse(p.read_text(encoding="utf-8")) for p in sorted(CHECKS.glob("*.py"))}
FIXTURES = sorted((CHECKS / "fixtures").glob("*.json"))
# make()'s own parameters: a card field of one of these names would never reach the card
MAKE_PARAMETERS = set(inspect.signature(make).parameters) - {"values"}


def cards():
    return load_cards(str(CARDS))


def _check_of(card_id: str) -> str:
    return card_id.split(".")[0]


def _calls(name: str):
    """Every call of ``name`` (a function or a class) in the checks' modules, with its module."""
    for module, tree in SOURCES.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == name:
                yield module, node


def _named_cards(node) -> list[str]:
    """The card ids a make() call's first argument names: a string, or either string of ``a if c else b``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        return _named_cards(node.body) + _named_cards(node.orelse)
    return []  # computed (a variable): the behaviour tests and test_every_card_is_used cover it


def test_every_check_has_its_card_with_its_category_and_summary():
    found = cards()
    for check_id, info in registry().items():
        assert check_id in found, f"no card {CARDS}/{check_id}.json"
        assert found[check_id].category == info.category, check_id
        assert info.summary == found[check_id].detects


def test_every_card_belongs_to_a_check_and_has_its_category():
    reg = registry()
    for card_id, card in cards().items():
        if card_id == CRASHED:
            assert card.category == "unknown"
            continue
        assert re.fullmatch(r"[a-z0-9_]+(\.[a-z0-9_]+)?", card_id), card_id
        assert _check_of(card_id) in reg, f"card {card_id} names no registered check"
        assert card.category == reg[_check_of(card_id)].category, card_id


def test_card_fields():
    for card_id, card in cards().items():
        assert card.title and card.detects, card_id
        assert card.docs == "" or re.fullmatch(r"https://\S+", card.docs), (card_id, card.docs)
        clash = card.placeholders() & (MAKE_PARAMETERS | set(PROSE) | {"docs"})
        assert not clash, f"{card_id}: fields {sorted(clash)} are make()'s own arguments"


def test_every_card_named_by_a_make_call_exists_and_gets_its_fields():
    found = cards()
    named = 0
    for module, call in _calls("make"):
        assert call.args, f"{module}:{call.lineno}: make() without its card id"
        ids = _named_cards(call.args[0])
        for card_id in ids:
            assert card_id in found, f"{module}:{call.lineno}: no card {card_id}"
            named += 1
        if not ids or any(k.arg is None for k in call.keywords):
            continue  # a computed id or **values: the values are known only at run time
        given = {k.arg for k in call.keywords} - MAKE_PARAMETERS
        wanted = set().union(*(found[c].placeholders() for c in ids))
        for card_id in ids:
            assert found[card_id].placeholders() <= given, (
                f"{module}:{call.lineno}: {card_id} needs {found[card_id].placeholders() - given}"
            )
        assert given <= wanted, f"{module}:{call.lineno}: values no card uses: {sorted(given - wanted)}"
    assert named >= len(registry())


def test_every_card_is_used():
    """A card is used when the checks' code names it (as a string) outside the
    register() decorators, which name every check id whatever its cards."""
    registering = {
        id(d.args[0])
        for tree in SOURCES.values()
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        for d in node.decorator_list
        if isinstance(d, ast.Call) and getattr(d.func, "id", None) == "register" and d.args
    }
    strings = {
        node.value
        for tree in SOURCES.values()
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in registering
    }
    unused = sorted(set(cards()) - strings)
    assert not unused, f"cards no check emits: {unused}"


def _literal_text(node) -> bool:
    """Prose written in place: a string, an f-string, or text joined with +."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp):
        return _literal_text(node.left) or _literal_text(node.right)
    return False


def test_no_check_writes_its_prose_inline():
    offenders = []
    for module, call in [*_calls("make"), *_calls("Finding")]:
        for k in call.keywords:
            if k.arg in (*PROSE, "docs") and (call.func.id == "make" or _literal_text(k.value)):
                offenders.append(f"{module}:{call.lineno} {k.arg}=")
        # the title was make()'s fourth argument: a text there is prose written in place
        if call.func.id == "make" and len(call.args) > 3 and _literal_text(call.args[3]):
            offenders.append(f"{module}:{call.lineno} a text for evidence")
    assert not offenders, f"prose belongs in ncclnb/checks/cards/: {offenders}"


def _template_pattern(template: str) -> re.Pattern:
    parts = []
    for literal, field, _, _ in string.Formatter().parse(template):
        parts.append(re.escape(literal))
        if field is not None:
            parts.append("(.*)")
    return re.compile("".join(parts), re.S)


def _targets():
    for name in names():
        yield name, load(name)
    for path in FIXTURES:
        yield path.name, load(str(path))


@pytest.mark.parametrize("name,target", list(_targets()), ids=lambda x: x if isinstance(x, str) else "")
def test_every_finding_reads_as_one_of_its_checks_cards(name, target):
    """What check() says on the bundled machines and the checks' fixtures is a
    card of the finding's rule, filled in (title, cause and fix match its templates)."""
    assert isinstance(target, (NodeSnapshot, ClusterReport))
    found = cards()
    for f in check(target):
        own = [c for c in found.values() if _check_of(c.id) == f.rule]
        assert own, f"{name}: rule {f.rule} has no card"
        assert any(
            all(_template_pattern(getattr(c, field)).fullmatch(getattr(f, field)) for field in PROSE) and c.docs == f.docs
            for c in own
        ), f"{name}: {f.rule} '{f.title}' is none of its cards"
