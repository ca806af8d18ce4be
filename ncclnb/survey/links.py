"""The survey's link test: collectives over a range of message sizes and a
ring of point-to-point exchanges, timed as nccl-tests times them, run by
every rank after the facts are gathered.

Backend: NCCL on the GPUs when every rank has a CUDA device (its
``LOCAL_RANK``-th) and torch has NCCL, in a group of its own created after
``NCCL_DEBUG=INFO`` is set with ``NCCL_DEBUG_FILE`` pointing at a file of
this rank, so the transport NCCL chose per peer can be read back
(:func:`ncclnb.collectors.parsers.peer_transports`); gloo over the survey's
own group otherwise. With NCCL, ``TORCH_NCCL_BLOCKING_WAIT=1`` makes a
collective that outlasts ``--timeout`` raise instead of leaving a hung kernel
(gloo applies the group's timeout to each call already). A failure stops the
test: what was measured so far is kept and ``missing`` says why the rest is
not there.

Measurements (https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md):
``size`` is nccl-tests' size (all_reduce: the buffer; all_gather: the
gathered output; reduce_scatter: the input; all_to_all: each rank's send
buffer), float32 elements; after the warm-up each rank times ``iters``
calls and takes the mean; the time of a step is the slowest rank's mean;
algbw = size / time; busbw = algbw x 2(n-1)/n for all_reduce and
x (n-1)/n for the other three. The pair ring sends from each node's lowest
rank to the next node's (with one node: each rank to the next), one pair at
a time, ``PAIR_ROUNDS`` times round; a round's time is the slower side's
mean and each pair keeps its best round, so a pause of one process (CPU
ranks sharing cores) is not taken for a slow link.

Every rank's timings travel to rank 0 as JSON bytes (``gather_json``).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from typing import Callable, Optional

from ..errors import tolerate
from .gather import SurveyUsageError, one_line

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
MAX_SIZE = 8 << 30  # 8 GiB: nccl-tests' usual -e 8G; more than that is a typo
PAIR_SIZE_CAP = 64 << 20  # the pair ring sends at most this much: a ring of 1024 nodes stays short
PAIR_ROUNDS = 3  # the ring runs this often; a pair keeps its best round (a slow link is slow every time)
DEFAULTS = {  # backend -> (min size, max size, step factor, warm-up, iterations)
    "nccl": (8, 1 << 30, 2, 5, 20),  # to 1 GiB: where the reference bands start (ncclnb.model.bandwidth)
    "gloo": (8, 1 << 20, 4, 1, 5),  # CPU: a few seconds for 4 ranks on 2 cores
}
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
_SIZE_RE = re.compile(r"\s*([0-9]{1,12})\s*([KMG]?)(?:I?B)?\s*", re.IGNORECASE)
_KEEP_ENV = re.compile(r"NCCL_[A-Z0-9_]+")
_DEBUG_LINES_KEPT = 4096  # transport lines a rank sends to rank 0 at most


class LinkTestUsageError(SurveyUsageError):
    """A bad --sizes or --iters value (one line, exit 2)."""


@dataclass(frozen=True)
class LinkPlan:
    """What to run: ``sizes`` (min, max, factor) or None for the backend's
    default; ``iters`` or None for the backend's default."""

    sizes: Optional[tuple[int, int, int]] = None
    iters: Optional[int] = None


def parse_size(text: str) -> int:
    """ "8", "8B", "64K", "64MB", "1G", "1GiB" -> bytes (K, M, G are 1024-based, as nccl-tests' -b/-e)."""
    m = _SIZE_RE.fullmatch(text or "")
    if not m:
        raise LinkTestUsageError(f"--sizes: {text!r} is not a size (write 8B, 64K, 64MB or 1G)")
    return int(m.group(1)) * _UNITS[m.group(2).upper()]


def parse_sizes(spec: str) -> tuple[int, int, int]:
    """``MIN:MAX`` or ``MIN:MAX:FACTOR`` -> (min bytes, max bytes, factor)."""
    parts = (spec or "").split(":")
    if len(parts) not in (2, 3):
        raise LinkTestUsageError(f"--sizes takes MIN:MAX (e.g. 8B:64MB) or MIN:MAX:FACTOR, got {spec!r}")
    low, high = parse_size(parts[0]), parse_size(parts[1])
    factor = 2
    if len(parts) == 3:
        if not parts[2].strip().isdigit() or not 2 <= int(parts[2]) <= 1024:
            raise LinkTestUsageError(f"--sizes: the step factor must be a whole number from 2 to 1024, got {parts[2]!r}")
        factor = int(parts[2])
    if low < 4:
        raise LinkTestUsageError(f"--sizes: the smallest size is 4 bytes (one float32), got {parts[0]!r}")
    if high < low:
        raise LinkTestUsageError(f"--sizes: MAX ({parts[1]}) is below MIN ({parts[0]})")
    if high > MAX_SIZE:
        raise LinkTestUsageError(f"--sizes: MAX ({parts[1]}) is over 8G per rank")
    return low, high, factor


def check_iters(iters: Optional[int]) -> Optional[int]:
    if iters is not None and not 1 <= iters <= 1000:
        raise LinkTestUsageError(f"--iters must be between 1 and 1000, got {iters}")
    return iters


def size_steps(low: int, high: int, factor: int) -> tuple[int, ...]:
    """low, low x factor, ... up to high; high itself always measured."""
    out, size = [], low
    while size < high:
        out.append(size)
        size *= factor
    out.append(high)
    return tuple(out)


def busbw_factor(collective: str, n: int) -> float:
    """nccl-tests' bus bandwidth factor for ``n`` ranks."""
    if n <= 1:
        return 0.0  # nothing crosses a link; nccl-tests prints 0 too
    return 2 * (n - 1) / n if collective == "all_reduce" else (n - 1) / n


def element_count(collective: str, size: int, n: int) -> int:
    """float32 elements of the buffer nccl-tests calls ``size``, rounded down
    to what splits evenly over ``n`` ranks (at least one element per rank)."""
    count = max(1, size // 4)
    if collective != "all_reduce":
        count = max(n, count - count % n)
    return count


def pair_ring(entries: list, labels: dict) -> list:
    """(src rank, dst rank) of the pair ring: each node's lowest rank to the
    next node's; with one node, each rank to the next. ``entries`` are rank
    entries (dicts) of the group, ``labels`` (host, node rank) -> node name."""
    lowest: dict = {}
    for e in entries:
        node = labels[(e["host"], e.get("node_rank"))]
        lowest[node] = min(lowest.get(node, e["rank"]), e["rank"])
    heads = [lowest[node] for node in sorted(lowest, key=lambda k: lowest[k])]
    if len(heads) == 1:
        heads = sorted(e["rank"] for e in entries)
    if len(heads) < 2:
        return []
    return [(heads[i], heads[(i + 1) % len(heads)]) for i in range(len(heads))]  # two nodes: both directions


def nccl_env(environ) -> dict:
    """The NCCL_* settings in force, as this rank saw them (the survey's own
    NCCL_DEBUG_FILE left out)."""
    from ..model.redact import redact_value

    return {k: redact_value(k, v) for k, v in sorted(environ.items()) if _KEEP_ENV.fullmatch(k) and k != "NCCL_DEBUG_FILE"}


def _now(torch, device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


def _buffers(torch, collective: str, count: int, n: int, device):
    send = torch.ones(count, dtype=torch.float32, device=device)
    if collective == "all_reduce":
        return send, None
    if collective == "all_gather":
        return torch.ones(count // n, dtype=torch.float32, device=device), send
    if collective == "reduce_scatter":
        return send, torch.empty(count // n, dtype=torch.float32, device=device)
    return send, torch.empty(count, dtype=torch.float32, device=device)  # all_to_all


def _call(dist, collective: str, send, recv, group) -> None:
    if collective == "all_reduce":
        dist.all_reduce(send, group=group)
    elif collective == "all_gather":  # torch 2.13 renames these *_single and warns on the old names
        (getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor)(recv, send, group=group)
    elif collective == "reduce_scatter":
        (getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor)(recv, send, group=group)
    else:
        dist.all_to_all_single(recv, send, group=group)


class _Runner:
    """One rank's part: measure, then hand rank 0 the timings."""

    def __init__(self, torch, dist, rank, world, local_rank, timeout, plan: LinkPlan, phase: Callable[[str], None]):
        self.torch, self.dist, self.rank, self.world, self.local_rank = torch, dist, rank, world, local_rank
        self.timeout, self.plan = timeout, plan
        self.where = "the start"

        def say(text: str) -> None:
            self.where = text
            phase(text)

        self.phase = say
        self.times: list = []  # [collective, size, mean seconds]
        self.pairs: list = []  # [src, dst, size, mean seconds, round]
        self.missing: dict = {}
        self.debug_dir: Optional[str] = None

    def backend(self, gather_json) -> tuple[str, object]:
        """NCCL when every rank can use its own GPU with NCCL, else gloo; all
        ranks agree (one all_gather of a flag on the gloo group)."""
        torch, dist, local = self.torch, self.dist, self.local_rank
        try:
            usable = (
                dist.is_nccl_available()
                and torch.cuda.is_available()
                and local is not None
                and 0 <= local < torch.cuda.device_count()
            )
        except Exception:
            usable = False
        votes = gather_json(torch.device("cpu"), bool(usable))
        if all(votes):
            return "nccl", torch.device("cuda", local)
        return "gloo", torch.device("cpu")

    def open_nccl(self):
        # NCCL reads these when it first initialises in this process: set before the group exists
        self.debug_dir = tempfile.mkdtemp(prefix="ncclnb-links-")
        os.environ["NCCL_DEBUG"] = "INFO"
        os.environ["NCCL_DEBUG_FILE"] = os.path.join(self.debug_dir, "nccl.%h.%p.log")
        os.environ["TORCH_NCCL_BLOCKING_WAIT"] = "1"
        import datetime

        return self.dist.new_group(backend="nccl", timeout=datetime.timedelta(seconds=self.timeout))

    def sweep(self, group, device, low: int, high: int, factor: int, warmup: int, iters: int) -> None:
        torch, dist, n = self.torch, self.dist, self.world
        for collective in COLLECTIVES:
            done = set()
            for size in size_steps(low, high, factor):
                count = element_count(collective, size, n)
                if count in done:
                    continue
                done.add(count)
                self.phase(f"link test: {collective} of {count * 4} bytes")
                send, recv = _buffers(torch, collective, count, n, device)
                for _ in range(warmup):
                    _call(dist, collective, send, recv, group)
                start = _now(torch, device)
                for _ in range(iters):
                    _call(dist, collective, send, recv, group)
                self.times.append([collective, count * 4, (_now(torch, device) - start) / iters])
                del send, recv

    def ring(self, group, device, pairs: list, size: int, warmup: int, iters: int) -> None:
        torch, dist = self.torch, self.dist
        buf = torch.ones(max(1, size // 4), dtype=torch.float32, device=device)
        for rnd, (src, dst) in ((r, pair) for r in range(PAIR_ROUNDS) for pair in pairs):
            self.phase(f"link test: pair {src} -> {dst}")
            if self.rank in (src, dst):
                send = self.rank == src

                def step():
                    (dist.send if send else dist.recv)(buf, src if not send else dst, group=group)

                for _ in range(warmup):
                    step()
                start = _now(torch, device)
                for _ in range(iters):
                    step()
                self.pairs.append([src, dst, buf.numel() * 4, (_now(torch, device) - start) / iters, rnd])
            # one pair at a time: a shared link does not slow the next (NCCL's barrier is told its device)
            dist.barrier(group=group, device_ids=[device.index] if device.type == "cuda" else None)

    def transports(self) -> list:
        """This rank's NCCL transport lines (P2P, SHM, NET), at most _DEBUG_LINES_KEPT."""
        if not self.debug_dir:
            return []
        lines: list = []
        try:
            for name in sorted(os.listdir(self.debug_dir)):
                with open(os.path.join(self.debug_dir, name), encoding="utf-8", errors="replace") as fh:
                    for line in fh:
                        if " via " in line and "->" in line and len(lines) < _DEBUG_LINES_KEPT:
                            lines.append(line.rstrip("\n")[:400])
        except OSError as exc:
            self.missing["transports"] = f"NCCL's debug file could not be read ({one_line(exc)})"
        return lines

    def close(self, group) -> None:
        if group is not None:
            try:
                self.dist.destroy_process_group(group)
            except Exception:
                pass

    def remove_debug_files(self) -> None:
        if self.debug_dir:
            shutil.rmtree(self.debug_dir, ignore_errors=True)


def run_link_test(
    torch,
    dist,
    *,
    rank: int,
    world: int,
    entries: list,
    labels: dict,
    timeout: float,
    plan: LinkPlan,
    environ,
    local_rank: Optional[int] = None,
    phase: Callable[[str], None] = lambda _: None,
) -> Optional[dict]:
    """This rank's part of the link test, called by every rank of the survey's
    gloo group (the default group) once the facts are gathered; NCCL uses
    the ``local_rank``-th GPU. ``phase`` hears what the test is doing (the
    survey's watchdog names it). Returns, on rank 0, the
    :class:`~ncclnb.model.LinkTest` as a dict; on the others None. Never
    raises for a failed measurement: the LinkTest's ``missing`` says what
    was not measured and why."""
    from ..repro.workers._facts import gather_json

    env = nccl_env(environ)  # the job's settings, before the survey sets NCCL_DEBUG for its own group
    run = _Runner(torch, dist, rank, world, local_rank, timeout, plan, phase)
    nodes = len(set(labels.values())) or 1
    backend, device, group = "gloo", torch.device("cpu"), None
    low, high, factor, warmup, iters = DEFAULTS["gloo"]
    try:
        run.phase("link test: choosing the backend")
        backend, device = run.backend(gather_json)
        low, high, factor, warmup, iters = DEFAULTS[backend]
        if plan.sizes is not None:
            low, high, factor = plan.sizes
        iters = plan.iters or iters
        if backend == "nccl":
            torch.cuda.set_device(device)  # before the group: NCCL's communicator binds the current device
            group = run.open_nccl()
        run.sweep(group, device, low, high, factor, warmup, iters)
        run.ring(group, device, pair_ring(entries, labels), min(high, PAIR_SIZE_CAP), warmup, iters)
    except Exception as exc:  # a collective that failed is a measurement; under NCCLNB_STRICT a bug raises
        tolerate(exc, (RuntimeError, OSError))
        run.missing["measurements"] = f"stopped at '{run.where}' ({one_line(exc)})"
    run.close(group)  # NCCL has written and closed its debug file once the group is gone
    lines = run.transports()
    run.remove_debug_files()
    payload = {"times": run.times, "pairs": run.pairs, "missing": run.missing, "transports": lines}
    try:
        run.phase("link test: gathering the timings")
        gathered = gather_json(torch.device("cpu"), payload, dst=0)
    except Exception as exc:  # gloo's failure or a peer's garbled JSON; under NCCLNB_STRICT a bug raises
        tolerate(exc, (RuntimeError, OSError, ValueError))
        if rank != 0:
            return None
        gathered = [payload]
        run.missing["results"] = f"the other ranks' timings could not be gathered ({one_line(exc)}); rank 0's only"
    if rank != 0:
        return None
    return assemble(
        gathered,
        backend=backend,
        device=device.type,
        world=world,
        nodes=nodes,
        iters=iters,
        entries=entries,
        labels=labels,
        env=env,
        missing=run.missing,
    )


def _sig(value: float) -> float:
    """Six significant digits: nccl-tests prints fewer, and 1e-5 GB/s must not round to 0."""
    return float(f"{value:.6g}")


def assemble(
    gathered: list,
    *,
    backend: str,
    device: str,
    world: int,
    nodes: int,
    iters: int,
    entries: list,
    labels: dict,
    env: dict,
    missing: dict,
) -> dict:
    """Rank 0: the LinkTest (as a dict) from every rank's payload: per
    collective and size the slowest rank's mean, algbw and busbw; per pair
    the slower side; the transports NCCL printed."""
    from ..collectors.parsers.nccl_version import peer_transports
    from ..model._serde import to_dict

    slowest: dict = {}
    counted: dict = {}
    pair_times: dict = {}
    missing = dict(missing)
    lines: list = []
    for r, payload in enumerate(gathered):
        if not isinstance(payload, dict):
            continue
        for collective, size, seconds in payload.get("times", ()):
            key = (collective, int(size))
            slowest[key] = max(slowest.get(key, 0.0), float(seconds))
            counted[key] = counted.get(key, 0) + 1
        for src, dst, size, seconds, rnd in payload.get("pairs", ()):
            key = (int(src), int(dst), int(size), int(rnd))
            pair_times[key] = max(pair_times.get(key, 0.0), float(seconds))  # the slower side of a round
        for part, why in (payload.get("missing") or {}).items():
            missing.setdefault(part, f"rank {r}: {why}")
        lines.extend(payload.get("transports", ()))
    results = []
    for (collective, size), seconds in sorted(slowest.items(), key=lambda kv: (COLLECTIVES.index(kv[0][0]), kv[0][1])):
        if counted[(collective, size)] < len(gathered) or seconds <= 0:
            continue  # a size some rank did not finish is not a measurement
        algbw = size / seconds / 1e9
        results.append(
            {
                "collective": collective,
                "size_bytes": size,
                "time_us": _sig(seconds * 1e6),
                "algbw_gbps": _sig(algbw),
                "busbw_gbps": _sig(algbw * busbw_factor(collective, world)),
            }
        )
    best: dict = {}
    for (s, d, size, _), t in pair_times.items():
        if t > 0:
            best[(s, d, size)] = min(best.get((s, d, size), t), t)
    host = {e["rank"]: labels[(e["host"], e.get("node_rank"))] for e in entries}
    pairs = [
        {
            "src_rank": s,
            "dst_rank": d,
            "src_host": host.get(s, "?"),
            "dst_host": host.get(d, "?"),
            "size_bytes": size,
            "time_us": _sig(t * 1e6),
            "busbw_gbps": _sig(size / t / 1e9),
        }
        for (s, d, size), t in sorted(best.items())
    ]
    transports = [to_dict(t) for t in peer_transports("\n".join(lines))]
    return {
        "backend": backend,
        "device": device,
        "world_size": world,
        "nodes": nodes,
        "iterations": iters,
        "results": results,
        "pairs": pairs,
        "transports": transports,
        "env": env,
        "missing": missing,
    }
