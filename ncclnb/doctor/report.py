"""Render a Diagnosis for a terminal, or as the contract's JSON."""
from __future__ import annotations

from typing import Optional

from ..model import Diagnosis, Finding

_COLOURS = {"error": "\x1b[31;1m", "warning": "\x1b[33;1m", "info": "\x1b[36m", "bold": "\x1b[1m",
            "dim": "\x1b[2m", "reset": "\x1b[0m"}


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
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _ranks(f: Finding) -> str:
    if not f.ranks:
        return ""
    shown = ", ".join(map(str, f.ranks[:16]))
    return shown + (f" and {len(f.ranks) - 16} more" if len(f.ranks) > 16 else "")


def render_text(diag: Diagnosis, colour: bool = False, top: Optional[int] = None) -> str:
    """A readable report: the top finding in full (title, category,
    confidence, evidence with source:line, cause, fix, blamed ranks), the
    others in short, then the per-rank table."""
    out = []
    findings = diag.findings[:top] if top is not None else diag.findings
    sources = len(diag.sources)
    out.append(_c(colour, "dim", f"ncclnb doctor: {diag.lines_read} lines from {sources} source(s)"))
    if not findings:
        out.append("No known failure signature found (category: unknown).")
    elif all(f.severity == "info" for f in findings):
        # nothing failed in these lines: say so before the informational ones
        out.append("No error or warning found in these lines; what follows is informational. "
                   "If the job hung, add every rank's log (NCCL_DEBUG=INFO) or a flight-recorder dump.")
    for i, f in enumerate(findings):
        head = f"{f.severity.upper():7} {f.title}"
        if i == 0:
            out.append("")
            label = "Most likely: " if f.severity != "info" else "Noted: "
            out.append(_c(colour, f.severity, label + f.title))
            out.append(f"  category   {f.category}   confidence {f.confidence:.2f}   rule {f.rule}")
            if f.ranks:
                out.append(f"  ranks      {_ranks(f)}")
            if f.hosts:
                out.append(f"  hosts      {', '.join(f.hosts[:8])}")
            out.append("  evidence")
            for ev in f.evidence:
                where = f"{ev.source}:{ev.line}" if ev.line is not None else ev.source
                out.append(f"    {_c(colour, 'dim', where)}  {_one_line(ev.text)}")
            out.append(f"  cause      {_one_line(f.cause, 400)}")
            out.append(f"  fix        {_one_line(f.fix, 400)}")
            if f.docs:
                out.append(f"  learn      {f.docs}")
            if len(findings) > 1:
                out.append("")
                out.append(_c(colour, "bold", "Also found"))
            continue
        ev = f.evidence[0] if f.evidence else None
        where = f"  [{ev.source}:{ev.line}]" if ev is not None and ev.line is not None else ""
        ranks = f"  ranks {_ranks(f)}" if f.ranks else ""
        out.append(f"  {_c(colour, f.severity, head)}  ({f.category}, {f.confidence:.2f}){ranks}{where}")
    if diag.ranks:
        out.append("")
        out.append(_c(colour, "bold", "Ranks"))
        out.append(f"  {'rank':>5} {'host':20} {'local':>5} {'pid':>8} {'nccl':16} {'last seq':>10} {'op':16} first error")
        for r in diag.ranks[:256]:
            cells = [
                f"{r.rank if r.rank is not None else '?':>5}", f"{(r.host or '-')[:20]:20}",
                f"{r.local_rank if r.local_rank is not None else '-':>5}", f"{r.pid if r.pid is not None else '-':>8}",
                f"{(r.nccl_version or '-')[:16]:16}", f"{r.last_seq if r.last_seq is not None else '-':>10}",
                f"{(r.last_op or '-')[:16]:16}", _one_line(r.first_error or "-", 80),
            ]
            out.append("  " + " ".join(cells))
        if len(diag.ranks) > 256:
            out.append(f"  ... and {len(diag.ranks) - 256} more ranks (use --json for all)")
    return "\n".join(out) + "\n"
