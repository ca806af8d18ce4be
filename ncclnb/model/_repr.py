"""The text and HTML forms of the model's values (``_repr_pretty_``,
``_repr_html_``), for IPython: a terminal shows the full text form, a
notebook the escaped HTML one.

The renderers live in layers above the model (``ncclnb.terminal``,
``ncclnb.summary``, ``ncclnb.views.diagnosis``): they are imported inside the
functions the methods call, never when the model is imported, so the model
still imports nothing else of ncclnb."""

from __future__ import annotations

import html


def terminal_text(text: str) -> str:
    """``text`` with every control character of each line shown as an escape
    (a hostname or log line can carry ``ESC ]0;...``): safe on a terminal."""
    from ..terminal import visible

    return "\n".join(visible(line) for line in text.split("\n"))


def pre_html(text: str, kind: str) -> str:
    """``text`` as an escaped ``<pre>`` block: static, no script."""
    return f'<pre class="ncclnb-text ncclnb-{kind}" style="white-space:pre;overflow-x:auto">{html.escape(text)}</pre>'


def diagnosis_text(diag) -> str:
    """The diagnosis as ``ncclnb doctor`` prints it (without colour)."""
    from ..terminal import render_diagnosis

    return render_diagnosis(diag).rstrip("\n")


def diagnosis_html(diag) -> str:
    """The diagnosis as the notebook views draw it: escaped HTML cards."""
    from ..views.diagnosis import diagnosis_html as cards

    return cards(diag)


def summary_text(target) -> str:
    """A snapshot or report as ``ncclnb show`` prints it, control characters escaped."""
    from ..summary import summary

    return terminal_text(summary(target, width=160))


def report_text(report) -> str:
    """A cluster report: ``ncclnb show``'s summary, then the findings it carries."""
    from ..terminal import findings_brief

    lines = [summary_text(report)]
    if report.findings:
        lines.append(f"\nFindings when the report was written ({len(report.findings)})")
        lines.extend(findings_brief(report.findings))
    return "\n".join(lines)


def pretty(printer, text: str) -> None:
    """Write ``text`` through IPython's pretty printer, line by line."""
    for i, line in enumerate(text.split("\n")):
        if i:
            printer.break_()
        printer.text(line)


def repro_text(result) -> str:
    """A reproduction run as ``ncclnb repro run`` prints it; a run of a
    scenario this install does not know: what ran, the notes and the diagnosis."""
    try:
        from ..repro import get
        from ..repro.report import render_text

        return terminal_text(render_text(result, get(result.scenario)).rstrip("\n"))
    except Exception as exc:  # an unknown scenario (a result from another version) or no repro layer
        from ..errors import tolerate

        tolerate(exc, (ImportError, KeyError))
        state = "completed" if result.completed else "failed"
        lines = [
            f"{result.scenario}, {result.variant}, on {result.backend}: {state} in {result.seconds:g} s",
            f"  logs: {result.run_dir}",
        ] + [f"  note: {note}" for note in result.notes]
        text = "\n".join(lines)
        if result.diagnosis is not None:
            text += "\n\n" + diagnosis_text(result.diagnosis)
        return terminal_text(text)
