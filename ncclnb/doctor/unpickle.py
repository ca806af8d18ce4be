"""Plain data out of a pickle, and nothing else: torch's flight-recorder dumps.

``torch._C._distributed_c10d._dump_fr_trace()`` (and the dump that
``TORCH_NCCL_DUMP_ON_TIMEOUT`` / ``TORCH_FR_DUMP_TEMP_FILE`` writes on a
watchdog timeout) is a pickled dict of dicts, lists, tuples, strings, numbers,
booleans and None, written with protocol 2. A pickle can also name any global
(``os.system``) and call it while it is loaded, so a pickle is read here in
two steps, and the first one runs nothing:

1. every opcode is listed (``pickletools.genops``, which only decodes) and
   checked against :data:`PLAIN_OPCODES`: values, containers and the memo.
   Any other opcode (``GLOBAL``, ``STACK_GLOBAL``, ``REDUCE``, ``BUILD``,
   ``INST``, ``OBJ``, ``NEWOBJ``, ``EXT*``, persistent ids, sets, bytearrays,
   out-of-band buffers) refuses the whole pickle, naming the global it asks
   for when there is one. The number of opcodes and of values they create
   and the memo indices are bounded, so memory stays bounded too.
2. only then is it loaded, by an unpickler whose ``find_class`` and
   ``persistent_load`` refuse (a second lock on the same door).

The result is made to look like the JSON form of the same dump
(``_dump_fr_trace_json``): tuples become lists, integer keys become strings,
bytes become text, so the analysis reads both forms alike.

A pickle is recognised by its content (``\\x80`` and a protocol of 2 to 5),
never by its file name.
"""

from __future__ import annotations

import io
import json
import pickle
import pickletools
from typing import Any

from ..errors import InputError
from ..model.limits import DUMP_LIMIT, DUMP_VALUES, human

__all__ = ["looks_like_pickle", "PickleRefused", "load_plain", "read_pickled_dump", "PLAIN_OPCODES"]

# Opcodes that make plain values (None, bools, ints, floats, str, bytes),
# lists, tuples and dicts, or manage the stack, the memo and framing.
PLAIN_OPCODES = frozenset(
    {
        "PROTO",
        "FRAME",
        "STOP",
        "MARK",
        "POP",
        "POP_MARK",
        "DUP",
        "NONE",
        "NEWTRUE",
        "NEWFALSE",
        "INT",
        "BININT",
        "BININT1",
        "BININT2",
        "LONG",
        "LONG1",
        "LONG4",
        "FLOAT",
        "BINFLOAT",
        "STRING",
        "BINSTRING",
        "SHORT_BINSTRING",
        "UNICODE",
        "BINUNICODE",
        "SHORT_BINUNICODE",
        "BINUNICODE8",
        "BINBYTES",
        "SHORT_BINBYTES",
        "BINBYTES8",
        "EMPTY_LIST",
        "APPEND",
        "APPENDS",
        "LIST",
        "EMPTY_TUPLE",
        "TUPLE",
        "TUPLE1",
        "TUPLE2",
        "TUPLE3",
        "EMPTY_DICT",
        "DICT",
        "SETITEM",
        "SETITEMS",
        "PUT",
        "BINPUT",
        "LONG_BINPUT",
        "MEMOIZE",
        "GET",
        "BINGET",
        "LONG_BINGET",
    }
)
# opcodes that leave a new object behind (the rest push a reference or a mark, or fill a container)
_NEW_VALUE = PLAIN_OPCODES - {
    "PROTO",
    "FRAME",
    "STOP",
    "MARK",
    "POP",
    "POP_MARK",
    "DUP",
    "APPEND",
    "APPENDS",
    "SETITEM",
    "SETITEMS",
    "PUT",
    "BINPUT",
    "LONG_BINPUT",
    "MEMOIZE",
    "GET",
    "BINGET",
    "LONG_BINGET",
}
_PUT = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})
_STRINGS = frozenset({"UNICODE", "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8", "STRING", "BINSTRING", "SHORT_BINSTRING"})
_MAX_NAME = 120  # characters of a refused global's name shown in the message


class PickleRefused(InputError):
    """A pickle that is not plain data, not a pickle at all, or too large; the
    message says why in one line, and nothing in the pickle was run."""


def looks_like_pickle(head: bytes) -> bool:
    """Does ``head`` (the first bytes of a file) start as a pickle of protocol
    2 to 5 does (``\\x80`` and the protocol number)? Torch writes protocol 2."""
    return len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5


class _NoGlobals(pickle.Unpickler):
    """An unpickler that admits no global and no persistent id at all."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"global {module}.{name} refused")

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("persistent id refused")


def _short(text: str) -> str:
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= _MAX_NAME else text[:_MAX_NAME] + "..."


def _refusal(op: str, arg: Any, strings: list) -> str:
    """Why the opcode ``op`` refuses the pickle, naming the global it asks for."""
    if op == "GLOBAL" and isinstance(arg, str):
        return f"it asks for the global {_short(arg.replace(' ', '.'))}"
    if op == "STACK_GLOBAL" and len(strings) >= 2:
        return f"it asks for the global {_short(strings[-2] + '.' + strings[-1])}"
    if op in ("INST",) and isinstance(arg, str):
        return f"it asks for the class {_short(arg.replace(' ', '.'))}"
    if op in ("PERSID", "BINPERSID"):
        return "it refers to outside objects (a persistent id)"
    if op in ("EXT1", "EXT2", "EXT4"):
        return "it asks for a registered global (an extension code)"
    return f"it builds objects (opcode {op})"


def _check(data: bytes, max_values: int, max_ops: int) -> None:
    """Refuse ``data`` unless every opcode is plain and the counts stay bounded."""
    values = ops = 0
    strings: list = []  # the last two string values: what a STACK_GLOBAL would read
    try:
        for opcode, arg, _pos in pickletools.genops(data):
            name = opcode.name
            if name not in PLAIN_OPCODES:
                raise PickleRefused(_refusal(name, arg, strings))
            ops += 1
            if name in _NEW_VALUE:
                values += 1
            if name in _STRINGS:
                strings = (strings + [arg if isinstance(arg, str) else repr(arg)])[-2:]
            if name in _PUT and not (isinstance(arg, int) and 0 <= arg <= ops):
                # the C unpickler grows its memo to the index given: a huge one would exhaust memory
                raise PickleRefused(f"its memo index {arg} is out of range")
            if values > max_values or ops > max_ops:
                raise PickleRefused(
                    f"it holds more than {max_values:,} values or {max_ops:,} opcodes, more than a flight-recorder dump"
                )
    except PickleRefused:
        raise
    except (ValueError, EOFError, OverflowError, MemoryError) as exc:
        raise PickleRefused(
            f"it is not a readable pickle ({_short(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)})"
        ) from None


def _as_json(root: Any) -> Any:
    """``root`` with tuples as lists, non-string keys as strings and bytes as
    text, as the JSON form has them. Iterative, each container once: shared
    and self-referencing structures (the memo allows both) cost no more."""

    def convert(v):
        if type(v) is tuple:
            out = done.get(id(v))
            if out is None:
                out = done[id(v)] = list(v)
                keep.append(v)  # ids stay unique while the tuple lives
                todo.append(out)
            return out
        if type(v) in (bytes, bytearray):
            return bytes(v).decode("utf-8", "replace")
        if type(v) in (list, dict) and id(v) not in done:
            done[id(v)] = v
            todo.append(v)
        return v

    done: dict = {}
    keep: list = []
    todo: list = []
    root = convert(root)
    while todo:
        c = todo.pop()
        if type(c) is list:
            for i, v in enumerate(c):
                c[i] = convert(v)
        else:
            items = list(c.items())
            if any(type(k) is not str for k, _ in items):
                c.clear()
                for k, v in items:
                    key = (
                        k
                        if type(k) is str
                        else bytes(k).decode("utf-8", "replace")
                        if type(k) is bytes
                        else str(k).lower()
                        if type(k) is bool
                        else str(k)
                    )
                    c.setdefault(key, v)
            for k, v in list(c.items()):
                c[k] = convert(v)
    return root


def load_plain(data: bytes, *, max_values: int = 2_000_000, max_ops: int = 4_000_000) -> Any:
    """The plain data pickled in ``data``, shaped like its JSON form; raises
    :class:`PickleRefused` (one line) for anything else. Nothing in ``data``
    is run: the opcodes are checked before a byte is loaded."""
    if not looks_like_pickle(bytes(data[:2])):
        raise PickleRefused("it is not a pickle of protocol 2 to 5")
    _check(data, max_values, max_ops)
    try:
        obj = _NoGlobals(io.BytesIO(data)).load()
    except RecursionError:
        raise PickleRefused("it is nested too deeply") from None
    except MemoryError:
        raise PickleRefused("it is too large to hold in memory") from None
    except (pickle.UnpicklingError, ValueError, EOFError, TypeError, IndexError, KeyError, AttributeError) as exc:
        raise PickleRefused(
            f"it is not a readable pickle ({_short(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)})"
        ) from None
    return _as_json(obj)


def read_pickled_dump(stream, *, limit: int = DUMP_LIMIT) -> bytes:
    """The flight-recorder dump pickled in ``stream`` (read to its end, at most
    ``limit`` bytes), as the JSON text ``_dump_fr_trace_json`` would give:
    the doctor then reads both forms by one path. ``frames`` (stack traces,
    which only the pickle carries and the analysis does not read) are left
    out. Raises :class:`PickleRefused` (one line) for a pickle that is not
    plain data, not a dump, or larger than ``limit``."""
    chunks, got = [], 0
    while got <= limit:
        chunk = stream.read(min(limit + 1 - got, 8 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    if got > limit:
        raise PickleRefused(f"it is larger than {human(limit)}, more than a flight-recorder dump")
    data = load_plain(b"".join(chunks), max_values=DUMP_VALUES, max_ops=2 * DUMP_VALUES)
    if not isinstance(data, dict) or not ({"entries", "pg_status", "pg_config"} & data.keys()):
        what = type(data).__name__ if not isinstance(data, dict) else "dict without entries, pg_config or pg_status"
        raise PickleRefused(f"it holds plain data ({'an' if what[0] in 'aeiou' else 'a'} {what}) but no flight-recorder dump")
    entries = data.get("entries")
    if isinstance(entries, list):
        for e in entries:
            if isinstance(e, dict):
                e.pop("frames", None)
    # scalars, then the entries, then the rest: the JSON's head then names "entries" beside the keys that
    # tell a dump (flight_recorder.looks_like_dump reads the first 64 KiB), however large pg_config is
    order = sorted(data, key=lambda k: 0 if not isinstance(data[k], (dict, list)) else 1 if k == "entries" else 2)
    # the memo lets one container appear many times (torch shares equal stack frames that way): n pickled
    # references can stand for 2**n copies, so the size of the JSON is reckoned before it is written
    try:
        written = json_size(data, cap=limit)
    except ValueError:
        raise PickleRefused("it refers to itself") from None
    if written > limit:
        raise PickleRefused(f"written out as JSON it would pass {human(limit)}, more than a flight-recorder dump")
    try:
        return json.dumps({k: data[k] for k in order}, ensure_ascii=False).encode("utf-8", "replace")
    except RecursionError:
        raise PickleRefused("it is nested too deeply") from None
    except (ValueError, TypeError) as exc:
        raise PickleRefused(f"it cannot be written as JSON ({type(exc).__name__})") from None


def json_size(root: Any, cap: int) -> int:
    """About how many bytes ``root`` (lists, dicts and scalars, as
    :func:`load_plain` returns) takes as JSON, every shared reference written
    out in full; counting stops past ``cap``. Iterative, each container
    once. Raises ValueError when a container holds itself."""

    def leaf(v) -> int:
        return len(v) + 2 if type(v) is str else 24

    size: dict = {}  # id -> bytes, for containers done
    on_path: set = set()
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        kind = type(node)
        if kind is not list and kind is not dict:
            continue
        key = id(node)
        values = node.values() if kind is dict else node
        if done:
            on_path.discard(key)
            total = 2 + sum(size[id(v)] if type(v) in (list, dict) else leaf(v) for v in values) + 2 * len(node)
            if kind is dict:
                total += sum(leaf(k) for k in node)
            size[key] = min(total, cap + 1)
            continue
        if key in size:
            continue
        if key in on_path:
            raise ValueError("a container holds itself")
        on_path.add(key)
        stack.append((node, True))
        stack.extend((v, False) for v in values if type(v) in (list, dict) and id(v) not in size)
    return size[id(root)] if type(root) in (list, dict) else leaf(root)
