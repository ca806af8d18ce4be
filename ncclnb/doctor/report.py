"""A Diagnosis as the contract's JSON (its terminal text is
:func:`ncclnb.terminal.render_diagnosis`).

Everything in a Diagnosis may come from the input, and a log can carry
escape sequences: :func:`json_text` escapes the controls ``json.dumps``
leaves raw. The Diagnosis itself keeps them.
"""

from __future__ import annotations

import json
import re
from typing import Optional

from ..model import Diagnosis

# what json.dumps(ensure_ascii=False) leaves raw (it escapes only U+0000-U+001F)
_JSON_RAW = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def json_text(diag: Diagnosis, top: Optional[int] = None) -> str:
    """:func:`to_json` as indented JSON text that is safe on a terminal:
    non-ASCII text stays readable, and the controls that ``json.dumps``
    leaves raw (DEL, C1, bidi overrides, U+2028/9) are ``\\u`` escapes, which
    any JSON reader turns back into the same characters."""
    text = json.dumps(to_json(diag, top), indent=2, ensure_ascii=False)
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def to_json(diag: Diagnosis, top: Optional[int] = None) -> dict:
    """``{"findings": [...], "ranks": [...], "sources": [...], "lines_read": N}``;
    each finding has rule, category, severity, confidence, title, evidence
    [{source, line, text}], cause, fix, docs, ranks, hosts."""
    data = diag.to_dict()
    if top is not None:
        data["findings"] = data["findings"][:top]
    return data
