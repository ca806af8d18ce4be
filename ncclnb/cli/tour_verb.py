"""``ncclnb tour``: one documented failure reproduced, diagnosed, fixed,
verified and prevented, in under a minute. Python twin: ``ncclnb.repro.tour.tour()``."""

from __future__ import annotations

USAGE = "ncclnb tour [--scenario NAME] [--keep DIR] [--timeout S]"


def add_parser(subparsers):
    from ..repro.tour import DEFAULT_SCENARIO

    p = subparsers.add_parser(
        "tour",
        help="watch one documented failure happen, get diagnosed, fixed and prevented (under a minute)",
        usage=USAGE,
        description="Runs one reproduction three times on 127.0.0.1: broken (the doctor names the cause and the "
        "ranks), fixed (it completes) and guarded (ncclnb.guard stops it at step 0). Exit 0 when all "
        "three did what they promise, 1 otherwise, 2 on bad arguments.",
    )
    p.add_argument(
        "--scenario",
        default=DEFAULT_SCENARIO,
        metavar="NAME",
        help=f"a scenario with a guarded variant (default {DEFAULT_SCENARIO}; see ncclnb repro list)",
    )
    p.add_argument("--keep", metavar="DIR", help="keep the three runs' logs under DIR/broken, DIR/fixed, DIR/guarded")
    p.add_argument("--timeout", type=float, metavar="S", help="the ranks' process-group timeout (default the scenario's)")
    return p


def run(args) -> int:
    from ..repro.tour import tour

    steps = tour(args.scenario, keep=args.keep, timeout=args.timeout)  # a ScenarioError is an InputError: exit 2
    return 0 if all(s.as_expected for s in steps) else 1
