"""The first view does not compile the IRI grammar jsonschema would import
through plotly's FigureWidget (ncclnb.views.widgets.defer_iri_grammar), and
nothing that uses that grammar sees a difference. Each case runs in a fresh
interpreter: what is imported is the point."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("rfc3987_syntax") is None, reason="rfc3987_syntax is not installed: there is no grammar to defer"
)

_IRI_CHECKS = r"""
import jsonschema
v = jsonschema.Draft7Validator({"format": "iri"}, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
r = jsonschema.Draft7Validator({"format": "iri-reference"}, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
checks = [v.is_valid(x) for x in ("http://example.org/ä", "not an iri ::", "mailto:a@b", "")] + \
         [r.is_valid(x) for x in ("../a/b?c#d", "::")]
"""


def _child(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_first_view_leaves_the_grammar_uncompiled_and_iri_checks_unchanged():
    shipped = _child(
        r"""
import json, sys
import ncclnb
from ncclnb.recorded import load
view = ncclnb.show_topology(load("a30-nvlink-pairs"))
assert view.figure.data
compiled_after_view = "rfc3987_syntax.syntax_helpers" in sys.modules
"""
        + _IRI_CHECKS
        + r"""
print(json.dumps({"compiled_after_view": compiled_after_view, "checks": checks,
                  "compiled_after_checks": "rfc3987_syntax.syntax_helpers" in sys.modules}))
"""
    )
    plain = _child("import json, sys\n" + _IRI_CHECKS + "\nprint(json.dumps({'checks': checks}))")
    assert shipped["compiled_after_view"] is False
    assert shipped["checks"] == plain["checks"]
    assert shipped["compiled_after_checks"] is True  # the real module, loaded when first used


def test_no_stand_in_where_the_grammar_is_already_loaded():
    got = _child(r"""
import json, sys
import rfc3987_syntax
from ncclnb.views.widgets import defer_iri_grammar
print(json.dumps({"deferred": defer_iri_grammar(), "same": sys.modules["rfc3987_syntax"] is rfc3987_syntax}))
""")
    assert got == {"deferred": False, "same": True}
