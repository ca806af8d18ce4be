"""How much `import ncclnb` and `ncclnb collect` cost, printed as JSON.

Each measurement starts a fresh Python, so it includes interpreter start-up;
the import cost is reported against a bare `python -c pass` timed in the
same run (interleaved, median of N), which cancels that start-up out.
Targets (issue 2): import adds under 150 ms; collect under 1 s on a host
without a GPU.

    python bench/collect_and_import.py [--repeat 9]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time


def wall(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, timeout=120)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9, help="runs per measurement (median reported)")
    args = parser.parse_args()
    py = sys.executable
    bare, imported, collected = [], [], []
    wall([py, "-c", "import ncclnb"])  # warm the file cache once
    for _ in range(args.repeat):
        bare.append(wall([py, "-c", "pass"]))
        imported.append(wall([py, "-c", "import ncclnb"]))
    for _ in range(max(3, args.repeat // 2)):
        collected.append(wall([py, "-m", "ncclnb", "collect", "-o", os.devnull]))
    bare_ms = statistics.median(bare) * 1000
    import_ms = statistics.median(imported) * 1000
    collect_ms = statistics.median(collected) * 1000
    result = {
        "python": platform.python_version(),
        "repeat": args.repeat,
        "python_pass_ms": round(bare_ms, 1),
        "import_ncclnb_ms": round(import_ms, 1),
        "import_added_ms": round(import_ms - bare_ms, 1),
        "import_ratio": round(import_ms / bare_ms, 2),
        "import_target_added_ms": 150,
        "import_ok": import_ms - bare_ms < 150,
        "collect_ms": round(collect_ms, 1),
        "collect_runs_ms": [round(t * 1000, 1) for t in collected],
        "collect_target_ms": 1000,
        "collect_ok": collect_ms < 1000,
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
