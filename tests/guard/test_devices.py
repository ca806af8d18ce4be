"""check_devices and compare_across_ranks(versions=...) over a real gloo
process group, one process per rank on 127.0.0.1; the doctor reads what
they raise with the category of what they checked; plus the pure logic."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from _launch import launch
from ncclnb.doctor import diagnose
from ncclnb.guard.devices import decode_row, device_identity, devices_report, encode_row, norm_bus_id
from ncclnb.model.derive import visible_entry

WORKER = Path(__file__).with_name("_devices_worker.py")
WORLD = 4


@pytest.fixture(scope="module")
def four(tmp_path_factory):
    """{rank: {case: result}} of one 4-rank gloo job; its logs beside."""
    out = tmp_path_factory.mktemp("devices")
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    env.pop("CUDA_VISIBLE_DEVICES", None)
    results = launch(WORKER, [], WORLD, out, env)
    results["dir"] = out
    return results


def _same_on_every_rank(four, case) -> dict:
    got = [four[r].get(case) for r in range(WORLD)]
    assert all(g is not None for g in got), f"{case}: a rank never finished it: {got}"
    assert all(g == got[0] for g in got), f"{case}: ranks differ: {got}"
    return got[0]


def test_ranks_on_one_gpu_are_named_on_every_rank(four):
    res = _same_on_every_rank(four, "shared")
    assert res["error"] == "GuardError" and res["check"] == "devices"
    assert res["ranks"] == [1, 2, 3]
    assert res["message"].startswith("ncclnb guard: ranks 1-3 share a GPU with rank 0: ranks 0-3 on host ")
    assert "all use physical GPU 6, cuda:0 in each process" in res["message"]
    assert "torch.cuda.set_device(local_rank)" in res["message"] and "device_id=" in res["message"]
    assert set(res["values"]["device"]) == {"0", "1", "2", "3"}


def test_each_rank_on_its_own_gpu_passes(four):
    assert _same_on_every_rank(four, "own") == {"ok": True}
    assert _same_on_every_rank(four, "two_hosts") == {"ok": True}
    assert _same_on_every_rank(four, "cpu") == {"ok": True}


def test_one_uuid_is_one_gpu(four):
    res = _same_on_every_rank(four, "uuid")
    assert res["check"] == "devices" and res["ranks"] == [3]
    assert "rank 3 shares a GPU with rank 1" in res["message"] and "GPU GPU-aaaa" in res["message"]


def test_recorded_versions_replace_what_the_process_reads(four):
    assert _same_on_every_rank(four, "versions_equal") == {"ok": True}
    res = _same_on_every_rank(four, "versions_minority")
    assert res["check"] == "versions" and res["ranks"] == [3]
    assert res["message"].startswith("ncclnb guard: rank 3 runs other versions than ranks 0-2: ")
    assert "nccl: rank 3 has 2.14.3, ranks 0-2 have 2.19.3" in res["message"]
    assert "cuda: rank 3 has 11.7" in res["message"]


def test_a_version_tie_blames_every_side(four):
    res = _same_on_every_rank(four, "versions_tie")
    assert res["check"] == "versions" and res["ranks"] == [0, 1, 2, 3]
    assert "ranks 0-3 run different versions, none held by a majority" in res["message"]


def test_nccl_settings_are_their_own_check(four):
    res = _same_on_every_rank(four, "settings")
    assert res["check"] == "nccl_settings" and res["ranks"] == [1]
    assert res["message"].startswith("ncclnb guard: rank 1 runs other NCCL settings than ranks 0,2,3: NCCL_ALGO: ")


@pytest.mark.parametrize(
    "case, rule, category, ranks",
    [
        ("shared", "ncclnb_guard_devices", "device_mapping", (1, 2, 3)),
        ("versions_tie", "ncclnb_guard_versions", "version_mismatch", (0, 1, 2, 3)),
        ("versions_minority", "ncclnb_guard_versions", "version_mismatch", (3,)),
        ("settings", "ncclnb_guard_nccl_settings", "nccl_env_override", (1,)),
    ],
)
def test_the_doctor_names_what_the_guard_checked(four, case, rule, category, ranks):
    lines = "\n".join(f"[rank{r}]: ncclnb.guard.errors.GuardError: {four[r][case]['message']}" for r in range(WORLD))
    top = diagnose(lines + "\n").top
    assert (top.rule, top.category, top.ranks) == (rule, category, ranks)


def test_the_doctor_reads_the_real_logs(four):
    diag = diagnose(str(four["dir"]))
    rules = {f.rule: f for f in diag.findings}
    assert rules["ncclnb_guard_devices"].ranks == (1, 2, 3)
    assert "ncclnb_guard_mismatch" not in rules  # no guard's words read as collective_desync


# ---- pure logic -----------------------------------------------------------------------


def test_visible_devices_map_logical_to_physical():
    env = {"CUDA_VISIBLE_DEVICES": "6,7,GPU-8f3a,9"}
    assert [visible_entry(env["CUDA_VISIBLE_DEVICES"], i) for i in range(5)] == ["6", "7", "GPU-8f3a", "9", None]
    assert visible_entry(None, 2) == "2"
    # CUDA stops at the first empty entry: nothing after it is a device
    assert [visible_entry("3,,4", i) for i in range(3)] == ["3", None, None]
    assert device_identity(0, {"CUDA_VISIBLE_DEVICES": "3,,4"})["i"] == "3"
    assert device_identity(1, env)["i"] == "7" and device_identity(1, env)["l"] == 1
    assert device_identity("cuda:2", env)["u"] == "GPU-8f3a"
    assert device_identity(7, env) is None  # hidden by CUDA_VISIBLE_DEVICES: nothing to compare
    assert device_identity("cpu") is None and device_identity(None) is None  # no CUDA on this machine
    assert device_identity("0000:8a:00.0")["b"] == "0000:8a:00.0"
    assert norm_bus_id("00000000:8A:00.0") == norm_bus_id("0000:8a:00.0") == "0000:8a:00.0"


def test_rows_have_one_size_and_round_trip():
    ident = device_identity({"host": "h" * 300, "index": '6"\\', "uuid": "GPU-" + "f" * 200, "bus_id": "x" * 99})
    row = encode_row(ident)
    assert len(row) == len(encode_row(None)) == 256
    assert decode_row(row) == ident and decode_row(encode_row(None)) is None


def test_bus_ids_in_two_spellings_are_one_gpu():
    rows = {
        0: {"h": "a", "i": None, "u": None, "b": "00000000:8A:00.0", "l": 0},
        1: {"h": "a", "i": None, "u": None, "b": "0000:8a:00.0", "l": 1},
        2: {"h": "b", "i": None, "u": None, "b": "0000:8a:00.0", "l": 0},
    }
    message, blamed, _ = devices_report(rows)
    assert blamed == [1] and "rank 1 shares a GPU with rank 0" in message
    assert devices_report({0: rows[0], 1: None, 2: rows[2]}) is None
