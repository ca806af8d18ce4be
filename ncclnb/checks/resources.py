"""Resource checks: /dev/shm size, open-file and locked-memory limits."""

from __future__ import annotations

from ..model import UNLIMITED, NodeSnapshot
from ..model.derive import rdma_nics
from ._facts import NodeFacts, env_flag, how_many, is_number
from ._registry import fact, make, node_source, register

MIB = 1 << 20
# Size of one NCCL SHM-transport segment with default buffer sizes, as NCCL
# reports it when /dev/shm runs out: "Error while creating shared memory
# segment nccl-shm-recv-... (size 9637888)" (dmlc/xgboost#5963, in
# ../shared/corpus/dev.jsonl). NCCL creates one per connection between two
# local ranks on each channel.
SHM_SEGMENT_BYTES = 9637888
SHM_CHANNELS = 2  # rings use at least 2 channels on most topologies
DOCKER_DEFAULT_SHM = 64 * MIB  # `docker run` without --shm-size


def shm_needed(local_gpus: int) -> int:
    """Bytes of /dev/shm a job with ``local_gpus`` ranks on a node needs, by
    the rule: each rank's connection to its ring neighbour, on each of
    SHM_CHANNELS channels, holds one SHM_SEGMENT_BYTES segment. It is a floor:
    trees, p2p operations and more channels add segments."""
    return local_gpus * SHM_CHANNELS * SHM_SEGMENT_BYTES if local_gpus > 1 else 0


@register("shm_too_small", "shm_too_small", "node")
def shm_too_small(snap: NodeSnapshot, ranks=()):
    """/dev/shm is smaller than NCCL's shared-memory segments for the local GPU count need."""
    total = snap.host.shm_total_bytes
    if not isinstance(total, int) or total <= 0:
        return []
    facts = NodeFacts(snap)
    chosen, how = facts.gpus_in_use(ranks)
    n = len(chosen) or facts.visible_count()
    how = how or "GPUs visible"
    need = shm_needed(n)
    if not need:
        return []
    src = node_source(snap.hostname)
    rule = (
        f"rule: {n} local ranks x {SHM_CHANNELS} channels x {SHM_SEGMENT_BYTES} B per segment "
        f"(NCCL's segment size in dmlc/xgboost#5963) = {need / MIB:.0f} MiB"
    )
    free = snap.host.shm_free_bytes
    shm = dict(gpu_count=n, total_mib=f"{total / MIB:.0f}", need_mib=f"{need / MIB:.0f}")
    if total < need:
        return [
            make(
                "shm_too_small",
                "error",
                0.8,
                [fact(src, f"/dev/shm size {total} B, {n} GPUs ({how})"), fact("ncclnb", rule)],
                hosts=(snap.hostname,),
                ranks=[r.rank for r in ranks or ()],
                docker_default=" (Docker's default without --shm-size)" if total == DOCKER_DEFAULT_SHM else "",
                **shm,
            )
        ]
    if isinstance(free, int) and 0 <= free < need:
        return [
            make(
                "shm_too_small.full",
                "warning",
                0.6,
                [fact(src, f"/dev/shm free {free} B of {total} B"), fact("ncclnb", rule)],
                hosts=(snap.hostname,),
                free_mib=f"{free / MIB:.0f}",
                **shm,
            )
        ]
    return []


def _world(snap, ranks, default):
    sizes = [r.world_size for r in ranks or () if isinstance(r.world_size, int) and r.world_size > 0]
    if sizes:
        return max(sizes)
    ws = (snap.env or {}).get("WORLD_SIZE", "")
    return int(ws) if isinstance(ws, str) and is_number(ws.strip()) and int(ws) > 0 else default


def _env_int(env, name, default):
    v = (env or {}).get(name, "")
    return int(v) if isinstance(v, str) and is_number(v.strip()) else default


FD_BASELINE = 256  # python, CUDA driver, torch libraries and logs of one process
P2P_CHANNELS = 4  # channels per peer a send/recv-heavy job (all-to-all) may open


def fds_needed(peers: int, sockets_per_conn: int, sockets_transport: bool) -> int:
    """File descriptors one rank may hold: the baseline, a bootstrap/proxy
    socket per peer, and when NCCL's socket transport carries the data,
    sockets_per_conn sockets per connection, send and receive, on each of
    P2P_CHANNELS channels per peer."""
    data = peers * P2P_CHANNELS * 2 * sockets_per_conn if sockets_transport else 0
    return FD_BASELINE + peers + data


@register("nofile_low", "oom_or_resource", "node")
def nofile_low(snap: NodeSnapshot, ranks=()):
    """The open-file limit (ulimit -n) is too low for the sockets NCCL opens."""
    soft = snap.host.rlimit_nofile_soft
    if not isinstance(soft, int) or soft == UNLIMITED or soft <= 0:
        return []
    env = snap.env or {}
    world = _world(snap, ranks, NodeFacts(snap).visible_count())
    if world < 2:
        return []
    per_conn = _env_int(env, "NCCL_NSOCKS_PERTHREAD", 1) * _env_int(env, "NCCL_SOCKET_NTHREADS", 1)
    sockets = not rdma_nics(snap) or env_flag(env, "NCCL_IB_DISABLE")
    need = fds_needed(world - 1, max(per_conn, 1), sockets)
    if soft >= need:
        return []
    hard = snap.host.rlimit_nofile_hard
    src = node_source(snap.hostname)
    return [
        make(
            "nofile_low",
            "warning",
            0.55,
            [
                fact(src, f"RLIMIT_NOFILE soft {soft}, hard {'unlimited' if hard == UNLIMITED else hard}"),
                fact(
                    "ncclnb",
                    f"rule: {FD_BASELINE} baseline + {world - 1} peers"
                    + (
                        f" + {world - 1} peers x {P2P_CHANNELS} channels x 2 directions x {how_many(per_conn, 'socket')} "
                        f"per connection (NCCL_NSOCKS_PERTHREAD x NCCL_SOCKET_NTHREADS)"
                        if sockets
                        else ""
                    )
                    + f" = {need}",
                ),
            ],
            hosts=(snap.hostname,),
            ranks=[r.rank for r in ranks or ()],
            soft=soft,
            world=world,
            need=need,
            limit=hard if isinstance(hard, int) and hard > need else 1048576,
        )
    ]


@register("memlock_low_with_ib", "ib_misconfig", "node")
def memlock_low_with_ib(snap: NodeSnapshot, ranks=()):
    """InfiniBand/RoCE is in use but the locked-memory limit (ulimit -l) is not unlimited."""
    if env_flag(snap.env or {}, "NCCL_IB_DISABLE"):
        return []
    hcas = rdma_nics(snap)
    soft = snap.host.rlimit_memlock_soft
    if not hcas or not isinstance(soft, int) or soft == UNLIMITED or soft < 0:
        return []
    src = node_source(snap.hostname)
    tiny = soft < 64 * MIB
    return [
        make(
            "memlock_low_with_ib",
            "error" if tiny else "warning",
            0.75 if tiny else 0.5,
            [fact(src, f"RLIMIT_MEMLOCK soft {soft} B"), fact(src, "RDMA: " + ", ".join(n.name for n in hcas[:8]))],
            hostname=snap.hostname,
            kib=soft // 1024,
            ports=how_many(len(hcas), "InfiniBand/RoCE port"),
            hosts=(snap.hostname,),
            ranks=[r.rank for r in ranks or ()],
        )
    ]
