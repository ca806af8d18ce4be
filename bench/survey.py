"""What the survey costs as ranks grow, and what a 1024-node report weighs; JSON.

    python bench/survey.py                      # 2, 4 and 8 ranks, best of 3; a few minutes on 2 cores
    python bench/survey.py --ranks 2,4 --repeat 1

For each rank count N, on 127.0.0.1, each the best of ``--repeat`` launches:

- ``survey_s``: ``ncclnb survey --local --nproc N --no-link-test``, from the
  command's start to its exit (N Pythons, torch imported, the store, the
  gloo group, the exchange, one node snapshot, the checks, report.json);
- ``python_pass_s``: N ``python -c pass`` started together and waited for,
  the floor of any N-process launch;
- ``gloo_init_s``: N processes that import torch, form a gloo group of N
  (``init_process_group``, then one ``barrier`` so that rank 0, which hosts
  the store, does not leave first) and leave it: what any torch.distributed
  job pays before its first collective;
- ``gather_s``: the survey's two exchanges alone, timed inside a gloo group
  of N (the mean of 5 rounds, after one warm-up): ``gather_json`` of every
  rank's entry (all_gather), then of the node snapshot (gather to rank 0,
  the other ranks sending null), with the payloads of that survey run;
  ``gather_fraction`` = ``gather_s / survey_s``.

Bytes, from the report that survey run wrote: ``entry_bytes`` (each rank
entry as ``gather_json`` sends it, compact JSON, summed), ``snapshot_bytes``
(the node snapshots, same), ``report_bytes`` (report.json on disk, indented as
the survey writes it) and ``rank0_received_bytes``: what rank 0 takes in:
N x the longest entry (the entries' all_gather pads every rank's buffer to
the longest), plus each node's snapshot and a 4-byte ``null`` from every
other rank (the snapshot gather sends each rank's bytes as they are).

``estimate_1024x8``: 1024 nodes x 8 ranks. ``payload_bytes`` is 8192 x the
largest entry plus 1024 x the largest node snapshot, taking the larger of
this machine's (no GPU) and a GPU node's (a node of the bundled survey-demo:
8 A100s, 12 HCAs, its ranks with bus id, NUMA node and NIC);
``report_bytes`` is measured, not extrapolated: a report of 1024 copies of
that GPU node and 8192 such ranks, with the demo's link test and the
findings ``ncclnb.check`` gives it, written as the survey writes it.
``rank0_received_bytes`` is the same sum at that size. Target: the
report under 50 MB.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET_REPORT_BYTES = 50_000_000
ROUNDS = 5


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env() -> dict:
    drop = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    return env


def _together(argvs: list, timeout: float) -> tuple[float, list]:
    """Start every command at once, wait for all; (seconds, their stdout)."""
    started = time.perf_counter()
    procs = [subprocess.Popen(a, env=_env(), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for a in argvs]
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=timeout)
            if p.returncode != 0:
                raise RuntimeError(f"{p.args[:4]} exited {p.returncode}: {err.strip()[-500:]}")
            outs.append(out)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return time.perf_counter() - started, outs


# --- the workers this script starts ----------------------------------------------------


def gloo_worker(rank: int, world: int, port: int) -> None:
    import torch.distributed as dist

    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=60)
    )
    dist.barrier()  # rank 0 hosts the store: leaving before the others finish connecting would break them
    dist.destroy_process_group()


def gather_worker(rank: int, world: int, port: int, report_path: str) -> None:
    import torch
    import torch.distributed as dist

    from ncclnb.repro.workers._facts import gather_json

    report = json.loads(Path(report_path).read_text(encoding="utf-8"))
    entry = next(e for e in report["ranks"] if e["rank"] == rank)
    snapshot = report["snapshots"][0] if rank == 0 else None
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=60)
    )
    cpu = torch.device("cpu")
    times = []
    for i in range(ROUNDS + 1):
        dist.barrier()
        t = time.perf_counter()
        gather_json(cpu, entry)
        gather_json(cpu, snapshot, dst=0)
        dist.barrier()  # the exchange is done when the slowest rank is done
        if i:
            times.append(time.perf_counter() - t)
    dist.destroy_process_group()
    if rank == 0:
        print(json.dumps({"gather_s": statistics.mean(times)}))


# --- measurements ------------------------------------------------------------------------


def _compact(value) -> int:
    return len(json.dumps(value, sort_keys=True).encode("utf-8"))  # as gather_json sends it


def measure(n: int, repeat: int, timeout: float) -> dict:
    me = [sys.executable, str(Path(__file__).resolve())]
    survey, report_path = [], None
    with tempfile.TemporaryDirectory(prefix="ncclnb-bench-survey-") as tmp:
        for k in range(repeat):
            out = Path(tmp, f"run{k}")
            seconds, _ = _together(
                [
                    [
                        sys.executable,
                        "-m",
                        "ncclnb",
                        "survey",
                        "--local",
                        "--nproc",
                        str(n),
                        "--out",
                        str(out),
                        "--no-link-test",
                        "--timeout",
                        f"{timeout:g}",
                    ]
                ],
                4 * timeout + 60,
            )
            survey.append(seconds)
            report_path = out / "report.json"
        report = json.loads(report_path.read_text(encoding="utf-8"))
        entries = [_compact(e) for e in report["ranks"]]
        snapshots = [_compact(s) for s in report["snapshots"]]
        passes = [_together([[sys.executable, "-c", "pass"]] * n, 60)[0] for _ in range(repeat)]
        inits = []
        for _ in range(repeat):
            port = _free_port()
            inits.append(_together([me + ["_gloo", str(r), str(n), str(port)] for r in range(n)], 120)[0])
        port = _free_port()
        _, outs = _together([me + ["_gather", str(r), str(n), str(port), str(report_path)] for r in range(n)], 300)
        gather_s = json.loads(outs[0])["gather_s"]
        report_bytes = report_path.stat().st_size
    assert len(entries) == n, f"the survey of {n} ranks reported {len(entries)}"
    best = min(survey)
    return {
        "ranks": n,
        "survey_s": round(best, 3),
        "survey_runs_s": [round(s, 3) for s in survey],
        "python_pass_s": round(min(passes), 3),
        "gloo_init_s": round(min(inits), 3),
        "gather_s": round(gather_s, 5),
        "gather_fraction": round(gather_s / best, 5),
        "entry_bytes": sum(entries),
        "entry_bytes_max": max(entries),
        "snapshot_bytes": sum(snapshots),
        "snapshots": len(snapshots),
        "report_bytes": report_bytes,
        "rank0_received_bytes": n * max(entries) + sum(snapshots) + (n - len(snapshots)) * len(b"null"),
    }


def estimate(rows: list) -> dict:
    import ncclnb
    from ncclnb.model import ClusterReport

    demo = ncclnb.load("survey-demo")
    node = demo.snapshots[0]
    ranks = [r for r in demo.ranks if r.host == node.hostname]
    gpu_entry = max(_compact(dataclasses.asdict(r)) for r in ranks)
    gpu_node = _compact(node.to_dict())
    per_rank = max([gpu_entry] + [row["entry_bytes_max"] for row in rows])
    per_node = max([gpu_node] + [row["snapshot_bytes"] // max(1, row["snapshots"]) for row in rows])
    nodes, per = 1024, 8
    snaps = tuple(dataclasses.replace(node, host=dataclasses.replace(node.host, hostname=f"node{k:04d}")) for k in range(nodes))
    table = tuple(
        dataclasses.replace(
            ranks[i % per], rank=k * per + i, host=f"node{k:04d}", node_rank=k, world_size=nodes * per, pid=10_000 + i
        )
        for k in range(nodes)
        for i in range(per)
    )
    big = ClusterReport(snapshots=snaps, ranks=table, links=demo.links, description=demo.description)
    started = time.perf_counter()
    big = dataclasses.replace(big, findings=tuple(ncclnb.check(big)))
    check_s = time.perf_counter() - started
    text = json.dumps(big.to_dict(), indent=1, ensure_ascii=False) + "\n"  # as the survey writes report.json
    report_bytes = len(text.encode("utf-8"))
    return {
        "nodes": nodes,
        "ranks": nodes * per,
        "bytes_per_rank": per_rank,
        "bytes_per_node": per_node,
        "payload_bytes": nodes * per * per_rank + nodes * per_node,
        "rank0_received_bytes": nodes * per * per_rank + nodes * per_node + nodes * (per - 1) * len(b"null"),
        "report_bytes": report_bytes,
        "report_findings": len(big.findings),
        "check_s": round(check_s, 2),
        "target_report_bytes": TARGET_REPORT_BYTES,
        "report_under_target": report_bytes < TARGET_REPORT_BYTES,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="2,4,8", help="comma list of rank counts (default 2,4,8)")
    ap.add_argument("--repeat", type=int, default=3, help="launches per measurement; the best is kept")
    ap.add_argument("--timeout", type=float, default=60.0, help="the survey's --timeout")
    args = ap.parse_args(argv)
    counts = [int(x) for x in args.ranks.split(",") if x.strip()]
    rows = []
    for n in counts:
        rows.append(measure(n, args.repeat, args.timeout))
        print(f"{n} ranks: {rows[-1]['survey_s']} s", file=sys.stderr, flush=True)
    print(
        json.dumps(
            {
                "machine": {"cpu_count": os.cpu_count(), "python": sys.version.split()[0]},
                "rows": rows,
                "estimate_1024x8": estimate(rows),
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_gloo":
        gloo_worker(*(int(x) for x in sys.argv[2:5]))
    elif len(sys.argv) > 1 and sys.argv[1] == "_gather":
        gather_worker(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
    else:
        sys.exit(main())
