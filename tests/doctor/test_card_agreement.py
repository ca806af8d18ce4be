"""A card says "Rank {behind} is ..."; its code fills in one rank or many, and the words agree."""

from ncclnb.doctor.cards import prose


def test_one_rank_and_many_ranks_read_as_a_person_writes_them():
    one = prose("watchdog_rank_missing", missing="3", timed_out="0, 1 and 2", op="ALLREDUCE", seq=52)
    assert one["title"].startswith("Rank 3 never reached")
    assert one["cause"].startswith("Ranks 0, 1 and 2 timed out in ALLREDUCE (SeqNum 52); rank 3 did not")
    many = prose("watchdog_rank_missing", missing="0, 1, 2, 3, 4, 5, 6, 7 and 1015 more", timed_out="517", op="X", seq=1)
    assert many["title"].startswith("Ranks 0, 1, 2, 3, 4, 5, 6, 7 and 1015 more never reached")
    assert many["cause"].startswith("Rank 517 timed out in X (SeqNum 1); ranks 0, 1, 2")


def test_the_verb_after_a_list_of_ranks_is_plural():
    card = "rank_claimed_twice"
    many = prose(card, ranks="1, 2", size=4, how="", claims="", first="", fix_for="")
    assert many["title"].startswith("Ranks 1, 2 were claimed by more than one process")
    assert prose(card, ranks="1", size=4, how="", claims="", first="", fix_for="")["title"].startswith("Rank 1 was claimed")


def test_a_count_beside_a_rank_is_not_a_list_of_ranks():
    # "7 on rank 1, 6 on rank 0" is one value naming two ranks, not filled into "rank {field}"
    got = prose("watchdog_rank_missing", missing="1", timed_out="0", op="7 on rank 1, 6 on rank 0", seq=1)
    assert "rank 1, 6 on rank 0" in got["cause"]
