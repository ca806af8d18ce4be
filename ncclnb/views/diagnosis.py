"""The diagnosis panel: ranked findings, evidence lines, fix, link to the
guided notebook; plain HTML, every value escaped."""

from __future__ import annotations

import re
from typing import Iterable, Optional, Sequence, Union

from ..model import Diagnosis, Finding
from ..model.words import how_many
from ._common import esc, esc_attr, shorten

SEVERITY_COLOURS = {"error": "#d73027", "warning": "#f46d43", "info": "#4575b4"}
EVIDENCE_LIMIT = 12
CARD_LIMIT = 40  # findings drawn as cards; the rest are counted per rule (1,000 nodes can each have one)
TEXT_LIMIT = 1_000  # characters of one title, evidence line, cause or fix in a card
# prose: lines break between words; only a token longer than the line (a path, a URL) breaks inside, and
# no hyphen is added (a browser's or a notebook's `word-break: break-all` would split ordinary words)
PROSE = "white-space:normal;word-break:normal;overflow-wrap:anywhere;hyphens:manual"
LINK_STYLE = "color:#2166ac;text-decoration:underline"
_URL = re.compile(r"https?://[^\s<>\"'`]+", re.IGNORECASE)
_URL_TAIL = ".,;:!?)]}"  # punctuation that ends the sentence, not the URL


def _link(url: str) -> str:
    return f'<a href="{esc_attr(url)}" target="_blank" rel="noopener" style="{LINK_STYLE}">{esc(url)}</a>'


def prose_html(text: str) -> str:
    """``text`` escaped, its http(s) URLs as links (any other scheme stays text)."""
    out, at = [], 0
    for m in _URL.finditer(text):
        url = m.group(0)
        cut = len(url)
        while cut and url[cut - 1] in _URL_TAIL and not (url[cut - 1] == ")" and "(" in url[:cut]):
            cut -= 1
        url = url[:cut]
        if len(url) <= len("https://"):
            continue
        out.append(esc(text[at : m.start()]))
        out.append(_link(url))
        at = m.start() + cut
    out.append(esc(text[at:]))
    return "".join(out)


def _docs_link(docs: str) -> str:
    """A link only for http(s) URLs and relative paths: never javascript:."""
    docs = (docs or "").strip()
    if not docs:
        return ""
    scheme = re.match(r"^([a-zA-Z][a-zA-Z0-9+.-]*):", docs)
    if scheme and scheme.group(1).lower() not in ("http", "https"):
        return f"<div>Guide: <code>{esc(docs)}</code></div>"
    return f'<div>Guide: <a href="{esc_attr(docs)}" target="_blank" rel="noopener" style="{LINK_STYLE}">{esc(docs)}</a></div>'


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
        ev_lines.append(f'<span style="color:#636363">{where}</span>  {esc(shorten(ev.text, TEXT_LIMIT))}')
    more = f"\n… {len(finding.evidence) - EVIDENCE_LIMIT} more lines" if len(finding.evidence) > EVIDENCE_LIMIT else ""
    evidence = (
        f"<details open><summary>Evidence ({how_many(len(finding.evidence), 'line')})</summary>"
        f'<pre style="white-space:pre-wrap;word-break:normal;overflow-wrap:anywhere;background:#f7f7f7;padding:4px;margin:2px 0">{chr(10).join(ev_lines)}{more}</pre></details>'
        if finding.evidence
        else ""
    )
    return (
        f'<div class="ncclnb-finding" style="border-left:4px solid {colour};padding:4px 8px;margin:6px 0;{PROSE}">'
        f'<div><span style="background:{colour};color:white;padding:0 6px;border-radius:3px">{esc(finding.severity)}</span> '
        f"<b>{num}{esc(shorten(finding.title, TEXT_LIMIT))}</b></div>"
        f'<div style="color:#636363;font-size:90%">{esc(finding.category)} · confidence {round(finding.confidence * 100)}% · '
        f"rule <code>{esc(finding.rule)}</code>{' · ' + '; '.join(blame) if blame else ''}</div>"
        + (f"<div>{prose_html(shorten(finding.cause, 4 * TEXT_LIMIT))}</div>" if finding.cause else "")
        + evidence
        + (
            f'<div class="ncclnb-fix" style="margin:2px 0"><b>Fix:</b> {prose_html(shorten(finding.fix, 4 * TEXT_LIMIT))}</div>'
            if finding.fix
            else ""
        )
        + _docs_link(finding.docs)
        + "</div>"
    )


def findings_html(findings: Iterable[Finding], title: str = "Findings", limit: int = CARD_LIMIT) -> str:
    """Escaped HTML list of findings, in the order given (most likely first):
    the first ``limit`` as cards, the rest counted per rule and severity in
    one table (with a few of the hosts each names)."""
    findings = list(findings)
    if not findings:
        return f'<div class="ncclnb-findings"><h4>{esc(title)}</h4><p>Nothing found.</p></div>'
    cards = "".join(finding_html(f, i + 1) for i, f in enumerate(findings[:limit]))
    return f'<div class="ncclnb-findings"><h4>{esc(title)}: {len(findings)}</h4>{cards}{_more_findings(findings[limit:])}</div>'


def _more_findings(rest: list) -> str:
    if not rest:
        return ""
    groups: dict[tuple[str, str, str], list] = {}
    for f in rest:
        # an alternative reading of a rule is counted apart from the rule's own findings, one row per category
        groups.setdefault((f.severity, f.rule, f.category if f.alternative_of else ""), []).append(f)
    rows = []
    for (severity, rule, _), fs in groups.items():
        hosts = list(dict.fromkeys(h for f in fs for h in f.hosts[:1]))
        colour = SEVERITY_COLOURS.get(severity, "#636363")
        rows.append(
            f'<tr><td><span style="color:{colour}">{esc(severity)}</span></td><td><code>{esc(rule)}</code></td>'
            f"<td>{len(fs)}</td><td>{esc(shorten(fs[0].title, 160))}</td>"
            f"<td>{esc(shorten(', '.join(hosts[:6]), 160))}{' …' if len(hosts) > 6 else ''}</td></tr>"
        )
    return (
        f'<details class="ncclnb-findings-more"><summary>{len(rest)} more findings, by rule</summary>'
        '<table style="border-collapse:collapse;font-size:12px"><tr><th>severity</th><th>rule</th>'
        "<th>findings</th><th>first title</th><th>hosts</th></tr>"
        + "".join(rows[:200])
        + (f"<tr><td colspan=5>… {len(rows) - 200} more rules</td></tr>" if len(rows) > 200 else "")
        + "</table></details>"
    )


def diagnosis_html(diagnosis: Diagnosis) -> str:
    """Pure: escaped HTML of a Diagnosis: ranked findings with evidence, fix
    and guide link, then what each rank said last."""
    src = ", ".join(esc(shorten(s, 60)) for s in diagnosis.sources[:8]) or "pasted text"
    head = (
        f'<div class="ncclnb-diagnosis"><h3 style="margin:4px 0">Diagnosis</h3>'
        f'<div style="color:#636363">{diagnosis.lines_read} lines read from {src}</div>'
    )
    body = findings_html(diagnosis.findings, "Findings, most likely cause first")
    table = ""
    if diagnosis.ranks:
        rows = "".join(
            "<tr>"
            + "".join(
                f"<td>{esc('' if v is None else shorten(str(v), 90))}</td>"
                for v in (r.rank, r.host, r.local_rank, r.pid, r.nccl_version, r.last_seq, r.last_op, r.first_error)
            )
            + "</tr>"
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


def show_diagnosis(diagnosis: Union[Diagnosis, Sequence[Finding]], title: str = "Findings"):
    """A Diagnosis (or a list of findings, e.g. from ``ncclnb.check``) as
    ranked cards with evidence, fix and guide link. The cards have no state
    to change: the widget is one HTML box (ipywidgets imported here, so
    ``Diagnosis._repr_html_`` can use this module without them)."""
    import ipywidgets as w

    from .widgets import View, with_text_form

    if isinstance(diagnosis, Diagnosis):
        html, n = diagnosis_html(diagnosis), len(diagnosis.findings)
    else:
        findings = list(diagnosis)
        html, n = findings_html(findings, title), len(findings)
    box = w.VBox([w.HTML(html)], layout=w.Layout())
    box.add_class("ncclnb-diagnosis-view")
    return with_text_form(View(box, None, html, f"ncclnb diagnosis: {how_many(n, 'finding')}"), "show_diagnosis", diagnosis)
