"""A training log prints a loss or a rate every step, each line new to the matcher; once the log has shown
that the run went on, lines that say only that are passed by (match.ProgressLines) with the same diagnosis."""

import ncclnb.doctor.match as match
from ncclnb.doctor import diagnose
from ncclnb.doctor.kb import load_signatures
from ncclnb.doctor.rank_table import RankRows


def _progress_lines():
    return match.Matcher(load_signatures(), RankRows())._progress_lines()


def test_loss_and_rate_lines_alone_are_progress_lines():
    only = _progress_lines().only
    assert only(b"[default0]:{'loss': 0.3335, 'grad_norm': 0.041, 'learning_rate': 2.9e-05, 'epoch': 0.12}")
    assert only(b"Epoch 1:  50%|#####     | 781/1563 [02:01<02:01,  6.43it/s, loss=0.412, v_num=3]")
    assert only(b"step 1200 | loss 2.31 | lr 3.0e-4")
    # a bare bar: its progress literal has a digit ("1s/it"), looked for in the line, not in the masked shape
    assert only(b"[default4]:  17%|###       | 17/100 [00:17<01:10,  1.21s/it]")
    assert only(b"  3%|#         | 112/3750 [01:41<54:02,  1.12it/s]")
    assert not only(b"  3%|#         | 112/3750 [01:41<54:02,  s/it]")  # no rate: no progress literal at all


def test_a_line_with_anything_else_to_read_is_not_passed_by():
    only = _progress_lines().only
    assert not only(b"step 12 | loss 2.3 | NCCL WARN Call to ibv_create_qp failed")
    assert not only(b"Saving checkpoint at step 500 | loss 2.1")  # a busy word: a slow rank's evidence
    assert not only(b"[rank1]: 7 batches, loss 0.5")  # a count every rank should share (rank_count)
    assert not only(b"node1:77:77 [0] NCCL INFO NCCL version 2.21.5+cuda12.4 loss=1")  # a gate of line()


def _training_log(n: int) -> str:
    steps = "".join(f"[rank{r}]:{{'loss': {1.0 / (i + 2):.4f}, 'epoch': {i / n:.3f}}}\n" for i in range(n) for r in (0, 1))
    timeout = (
        "[rank1]:[E ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=912, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600100 milliseconds "
        "before timing out.\n"
    )
    return steps + "[rank0]: Saving checkpoint to /ckpt/step_400\n" + timeout


def test_passing_them_by_changes_no_finding(monkeypatch):
    log = _training_log(400)
    seen = []
    only = match.ProgressLines.only
    monkeypatch.setattr(match.ProgressLines, "only", lambda self, raw: seen.append(only(self, raw)) or seen[-1])
    passed_by = diagnose(log).to_dict()
    assert sum(seen) > 700  # the loss lines after the first were passed by
    monkeypatch.setattr(match.ProgressLines, "only", lambda self, raw: False)
    assert diagnose(log).to_dict() == passed_by
