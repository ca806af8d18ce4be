"""``ncclnb doctor PATH...``: the root cause of a failed job from its logs.
Python twin: ``ncclnb.diagnose(*paths_or_text)``."""
from __future__ import annotations

import json
import sys

from . import UsageError, write_output

USAGE = "ncclnb doctor PATH... [--json] [--top N]"


def add_parser(subparsers):
    p = subparsers.add_parser(
        "doctor", help="find the root cause in the logs of a failed job",
        usage=USAGE,
        description="Read logs (files, directories of per-rank logs, .gz files, - for stdin; flight-recorder "
                    "JSON dumps too) and print the most likely root cause with its evidence and fix. "
                    "Exit 0 whether or not anything was found; 2 on unreadable input.")
    p.add_argument("paths", nargs="*", metavar="PATH", help="log file, directory, .gz, or - for stdin")
    p.add_argument("--json", action="store_true", help="print the diagnosis as JSON")
    p.add_argument("--top", type=int, metavar="N", help="show only the first N findings")
    p.add_argument("-o", "--output", metavar="PATH", help="write to PATH instead of stdout")
    return p


def run(args) -> int:
    from ..doctor import diagnose
    from ..doctor.report import render_text, to_json

    if not args.paths:
        raise UsageError(f"no input: usage: {USAGE}")
    if args.top is not None and args.top < 0:
        raise UsageError("--top must be >= 0")
    diag = diagnose(*args.paths, top=args.top)
    if args.json:
        text = json.dumps(to_json(diag), indent=2, ensure_ascii=False)
    else:
        colour = not args.output and sys.stdout.isatty()
        text = render_text(diag, colour=colour)
    write_output(text, args.output)
    return 0
