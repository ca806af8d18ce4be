"""Accuracy of the doctor on real failure reports: ../shared/corpus/dev.jsonl.

Each record holds the log of a real report and its confirmed category. Prints
JSON: top-1 and top-3 category accuracy and every miss with what the doctor
said instead. Usage: python bench/doctor_corpus.py [CORPUS.jsonl]
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = os.path.join(HERE, "..", "..", "shared", "corpus", "dev.jsonl")


def top_categories(findings, n: int = 3) -> list[str]:
    """The first ``n`` distinct categories, in ranking order."""
    out: list[str] = []
    for f in findings:
        if f.category not in out:
            out.append(f.category)
        if len(out) == n:
            break
    return out


def evaluate(path: str) -> dict:
    from ncclnb.doctor import diagnose

    total = top1 = top3 = 0
    misses = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            rec = json.loads(line)
            diag = diagnose(rec["log"] if "\n" in rec["log"] else rec["log"] + "\n")
            cats = top_categories(diag.findings)
            total += 1
            hit1 = bool(cats) and cats[0] == rec["category"]
            hit3 = rec["category"] in cats
            top1 += hit1
            top3 += hit3
            if not hit1:
                misses.append(
                    {
                        "id": rec["id"],
                        "expected": rec["category"],
                        "got": cats,
                        "top_rule": diag.findings[0].rule if diag.findings else None,
                        "in_top3": hit3,
                    }
                )
    return {
        "corpus": os.path.normpath(path),
        "cases": total,
        "top1": round(top1 / total, 3) if total else None,
        "top3": round(top3 / total, 3) if total else None,
        "top1_hits": top1,
        "top3_hits": top3,
        "misses": misses,
    }


def main(argv: list[str]) -> int:
    path = argv[1] if len(argv) > 1 else DEFAULT
    if not os.path.exists(path):
        print(json.dumps({"error": f"{path}: not found (the corpus lives in ../shared/corpus)"}))
        return 2
    print(json.dumps(evaluate(path), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
