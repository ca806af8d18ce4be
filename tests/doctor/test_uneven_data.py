"""Ranks waiting in a collective the others never called, beside the counts every rank printed (batches,
training examples): counts that differ between the two sides are an extra iteration of the loop on the side with
more (collective_desync, the ranks with more blamed), not ranks busy elsewhere (reason.uneven_data)."""

from pathlib import Path

from ncclnb.doctor import diagnose

FIXTURE = Path(__file__).resolve().parents[2] / "ncclnb" / "doctor" / "fixtures" / "watchdog_uneven_data.log"
LOG = FIXTURE.read_text(encoding="utf-8")
COUNTS = [line for line in LOG.splitlines(keepends=True) if "batches per epoch" in line]
REST = [line for line in LOG.splitlines(keepends=True) if "batches per epoch" not in line]


def test_the_waiting_ranks_printed_more_batches_they_ran_one_more_iteration():
    top = diagnose(LOG).findings[0]
    assert (top.rule, top.category, top.ranks) == ("watchdog_uneven_data", "collective_desync", (0, 2))
    assert "1563" in top.cause and "1562" in top.cause


def test_without_counts_the_late_ranks_are_late():
    top = diagnose("".join(REST)).findings[0]
    assert top.category == "slow_rank_timeout" and top.ranks == (1, 3)


def test_late_ranks_with_more_batches_are_still_in_the_iteration_the_waiting_ones_left():
    # the waiting ranks ran out of batches and wait in what follows the loop; the others' extra step is in a
    # collective nobody joins: uneven data all the same, the ranks with more named
    swapped = [line.replace("1563", "X").replace("1562", "1563").replace("X", "1562") for line in COUNTS]
    top = diagnose("".join(swapped + REST)).findings[0]
    assert (top.rule, top.category, top.ranks) == ("watchdog_uneven_data", "collective_desync", (1, 3))


def test_a_count_in_the_users_own_words_names_its_rank():
    # no launcher prefix: "rank 2: 1563 batches" is rank 2's count
    bare = [line.split("] ", 1)[1] for line in COUNTS]
    assert diagnose("".join(bare + REST)).findings[0].rule == "watchdog_uneven_data"
