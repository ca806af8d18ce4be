"""ncclnb show: a readable summary of a snapshot, a report, a bundled machine or this node."""
from __future__ import annotations


def add_parser(sub):
    p = sub.add_parser(
        "show",
        help="print a readable summary of a snapshot/report file, a bundled machine, or this node",
        description="Summarise a snapshot or cluster report in the terminal. TARGET is a JSON file "
        "written by `ncclnb collect`/`ingest`, the name of a bundled machine (see --list), or "
        "omitted (or 'local') to collect this node now.",
    )
    p.add_argument("target", nargs="?", default="local", metavar="TARGET")
    p.add_argument("--list", action="store_true", help="list the bundled machines and exit")
    p.add_argument("--width", type=int, default=120, help="clip lines to this width (default: 120)")
    return p


def run(args) -> int:
    from ..summary import summary

    if args.list:
        from ..recorded import machines

        for name, description in sorted(machines().items()):
            print(f"{name:28s} {description}")
        return 0
    if args.target == "local":
        from ..collectors import collect

        target = collect()
    else:
        from ..recorded import load_facts

        target = load_facts(args.target)
    print(summary(target, width=args.width))
    return 0
