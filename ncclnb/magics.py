"""IPython magics: ``%load_ext ncclnb`` registers ``%ncclnb`` and
``%%ncclnb_doctor``. Each verb is a few lines around one public function;
the Python twin of every verb is named in ``VERBS``.

The current target (the last snapshot or report loaded) lives in a small
state object. Bad arguments raise ``UsageError`` with the usage line, and
bad input (an :class:`~ncclnb.errors.InputError`) becomes one such line; any
other exception is a bug and keeps its traceback. No verb exits the process.

Every verb shows what it made the way this frontend can (:func:`renderer`
decides: a live widget, a static HTML copy, or the full text a terminal
prints) and returns it (``d = %ncclnb doctor LOG`` is the Diagnosis,
``v = %ncclnb topo`` the view); the shell does not echo it a second time."""

from __future__ import annotations

import html
import shlex
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Optional

from IPython.core.error import UsageError
from IPython.display import display

from ._frontend import RENDERER_ENV, RENDERERS, renderer  # noqa: F401  (widget, static or text: decided there)
from .errors import InputError, tolerate

__all__ = [
    "RENDERERS",
    "RENDERER_ENV",
    "STATE",
    "USAGE",
    "VERBS",
    "autodiagnose",
    "is_distributed_error",
    "ncclnb_doctor_cell",
    "ncclnb_line",
    "register",
    "renderer",
    "unregister",
]

USAGE = (
    "Usage: %ncclnb snapshot | load PATH|NAME | check | doctor PATH... | topo | numa | ranks"
    " | jobmap | links | versions | dashboard | repro list | repro NAME [--fixed|--guarded] [--nproc N] [--timeout S]"
    " | alignment [PATH...] | pairing [PATH...] | autodiagnose on|off"
)
REPRO_USAGE = "Usage: %ncclnb repro list | %ncclnb repro NAME [--fixed | --guarded] [--nproc N] [--timeout S] [--keep DIR]"

# verb -> its Python twin, for the docs and the error messages
VERBS = {
    "snapshot": "ncclnb.collect()",
    "load": "ncclnb.load(path_or_name)",
    "check": "ncclnb.check(target)",
    "doctor": "ncclnb.diagnose(*paths)",
    "topo": "ncclnb.show_topology(target)",
    "numa": "ncclnb.show_numa(target)",
    "ranks": "ncclnb.show_ranks(target)",
    "jobmap": "ncclnb.show_job_map(report)",
    "links": "ncclnb.show_links(report)",
    "versions": "ncclnb.show_versions(target)",
    "dashboard": "ncclnb.dashboard(target, diagnosis)",
    "repro": "ncclnb.reproduce(name, fixed=...)",
    "alignment": "ncclnb.show_alignment(run_dir_or_paths)",
    "pairing": "ncclnb.show_pairing(run_dir_or_paths)",
    "autodiagnose": "ncclnb.magics.autodiagnose(ipython, on)",
}
# torch.distributed's error classes, matched by name so torch is not imported
DIST_ERRORS = ("DistBackendError", "DistStoreError", "DistNetworkError", "DistError")


@dataclass
class State:
    """What the magics remember between cells."""

    target: Any = None  # NodeSnapshot or ClusterReport
    diagnosis: Any = None  # last Diagnosis from doctor
    autodiagnose: bool = False
    shown: Any = None  # what the running cell's verb showed and returned: not echoed again


STATE = State()


# --- how to show: widget, static HTML or text ---------------------------------


def _pre(text: str) -> str:
    return f'<pre class="ncclnb-text" style="white-space:pre;overflow-x:auto">{html.escape(text)}</pre>'


def _show(
    value,
    text: Callable[[], str],
    view: Optional[Callable[[], Any]] = None,
    ipython=None,
    full_plain: bool = False,
    fallback: Any = None,
):
    """Show ``value`` as :func:`renderer` says and return what was shown:
    ``value``, or when it is None the view, or when no view was built (text
    mode) ``fallback``; whichever it is, the shell does not echo it again.
    ``text`` makes the full text form, ``view`` the
    live view (``None``: the text is all there is, or HTML made of it).
    ``full_plain``: the live view's text/plain is the full text too (cheap
    for a diagnosis or findings), for frontends that show only text such as
    ``jupyter console``."""
    mode = renderer(ipython)
    if mode == "text":
        print(text())
    else:
        built = None
        if view is not None:
            try:
                built = view()
            except ImportError:
                if mode == "widget":
                    raise
        if mode == "widget" and built is not None:
            built.display(plain=text() if full_plain else None)
        else:
            page = built.static_html() if built is not None else _pre(text())
            display({"text/plain": text(), "text/html": page}, raw=True)
        if value is None:
            value = built
    if value is None:
        value = fallback
    STATE.shown = value
    return value


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename and exc.strerror:
        return f"{type(exc).__name__}: {exc.filename}: {exc.strerror}"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def _need_target():
    if STATE.target is None:
        raise UsageError("no machine loaded: run %ncclnb load NAME|PATH or %ncclnb snapshot first\n" + USAGE)
    return STATE.target


def _call(fn, *args):
    """Run a public function; bad input becomes a one-line UsageError, a bug
    keeps its traceback."""
    try:
        return fn(*args)
    except InputError as exc:
        raise UsageError(_one_line(exc)) from None


def _describe(target) -> str:
    from .model import ClusterReport

    if isinstance(target, ClusterReport):
        return f"cluster report: {len(target.snapshots)} nodes, {len(target.ranks)} ranks"
    return f"node snapshot of {target.hostname}: {len(target.gpus)} GPUs, {len(target.nics)} NICs"


def _set_target(target, name: str):
    from .model._repr import terminal_text

    STATE.target = target
    print(terminal_text(f"ncclnb: {name} -> {_describe(target)}"))
    STATE.shown = target
    return target


def _verb_snapshot(args):
    if args:
        raise UsageError("Usage: %ncclnb snapshot")
    from .collectors import collect  # ImportError -> UsageError in ncclnb_line

    return _set_target(_call(collect), "this machine")


def _verb_load(args):
    if len(args) != 1:
        raise UsageError("Usage: %ncclnb load PATH|NAME")
    from .views._common import resolve

    return _set_target(_call(resolve, args[0]), args[0])


def _verb_check(args):
    from .checks import check
    from .views import show_diagnosis

    target = _call(_load_one, args) if args else _need_target()
    findings = _call(check, target)
    return _show(
        findings, lambda: _text("findings")(findings, target), lambda: show_diagnosis(findings, title="Checks"), full_plain=True
    )


def _load_one(args):
    from .views._common import resolve

    if len(args) != 1:
        raise UsageError(USAGE)
    return resolve(args[0])


def _verb_doctor(args):
    if not args:
        raise UsageError("Usage: %ncclnb doctor PATH...")
    from .doctor import diagnose

    STATE.diagnosis = _call(diagnose, *args)
    return _show_diagnosis(STATE.diagnosis)


def _show_diagnosis(diag, title: Optional[str] = None):
    """A Diagnosis shown as cards (widget, static) or as ``ncclnb doctor`` prints it."""
    from .terminal import render_diagnosis as render_text

    def view():
        from .views import show_diagnosis

        return show_diagnosis(diag) if title is None else show_diagnosis(diag, title=title)

    return _show(diag, lambda: render_text(diag).rstrip("\n"), view, full_plain=True)


def _view(name):
    def verb(args):
        from . import views

        target = _call(_load_one, args) if args else _need_target()
        return _show(None, lambda: _call(_text(name), target), lambda: _call(getattr(views, name), target), fallback=target)

    return verb


def _verb_dashboard(args):
    from .views import dashboard

    target = _call(_load_one, args) if args else _need_target()
    diag = STATE.diagnosis
    return _show(None, lambda: _call(_text("dashboard"), target, diag), lambda: _call(dashboard, target, diag), fallback=target)


def _run_view(name):
    """``%ncclnb alignment|pairing [PATH...]``: the paths given, else the files
    of the last diagnosis (``%ncclnb doctor`` or ``%ncclnb repro``)."""

    def verb(args):
        from . import views

        if args:
            source = args[0] if len(args) == 1 else list(args)
        elif STATE.diagnosis is not None:
            source = STATE.diagnosis
        else:
            raise UsageError(
                f"no run to show: %ncclnb {name.split('_')[1]} PATH... (a run directory, logs, "
                "dumps), or run %ncclnb repro NAME or %ncclnb doctor PATH... first"
            )
        facts = _call(_RUN_FACTS[name], source)  # read once: the view and the text draw the same facts
        return _show(None, lambda: _text(name)(facts), lambda: _call(getattr(views, name), facts), fallback=facts)

    return verb


def _verb_autodiagnose(args, ipython):
    if args not in (["on"], ["off"]):
        raise UsageError("Usage: %ncclnb autodiagnose on|off")
    autodiagnose(ipython, args[0] == "on")
    print(f"ncclnb: autodiagnose {args[0]}")


class _LiveRanks:
    """Per-rank progress of a reproduction, redrawn in place while it runs."""

    def __init__(self, title: str):
        self.title, self.status = title, {"phase": "starting", "elapsed": 0.0, "ranks": []}

    def _repr_html_(self) -> str:
        import html

        rows = "".join(
            f"<tr><td>{html.escape(str(r.get('rank')))}</td><td>{html.escape(str(r.get('state')))}</td>"
            f"<td>{'' if r.get('exit_code') is None else html.escape(str(r.get('exit_code')))}</td>"
            f"<td style='text-align:left;font-family:monospace'>{html.escape(str(r.get('last_line', ''))[:160])}</td></tr>"
            for r in self.status.get("ranks", ())
        )
        return (
            f"<div><b>{html.escape(self.title)}</b>: {html.escape(str(self.status.get('phase')))}, "
            f"{self.status.get('elapsed', 0):.1f} s<table><tr><th>rank</th><th>state</th><th>exit</th>"
            f"<th>last line</th></tr>{rows}</table></div>"
        )

    def __repr__(self) -> str:
        lines = [f"{self.title}: {self.status.get('phase')}, {self.status.get('elapsed', 0):.1f} s"]
        lines += [
            f"  rank {r.get('rank')}: {r.get('state')} {'' if r.get('exit_code') is None else r.get('exit_code')}"
            f"  {str(r.get('last_line', ''))[:100]}"
            for r in self.status.get("ranks", ())
        ]
        return "\n".join(lines)


def _verb_repro(args):
    """``%ncclnb repro NAME [--fixed|--guarded]``: live per-rank progress while
    it runs, then the diagnosis card; returns the ReproResult."""
    import time

    from .repro import get, reproduce, scenarios
    from .repro.report import outcome

    if args == ["list"]:
        found = scenarios()
        for sc in found.values():
            print(f"{sc.name:24s} seed {sc.seed or '-':4s} {sc.expected_category:25s} {sc.title}")
        STATE.shown = found
        return found
    opts = {"variant": "broken", "nproc": None, "timeout": None, "keep": None}
    words, name = list(args), None
    while words:
        word = words.pop(0)
        if word in ("--fixed", "--guarded"):
            opts["variant"] = word[2:]
        elif word in ("--nproc", "--timeout", "--keep") and words:
            value = words.pop(0)
            try:
                opts[word[2:]] = value if word == "--keep" else (int(value) if word == "--nproc" else float(value))
            except ValueError:
                raise UsageError(f"{word} needs a number, got {value!r}\n{REPRO_USAGE}") from None
        elif not word.startswith("-") and name is None:
            name = word
        else:
            raise UsageError(f"unexpected {word!r}\n{REPRO_USAGE}")
    if name is None:
        raise UsageError(REPRO_USAGE)
    try:
        scenario = get(name)
        scenario.variant(opts["variant"])
    except InputError as exc:  # an unknown scenario or variant
        raise UsageError(str(exc)) from None
    live = _LiveRanks(f"{name} ({opts['variant']})")
    text_mode = renderer() == "text"
    # a terminal cannot redraw a display in place: there, one line per phase
    handle = None if text_mode else display(live, display_id=True)
    last = [0.0]
    phases: list = []

    def progress(status):
        live.status = status
        if text_mode and status.get("phase") not in phases:
            phases.append(status.get("phase"))
            print(f"{live.title}: {status.get('phase')}, {status.get('elapsed', 0):.1f} s")
        if handle is not None and (time.monotonic() - last[0] > 0.5 or status.get("phase") != "running"):
            last[0] = time.monotonic()
            handle.update(live)

    try:
        result = reproduce(
            name, variant=opts["variant"], nproc=opts["nproc"], timeout=opts["timeout"], keep=opts["keep"], progress=progress
        )
    except InputError as exc:  # a ScenarioError, a --keep that cannot be made (a PathError: its file and reason)
        raise UsageError(_one_line(exc) if isinstance(exc, OSError) else str(exc)) from None
    # the last progress call ("diagnosing") carries no rows: leave the table showing how each rank ended
    live.status = {
        "phase": "completed" if result.completed else "ended",
        "elapsed": result.seconds,
        "ranks": [
            {
                "rank": "agent" if e.rank is None else e.rank,
                "state": "killed" if e.exit_code is None else "exited",
                "exit_code": e.exit_code,
                "last_line": e.last_line,
            }
            for e in result.exits
        ],
    }
    if handle is not None:
        handle.update(live)
    elif text_mode:
        print(repr(live))
    ok, why = outcome(result, scenario)
    print(
        f"{name} ({result.variant}) on {result.backend}: "
        f"{'completed' if result.completed else 'failed'} in {result.seconds:g} s; logs in {result.run_dir}"
    )
    for note in result.notes:
        print(f"  note: {note}")
    if result.diagnosis is not None and result.diagnosis.findings:
        STATE.diagnosis = result.diagnosis
        _show_diagnosis(result.diagnosis, title=f"Doctor: {name} ({result.variant})")
    print(f"Lesson: {scenario.lesson}")
    print(f"Verdict: {'as expected' if ok else 'NOT as expected'}: {why}")
    STATE.shown = result
    return result


# --- the text forms a terminal prints: ncclnb.views.text (no widget, no figure) ---


def _alignment_facts(source):
    from .doctor.facts import run_alignment

    return run_alignment(source)


def _pairing_facts(source):
    from .doctor.facts import run_pairing

    return run_pairing(source)


_RUN_FACTS = {"show_alignment": _alignment_facts, "show_pairing": _pairing_facts}


def _text(name: str):
    """The text form of view ``name`` (``ncclnb.views.text``), imported when first printed."""

    def text(*args, **kwargs):
        from .views.text import view_text

        return view_text(name, *args, **kwargs)

    return text


HANDLERS = {
    "snapshot": _verb_snapshot,
    "load": _verb_load,
    "check": _verb_check,
    "doctor": _verb_doctor,
    "topo": _view("show_topology"),
    "numa": _view("show_numa"),
    "ranks": _view("show_ranks"),
    "jobmap": _view("show_job_map"),
    "links": _view("show_links"),
    "versions": _view("show_versions"),
    "dashboard": _verb_dashboard,
    "repro": _verb_repro,
    "alignment": _run_view("show_alignment"),
    "pairing": _run_view("show_pairing"),
}


def ncclnb_line(line: str, ipython=None):
    """``%ncclnb VERB [ARGS]``."""
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"{exc}\n{USAGE}") from None
    if not words or words[0] in ("-h", "--help", "help"):
        raise UsageError(USAGE)
    verb, args = words[0], words[1:]
    if verb == "autodiagnose":
        return _verb_autodiagnose(args, ipython)
    handler = HANDLERS.get(verb)
    if handler is None:
        raise UsageError(f"unknown verb {verb!r}\n{USAGE}")
    try:
        return handler(args)
    except ImportError as exc:
        raise UsageError(f"{verb}: not available in this install ({_one_line(exc)}); Python twin: {VERBS[verb]}") from None


def ncclnb_doctor_cell(line: str, cell: str):
    """``%%ncclnb_doctor``: diagnose the log text pasted into the cell; returns the Diagnosis."""
    if not cell.strip():
        raise UsageError("Usage: %%ncclnb_doctor, then paste log lines in the cell body")
    from .doctor import diagnose

    STATE.diagnosis = _call(diagnose, cell)
    return _show_diagnosis(STATE.diagnosis)


# --- autodiagnose -------------------------------------------------------------


def is_distributed_error(exc: BaseException) -> bool:
    """torch.distributed's errors (by class name, torch not imported) and
    RuntimeErrors that mention NCCL or gloo."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & set(DIST_ERRORS):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and ("nccl" in text or "gloo" in text)


def _diagnose_failed_cell(result) -> None:
    """IPython's ``post_run_cell`` callback: the cell's traceback is already
    shown; when its error is torch.distributed's, show a diagnosis of it."""
    exc = getattr(result, "error_in_exec", None)
    if exc is None or not is_distributed_error(exc):
        return
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    try:
        from .doctor import diagnose

        STATE.diagnosis = diagnose(text)
        _show_diagnosis(STATE.diagnosis)
    except Exception as err:  # the callback must never hide the user's own error (under NCCLNB_STRICT a bug raises)
        tolerate(err)
        print(f"ncclnb autodiagnose: could not diagnose ({_one_line(err)})")


def autodiagnose(ipython, on: bool) -> None:
    """Turn the diagnosis under torch.distributed tracebacks on or off: a
    ``post_run_cell`` callback, beside other extensions' callbacks and
    leaving the shell's one custom exception handler (``set_custom_exc``)
    to whoever set it."""
    registered = _diagnose_failed_cell in ipython.events.callbacks["post_run_cell"]
    if on and not registered:
        ipython.events.register("post_run_cell", _diagnose_failed_cell)
    elif not on and registered:
        ipython.events.unregister("post_run_cell", _diagnose_failed_cell)
    STATE.autodiagnose = on


def _forget_shown(result=None) -> None:
    """``post_run_cell``: what a verb showed is echoed normally from the next cell on."""
    STATE.shown = None


class _EchoFilter:
    """The shell's display hook, except for the value a verb of the running
    cell already showed: a bare ``%ncclnb doctor LOG`` returns the Diagnosis
    (``_`` and ``Out`` get it) without showing it twice."""

    def __init__(self, hook):
        self.hook = hook

    def __call__(self, result=None):
        if result is None or result is not STATE.shown:
            return self.hook(result)
        STATE.shown = None
        hook = self.hook
        try:
            hook.check_for_underscore()
            if not hook.quiet():
                hook.update_user_ns(result)
                hook.fill_exec_result(result)
        except AttributeError:  # not IPython's DisplayHook: nothing to record
            pass
        return None


# --- registration ---------------------------------------------------------------


def register(ipython) -> None:
    """Register ``%ncclnb`` and ``%%ncclnb_doctor`` on an IPython shell."""

    def line_magic(line):
        return ncclnb_line(line, ipython)

    line_magic.__doc__ = ncclnb_line.__doc__ + "\n\n" + USAGE
    ipython.register_magic_function(line_magic, "line", "ncclnb")
    ipython.register_magic_function(ncclnb_doctor_cell, "cell", "ncclnb_doctor")
    trap = getattr(ipython, "display_trap", None)
    if trap is not None and not isinstance(trap.hook, _EchoFilter):
        trap.hook = _EchoFilter(trap.hook)
    if _forget_shown not in ipython.events.callbacks["post_run_cell"]:
        ipython.events.register("post_run_cell", _forget_shown)


def unregister(ipython) -> None:
    """Remove the magics and the autodiagnose handler (``%unload_ext ncclnb``)."""
    autodiagnose(ipython, False)
    if _forget_shown in ipython.events.callbacks["post_run_cell"]:
        ipython.events.unregister("post_run_cell", _forget_shown)
    trap = getattr(ipython, "display_trap", None)
    if trap is not None and isinstance(trap.hook, _EchoFilter):
        trap.hook = trap.hook.hook
    STATE.shown = None
    magics = ipython.magics_manager.magics
    magics["line"].pop("ncclnb", None)
    magics["cell"].pop("ncclnb_doctor", None)
