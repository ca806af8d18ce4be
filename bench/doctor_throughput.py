"""Throughput and memory of the doctor against ``grep -E -f`` on the same log.

Generates (deterministically) a large multi-rank NCCL_DEBUG=INFO log with a
few real failures buried in it, runs ``ncclnb doctor --json`` on it in a
subprocess (peak RSS from getrusage of the children), once in a single
process (NCCLNB_DOCTOR_WORKERS=0) and once as shipped (a process pool on
large files; the JSON says how many workers), times ``grep -E -f``
with the knowledge base's patterns exported one per line over the same file,
and prints JSON. Targets: doctor >= 0.5x grep's MB/s, peak RSS < 256 MB.

Usage: python bench/doctor_throughput.py [--size-mb 1024] [--keep DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _loggen  # noqa: E402


def _child_peak_rss_mb() -> float:
    # ru_maxrss of the largest waited-for child, KiB on Linux
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def _sample_tree_rss(proc) -> "float | None":
    """Wait for ``proc``; the largest sum of RSS over it and its worker
    processes, sampled every 20 ms (None without psutil). Shared pages of
    forked workers count once per process, so this overstates a little."""
    try:
        import psutil
    except ImportError:
        proc.wait()
        return None
    peak = 0
    try:
        top = psutil.Process(proc.pid)
    except psutil.Error:
        proc.wait()
        return None
    while proc.poll() is None:
        try:
            peak = max(peak, sum(p.memory_info().rss for p in [top] + top.children(recursive=True)))
        except psutil.Error:
            pass
        time.sleep(0.02)
    return round(peak / 2**20, 1)


def run(size_mb: int, workdir: str) -> dict:
    from ncclnb.doctor import grep_patterns

    log = os.path.join(workdir, "multi_rank_info.log")
    t0 = time.perf_counter()
    size = _loggen.generate(log, size_mb)
    gen_s = time.perf_counter() - t0
    patterns = os.path.join(workdir, "patterns.txt")
    with open(patterns, "w", encoding="utf-8") as fh:
        fh.write("\n".join(grep_patterns()) + "\n")
    mb = size / 1e6

    # warm the page cache so both read from memory
    with open(log, "rb") as fh:
        while fh.read(16 << 20):
            pass

    from ncclnb.doctor.scan import workers_for

    def doctor(env_workers):
        env = dict(os.environ)
        if env_workers is not None:
            env["NCCLNB_DOCTOR_WORKERS"] = str(env_workers)
        t0 = time.perf_counter()
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            proc = subprocess.Popen([sys.executable, "-m", "ncclnb", "doctor", "--json", log],
                                    stdout=out, stderr=err, env=env)
            total = _sample_tree_rss(proc)
            took = time.perf_counter() - t0
            out.seek(0)
            err.seek(0)
            if proc.returncode != 0:
                raise SystemExit(f"doctor failed: {err.read().decode(errors='replace').strip()}")
            return took, json.loads(out.read()), total

    # single process first, then as shipped (a process pool on large files)
    serial_s, serial_diag, _ = doctor(0)
    workers = workers_for(size)
    doctor_s, diag, tree_rss = doctor(None)
    rss = _child_peak_rss_mb()   # the largest single process of the doctor runs (workers included)
    same = [f["rule"] for f in serial_diag["findings"]] == [f["rule"] for f in diag["findings"]] \
        and serial_diag["lines_read"] == diag["lines_read"]

    result = {"size_mb": round(mb, 1), "lines": diag["lines_read"], "generate_s": round(gen_s, 1),
              "doctor_s": round(doctor_s, 2), "doctor_mb_s": round(mb / doctor_s, 1),
              "doctor_worker_processes": workers,
              "doctor_single_process_s": round(serial_s, 2),
              "doctor_single_process_mb_s": round(mb / serial_s, 1),
              "single_process_same_result": same,
              "doctor_peak_rss_mb": round(rss, 1),
              "doctor_peak_rss_all_processes_mb": tree_rss,
              "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
              "findings": [{"rule": f["rule"], "category": f["category"], "severity": f["severity"],
                            "ranks": f["ranks"][:8]} for f in diag["findings"]]}
    grep = shutil.which("grep")
    if grep:
        for label, env in (("grep", None), ("grep_lc_all_c", dict(os.environ, LC_ALL="C"))):
            cmd = [grep, "-E", "-c", "-f", patterns, log]
            t0 = time.perf_counter()
            g = subprocess.run(cmd, capture_output=True, env=env)
            grep_s = time.perf_counter() - t0
            result[f"{label}_command"] = ("LC_ALL=C " if env else "") + " ".join(cmd)
            result[f"{label}_s"] = round(grep_s, 2)
            result[f"{label}_mb_s"] = round(mb / grep_s, 1)
            result[f"{label}_matching_lines"] = int(g.stdout or 0) if g.returncode in (0, 1) else None
            result[f"ratio_vs_{label}"] = round((mb / doctor_s) / (mb / grep_s), 3)
            result[f"single_process_ratio_vs_{label}"] = round((mb / serial_s) / (mb / grep_s), 3)
        result["locale"] = os.environ.get("LC_ALL") or os.environ.get("LANG") or "C"
        result["note"] = (f"grep runs in one process on one core; the doctor used {workers} worker process(es) "
                          f"(0 = scanned in its own process) on {result['cpus']} CPU(s). doctor_single_process_* "
                          "is the same doctor with NCCLNB_DOCTOR_WORKERS=0, the like-for-like comparison. "
                          "Both read the file from the page cache; the doctor's time includes interpreter start-up.")
    result["targets"] = {"ratio_vs_grep": ">= 0.5", "doctor_peak_rss_mb": "< 256"}
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=1024, help="size of the generated log (default 1024)")
    ap.add_argument("--keep", metavar="DIR", help="generate into DIR and keep the files")
    args = ap.parse_args(argv)
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        print(json.dumps(run(args.size_mb, args.keep), indent=2))
        return 0
    with tempfile.TemporaryDirectory(prefix="ncclnb-bench-") as tmp:
        print(json.dumps(run(args.size_mb, tmp), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
