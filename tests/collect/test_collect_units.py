"""Small pure pieces of collection: CPU lists, affinity masks, CUDA order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ncclnb.model.cpulist import format_cpulist, parse_cpulist
from ncclnb.collectors.nvml import cuda_version_text, mask_to_cpulist, reason_for
from ncclnb.collectors.visible import cuda_indices


@given(st.sets(st.integers(min_value=0, max_value=511), max_size=200))
def test_cpulist_round_trips(cpus):
    assert parse_cpulist(format_cpulist(cpus)) == cpus


@given(st.sets(st.integers(min_value=0, max_value=255), max_size=100))
def test_affinity_mask_words_give_the_same_cpus(cpus):
    words = [0] * 4
    for c in cpus:
        words[c // 64] |= 1 << (c % 64)
    assert parse_cpulist(mask_to_cpulist(words)) == cpus


def test_cpulist_forms_match_sysfs():
    assert format_cpulist([0, 1]) == "0-1"
    assert format_cpulist([0, 2, 4]) == "0,2,4"
    assert format_cpulist(list(range(48, 64)) + list(range(176, 192))) == "48-63,176-191"


def test_cuda_driver_version_text():
    assert cuda_version_text(12040) == "12.4"
    assert cuda_version_text(13000) == "13.0"


def test_nvml_error_codes_become_reasons():
    class Err(Exception):
        def __init__(self, value):
            self.value = value

    assert reason_for(Err(15)).reason == "GPU is lost"
    assert reason_for(Err(4)).reason == "permission denied"
    assert reason_for(Err(3)).reason == "not supported by this GPU"
    assert reason_for(Err(12)).reason.startswith("NVML library not found")
    assert reason_for(RuntimeError("boom")).reason == "RuntimeError: boom"


def test_cuda_visible_devices_repeat_and_bad_entries_stop_the_list():
    uuids = [f"GPU-{i}aaa" for i in range(4)]
    assert cuda_indices({"CUDA_VISIBLE_DEVICES": "1,1,2"}, uuids)[0] == [None, 0, None, None]
    assert cuda_indices({"CUDA_VISIBLE_DEVICES": "-1"}, uuids)[0] == [None] * 4
    assert cuda_indices({"CUDA_VISIBLE_DEVICES": " 3 , 0"}, uuids)[0] == [1, None, None, 0]
    # a prefix that matches two GPUs is ambiguous: CUDA rejects it
    assert cuda_indices({"CUDA_VISIBLE_DEVICES": "GPU-"}, uuids)[0] == [None] * 4
