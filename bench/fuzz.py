"""Fuzz ``diagnose``, ``ingest`` and ``load`` with hostile inputs and report
what escaped: exceptions outside the project's one-line error types
(ValueError and its subclasses SchemaError / ParseError, OSError and its
subclass DoctorInputError), and inputs that needed more memory than allowed.

    .venv/bin/python bench/fuzz.py                 # 100,000 inputs (about 10 minutes on 2 cores)
    .venv/bin/python bench/fuzz.py --n 5000 --seed 7

Inputs are built from real material (the knowledge base's fixture lines, the
recorded repro logs, the bundled recorded machines as JSON) by mutation, plus
shapes the fuzzing of earlier versions found harmful: dump-shaped JSON with
many entries, deep nesting, numbers of thousands of digits, Unicode digits,
long cpulists, control characters, binary noise. Each worker process runs
under ``RLIMIT_AS`` = its own size after imports + ``--mem-mb`` (500 MB), so
an input that needs more dies with MemoryError there and is counted. The
alternative in the same run: ``json.loads`` on the same JSON inputs, to show
the fuzz cost is ncclnb's, not the parser's. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import sys
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ALLOWED = (ValueError, OSError)
TARGETS = ("diagnose", "ingest", "load")


def _material():
    from ncclnb.doctor.kb import fixture_lines, load_signatures
    from ncclnb.recorded import DATA

    lines = [text for s in load_signatures() for _, _, text in fixture_lines(s.id)]
    for path in sorted((REPO / "tests" / "doctor" / "repro_logs").glob("*/*.log")):
        lines.extend(path.read_text(errors="replace").splitlines()[:200])
    machines = [p.read_text() for p in sorted(DATA.glob("*.json"))]
    return lines, machines


def _hostile(rng: random.Random) -> str:
    kind = rng.randrange(9)
    if kind == 0:  # a flight-recorder-shaped dump with many empty entries
        return '{"pg_config":{},"version":"2.4","entries":[' + ",".join(["[]"] * rng.randrange(1, 20000)) + "]}"
    if kind == 1:  # deep nesting
        d = rng.randrange(100, 20000)
        return rng.choice(["[", '{"entries":[', '{"a":']) * d
    if kind == 2:  # numbers past int()'s digit limit, in places logs put numbers
        n = "9" * rng.randrange(4000, 9000)
        return rng.choice(
            [
                f"[rank{n}]: NCCL WARN x",
                f"comm 0x1 rank {n} nRanks {n} nNodes 1 localRanks 1 localRank 0",
                f"rank < size. {n} vs 4",
                f'{{"schema": "ncclnb.node/{n}"}}',
            ]
        )
    if kind == 3:  # Unicode digits
        d = rng.choice("³١٣५߃")
        return rng.choice(
            [
                f"[rank{d}]: error",
                f"GLOBAL_RANK: {d}, MEMBER: 1/4",
                f'{{"schema": "ncclnb.node/{d}"}}',
                f"Timed out after {d} seconds waiting for clients. {d}/8 clients joined.",
            ]
        )
    if kind == 4:  # long cpulists in a pasted topo -m
        spans = ",".join(f"{i * 100000000}-{i * 100000000 + 99999999}" for i in range(rng.randrange(1, 60)))
        return "\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t" + spans + "\t0\n\nLegend:\n  X    = Self\n"
    if kind == 5:  # control characters and escapes
        return "".join(
            rng.choice(["\x1b]0;t\x07", "\x1b[2J", "\x9b31m", "\x08", "\x00", "NCCL WARN ", "error "])
            for _ in range(rng.randrange(1, 200))
        )
    if kind == 6:
        return json.dumps(
            {
                "schema": "ncclnb.node/1",
                "missing": {"gpus[0].x": "a", f"gpus[{10 ** rng.randrange(3, 30)}].x": "b"},
                "host": {"hostname": "h", "shm_total_bytes": 10 ** rng.randrange(10, 500)},
            }
        )
    if kind == 7:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4000))).decode("latin-1")
    return "\n".join(rng.choice(["", " ", "\t", "x" * rng.randrange(1, 5000)]) for _ in range(rng.randrange(1, 50)))


def _mutate(rng: random.Random, text: str) -> str:
    for _ in range(rng.randrange(1, 6)):
        if not text:
            break
        i = rng.randrange(len(text))
        j = min(len(text), i + rng.randrange(0, 40))
        text = text[:i] + rng.choice(["", "\x00", "9" * 50, "{", "]", "\n", "³", "nan", "-1", "null", '"']) + text[j:]
    return text


def make_input(rng: random.Random, lines: list, machines: list) -> str:
    roll = rng.random()
    if roll < 0.35:
        return "\n".join(
            _mutate(rng, rng.choice(lines)) if rng.random() < 0.5 else rng.choice(lines) for _ in range(rng.randrange(1, 40))
        )
    if roll < 0.6:
        return _mutate(rng, rng.choice(machines))
    return _hostile(rng)


def _limit_memory(extra_mb: int) -> None:
    import resource

    with open("/proc/self/statm") as fh:
        vsize = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    limit = vsize + extra_mb * (1 << 20)
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _worker(args) -> dict:
    start, count, seed, mem_mb, tmp = args
    import ncclnb

    lines, machines = _material()
    _limit_memory(mem_mb)
    rng = random.Random(seed * 1_000_003 + start)
    out = {"inputs": 0, "escaped": [], "memory": [], "json_loads_s": 0.0, "ncclnb_s": 0.0}
    path = os.path.join(tmp, f"fuzz-{os.getpid()}.txt")
    for i in range(start, start + count):
        text = make_input(rng, lines, machines)
        target = TARGETS[i % 3]
        t0 = time.perf_counter()
        try:
            if target == "diagnose":
                ncclnb.diagnose(text)
            elif target == "ingest":
                ncclnb.ingest(text)
            else:
                with open(path, "w", encoding="utf-8", errors="surrogateescape") as fh:
                    fh.write(text)
                ncclnb.load(path)
        except MemoryError:
            out["memory"].append({"input": i, "target": target, "head": text[:120]})
        except ALLOWED:
            pass
        except BaseException as exc:  # what the bench is looking for
            out["escaped"].append(
                {
                    "input": i,
                    "target": target,
                    "error": f"{type(exc).__name__}: {str(exc)[:200]}",
                    "where": traceback.format_exc().strip().splitlines()[-3][:200],
                    "head": text[:120],
                }
            )
        out["ncclnb_s"] += time.perf_counter() - t0
        if target == "load":
            t0 = time.perf_counter()
            try:
                json.loads(text)
            except (ValueError, RecursionError):
                pass
            out["json_loads_s"] += time.perf_counter() - t0
        out["inputs"] += 1
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000, help="inputs in all (default 100000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mem-mb", type=int, default=500, help="memory an input may add to a worker (default 500)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args(argv)
    import tempfile

    t0 = time.time()
    chunk = 500
    jobs = [(s, min(chunk, args.n - s), args.seed, args.mem_mb, tempfile.gettempdir()) for s in range(0, args.n, chunk)]
    totals = {"inputs": 0, "escaped": [], "memory": [], "json_loads_s": 0.0, "ncclnb_s": 0.0}
    with mp.get_context("spawn").Pool(args.workers, maxtasksperchild=4) as pool:
        for done, res in enumerate(pool.imap_unordered(_worker, jobs), 1):
            for k in ("inputs", "json_loads_s", "ncclnb_s"):
                totals[k] += res[k]
            totals["escaped"].extend(res["escaped"])
            totals["memory"].extend(res["memory"])
            if sys.stderr.isatty():
                print(f"\rfuzz: {totals['inputs']}/{args.n}", end="", file=sys.stderr, flush=True)
    escaped_kinds: dict = {}
    for e in totals["escaped"]:
        key = (e["target"], e["error"].split(":")[0], e["where"])
        escaped_kinds.setdefault(str(key), e)
    print(
        json.dumps(
            {
                "inputs": totals["inputs"],
                "targets": list(TARGETS),
                "seed": args.seed,
                "memory_limit_mb_per_input": args.mem_mb,
                "workers": args.workers,
                "escaped_exceptions": len(totals["escaped"]),
                "escaped_kinds": list(escaped_kinds.values())[:30],
                "over_memory": len(totals["memory"]),
                "over_memory_examples": totals["memory"][:10],
                "ncclnb_seconds": round(totals["ncclnb_s"], 1),
                "json_loads_seconds_on_the_load_inputs": round(totals["json_loads_s"], 2),
                "wall_seconds": round(time.time() - t0, 1),
                "allowed": "ValueError (SchemaError, ParseError), OSError (DoctorInputError): one-line errors",
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
