"""The diagnosis panel: ranked findings, evidence lines, fix, link to the
guided notebook; plain HTML, every value escaped."""
from __future__ import annotations

import re
from typing import Iterable, Optional

from ..model import Diagnosis, Finding
from ._common import esc, esc_attr, shorten

SEVERITY_COLOURS = {"error": "#d73027", "warning": "#f46d43", "info": "#4575b4"}
EVIDENCE_LIMIT = 12


def _docs_link(docs: str) -> str:
    """A link only for http(s) URLs and relative paths: never javascript:."""
    docs = (docs or "").strip()
    if not docs:
        return ""
    scheme = re.match(r"^([a-zA-Z][a-zA-Z0-9+.-]*):", docs)
    if scheme and scheme.group(1).lower() not in ("http", "https"):
        return f"<div>Guide: <code>{esc(docs)}</code></div>"
    return f'<div>Guide: <a href="{esc_attr(docs)}" target="_blank" rel="noopener">{esc(docs)}</a></div>'


def finding_html(finding: Finding, number: Optional[int] = None) -> str:
    """Escaped HTML card for one finding."""
    colour = SEVERITY_COLOURS.get(finding.severity, "#636363")
    num = f"{number}. " if number is not None else ""
    blame = []
    if finding.ranks:
        blame.append("ranks " + ", ".join(str(r) for r in finding.ranks[:32]) + (" …" if len(finding.ranks) > 32 else ""))
    if finding.hosts:
        blame.append("hosts " + ", ".join(esc(shorten(h, 40)) for h in finding.hosts[:16]))
    ev_lines = []
    for ev in finding.evidence[:EVIDENCE_LIMIT]:
        where = esc(ev.source) + (f":{ev.line}" if ev.line is not None else "")
        ev_lines.append(f'<span style="color:#636363">{where}</span>  {esc(ev.text)}')
    more = f"\n… {len(finding.evidence) - EVIDENCE_LIMIT} more lines" if len(finding.evidence) > EVIDENCE_LIMIT else ""
    evidence = (
        f"<details open><summary>Evidence ({len(finding.evidence)} line{'s' if len(finding.evidence) != 1 else ''})</summary>"
        f'<pre style="white-space:pre-wrap;background:#f7f7f7;padding:4px;margin:2px 0">{chr(10).join(ev_lines)}{more}</pre></details>'
        if finding.evidence else ""
    )
    return (
        f'<div class="ncclnb-finding" style="border-left:4px solid {colour};padding:4px 8px;margin:6px 0">'
        f'<div><span style="background:{colour};color:white;padding:0 6px;border-radius:3px">{esc(finding.severity)}</span> '
        f"<b>{num}{esc(finding.title)}</b></div>"
        f'<div style="color:#636363;font-size:90%">{esc(finding.category)} · confidence {round(finding.confidence * 100)}% · '
        f"rule <code>{esc(finding.rule)}</code>{' · ' + '; '.join(blame) if blame else ''}</div>"
        + (f"<div>{esc(finding.cause)}</div>" if finding.cause else "")
        + evidence
        + (f'<div><b>Fix:</b><pre style="white-space:pre-wrap;margin:2px 0">{esc(finding.fix)}</pre></div>' if finding.fix else "")
        + _docs_link(finding.docs)
        + "</div>"
    )


def findings_html(findings: Iterable[Finding], title: str = "Findings") -> str:
    """Escaped HTML list of findings, in the order given (most likely first)."""
    findings = list(findings)
    if not findings:
        return f'<div class="ncclnb-findings"><h4>{esc(title)}</h4><p>Nothing found.</p></div>'
    cards = "".join(finding_html(f, i + 1) for i, f in enumerate(findings))
    return f'<div class="ncclnb-findings"><h4>{esc(title)}: {len(findings)}</h4>{cards}</div>'


def diagnosis_html(diagnosis: Diagnosis) -> str:
    """Pure: escaped HTML of a Diagnosis: ranked findings with evidence, fix
    and guide link, then what each rank said last."""
    src = ", ".join(esc(shorten(s, 60)) for s in diagnosis.sources[:8]) or "pasted text"
    head = (f'<div class="ncclnb-diagnosis"><h3 style="margin:4px 0">Diagnosis</h3>'
            f'<div style="color:#636363">{diagnosis.lines_read} lines read from {src}</div>')
    body = findings_html(diagnosis.findings, "Findings, most likely cause first")
    table = ""
    if diagnosis.ranks:
        rows = "".join(
            "<tr>" + "".join(f"<td>{esc('' if v is None else shorten(str(v), 90))}</td>" for v in (
                r.rank, r.host, r.local_rank, r.pid, r.nccl_version, r.last_seq, r.last_op, r.first_error)) + "</tr>"
            for r in diagnosis.ranks[:256]
        )
        more = f"<p>… {len(diagnosis.ranks) - 256} more ranks</p>" if len(diagnosis.ranks) > 256 else ""
        table = (
            "<details><summary>What each rank said last</summary>"
            '<table style="border-collapse:collapse;font-size:12px"><tr><th>rank</th><th>host</th><th>local</th>'
            "<th>pid</th><th>NCCL</th><th>last seq</th><th>last op</th><th>first error</th></tr>"
            f"{rows}</table>{more}</details>"
        )
    return head + body + table + "</div>"
