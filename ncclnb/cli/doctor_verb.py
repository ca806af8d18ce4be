"""``ncclnb doctor PATH...``: the root cause of a failed job from its logs.
Python twin: ``ncclnb.diagnose(*paths_or_text)``."""

from __future__ import annotations

import sys
from dataclasses import replace

from .._signals import signals_interrupt
from . import UsageError, add_fail_on, colour_wanted, fail_status, write_output

USAGE = "ncclnb doctor PATH... [--json] [--top N] [--fail-on error|warning]"


def add_parser(subparsers):
    p = subparsers.add_parser(
        "doctor",
        help="find the root cause in the logs of a failed job",
        usage=USAGE,
        description="Read logs (files, directories of per-rank logs, .gz files, - for stdin; kernel logs with "
        "Xid lines; ncclras reports, text or JSON; nccl-tests output; flight-recorder dumps as JSON or as "
        "torch's pickle, read as plain data only) and "
        "print the most likely root cause with its evidence and fix. Exit 0 whether or not anything "
        "was found (with --fail-on, 1 when a finding is that severe); 2 on unreadable input or input "
        "with no log text.",
    )
    p.add_argument(
        "paths", nargs="*", metavar="PATH", help="log file, directory, .gz, flight-recorder dump (JSON or pickle), or - for stdin"
    )
    p.add_argument("--json", action="store_true", help="print the diagnosis as JSON")
    p.add_argument("--top", type=int, metavar="N", help="show only the first N findings")
    p.add_argument("-o", "--output", metavar="PATH", help="write to PATH instead of stdout")
    add_fail_on(p, "the diagnosis (all of it, whatever --top shows)")
    p.add_argument(
        "--no-redact",
        dest="redact",
        action="store_false",
        help="show credentials found in the logs as they are (for local use; by default "
        "passwords, tokens and keys are replaced with <redacted>)",
    )
    return p


def run(args) -> int:
    from ..doctor import diagnose
    from ..doctor.report import json_text
    from ..terminal import render_diagnosis as render_text

    if not args.paths:
        raise UsageError(f"no input: usage: {USAGE}")
    if args.top is not None and args.top < 0:
        raise UsageError("--top must be >= 0")
    _announce_large_input(args.paths)
    with signals_interrupt():  # SIGTERM / SIGHUP end a scan like Ctrl-C: its workers are stopped first
        diag = diagnose(*args.paths, redact=args.redact)
    for f in diag.findings:
        if f.rule == "input_changed":  # what was read is not what the path holds: say so where a pipeline sees it
            print(f"ncclnb doctor: warning: {f.title}", file=sys.stderr)
    status = fail_status(diag.findings, args.fail_on)  # before --top: a gate sees every finding
    if args.top is not None:
        diag = replace(diag, findings=diag.findings[: args.top])
    if args.json:
        text = json_text(diag)  # escapes the controls json.dumps leaves raw (C1, DEL, bidi)
    else:
        text = render_text(diag, colour=colour_wanted(args.output))
    write_output(text, args.output)
    return status


def _announce_large_input(paths: list[str], threshold: int = 256 << 20) -> None:
    """On a terminal, say what a long scan is reading before it starts (a
    gigabyte of logs takes seconds; silence looks like a hang)."""
    import os

    if not sys.stderr.isatty():
        return
    total = 0
    for path in paths:
        if path == "-":
            continue
        try:
            if os.path.isdir(path):
                with os.scandir(path) as entries:
                    total += sum(e.stat().st_size for e in entries if e.is_file())
            else:
                total += os.path.getsize(path)
        except OSError:
            continue  # diagnose() reports unreadable paths itself
    if total >= threshold:
        print(f"ncclnb doctor: scanning {total / 1e9:.1f} GB of logs ...", file=sys.stderr, flush=True)
