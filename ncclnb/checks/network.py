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
        return [make("socket_ifname", "error", 0.9, ev, hosts=host, ranks=rk, value=value, hostname=host[0], usable=fix_names)]
    bad = [(n, _unusable(n)) for n in chosen if _unusable(n)]
    if not bad:
        if not exclude:
            unmatched = [p for p in names if not any(ifname_matches(n.name, [p], exact) for n in ifaces)]
            if unmatched:
                return [
                    make(
                        "socket_ifname.unmatched_entries",
                        "info",
                        0.3,
                        ev,
                        hosts=host,
                        unmatched=", ".join(unmatched),
                        hostname=snap.hostname,
                    )
                ]
        return []
    good = [n for n in chosen if not _unusable(n)]
    ev += [fact(src, f"{n.name}: {why}") for n, why in bad]
    return [
        make(
            "socket_ifname.partly_unusable" if good else "socket_ifname.unusable",
            "warning" if good else "error",
            0.8 if good else 0.9,
            ev,
            hosts=host,
            ranks=rk,
            value=value,
            bad_names=", ".join(n.name for n, _ in bad),
            bad_why="; ".join(w for _, w in bad),
            usable=fix_names,
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
    case, rates = "ib_disabled.rates_unknown", {}
    if sock is not None:
        ev.append(fact(src, f"socket transport would use {sock.name} ({_speed(sock)})"))
        if rate and isinstance(sock.speed_mbps, int) and sock.speed_mbps > 0:
            case = "ib_disabled"
            rates = dict(
                socket_gbps=f"{sock.speed_mbps / 1000:g}", ib_gbps=f"{rate / 1000:g}", times=f"{rate / sock.speed_mbps:.0f}"
            )
    return [
        make(
            case,
            "warning",
            0.8,
            ev,
            hosts=(snap.hostname,),
            ranks=[r.rank for r in ranks or ()],
            hostname=snap.hostname,
            ports=how_many(len(hcas), "active InfiniBand/RoCE port"),
            **rates,
        )
    ]
