"""The doctor's text output is safe to print on a terminal.

Log lines, host names and file names are echoed into the report; a log can
carry escape sequences (a window title, an OSC 8 hyperlink, DCS, C1 CSI),
backspaces that hide what precedes them, and other controls. The text
report shows every control character as a visible escape (``\\x1b``,
``\\x9b``, ``\\u202e``) and never emits one raw; ``--json`` escapes them too.
The diagnosis itself keeps the characters: only the views escape.
"""

from __future__ import annotations

import json
import re
import unicodedata

import pytest

from ncclnb.doctor import diagnose
from ncclnb.doctor.report import to_json
from ncclnb.terminal import render_diagnosis as render_text

OSC_TITLE = "\x1b]0;pwned\x07"
OSC8 = "\x1b]8;;https://evil.example/\x1b\\click here\x1b]8;;\x1b\\"
DCS = "\x1bPq#0;2;0;0;0#0~~@@\x1b\\"
C1_CSI = "\x9b2J"
C1_OSC = "\x9d0;c1-title\x9c"
BACKSPACES = "rm -rf /\b\b\b\b\b\b\b\bok      "
OTHERS = "bell\x07 nul\x00 vt\x0b ff\x0c del\x7f nel\x85 rlo\u202eevil\u202c ls\u2028ps\u2029end"
NASTY = [OSC_TITLE, OSC8, DCS, C1_CSI, C1_OSC, BACKSPACES, OTHERS]

# characters a terminal acts on: C0 (but the report's own newlines), DEL, C1,
# bidi embeddings/overrides/isolates, line and paragraph separators
UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
OUR_COLOURS = re.compile(r"\x1b\[(?:31;1|33;1|36|1|2|0)m")


def raw_controls(text: str, colour: bool = False) -> list:
    if colour:
        text = OUR_COLOURS.sub("", text)
    return sorted({unicodedata.name(c, hex(ord(c))) for c in UNSAFE.findall(text)})


def nasty_log() -> str:
    lines = [f"[rank{r}]: torch.distributed.DistStoreError: Socket Timeout {frag}" for r, frag in enumerate(NASTY)]
    # host names with controls, in NCCL's prefix: they reach the hosts, the
    # rank table and (two NCCL versions) the version finding's title and cause
    lines += [
        "ho\x1b]0;h\x07st-a:101:101 [0] NCCL INFO NCCL version 2.18.1+cuda12.1",
        "ho\x9bst-b:202:202 [0] NCCL INFO NCCL version 2.21.5+cuda12.4",
        f"ho\x1b]0;h\x07st-a:101:101 [0] misc/socket.cc:538 NCCL WARN Net : Connection closed by remote peer "
        f"10.0.0.2<42164> {OSC_TITLE}",
    ]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def diag():
    return diagnose(nasty_log())


def test_the_diagnosis_keeps_the_characters_only_the_views_escape_them(diag):
    firsts = {r.rank: r.first_error for r in diag.ranks if r.rank is not None}
    assert OSC_TITLE in firsts[0] and "\b" in firsts[5]


@pytest.mark.parametrize("colour", [False, True])
def test_render_text_emits_no_raw_control_character(diag, colour):
    text = render_text(diag, colour=colour)
    assert raw_controls(text, colour) == []
    assert "\x1b" not in OUR_COLOURS.sub("", text)


def test_render_text_shows_controls_as_visible_escapes(diag):
    text = render_text(diag)
    assert r"\x1b]0;pwned\x07" in text  # OSC window title
    assert r"Socket Timeout \x1b]8;;https://evil" in text  # OSC 8 hyperlink (cut to the column)
    assert r"\x1bPq#0;2;0;0;0" in text  # DCS
    assert r"\x9b2J" in text  # C1 CSI
    assert r"rm -rf /\x08\x08" in text  # backspaces cannot hide text
    assert r"bell\x07 nul\x00 vt\x0b ff\x0c" in text
    assert r"ho\x1b]0;h\x07st-a" in text  # a host name from the log


def test_hosts_causes_and_the_rank_table_are_escaped(diag):
    version = diag.top
    assert version.category == "version_mismatch" and "ho\x9bst-b" in version.cause
    text = render_text(diag)
    assert r"hosts      ho\x9bst-b" in text
    assert r"cause      NCCL 2.21.5 on ho\x9bst-b" in text
    assert re.search(r"\? ho\\x9bst-b +- +202 2\.21\.5", text)


def test_every_field_of_any_diagnosis_is_escaped():
    """A diagnosis loaded from JSON can hold anything: titles, rules, sources,
    docs, hosts, the rank table's columns."""
    from ncclnb.model import Diagnosis, Evidence, Finding, RankStatus

    def finding(n: int, severity: str) -> Finding:
        return Finding(
            rule=f"r{n}{C1_CSI}",
            category="unknown",
            severity=severity,
            confidence=0.5,
            title=f"title {n} {OSC_TITLE}",
            evidence=(Evidence(f"src{n}{DCS}", 3, f"line {OSC8}"),),
            cause=f"cause {BACKSPACES}",
            fix=f"fix {OTHERS}",
            docs=f"https://docs.example/{OSC8}",
            ranks=(1,),
            hosts=(f"host{n}{OSC_TITLE}",),
        )

    diag = Diagnosis(
        findings=(finding(1, "error"), finding(2, "warning")),
        ranks=(
            RankStatus(
                rank=1,
                host=f"h{OSC_TITLE}",
                local_rank=0,
                pid=7,
                nccl_version=f"2.{C1_CSI}",
                last_seq=3,
                last_op=f"op{DCS}",
                first_error=f"boom {OTHERS}",
                source=f"s{C1_OSC}",
            ),
        ),
        sources=(f"src1{DCS}",),
        lines_read=1,
    )
    for colour in (False, True):
        text = render_text(diag, colour=colour)
        assert raw_controls(text, colour) == []
    text = render_text(diag)
    for shown in (
        r"title 1 \x1b]0;pwned\x07",
        r"title 2 \x1b]0;pwned\x07",
        r"src1\x1bPq",
        r"src2\x1bPq",
        r"r1\x9b2J",
        r"host1\x1b]0;pwned",
        r"https://docs.example/\x1b]8;;",
        r"h\x1b]0;pwned",
        r"2.\x9b2J",
        r"op\x1bPq",
        r"boom bell\x07",
        r"cause      cause rm -rf /\x08",
        r"fix        fix bell\x07 nul\x00 vt\x0b ff\x0c del\x7f nel\x85 "
        r"rlo\u202eevil\u202c ls\u2028ps\u2029end",
    ):
        assert shown in text, shown


def test_source_names_with_controls_are_escaped(tmp_path, cli):
    name = "rank0\x1b]0;file\x07.log"
    (tmp_path / name).write_text(f"[rank0]: torch.distributed.DistStoreError: Socket Timeout {OSC8}\n")
    proc = cli("doctor", str(tmp_path / name))
    assert proc.returncode == 0, proc.stderr
    assert raw_controls(proc.stdout) == []
    assert r"rank0\x1b]0;file\x07.log:1" in proc.stdout
    assert "Socket Timeout \\x1b]8;;https://evil.example/\\x1b\\click here\\x1b]8;;\\x1b\\" in proc.stdout


def test_cli_text_and_json_emit_no_raw_control_character(tmp_path, cli):
    log = tmp_path / "rank0.log"
    log.write_text(nasty_log())
    text = cli("doctor", str(log))
    assert text.returncode == 0, text.stderr
    assert raw_controls(text.stdout) == []
    js = cli("doctor", "--json", str(log))
    assert js.returncode == 0, js.stderr
    assert raw_controls(js.stdout) == []
    data = json.loads(js.stdout)
    expected = json.loads(json.dumps(to_json(diagnose(nasty_log()))))
    texts = [[ev["text"] for ev in f["evidence"]] for f in data["findings"]]
    assert texts == [[ev["text"] for ev in f["evidence"]] for f in expected["findings"]]  # escaped, not altered
    firsts = [r["first_error"] for r in data["ranks"] if r["first_error"]]
    assert firsts == [r["first_error"] for r in expected["ranks"] if r["first_error"]]
    firsts = {r["rank"]: r["first_error"] for r in data["ranks"] if r["rank"] is not None}
    assert C1_CSI in firsts[3] and "\u202e" in firsts[6]
