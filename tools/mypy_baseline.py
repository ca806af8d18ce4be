"""Run mypy on the package and hold its error count per file to a baseline that may only shrink.

    python tools/mypy_baseline.py            # check: exit 1 when a file has more errors than its baseline
    python tools/mypy_baseline.py --update   # lower the baseline to today's counts (never raises one)

The baseline (tools/mypy_baseline.json) maps each file to the number of mypy
errors it had when the baseline was last lowered. mypy's settings are
[tool.mypy] in pyproject.toml. A file over its count fails the check and
its errors are printed; a file under it is named, so the baseline can be
lowered in the same commit. Raising a count is done by hand in the JSON,
where a reviewer sees it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BASELINE = REPO / "tools" / "mypy_baseline.json"

# "path:line: error: message  [code]" (mypy's default output; column and notes differ)
_ERROR = re.compile(r"^(?P<path>[^:\n]+):\d+(?::\d+)?: error: ")


def run_mypy() -> tuple[int, str]:
    """mypy's exit code and its output (stdout and stderr), run from the repository root."""
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-pretty", "--no-error-summary"], cwd=REPO, capture_output=True, text=True
    )
    return proc.returncode, proc.stdout + proc.stderr


def errors_by_file(output: str, repo: Path = REPO) -> dict[str, list[str]]:
    """The error lines of mypy's output, by file (relative to ``repo``, with / separators)."""
    found: dict[str, list[str]] = {}
    for line in output.splitlines():
        m = _ERROR.match(line)
        if not m:
            continue
        path = m.group("path")
        if os.path.isabs(path):
            try:
                path = os.path.relpath(path, repo)
            except ValueError:  # another drive (Windows): keep it as mypy printed it
                pass
        found.setdefault(Path(path).as_posix(), []).append(line)
    return found


def compare(counts: dict[str, int], baseline: dict[str, int]) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]]]:
    """(files over their baseline, files under it), each {file: (count, baseline)}; a file
    missing from the baseline has a baseline of 0."""
    over = {f: (n, baseline.get(f, 0)) for f, n in counts.items() if n > baseline.get(f, 0)}
    under = {f: (counts.get(f, 0), b) for f, b in baseline.items() if counts.get(f, 0) < b}
    return dict(sorted(over.items())), dict(sorted(under.items()))


def lowered(counts: dict[str, int], baseline: dict[str, int]) -> dict[str, int]:
    """The baseline with each count lowered to today's where today's is smaller; never raised,
    and files at 0 dropped."""
    new = {f: min(b, counts.get(f, 0)) for f, b in baseline.items()}
    return {f: n for f, n in sorted(new.items()) if n > 0}


def read_baseline(path: Path) -> dict[str, int]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SystemExit(f"mypy_baseline: error: {path} not found (create it with --init)") from None
    except (OSError, ValueError) as exc:
        raise SystemExit(f"mypy_baseline: error: {path}: {' '.join(str(exc).split())}") from None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict) or not all(isinstance(k, str) and type(v) is int and v >= 0 for k, v in files.items()):
        raise SystemExit(f"mypy_baseline: error: {path}: expected {{\"files\": {{path: error count}}}}")
    return files


def write_baseline(path: Path, files: dict[str, int]) -> None:
    body = {
        "comment": "mypy errors per file; may only shrink (python tools/mypy_baseline.py --update)",
        "total": sum(files.values()),
        "files": dict(sorted(files.items())),
    }
    path.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/mypy_baseline.py", description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--update", action="store_true", help="lower the baseline to today's counts (never raises)")
    mode.add_argument("--init", action="store_true", help="write the baseline from today's counts, whatever it was")
    parser.add_argument("--baseline", type=Path, default=BASELINE, help=f"default: {BASELINE.relative_to(REPO)}")
    args = parser.parse_args(argv)

    baseline = {} if args.init else read_baseline(args.baseline)
    code, output = run_mypy()
    # 0: clean, 1: type errors; anything else (2, a crash) means mypy did not check the code
    if code not in (0, 1) or "INTERNAL ERROR" in output:
        print(output.rstrip(), file=sys.stderr)
        print(f"mypy_baseline: error: mypy did not finish (exit {code})", file=sys.stderr)
        return 2
    errors = errors_by_file(output)
    counts = {f: len(lines) for f, lines in errors.items()}
    total = sum(counts.values())

    if args.init:
        write_baseline(args.baseline, counts)
        print(f"mypy_baseline: wrote {args.baseline} ({total} errors in {len(counts)} files)")
        return 0

    over, under = compare(counts, baseline)
    for f, (n, b) in over.items():
        print(f"{f}: {n} mypy errors, baseline {b}:")
        for line in errors[f]:
            print(f"  {line}")
    if args.update:
        new = lowered(counts, baseline)
        if new != baseline:
            write_baseline(args.baseline, new)
        print(f"mypy_baseline: baseline {sum(baseline.values())} -> {sum(new.values())} errors")
    elif under:
        for f, (n, b) in under.items():
            print(f"{f}: {n} mypy errors, baseline {b}: lower it (python tools/mypy_baseline.py --update)")
    if over:
        print(
            f"mypy_baseline: {len(over)} file(s) have more mypy errors than their baseline; fix the new ones "
            f"(or, if they must stay, raise the count in {BASELINE.relative_to(REPO)} by hand)"
        )
        return 1
    print(f"mypy_baseline: ok, {total} errors (baseline {sum(baseline.values())})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
