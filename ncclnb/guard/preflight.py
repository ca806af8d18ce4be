"""The launch check: what each rank can know alone, checked before any
rendezvous, so a job that cannot start says why in seconds instead of
waiting 30 minutes for clients that will never come.

``preflight()`` reads the launcher's variables (torchrun / plain env,
Slurm, Open MPI), checks them and raises :class:`PreflightError` (a
:class:`~ncclnb.guard.GuardError`) with one line per problem;
``init_process_group(...)`` is a drop-in for torch's that runs it first and,
once the group exists, compares versions and ``NCCL_*`` settings across the
ranks with one small gloo exchange (:func:`compare_across_ranks`).
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from dataclasses import dataclass
from typing import Mapping, Optional

from ..model.derive import visible_count, visible_problems
from . import _compare as cmp
from .errors import GuardError

# the variables each launcher sets: (rank, world size, local rank, local world size, node rank, nodes)
_LAUNCHERS = (
    ("torchrun", ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", None)),
    ("slurm", ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE", "SLURM_NODEID", "SLURM_NNODES")),
    # Open MPI names no node index: OMPI_COMM_WORLD_NODE_RANK is this process's rank *on* its node
    # (across jobs), not the node's number, so node rank stays unknown (the survey keys nodes by host)
    (
        "openmpi",
        ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", None, None),
    ),
    ("env", ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK", None)),
)
# settings that must be the same on every rank for NCCL to agree with itself
SAME_EVERYWHERE = (
    "NCCL_PROTO",
    "NCCL_ALGO",
    "NCCL_P2P_DISABLE",
    "NCCL_SHM_DISABLE",
    "NCCL_IB_DISABLE",
    "NCCL_NET",
    "NCCL_BUFFSIZE",
    "NCCL_NTHREADS",
    "NCCL_CROSS_NIC",
    "NCCL_NVLS_ENABLE",
    "NCCL_COLLNET_ENABLE",
    "NCCL_TOPO_FILE",
    "NCCL_GRAPH_FILE",
)


class PreflightError(GuardError):
    """The launch check found problems; the message has one line for each."""


@dataclass(frozen=True)
class LaunchFacts:
    launcher: str
    rank: Optional[int]
    world_size: Optional[int]
    local_rank: Optional[int]
    local_world_size: Optional[int]
    node_rank: Optional[int]
    nodes: Optional[int]
    master_addr: Optional[str]
    master_port: Optional[int]


def _num(environ: Mapping, name: Optional[str]) -> Optional[int]:
    value = environ.get(name, "") if name else ""
    value = value.split("(")[0].split(",")[0].strip()  # Slurm writes "4(x2)" for tasks per node
    return int(value) if value.isascii() and value.isdigit() and len(value) <= 9 else None


def launch_facts(environ: Optional[Mapping] = None) -> LaunchFacts:
    """What the launcher told this process, from the first launcher whose rank variable is set."""
    environ = os.environ if environ is None else environ
    for launcher, names in _LAUNCHERS:
        if names[0] in environ:
            rank, world, local, local_world, node, nodes = (_num(environ, n) for n in names)
            if launcher == "torchrun" and "TORCHELASTIC_RUN_ID" not in environ:
                continue  # plain RANK/WORLD_SIZE: read as "env" (NODE_RANK, not GROUP_RANK)
            return LaunchFacts(
                launcher, rank, world, local, local_world, node, nodes, environ.get("MASTER_ADDR"), _num(environ, "MASTER_PORT")
            )
    return LaunchFacts("none", None, None, None, None, None, None, environ.get("MASTER_ADDR"), _num(environ, "MASTER_PORT"))


_WHY = {
    "repeat": "names {entry} twice: two logical GPUs would be one device",
    "absent": "GPU {entry} does not exist on this node ({gpus} GPUs); CUDA hides it and every entry after it",
    "empty": "an empty entry; CUDA hides every entry after it",
    "form": "{entry!r} is neither a GPU index nor a GPU/MIG UUID; CUDA hides it and every entry after it",
}


def _visible_devices(environ: Mapping, physical: Optional[int]) -> list[str]:
    value = environ.get("CUDA_VISIBLE_DEVICES")
    return [
        f"CUDA_VISIBLE_DEVICES={value}" + (" " if why == "repeat" else ": ") + _WHY[why].format(entry=entry, gpus=physical)
        for entry, why in visible_problems(value, physical)
    ]


def _resolve(host: str, deadline_s: float) -> Optional[str]:
    """None when ``host`` resolves within the deadline, else why not."""
    result: list = []

    def look_up():
        try:
            socket.getaddrinfo(host, None)
            result.append(None)
        except OSError as exc:
            result.append(str(exc))

    thread = threading.Thread(target=look_up, daemon=True)
    thread.start()
    thread.join(deadline_s)
    if not result:
        return f"no answer in {deadline_s:g} s"
    return result[0]


def _store_reachable(host: str, port: int, deadline_s: float) -> bool:
    """Something accepts TCP connections at host:port within the deadline."""
    end = time.monotonic() + deadline_s
    while True:
        try:
            with socket.create_connection((host, port), timeout=max(0.1, min(1.0, end - time.monotonic()))):
                return True
        except OSError:
            if time.monotonic() >= end:
                return False
            time.sleep(0.2)


def preflight(
    environ: Optional[Mapping] = None,
    *,
    rank: Optional[int] = None,
    world_size: Optional[int] = None,
    backend: Optional[str] = None,
    deadline_s: float = 10.0,
    check_store: bool = True,
    gpus: Optional[int] = None,
) -> LaunchFacts:
    """Check what this rank can know alone; raise :class:`PreflightError`
    listing every problem, or return the :class:`LaunchFacts` it read.

    - RANK < WORLD_SIZE (``rank`` / ``world_size`` override the launcher's,
      as a framework that computes its own passes them);
    - RANK = NODE_RANK x LOCAL_WORLD_SIZE + LOCAL_RANK and WORLD_SIZE =
      nodes x LOCAL_WORLD_SIZE, where the launcher says so;
    - on NCCL: LOCAL_RANK < the visible GPUs; CUDA_VISIBLE_DEVICES valid and unique;
    - MASTER_ADDR resolves, and MASTER_PORT answers (every rank but 0, within
      ``deadline_s``: rank 0 or the launcher's agent hosts the store);
    - /dev/shm large enough for the local ranks (NCCL) and the open-file
      limit large enough for the world size.
    """
    environ = os.environ if environ is None else environ
    facts = launch_facts(environ)
    rank = facts.rank if rank is None else rank
    world = facts.world_size if world_size is None else world_size
    problems: list[str] = []
    if rank is not None and world is not None and rank >= world:
        problems.append(
            f"rank {rank} >= world size {world}: the launch starts more processes than WORLD_SIZE counts "
            "(check nodes x processes per node, e.g. Lightning's num_nodes)"
        )
    lr, lws, node = facts.local_rank, facts.local_world_size, facts.node_rank
    if lr is not None and lws is not None and lr >= lws:
        problems.append(f"local rank {lr} >= local world size {lws}")
    if None not in (rank, lr, lws, node) and rank != node * lws + lr and facts.launcher in ("torchrun", "slurm"):
        problems.append(
            f"rank {rank} is not node {node} x {lws} per node + local rank {lr}: the launcher numbers "
            "ranks otherwise (heterogeneous nodes?)"
        )
    if facts.nodes and lws and world is not None and facts.nodes * lws != world:
        problems.append(f"world size {world} is not {facts.nodes} nodes x {lws} processes per node")
    if (backend or "").lower() == "nccl":
        if gpus is None:
            from ..collectors.visible import driver_gpu_count  # counts /proc/driver/nvidia/gpus: touches no GPU

            gpus = driver_gpu_count()
        problems += _visible_devices(environ, gpus or None)
        visible = None if gpus is None else visible_count(environ.get("CUDA_VISIBLE_DEVICES"), gpus)
        if lr is not None and visible is not None and lr >= visible:
            problems.append(
                f"local rank {lr} but only {visible} GPU{'' if visible == 1 else 's'} visible: ranks would share a GPU "
                "(NCCL: Duplicate GPU detected) or fail with invalid device ordinal"
            )
        if lws and lws > 1:
            problems += _shm(lws)
    if world:
        problems += _nofile(world)
    if facts.master_addr and check_store:
        why = _resolve(facts.master_addr, min(deadline_s, 5.0))
        if why is not None:
            problems.append(f"MASTER_ADDR={facts.master_addr} does not resolve ({why})")
        elif (
            facts.master_port and rank not in (None, 0) and not _store_reachable(facts.master_addr, facts.master_port, deadline_s)
        ):
            problems.append(
                f"nobody listens at MASTER_ADDR:MASTER_PORT = {facts.master_addr}:{facts.master_port} "
                f"after {deadline_s:g} s: is rank 0 (the store host) running there, is MASTER_ADDR its "
                "address, and is the port open between the nodes?"
            )
    if problems:
        who = f"rank {rank}" if rank is not None else "this process"
        raise PreflightError(
            f"ncclnb preflight ({who}): " + "; ".join(problems), ranks=[rank] if rank is not None else [], check="preflight"
        )
    return facts


def _shm(local_ranks: int) -> list[str]:
    from ..checks.resources import shm_needed

    try:
        st = os.statvfs("/dev/shm")
    except OSError:
        return []
    total, needed = st.f_blocks * st.f_frsize, shm_needed(local_ranks)
    if total < needed:
        return [
            f"/dev/shm holds {total >> 20} MiB, less than the {needed >> 20} MiB NCCL's shared-memory transport "
            f"needs for {local_ranks} local ranks (docker run --shm-size=1g, or NCCL_SHM_DISABLE=1)"
        ]
    return []


def _nofile(world: int) -> list[str]:
    import resource

    from ..checks.resources import fds_needed

    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = fds_needed(world - 1, 1, sockets_transport=False)
    if soft != resource.RLIM_INFINITY and soft < needed:
        return [f"open-file limit (ulimit -n) {soft} is below the {needed} a rank of {world} may need"]
    return []


VERSION_NAMES = ("torch", "cuda", "nccl")


def _plain(text: str) -> str:
    """A canonical JSON text as a reader wants it: "2.14.3", not '"2.14.3"'."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return "none" if value is None else value if isinstance(value, str) else text


def _differ_report(values: Mapping, names, what: str, fix: str) -> Optional[tuple[str, list[int]]]:
    """One sentence for the names among ``values`` ({name: {rank: text}})
    that differ: a strict majority blames the others; a tie blames every
    side, since nothing says which is right (as the checks' versions_differ)."""
    names = [n for n in names if n in values]
    if not names:
        return None
    blamed: set = set()
    every: set = set()
    clauses = []
    for name in names:
        by_rank = {int(r): _plain(str(v)) for r, v in values[name].items()}
        groups = cmp.split(by_rank)
        if len(groups) < 2:  # the texts differ only past the 256 bytes shown: leave it to assert_same's words
            continue
        every.update(by_rank)
        sizes = [len(ranks) for _, ranks in groups]
        blamed.update(r for _, ranks in (groups[1:] if sizes[0] > sizes[1] else groups) for r in ranks)
        shown = groups[1:] + groups[:1]
        parts = [
            f"{cmp.fmt_ranks(ranks)} {'has' if len(ranks) == 1 else 'have'} {value}"
            for value, ranks in shown[: cmp.MAX_SHOWN_GROUPS]
        ]
        clauses.append(f"{name}: " + ", ".join(parts))
    if not blamed:
        return None
    others = sorted(every - blamed)
    verb = "runs" if len(blamed) == 1 else "run"
    head = (
        f"{cmp.fmt_ranks(blamed)} {verb} other {what} than {cmp.fmt_ranks(others)}"
        if others
        else f"{cmp.fmt_ranks(blamed)} run different {what}, none held by a majority"
    )
    return f"ncclnb guard: {head}: " + "; ".join(clauses) + f": {fix}", sorted(blamed)


def compare_across_ranks(group=None, *, versions: Optional[Mapping] = None, device=None) -> None:
    """Once the group exists: every rank runs the same torch, NCCL and CUDA,
    the same world size and the same NCCL_* settings that must agree
    (:data:`SAME_EVERYWHERE`); on NCCL, no two ranks use one GPU
    (:func:`~ncclnb.guard.check_devices`, with ``device``: what
    ``device_id=`` said, else the current device). Raises
    :class:`GuardError` naming the ranks that differ, ``check`` telling what:
    ``"versions"`` (``ncclnb guard: ranks 2,3 run other versions than ranks
    0,1: nccl: ...``), ``"nccl_settings"`` (``... run other NCCL settings
    ...``), ``"devices"``, or ``"assert_same"`` for the world size. A strict
    majority blames the others; a tie blames every rank, since nothing says
    which side is right.

    ``versions``: ``{"torch", "cuda", "nccl"}`` used instead of what this
    process reads (a missing key is None): for reproductions and tests that
    bring recorded facts (each node of ``ncclnb repro run
    nccl_version_mismatch --variant guarded`` passes its recorded node's).

    One small gloo exchange (a gloo group over the same ranks when the job's
    group is NCCL), so a broken NCCL cannot hide it."""
    from ..collectors.torchinfo import import_torch
    from .devices import check_devices
    from .same import assert_same

    torch = import_torch()
    import torch.distributed as dist

    nccl_job = "nccl" in str(dist.get_backend(group)).lower()
    if group is None and str(dist.get_backend()).lower() != "gloo":
        group = dist.new_group(backend="gloo")
    if versions is not None:
        if not isinstance(versions, Mapping) or set(versions) - set(VERSION_NAMES):
            raise ValueError(
                f"compare_across_ranks: versions must be a dict with keys {', '.join(VERSION_NAMES)}, got {versions!r}"
            )
        mine = {k: (None if versions.get(k) is None else str(versions.get(k))) for k in VERSION_NAMES}
    else:
        nccl = None
        if dist.is_nccl_available() and torch.cuda.is_available():
            try:
                nccl = ".".join(map(str, torch.cuda.nccl.version()))
            except Exception:
                nccl = None
        mine = {"torch": torch.__version__, "cuda": torch.version.cuda, "nccl": nccl}
    settings = {k: os.environ.get(k) for k in SAME_EVERYWHERE if os.environ.get(k) is not None}
    try:
        assert_same(group=group, world_size=dist.get_world_size(), **mine, **settings)
    except GuardError as err:
        found = [
            (check, _differ_report(err.values, names, what, fix))
            for check, names, what, fix in (
                ("versions", VERSION_NAMES, "versions", "install the same torch, CUDA and NCCL on every node"),
                ("nccl_settings", SAME_EVERYWHERE, "NCCL settings", "export the same NCCL_* settings on every rank, or none"),
            )
        ]
        found = [(check, rep) for check, rep in found if rep is not None]
        if not found or "world_size" in err.values:
            raise
        raise GuardError(
            ". ".join(rep[0] for _, rep in found), sorted({r for _, rep in found for r in rep[1]}), err.values, check=found[0][0]
        ) from None
    if nccl_job:
        check_devices(device=device, group=group)


def init_process_group(*args, preflight_deadline_s: float = 10.0, compare: bool = True, **kwargs):
    """``torch.distributed.init_process_group`` with the launch check first
    and the cross-rank comparison after. Same arguments as torch's; turns a
    launch that cannot work into one readable error in seconds::

        from ncclnb.guard import init_process_group
        init_process_group("nccl")

    On NCCL choose the device first (``torch.cuda.set_device(local_rank)``,
    or pass ``device_id=``, as torch recommends): the comparison after init
    checks that no two ranks use one GPU (:func:`~ncclnb.guard.check_devices`).
    """
    from ..collectors.torchinfo import import_torch

    import_torch()
    import torch.distributed as dist

    backend = kwargs.get("backend", args[0] if args else None)
    preflight(
        rank=kwargs.get("rank"),
        world_size=kwargs.get("world_size"),
        backend=str(backend) if backend else None,
        deadline_s=preflight_deadline_s,
    )
    dist.init_process_group(*args, **kwargs)
    if compare:
        compare_across_ranks(device=kwargs.get("device_id"))
