"""IPython magics: ``%load_ext ncclnb`` registers ``%ncclnb`` and
``%%ncclnb_doctor``. Each verb is a few lines around one public function;
the Python twin of every verb is named in ``VERBS``.

The current target (the last snapshot or report loaded) lives in a small
state object. Bad arguments raise ``UsageError`` with the usage line; no
verb exits the process."""
from __future__ import annotations

import shlex
import traceback
from dataclasses import dataclass
from typing import Any

from IPython.core.error import UsageError
from IPython.display import display

USAGE = ("Usage: %ncclnb snapshot | load PATH|NAME | check | doctor PATH... | topo | numa | ranks"
         " | jobmap | links | versions | dashboard | repro list | repro NAME [--fixed|--guarded] [--nproc N] [--timeout S]"
         " | alignment [PATH...] | pairing [PATH...] | autodiagnose on|off")
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
    target: Any = None          # NodeSnapshot or ClusterReport
    target_name: str = ""
    diagnosis: Any = None       # last Diagnosis from doctor
    autodiagnose: bool = False


STATE = State()


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def _need_target():
    if STATE.target is None:
        raise UsageError("no machine loaded: run %ncclnb load NAME|PATH or %ncclnb snapshot first\n" + USAGE)
    return STATE.target


def _call(fn, *args):
    """Run a public function; bad input becomes a one-line UsageError."""
    try:
        return fn(*args)
    except (ValueError, TypeError, OSError, LookupError, UnicodeError) as exc:
        raise UsageError(_one_line(exc)) from None


def _describe(target) -> str:
    from .model import ClusterReport

    if isinstance(target, ClusterReport):
        return f"cluster report: {len(target.snapshots)} nodes, {len(target.ranks)} ranks"
    return f"node snapshot of {target.hostname}: {len(target.gpus)} GPUs, {len(target.nics)} NICs"


def _set_target(target, name: str) -> None:
    STATE.target, STATE.target_name = target, name
    print(f"ncclnb: {name} -> {_describe(target)}")


def _verb_snapshot(args):
    if args:
        raise UsageError("Usage: %ncclnb snapshot")
    from .collectors import collect  # ImportError -> UsageError in ncclnb_line

    _set_target(_call(collect), "this machine")


def _verb_load(args):
    if len(args) != 1:
        raise UsageError("Usage: %ncclnb load PATH|NAME")
    from .viz._common import resolve

    _set_target(_call(resolve, args[0]), args[0])


def _verb_check(args):
    from .checks import check
    from .viz import show_diagnosis

    target = _call(_load_one, args) if args else _need_target()
    display(show_diagnosis(_call(check, target), title="Checks"))


def _load_one(args):
    from .viz._common import resolve

    if len(args) != 1:
        raise UsageError(USAGE)
    return resolve(args[0])


def _verb_doctor(args):
    if not args:
        raise UsageError("Usage: %ncclnb doctor PATH...")
    from .doctor import diagnose
    from .viz import show_diagnosis

    STATE.diagnosis = _call(diagnose, *args)
    display(show_diagnosis(STATE.diagnosis))


def _view(name):
    def verb(args):
        from . import viz

        target = _call(_load_one, args) if args else _need_target()
        display(_call(getattr(viz, name), target))
    return verb


def _verb_dashboard(args):
    from .viz import dashboard

    target = _call(_load_one, args) if args else _need_target()
    display(_call(dashboard, target, STATE.diagnosis))


def _run_view(name):
    """``%ncclnb alignment|pairing [PATH...]``: the paths given, else the files
    of the last diagnosis (``%ncclnb doctor`` or ``%ncclnb repro``)."""
    def verb(args):
        from . import viz

        if args:
            source = args[0] if len(args) == 1 else list(args)
        elif STATE.diagnosis is not None:
            source = STATE.diagnosis
        else:
            raise UsageError(f"no run to show: %ncclnb {name.split('_')[1]} PATH... (a run directory, logs, "
                             "dumps), or run %ncclnb repro NAME or %ncclnb doctor PATH... first")
        display(_call(getattr(viz, name), source))
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
            for r in self.status.get("ranks", ()))
        return (f"<div><b>{html.escape(self.title)}</b>: {html.escape(str(self.status.get('phase')))}, "
                f"{self.status.get('elapsed', 0):.1f} s<table><tr><th>rank</th><th>state</th><th>exit</th>"
                f"<th>last line</th></tr>{rows}</table></div>")

    def __repr__(self) -> str:
        lines = [f"{self.title}: {self.status.get('phase')}, {self.status.get('elapsed', 0):.1f} s"]
        lines += [f"  rank {r.get('rank')}: {r.get('state')} {'' if r.get('exit_code') is None else r.get('exit_code')}"
                  f"  {str(r.get('last_line', ''))[:100]}" for r in self.status.get("ranks", ())]
        return "\n".join(lines)


def _verb_repro(args):
    """``%ncclnb repro NAME [--fixed|--guarded]``: live per-rank progress while
    it runs, then the diagnosis card; returns the ReproResult."""
    import time

    from .repro import ScenarioError, get, reproduce, scenarios
    from .repro.report import outcome

    if args == ["list"]:
        for sc in scenarios().values():
            print(f"{sc.name:24s} seed {sc.seed or '-':4s} {sc.expected_category:25s} {sc.title}")
        return None
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
    except ScenarioError as exc:
        raise UsageError(str(exc)) from None
    live = _LiveRanks(f"{name} ({opts['variant']})")
    handle = display(live, display_id=True)
    last = [0.0]

    def progress(status):
        live.status = status
        if handle is not None and (time.monotonic() - last[0] > 0.5 or status.get("phase") != "running"):
            last[0] = time.monotonic()
            handle.update(live)

    try:
        result = reproduce(name, variant=opts["variant"], nproc=opts["nproc"], timeout=opts["timeout"],
                           keep=opts["keep"], progress=progress)
    except ScenarioError as exc:
        raise UsageError(str(exc)) from None
    from .viz import show_diagnosis

    # the last progress call ("diagnosing") carries no rows: leave the table showing how each rank ended
    live.status = {"phase": "completed" if result.completed else "ended", "elapsed": result.seconds, "ranks": [
        {"rank": "agent" if e.rank is None else e.rank, "state": "killed" if e.exit_code is None else "exited",
         "exit_code": e.exit_code, "last_line": e.last_line} for e in result.exits]}
    if handle is not None:
        handle.update(live)
    ok, why = outcome(result, scenario)
    print(f"{name} ({result.variant}) on {result.backend}: "
          f"{'completed' if result.completed else 'failed'} in {result.seconds:g} s; logs in {result.run_dir}")
    for note in result.notes:
        print(f"  note: {note}")
    if result.diagnosis is not None and result.diagnosis.findings:
        STATE.diagnosis = result.diagnosis
        display(show_diagnosis(result.diagnosis, title=f"Doctor: {name} ({result.variant})"))
    print(f"Lesson: {scenario.lesson}")
    print(f"Verdict: {'as expected' if ok else 'NOT as expected'}: {why}")
    return result


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


def ncclnb_doctor_cell(line: str, cell: str) -> None:
    """``%%ncclnb_doctor``: diagnose the log text pasted into the cell."""
    if not cell.strip():
        raise UsageError("Usage: %%ncclnb_doctor, then paste log lines in the cell body")
    try:
        from .doctor import diagnose
    except ImportError as exc:
        raise UsageError(f"the doctor is not available in this install ({_one_line(exc)})") from None
    from .viz import show_diagnosis

    STATE.diagnosis = _call(diagnose, cell)
    display(show_diagnosis(STATE.diagnosis))


# --- autodiagnose -------------------------------------------------------------

def is_distributed_error(exc: BaseException) -> bool:
    """torch.distributed's errors (by class name, torch not imported) and
    RuntimeErrors that mention NCCL or gloo."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & set(DIST_ERRORS):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and ("nccl" in text or "gloo" in text)


def _custom_exc(shell, etype, value, tb, tb_offset=None):
    """Show the normal traceback, then a diagnosis of the error text."""
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
    if not is_distributed_error(value):
        return None
    text = "".join(traceback.format_exception(etype, value, tb))
    try:
        from .doctor import diagnose
        from .viz import show_diagnosis

        STATE.diagnosis = diagnose(text)
        display(show_diagnosis(STATE.diagnosis))
    except Exception as exc:  # the handler must never hide the user's own error
        print(f"ncclnb autodiagnose: could not diagnose ({_one_line(exc)})")
    return None


def autodiagnose(ipython, on: bool) -> None:
    """Turn the diagnosis under torch.distributed tracebacks on or off."""
    if on:
        ipython.set_custom_exc((Exception,), _custom_exc)
    elif STATE.autodiagnose:
        ipython.set_custom_exc((), None)
    STATE.autodiagnose = on


# --- registration ---------------------------------------------------------------

def register(ipython) -> None:
    """Register ``%ncclnb`` and ``%%ncclnb_doctor`` on an IPython shell."""
    def line_magic(line):
        return ncclnb_line(line, ipython)

    line_magic.__doc__ = ncclnb_line.__doc__ + "\n\n" + USAGE
    ipython.register_magic_function(line_magic, "line", "ncclnb")
    ipython.register_magic_function(ncclnb_doctor_cell, "cell", "ncclnb_doctor")


def unregister(ipython) -> None:
    """Remove the magics and the autodiagnose handler (``%unload_ext ncclnb``)."""
    autodiagnose(ipython, False)
    magics = ipython.magics_manager.magics
    magics["line"].pop("ncclnb", None)
    magics["cell"].pop("ncclnb_doctor", None)
