"""Record REAL multi-rank logs for the doctor's tests: every broken
reproduction scenario, run for real on gloo, its run directory copied here.

    python tests/doctor/repro_logs/make_logs.py             # every scenario
    python tests/doctor/repro_logs/make_logs.py NAME...

Each ``<scenario>/`` holds the ranks' logs and flight-recorder dumps exactly
as the ranks wrote them (the runner's ``result.json`` and hidden files are
left out); ``.expected.json`` names the category and culprit ranks the
scenario defines. Paths inside the logs name the machine that recorded them.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def record(name: str) -> None:
    import ncclnb
    from ncclnb.repro import get

    scenario = get(name)
    result = ncclnb.reproduce(name)
    out = HERE / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    for path in sorted(Path(result.run_dir).iterdir()):
        if path.is_file() and not path.name.startswith(".") and path.name != "result.json":
            shutil.copyfile(path, out / path.name)
    (out / ".expected.json").write_text(
        json.dumps(
            {
                "category": scenario.expected_category,
                "culprit_ranks": list(scenario.culprit_ranks),
                "recorded_with": f"ncclnb.reproduce({name!r}) on {result.backend}, exit codes {result.exit_codes}",
            },
            indent=2,
        )
        + "\n"
    )
    top = result.diagnosis.top if result.diagnosis else None
    print(f"{name}: {top.category if top else None} {list(top.ranks) if top else []} -> {out}")


if __name__ == "__main__":
    from ncclnb.repro import scenarios

    names = sys.argv[1:] or [n for n, s in scenarios().items() if s.launcher != "replay"]
    for n in names:
        record(n)
