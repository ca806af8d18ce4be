"""Pure logic of the guards: canonical text, digests, the fixed-size rows
ranks exchange, and who to blame. No torch here; :mod:`._dist` moves the
bytes.

Rows (every rank sends the same number of bytes, so one all_gather works):

- summary row, 24 bytes: the number of values (int64, little endian) and a
  16-byte blake2b digest over every (name, canonical text) pair;
- detail row, sent only after summaries differ: 8 bytes of count, then one
  338-byte slot per value (the most values any rank sent):
  ``[name length: 1][name: 63][digest: 16][text length: 2][text: 256]``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import asdict, is_dataclass
from typing import Iterable, Mapping, Optional, Sequence

DIGEST_BYTES = 16
NAME_CAP = 63
TEXT_CAP = 256
SLOT_BYTES = 1 + NAME_CAP + DIGEST_BYTES + 2 + TEXT_CAP
ABSENT = "<absent>"
ELLIPSIS = "…"
MAX_SHOWN_GROUPS = 4

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


# -- canonical text ------------------------------------------------------


def plain_repr(value: object) -> str:
    """``repr(value)`` without ``at 0x7f...`` addresses, which differ from
    one process to the next; never raises."""
    try:
        text = repr(value)
    except Exception as exc:  # a broken __repr__ must not stop the guard
        text = f"<{type(value).__name__}: repr failed: {type(exc).__name__}>"
    return _ADDRESS.sub("", text)


def _normal(value: object, depth: int = 0):
    """value -> JSON primitives (dict/list/str/int/float/bool/None)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    if depth > 40:
        return plain_repr(value)
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            name = key if isinstance(key, str) else canonical(key)
            out[name] = _normal(item, depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [_normal(item, depth + 1) for item in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_normal(item, depth + 1) for item in value), key=lambda x: json.dumps(x, sort_keys=True))
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": bytes(value).hex()}
    if is_dataclass(value) and not isinstance(value, type):
        try:
            return _normal(asdict(value), depth + 1)
        except Exception:
            return plain_repr(value)
    tolist = getattr(value, "tolist", None)  # torch tensors, numpy arrays and scalars
    if callable(tolist):
        try:
            return _normal(tolist(), depth + 1)
        except Exception:
            return plain_repr(value)
    if hasattr(value, "__index__"):
        try:
            return int(value.__index__())
        except Exception:
            pass
    if hasattr(value, "__fspath__"):
        try:
            return str(value.__fspath__())
        except Exception:
            pass
    return plain_repr(value)


def canonical(value: object) -> str:
    """The JSON text every rank computes the same way for equal values:
    sorted keys, no spaces, tuples as lists, sets sorted, tensors and numpy
    arrays through ``tolist()``, anything else through its ``repr`` (with
    memory addresses removed). Never raises."""
    try:
        return json.dumps(_normal(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except Exception:  # pragma: no cover - _normal only yields JSON primitives
        return json.dumps(plain_repr(value), ensure_ascii=False)


def digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=DIGEST_BYTES).digest()


def cut(text: str, cap: int) -> bytes:
    """UTF-8 bytes of ``text``, at most ``cap`` bytes; a cut text ends in "…"."""
    raw = text.encode("utf-8", "replace")
    if len(raw) <= cap:
        return raw
    mark = ELLIPSIS.encode("utf-8")
    head = raw[: cap - len(mark)].decode("utf-8", "ignore").encode("utf-8")
    return head + mark


# -- rows ------------------------------------------------------------------


def summary_row(texts: Mapping[str, str]) -> bytes:
    """24 bytes: how many values, and one digest over all (name, text)."""
    pairs = sorted(texts.items())
    combined = digest(json.dumps(pairs, separators=(",", ":"), ensure_ascii=False))
    return len(pairs).to_bytes(8, "little") + combined


def summary_count(row: bytes) -> int:
    return int.from_bytes(row[:8], "little")


def detail_row(texts: Mapping[str, str], slots: int) -> bytes:
    """Count, then one fixed slot per value (sorted by name), zero-padded to
    ``slots`` slots."""
    items = sorted(texts.items())[:slots]
    out = bytearray(len(items).to_bytes(8, "little"))
    for name, text in items:
        name_b = cut(name, NAME_CAP)
        text_b = cut(text, TEXT_CAP)
        out += bytes([len(name_b)]) + name_b.ljust(NAME_CAP, b"\0")
        out += digest(text)
        out += len(text_b).to_bytes(2, "little") + text_b.ljust(TEXT_CAP, b"\0")
    out += bytes(SLOT_BYTES * (slots - len(items)))
    return bytes(out)


def parse_detail(row: bytes) -> dict[str, tuple[bytes, str]]:
    """detail row -> {name: (digest, shown text)}."""
    count = int.from_bytes(row[:8], "little")
    out: dict[str, tuple[bytes, str]] = {}
    pos = 8
    for _ in range(count):
        if pos + SLOT_BYTES > len(row):
            break
        n = row[pos]
        name = row[pos + 1 : pos + 1 + min(n, NAME_CAP)].decode("utf-8", "replace")
        pos += 1 + NAME_CAP
        dig = bytes(row[pos : pos + DIGEST_BYTES])
        pos += DIGEST_BYTES
        t = int.from_bytes(row[pos : pos + 2], "little")
        pos += 2
        text = row[pos : pos + min(t, TEXT_CAP)].decode("utf-8", "replace")
        pos += TEXT_CAP
        out[name] = (dig, text)
    return out


# -- blame -----------------------------------------------------------------


def fmt_ranks(ranks: Iterable[int]) -> str:
    """[1] -> "rank 1"; [0, 2, 3] -> "ranks 0,2,3"; runs of three or more
    become ranges: "ranks 0-511,513-1023"."""
    ordered = sorted(set(int(r) for r in ranks))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"{ordered[i]}-{ordered[j]}")
        else:
            parts.extend(str(r) for r in ordered[i : j + 1])
        i = j + 1
    return ("rank " if len(ordered) == 1 else "ranks ") + ",".join(parts)


def _verb(ranks: Sequence[int], one: str, many: str) -> str:
    return one if len(ranks) == 1 else many


def split(by_rank: Mapping[int, object]) -> list[tuple[object, list[int]]]:
    """Groups ranks by value: [(value, ranks)], the reference group first.
    The reference is the largest group; on a tie, the one holding the lowest
    rank (rank 0 of the group). Every other group is blamed."""
    groups: dict[object, list[int]] = {}
    for rank in sorted(by_rank):
        groups.setdefault(by_rank[rank], []).append(rank)
    return sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[1][0]))


def same_report(
    details: Mapping[int, Mapping[str, tuple[bytes, str]]],
) -> Optional[tuple[str, list[int], dict[str, dict[int, str]]]]:
    """{rank: {name: (digest, shown)}} -> (message, blamed ranks, values),
    or None when every rank holds the same values."""
    names = sorted({name for d in details.values() for name in d})
    clauses: list[str] = []
    blamed: set[int] = set()
    values: dict[str, dict[int, str]] = {}
    for name in names:
        keys = {rank: (d[name][0] if name in d else None) for rank, d in details.items()}
        groups = split(keys)
        if len(groups) < 2:
            continue
        shown = {rank: (d[name][1] if name in d else ABSENT) for rank, d in details.items()}
        values[name] = dict(sorted(shown.items()))
        # equal shown texts with different digests (cut texts): add the digest
        texts = [shown[ranks[0]] for _, ranks in groups]
        tag = len(set(texts)) < len(texts)

        def show(key, ranks):
            text = shown[ranks[0]]
            return f"{text} (blake2b {key.hex()[:8]})" if tag and key is not None else text

        ref_key, ref_ranks = groups[0]
        odd = groups[1:]
        odd_ranks = sorted(r for _, ranks in odd for r in ranks)
        blamed.update(odd_ranks)
        parts = [f"{fmt_ranks(ranks)} {_verb(ranks, 'has', 'have')} {show(key, ranks)}" for key, ranks in odd[:MAX_SHOWN_GROUPS]]
        if len(odd) > MAX_SHOWN_GROUPS:
            rest = [r for _, ranks in odd[MAX_SHOWN_GROUPS:] for r in ranks]
            parts.append(f"{fmt_ranks(rest)} {_verb(rest, 'has', 'have')} {len(odd) - MAX_SHOWN_GROUPS} other values")
        parts.append(f"{fmt_ranks(ref_ranks)} {_verb(ref_ranks, 'has', 'have')} {show(ref_key, ref_ranks)}")
        clauses.append(f"{fmt_ranks(odd_ranks)} {_verb(odd_ranks, 'disagrees', 'disagree')} on {name}: " + ", ".join(parts))
    if not clauses:
        return None
    return "ncclnb guard: " + "; ".join(clauses), sorted(blamed), values


def watermark_report(
    rows: Mapping[int, tuple[int, int]],
) -> Optional[tuple[str, list[int], dict[str, dict[int, int]]]]:
    """{rank: (step, collectives)} -> (message, blamed ranks, values), or None
    when every rank is at the same step with the same count."""
    steps = {rank: row[0] for rank, row in rows.items()}
    groups = split(steps)
    if len(groups) > 1:
        ref_step, ref_ranks = groups[0]
        odd = [r for _, ranks in groups[1:] for r in ranks]
        where = ", ".join(f"{fmt_ranks(ranks)} at step {step}" for step, ranks in groups[1:][:MAX_SHOWN_GROUPS])
        message = (
            f"ncclnb guard: {fmt_ranks(odd)} reached the watermark check at another step than "
            f"{fmt_ranks(ref_ranks)} (step {ref_step}): {where}; "
            "Watermark.step() must run the same number of times on every rank"
        )
        return message, sorted(odd), {"step": dict(sorted(steps.items()))}
    step = groups[0][0]
    counts = {rank: row[1] for rank, row in rows.items()}
    groups = split(counts)
    if len(groups) < 2:
        return None
    ref_count, ref_ranks = groups[0]
    clauses = []
    for count, ranks in groups[1:]:
        diff = int(count) - int(ref_count)
        clauses.append(
            f"{fmt_ranks(ranks)} issued {abs(diff)} collective{'' if abs(diff) == 1 else 's'} {'more' if diff > 0 else 'fewer'} "
            f"than {fmt_ranks(ref_ranks)} by step {step}"
        )
    odd = sorted(r for _, ranks in groups[1:] for r in ranks)
    if len(clauses) > MAX_SHOWN_GROUPS:
        clauses = clauses[:MAX_SHOWN_GROUPS] + [f"and {len(clauses) - MAX_SHOWN_GROUPS} other counts"]
    return "ncclnb guard: " + "; ".join(clauses), odd, {"collectives": dict(sorted(counts.items()))}


def missing_report(
    step: int,
    timeout_s: Optional[float],
    seen: Mapping[int, Optional[tuple[int, int]]],
) -> Optional[tuple[str, list[int], dict[str, dict[int, object]]]]:
    """After the watermark exchange failed: {rank: (last step, count) it
    reported, or None} -> which ranks never reached the check at ``step``."""
    late = sorted(r for r, row in seen.items() if row is None or row[0] < step)
    if not late:
        return None
    arrived = sorted(r for r in seen if r not in late)
    within = f" within {timeout_s:g} s" if timeout_s else ""
    last = []
    for r in late[:MAX_SHOWN_GROUPS]:
        row = seen[r]
        last.append(f"rank {r} last checked at step {row[0]}" if row else f"rank {r} never checked")
    message = (
        f"ncclnb guard: {fmt_ranks(late)} did not reach the watermark check at step {step}{within} "
        f"({'; '.join(last)}); {fmt_ranks(arrived) if arrived else 'no rank'} did: "
        f"{'it is' if len(late) == 1 else 'they are'} slow, or blocked in a collective the others never issued"
    )
    values: dict[str, dict[int, object]] = {
        "step": {r: (row[0] if row else None) for r, row in sorted(seen.items())},
        "collectives": {r: (row[1] if row else None) for r, row in sorted(seen.items())},
    }
    return message, late, values
