"""A benign line every process prints alike (the plugin interface walk, the tuner fallback) is read once per
message: thousands of ranks cost one line each, the plain and the collapsed paths agree, and the same words
as an NCCL WARN are still read."""

import json

import pytest

from ncclnb.doctor import diagnose
from ncclnb.doctor.kb import KnowledgeBaseError, load_signatures

WALK = (
    "NCCL INFO NET/Plugin: Failed to find ncclCollNetPlugin_v8 symbol.",
    "NCCL INFO NET/Plugin: Failed to find ncclCollNetPlugin_v7 symbol.",
    "NCCL INFO TUNER/Plugin: Failed to find ncclTunerPlugin_v4 symbol.",
)


def _ranks(n: int) -> str:
    return "".join(f"node{r // 8}:{4000 + r}:{4000 + r} [{r % 8}] {m}\n" for r in range(n) for m in WALK)


def _fallback(diag):
    return next(f for f in diag.findings if f.rule == "plugin_api_fallback")


def test_each_message_is_read_once_however_many_ranks_print_it():
    few, many = _fallback(diagnose(_ranks(2))), _fallback(diagnose(_ranks(256)))
    assert few.title == many.title and few.evidence == many.evidence
    assert "(3 lines)" in many.title  # its three messages, once each


def test_the_plain_path_reads_it_as_the_collapsed_one_does():
    log = _ranks(64)
    assert diagnose(log).to_dict() == diagnose(log, collapse=False).to_dict()


def test_the_same_words_as_a_warning_are_still_read():
    warn = "node9:77:77 [0] NCCL WARN NET/Plugin: Failed to find ncclCollNetPlugin_v8 symbol.\n"
    diag = diagnose(_ranks(8) + warn)
    assert any("NCCL WARN" in e.text for e in _fallback(diag).evidence)


def test_only_a_benign_signature_may_be_read_once(tmp_path):
    record = {
        "id": "x_once",
        "category": "socket_ifname",
        "severity": "error",
        "confidence": 0.5,
        "title": "t",
        "patterns": ["Failed to frobnicate"],
        "cause": "c",
        "fix": "f",
        "docs": "d",
        "once_per_message": True,
    }
    (tmp_path / "x_once.json").write_text(json.dumps(record), encoding="utf-8")
    with pytest.raises(KnowledgeBaseError, match="benign"):
        load_signatures(str(tmp_path))
