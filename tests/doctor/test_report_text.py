"""The terminal report says plainly when nothing failed."""

from ncclnb.doctor import diagnose
from ncclnb.terminal import render_diagnosis as render_text

PLUGIN = "host:1:1 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation\n"
INVALID = "[rank7]: ncclInvalidUsage: Invalid rank requested : 7/4\n"


def test_only_informational_lines_are_not_called_a_root_cause():
    text = render_text(diagnose(PLUGIN))
    assert "No error or warning found" in text
    assert "Most likely" not in text and "Noted: " in text


def test_a_real_error_is_the_most_likely_cause_and_the_benign_line_comes_after():
    text = render_text(diagnose(PLUGIN + INVALID))
    assert "No error or warning found" not in text
    head, _, rest = text.partition("Also found")
    assert "Most likely" in head and "Invalid rank" in head
    assert "net plugin" in rest
