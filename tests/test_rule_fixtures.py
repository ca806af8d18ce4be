"""Every rule id has a fixture of its own name, and the fixture yields it.

Three kinds of rules, each with its fixtures beside it:

- data signatures: ``ncclnb/doctor/signatures/<id>.json`` + ``<id>.log``, linted by
  ``tests/doctor/test_kb_lint.py`` (a log fixture per record, hit and miss lines) and
  ``tests/doctor/test_fixtures.py`` (each hit line gives the finding); not repeated here;
- the doctor's code rules, listed in ``ncclnb.doctor.code_rules``: ``ncclnb/doctor/fixtures/<id>.log``
  or ``<id>/`` (per-rank logs and flight-recorder dumps, read as the doctor reads a directory), and
  the card that holds what the rule says, ``ncclnb/doctor/cards/<id>.json`` (one card for each
  parametric family, ``nccl_warn.json`` and ``candidate.json``);
- the checks, ``ncclnb.checks.registry()``: ``ncclnb/checks/fixtures/<id>.json`` (a NodeSnapshot or
  ClusterReport as ncclnb writes it).

``tools/build_rule_fixtures.py`` rebuilds the derived fixtures.
"""

from __future__ import annotations

import ast
import re
import string
from pathlib import Path
from urllib.parse import urlparse

import pytest

from ncclnb.checks import check, registry
from ncclnb.doctor import diagnose, load_signatures
from ncclnb.doctor.cards import FAMILIES, card, cards
from ncclnb.doctor.code_rules import FAMILY_PREFIXES, FIXED, NEEDS_EVENT, code_rules
from ncclnb.model import CATEGORIES
from ncclnb.recorded import load

REPO = Path(__file__).resolve().parents[1]
DOCTOR = REPO / "ncclnb" / "doctor"
DOCTOR_FIXTURES = DOCTOR / "fixtures"
CHECK_FIXTURES = REPO / "ncclnb" / "checks" / "fixtures"

CODE_RULES = code_rules()
CHECKS = registry()
SIGNATURES = {s.id for s in load_signatures()}

# code rules no input can bring out today: the fixture holds the input that should, and the
# case fails once it does (strict), so that this list is emptied with the fix
UNREACHABLE: dict[str, str] = {}  # rule -> why no input can yield it (strict xfail: the test fails once one can)
# code rules whose fixture's first finding is another one: an info note about the input comes after the
# findings of the log it is about; a candidate cause is listed among the others of its kind, and some
# (no fact that favours them, or one that favours a rival as much) are never the first of them
NOT_FIRST = {"input_skipped", "rank_table_cut"}
RULE_LIKE = re.compile(r"(?:fr|plan)\.[a-z][a-z0-9_]*")


def _doctor_fixtures() -> dict[str, Path]:
    out = {}
    for p in DOCTOR_FIXTURES.iterdir():
        if p.is_dir():
            out[p.name] = p
        elif p.suffix == ".log":
            out[p.stem] = p
    return out


def _check_fixtures() -> dict[str, Path]:
    return {p.stem: p for p in CHECK_FIXTURES.glob("*.json")}


# ---- (a) one fixture per rule, one rule per fixture -----------------------------------------------


def test_every_code_rule_has_its_fixture_and_every_fixture_its_rule():
    fixtures = set(_doctor_fixtures())
    assert sorted(set(CODE_RULES) - fixtures) == [], "code rules without a fixture in ncclnb/doctor/fixtures"
    assert sorted(fixtures - set(CODE_RULES)) == [], "fixtures in ncclnb/doctor/fixtures named after no code rule"


def test_every_check_has_its_fixture_and_every_fixture_its_check():
    fixtures = set(_check_fixtures())
    assert sorted(set(CHECKS) - fixtures) == [], "checks without a fixture in ncclnb/checks/fixtures"
    assert sorted(fixtures - set(CHECKS)) == [], "fixtures in ncclnb/checks/fixtures named after no check"
    assert not [p.name for p in CHECK_FIXTURES.iterdir() if p.suffix != ".json"]


def test_fixture_files_only_of_the_kinds_the_doctor_reads_and_the_package_ships():
    # pyproject's package-data ships fixtures/*.log and fixtures/*/* (a directory's files, no deeper)
    for p in DOCTOR_FIXTURES.iterdir():
        assert p.is_dir() or p.suffix == ".log", p.name
        if p.is_dir():
            assert all(f.is_file() and not f.name.startswith(".") for f in p.iterdir()), p.name


def test_rule_ids_are_file_names_as_they_are():
    # a fixture is named by its rule id unchanged: no id may need mapping to be a file name
    assert not [r for r in [*CODE_RULES, *CHECKS] if not re.fullmatch(r"[a-z0-9_]+(?:\.[a-z0-9_]+)*", r)]


def test_a_rule_id_names_one_rule():
    assert not set(CODE_RULES) & SIGNATURES
    assert not set(CODE_RULES) & set(CHECKS)
    # driver_too_old is both a signature (the error a too-old driver prints) and a check (a snapshot whose
    # driver is older than torch's CUDA needs): one failure, seen in a log or predicted from the versions
    assert SIGNATURES & set(CHECKS) <= {"driver_too_old"}


def test_a_rule_that_is_both_a_signature_and_a_check_has_one_category():
    # one failure, one reading: a log's error and a snapshot's prediction of it are filed alike
    by_signature = {s.id: s.category for s in load_signatures()}
    differ = {r: (by_signature[r], CHECKS[r].category) for r in set(by_signature) & set(CHECKS)}
    assert differ and not {r: cats for r, cats in differ.items() if cats[0] != cats[1]}


def _emitted_rule_ids() -> tuple[set, set]:
    """(literal rule ids, f-string prefixes) the doctor's sources give a Finding: the value of a
    ``rule=`` keyword or of a variable named ``rule``, and any literal spelled as a flight-recorder
    or plan rule (``fr.*``, ``plan.*``, passed on as an argument)."""
    literals, prefixes = set(), set()

    def take(node) -> None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            literals.add(node.value)
        elif isinstance(node, ast.IfExp):
            take(node.body)
            take(node.orelse)
        elif isinstance(node, ast.Tuple):
            take(node.elts[0])
        elif isinstance(node, ast.JoinedStr):
            parts = [v.value for v in node.values if isinstance(v, ast.Constant)]
            prefixes.add(parts[0] if parts and isinstance(node.values[0], ast.Constant) else "")

    for path in sorted(DOCTOR.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.keyword) and node.arg == "rule":
                take(node.value)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    names = target.elts if isinstance(target, ast.Tuple) else [target]
                    if isinstance(names[0], ast.Name) and names[0].id == "rule":
                        take(node.value)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                if RULE_LIKE.fullmatch(node.value):
                    literals.add(node.value)
    return literals, prefixes


def test_the_list_of_code_rules_is_what_the_doctor_emits():
    literals, prefixes = _emitted_rule_ids()
    assert literals, "the scan found no rule id at all: the doctor's sources changed shape"
    assert sorted(literals - set(FIXED)) == [], "rule ids emitted by the doctor missing from code_rules.FIXED"
    assert sorted(set(FIXED) - literals) == [], "code_rules.FIXED lists ids the doctor no longer emits"
    assert prefixes == set(FAMILY_PREFIXES), "a rule id built in an f-string that is no known family"


# ---- (b) each fixture yields its rule ------------------------------------------------------------


def _doctor_case(rule: str):
    marks = []
    if rule in UNREACHABLE:
        marks.append(pytest.mark.xfail(strict=True, reason=UNREACHABLE[rule]))
    return pytest.param(rule, id=rule, marks=marks)


@pytest.mark.parametrize("rule", [_doctor_case(r) for r in sorted(CODE_RULES)])
def test_the_doctor_finds_the_rule_its_fixture_is_named_after(rule):
    if rule in NEEDS_EVENT:
        pytest.skip(f"{rule}: {NEEDS_EVENT[rule]} (tests/doctor/test_hardening_streams.py does it to a running doctor)")
    diag = diagnose(str(_doctor_fixtures()[rule]))
    rules = [f.rule for f in diag.findings]
    own = [f for f in diag.findings if f.rule == rule and not f.alternative_of]
    assert own, f"{rule}: the doctor found {rules}"
    if not rule.startswith("candidate.") and rule not in NOT_FIRST:
        assert diag.findings[0] is own[0], f"{rule} is not the first finding: {rules}"
    # every rule the fixture brings out is a known one
    unknown = {r for r in rules if r not in CODE_RULES and r not in SIGNATURES and "~" not in r}
    assert not unknown, f"{rule}: the doctor emitted rule ids listed nowhere: {sorted(unknown)}"
    # the finding is its card's: its category and page where the card fixes them, its words the card's
    prose = card(rule)
    assert own[0].category == (prose.category or own[0].category), f"{rule}: category is not its card's"
    assert own[0].docs == (prose.docs or own[0].docs), f"{rule}: docs are not its card's"
    if not [name for _, name, _, _ in string.Formatter().parse(prose.fix) if name]:
        assert own[0].fix == prose.fix, f"{rule}: fix is not its card's"


def test_the_fixture_of_a_rule_that_needs_an_event_is_a_readable_log():
    for rule in NEEDS_EVENT:
        diag = diagnose(str(_doctor_fixtures()[rule]))
        assert diag.lines_read > 0 and rule not in {f.rule for f in diag.findings}


@pytest.mark.parametrize("check_id", sorted(CHECKS))
def test_the_check_finds_what_its_fixture_is_named_after(check_id):
    target = load(str(_check_fixtures()[check_id]))
    found = check(target)
    own = [f for f in found if f.rule == check_id]
    assert own, f"{check_id}: the checks found {[f.rule for f in found]}"
    assert all(f.confidence > 0 for f in own), f"{check_id} crashed on its fixture: {own[0].evidence}"
    # the fixture is made to fail this check: its finding leads the report (errors first, then warnings)
    assert found[0].rule == check_id, f"{check_id} is not the first finding: {[f.rule for f in found]}"


# ---- (c) every code rule says what it found through its card -------------------------------------

CARDS = cards()


def _card_ids_in_use() -> set:
    return {card(rule).id for rule in CODE_RULES}


def test_every_code_rule_has_its_card_and_every_card_its_rule():
    missing = []
    for rule in CODE_RULES:
        try:
            card(rule)
        except KeyError:
            missing.append(rule)
    assert missing == [], "code rules without a card in ncclnb/doctor/cards"
    assert sorted(set(CARDS) - _card_ids_in_use()) == [], "cards in ncclnb/doctor/cards that no code rule uses"
    # a fixed rule has a card of its own; a family's members share the family's card
    assert {card(rule).id for rule in FIXED} == set(FIXED)
    assert {card(rule).id for rule in set(CODE_RULES) - set(FIXED)} == set(FAMILIES)
    assert {f"{family}." for family in FAMILIES} == set(FAMILY_PREFIXES)


def test_a_card_file_is_named_by_its_rule_and_holds_a_card():
    folder = DOCTOR / "cards"
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{i}.json" for i in CARDS)


@pytest.mark.parametrize("card_id", sorted(CARDS))
def test_a_card_holds_known_values(card_id):
    c = CARDS[card_id]
    # the category is one the model knows, or "" where the code picks it per finding (the families)
    assert c.category in CATEGORIES or c.category == "", c.category
    assert (c.category == "") == (card_id in FAMILIES), "a family's category is its member's; a rule's is fixed"
    docs = urlparse(c.docs)
    assert c.docs == "" or (docs.scheme == "https" and docs.netloc and " " not in c.docs), c.docs
    assert c.title and c.cause and c.detects, "a card says what was found, why, and what the rule detects"
    # every template parses, and a field is a name the code fills (no positional {} and no {0})
    for template in (c.title, c.cause, c.fix, c.detects):
        for _, name, spec, conv in string.Formatter().parse(template):
            assert name is None or name.isidentifier(), f"{card_id}: field {name!r} in {template!r}"
            assert not spec and not conv, f"{card_id}: the code formats values, not the card: {template!r}"


def _literal_text(node) -> bool:
    """Does this expression spell text in the source (a string or f-string, alone or joined)?"""
    return any(isinstance(n, ast.JoinedStr) or (isinstance(n, ast.Constant) and isinstance(n.value, str)) for n in ast.walk(node))


def test_no_doctor_module_writes_a_cause_or_a_fix_itself():
    """A Finding of the doctor (or a copy of one, dataclasses.replace) takes its cause and fix from
    a card (a signature's record, or a code rule's card through ncclnb.doctor.cards.prose), never
    from text spelled out in the code."""
    spelled, cards_named = [], set()
    for path in sorted(DOCTOR.rglob("*.py")):
        rel = path.relative_to(DOCTOR).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if name in ("Finding", "replace"):
                spelled += [
                    f"{rel}:{node.lineno} {k.arg}=" for k in node.keywords if k.arg in ("cause", "fix") and _literal_text(k.value)
                ]
            if name in ("prose", "card") and node.args and isinstance(node.args[0], ast.Constant):
                cards_named.add(node.args[0].value)
    assert spelled == [], "cause/fix text written in the code instead of in a card (ncclnb/doctor/cards)"
    assert cards_named, "the scan found no card named at all: the doctor's sources changed shape"
    assert sorted(cards_named - set(CODE_RULES) - set(FAMILIES)) == [], "a card named in the code that is no code rule"
