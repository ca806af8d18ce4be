"""Stage 4 of :func:`~ncclnb.doctor.diagnose`: the findings, ranked.

From what the matcher kept (:mod:`ncclnb.doctor.match`) and the rank rows
folded by rank (:mod:`ncclnb.doctor.rank_table`): the cross-rank
conclusions (:mod:`ncclnb.doctor.reason`), a finding per signature that
matched, its alternative readings, the unknown NCCL WARNs, candidate causes
of a generic error, notes on the inputs and the flight recorder's findings
reconciled with the logs, each in a tier; then :func:`order` sorts them,
most likely root cause first, one finding per rule.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Optional

from ..model import Evidence, Finding
from ..model.categories import TABLE as CATEGORY
from ..model.words import how_many
from . import flight_recorder as fr
from .cards import agree, prose
from .kb import Signature
from .match import INCIDENT_RULES, MAX_EVIDENCE, MAX_TEXT, P2P_WAIT_RULES, Hits, Matcher
from .normalize import MAX_DIGITS, num
from .priors import CANDIDATE_KIND_TITLES, preferred_category, rank_candidates
from .rank_table import MAX_BLAMED, MAX_RANKS
from .reason import (
    P2P_OPS,
    coll_trace_findings,
    duplicate_claims,
    launcher_findings,
    out_of_range_findings,
    plan_findings,
    ib_device_findings,
    version_findings,
    wait_findings,
    watchdog_findings,
    world_size_findings,
)

if TYPE_CHECKING:
    from .core import Inputs

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")

# categories whose errors say a rank waited for a peer, not that it failed by itself
_WAITING = {"collective_desync", "slow_rank_timeout", "p2p_pairing", "rendezvous_unreachable", "unknown"}
# cross-rank findings that explain a watchdog timeout (the incident's card when there is one)
_INCIDENT_CARDS = (
    "watchdog_rank_behind",
    "watchdog_ranks_ahead",
    "watchdog_work_offset",
    "watchdog_uneven_data",
    "watchdog_desync",
    "watchdog_seq_differs",
    "watchdog_rank_missing",
    "watchdog_all_waiting",
    "watchdog_alltoall_unpaired",
    "watchdog_p2p_cycle",
    "watchdog_p2p_batch",
    "watchdog_p2p_beside_collective",
    "traceback_rank_missing",
)
# cross-rank findings that name what diverged or did not pair (not only who waited): a suspect does not outrank them
_NAMES_THE_DIVERGENCE = (
    "watchdog_desync",
    "watchdog_uneven_data",
    "watchdog_seq_differs",
    "watchdog_rank_behind",
    "watchdog_ranks_ahead",
    "watchdog_work_offset",
    "watchdog_alltoall_unpaired",
    "watchdog_p2p_cycle",
    "watchdog_p2p_batch",
    "watchdog_p2p_beside_collective",
)
# cross-rank findings that name ranks that never reached the collective the others waited in
_NEVER_ARRIVED = ("watchdog_rank_missing", "traceback_rank_missing")
# the op of a watchdog timeout that is point-to-point (reason.P2P_OPS less the batch, which may hold collectives)
_P2P_OPTYPE = re.compile(r"OpType=(?:%s)\b" % "|".join(sorted(P2P_OPS - {"COALESCED"})), re.ASCII)
# "Process 55120 has 7.21 GiB memory in use" in torch's CUDA OOM message (2.1+)
_OOM_PROCESS = re.compile(r"Process ([0-9]{1,9}) has [0-9.]{1,12} [KMGT]iB memory in use", re.ASCII)
EARLY_SEQ = 8  # a timeout at this sequence number or below is in the job's first collectives
# cross-rank findings from where the ranks' tracebacks say they waited (reason.wait_findings)
_TRACEBACK_CARDS = ("p2p_wait_beside_collective", "traceback_p2p_cycle", "traceback_desync", "traceback_rank_missing")
# ranking tiers, most likely root cause first (a rank's own error that came first leads all)
_TIER_FIRST_FAILURE = -1
_TIER_ROOT_ERROR, _TIER_ROOT_WARNING, _TIER_ALTERNATIVE, _TIER_CONSEQUENCE, _TIER_INFO, _TIER_BENIGN = range(6)

# the generic wrappers that say something failed, not why: the candidate causes they get when nothing else is known
_GENERIC_KIND = {
    "nccl_system_error": "system",
    "nccl_internal_error": "internal",
    "nccl_remote_error": "remote",
    "nccl_unhandled_cuda_error": "cuda",
    "connection_reset_by_peer": "reset",
    "nccl_invalid_usage": "invalid_usage",
    "cuda_kernel_fault": "kernel_fault",
}
MAX_CANDIDATES = 4  # candidate causes shown for one generic error
MIN_CANDIDATE_SCORE = 0.13  # below this (its base weight, lowered by what the log shows) a candidate is not shown


def rank_findings(matched: Matcher, inputs: Inputs, dumps: list, world_size: Optional[int]) -> tuple[list, list]:
    """(findings most likely root cause first, the flight recorder's rank statuses) of what
    ``matched`` kept, once its rows are folded by rank; ``inputs`` says what was not read,
    ``world_size`` counts the ranks of the job (comm lines and dumps)."""
    return _Ranker(matched, inputs, world_size).rank(dumps)


def order(findings: list) -> list[Finding]:
    """``findings`` as (tier, confidence, first line, finding) sorted most likely first, one per rule,
    and an alternative only where no finding in its own right names its category."""
    ordered: list[Finding] = []
    seen: set = set()
    for _, _, _, f in sorted(findings, key=lambda t: (t[0], -t[1], t[2])):
        key = (f.rule, f.category) if f.alternative_of else f.rule  # one finding per rule, one alternative per category
        if key in seen:
            continue
        if f.alternative_of and any(o.category == f.category and not o.alternative_of for o in ordered):
            continue  # an alternative already covered by a real finding above it
        seen.add(key)
        ordered.append(f)
    ordered = [
        f for f in ordered if not (f.alternative_of and any(o.category == f.category and not o.alternative_of for o in ordered))
    ]
    return ordered


class _Ranker:
    """What the matcher kept, read as findings in tiers."""

    def __init__(self, matched: Matcher, inputs: Inputs, world_size: Optional[int]):
        self.hits = matched.hits
        self.state = matched.state
        self.context = matched.context
        self.warns = matched.warns
        self.table = matched.rows
        self.rows = matched.rows.rows
        self.world_size = world_size
        self.skipped_dumps = inputs.skipped_dumps
        self.truncated = inputs.truncated
        self.skipped = inputs.skipped
        self.changed = inputs.changed

    def rank(self, dumps: list) -> tuple[list, list]:
        """(findings in order, the dumps' rank statuses)."""
        findings = self._from_logs(dumps)
        findings += self._notes()
        statuses = self._with_recorder(findings, dumps)
        self._one_card_per_incident(findings)
        return order(findings), statuses

    def _one_card_per_incident(self, findings: list) -> None:
        """One incident, one card: when the most likely root cause is an error, the errors and warnings
        ranked as its consequences (the other ranks' timeouts, the connections its failure closed, a
        cross-rank finding that follows from it) are folded into it, their lines its evidence, their
        titles named in its cause; the card names the ranks of the job that printed no error. In place."""
        own = [t for t in findings if not t[3].alternative_of]
        if not own:
            return
        root_at = findings.index(min(own, key=lambda t: (t[0], -t[1], t[2])))
        tier, conf, first, root = findings[root_at]
        if tier not in (_TIER_FIRST_FAILURE, _TIER_ROOT_ERROR) or root.severity != "error":
            return
        after = [
            t[3]
            for t in sorted(findings, key=lambda t: (t[0], -t[1], t[2]))
            if not t[3].alternative_of
            and t[3] is not root
            and t[3].severity in ("error", "warning")
            and (t[0] == _TIER_CONSEQUENCE or self._after_own_timeout(t[3].rule))
        ]
        if root.rule in self.hits and self._waiting(root.rule):
            # a root that is a line saying a rank waited (a timeout), not a cross-rank reading of why, takes in
            # a wrapper only when every line of it came right after a timeout: one far from any may be a
            # failure of its own
            after = [f for f in after if self._in_incident(f.rule)]
        incident = bool(after) or root.rule in _INCIDENT_CARDS or root.rule in INCIDENT_RULES or bool(self.state.watchdog)
        if not incident:
            return
        gone = {f.rule for f in after}
        evidence, seen = list(root.evidence), {(e.source, e.line) for e in root.evidence}
        room = max(len(evidence), MAX_EVIDENCE) + 3
        for f in after:
            for e in f.evidence[:2]:
                if len(evidence) < room and (e.source, e.line) not in seen:
                    seen.add((e.source, e.line))
                    evidence.append(e)
        cause = root.cause
        if after:
            cause += " What followed from it in this job: " + "; ".join(_sentence(f.title) for f in after) + "."
        title = root.title
        # a timeout's printers waited for the ranks that printed nothing: the card names them
        timeout = (
            root.rule in _INCIDENT_CARDS
            or root.rule in INCIDENT_RULES
            or root.rule.startswith("fr.")
            or bool(self.state.watchdog)
            or any(f.category in ("slow_rank_timeout", "collective_desync") for f in after)
        )
        silent = sorted(set(self._silent_ranks()) - set(root.ranks)) if timeout else []
        if silent:
            title += f"; rank {_span(silent)} printed no error"
        card = replace(root, title=title, cause=cause, evidence=tuple(evidence))
        findings[root_at] = (tier, conf, first, card)
        findings[:] = [t for t in findings if t[3] is card or (t[3].rule not in gone and t[3].alternative_of not in gone)]

    def _in_incident(self, rule: str) -> bool:
        """Is ``rule`` a finding the ranking made (no signature of its own), or a signature whose every line
        was printed as part of a watchdog timeout?"""
        h = self.hits.get(rule)
        return h is None or not h.sig.consequence or h.in_incident == h.count

    def _after_own_timeout(self, rule: str) -> bool:
        """Did every rank that printed ``rule`` print it after its own watchdog timeout (NCCL's abort of the
        timed-out communicator then fails a proxy or a socket on the way down)?"""
        h = self.hits.get(rule)
        if h is None or not h.printers or rule in INCIDENT_RULES:
            return False
        ranks = {self.table.resolve(k) for k in h.printers}
        rows = [self.rows.get(r) for r in ranks]
        return all(isinstance(r, int) for r in ranks) and all(
            row is not None and row.first_rule in INCIDENT_RULES and row.first_rule != rule for row in rows
        )

    def _silent_ranks(self) -> list:
        """Ranks of the job (the rows, the logs named after a rank, the world size) that printed no error line."""
        size = self.world_size if self.world_size and self.world_size <= MAX_RANKS else 0
        job = {r for r in self.table.present() if isinstance(r, int)} | set(range(size))
        erred = {r for r, row in self.rows.items() if isinstance(r, int) and row.first_error}
        return sorted(job - erred)[:MAX_BLAMED]

    def _from_logs(self, dumps: list) -> list:
        """The cross-rank conclusions, the signatures' findings and their alternatives, the unknown
        WARNs and, when none of them names a cause, the candidate causes: as (tier, confidence, first, finding)."""
        findings: list[tuple[int, float, tuple, Finding]] = []
        known_ranks = {k for k in self.rows if isinstance(k, int)}
        reasoned = (
            watchdog_findings(self.state, self.world_size, self.table.present())
            + version_findings(self.state, {r: (row.host, row.pid) for r, row in self.rows.items() if isinstance(r, int)})
            + ib_device_findings(self.state)
            + world_size_findings(self.state, known_ranks)
            + launcher_findings(self.state, self.world_size or self._store_expected())
            + out_of_range_findings(self.state)
            + plan_findings(self.state, fr.ranks_ahead(dumps) if dumps else frozenset())
            + wait_findings(self.state, self.table.present())
            + coll_trace_findings(self.state)
        )
        reasoned_categories = {f.category for f in reasoned}
        settled = bool(reasoned_categories - _WAITING)
        for f in reasoned:
            findings.append((_TIER_ROOT_ERROR, f.confidence, (-1,), f))

        any_error = any(h.sig.severity == "error" and not h.sig.benign for h in self.hits.values())
        facts = self._facts()
        card, folded = self._incident(reasoned)
        for h in self.hits.values():
            sig = h.sig
            if h in folded:
                continue
            f = self._finding(h, any_error)
            tier = _tier(sig, f)
            if sig.id == "watchdog_timeout" and reasoned_categories & {"collective_desync", "slow_rank_timeout"}:
                tier = _TIER_CONSEQUENCE  # the cross-rank finding says more than one timeout line
            others = sig.also
            # the rest of the log settles the category, unless a cross-rank finding names a cause of its own (a
            # version or world-size split); one that only says who waited (the timeouts) settles nothing here
            cat = preferred_category(sig.id, sig.category, sig.also, facts) if sig.also and not settled else sig.category
            if cat != sig.category:  # another line of the log settles which of its categories holds
                others = (sig.category,) + tuple(c for c in sig.also if c != cat)
                f = replace(
                    f,
                    category=cat,
                    docs=CATEGORY[cat].docs,
                    title=f.title + f" (the rest of the log points to {CATEGORY[cat].title})",
                )
            findings.append((tier, f.confidence, h.first, f))
            if tier in (_TIER_ROOT_ERROR, _TIER_ROOT_WARNING):
                for alt in others:
                    if alt == "unknown":
                        continue  # (a signature of no category of its own that the log settled: no alternative to offer)
                    findings.append((_TIER_ALTERNATIVE, round(f.confidence * 0.6, 3), h.first, _alternative(f, alt)))
        if folded:
            for i, (tier, conf, first, g) in enumerate(findings):
                if g.rule == card and not g.alternative_of:
                    findings[i] = (tier, conf, first, self._fold(g, folded))
                    break
        stuck = self._stuck_together()
        if stuck:
            # every rank is in the collective: none is late, so "all waiting" explains nothing; the candidate causes
            # of a hang of the first transfers come first, the timeouts after them
            for i, (tier, conf, first, g) in enumerate(findings):
                if g.rule == "watchdog_all_waiting" and tier == _TIER_ROOT_ERROR:
                    findings[i] = (_TIER_CONSEQUENCE, conf, first, g)
        if "finished" in facts:
            self._left_the_loop(findings, "a rank says it left its loop: the others wait in a collective it never calls")
        elif "rank_guarded_collective" in facts:
            self._left_the_loop(findings, "the code calls a collective in a branch only rank 0 takes")
        self._suspects_of_an_early_hang(findings, facts)
        self._store_bound_anyway(findings)
        self._first_failure(findings)
        for f, first in self._warn_findings():
            findings.append((_TIER_ROOT_WARNING, f.confidence, first, f))
            for alt in self.warns[f.category][3]:
                findings.append((_TIER_ALTERNATIVE, round(f.confidence * 0.6, 3), first, _alternative(f, alt)))
        known = any(
            t in (_TIER_FIRST_FAILURE, _TIER_ROOT_ERROR, _TIER_ROOT_WARNING) and g.category != "unknown"
            for t, _, _, g in findings
        )
        if not known:
            for f, first in self._candidates(facts, stuck):
                findings.append((_TIER_ALTERNATIVE, f.confidence, first, f))
        return findings

    @staticmethod
    def _left_the_loop(findings: list, why: str) -> None:
        """The log says a rank ended its loop (early stopping, training completed), or its code calls a
        collective only rank 0 reaches, while the ranks that report timed out together in a collective, or
        with ranks missing from them, or another finding of a slow rank leads (the watchdog stuck, a timeout): the
        ranks' collectives differ (a stop decided on one rank's own numbers, a metric synced under
        ``if is_global_zero``). That finding then says a desync (``why``), the slow rank it named by default second."""
        for i, (tier, conf, first, g) in enumerate(findings):
            waiting = g.rule in ("watchdog_all_waiting", "watchdog_rank_missing") or g.category == "slow_rank_timeout"
            if waiting and tier == _TIER_ROOT_ERROR and not g.alternative_of:
                findings[i] = (
                    tier,
                    conf,
                    first,
                    replace(
                        g,
                        category="collective_desync",
                        docs=CATEGORY["collective_desync"].docs,
                        title=g.title + f" ({why})",
                    ),
                )
                findings.append((_TIER_ALTERNATIVE, round(conf * 0.6, 3), first, _alternative(g, g.category)))
                return

    def _suspects_of_an_early_hang(self, findings: list, facts: set) -> None:
        """A job that hung in its first collectives (every watchdog timeout at a sequence number up to
        EARLY_SEQ), or stopped after NCCL's set-up with no error at all, beside a suspect the log shows
        (PCIe ACS or the IOMMU on, an unroutable interface, a topology file from the environment, a tiny
        /dev/shm): the suspect explains a hang of the first transfers, which a rank busy elsewhere or one
        that never arrived (read from the timeouts alone) does not show. It ranks above those readings and
        the bare timeout lines; not above a cross-rank finding that names what diverged. In place."""
        recs = self.state.watchdog
        # or a hang with no error at all that someone stopped after NCCL's set-up
        silent_hang = self._hang_with_no_error(facts) and {"stopped", "init_seen"} <= facts
        # or a watchdog that itself got stuck (heartbeat monitor) before any collective timed out: NCCL hung
        stuck_watchdog = not recs and "watchdog_heartbeat_timeout" in self.hits
        if not (silent_hang or stuck_watchdog) and (not recs or max(r.seq for r in recs.values()) > EARLY_SEQ):
            return
        suspects = [
            i
            for i, (_, _, _, f) in enumerate(findings)
            if not f.alternative_of and f.rule in self.hits and _explains_a_stuck_transfer(self.hits[f.rule].sig, silent_hang)
        ]
        roots = [
            (c, f)
            for i, (t, c, _, f) in enumerate(findings)
            if t in (_TIER_FIRST_FAILURE, _TIER_ROOT_ERROR) and not f.alternative_of and i not in suspects
        ]
        if not suspects or any(f.category not in _WAITING or f.rule in _NAMES_THE_DIVERGENCE for _, f in roots):
            return
        # a process unsure of its own GPU (a barrier on a guessed device) is the weakest suspect: torch prints it
        # in many runs that work. It explains the hang only when nothing else can, not beside a suspect of the
        # transport nor when a rank is named that never reached the collective (the guess would stall them all)
        own_device = [i for i in suspects if self.hits[findings[i][3].rule].sig.category == "device_mapping"]
        if own_device and (len(own_device) < len(suspects) or any(f.rule in _NEVER_ARRIVED and f.ranks for _, f in roots)):
            suspects = [i for i in suspects if i not in own_device]
        above = min(0.9, max((c for c, _ in roots), default=0.5) + 0.05)
        for i in suspects:
            _, _, first, f = findings[i]
            # an error the transport printed is what hung; a setting that can make it hang comes after it
            conf = above if self.hits[f.rule].sig.suspect else round(above + 0.02, 3)
            findings[i] = (
                _TIER_ROOT_ERROR,
                conf,
                first,
                replace(f, severity="error", confidence=conf, title=f.title + " (and the job hung in its first collectives)"),
            )

    def _store_expected(self) -> Optional[int]:
        """The clients the store's server waited for ("N/M clients joined"): the world size it was given."""
        h = self.hits.get("store_clients_timeout")
        return num(h.groups.get("expected")) if h is not None else None

    def _store_bound_anyway(self, findings: list) -> None:
        """A bind of the store's port that failed (torch tries [::] first, then 0.0.0.0, and says so in
        warnings) while the store's server went on to wait for its clients: the server listened after all, so
        the port was not what stopped the job. Unless a line says it failed to listen on any address, the port
        finding goes below the causes, as a warning. In place."""
        port, server = self.hits.get("master_port_in_use"), self.hits.get("store_clients_timeout")
        if port is None or server is None or any("listen on any" in e.text for e in port.evidence):
            return
        for i, (tier, conf, first, f) in enumerate(findings):
            if f.rule == "master_port_in_use" and not f.alternative_of and tier <= _TIER_ROOT_WARNING:
                title = f.title + " (the store's server waited for its clients afterwards: it did listen)"
                findings[i] = (_TIER_CONSEQUENCE, conf, first, replace(f, severity="warning", title=title))

    def _notes(self) -> list:
        """Info findings on the inputs: dumps not read, files cut short, inputs skipped or changed."""
        findings: list = []
        if self.skipped_dumps:
            name, why = self.skipped_dumps[0]
            more = len(self.skipped_dumps) - 1
            findings.append(
                (
                    _TIER_INFO,
                    0.1,
                    (10**9,),
                    Finding(
                        rule="fr.dump_not_read",
                        category="unknown",
                        severity="info",
                        confidence=0.1,
                        evidence=tuple(Evidence(n, None, w) for n, w in self.skipped_dumps[:MAX_EVIDENCE]),
                        **prose("fr.dump_not_read", name=name, why=why, more=f" (and {more} more)" if more else ""),
                    ),
                )
            )
        for name, why in self.truncated:
            findings.append(
                (
                    _TIER_INFO,
                    0.1,
                    (10**9,),
                    Finding(
                        rule="input_truncated",
                        category="unknown",
                        severity="info",
                        confidence=0.1,
                        evidence=(Evidence(name, None, why[:MAX_TEXT]),),
                        **prose("input_truncated", name=name),
                    ),
                )
            )
        for f in self._input_notes():
            findings.append((_TIER_INFO, f.confidence, (10**9,), f))
        return findings

    def _with_recorder(self, findings: list, dumps: list) -> list:
        """The flight recorder's findings reconciled with the logs' and a rank claimed twice, into
        ``findings`` in place; returns the dumps' rank statuses."""
        statuses = []
        if dumps:
            fr_findings, statuses = list(fr.analyze_dumps(dumps)), list(fr.dump_rank_status(dumps))
            for f, tier in self._reconcile(fr_findings, findings):
                findings.append((tier, f.confidence, (-1,), f))
        self._fold_into_recorder(findings)
        for f in self._claimed_twice():
            findings.append((_TIER_ROOT_ERROR, f.confidence, (-1,), f))
            # two processes on one rank: the store port taken twice, the store waiting for the rank nobody
            # runs and the connections it breaks are what it causes
            for i, (tier, conf, first, g) in enumerate(findings):
                if g.category == "rendezvous_unreachable" and tier < _TIER_CONSEQUENCE:
                    findings[i] = (
                        _TIER_CONSEQUENCE,
                        conf,
                        first,
                        replace(g, title=g.title + f" (after rank {_span(f.ranks)} was claimed twice)"),
                    )
        return statuses

    def _incident(self, reasoned: list) -> tuple:
        """(rule of the card, [Hits folded into it]) for the watchdog timeout
        of this log: one incident is one card. The card is the cross-rank
        finding that explains the timeout when there is one, else the timeout
        line's own finding; folded into it are the other lines torch prints
        for the same timeout and the wrappers (DistBackendError, torchrun's
        ChildFailedError) whose every line came right after one of them."""
        card = next((f.rule for f in reasoned if f.rule in _INCIDENT_CARDS), None)
        card = card or next((r for r in INCIDENT_RULES if r in self.hits), None)
        if card is None:
            return None, []
        folded = [
            h
            for h in self.hits.values()
            if h.sig.id != card
            and (
                h.sig.id in INCIDENT_RULES
                or (
                    h.sig.consequence
                    and h.sig.category == "unknown"
                    and h.sig.id not in _GENERIC_KIND
                    and h.in_incident == h.count
                )
            )
        ]
        return card, folded

    def _first_failure(self, findings: list) -> None:
        """The ranks a cross-rank timeout finding blames (they never reached
        the collective) whose own log shows an error of their own (not a
        wait for a peer) failed first: that error is the cause, promoted
        and blaming them; the timeout finding becomes its consequence. In place."""
        for i, (tier, conf, first, f) in enumerate(findings):
            if f.rule not in _INCIDENT_CARDS or not f.ranks:
                continue
            crashed = {r: self.rows[r] for r in f.ranks if r in self.rows and not self._waiting(self.rows[r].first_rule)}
            if not crashed:
                continue
            rules = {row.first_rule for row in crashed.values()}
            for j, (tier_j, conf_j, first_j, g) in enumerate(findings):
                if g.rule in rules and not g.alternative_of and tier_j != _TIER_FIRST_FAILURE:
                    blamed = tuple(sorted(r for r, row in crashed.items() if row.first_rule == g.rule))
                    findings[j] = (
                        _TIER_FIRST_FAILURE,
                        max(conf_j, f.confidence),
                        first_j,
                        replace(g, ranks=blamed, title=g.title + f"; rank {_span(blamed)} failed first"),
                    )
            findings[i] = (_TIER_CONSEQUENCE, conf, first, replace(f, title=f.title + f" (after rank {_span(crashed)} failed)"))

    def _fold_into_recorder(self, findings: list) -> None:
        """gloo's send/recv timeouts are the waiting side of the incident that
        the flight recorder explains (a desync, a rank that never arrived or
        came late, a send/recv without its partner), or else by where the
        ranks' tracebacks say they waited (reason.wait_findings; dropped when
        the recorder speaks: it says the same with more): one card, with
        their lines as its evidence. In place."""

        def explains(t, rules=("fr.",)) -> bool:  # a card that explains why the others waited
            tier, _, _, g = t
            return (
                g.rule.startswith(rules)
                and tier <= _TIER_ROOT_WARNING
                and g.severity == "error"
                and g.category in ("collective_desync", "slow_rank_timeout", "p2p_pairing")
            )

        if any(explains(t) for t in findings):
            findings[:] = [t for t in findings if t[3].rule not in _TRACEBACK_CARDS]
        h = self.hits.get("gloo_op_timeout")
        card = next((i for i, t in enumerate(findings) if explains(t, ("fr.",) + _TRACEBACK_CARDS)), None)
        if h is None or card is None:
            return
        tier, conf, first, g = findings[card]
        findings[card] = (tier, conf, first, self._fold(g, [h]))
        findings[:] = [t for t in findings if t[3].rule != h.sig.id]  # its finding and its alternatives

    def _fold(self, card: Finding, folded: list) -> Finding:
        """``card`` with the evidence of the hits ``folded`` into it, its title naming the ranks that printed them."""
        evidence, seen = list(card.evidence), {(e.source, e.line) for e in card.evidence}
        room = max(len(evidence), MAX_EVIDENCE) + 3
        lines, printers = 0, set()
        for h in sorted(folded, key=lambda h: h.first):
            lines += h.count
            printers |= {r for r in (self.table.resolve(k) for k in h.printers) if isinstance(r, int)}
            for e in h.evidence:
                if len(evidence) < room and (e.source, e.line) not in seen:
                    seen.add((e.source, e.line))
                    evidence.append(e)
        who = f" from rank {_span(printers)}" if printers else ""
        return replace(
            card, evidence=tuple(evidence), title=card.title + f" (one incident: {lines} more timeout and wrapper lines{who})"
        )

    def _facts(self) -> set:
        """The facts of the run (priors.LogContext) and of what matched."""
        facts = self.context.facts(self.state.watchdog)
        if self.hits.keys() & {"barrier_device_unknown", "guessing_device_id"}:
            facts.add("device_unknown")
        if any(h.sig.category == "p2p_pairing" and not h.sig.consequence for h in self.hits.values()):
            facts.add("p2p_ops")
        if any(_ran_out(h) for h in self.hits.values()):
            facts.add("resource_exhausted")  # a system resource ran out (memory, threads, file descriptors)
        timeouts = [self.hits[rule] for rule in ("watchdog_timeout", "timeout_at_nccl_work") if rule in self.hits]
        if any(_P2P_OPTYPE.search(e.text) for h in timeouts for e in h.evidence):
            facts.add("p2p_timed_out")  # a send or a receive timed out
        if "p2p_matrix_not_supported" in self.hits:
            facts.add("p2p_denied")  # nvidia-smi's peer-to-peer matrix says the same as torch's answer would
        recs = self.state.watchdog
        if ("p2p_denied" in facts or "consumer_gpu" in facts) and recs and max(r.seq for r in recs.values()) <= EARLY_SEQ:
            facts.add("p2p_denied_early")
        nvls = self.hits.get("nvls_failure")
        if nvls is not None and any("out of memory" in e.text for e in nvls.evidence):
            facts.add("nvls_out_of_memory")  # CUDA's error 2 in NVLS's set-up: its memory did not fit
        ordinal = self.hits.get("invalid_device_ordinal")
        if ordinal is not None and 0 in {self.table.resolve(k) for k in ordinal.printers}:
            # GPU 0 always exists where any GPU is visible: a device index that fails on rank 0 is not
            # LOCAL_RANK (more processes than GPUs fail on the highest local ranks only)
            facts.add("rank0_bad_ordinal")
        oom = self.hits.get("cuda_oom")
        if oom is not None and any(len(set(_OOM_PROCESS.findall(e.text))) > 1 for e in oom.evidence):
            # torch's OOM message lists the processes holding memory on the GPU that ran out
            facts.add("processes_share_gpu")
        per_node = {v for opt in ("nproc-per-node", "ntasks-per-node") for v in self.state.launch.get(opt, {})}
        if not per_node and self.context.local_procs:
            per_node = {self.context.local_procs}
        if not per_node and any(v != "0" for v in self.context.single_views):
            # a process shown a single GPU that is not the node's first (a launcher's or Ray's per-process view),
            # with no count of processes per node against it: it has cuda:0 only, whatever its local rank
            facts.add("one_gpu_per_process")
        forced = 2  # the most processes the counts put on one GPU (two: the ways two ranks share one)
        if len(per_node) == 1 and self.context.node_gpus and "one_gpu_per_process" not in facts:
            # processes a node's launcher starts against the GPUs CUDA_VISIBLE_DEVICES lists (or Slurm gives it)
            # (processes each shown their own single GPU cannot be too many, however few of them the paste shows)
            procs = per_node.pop()
            facts.add("oversubscribed" if procs > self.context.node_gpus else "one_gpu_per_process")
            forced = max(forced, -(-procs // self.context.node_gpus))
        duplicate = self.hits.get("duplicate_gpu")
        if duplicate is not None:
            on: dict = {}
            for e in duplicate.evidence:
                for a, b, dev in _DUPLICATE_PAIR.findall(e.text):
                    on.setdefault(dev, set()).update((a, b))
            if any(len(ranks) > forced for ranks in on.values()):
                # more ranks on one GPU than the counts put there (three, where two would be a count's doing; four
                # tasks on a node Slurm gives one GPU all share it, whatever the code does): none set its device
                facts.add("ranks_pile_on_one_gpu")
        for h in self.hits.values():
            joined, expected = num(h.groups.get("joined")), num(h.groups.get("expected"))
            if joined is not None and expected is not None and joined > expected:
                facts.add("over_joined")  # more processes reached the store than the world size counts
        return facts

    def _warn_findings(self) -> list:
        """One low-confidence finding per category of the NCCL WARN lines no signature knows."""
        out = []
        for cat, (count, evidence, first, also, hosts, printers, where) in self.warns.items():
            ranks = tuple(sorted(r for r in {self.table.resolve(k) for k in printers} if isinstance(r, int)))[:MAX_BLAMED]
            out.append(
                (
                    Finding(
                        rule=f"nccl_warn.{cat}",
                        category=cat,
                        severity="warning",
                        confidence=0.3,
                        evidence=tuple(evidence),
                        ranks=ranks,
                        hosts=tuple(sorted(hosts))[:64],
                        **prose(
                            f"nccl_warn.{cat}",
                            docs=CATEGORY[cat].docs,  # the family's card leaves the page to the category
                            printed_by=f" from {where.split(':')[0]}" if where else "",
                            lines=how_many(count, "line"),
                            category_title=CATEGORY[cat].title,
                            where=where or "named in the message",
                        ),
                    ),
                    first,
                )
            )
        return out

    def _hang_with_no_error(self, facts: set) -> bool:
        """No error, no timeout, the run did not go on, and it got past NCCL's set-up or someone says it stopped."""
        return (
            not any(h.sig.severity == "error" and not h.sig.benign for h in self.hits.values())
            and ("init_seen" in facts or "stopped" in facts)
            and "completed" not in facts
            and not self.state.watchdog
        )

    def _stuck_together(self) -> bool:
        """Every rank of the job timed out in the same one of its first collectives (EARLY_SEQ): rank 0 among
        them, no rank between them missing, none the world size or another log adds. Nobody was busy
        elsewhere (the late rank of a set-up barrier is the one that does not time out): the first transfers
        themselves hung."""
        recs = self.state.watchdog
        if len(recs) < 2 or not all(isinstance(r, int) for r in recs):
            return False
        if len({(r.op, r.seq) for r in recs.values()}) != 1 or max(r.seq for r in recs.values()) > EARLY_SEQ:
            return False
        ranks = set(recs)
        present = {r for r in self.table.present() if isinstance(r, int)}
        return ranks == set(range(len(ranks))) and present <= ranks and self.world_size in (None, len(ranks))

    def _candidates(self, facts: set, stuck: bool = False) -> list:
        """Ranked candidate causes of the generic errors that matched (or of a hang with no error at
        all: a stop after NCCL's set-up, or one the reporter describes), conditioned on the run's facts."""
        generic = [(h.first, _GENERIC_KIND[i], h) for i, h in self.hits.items() if i in _GENERIC_KIND]
        if generic:
            first, kind, h = min(generic, key=lambda t: t[0])
            evidence = tuple(h.evidence[:2])
        elif stuck:
            kind, first = "first_collective", (10**8,)
            evidence = tuple(r.evidence for r in sorted(self.state.watchdog.values(), key=lambda r: r.rank)[:2])
        elif self._hang_with_no_error(facts):
            kind, first, evidence = "hang", (10**8,), ()
        else:
            return []
        shown = sorted(f for f in facts if f not in ("init_seen", "completed"))
        out = []
        # a log with no error at all is the weakest evidence: two candidates at most
        ranked = [t for t in rank_candidates(kind, facts) if t[1] >= MIN_CANDIDATE_SCORE][
            : MAX_CANDIDATES if kind != "hang" else 2
        ]
        for i, (c, score, moved) in enumerate(ranked):
            # what the log shows: the facts that moved this candidate, else every fact, else nothing
            facts_shown = moved or shown
            shows = f": {', '.join(facts_shown)}" if facts_shown else " nothing that narrows it down"
            out.append(
                (
                    Finding(
                        rule=f"candidate.{kind}.{c.category}",
                        category=c.category,
                        severity="info",
                        confidence=round(min(0.45, score), 3),
                        evidence=evidence,
                        **prose(
                            f"candidate.{kind}.{c.category}",
                            docs=CATEGORY[c.category].docs,  # the family's card leaves the page to the category
                            number=i + 1,
                            kind=CANDIDATE_KIND_TITLES[kind],
                            category_title=CATEGORY[c.category].title,
                            why=c.why[:1].upper() + c.why[1:],
                            shown=shows,
                            check=c.check,
                        ),
                    ),
                    first,
                )
            )
        return out

    def _input_notes(self) -> list:
        """One info finding for the inputs skipped (binary data, an entry of a
        directory that could not be read), one for the files that changed
        while they were read (a rule appears once in a Diagnosis)."""
        out = []
        if self.skipped:
            named = [f"{name}: {why}" for _, name, why in self.skipped[:3]]
            more = len(self.skipped) - len(named)
            out.append(
                Finding(
                    rule="input_skipped",
                    category="unknown",
                    severity="info",
                    confidence=0.1,
                    evidence=tuple(Evidence(name, None, why[:MAX_TEXT]) for _, name, why in self.skipped[:MAX_EVIDENCE]),
                    **prose(
                        "input_skipped",
                        # one input: "<name>: <why>; skipped"; several: how many, the first three, how many more
                        skipped=f"{named[0]}; skipped"
                        if len(self.skipped) == 1
                        else f"{len(self.skipped)} inputs skipped: " + "; ".join(named) + (f"; and {more} more" if more else ""),
                    ),
                )
            )
        if self.changed:
            name, how = self.changed[0]
            others = f"; and {len(self.changed) - 1} more files changed" if len(self.changed) > 1 else ""
            out.append(
                Finding(
                    rule="input_changed",
                    category="unknown",
                    severity="info",
                    confidence=0.1,
                    evidence=tuple(Evidence(n, None, h[:MAX_TEXT]) for n, h in self.changed[:MAX_EVIDENCE]),
                    **prose("input_changed", name=name, how=how, others=others),
                )
            )
        return out

    def _finding(self, h: Hits, any_error: bool) -> Finding:
        sig = h.sig
        groups = h.groups
        severity, confidence = sig.severity, sig.confidence
        if sig.suspect and any_error:
            severity, confidence = "warning", max(confidence, 0.6)
        title = sig.title + _detail(groups, h.count)
        cause = _PLACEHOLDER.sub(lambda m: str(groups.get(m.group(1), m.group(0))), sig.cause)
        printers = {self.table.resolve(k) for k in h.printers}
        if sig.blame == "missing_ranks":
            blamed = set(self.table.missing(groups.get("expected"), self.world_size))
            if blamed:
                title += _ranks_say(blamed, "never joined")
        elif sig.blame == "silent_ranks":
            # the job's ranks that did not print it (a timeout's printers waited for them)
            size = self.world_size if self.world_size and self.world_size <= MAX_RANKS else 0
            job = {r for r in self.table.present() if isinstance(r, int)} | set(range(size))
            blamed = job - printers if printers & job else set()
            if len(blamed) > len(printers):
                blamed = set()  # the fewer are the late ones; most ranks silent says too little
            if blamed:
                absent = blamed - self.table.present()  # in the world size, yet no log and no dump
                if blamed - absent:
                    title += _ranks_say(blamed - absent, "did not time out")
                if absent:
                    title += _ranks_say(absent, f"of the {size} ranks left no log")
        elif sig.blame == "store_host":
            blamed = set() if 0 in printers else {0}
            if blamed and 0 not in self.table.present():
                title += "; rank 0, the store host, left no log"
        elif sig.blame == "values":
            blamed = set()
            for kind, per in sorted(self.state.values.items()):
                if len({v for v, _ in per.values()}) > 1:  # the counts ranks should share differ
                    title += f"; the {kind} differ across ranks: " + ", ".join(
                        f"{v} on rank {r}" for r, (v, _) in sorted(per.items())[:8]
                    )
        elif sig.consequence or sig.benign:
            blamed = set(h.blamed)
        else:
            blamed = set(h.blamed) or printers
        if h.hosts and (groups.get("xid") is not None or (h.evidence and "NVRM: Xid" in h.evidence[0].text)):
            # an Xid's kernel line read through syslog / journalctl names its host (dmesg's does not: none is named)
            title += " on " + ", ".join(sorted(h.hosts)[:4]) + (f" and {len(h.hosts) - 4} more" if len(h.hosts) > 4 else "")
        ranks = tuple(sorted(r for r in blamed if isinstance(r, int)))[:MAX_BLAMED]
        return Finding(
            rule=sig.id,
            category=sig.category,
            severity=severity,
            confidence=confidence,
            title=title,
            evidence=tuple(h.evidence),
            cause=cause,
            fix=sig.fix,
            docs=sig.docs,
            ranks=ranks,
            hosts=tuple(sorted(h.hosts))[:64],
        )

    def _waiting(self, rule: Optional[str]) -> bool:
        """Is ``rule`` an error that says a rank waited for a peer (a timeout, a
        closed connection), rather than a failure of its own?"""
        h = self.hits.get(rule) if rule else None
        return h is None or h.sig.consequence or h.sig.benign or h.sig.category in _WAITING

    def _reconcile(self, fr_findings: list, findings: list) -> list:
        """The flight recorder says which rank never reached the collective the
        others waited in; that rank's own log says why. A rank that failed
        first with an error of its own is the cause (its error is promoted and
        the recorder's finding becomes its consequence); a rank that timed out
        in a send/recv while outside every recorded collective was stuck in a
        point-to-point exchange. Returns [(finding, tier)]."""
        out = []
        for f in fr_findings:
            tier = {"error": _TIER_ROOT_ERROR, "warning": _TIER_ROOT_WARNING}.get(f.severity, _TIER_INFO)
            if f.rule not in ("fr.missing_rank", "fr.late_rank") or not f.ranks:
                out.append((f, tier))
                continue
            rows = {r: self.rows.get(r) for r in f.ranks}
            crashed = {r: row for r, row in rows.items() if row is not None and not self._waiting(row.first_rule)}
            p2p = [r for r, row in rows.items() if row is not None and row.first_rule in P2P_WAIT_RULES]
            if crashed:
                for i, (_, conf, first, g) in enumerate(findings):
                    if g.rule in {row.first_rule for row in crashed.values()} and not g.alternative_of:
                        blamed = tuple(sorted(r for r, row in crashed.items() if row.first_rule == g.rule))
                        g = replace(g, ranks=blamed, title=g.title + f"; rank {_span(blamed)} failed first")
                        findings[i] = (_TIER_FIRST_FAILURE, max(conf, f.confidence), first, g)
                out.append((replace(f, title=f.title + f" (after rank {_span(crashed)} failed)"), _TIER_CONSEQUENCE))
            elif f.rule == "fr.missing_rank" and p2p and set(p2p) == set(f.ranks):
                out.append(
                    (
                        replace(
                            f,
                            rule="fr.missing_rank_p2p",
                            category="p2p_pairing",
                            **prose("fr.missing_rank_p2p", ranks=_span(p2p), waiting=_p2p_waiting(f.title)),
                        ),
                        tier,
                    )
                )
            else:
                out.append((f, tier))
        return out

    def _claimed_twice(self) -> list:
        """Ranks that two different log files claim (``rank2.log`` beside
        ``rank2.proc3.log``; ``rank2.out``/``rank2.err`` are one process), or
        that two processes claim in their lines (reason.duplicate_claims:
        framework banners, NCCL's communicator lines)."""
        doubled = {r: names for r, names in self.table.rank_files.items() if len(names) > 1}
        lines = duplicate_claims(self.state, self.world_size)
        if not doubled and not lines:
            return []
        ranks = tuple(sorted(set(doubled) | set(lines)))[:MAX_BLAMED]
        evidence = tuple(
            Evidence(name, None, f"log of a process claiming rank {r}")
            for r in ranks[:4]
            if r in doubled
            for name in sorted(doubled[r].values())[:2]
        )
        evidence += tuple(ev for r in ranks[:4] for ev in lines.get(r, ()))
        return [
            Finding(
                rule="rank_claimed_twice",
                category="rank_world_size_mismatch",
                severity="error",
                confidence=0.85,
                evidence=evidence,
                **prose("rank_claimed_twice", ranks=_span(ranks)),
                ranks=ranks,
            )
        ]


_AFTER = re.compile(r" \(after rank [^()]*\)")


def _sentence(title: str) -> str:
    """A finding's title read inside a sentence: its first letter lower case unless it starts a name (NCCL, Rank 2)."""
    title = _AFTER.sub("", title)  # "(after rank 2 failed)": the card it is folded into says so
    word = title.split(" ", 1)[0]
    return title if word[1:2].isupper() or not title[:1].isupper() or word in ("Rank", "Ranks") else title[:1].lower() + title[1:]


def _p2p_waiting(missing_title: str) -> str:
    """ "; <ranks> waited for it in <where>", read from the title of the fr.missing_rank finding it replaces."""
    m = re.search(r"never reached (?P<where>.+) that (?P<present>.+) waited in$", missing_title)
    return f"; {m.group('present')} waited for it in {m.group('where')}" if m else ""


_DUPLICATE_PAIR = re.compile(r"rank ([0-9]+) and rank ([0-9]+) both on CUDA device ([0-9a-fA-F]+)")


def _ranks_say(ranks, what: str) -> str:
    """The clause a title gains ("; rank 3 never joined", "; ranks 0-6 never joined"), in the cards' agreement."""
    span = _span(ranks)
    return "; " + agree("rank {ranks} " + what, {"ranks": span}).format(ranks=span)


def _span(ranks) -> str:
    """[4, 5, 6, 7, 9] -> "4-7, 9"."""
    out: list[str] = []
    run: list[int] = []
    for r in sorted(ranks):
        if run and r == run[-1] + 1:
            run.append(r)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 2 else ", ".join(map(str, run)))
        run = [r]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 2 else ", ".join(map(str, run)))
    return ", ".join(out)


# the categories of a transport that carries (or fails to carry) the first transfers between ranks
_TRANSPORT = {"p2p_topology", "ib_misconfig", "socket_ifname", "shm_too_small", "driver_or_hardware"}


def _explains_a_stuck_transfer(sig: Signature, silent_hang: bool) -> bool:
    """A setting that is a cause only when something fails (``suspect``), or, beside timeouts of the first
    collectives, an error of the transport itself (an IOMMU page fault, an IB completion error, ...): what
    made the first transfers hang, which the timeouts alone do not say."""
    if sig.suspect:
        return True
    return not silent_hang and sig.severity == "error" and not sig.consequence and sig.category in _TRANSPORT


def _tier(sig: Signature, f: Finding) -> int:
    if sig.benign:
        return _TIER_BENIGN
    if sig.consequence:
        return _TIER_CONSEQUENCE if f.severity != "info" else _TIER_INFO
    return {"error": _TIER_ROOT_ERROR, "warning": _TIER_ROOT_WARNING}.get(f.severity, _TIER_INFO)


def _detail(groups: dict, count: int) -> str:
    bits = []
    if "joined" in groups and "expected" in groups:
        joined, expected = num(groups["joined"]), num(groups["expected"])
        if joined is None or expected is None:
            return ""
        bits.append(f"{joined}/{expected} joined, {expected - joined} missing")
    elif "rank" in groups and "size" in groups:
        if num(groups["rank"]) is not None and num(groups["size"]) is not None:
            bits.append(f"rank {num(groups['rank'])} with world size {num(groups['size'])}")
    elif "seq" in groups and "op" in groups:
        if num(groups["seq"], MAX_DIGITS) is not None:
            bits.append(f"{groups['op']} at SeqNum {num(groups['seq'], MAX_DIGITS)}")
    elif "xid" in groups:  # a kernel log's Xid line: what the number means
        from .xid import describe

        meaning = describe(groups["xid"])
        if meaning:
            bits.append(meaning)
    if count > 1:
        bits.append(f"{count} lines")
    return f" ({'; '.join(bits)})" if bits else ""


def _ran_out(h) -> bool:
    """Whether hit ``h`` says a system resource ran out: an error of oom_or_resource, but EAGAIN only where it
    creates a thread or a process (on a socket's accept or recv it means "nothing yet", not exhaustion)."""
    sig = h.sig
    if sig.category != "oom_or_resource" or sig.severity != "error" or sig.consequence or sig.benign:
        return False
    if sig.id == "resource_temporarily_unavailable":
        return any(w in e.text for e in h.evidence for w in ("pthread_create", "fork", "clone"))
    return True


def _alternative(f: Finding, category: str) -> Finding:
    """``f`` read as a sign of ``category``: the same rule, lower confidence."""
    return Finding(
        rule=f.rule,
        alternative_of=f.rule,
        category=category,
        severity="info",
        confidence=round(f.confidence * 0.6, 3),
        title=f"Also consistent with {CATEGORY[category].title}: {f.title}",
        evidence=f.evidence[:2],
        cause=f.cause,
        fix=f.fix,
        docs=CATEGORY[category].docs,
        ranks=f.ranks,
        hosts=f.hosts,
    )
