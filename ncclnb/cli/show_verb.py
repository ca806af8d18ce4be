"""ncclnb show: a readable summary of a snapshot, a report, a bundled machine or this node."""

from __future__ import annotations

import json

from . import add_width, width_of, write_output

MACHINES_SCHEMA = "ncclnb.machines/1"


def add_parser(sub):
    p = sub.add_parser(
        "show",
        help="print a readable summary of a snapshot/report file, a bundled machine, or this node",
        description="Summarise a snapshot or cluster report in the terminal. TARGET is a JSON file "
        "written by `ncclnb collect`/`ingest`, the name of a bundled machine (see --list), - to read "
        "the JSON from stdin, or omitted (or 'local') to collect this node now.",
    )
    p.add_argument("target", nargs="?", default="local", metavar="TARGET")
    p.add_argument("--list", action="store_true", help="list the bundled machines and exit")
    p.add_argument(
        "--json",
        action="store_true",
        help=f'print the snapshot or report as JSON (its "schema" first); with --list, '
        f'{{"schema": "{MACHINES_SCHEMA}", "machines": [{{"name", "description"}}, ...]}}',
    )
    add_width(p)
    return p


def run(args) -> int:
    from ..summary import summary

    width = width_of(args.width)
    if args.list:
        from ..recorded import machines

        found = sorted(machines().items())
        if args.json:
            text = json.dumps(
                {"schema": MACHINES_SCHEMA, "machines": [{"name": n, "description": d} for n, d in found]},
                indent=2,
                ensure_ascii=False,
            )
        else:
            text = "\n".join(f"{name:28s} {description}" for name, description in found)
        write_output(text, None)
        return 0
    if args.target == "local":
        from ..collectors import collect

        target = collect()
    elif args.target == "-":
        import sys

        from ..model.limits import JSON_LIMIT, read_bounded
        from ..recorded import load_facts

        raw = read_bounded(sys.stdin.buffer, limit=JSON_LIMIT, label="<stdin>", what="a JSON file")
        target = load_facts(raw, "<stdin>")
    else:
        from ..recorded import load_facts

        target = load_facts(args.target)
    if args.json:  # the snapshot or report itself (a bundled machine saved as a file, stdin checked)
        write_output(json.dumps(target.to_dict(), indent=2, ensure_ascii=False), None)
    else:
        write_output(summary(target, width=width), None)
    return 0
