"""``ncclnb survey``: the pre-flight survey of a job's nodes and ranks, run by
the job's own launcher on every rank, or ``--local`` on one machine. Python
twins: ``ncclnb.survey.run_survey(out_dir, timeout=...)`` (one rank) and
``ncclnb.survey.run_local(out_dir, nproc, timeout=...)``."""

from __future__ import annotations

import os
import sys

from . import UsageError

USAGE = "ncclnb survey --out DIR [--timeout S] [--local --nproc G] [--no-link-test | --sizes MIN:MAX --iters N]"


def add_parser(subparsers):
    p = subparsers.add_parser(
        "survey",
        help="survey a job's nodes and ranks with its own launcher; rank 0 writes DIR/report.json",
        usage=USAGE,
        description="Run on every rank by the job's launcher: `torchrun --nnodes N --nproc-per-node G ... -m ncclnb "
        "survey --out DIR`, `srun python -m ncclnb survey --out DIR` or `mpirun ... python -m ncclnb "
        "survey --out DIR` (under srun / mpirun export MASTER_ADDR and MASTER_PORT); or `ncclnb survey "
        "--local --nproc G` on one machine. The ranks join a gloo group of their own (even where the "
        "job uses NCCL), exchange each rank's facts and one snapshot per node, and rank 0 writes "
        "DIR/report.json (a cluster report: `ncclnb check`, `ncclnb.load()`), runs the checks and "
        "prints the verdict. A rank that never joins or dies gives a partial report naming it after "
        "--timeout. Unless --no-link-test, the ranks then time all_reduce, all_gather, reduce_scatter "
        "and all_to_all over a range of sizes and a ring of point-to-point exchanges between nodes "
        "(NCCL on the GPUs when every rank has one, gloo otherwise), busbw as nccl-tests computes it, "
        "judged against a table of what the hardware should reach. Exit 0: report written, no error "
        "findings; 1: error findings, a partial report, or (a rank other than 0) this rank could not "
        "take part; 2: bad arguments.",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="directory where rank 0 writes report.json")
    p.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        metavar="S",
        help="seconds allowed for the rendezvous and for each exchange (default: 120)",
    )
    p.add_argument("--local", action="store_true", help="start the ranks here, on 127.0.0.1, with no launcher")
    p.add_argument("--nproc", type=int, metavar="G", help="with --local: how many ranks to start")
    p.add_argument(
        "--no-link-test",
        action="store_true",
        help="gather the facts only: no collectives timed, no pair ring (the report has no links)",
    )
    p.add_argument(
        "--sizes",
        metavar="MIN:MAX[:FACTOR]",
        help="message sizes of the link test, bytes per rank as nccl-tests counts them, K/M/G "
        "1024-based (e.g. 8B:64MB, 8:1G:4); default 8B:1G in steps of x2 on NCCL (the reference "
        "bands start at 1 GiB), 8B:1M in steps of x4 on gloo/CPU (a few seconds)",
    )
    p.add_argument(
        "--iters", type=int, metavar="N", help="timed iterations per size, after the warm-up (default: 20 on NCCL, 5 on gloo)"
    )
    return p


def run(args) -> int:
    from ..survey import SurveyUsageError, run_local, run_survey
    from ..survey.links import check_iters, parse_sizes

    try:
        if args.no_link_test and (args.sizes is not None or args.iters is not None):
            raise UsageError(f"--sizes and --iters set up the link test that --no-link-test turns off; usage: {USAGE}")
        links = {
            "link_test": not args.no_link_test,
            "sizes": parse_sizes(args.sizes) if args.sizes is not None else None,
            "iters": check_iters(args.iters),
        }
        if args.local:
            if args.nproc is None:
                raise UsageError(f"--local needs --nproc G; usage: {USAGE}")
            return run_local(args.out, args.nproc, timeout=args.timeout, **links)
        if args.nproc is not None:
            raise UsageError(f"--nproc goes with --local (a launcher starts its own ranks); usage: {USAGE}")
        code = run_survey(args.out, timeout=args.timeout, **links)
    except SurveyUsageError as exc:
        raise UsageError(str(exc)) from None
    # a process that was in a gloo group leaves with os._exit: a normal exit after a gloo failure can abort (134)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:  # a reader that stopped early does not change the verdict
            pass
    os._exit(code)
