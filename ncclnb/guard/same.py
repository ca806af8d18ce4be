"""``assert_same``: every rank holds the same values, checked with one small
all_gather; ``check_dataset``: the same, for a dataset's length and first
items."""

from __future__ import annotations

import itertools
from typing import Any, Optional

from . import _compare as cmp
from ._dist import all_gather_bytes, device_for, group_ranks, torch_dist
from .errors import GuardError


def assert_same(group=None, **values: Any) -> None:
    """Check that every rank of ``group`` (default: the world) holds the same
    ``values``; raise :class:`GuardError` on every rank if not.

    Call it on every rank at the same point of the program, like any
    collective::

        assert_same(dataset_len=len(ds), lr=cfg.lr, config=cfg_dict)

    Each value becomes a canonical JSON text (sorted keys; tuples as lists;
    sets sorted; tensors and numpy arrays via ``tolist()``, so exact but
    copied to the CPU; other objects via ``repr`` with memory addresses
    removed), then a 16-byte blake2b digest. ``group`` is not a value name.

    Cost when all agree: one all_gather of 24 bytes per rank (a uint8
    tensor: the number of values and one digest over all of them), on the
    CPU for gloo and on ``torch.cuda.current_device()`` for NCCL. When they
    differ, a second all_gather of 8 + 338 bytes per value per rank carries
    the names and texts (each cut at 256 bytes with "…"), so the error says
    what every rank holds::

        ncclnb guard: rank 1 disagrees on dataset_len: rank 1 has 1001, ranks 0,2,3 have 1000

    The minority is blamed; on a tie, the ranks whose value differs from the
    group's first rank. Nothing is pickled. A process outside ``group``
    returns at once. No value makes it raise before the exchange, so a bad
    value on one rank cannot leave the others waiting.

    On NCCL the gathered bytes are read back on the CPU, which waits for the
    GPU stream: a sync point. Call it at setup, at epoch boundaries or every
    N steps; every step it cost 6.7 ms on a 4-rank gloo job whose step took
    10 ms (``bench/guard_overhead.py``), every 100 steps under 1%.
    """
    torch, dist = torch_dist()
    ranks = group_ranks(dist, group)
    if ranks is None:
        return
    texts = {str(name): cmp.canonical(value) for name, value in values.items()}
    device = device_for(torch, dist, group)
    rows = all_gather_bytes(torch, dist, group, cmp.summary_row(texts), device, len(ranks))
    if all(row == rows[0] for row in rows):
        return
    slots = max(cmp.summary_count(row) for row in rows)
    details = all_gather_bytes(torch, dist, group, cmp.detail_row(texts, slots), device, len(ranks))
    parsed = {ranks[i]: cmp.parse_detail(row) for i, row in enumerate(details)}
    report = cmp.same_report(parsed)
    if report is None:  # only names cut at 63 bytes tell the values apart
        groups = cmp.split({ranks[i]: row for i, row in enumerate(rows)})
        odd = sorted(r for _, rr in groups[1:] for r in rr)
        report = (
            f"ncclnb guard: {cmp.fmt_ranks(odd)} hold other values than {cmp.fmt_ranks(groups[0][1])} "
            "(names longer than 63 bytes: shorten them to see which)",
            odd,
            {},
        )
    message, blamed, shown = report
    raise GuardError(message, blamed, shown, check="assert_same")


def dataset_facts(ds: Any, n_first: int = 64) -> dict[str, Any]:
    """What :func:`check_dataset` compares, computed locally (no collective):
    ``dataset_len``; for an object with ``.indices`` (a ``torch.utils.data.
    Subset``) ``first_indices`` (the first ``n_first`` indices: the first 8
    shown, a blake2b of all) and ``base_len`` (``len(ds.dataset)``);
    otherwise ``first_items`` (the ``repr`` of ``ds[i]`` for ``i <
    n_first``: the first 3 shown, a blake2b of all). Never raises: what
    cannot be read becomes a ``"<...>"`` text, the same on every rank."""
    facts: dict[str, Any] = {}
    try:
        length: Optional[int] = len(ds)
        facts["dataset_len"] = length
    except Exception as exc:
        length = None
        facts["dataset_len"] = f"<no len(): {type(exc).__name__}>"
    indices = getattr(ds, "indices", None)
    if indices is not None:
        try:
            head = [cmp._normal(i) for i in itertools.islice(iter(indices), n_first)]
            facts["first_indices"] = {"first": head[:8], "hash": cmp.digest(cmp.canonical(head)).hex(), "n": len(head)}
        except Exception as exc:
            facts["first_indices"] = f"<unreadable indices: {type(exc).__name__}>"
        base = getattr(ds, "dataset", None)
        if base is not None:
            try:
                facts["base_len"] = len(base)
            except Exception as exc:
                facts["base_len"] = f"<no len(): {type(exc).__name__}>"
        return facts
    if length is None or not hasattr(ds, "__getitem__"):
        return facts
    texts: list[str] = []
    for i in range(min(n_first, length)):
        try:
            item = ds[i]
        except Exception as exc:  # an IterableDataset, a map without int keys
            texts.append(f"<ds[{i}] failed: {type(exc).__name__}>")
            break
        texts.append(cmp.plain_repr(item))
    facts["first_items"] = {
        "first": [t if len(t) <= 40 else t[:39] + cmp.ELLIPSIS for t in texts[:3]],
        "hash": cmp.digest("\n".join(texts)).hex(),
        "n": len(texts),
    }
    return facts


def check_dataset(ds: Any, group=None, n_first: int = 64) -> None:
    """Check that every rank of ``group`` sees the same dataset: its length
    and its first ``n_first`` items (their ``repr``), or, for a ``Subset``,
    its first ``n_first`` indices and the length of the dataset beneath.
    Call it on every rank with the dataset before any per-rank sharding (the
    ``DistributedSampler`` shards later, so the dataset itself must match).

    Cost: reading ``ds[i]`` for ``i < n_first`` locally, then one
    :func:`assert_same` (one all_gather of 24 bytes per rank). Raises
    :class:`GuardError` naming the ranks that differ and what they hold.
    A ``repr`` that summarises (a tensor of more than 1000 elements prints
    "...") hides differences beyond what it prints.
    """
    assert_same(group=group, **dataset_facts(ds, n_first))
