"""Network checks: NCCL_SOCKET_IFNAME against the node's interfaces, and
InfiniBand turned off while it is there."""

from __future__ import annotations

from typing import Optional

from ..model import NodeSnapshot
from ..model.derive import rdma_nics
from ._facts import env_flag, how_many, is_docker, is_loopback, socket_interfaces
from ._registry import fact, make, node_source, register


def parse_ifname(value: str) -> tuple[bool, bool, list[str]]:
    """NCCL_SOCKET_IFNAME syntax (NCCL's parseStringList/matchIfList): a comma
    list of interface-name prefixes; a leading ``^`` excludes the listed ones,
    then a leading ``=`` makes them exact names; ``:port`` suffixes are ignored.
    Returns ``(exclude, exact, names)``."""
    text = value.strip()
    exclude = text.startswith("^")
    if exclude:
        text = text[1:]
    exact = text.startswith("=")
    if exact:
        text = text[1:]
    names = [p.split(":")[0].strip() for p in text.split(",")]
    return exclude, exact, [n for n in names if n]


def ifname_matches(name: str, names: list[str], exact: bool) -> bool:
    return any(name == n if exact else name.startswith(n) for n in names)


def select_interfaces(value: str, nics) -> list:
    """The interfaces NCCL_SOCKET_IFNAME=value would let NCCL use, from ``nics``."""
    exclude, exact, names = parse_ifname(value)
    return [n for n in nics if ifname_matches(n.name, names, exact) != exclude]


def _speed(n) -> str:
    return f"{n.speed_mbps / 1000:g} Gb/s" if isinstance(n.speed_mbps, int) and n.speed_mbps > 0 else "speed unknown"


def _unusable(n) -> Optional[str]:
    if is_loopback(n):
        return "loopback: other nodes cannot reach it"
    if is_docker(n):
        return "docker bridge: private to this host"
    if (n.state or "").lower() == "down":
        return "down"
    return None


@register("socket_ifname", "socket_ifname", "node")
def socket_ifname(snap: NodeSnapshot, ranks=()):
    """NCCL_SOCKET_IFNAME names no interface of this node, or only one that is down, loopback or docker0."""
    value = (snap.env or {}).get("NCCL_SOCKET_IFNAME")
    if not isinstance(value, str) or not value.strip():
        return []
    ifaces = socket_interfaces(snap)
    if not ifaces:
        return []  # interfaces not recorded: nothing to compare with
    src = node_source(snap.hostname)
    have = ", ".join(f"{n.name} ({n.state or '?'})" for n in ifaces[:32]) + (f", ... ({len(ifaces)})" if len(ifaces) > 32 else "")
    exclude, exact, names = parse_ifname(value)
    chosen = select_interfaces(value, ifaces)
    ev = [fact(src, f"NCCL_SOCKET_IFNAME={value}"), fact(src, f"interfaces: {have}")]
    host = (snap.hostname,)
    rk = [r.rank for r in ranks or ()]
    fix_names = ", ".join(n.name for n in ifaces if _unusable(n) is None) or "an interface that other nodes can reach"
    if not chosen:
        return [
            make(
                "socket_ifname",
                "error",
                0.9,
                f"NCCL_SOCKET_IFNAME={value} matches no interface on {snap.hostname}",
                ev,
                cause="NCCL picks its bootstrap and socket interfaces with this filter; with nothing matching, init fails "
                "('Bootstrap : no socket interface found' / 'NET/Socket : no interface found'). Interface names "
                "often differ between hosts (eth0 vs ens5).",
                fix=f"Set it per node to an interface that exists and carries the cluster network ({fix_names}); "
                "a comma list of prefixes (e.g. 'eth,ens') or the exclusion form '^docker,lo' works across hosts.",
                hosts=host,
                ranks=rk,
            )
        ]
    bad = [(n, _unusable(n)) for n in chosen if _unusable(n)]
    if not bad:
        if not exclude:
            unmatched = [p for p in names if not any(ifname_matches(n.name, [p], exact) for n in ifaces)]
            if unmatched:
                return [
                    make(
                        "socket_ifname",
                        "info",
                        0.3,
                        f"NCCL_SOCKET_IFNAME entries {', '.join(unmatched)} match nothing on {snap.hostname}",
                        ev,
                        cause="Harmless while another entry matches; worth knowing when the list is shared by hosts.",
                        fix="Nothing to do unless this host should use one of those interfaces.",
                        hosts=host,
                    )
                ]
        return []
    good = [n for n in chosen if not _unusable(n)]
    ev += [fact(src, f"{n.name}: {why}") for n, why in bad]
    return [
        make(
            "socket_ifname",
            "warning" if good else "error",
            0.8 if good else 0.9,
            f"NCCL_SOCKET_IFNAME={value} selects {', '.join(n.name for n, _ in bad)} ({'; '.join(w for _, w in bad)})",
            ev,
            cause="NCCL binds its bootstrap and NET/Socket traffic to the selected interfaces; an interface that is down, "
            "the loopback or the docker bridge is not reachable from the other nodes, so init times out or "
            "connections are refused."
            + (" Other selected interfaces may still work, but NCCL may pick the bad one first." if good else ""),
            fix=f"Name the cluster interface explicitly ({fix_names}), or exclude the bad ones: NCCL_SOCKET_IFNAME=^docker,lo.",
            hosts=host,
            ranks=rk,
        )
    ]


@register("ib_disabled", "ib_misconfig", "node")
def ib_disabled(snap: NodeSnapshot, ranks=()):
    """InfiniBand/RoCE HCAs are active but NCCL_IB_DISABLE=1 sends inter-node traffic over TCP sockets."""
    env = snap.env or {}
    if not env_flag(env, "NCCL_IB_DISABLE"):
        return []
    hcas = rdma_nics(snap)
    if not hcas:
        return []
    src = node_source(snap.hostname)
    rate = sum(n.speed_mbps for n in hcas if isinstance(n.speed_mbps, int) and n.speed_mbps > 0)
    ifvalue = env.get("NCCL_SOCKET_IFNAME")
    ifaces = [n for n in socket_interfaces(snap) if not _unusable(n)]
    if isinstance(ifvalue, str) and ifvalue.strip():
        ifaces = select_interfaces(ifvalue, ifaces)
    sock = max(ifaces, key=lambda n: n.speed_mbps or 0, default=None)
    ev = [
        fact(src, f"NCCL_IB_DISABLE={env.get('NCCL_IB_DISABLE')}"),
        fact(src, f"{how_many(len(hcas), 'active RDMA port')}: " + ", ".join(f"{n.name} {_speed(n)}" for n in hcas[:8])),
    ]
    cost = ""
    if sock is not None:
        ev.append(fact(src, f"socket transport would use {sock.name} ({_speed(sock)})"))
        if rate and isinstance(sock.speed_mbps, int) and sock.speed_mbps > 0:
            cost = (
                f" By the link rates in this snapshot that is {sock.speed_mbps / 1000:g} Gb/s instead of "
                f"{rate / 1000:g} Gb/s ({rate / sock.speed_mbps:.0f}x less), before TCP overhead."
            )
    return [
        make(
            "ib_disabled",
            "warning",
            0.8,
            f"NCCL_IB_DISABLE=1 on {snap.hostname}, which has {how_many(len(hcas), 'active InfiniBand/RoCE port')}",
            ev,
            cause="With IB disabled NCCL uses its TCP socket transport through the kernel network stack, with no "
            "GPUDirect RDMA." + cost + " Seed 001 set it as part of a workaround on a single node, where it changes "
            "nothing; on multi-node jobs it costs inter-node bandwidth.",
            fix="Unset NCCL_IB_DISABLE. If IB really fails, fix it instead (ibstat port ACTIVE, NCCL_IB_HCA naming the "
            "right HCAs, ulimit -l unlimited, RoCE GID index via NCCL_IB_GID_INDEX).",
            hosts=(snap.hostname,),
            ranks=[r.rank for r in ranks or ()],
        )
    ]
