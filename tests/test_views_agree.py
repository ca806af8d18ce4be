"""The views and the checks read the facts one way (ncclnb issue 11).

For every bundled machine, under ``CUDA_VISIBLE_DEVICES`` unset, ``2,3``,
``0,9,1``, a full GPU UUID, a UUID prefix and a UUID without ``GPU-``, and
for rank tables that fit, outnumber the visible GPUs, share one GPU, never
set a device, or name their GPU by UUID:

- the GPUs the topology and NUMA views show in use are ``model.derive``'s
  reading, and so are the GPUs the checks' findings name;
- the ranks the rank map marks (and with which check) are the ranks the rank
  checks' findings blame, and its words are their titles;
- the version table's marked cells are the hosts ``versions_differ`` and
  ``nccl_env_differs`` blame, component by component.

And no module of the views or the checks resolves ``CUDA_VISIBLE_DEVICES``
itself.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from ncclnb import recorded
from ncclnb.checks import check, registry
from ncclnb.checks._facts import NodeFacts
from ncclnb.model import ClusterReport, GpuRef, NodeSnapshot, RankEntry
from ncclnb.model.derive import RankGpus, nccl_env_splits, read_visible, version_splits
from ncclnb.views._common import gpus_in_use
from ncclnb.views.numa import rank_placements
from ncclnb.views.ranks import RULES, analyse_ranks, rank_map_figure, rank_summary_html
from ncclnb.views.topology import topology_figure
from ncclnb.views.versions import version_marks, version_table

ROOT = Path(__file__).resolve().parents[1]
VALUES = ("unset", "2,3", "0,9,1", "uuid", "uuid-prefix", "uuid-no-GPU-")
TABLES = ("none", "one per GPU", "more ranks than GPUs, no device set", "all on cuda:0", "by UUID")
# checks about the GPU set a job uses on a node: every GPU they name is one it uses
GPU_SET_CHECKS = ("gpu_set_numa", "p2p_disabled_on_nvlink", "iommu_with_pcie_p2p", "nic_far_from_gpu")
# rank checks whose findings name the GPUs of the ranks they blame
RANK_GPU_CHECKS = ("ranks_share_gpu", "rank_affinity_numa", "rank_nic_far")


def uuid(k: int, host: str) -> str:
    # a letter first, so that the UUID without "GPU-" is not read as an index; unique 9-character prefixes
    return f"GPU-a{k:07x}-{abs(hash(host)) % 10**8:08d}-4000-8000-000000000000"


def with_value(snap: NodeSnapshot, value: str) -> NodeSnapshot:
    gpus = tuple(dataclasses.replace(g, uuid=uuid(k, snap.hostname)) for k, g in enumerate(snap.gpus))
    env = {k: v for k, v in snap.env.items() if k != "CUDA_VISIBLE_DEVICES"}
    last = gpus[-1].uuid if gpus else "GPU-none"
    text = {
        "unset": None,
        "2,3": "2,3",
        "0,9,1": "0,9,1",
        "uuid": last,
        "uuid-prefix": last[: len("GPU-a0000000")],
        "uuid-no-GPU-": last[len("GPU-") :],
    }[value]
    if text is not None:
        env["CUDA_VISIBLE_DEVICES"] = text
    return dataclasses.replace(snap, gpus=gpus, env=env)


def rank_table(snaps, table: str, recorded_ranks=()) -> tuple[RankEntry, ...]:
    if table == "none":
        return ()
    if table == "recorded":
        return tuple(recorded_ranks)
    counts = []
    for s in snaps:
        visible = read_visible(s).positions
        n = {
            "one per GPU": len(visible),
            "more ranks than GPUs, no device set": len(visible) + 2,
            "all on cuda:0": max(2, len(visible)),
            "by UUID": len(visible),
        }[table]
        counts.append((s, visible, n))
    world = sum(n for _, _, n in counts)
    ranks, base = [], 0
    for node, (s, visible, n) in enumerate(counts):
        for local in range(n):
            kw: dict = dict(rank=base + local, host=s.hostname, local_rank=local, world_size=world, node_rank=node)
            if table == "one per GPU":
                kw["cuda_index"] = local
            elif table == "all on cuda:0":
                kw["cuda_index"] = 0
            elif table == "by UUID":
                kw["gpu_uuid"] = s.gpus[visible[local]].uuid
            ranks.append(RankEntry(**kw))
        base += n
    return tuple(ranks)


def machine_report(name: str, value: str, table: str) -> ClusterReport:
    target = recorded.load(name)
    snaps = target.snapshots if isinstance(target, ClusterReport) else (target,)
    snaps = tuple(with_value(s, value) for s in snaps)
    own = target.ranks if isinstance(target, ClusterReport) else ()
    return ClusterReport(snapshots=snaps, ranks=rank_table(snaps, table, own))


def cases():
    for name in recorded.names():
        target = recorded.load(name)
        tables = TABLES + (("recorded",) if isinstance(target, ClusterReport) and target.ranks else ())
        for value in VALUES:
            for table in tables:
                yield pytest.param(name, value, table, id=f"{name}|{value}|{table}")


def gpu_ref(snap: NodeSnapshot, pos: int) -> GpuRef:
    return GpuRef(snap.hostname, snap.gpus[pos].index)


@pytest.mark.parametrize("name, value, table", list(cases()))
def test_views_and_checks_agree(name, value, table):
    report = machine_report(name, value, table)
    findings = check(report)
    rank_rules = [f for f in findings if f.rule in RULES]

    # --- the GPUs in use: derive's reading, in the topology and NUMA views and in the checks
    for snap in report.snapshots:
        where = RankGpus(snap)
        seen = where.in_use(report.ranks)
        want = None if seen.positions is None else sorted(seen.positions)
        assert gpus_in_use(snap, report.ranks) == want  # what the topology view highlights
        mine = [r for r in report.ranks if r.host == snap.hostname]
        assert [p.gpu_pos for p in rank_placements(snap, mine)] == [where.position(r) for r in mine]  # the NUMA view
        facts = NodeFacts(snap)
        chosen, _ = facts.gpus_in_use(mine)
        assert sorted(facts.position(g) for g in chosen) == sorted(seen.positions or ())
        assert_gpu_set_findings_name_gpus_in_use(snap, seen.positions, findings)
    # --- the GPUs rank findings name are the blamed ranks' GPUs, as derive reads them
    wheres = {s.hostname: RankGpus(s) for s in report.snapshots}
    for f in rank_rules:
        if f.rule in RANK_GPU_CHECKS or (f.rule == "local_rank_device" and "other than cuda:LOCAL_RANK" in f.title):
            blamed = {r.rank for r in report.ranks} & set(f.ranks)
            want = set()
            for r in report.ranks:
                w = wheres.get(r.host)
                if r.rank in blamed and r.host in f.hosts and w is not None and w.position(r) is not None:
                    want.add(gpu_ref(w.snapshot, w.position(r)))
            assert set(f.gpus) == want, (f.rule, f.title)

    # --- the rank map marks what the rank checks blame, with their words
    rm = analyse_ranks(report)
    assert list(rm.findings) == [f for f in check(report, only=list(RULES))]
    marked, want = set(), set()
    drawn = list(rm.cells.values()) + rm.unplaced
    for cell in drawn:
        who = (cell.entry.host, cell.entry.rank) if cell.entry is not None else ("", cell.missing_rank)
        marked |= {(*who, f.rule) for f in cell.findings}
        assert cell.kind == (cell.findings[0].rule if cell.findings else "ok")
        assert [t for t in cell.problems] == [esc(f.title) for f in cell.findings]
    present = {r.rank for r in report.ranks}
    for f in rank_rules:
        for rank in f.ranks:
            if rank not in present:
                want.add(("", rank, f.rule))
            for r in report.ranks:
                if r.rank == rank and (not f.hosts or r.host in f.hosts):
                    want.add((r.host, rank, f.rule))
    assert marked == want
    anomalous = {c.entry.rank if c.entry is not None else c.missing_rank for c in drawn if c.kind != "ok"}
    assert anomalous == {rank for f in rank_rules for rank in f.ranks}

    # --- the version table marks what versions_differ and nccl_env_differs blame
    assert_versions_agree(report)


def assert_gpu_set_findings_name_gpus_in_use(snap: NodeSnapshot, positions, findings) -> None:
    """The GPUs and links the GPU-set checks name on ``snap`` are among the
    GPUs in use (derive's ``positions``; every GPU of the node where that
    names none: the checks' "the job may use any GPU")."""
    in_use = {gpu_ref(snap, p) for p in (positions or range(len(snap.gpus)))}
    for f in findings:
        if f.rule in GPU_SET_CHECKS and snap.hostname in f.hosts:
            named = {g for g in f.gpus if g.host == snap.hostname}
            assert named and named <= in_use, (f.rule, f.title)
            ends = {ref for link in f.links for ref in (link.a, link.b) if ref.startswith("GPU")}
            assert ends <= {f"GPU{g.index}" for g in in_use}, (f.rule, f.title)
            if f.rule == "gpu_set_numa":
                assert named == in_use  # the set it judges is the set in use


@pytest.mark.parametrize("name", recorded.names())
@pytest.mark.parametrize("value", VALUES)
def test_p2p_and_iommu_findings_name_gpus_in_use(name, value):
    """The NVLink and PCIe peer-to-peer checks name the links of the GPUs in use."""
    target = recorded.load(name)
    snap = with_value(target.snapshots[0] if isinstance(target, ClusterReport) else target, value)
    fired = []
    for variant in (
        dataclasses.replace(snap, env={**snap.env, "NCCL_P2P_DISABLE": "1"}),
        dataclasses.replace(snap, host=dataclasses.replace(snap.host, iommu="on")),
    ):
        found = check(variant)
        fired += [f.rule for f in found if f.rule in GPU_SET_CHECKS and f.links]
        assert_gpu_set_findings_name_gpus_in_use(variant, RankGpus(variant).in_use().positions, found)
    if name in ("hgx-h100", "dgx-a100") and value == "2,3":
        assert "p2p_disabled_on_nvlink" in fired  # GPU2-GPU3 over NVLink, named as a link


def esc(text: str) -> str:
    from ncclnb.views._common import esc as view_esc

    return view_esc(text)


@pytest.mark.parametrize("name", recorded.names())
@pytest.mark.parametrize("value", VALUES)
def test_topology_figure_highlights_derive_answer(name, value):
    target = recorded.load(name)
    snaps = target.snapshots if isinstance(target, ClusterReport) else (target,)
    snap = with_value(snaps[0], value)
    seen = RankGpus(snap).in_use()
    fig = topology_figure(snap)
    ticks = list(fig.layout.yaxis.ticktext)
    bold = [k for k, t in enumerate(ticks) if t.startswith("<b>")]
    assert bold == ([] if seen.positions is None else sorted(seen.positions))
    if seen.positions:
        assert "GPUs in use: " + ", ".join(f"GPU{snap.gpus[p].index}" for p in sorted(seen.positions)) in fig.layout.title.text


# --- the case ------------------------------------------------------------


def test_l40s_2socket_under_2_3_says_two_visible_gpus_in_map_and_check():
    """On l40s-2socket (4 GPUs) with CUDA_VISIBLE_DEVICES=2,3 and no device set,
    torch's barrier guesses cuda:(rank % 2): the check says so, and the rank
    map shows the check's finding instead of its own "% 4 local devices"."""
    report = machine_report("l40s-2socket", "2,3", "more ranks than GPUs, no device set")
    assert [len(read_visible(s).positions) for s in report.snapshots] == [2]
    found = [f for f in check(report) if f.rule == "local_rank_device"]
    assert found and any("% 2 visible GPUs" in e.text for f in found for e in f.evidence)
    assert not any("% 4" in e.text for f in found for e in f.evidence)
    rm = analyse_ranks(report)
    fig = rank_map_figure(report, rank_map=rm)
    words = " ".join(
        [fig.layout.title.text]
        + [t for row in fig.data[0].text for t in row]
        + [t for row in fig.data[0].hovertext for t in row]
        + [rank_summary_html(rm)]
    )
    assert "% 4" not in words and "local devices" not in words
    cells = {c.entry.rank: c for c in rm.cells.values()}
    # ranks 2 and 3 guess cuda:0 and cuda:1 (2 % 2, 3 % 2), not their LOCAL_RANK: the warning's ranks
    warning = next(f for f in found if f.severity == "warning")
    assert {r for r, c in cells.items() if c.kind == "local_rank_device" and c.severity == "warning"} == set(warning.ranks)
    assert all(c.problems[0] == esc(c.findings[0].title) for c in cells.values() if c.findings)
    # the guessed GPUs the finding names are the visible ones, GPU2 and GPU3
    assert {g.index for f in found for g in f.gpus} <= {2, 3}


# --- the version table -------------------------------------------------------------


def assert_versions_agree(report: ClusterReport):
    snaps = report.snapshots
    marks = version_marks(report, group=False)
    hosts = [s.hostname for s in snaps]
    want = {}
    splits = {**version_splits(snaps), **nccl_env_splits(snaps)}
    for split in splits.values():
        for host in split.odd:
            want[(hosts.index(host), split.component)] = "no_majority" if split.tie else "differs"
    assert marks == want
    found = check(report, only=["versions_differ", "nccl_env_differs"])
    for f in found:
        if f.rule == "versions_differ":
            comp = f.title.split(" differs across nodes")[0]
            assert tuple(sorted(splits[comp].odd)) == f.hosts
        else:
            keys = f.title.split(": ", 1)[1].split(", ")
            assert set(f.hosts) == {h for k in keys for h in splits[k].odd}
    named = {f.title.split(" differs across nodes")[0] for f in found if f.rule == "versions_differ"}
    named |= {k for f in found if f.rule == "nccl_env_differs" for k in f.title.split(": ", 1)[1].split(", ")}
    assert named == {comp for _, comp in marks}
    # and the drawn table paints exactly those cells
    styler = version_table(report, group=False)
    styler._compute()
    cols = list(styler.data.columns)
    painted = {}
    for (row, col), props in styler.ctx.items():
        css = "".join(f"{k}:{v};" for k, v in props)
        if "#f8d7da" in css:
            painted[(row, cols[col])] = "differs"
        elif "#fff3cd" in css:
            painted[(row, cols[col])] = "no_majority"
    assert painted == {k: v for k, v in marks.items() if k[1] in cols}


def _versions(snap: NodeSnapshot, **fields) -> NodeSnapshot:
    return dataclasses.replace(snap, versions=dataclasses.replace(snap.versions, **fields))


def _renamed(snap: NodeSnapshot, host: str) -> NodeSnapshot:
    return dataclasses.replace(snap, host=dataclasses.replace(snap.host, hostname=host))


@pytest.mark.parametrize("name", recorded.names())
def test_version_table_marks_what_the_checks_blame(name):
    target = recorded.load(name)
    base = target.snapshots[0] if isinstance(target, ClusterReport) else target
    if isinstance(target, ClusterReport) and len(target.snapshots) > 1:
        assert_versions_agree(target)
    a, b, c = (_renamed(base, f"{name}-{k}") for k in "abc")
    # a minority (red) for torch, NCCL and the driver, and a NCCL_* setting
    odd = _versions(c, torch="1.13.1", nccl_torch="2.14.3", nccl_loaded=None, driver="470.63.01")
    odd = dataclasses.replace(odd, env={**odd.env, "NCCL_P2P_DISABLE": "1"})
    assert_versions_agree(ClusterReport(snapshots=(a, b, odd)))
    # a tie (amber): nothing says which side is wrong
    assert_versions_agree(ClusterReport(snapshots=(a, _versions(b, torch_cuda="11.7", nccl_pip={"nvidia-nccl-cu11": "2.14.3"}))))
    # the same NCCL known two ways (printed vs guessed from the wheel) does not differ
    known = _versions(a, nccl_loaded="2.19.3", nccl_torch=None)
    guessed = _versions(b, nccl_loaded=None, nccl_torch=None, nccl_pip={"nvidia-nccl-cu12": "2.19.3"})
    assert_versions_agree(ClusterReport(snapshots=(known, guessed)))
    assert "NCCL (used by torch)" not in version_splits((known, guessed))


# --- one reading of CUDA_VISIBLE_DEVICES -------------------------------------------------


def test_rank_map_shows_one_entry_per_rank_check():
    """A colour of the rank map is a rank check: one entry per check of
    ncclnb.checks.ranks, nothing else."""
    of_ranks = {cid for cid, info in registry().items() if info.func.__module__ == "ncclnb.checks.ranks"}
    assert set(RULES) == of_ranks


def test_a_bus_id_is_keyed_as_the_collector_writes_it():
    """derive matches a rank's recorded bus id to a GPU's in NVML's form, the
    form the collector writes (``collectors.pci.nvml_bus_id`` is derive's)."""
    from ncclnb.collectors.pci import nvml_bus_id
    from ncclnb.model.derive import bus_key

    assert nvml_bus_id is not None and nvml_bus_id("3b:00.0") == bus_key("3b:00.0")
    forms = {
        "00000000:3B:00.0": "00000000:3B:00.0",
        "0000:3b:00.0": "00000000:3B:00.0",
        "3b:00.0": "00000000:3B:00.0",
        " 0001:AF:1f.7 ": "00000001:AF:1F.7",
        "10000:01:00.1": "00010000:01:00.1",
        "3b:00.8": None,  # no function 8
        "xyz": None,
        "": None,
        "3b:0.0": None,
        None: None,
    }
    for text, key in forms.items():
        assert bus_key(text) == key, text


def test_no_view_or_check_resolves_cuda_visible_devices():
    """Only ``model.derive`` resolves ``CUDA_VISIBLE_DEVICES``: anywhere else
    in the package the variable's value is looked up only to be handed to
    derive (the collector, the guards, the preflight) or to be shown (the
    check that names a bad value, the source a title gives), never split or
    matched against GPUs there."""
    allowed = {
        ("checks/_facts.py", "gpus_in_use"),  # shown as the source of a title
        ("checks/ranks.py", "cuda_visible_devices_invalid"),  # shown in the finding
        ("collectors/visible.py", "cuda_indices"),  # handed to derive.visible_gpus
        ("collectors/visible.py", "visible_gpu_count"),  # handed to derive.visible_count
        ("guard/devices.py", "device_identity"),  # handed to derive.visible_entry
        ("guard/preflight.py", "_visible_devices"),  # handed to derive.visible_problems
        ("guard/preflight.py", "preflight"),  # handed to derive.visible_count
    }
    found = set()
    for path in sorted((ROOT / "ncclnb").rglob("*.py")):
        rel = path.relative_to(ROOT / "ncclnb").as_posix()
        if rel == "model/derive.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                key = None
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
                    key = node.args[0]
                elif isinstance(node, ast.Subscript):
                    key = node.slice
                if isinstance(key, ast.Constant) and key.value == "CUDA_VISIBLE_DEVICES":
                    found.add((rel, fn.name))
    assert found <= allowed, found - allowed
    for path in sorted((ROOT / "ncclnb" / "views").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert "read_visible" not in text and "cuda_device" not in text, path.name


# --- the NUMA view's affinity marks are rank_affinity_numa's verdicts -------------------

AFFINITIES = ("own node", "other node", "every CPU", "own node and part of another")


def _affinity(snap: NodeSnapshot, node: int, kind: str) -> str:
    from ncclnb.model.cpulist import format_cpulist, parse_cpulist

    cpus = {n.id: parse_cpulist(n.cpus) for n in snap.host.numa_nodes if n.cpus}
    other = next(k for k in cpus if k != node)
    chosen = {
        "own node": cpus[node],
        "other node": cpus[other],
        "every CPU": set().union(*cpus.values()),
        "own node and part of another": cpus[node] | set(sorted(cpus[other])[:2]),
    }[kind]
    return format_cpulist(chosen)


def _numa_cases():
    for name in recorded.names():
        snap = recorded.load(name)
        if not isinstance(snap, NodeSnapshot) or len([n for n in snap.host.numa_nodes if n.cpus]) < 2:
            continue
        for kind in AFFINITIES:
            yield pytest.param(name, kind, id=f"{name}-{kind}")


@pytest.mark.parametrize("name,kind", list(_numa_cases()))
def test_numa_marks_are_the_affinity_check_s_verdicts(name, kind):
    snap = recorded.load(name)
    ranks = []
    for pos, g in enumerate(snap.gpus):
        if g.numa_node is None or not any(n.id == g.numa_node and n.cpus for n in snap.host.numa_nodes):
            continue
        ranks.append(
            RankEntry(
                rank=len(ranks),
                host=snap.hostname,
                local_rank=len(ranks),
                cuda_index=pos,
                bus_id=g.pci_bus_id,
                cpu_affinity=_affinity(snap, g.numa_node, kind),
            )
        )
    if not ranks:
        pytest.skip(f"{name}: no GPU with a known NUMA node")  # never for the machines this runs on
    findings = check(ClusterReport(snapshots=(snap,), ranks=tuple(ranks)), only=["rank_affinity_numa"])
    named = {(rank, "remote" if f.severity == "warning" else "spans") for f in findings for rank in f.ranks}
    shown = {(p.rank.rank, p.status) for p in rank_placements(snap, ranks) if p.status in ("spans", "remote")}
    assert shown == named
    # what the check leaves alone is shown as what it is, never as a problem
    calm = {"own node": "local", "every CPU": "unpinned"}.get(kind)
    if calm:
        assert {p.status for p in rank_placements(snap, ranks)} == {calm} and not findings
