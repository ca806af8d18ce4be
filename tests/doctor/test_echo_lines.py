"""A process that prints one message again (per thread, per communicator) counts again and adds nothing else:
the evidence of a finding shows different processes' lines, not one process's repeats (Matcher._echo)."""

from ncclnb.doctor import diagnose

PLUGIN = "NCCL INFO NET/Plugin: No plugin found (libnccl-net.so)"


def _finding(diag, rule):
    return next(f for f in diag.findings if f.rule == rule)


def test_a_repeat_from_one_process_counts_but_is_not_evidence_again():
    log = "".join(
        [f"node-a:100:{tid} [0] {PLUGIN}\n" for tid in (101, 102, 103)]
        + ["node-a:100:101 [0] NCCL INFO Using network Socket\n", f"node-b:200:201 [1] {PLUGIN}\n"]
    )
    for collapse in (True, False):
        f = _finding(diagnose(log, collapse=collapse), "net_plugin_not_found")
        assert [e.line for e in f.evidence] == [1, 5]
        assert "4 lines" in f.title


def test_the_same_message_from_another_process_or_source_is_read_in_full():
    one = f"node-a:100:101 [0] {PLUGIN}\n"
    f = _finding(diagnose(one + one.replace("100:", "101:")), "net_plugin_not_found")
    assert [e.line for e in f.evidence] == [1, 2]  # another pid on the same host
    f = _finding(diagnose(one, one), "net_plugin_not_found")
    assert [(e.source, e.line) for e in f.evidence] == [(f.evidence[0].source, 1), (f.evidence[1].source, 1)]
    assert f.evidence[0].source != f.evidence[1].source


def test_watchdog_lines_are_never_echoes():
    # a watchdog record keeps the latest line of its SeqNum: every such line is read in full
    line = (
        "[rank1]:[E1124 10:00:00.000000000 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for 600050 "
        "milliseconds before timing out.\n"
    )
    diag = diagnose(line + "[rank1]: some progress line\n" + line)
    f = next(f for f in diag.findings if any("WorkNCCL" in e.text for e in f.evidence))
    assert [e.line for e in f.evidence if "WorkNCCL" in e.text] == [1, 3]
