"""Every rule id the doctor emits from code rather than from a signature record.

The data rules (``signatures/<id>.json``) list themselves; the doctor's code
rules (cross-rank reasoning over the ranks' logs, the flight recorder, the
point-to-point plans, the notes about its own input, and the fallbacks for an
NCCL WARN no signature knows and for a generic error) are listed here, as
data, one line each on what they detect. Each has a fixture of its own name in
``fixtures/`` (``<id>.log``, or ``<id>/`` holding per-rank logs and dumps as
the doctor reads a directory); ``tests/test_rule_fixtures.py`` checks that the
list, the ids the doctor's sources emit and the fixtures agree.

Two families are parametric: ``nccl_warn.<category>`` for each category an
unrecognised WARN can lean to (``priors.WARN_SOURCES``) and
``candidate.<kind>.<category>`` for each candidate cause of a generic error
(``priors.CANDIDATES``); every member is a rule id of its own. An
alternative reading of a finding (``<rule>~<category>``) is not a rule.
"""

from __future__ import annotations

from .priors import CANDIDATE_KIND_TITLES, CANDIDATES, WARN_SOURCES

# id -> what it detects
FIXED: dict[str, str] = {
    # cross-rank reasoning over the watchdog lines (reason.py)
    "watchdog_rank_behind": "a rank never enqueued the work the others waited in (torch's enqueued/completed counters)",
    "watchdog_desync": "the ranks' watchdog timeouts name different collectives, or one collective with different sizes",
    "watchdog_seq_differs": "the timed-out ranks wait in the same collective at different sequence numbers",
    "watchdog_rank_missing": "ranks timed out in one collective while a rank whose log is there printed no timeout",
    "watchdog_all_waiting": "every reporting rank timed out in the same collective: nobody is shown to lag",
    # cross-rank reasoning over versions, world sizes and claims (reason.py, core.py)
    "nccl_version_differs_across_hosts": "hosts of one job load different NCCL versions",
    "world_size_differs_across_hosts": "nodes of one job started with different world sizes",
    "ranks_beyond_world_size": "ranks numbered at or past the world size they were started with",
    "rank_claimed_twice": "two processes claim one rank while another rank of the world has none",
    # cross-rank reasoning over where the ranks' tracebacks waited (reason.wait_findings, gloo)
    "p2p_wait_beside_collective": "some ranks timed out in a send/recv while the others waited in a collective",
    "traceback_desync": "the ranks' tracebacks end in different collectives",
    "traceback_rank_missing": "ranks timed out in one collective while a rank whose log is there never got there",
    # point-to-point plans printed by ncclnb.guard (pairing.py)
    "plan.p2p_unmatched": "a planned send or receive has no partner on the peer",
    "plan.p2p_order": "two ranks plan the same messages in another order",
    "plan.p2p_size_mismatch": "a planned send and its receive disagree on shape or dtype",
    # flight-recorder dumps (flight_recorder.py, core.py)
    "fr.desync_op": "ranks ran different collectives at one sequence number",
    "fr.size_mismatch": "ranks ran one collective with tensors of different sizes",
    "fr.dtype_mismatch": "ranks ran one collective with tensors of different dtypes",
    "fr.extra_collective": "a minority of ranks ran a collective the others never called",
    "fr.missing_rank": "a rank never reached the collective the others waited in",
    "fr.missing_rank_elsewhere": "a rank never reached the collective the others waited in: it ran one of another group",
    "fr.missing_rank_p2p": "the rank the recorder finds missing timed out in a send/recv of its own (its log says so)",
    "fr.late_rank": "a rank reached a collective more than the timeout after the others",
    "fr.p2p_unmatched": "a recorded send or receive has no partner on the peer",
    "fr.p2p_order": "a pair of ranks recorded the same messages in another order",
    "fr.p2p_size_mismatch": "a recorded send and its receive disagree on size or dtype",
    "fr.missing_dump": "a member of a recorded process group gave no dump (left out of the comparison)",
    "fr.duplicate_rank": "two dumps claim one rank (the second is skipped)",
    "fr.bad_dump": "a dump that could not be analysed (no rank known, malformed)",
    "fr.dump_not_read": "a file that looks like a dump but was not read (too big, unparseable)",
    # notes on the input itself (core.py)
    "input_skipped": "an input with no log text (binary data) or an entry that could not be read",
    "input_truncated": "a file that ended early (a cut .gz); the lines before the cut were read",
    "input_changed": "a file truncated, rotated or removed while it was read",
    "rank_table_cut": "more ranks than the per-rank table keeps",
}

# rules no file can trigger by itself: the fixture holds the input, the test makes the event
NEEDS_EVENT: dict[str, str] = {
    "input_changed": "the file must shrink or be replaced while the doctor reads it",
}


def warn_rules() -> dict[str, str]:
    """``nccl_warn.<category>``: an NCCL WARN no signature knows, leaning to that category."""
    cats = dict.fromkeys(cat for _, cat, _ in WARN_SOURCES)
    return {f"nccl_warn.{cat}": f"an unrecognised NCCL WARN from a part of NCCL where {cat} problems show up" for cat in cats}


def candidate_rules() -> dict[str, str]:
    """``candidate.<kind>.<category>``: a candidate cause of a generic error (or of a stop with no error)."""
    return {
        f"candidate.{kind}.{c.category}": f"candidate cause of {CANDIDATE_KIND_TITLES[kind]}: {c.category}"
        for kind, cands in CANDIDATES.items()
        for c in cands
    }


# the prefixes of the parametric families, as the doctor's sources spell them in f-strings
FAMILY_PREFIXES = ("nccl_warn.", "candidate.")


def code_rules() -> dict[str, str]:
    """Every code rule id -> what it detects."""
    return {**FIXED, **warn_rules(), **candidate_rules()}
