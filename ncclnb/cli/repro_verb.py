"""``ncclnb repro list | run NAME``: the documented failures, broken and
fixed, run for real on this machine. Python twins: ``ncclnb.repro.scenarios()``
and ``ncclnb.reproduce(name, fixed=...)``."""

from __future__ import annotations

import json
import sys

from . import UsageError, colour_wanted, write_output
from ..model.words import how_many

SCENARIOS_SCHEMA = "ncclnb.scenarios/1"

USAGE = (
    "ncclnb repro list [--json] | ncclnb repro run NAME [--fixed | --variant broken|fixed|guarded] "
    "[--nproc N] [--timeout S] [--keep DIR] [--backend auto|gloo|nccl] [--json] [--check]"
)


def add_parser(subparsers):
    p = subparsers.add_parser(
        "repro",
        help="reproduce a documented failure, broken or fixed, in seconds",
        usage=USAGE,
        description="List the reproduction scenarios, or run one: its ranks start on 127.0.0.1 with short "
        "timeouts, every rank's log is kept in a run directory, and the doctor reads them. "
        "Exit 0 when the run finished (whatever it showed); with --check, 1 when it did not do what "
        "its variant promises; 2 on bad arguments.",
    )
    sub = p.add_subparsers(dest="action", metavar="list|run")
    lp = sub.add_parser("list", help="the scenarios: name, seed, title, expected category, culprit ranks")
    lp.add_argument("--json", action="store_true", help=f'print {{"schema": "{SCENARIOS_SCHEMA}", "scenarios": [...]}}')
    rp = sub.add_parser("run", help="run one scenario", usage=USAGE)
    rp.add_argument("name", metavar="NAME", help="a scenario name (ncclnb repro list)")
    group = rp.add_mutually_exclusive_group()
    group.add_argument("--fixed", action="store_true", help="run the fixed program")
    group.add_argument("--variant", choices=("broken", "fixed", "guarded"), help="the variant to run")
    rp.add_argument("--nproc", type=int, metavar="N", help="ranks to start (default: the scenario's)")
    rp.add_argument(
        "--timeout",
        type=float,
        metavar="S",
        help="the ranks' process-group and store timeout in seconds (default: the scenario's, 5)",
    )
    rp.add_argument("--keep", metavar="DIR", help="write the run into DIR (new or empty) instead of a temp dir")
    rp.add_argument(
        "--backend", default="auto", choices=("auto", "gloo", "nccl"), help="auto: NCCL with a GPU per rank, else gloo"
    )
    rp.add_argument("--json", action="store_true", help="print the ReproResult as JSON")
    rp.add_argument("--check", action="store_true", help="exit 1 unless the run did what its variant promises")
    rp.add_argument("-o", "--output", metavar="PATH", help="write to PATH instead of stdout")
    p.set_defaults(_parser=p)
    return p


def run(args) -> int:
    from ..repro import scenarios

    if args.action == "list":
        found = scenarios()
        if args.json:
            text = json.dumps({"schema": SCENARIOS_SCHEMA, "scenarios": [s.summary() for s in found.values()]}, indent=2)
        else:
            text = "\n".join(
                f"{s.name:24s} seed {s.seed or '-':4s} {s.expected_category:25s} "
                f"culprits {','.join(map(str, s.culprit_ranks)) or '-':8s} {s.title}"
                for s in found.values()
            )
        write_output(text, None)
        return 0
    if args.action != "run":
        raise UsageError(f"say what to do: usage: {USAGE}")
    return _run(args)  # a ScenarioError is an InputError: one line, exit 2


def _run(args) -> int:
    from ..repro import get, reproduce
    from ..repro.report import outcome, render_text

    scenario = get(args.name)
    variant = args.variant or ("fixed" if args.fixed else "broken")
    scenario.variant(variant)  # an unknown variant fails before anything starts
    started = scenario.variant(variant).start
    count = (
        f"{len(started)} of {how_many(scenario.nproc, 'rank')}"
        if started is not None
        else how_many(args.nproc or scenario.nproc, 'rank')
    )
    print(f"ncclnb repro: running {scenario.name} ({variant}), {count}...", file=sys.stderr, flush=True)
    result = reproduce(
        scenario.name,
        variant=variant,
        nproc=args.nproc,
        timeout=args.timeout,
        keep=args.keep,
        backend=args.backend,
        progress=_Progress(sys.stderr),
    )
    if args.json:
        text = json.dumps(result.to_dict(), indent=2, ensure_ascii=False)
    else:
        text = render_text(result, scenario, colour=colour_wanted(args.output))
    write_output(text, args.output)
    ok, _ = outcome(result, scenario)
    return 1 if args.check and not ok else 0


class _Progress:
    """One stderr line each time a rank changes state, and where the logs are."""

    def __init__(self, stream):
        self.stream, self.seen = stream, {}

    def __call__(self, status: dict) -> None:
        phase = status.get("phase")
        if phase == "diagnosing":
            print("ncclnb repro: every rank has ended; running the doctor on the logs", file=self.stream, flush=True)
            return
        for row in status.get("ranks", ()):
            key = (row.get("rank"), row.get("process"), row.get("state"))
            if row.get("state") == "exited" and key not in self.seen:
                self.seen[key] = True
                code = row.get("exit_code")
                line = row.get("last_line", "")
                print(
                    f"  {status['elapsed']:5.1f}s rank {row.get('rank')}: exited {code}" + (f"  | {line[:120]}" if line else ""),
                    file=self.stream,
                    flush=True,
                )
