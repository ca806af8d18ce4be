"""The ``ncclnb`` command. Each verb is a module of this package with
``add_parser(subparsers)`` and ``run(args) -> int``: a few lines around one
public Python function. Bad input exits 2 with one line on stderr."""
from __future__ import annotations

import argparse
import importlib
import sys

from ..model import SchemaError

# verb modules, in the order `ncclnb --help` lists them
VERBS = ("collect", "ingest", "show", "doctor", "check", "survey", "repro", "tour")


class UsageError(Exception):
    """Bad input that the user can fix: printed as one line, exit 2."""


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="ncclnb",
        description="Make NCCL / torch.distributed failures understandable.",
    )
    parser.add_argument("--version", action="version", version=f"ncclnb {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    for name in VERBS:
        module = importlib.import_module(f"{__name__}.{name}_verb")
        p = module.add_parser(sub)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 0
    try:
        return args._run(args) or 0
    except (UsageError, SchemaError, OSError, UnicodeError, ValueError) as exc:
        print(f"ncclnb {args.verb}: error: {one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", 2)   # SIGTERM / SIGHUP where a verb turned them into interrupts
        print(f"ncclnb {args.verb}: interrupted" + (f" (signal {signum})" if signum != 2 else ""), file=sys.stderr)
        return 128 + signum
    except BrokenPipeError:
        return 0


def one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def write_output(text: str, path: str | None) -> None:
    """Write to ``path`` atomically (never a half-written file), or to stdout."""
    if not path or path == "-":
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    import os
    import tempfile

    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".ncclnb-", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text if text.endswith("\n") else text + "\n")
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
