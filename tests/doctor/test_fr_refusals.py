"""The flight-recorder reader under NCCLNB_STRICT (tests/conftest.py): every
input gives a reading or an explicit refusal, an InputError of one line, and
nothing else; an exception of any other kind is a bug and fails here.

Inputs: the real gloo dumps of tests/doctor/fr (written by torch 2.13, see
make_dumps.py there) mutated at random, random JSON-shaped values, and torch's
own pickled dumps (fr/pickled) with bytes flipped, cut or inserted."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ncclnb.doctor.flight_recorder import PreparedDump, prepare_dump
from ncclnb.doctor.unpickle import PickleRefused, load_plain, read_pickled_dump
from ncclnb.errors import InputError, strict

FR_DIR = Path(__file__).resolve().parent / "fr"
REAL = {
    name: [json.loads(p.read_text()) for p in sorted((FR_DIR / name).glob("rank*.json"))]
    for name in ("desync", "slow_rank", "healthy")
}
PICKLED = [p.read_bytes() for p in sorted((FR_DIR / "pickled").rglob("*")) if p.is_file() and p.read_bytes()[:1] == b"\x80"]


def _values(nan: bool):
    return st.recursive(
        st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=nan) | st.text(max_size=12),
        lambda kids: st.lists(kids, max_size=5) | st.dictionaries(st.text(max_size=12), kids, max_size=5),
        max_leaves=30,
    )


_json = _values(nan=True)
_KEYS = ["profiling_name", "collective_seq_id", "p2p_seq_id", "record_id", "process_group", "input_sizes"]
_KEYS += ["output_sizes", "input_dtypes", "output_dtypes", "state", "time_created_ns", "timeout_ms", "is_p2p"]


def test_the_tests_run_strict():
    assert strict(), "tests/conftest.py sets NCCLNB_STRICT=1 for the session"


def _reading_or_refusal(prepared) -> None:
    assert isinstance(prepared, PreparedDump)
    assert (prepared.dump is None) != (prepared.reason is None)
    if prepared.reason is not None:
        assert isinstance(prepared.reason, InputError)
        text = str(prepared.reason)
        assert text and "\n" not in text and len(text) < 300


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_real_dumps_give_a_reading_or_a_refusal(data):
    dump = copy.deepcopy(data.draw(st.sampled_from(REAL[data.draw(st.sampled_from(sorted(REAL)))])))
    for _ in range(data.draw(st.integers(1, 4))):
        entries = dump.get("entries")
        if isinstance(entries, list) and entries and data.draw(st.booleans()):
            i = data.draw(st.integers(0, len(entries) - 1))
            if isinstance(entries[i], dict) and data.draw(st.booleans()):
                entries[i][data.draw(st.sampled_from(_KEYS))] = data.draw(_json)
            else:
                entries[i] = data.draw(_json)
        else:
            dump[data.draw(st.sampled_from(["entries", "pg_config", "comm_lib_version", "rank", "pg_status"]))] = data.draw(_json)
    _reading_or_refusal(prepare_dump("rank0.json", dump))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=20), _json)
def test_any_json_value_gives_a_reading_or_a_refusal(name, value):
    _reading_or_refusal(prepare_dump(name, value))


def test_the_real_dumps_are_readings():
    for dumps in REAL.values():
        for d in dumps:
            assert prepare_dump("rank0.json", d).dump is not None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_damaged_pickles_are_read_or_refused_in_one_line(data):
    assert PICKLED, "fixture fr/pickled is missing: run tests/doctor/fr/make_dumps.py --pickle"
    raw = bytearray(data.draw(st.sampled_from(PICKLED)))
    for _ in range(data.draw(st.integers(1, 6))):
        at = data.draw(st.integers(0, len(raw) - 1))
        how = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        if how == "flip":
            raw[at] = data.draw(st.integers(0, 255))
        elif how == "cut":
            del raw[at : at + data.draw(st.integers(1, 64))]
        else:
            raw[at:at] = data.draw(st.binary(min_size=1, max_size=16))
        if not raw:
            break
    try:
        got = read_pickled_dump(_Stream(bytes(raw)))
    except PickleRefused as exc:
        assert isinstance(exc, InputError) and "\n" not in str(exc) and str(exc)
    else:
        assert isinstance(json.loads(got), dict)


@settings(max_examples=200, deadline=None)
@given(_values(nan=False), st.sampled_from([2, 3, 4, 5]))
def test_plain_data_pickles_load_as_their_json(value, protocol):
    assert load_plain(pickle.dumps(value, protocol=protocol)) == json.loads(json.dumps(value))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_after_a_pickle_header_are_refused_or_read(tail):
    try:
        load_plain(b"\x80\x02" + tail)
    except PickleRefused as exc:
        assert "\n" not in str(exc) and str(exc)


class _Stream:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def read(self, n: int = -1) -> bytes:
        out = self.data[self.pos :] if n < 0 else self.data[self.pos : self.pos + n]
        self.pos += len(out)
        return out
