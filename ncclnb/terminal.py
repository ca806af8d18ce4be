"""Every terminal rendering of findings: a diagnosis as ``ncclnb doctor``
prints it, the checks' findings as ``ncclnb check`` prints them, and the
helpers that keep text from a log or a hostname safe on a terminal.

Everything in a finding may come from the input (log lines, host and file
names), and a log can carry escape sequences: a window title
(``ESC ] 0;...BEL``), OSC 8 hyperlinks, DCS, C1 controls (U+009B is a CSI),
backspaces that hide what precedes them. The text here shows every such
character as a visible escape (``\\x1b``, ``\\x9b``, ``\\u202e``) and emits
no control character but its own newlines and colours. The findings
themselves keep them. Imports only the model.
"""

from __future__ import annotations

import re
from typing import Optional, Sequence

from .model import Diagnosis, Finding
from .model.words import how_many, span

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


def render_diagnosis(diag: Diagnosis, colour: bool = False, top: Optional[int] = None) -> str:
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
            # the cause of an incident's card names what followed from it: kept whole up to a paragraph
            out.append(f"  cause      {_one_line(f.cause, 1200)}")
            out.append(f"  fix        {_one_line(f.fix, 400)}")
            if f.docs:
                out.append(f"  learn      {visible(f.docs)}")
            if len(findings) > 1:
                out.append("")
                out.append(_c(colour, "bold", "Also found"))
            continue
        first = f.evidence[0] if f.evidence else None
        where = f"  [{visible(first.source)}:{first.line}]" if first is not None and first.line is not None else ""
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


def render_findings(findings: Sequence[Finding], n_checks: int, n_nodes: Optional[int]) -> str:
    """The checks' findings as ``ncclnb check`` prints them: severity, title,
    evidence, ranks, fix, then the counts (``n_nodes`` None: the nodes checked
    are not known here, and are not counted). Control characters from the
    input are shown as escapes."""
    scope = how_many(n_checks, "check") + (f" on {how_many(n_nodes, 'node')}" if n_nodes is not None else "")
    if not findings:
        return f"No findings: {scope}."
    lines = []
    for f in findings:
        lines.append(f"{f.severity.upper():8}{f.title}")
        lines.append(f"        [{f.rule}, {f.category}, confidence {f.confidence:.2f}]")
        for e in f.evidence:
            lines.append(f"        > {e.source}: {e.text}")
        if f.ranks:
            lines.append(f"        ranks: {span(f.ranks)}")
        if f.fix:
            lines.append(f"        fix: {f.fix}")
        lines.append("")
    counts = {s: sum(f.severity == s for f in findings) for s in ("error", "warning", "info")}
    lines.append(
        f"{how_many(len(findings), 'finding')}: {how_many(counts['error'], 'error')}, "
        f"{how_many(counts['warning'], 'warning')}, {counts['info']} info "
        f"({scope})."
    )
    return "\n".join(visible(line) for line in lines)


def findings_brief(findings: Sequence[Finding]) -> list[str]:
    """One line a finding (severity, title, blamed ranks), as a report's text
    form lists the findings it carries."""
    return [visible(f"  {f.severity.upper():8}{f.title}" + (f"  ranks {span(f.ranks, 16)}" if f.ranks else "")) for f in findings]
