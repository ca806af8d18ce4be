"""One rank of the survey: join a gloo group of its own, exchange the facts,
and (rank 0) write ``DIR/report.json``, check it and print the verdict.

How it runs (every blocking step waits at most ``timeout`` seconds):

1. **store**: a ``TCPStore`` at ``MASTER_ADDR:MASTER_PORT`` (rank 0 hosts it;
   under torchrun the agent's store is used), created without waiting for
   the other ranks, so rank 0 never blocks on a rank that never comes.
2. **registry**: each rank adds its :class:`~ncclnb.model.RankEntry` (JSON
   bytes) to the store under a sequence number, before anything can fail.
   This is what rank 0 knows of a rank that later cannot join: a rank
   beyond the world size, or one that dies after registering.
3. **group**: ``init_process_group("gloo", store=..., timeout=timeout)``, a
   gloo group of the survey's own even when the job uses NCCL, so a broken
   NCCL cannot hide the facts. RANK >= WORLD_SIZE fails here at once
   (gloo: ``rank < size``): that rank says so in one line and exits 1.
4. **exchange**: the rank entries by all_gather, then one node snapshot
   (``ncclnb.collect()``) per node by gather to rank 0; JSON bytes in uint8
   tensors (:func:`ncclnb.repro.workers._facts.gather_json`), nothing unpickled.
   Gloo applies ``timeout`` to each collective.
5. **link test** (unless ``--no-link-test``): collectives over a range of
   sizes and a ring of point-to-point exchanges, on NCCL where every rank
   has a GPU, else on this gloo group (:mod:`ncclnb.survey.links`); rank 0
   puts the result in the report's ``links``, runs the checks and stores
   their findings in the report too.

Partial reports: when step 3 or 4 fails on rank 0 (a peer never joined,
timed out or died), rank 0 writes the report from what it has: the entries
it gathered, or else the registry, its own node's snapshot, the ranks of
0..WORLD_SIZE-1 that never registered named in the description (and by the
``rank_table_gaps`` check), and exits 1. Any rank other than 0 prints one
line and exits 1. A watchdog ends a rank that is still running after
``4 x timeout + 30`` s (rank 0 writes its partial report first), so no rank
outlives a bad launch. Without rank 0 there is no store and no report: each
rank says so in one line after ``timeout``.

Node identity: a node is (hostname, node rank), the node rank as the
launcher gives it (torchrun ``GROUP_RANK``, Slurm ``SLURM_NODEID``; Open MPI
names none, so its nodes are keyed by hostname alone). When one hostname
hosts several node ranks (two torchrun "nodes" on one machine, or
containers that all call themselves ``localhost``) each becomes
``HOST#node<N>`` in the report, ranks and snapshot alike, and the
description says so. The node's snapshot is collected once, by its lowest
global rank (not by LOCAL_RANK 0: a wrong LOCAL_RANK is one of the things
the survey exists to find).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import socket
import sys
import tempfile
import threading
import time
from typing import Mapping, Optional, TextIO

from ..errors import InputError, path_error, tolerate
from ..guard.preflight import LaunchFacts, launch_facts
from ..model import SEVERITIES
from ..model.words import how_many

REPORT_NAME = "report.json"
PREFIX = "ncclnb-survey"
_ARRIVED = "arrived"
_ENTRY = "entry/"


class SurveyUsageError(InputError):
    """Bad arguments, or no launcher variables: one line, exit 2."""


def one_line(exc: BaseException) -> str:
    text = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    return (text[0] if text else type(exc).__name__)[:300]


# --- this rank's facts ---------------------------------------------------------------


def own_entry(facts: LaunchFacts) -> dict:
    """This process's :class:`~ncclnb.model.RankEntry` fields, as a dict.
    CUDA facts (device, UUID, bus id) only where torch already created a
    context (a job that set its device before calling the survey): the survey
    never creates one. Bus id, NUMA node and NIC: :mod:`ncclnb.survey.rankfacts`."""
    from ..model.cpulist import format_cpulist
    from .rankfacts import rank_facts

    try:
        affinity = format_cpulist(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = None
    entry = {
        "rank": facts.rank,
        "host": socket.gethostname() or "unknown",
        "local_rank": facts.local_rank,
        "world_size": facts.world_size,
        "node_rank": facts.node_rank,
        "pid": os.getpid(),
        "cpu_affinity": affinity,
    }
    entry.update(rank_facts(sys.modules.get("torch"), affinity))
    return entry


def node_labels(entries) -> dict:
    """(hostname, node rank) -> the host name used in the report: the
    hostname, or ``HOST#node<N>`` where one hostname has several node ranks."""
    node_ranks: dict = {}
    for e in entries:
        node_ranks.setdefault(e["host"], set()).add(e.get("node_rank"))
    labels = {}
    for host, nrs in node_ranks.items():
        for nr in nrs:
            labels[(host, nr)] = host if len(nrs) == 1 else f"{host}#node{'?' if nr is None else nr}"
    return labels


def _key(entry: dict) -> tuple:
    return entry["host"], entry.get("node_rank")


# --- the store ------------------------------------------------------------------------


def _store(dist, facts: LaunchFacts, environ: Mapping, timeout: float):
    agent = environ.get("TORCHELASTIC_USE_AGENT_STORE", "").lower() == "true"
    store = dist.TCPStore(
        facts.master_addr,
        facts.master_port,
        None,
        facts.rank == 0 and not agent,
        datetime.timedelta(seconds=timeout),
        wait_for_workers=False,
    )
    run = "/".join(x for x in (environ.get("TORCHELASTIC_RUN_ID"), environ.get("TORCHELASTIC_RESTART_COUNT")) if x)
    return dist.PrefixStore(f"{PREFIX}/{run}" if run else PREFIX, store)


def _register(store, entry: dict) -> None:
    seq = store.add(_ARRIVED, 1)
    store.set(f"{_ENTRY}{seq}", json.dumps(entry, sort_keys=True))


def registry(store) -> list:
    """Every entry registered so far (never waits for one that is not there)."""
    out = []
    try:
        count = store.add(_ARRIVED, 0)
        for seq in range(1, count + 1):
            key = f"{_ENTRY}{seq}"
            if store.check([key]):
                value = json.loads(bytes(store.get(key)).decode("utf-8"))
                if isinstance(value, dict) and isinstance(value.get("rank"), int) and isinstance(value.get("host"), str):
                    out.append(value)
    except Exception:
        pass
    return out


# --- the survey -------------------------------------------------------------------------


def _check_usage(facts: LaunchFacts, timeout: float) -> None:
    if not 1 <= timeout <= 3600:
        raise SurveyUsageError(f"--timeout must be between 1 and 3600 seconds, got {timeout:g}")
    if facts.rank is None or facts.world_size is None:
        raise SurveyUsageError(
            "no launcher told this process its rank and world size (RANK/WORLD_SIZE, SLURM_PROCID/SLURM_NTASKS or "
            "OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE): run it under torchrun, srun or mpirun, or use "
            "`ncclnb survey --local --nproc G`"
        )
    if facts.world_size < 1:
        raise SurveyUsageError(f"WORLD_SIZE is {facts.world_size}: a job has at least one rank")
    if not facts.master_addr or facts.master_port is None:
        raise SurveyUsageError(
            "MASTER_ADDR and MASTER_PORT must name rank 0's host and a free port (torchrun sets them; under srun or "
            "mpirun export them, e.g. MASTER_ADDR=$(scontrol show hostnames | head -1) MASTER_PORT=29500)"
        )


def run_survey(
    out_dir: str,
    *,
    timeout: float = 120.0,
    environ: Optional[Mapping] = None,
    out: Optional[TextIO] = None,
    err: Optional[TextIO] = None,
    link_test: bool = True,
    sizes: Optional[tuple] = None,
    iters: Optional[int] = None,
) -> int:
    """Run this rank's part of the survey; rank 0 writes ``out_dir/report.json``.

    Returns the exit status: 0 the report was written with no error findings,
    1 error findings, a partial report, or (any rank but 0) this rank could
    not take part. Raises :class:`SurveyUsageError` for bad arguments. Call it
    in a process of its own (``python -m ncclnb survey``): it creates the
    default process group, gloo, and after a gloo failure the process should
    leave with ``os._exit`` (the CLI does). ``link_test=False`` skips the
    link test; ``sizes`` ((min, max, factor) bytes per rank) and ``iters``
    override its defaults (:data:`ncclnb.survey.links.DEFAULTS`)."""
    from .links import LinkPlan, check_iters

    environ = os.environ if environ is None else environ
    facts = launch_facts(environ)
    _check_usage(facts, float(timeout))
    plan = LinkPlan(sizes=tuple(sizes) if sizes is not None else None, iters=check_iters(iters)) if link_test else None
    survey = _Survey(out_dir, float(timeout), facts, environ, out or sys.stdout, err or sys.stderr, plan)
    watchdog = threading.Timer(survey.deadline_s, survey.expire)
    watchdog.daemon = True
    watchdog.start()
    try:
        return survey.run()
    finally:
        watchdog.cancel()


class _Survey:
    def __init__(self, out_dir, timeout, facts, environ, out, err, link_plan=None):
        self.out_dir, self.timeout, self.facts, self.environ = out_dir, timeout, facts, environ
        self.link_plan = link_plan  # None: no link test
        self.links: list = []  # rank 0: the LinkTest dicts
        self.out, self.err = out, err
        self.entry = own_entry(facts)
        self.deadline_s = 4 * timeout + 30
        self.started = time.monotonic()
        self.phase = "connecting to the store"
        self.store = None
        self.entries: Optional[list] = None
        self.snapshots: list = []
        self.lock = threading.Lock()
        self.done = False

    @property
    def rank(self) -> int:
        return self.facts.rank

    def run(self) -> int:
        from ..collectors.torchinfo import import_torch

        if "torch" not in sys.modules:  # c10d's C++ warnings would bury the one line a failing rank prints
            os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
        torch = import_torch()
        import torch.distributed as dist

        f, t = self.facts, self.timeout
        if dist.is_initialized():
            raise SurveyUsageError(
                "a process group already exists in this process: run the survey as its own "
                "process (python -m ncclnb survey), with the job's launcher"
            )
        if self.rank == 0:
            try:
                os.makedirs(self.out_dir, exist_ok=True)
            except OSError as exc:  # the user's --out: a file, no permission
                raise path_error(exc, self.out_dir) from None
        try:
            self.store = _store(dist, f, self.environ, t)
            _register(self.store, self.entry)
        except Exception as exc:
            self.store = None
            return self.fail(
                f"cannot reach the survey's store at {f.master_addr}:{f.master_port} within {t:g} s "
                f"({one_line(exc)}): is rank 0 running, and is MASTER_ADDR its address?"
            )
        self.phase = "joining the gloo group"
        try:
            dist.init_process_group(
                "gloo",
                store=dist.PrefixStore("pg", self.store),
                rank=f.rank,
                world_size=f.world_size,
                timeout=datetime.timedelta(seconds=t),
            )
        except Exception as exc:
            if f.rank >= f.world_size or f.rank < 0:
                return self.fail(
                    f"RANK {f.rank} >= WORLD_SIZE {f.world_size}: this process is outside the world "
                    f"its launcher declared; gloo refuses it ({one_line(exc)})"
                )
            return self.fail(f"the gloo group of {f.world_size} ranks did not form within {t:g} s ({one_line(exc)})")
        from ..repro.workers._facts import gather_json

        cpu = torch.device("cpu")
        try:
            self.phase = "exchanging rank entries"
            entries = gather_json(cpu, self.entry)
            self.entries = entries
            mine = _key(self.entry)
            label = node_labels(entries)[mine]
            collector = min(e["rank"] for e in entries if _key(e) == mine)
            snap = None
            if collector == self.rank:
                self.phase = "collecting this node's snapshot"
                snap = self._collect(label)
                if self.rank == 0:
                    self.snapshots = [snap]
            self.phase = "gathering node snapshots"
            snaps = gather_json(cpu, snap, dst=0)
        except Exception as exc:
            return self.fail(f"{self.phase} failed after the group formed ({one_line(exc)})")
        if self.rank == 0:
            self.snapshots = [s for s in snaps if isinstance(s, dict)]
        if self.link_plan is not None:
            self._link_test(torch, dist, entries, node_labels(entries))
        if self.rank != 0:
            return 0
        return self.finish(None)

    def _link_test(self, torch, dist, entries, labels) -> None:
        from .links import run_link_test

        def phase(text):
            self.phase = text

        try:
            link = run_link_test(
                torch,
                dist,
                rank=self.rank,
                world=self.facts.world_size,
                entries=entries,
                labels=labels,
                timeout=self.timeout,
                plan=self.link_plan,
                environ=self.environ,
                local_rank=self.facts.local_rank,
                phase=phase,
            )
        except Exception as exc:  # the facts still make the report; under NCCLNB_STRICT a bug (not gloo's failure) raises
            tolerate(exc, (RuntimeError, OSError))
            link = {
                "backend": "unknown",
                "device": "unknown",
                "world_size": self.facts.world_size,
                "nodes": len(set(labels.values())),
                "iterations": 0,
                "missing": {"link test": f"failed at '{self.phase}' ({one_line(exc)})"},
            }
        if self.rank == 0 and link is not None:
            self.links = [link]

    def _collect(self, label: str) -> dict:
        from ..collectors import collect

        return collect(hostname=label, torch_timeout=min(15.0, self.timeout)).to_dict()

    def fail(self, why: str) -> int:
        if self.rank == 0:
            return self.finish(why)
        print(f"ncclnb survey (rank {self.rank}): {why}", file=self.err, flush=True)
        return 1

    def expire(self) -> None:
        """The watchdog: nothing may outlive the survey's deadline."""
        why = f"still {self.phase} after {self.deadline_s:g} s (4 x --timeout + 30 s); stopped by the watchdog"
        if self.rank == 0:
            if not self.lock.acquire(blocking=False):
                return  # the main thread is writing the report right now
            self.lock.release()
            code = self.finish(why)
        else:
            print(f"ncclnb survey (rank {self.rank}): {why}", file=self.err, flush=True)
            code = 1
        try:
            self.out.flush()
            self.err.flush()
        finally:
            os._exit(code)

    # --- rank 0: the report --------------------------------------------------------

    def finish(self, partial: Optional[str]) -> int:
        with self.lock:
            if self.done:
                return 1
            self.done = True
            return self._finish(partial)

    def _finish(self, partial: Optional[str]) -> int:
        from ..checks import SEVERITY_ORDER, check
        from ..model import ClusterReport, LinkTest, NodeSnapshot, RankEntry
        from ..model._serde import from_dict

        f = self.facts
        registered = registry(self.store) if self.store is not None else []
        entries = list(self.entries) if self.entries is not None else []
        seen = {(e["host"], e.get("pid")) for e in entries}
        if self.entries is None and (self.entry["host"], self.entry["pid"]) not in {
            (e["host"], e.get("pid")) for e in registered
        }:
            entries.append(self.entry)
            seen.add((self.entry["host"], self.entry["pid"]))
        outside = []  # registered but not in the group: beyond the world size, or never joined it
        for e in registered:
            if (e["host"], e.get("pid")) not in seen:
                entries.append(e)
                seen.add((e["host"], e.get("pid")))
                if self.entries is not None:
                    outside.append(e)
        entries.sort(key=lambda e: (e["rank"], e["host"], e.get("pid") or 0))
        labels = node_labels(entries)
        if not self.snapshots:
            try:
                self.snapshots = [self._collect(labels[_key(self.entry)])]
            except Exception as exc:  # collect() never fails on a machine's oddities: this is a bug (raised under NCCLNB_STRICT)
                tolerate(exc)
                self.snapshots = []
        snapshots = tuple(NodeSnapshot.from_dict(s) for s in self.snapshots)
        known = {f.name for f in dataclasses.fields(RankEntry)}  # a peer on another ncclnb may send more
        ranks = tuple(RankEntry(**{k: v for k, v in dict(e, host=labels[_key(e)]).items() if k in known}) for e in entries)
        present = {e["rank"] for e in entries}
        missing = sorted(set(range(f.world_size)) - present)
        description = self._describe(entries, labels, partial, missing, outside)
        links = tuple(from_dict(LinkTest, link) for link in self.links)
        report = ClusterReport(
            snapshots=snapshots,
            ranks=ranks,
            description=description,
            links=links,
            captured_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        )
        findings = sorted(check(report), key=lambda x: (SEVERITY_ORDER[x.severity], -x.confidence))
        report = dataclasses.replace(report, findings=tuple(findings))
        path = os.path.join(self.out_dir, REPORT_NAME)
        _write_atomically(path, json.dumps(report.to_dict(), indent=1, ensure_ascii=False))
        self._summary(report, findings, partial, missing, path)
        errors = sum(x.severity == "error" for x in findings)
        return 1 if partial or errors else 0

    def _describe(self, entries, labels, partial, missing, outside) -> str:
        from ..model.words import span

        f = self.facts
        nodes = sorted(set(labels.values()))
        parts = [
            f"Gathered by `ncclnb survey` over its own gloo group (launcher: {f.launcher}; WORLD_SIZE "
            f"{f.world_size} as rank 0 saw it; --timeout {self.timeout:g} s): {how_many(len(entries), 'rank')} on "
            f"{how_many(len(nodes), 'node')}; one snapshot per node, collected by its lowest rank."
        ]
        shared = sorted({host for (host, _), label in labels.items() if label != host})
        for host in shared:
            named = sorted(label for (h, _), label in labels.items() if h == host)
            parts.append(
                f"Hostname {host} reported several node ranks, named {', '.join(named)}: they may be one "
                "machine (two launchers side by side share its GPUs) or machines with the same hostname."
            )
        if partial:
            parts.append(f"PARTIAL: {partial}.")
            if missing:
                who = "Rank" if len(missing) == 1 else "Ranks"
                parts.append(
                    f"{who} {span(missing, 24)} of 0-{f.world_size - 1} never registered with the "
                    "survey (not started, or died before joining)."
                )
            if self.entries is None and entries:
                who = "Rank" if len(entries) == 1 else "Ranks"
                parts.append(
                    f"{who} {span((e['rank'] for e in entries), 24)} registered (their facts are below); "
                    "the group's exchange did not complete, so node snapshots other than rank 0's are "
                    "absent."
                )
        if outside:
            one = len(outside) == 1
            parts.append(
                f"{'Rank' if one else 'Ranks'} {span((e['rank'] for e in outside), 24)} registered but "
                f"{'is' if one else 'are'} not in the group "
                "(outside WORLD_SIZE, or duplicates)."
            )
        return " ".join(parts)

    def _summary(self, report, findings, partial, missing, path) -> None:
        from ..model.words import span

        seconds = time.monotonic() - self.started
        lines = [
            f"ncclnb survey: {how_many(len(report.ranks), 'rank')} on {how_many(len(report.snapshots), 'node snapshot')}, "
            f"WORLD_SIZE {self.facts.world_size}, launcher {self.facts.launcher}, gathered over gloo in "
            f"{seconds:.1f} s"
        ]
        if partial:
            lines.append(
                f"  PARTIAL  {partial}"
                + (f"; missing {'rank' if len(missing) == 1 else 'ranks'} {span(missing, 24)}" if missing else "")
            )
        lines.extend(link_lines(report.links, findings))
        for x in findings:
            if x.rule != "link_busbw_low":  # link_lines gave it its own line
                lines.append(f"  {x.severity.upper():8} {x.title}")
        counts = {s: sum(x.severity == s for x in findings) for s in SEVERITIES}
        tally = f"{how_many(counts['error'], 'error')}, {how_many(counts['warning'], 'warning')}, {counts['info']} info"
        if partial:
            verdict = f"PARTIAL REPORT ({tally}): fix the launch, then run the survey again"
        elif counts["error"]:
            verdict = f"NOT READY: {tally}"
        else:
            verdict = f"READY: no error findings ({tally})"
        lines.append(f"verdict: {verdict}")
        lines.append(f"report: {path}  (evidence and fixes: ncclnb check {path}; in a notebook: ncclnb.load(...))")
        print("\n".join(lines), file=self.out, flush=True)


def link_lines(links, findings) -> list:
    """The summary's lines about the link test: per LinkTest, the busbw of
    each collective at the largest size measured, the slowest pair, what was
    not measured; then the bandwidth verdict (the link_busbw_low finding's
    title, as the check wrote it)."""
    from ..model.words import span
    from ..model.bandwidth import size_text

    lines = []
    for link in links:
        head = (
            f"  links    {link.backend} on {link.device}, {how_many(link.world_size, 'rank')} on {how_many(link.nodes, 'node')}"
        )
        largest: dict = {}
        for m in link.results:
            if m.size_bytes >= largest.get(m.collective, (0, 0))[0]:
                largest[m.collective] = (m.size_bytes, m.busbw_gbps)
        if largest:
            parts = [f"{c} {bw:.3g}" for c, (_, bw) in largest.items()]
            size = max(sz for sz, _ in largest.values())
            head += f": busbw at {size_text(size)} (GB/s) " + ", ".join(parts)
        lines.append(head)
        if link.pairs:
            slow = min(link.pairs, key=lambda p: p.busbw_gbps)
            lines.append(
                f"  links    pair ring: {how_many(len(link.pairs), 'pair')}, slowest rank {slow.src_rank} "
                f"({slow.src_host}) -> rank {slow.dst_rank} ({slow.dst_host}) {slow.busbw_gbps:.3g} GB/s"
            )
        if link.transports:
            kinds = sorted({t.transport for t in link.transports})
            lines.append(f"  links    NCCL transports: {', '.join(kinds)}")
        for part, why in link.missing.items():
            lines.append(f"  links    not measured: {part}: {why}")
    for f in findings:
        if f.rule == "link_busbw_low":
            lines.append(f"  {f.severity.upper():8} bandwidth: {f.title}" + (f" (ranks {span(f.ranks, 24)})" if f.ranks else ""))
    return lines


def _write_atomically(path: str, text: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".ncclnb-", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
