"""The ``ncclnb`` command. Each verb is a module of this package with
``add_parser(subparsers)`` and ``run(args) -> int``: a few lines around one
public Python function. Bad input (an :class:`~ncclnb.errors.InputError`) exits 2
with one line on stderr; any other exception is a bug and shows its traceback.

The conventions every verb shares live here: where colour is decided
(:func:`colour_wanted`), the default ``--width`` (:func:`terminal_width`),
``--fail-on`` (:func:`add_fail_on`, :func:`fail_status`), and writing to a pipe
that its reader closed early (``ncclnb show X | head -1``), which ends the
command quietly with the status it would have had."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from ..errors import InputError
from ..model.findings import SEVERITY_ORDER

# verb modules, in the order `ncclnb --help` lists them
VERBS = ("collect", "ingest", "show", "doctor", "check", "survey", "repro", "tour")

# worst first: --fail-on LEVEL fails on a finding of LEVEL or of any level before it


class UsageError(InputError):
    """A bad argument that the user can fix: printed as one line, exit 2."""


def build_parser(verbs: tuple = VERBS) -> argparse.ArgumentParser:
    """The ``ncclnb`` parser with the sub-parsers of ``verbs`` (all by default;
    :func:`main` builds only the verb it runs: importing every verb's module
    costs more than many a run)."""
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="ncclnb",
        description="Make NCCL / torch.distributed failures understandable.",
        epilog="Exit status: 0 done; 1 where a verb says so (doctor and check with --fail-on, repro run --check, "
        "tour, survey); 2 bad arguments or unreadable input. Colour only on a terminal: NO_COLOR=1 turns "
        "it off, FORCE_COLOR=1 turns it on anywhere, TERM=dumb turns it off.",
    )
    parser.add_argument("--version", action="version", version=f"ncclnb {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    for name in verbs:
        module = importlib.import_module(f"{__name__}.{name}_verb")
        p = module.add_parser(sub)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        code = _main(argv)
    except SystemExit:  # argparse's --help, --version and usage errors
        _flush_stdout()
        raise
    except BrokenPipeError:  # a verb's print() into a pipe its reader closed
        _discard_stdout()
        return 0
    _flush_stdout()
    return code


def _main(argv: list[str] | None) -> int:
    args_given = sys.argv[1:] if argv is None else argv
    # ``ncclnb VERB ...``: that verb's parser alone reads the arguments, and reads them as the whole one does
    # (its usage, help and errors are its own; the top level's usage names no verb)
    parser = build_parser((args_given[0],) if args_given and args_given[0] in VERBS else VERBS)
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 0
    try:
        return args._run(args) or 0
    except BrokenPipeError:
        raise
    except InputError as exc:  # the user's mistake; anything else is a bug: its traceback is what to report
        print(f"ncclnb {args.verb}: error: {one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", 2)  # SIGTERM / SIGHUP where a verb turned them into interrupts
        print(f"ncclnb {args.verb}: interrupted" + (f" (signal {signum})" if signum != 2 else ""), file=sys.stderr)
        return 128 + signum


def one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


# ---- output -------------------------------------------------------------------------------------


def write_output(text: str, path: str | None) -> None:
    """Write to ``path`` atomically (never a half-written file), or to stdout.
    On stdout, a reader that closed the pipe early (``| head -1``) ends the
    output quietly: the rest is discarded and the verb goes on to its own exit
    status (``--fail-on`` still gates)."""
    if not path or path == "-":
        try:
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
            sys.stdout.flush()
        except BrokenPipeError:
            _discard_stdout()
        return
    import tempfile

    from ..errors import path_error

    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".ncclnb-", dir=folder)
    except OSError as exc:  # the user's -o: no such folder, no permission, a full disk
        raise path_error(exc, path) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text if text.endswith("\n") else text + "\n")
        os.replace(tmp, path)
    except OSError as exc:
        os.unlink(tmp)
        raise path_error(exc, path) from None
    except BaseException:
        os.unlink(tmp)
        raise


def _flush_stdout() -> None:
    """What is still buffered goes now, not at interpreter exit, where a
    closed pipe prints "Exception ignored ... BrokenPipeError"."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        _discard_stdout()


def _discard_stdout() -> None:
    """Point stdout at /dev/null: what is still buffered, and anything printed
    later, goes nowhere instead of raising again at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (pytest's capture): nothing to redirect
        pass


def colour_wanted(output: str | None = None, stream=None) -> bool:
    """Whether text written to ``output`` (a path; None or '-' for ``stream``,
    by default stdout) gets ANSI colours: the one place every verb asks.

    A file named with ``-o`` never does. Otherwise, in this order:
    ``NO_COLOR`` set to anything non-empty turns colour off (no-color.org);
    ``FORCE_COLOR`` set to anything but '' or '0' turns it on, also in a pipe
    or a CI log; ``TERM=dumb`` turns it off; else colour exactly when the
    stream is a terminal."""
    if output and output != "-":
        return False
    env = os.environ
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR", "") not in ("", "0"):
        return True
    if env.get("TERM") == "dumb":
        return False
    stream = sys.stdout if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed, or not a file
        return False


# ---- shared options ------------------------------------------------------------------------------

DEFAULT_WIDTH = 120  # when stdout is no terminal (a pipe, a file) and COLUMNS is unset


def terminal_width() -> int:
    """The terminal's width (``COLUMNS`` first, as shutil reads it), or
    :data:`DEFAULT_WIDTH` when there is no terminal."""
    import shutil

    return shutil.get_terminal_size(fallback=(DEFAULT_WIDTH, 24)).columns


def add_width(p) -> None:
    p.add_argument(
        "--width",
        metavar="N",
        help=f"clip lines to N columns (default: the terminal's width; {DEFAULT_WIDTH} in a pipe or a file)",
    )


def width_of(value: str | None) -> int:
    """``--width``: a positive whole number, or the terminal's width when not given."""
    if value is None:
        return terminal_width()
    try:
        width = int(value)
    except ValueError:
        raise UsageError(f"--width must be a whole number of columns, not {value!r}") from None
    if width <= 0:
        raise UsageError(f"--width must be at least 1, not {width}")
    return width


def add_fail_on(p, what: str) -> None:
    p.add_argument(
        "--fail-on",
        choices=("error", "warning"),
        metavar="error|warning",
        help=f"exit 1 when {what} has a finding of this severity or worse (warning: errors too), "
        "0 otherwise: a gate for a Slurm prolog or a CI step (the output is unchanged)",
    )


def fail_status(findings, level: str | None) -> int:
    """1 when ``level`` is set and a finding is that severe or worse, else 0."""
    if not level:
        return 0
    worst = SEVERITY_ORDER[level]
    return 1 if any(SEVERITY_ORDER.get(f.severity, len(SEVERITY_ORDER)) <= worst for f in findings) else 0
