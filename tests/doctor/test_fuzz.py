"""Property-based: random and mutated logs through the whole pipeline never raise
and always give a well-formed, JSON-round-tripping Diagnosis."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ncclnb.doctor import diagnose
from ncclnb.doctor.kb import fixture_lines, load_signatures
from ncclnb.model import CATEGORIES, Diagnosis

REAL_LINES = [text for s in load_signatures() for _, _, text in fixture_lines(s.id)]
PREFIXES = [
    "",
    "[rank3]:",
    "[default1]:",
    "7: ",
    "node-1:4121:4188 [3] NCCL WARN ",
    "[W304 17:41:12.7 x.cpp:1] ",
    "\x1b[31m",
    "2025-01-01T00:00:00Z ",
    "[1,2]<stderr>:",
]


@st.composite
def mutated_line(draw):
    line = draw(st.sampled_from(REAL_LINES))
    prefix = draw(st.sampled_from(PREFIXES))
    if draw(st.booleans()):
        i = draw(st.integers(0, len(line)))
        j = draw(st.integers(i, min(len(line), i + 20)))
        line = line[:i] + draw(st.text(max_size=20)) + line[j:]
    return prefix + line


logs = st.one_of(
    st.binary(max_size=4000),
    st.text(max_size=2000),
    st.lists(mutated_line(), max_size=30).map(lambda ls: "\n".join(ls)),
    st.lists(st.one_of(mutated_line(), st.text(max_size=80)), max_size=30).map(
        lambda ls: "\r\n".join(ls).encode("utf-8", "surrogatepass")
    ),
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs)
def test_any_log_gives_a_wellformed_diagnosis(log):
    data = log if isinstance(log, bytes) else log.encode("utf-8", "surrogatepass")
    diag = diagnose(data)
    assert isinstance(diag, Diagnosis)
    for f in diag.findings:
        assert f.category in CATEGORIES and 0 <= f.confidence <= 1
        assert all(e.line is None or e.line >= 1 for e in f.evidence)
    back = Diagnosis.from_dict(json.loads(json.dumps(diag.to_dict())))
    assert back == diag
    # ranking puts errors before warnings before info among non-alternative findings
    assert diag.lines_read <= data.count(b"\n") + 1
