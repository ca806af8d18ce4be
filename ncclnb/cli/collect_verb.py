"""ncclnb collect: snapshot this node as JSON (Python twin: ncclnb.collect())."""

from __future__ import annotations

import json


def add_parser(sub):
    p = sub.add_parser(
        "collect",
        help="snapshot this node (GPUs, links, NUMA, NICs, versions, env) as JSON",
        description="Snapshot this node as JSON. Facts that cannot be read are null, "
        "with the reason under 'missing'. Secrets in the environment are redacted.",
    )
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    p.add_argument("--timeout", type=float, default=2.0, metavar="S", help="seconds allowed for each probe (default: 2)")
    p.add_argument("--no-torch", action="store_true", help="do not probe torch for its versions")
    return p


def run(args) -> int:
    from ..collectors import collect
    from . import write_output

    snapshot = collect(timeout=args.timeout, probe_torch=not args.no_torch)
    write_output(json.dumps(snapshot.to_dict(), indent=2), args.output)
    return 0
