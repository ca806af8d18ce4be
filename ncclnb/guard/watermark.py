"""``Watermark``: every N steps, check that every rank issued the same number
of collectives, so an extra (or missing) collective on one rank is named
before it turns into a hang or a timeout."""

from __future__ import annotations

from datetime import timedelta
from typing import Callable, Optional, Union

from . import _compare as cmp
from ._dist import all_gather_int64, device_for, group_ranks, torch_dist
from .errors import GuardError

_KEY = "ncclnb/guard/watermark"


def _counter(torch, dist, group) -> Callable[[], int]:
    """A zero-argument callable: collectives this rank issued on ``group``
    since the group was created. It is the process group's own sequence
    number (``ProcessGroup._get_sequence_number_for_group()``), so it counts
    what C++ issues too (DDP's bucket all_reduces, FSDP, functional
    collectives), with nothing patched. A group of several backends
    (``cpu:gloo,cuda:nccl``) counts the sum over its backends."""
    pg = group if group is not None else dist.group.WORLD
    try:
        pg._get_sequence_number_for_group()
        return pg._get_sequence_number_for_group
    except Exception as first:
        backends, seen = [], set()
        for device in ("cpu", "cuda", "xpu"):
            try:
                backend = pg._get_backend(torch.device(device))
                backend._get_sequence_number_for_group()
            except Exception:
                continue
            if id(backend) not in seen:
                seen.add(id(backend))
                backends.append(backend)
        if not backends:
            raise RuntimeError(
                f"ncclnb guard: cannot count collectives on a {dist.get_backend(group)} group with torch "
                f"{torch.__version__}: {first}"
            ) from first
        return lambda: sum(b._get_sequence_number_for_group() for b in backends)


# (tuple of ranks, timeout) -> (default process group, gloo exchange group)
_EXCHANGES: dict[tuple, tuple] = {}
# exchange group name -> watermarks installed on it so far (the same on every member: they install in order)
_SERIALS: dict[str, int] = {}


def _exchange_group(dist, ranks: list[int], timeout: Optional[float]):
    """The gloo group a watermark over ``ranks`` exchanges on, made once per
    (ranks, timeout) and process group by the members only
    (``use_local_synchronization``), and kept. Without gloo, None."""
    default = dist.group.WORLD
    key = (tuple(ranks), timeout)
    hit = _EXCHANGES.get(key)
    if hit is None or hit[0] is not default:
        if not dist.is_gloo_available():
            return None
        kwargs = {"timeout": timedelta(seconds=float(timeout))} if timeout else {}
        group = dist.new_group(ranks=list(ranks), backend="gloo", use_local_synchronization=True, **kwargs)
        hit = _EXCHANGES[key] = (default, group)
    return hit[1]


def _forget_exchange(group) -> None:
    for key, (_, cached) in list(_EXCHANGES.items()):
        if cached is group:
            del _EXCHANGES[key]


def _store(dist):
    try:
        return dist.distributed_c10d._get_default_store()
    except Exception:
        return None


class Watermark:
    """Count the collectives each rank issues on ``group`` and compare the
    counts across ranks every ``every`` steps::

        wm = Watermark(every=100)
        for batch in loader:
            train_step(batch)
            wm.step()

    or ``with Watermark(every=100) as wm: ...``. When counts differ at a
    check, :class:`GuardError` is raised on every rank with one line such as
    ``ncclnb guard: rank 1 issued 1 collective more than ranks 0,2,3 by
    step 200`` and ``.ranks == [1]`` (the minority; on a tie, the ranks
    whose count differs from the group's first rank). The count is the
    group's sequence number, so it includes collectives issued before the
    watermark was made; on gloo a ``send``/``recv`` counts as one on each
    side (NCCL's counter is of collectives only), so watch a group whose
    ranks run the same collectives, such as the data-parallel group.

    The check's own exchange runs on a separate gloo group over the same
    ranks (``exchange_group`` to supply one), made by :meth:`install` (a
    collective over the members of ``group``; the first :meth:`step` calls
    it) once per set of ranks and timeout, and kept for the life of the job:
    torch 2.13 names a group made by members only after its ranks and the
    number of groups, so destroying one and making another reuses its store
    keys and hangs. It never counts itself, it stays aligned when ``group``
    is already out of step, and on NCCL it does not touch the GPU. It works
    when the CPU runs ahead of the collectives (NCCL, ``async_op=True``): a
    rank that issued an extra collective still reaches the check, and every
    rank raises. A rank blocked inside a collective that nobody else issued
    (gloo's synchronous calls) cannot reach it; then the others raise a
    :class:`GuardError` naming it when ``timeout`` (seconds; default the
    gloo default of 30 min) runs out, read from a breadcrumb each rank
    leaves in the job's store at each check.

    Cost per check: one gloo all_gather of 16 bytes per rank (two int64:
    step, count) and one ``store.set`` of a few bytes; nothing between
    checks. ``install`` also opens the gloo group's connections once.
    """

    def __init__(
        self,
        every: int = 100,
        group=None,
        *,
        timeout: Union[float, timedelta, None] = None,
        exchange_group=None,
    ):
        if int(every) < 1:
            raise ValueError(f"every must be >= 1, not {every!r}")
        self.every = int(every)
        self.group = group
        self.timeout = timeout.total_seconds() if isinstance(timeout, timedelta) else timeout
        self.steps = 0
        self._exchange = exchange_group
        self._own_exchange = False
        self._installed = False
        self._ranks: Optional[list[int]] = None
        self._count: Optional[Callable[[], int]] = None
        self._store = None
        self._key = ""

    def __repr__(self) -> str:
        state = "installed" if self._installed else "not installed"
        return f"Watermark(every={self.every}, steps={self.steps}, {state})"

    @property
    def count(self) -> int:
        """Collectives this rank issued on the group so far."""
        if self._count is None:
            torch, dist = torch_dist()
            self._count = _counter(torch, dist, self.group)
        return int(self._count())

    def install(self) -> Watermark:
        """Make the exchange group (a collective over the members of
        ``group``); idempotent. Returns self."""
        if self._installed:
            return self
        torch, dist = torch_dist()
        self._ranks = group_ranks(dist, self.group)
        if self._ranks is not None:
            if self._count is None:
                self._count = _counter(torch, dist, self.group)
            if self._exchange is None:
                made = _exchange_group(dist, self._ranks, self.timeout)
                if made is None:  # no gloo: exchange on the group itself (not safe once it is out of step)
                    self._exchange = self.group if self.group is not None else dist.group.WORLD
                else:
                    self._exchange = made
                    self._own_exchange = True
            self._store = _store(dist)
            name = str(getattr(self._exchange, "group_name", "") or "world")
            serial = _SERIALS[name] = _SERIALS.get(name, 0) + 1
            self._key = f"{_KEY}/{name}/{serial}/"  # one set of breadcrumbs per watermark
        self._installed = True
        return self

    def uninstall(self) -> None:
        """Stop using the exchange group; idempotent. The group itself stays
        open for the next watermark over the same ranks (destroying a group
        and making another over the same ranks reuses its store keys)."""
        if self._own_exchange:
            self._exchange = None
            self._own_exchange = False
        self._installed = False

    def __enter__(self) -> Watermark:
        return self.install()

    def __exit__(self, *exc) -> bool:
        self.uninstall()
        return False

    def step(self) -> None:
        """Call once per training step on every rank; every ``every``-th call
        runs :meth:`check`."""
        if not self._installed:
            self.install()
        self.steps += 1
        if self.steps % self.every == 0:
            self.check()

    def check(self) -> None:
        """Compare (step, collective count) across the ranks now; raise
        :class:`GuardError` on every rank if they differ. A collective call
        over the members of ``group``."""
        self.install()
        if self._ranks is None:
            return
        torch, dist = torch_dist()
        step, count = self.steps, self.count
        me = dist.get_rank()
        if self._store is not None:
            try:
                self._store.set(f"{self._key}{me}", f"{step} {count}")
            except Exception:
                self._store = None
        try:
            device = device_for(torch, dist, self._exchange)
            rows = all_gather_int64(torch, dist, self._exchange, [step, count], device, len(self._ranks))
        except Exception as exc:
            if self._own_exchange:  # a gloo group that failed once is not reused
                _forget_exchange(self._exchange)
            report = self._missing(step)
            if report is None:
                raise
            message, blamed, values = report
            raise GuardError(message, blamed, values, check="watermark") from exc
        report = cmp.watermark_report({self._ranks[i]: (row[0], row[1]) for i, row in enumerate(rows)})
        if report is not None:
            message, blamed, values = report
            raise GuardError(message, blamed, values, check="watermark")

    def _missing(self, step: int):
        """After a failed exchange: which ranks never left a breadcrumb for
        this step (None when the store cannot tell)."""
        if self._store is None or self._ranks is None:
            return None
        seen: dict[int, Optional[tuple[int, int]]] = {}
        try:
            for rank in self._ranks:
                key = f"{self._key}{rank}"
                if self._store.check([key]):
                    raw = self._store.get(key).decode("ascii").split()
                    seen[rank] = (int(raw[0]), int(raw[1]))
                else:
                    seen[rank] = None
        except Exception:
            return None
        return cmp.missing_report(step, self.timeout, seen)
