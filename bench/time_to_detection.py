"""Time to detection: every reproduction scenario run broken, as is and with
ncclnb's prevention on (its ``guarded`` variant: the launch check, the
guards, the p2p plan check), beside what torch/NCCL's default timeouts would
have cost (1800 s for the store, 600 s for NCCL's watchdog). Also the launch
check's cost on a healthy start of 8 ranks (``ncclnb.guard.init_process_group``
against torch's own, each measured over several launches).

    .venv/bin/python bench/time_to_detection.py            # about 3 minutes on 2 cores
    .venv/bin/python bench/time_to_detection.py --repeat 5

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

# what the failure would have cost with torch's defaults, by the category the doctor names
DEFAULT_COST_S = {
    "rendezvous_unreachable": 1800,
    "rank_world_size_mismatch": 1800,
    "collective_desync": 600,
    "slow_rank_timeout": 600,
    "p2p_pairing": 600,
    "oom_or_resource": 600,
}


def _named(result) -> bool:
    return bool(result.diagnosis and result.diagnosis.top and set(result.culprit_ranks) <= set(result.diagnosis.top.ranks))


def _named_after(result, started: float):
    """Seconds from the launch to the first exit of a rank the diagnosis
    blames with a failing code (each rank's exit marker is written as it
    leaves), or None. A run's other ranks may go on: in seed 000 the four
    ranks inside the world size are a healthy job of their own."""
    top = result.diagnosis.top if result.diagnosis else None
    if top is None:
        return None
    times = []
    for marker in Path(result.run_dir, ".ncclnb").glob("rank*.exit"):
        try:
            record = json.loads(marker.read_text())
        except (OSError, ValueError):
            continue
        if record.get("rank") in top.ranks and record.get("exit_code") not in (0, None):
            times.append(marker.stat().st_mtime - started)
    return round(min(times), 2) if times else None


def scenarios_table() -> list:
    from ncclnb.repro import reproduce, scenarios

    rows = []
    for name, sc in scenarios().items():
        if sc.launcher == "replay":
            continue
        with tempfile.TemporaryDirectory() as tmp:
            started = time.time()
            plain = reproduce(name, keep=os.path.join(tmp, "broken"))
            row = {
                "scenario": name,
                "seed": sc.seed,
                "expected": sc.expected_category,
                "default_timeout_cost_s": DEFAULT_COST_S.get(sc.expected_category),
                "repro_timeout_s": plain.timeout_s,
                "as_is": {
                    "stopped_after_s": plain.seconds,
                    "first_blamed_exit_s": _named_after(plain, started),
                    "completed": plain.completed,
                    "cause_named": plain.diagnosed_as_expected,
                },
            }
            if "guarded" in sc.variants:
                started = time.time()
                guarded = reproduce(name, variant="guarded", keep=os.path.join(tmp, "guarded"))
                row["prevention_on"] = {
                    "stopped_after_s": guarded.seconds,
                    "first_blamed_exit_s": _named_after(guarded, started),
                    "completed": guarded.completed,
                    "cause_named": _named(guarded),
                    "by": guarded.diagnosis.top.rule if guarded.diagnosis.top else None,
                }
            else:
                row["prevention_on"] = None
        rows.append(row)
        print(
            f"{name}: {row['as_is']['stopped_after_s']} s as is, "
            f"{row['prevention_on']['stopped_after_s'] if row['prevention_on'] else '-'} s with prevention",
            file=sys.stderr,
            flush=True,
        )
    return rows


def launch_check_cost(repeat: int) -> dict:
    """Seconds from the first start to the last exit of a healthy 8-rank gloo
    job that only joins and trains 2 steps: torch's init vs ncclnb's drop-in."""
    from ncclnb.repro import get
    from ncclnb.repro.runner import run
    from ncclnb.repro.scenario import parse

    base = get("store_host_missing")

    def scenario(args):
        return parse(
            {
                "name": "launch_cost",
                "seed": "",
                "title": "t",
                "story": "s",
                "worker": base.worker,
                "nproc": 8,
                "nodes": 1,
                "launcher": "processes",
                "expected_category": "unknown",
                "culprit_ranks": [],
                "lesson": "l",
                "variants": {"broken": {"args": args}, "fixed": {"args": args}},
            },
            "bench",
        )

    times = {"torch_init": [], "ncclnb_init": []}
    for _ in range(repeat):
        for key, args in (("torch_init", {"steps": 2}), ("ncclnb_init", {"steps": 2, "ncclnb_init": True})):
            with tempfile.TemporaryDirectory() as tmp:
                result = run(scenario(args), "fixed", keep=os.path.join(tmp, "run"), diagnose=False)
            if not result.completed:
                raise SystemExit(f"healthy start did not complete: {result.exit_codes}")
            times[key].append(result.seconds)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "ranks": 8,
        "repeat": repeat,
        "seconds": times,
        "median_s": med,
        "added_median_s": round(med["ncclnb_init"] - med["torch_init"], 2),
        "note": "each figure is a whole launch (Python start, imports, rendezvous, 2 steps) on a 2-core VM "
        "running 8 ranks; the difference is the launch check plus the cross-rank comparison",
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="launches per configuration for the launch cost")
    args = ap.parse_args(argv)
    t0 = time.time()
    rows = scenarios_table()
    cost = launch_check_cost(args.repeat)
    print(
        json.dumps(
            {
                "machine": {"cpu_count": os.cpu_count()},
                "scenarios": rows,
                "launch_check": cost,
                "target": "every seed scenario with prevention stopped with the cause named in under 5 s; "
                "the launch check adds under 1 s to a healthy 8-rank start",
                "fields": "stopped_after_s: first process start to last exit of the whole run (ranks the "
                "failure does not touch may run on to their end); first_blamed_exit_s: launch to "
                "the first exit of a rank the diagnosis blames, which includes starting Python and "
                "importing torch in every process (compare launch_check.median_s)",
                "bench_s": round(time.time() - t0, 1),
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
