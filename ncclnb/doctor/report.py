"""Render a Diagnosis for a terminal, or as the contract's JSON.

Everything in a Diagnosis may come from the input (log lines, host and file
names), and a log can carry escape sequences: a window title
(``ESC ] 0;...BEL``), OSC 8 hyperlinks, DCS, C1 controls (U+009B is a CSI),
backspaces that hide what precedes them. The text report shows every such
character as a visible escape (``\\x1b``, ``\\x9b``, ``\\u202e``) and emits
no control character but its own newlines and colours; :func:`json_text`
escapes the ones ``json.dumps`` leaves raw. The Diagnosis itself keeps them.
"""

from __future__ import annotations

import json
import re
from typing import Optional

from ..model import Diagnosis, Finding
from ..model.words import how_many

_COLOURS = {
    "error": "\x1b[31;1m",
    "warning": "\x1b[33;1m",
    "info": "\x1b[36m",
    "bold": "\x1b[1m",
    "dim": "\x1b[2m",
    "reset": "\x1b[0m",
}
# what a terminal acts on: C0 controls, DEL, C1 controls, bidi embeddings,
# overrides and isolates (text that reads other than it is), line and
# paragraph separators
_CONTROLS = "\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_UNSAFE = re.compile(f"[{_CONTROLS}]")
_SPACES = re.compile(r"[ \t\n\r]+")
# the last pass over each report line: its own colours pass, any other control is escaped
_OWN_OR_UNSAFE = re.compile("|".join(re.escape(c) for c in _COLOURS.values()) + f"|[{_CONTROLS}]")
_OWN = frozenset(_COLOURS.values())
# what json.dumps(ensure_ascii=False) leaves raw (it escapes only U+0000-U+001F)
_JSON_RAW = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text) -> str:
    """``text`` with every control character shown as an escape
    (``"\\x1b]0;t\\x07"``), safe to print on a terminal."""
    text = str(text)
    return _UNSAFE.sub(lambda m: _escape(m.group()), text) if _UNSAFE.search(text) else text


def _terminal_safe(line: str) -> str:
    return _OWN_OR_UNSAFE.sub(lambda m: m.group() if m.group() in _OWN else _escape(m.group()), line)


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


def _c(colour: bool, name: str, text: str) -> str:
    return f"{_COLOURS[name]}{text}{_COLOURS['reset']}" if colour else text


def _one_line(text: str, width: int = 160) -> str:
    """One line of at most ``width`` characters: runs of spaces, tabs and
    newlines become one space, other controls visible escapes."""
    text = visible(_SPACES.sub(" ", text).strip())
    return text if len(text) <= width else text[: width - 1] + "…"


def _ranks(f: Finding) -> str:
    if not f.ranks:
        return ""
    shown = ", ".join(map(str, f.ranks[:16]))
    return shown + (f" and {len(f.ranks) - 16} more" if len(f.ranks) > 16 else "")


def render_text(diag: Diagnosis, colour: bool = False, top: Optional[int] = None) -> str:
    """A readable report: the top finding in full (title, category,
    confidence, evidence with source:line, cause, fix, blamed ranks), the
    others in short, then the per-rank table. Control characters from the
    input are shown as escapes (see the module's doc), never emitted."""
    out = []
    findings = diag.findings[:top] if top is not None else diag.findings
    sources = len(diag.sources)
    out.append(_c(colour, "dim", f"ncclnb doctor: {how_many(diag.lines_read, 'line')} from {how_many(sources, 'source')}"))
    if not findings:
        out.append("No known failure signature found (category: unknown).")
    elif all(f.severity == "info" for f in findings):
        # nothing failed in these lines: say so before the informational ones
        out.append(
            "No error or warning found in these lines; what follows is informational. "
            "If the job hung, add every rank's log (NCCL_DEBUG=INFO) or a flight-recorder dump."
        )
    for i, f in enumerate(findings):
        title = _one_line(f.title, 400)
        head = f"{f.severity.upper():7} {title}"
        if i == 0:
            out.append("")
            label = "Most likely: " if f.severity != "info" else "Noted: "
            out.append(_c(colour, f.severity, label + title))
            out.append(f"  category   {visible(f.category)}   confidence {f.confidence:.2f}   rule {visible(f.rule)}")
            if f.ranks:
                out.append(f"  ranks      {_ranks(f)}")
            if f.hosts:
                out.append(f"  hosts      {visible(', '.join(f.hosts[:8]))}")
            out.append("  evidence")
            for ev in f.evidence:
                where = visible(f"{ev.source}:{ev.line}" if ev.line is not None else ev.source)
                out.append(f"    {_c(colour, 'dim', where)}  {_one_line(ev.text)}")
            out.append(f"  cause      {_one_line(f.cause, 400)}")
            out.append(f"  fix        {_one_line(f.fix, 400)}")
            if f.docs:
                out.append(f"  learn      {visible(f.docs)}")
            if len(findings) > 1:
                out.append("")
                out.append(_c(colour, "bold", "Also found"))
            continue
        ev = f.evidence[0] if f.evidence else None
        where = f"  [{visible(ev.source)}:{ev.line}]" if ev is not None and ev.line is not None else ""
        ranks = f"  ranks {_ranks(f)}" if f.ranks else ""
        out.append(f"  {_c(colour, f.severity, head)}  ({visible(f.category)}, {f.confidence:.2f}){ranks}{where}")
    if diag.ranks:
        out.append("")
        out.append(_c(colour, "bold", "Ranks"))
        out.append(f"  {'rank':>5} {'host':20} {'local':>5} {'pid':>8} {'nccl':16} {'last seq':>10} {'op':16} first error")
        for r in diag.ranks[:256]:
            cells = [
                f"{r.rank if r.rank is not None else '?':>5}",
                f"{visible(r.host or '-')[:20]:20}",
                f"{r.local_rank if r.local_rank is not None else '-':>5}",
                f"{r.pid if r.pid is not None else '-':>8}",
                f"{visible(r.nccl_version or '-')[:16]:16}",
                f"{r.last_seq if r.last_seq is not None else '-':>10}",
                f"{visible(r.last_op or '-')[:16]:16}",
                _one_line(r.first_error or "-", 80),
            ]
            out.append("  " + " ".join(cells))
        if len(diag.ranks) > 256:
            out.append(f"  ... and {len(diag.ranks) - 256} more ranks (use --json for all)")
    # every field above is escaped already; this pass keeps a field added later honest
    return "\n".join(_terminal_safe(line) for line in out) + "\n"
