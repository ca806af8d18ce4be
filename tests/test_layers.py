"""Imports flow one way (DESIGN.md "Style", the README's layout table): a
module imports only from the layers below its own. Checked on every
``import`` in ``ncclnb/``, at module level and inside functions alike, since
a lazy import is still a dependency."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ncclnb"

# lowest first; a unit may import from units of a lower rank only
RANKS = {
    "errors": 0,
    "_signals": 0,
    "_frontend": 0,
    "model": 1,
    "summary": 2,
    "terminal": 2,
    "collectors": 3,
    "recorded": 3,
    "checks": 4,
    "doctor": 4,
    "guard": 5,
    "repro": 6,
    "survey": 7,
    "views": 8,
    "magics": 9,
    "cli": 9,
    "__main__": 10,
}
# the one place allowed to reach up: the model's text and HTML forms import
# the layers that write them, inside the methods IPython calls (model/_repr.py says why)
UPWARD_ALLOWED = {("ncclnb/model/_repr.py", unit) for unit in ("terminal", "summary", "views", "repro")}


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path):
    """(line, imported module) for every ncclnb import in ``path``."""
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    package = parts if parts[-1] == "__init__" else parts[:-1]
    if parts[-1] == "__init__":
        package = parts[:-1]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                names = [".".join(base + ([node.module] if node.module else []))]
            else:
                names = [node.module or ""]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            if name == "ncclnb" or name.startswith("ncclnb."):
                yield node.lineno, name


def test_every_unit_has_a_rank():
    units = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir() if not p.name.startswith(("__pycache__", "py.typed"))}
    units = {u for u in units if (PACKAGE / u).is_dir() or (PACKAGE / f"{u}.py").is_file()}
    assert units - {"__init__"} <= set(RANKS), f"give these a place in RANKS: {sorted(units - {'__init__'} - set(RANKS))}"


def test_imports_flow_down():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).as_posix()
        unit = _unit(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
        if unit == "__init__":
            continue  # the package root resolves public names lazily from every layer
        for line, name in _imports(path):
            target = _unit(name)
            if target in (unit, "__init__"):
                continue  # its own unit; the package root (``__version__``)
            if RANKS[target] < RANKS[unit] or (rel, target) in UPWARD_ALLOWED:
                continue
            wrong.append(f"{rel}:{line} ({unit}) imports {name} ({target})")
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)


def test_the_check_sees_an_upward_import(tmp_path):
    """The walk resolves relative imports: a model module importing the views layer is caught."""
    fake = PACKAGE / "model" / "derive.py"
    found = {name for _, name in _imports(fake)}
    assert all(n.startswith("ncclnb.model") for n in found), found
    assert _unit("ncclnb.views._common") == "views" and RANKS["views"] > RANKS["model"]
