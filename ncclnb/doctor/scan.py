"""Stream a byte source and yield only the lines worth reading.

The bulk of an NCCL_DEBUG=INFO log is channel and ring set-up that no
signature cares about, so per-line Python work would dominate. Instead each
chunk (a few MiB) is searched in C for the knowledge base's trigger
substrings (:data:`ncclnb.doctor.kb.TRIGGERS`); only the lines that contain
one are cut out and numbered. Memory stays at one chunk plus one (bounded)
line, however large the input.

The rule, whatever the path: a line is a candidate when its first
``max_line`` bytes contain a trigger; it is yielded cut to ``max_line``
bytes. Two filters implement it and give the same lines:

* small regions: one ``bytes.find`` sweep per trigger;
* large regions (numpy present): one vectorised lookup of every 4-byte
  window at an even offset in a table of hashed grams holding, for each
  trigger, one gram it must contain at an even and one at an odd offset (the
  rarest such grams of the data seen first); the few lines with a flagged
  window are then checked for a trigger in Python. The cost does not grow
  with the number of triggers.

When the caller says which messages it has read and found inert (``skip``:
:class:`ncclnb.doctor.collapse.InertRests`), regions of a log take the bulk
path (:class:`BulkSkip`): the lines the gram table flags (the only ones
that can hold a trigger; the others are never cut out) are split at their
first ``"]"``, and whether a line is a candidate, and whether the caller
needs it at all, is decided once per distinct head and rest, in C-level maps
and numpy, so that the lines repeated by every rank cost no Python of their
own.

Large regular files are scanned in parallel by :class:`ParallelScan`:
newline-aligned byte ranges go to a small process pool; each worker returns
only its candidate lines (range-relative line numbers) and its line count,
and the caller adds the counts up to number lines globally, in file order.
Given the caller's inert rests (``skip``), workers also leave out the lines
the caller needs no more (:func:`ncclnb.doctor.collapse.skip_inert`); the
file's first quarter-range is then read in the caller's process before any
task is handed out, so that the tasks' snapshots already hold what it found
inert.
Workers read the file the caller opened (through ``/proc/<pid>/fd/<n>``,
checked by device and inode), never whatever the path names by then, and die
with the caller (``PR_SET_PDEATHSIG``). The many smaller files of a directory
of per-rank logs go to the same kind of pool whole, a few per task
(:class:`FilesAhead`), while the caller reads them in order.

Input that is not a log ends the scan with ``not_a_log`` set rather than
running on: bytes that are not text (a core file, ``/dev/zero``,
``/dev/urandom``) with no candidate line and no text block in the first
BINARY_BUDGET bytes, or, on a stream that may never end (a pipe, a device),
no line break in the first MAX_NO_NEWLINE bytes.
"""

from __future__ import annotations

import os
import re
import signal
import sys
from collections import deque
from itertools import repeat as _repeat
from operator import itemgetter
from contextlib import contextmanager
from typing import BinaryIO, Callable, Iterator, NamedTuple, Optional, cast

from ..errors import NcclnbError, tolerate
from .collapse import looks_back
from .kb import TRIGGERS
from .sources import BINARY

CHUNK = 8 << 20  # bytes read at a time
MAX_LINE = 64 << 10  # longer lines are cut here; the rest of the line is skipped
PIECE = 1 << 20  # bytes per read call
NUMPY_MIN = 16 << 10  # regions at least this large use the numpy filter (when numpy imports): a per-rank file too
PARALLEL_MIN = 64 << 20  # regular files at least this large are scanned by a process pool
RANGE = 16 << 20  # bytes per parallel task
WORKER_CHUNK = 4 << 20  # bytes a worker reads at a time (smaller: several workers stay within memory)
MAX_WORKERS = 4
MANY_HITS = 64  # flagged windows in a region past which lines are numbered at once (numpy), not one by one
MAX_TASK_CANDIDATES = 50_000  # a worker stops collecting here; the caller scans the rest itself
TEXT_BLOCK = 64 << 10  # bytes judged text or binary at once
BINARY_BUDGET = 32 << 20  # bytes of binary data read, with no text and no candidate line, before giving up
MAX_NO_NEWLINE = 256 << 20  # a stream with no line break in this many bytes is not read further
PR_SET_PDEATHSIG = 1  # linux/prctl.h
# bytes that text never holds (NUL and the C0 controls but tab, newlines, form feed, backspace and ESC)
_CONTROL = bytes(range(0, 8)) + bytes(range(14, 27)) + bytes(range(28, 32)) + b"\x7f"

_LITERALS = tuple(t.encode() for t in TRIGGERS)
_ORDER = _LITERALS  # has_trigger's test order: triggers the input shows move to the front
# NCCL's per-rank prefix (host:pid:tid [dev]). No trigger holds its closing "]", so none spans the cut after it:
# a line holds a trigger when its prefix or its rest does, and both repeat across ranks (memoised, bounded)
_PREFIX = re.compile(rb"[A-Za-z][\w.-]{0,254}:[0-9]{1,9}:[0-9]{1,9} \[[0-9]{1,4}\]")
_SPLIT = not any(b"]" in lit for lit in _LITERALS)
MAX_MEMO = 1 << 15
_memo: dict = {}


def has_trigger(line: bytes) -> bool:
    """True when ``line`` contains one of the trigger substrings."""
    m = _PREFIX.match(line) if _SPLIT else None
    if m is None:
        return _has_trigger(line)
    cut = m.end()
    rest = line[cut:]
    hit = _memo.get(rest)
    if hit is None:
        if len(_memo) >= MAX_MEMO:
            _memo.clear()
        hit = _memo[rest] = _has_trigger(rest)
    if hit:
        return True
    head = line[:cut]
    hit = _memo.get(head)
    if hit is None:
        if len(_memo) >= MAX_MEMO:
            _memo.clear()
        hit = _memo[head] = _has_trigger(head)
    return hit


def _has_trigger(line: bytes) -> bool:
    global _ORDER
    order = _ORDER
    for i, lit in enumerate(order):
        if lit in line:
            if i > 3:  # rebinding a new tuple is atomic: threads may lose a move, never a trigger
                _ORDER = (lit,) + order[:i] + order[i + 1 :]
            return True
    return False


def looks_binary(block: bytes) -> bool:
    """True when more than 1 byte in 20 of ``block`` is one text never holds
    (NUL, most control characters): a core file, zeros, random bytes, UTF-16.
    Bytes >= 0x80 count as text (UTF-8, or some 8-bit code page)."""
    if not block:
        return False
    return (len(block) - len(block.translate(None, _CONTROL))) * 20 > len(block)


def _has_text_block(data: bytes) -> bool:
    """Does ``data`` hold a TEXT_BLOCK (or, when shorter, is it) that looks like text?"""
    if len(data) <= TEXT_BLOCK:
        return not looks_binary(data)
    return any(not looks_binary(data[i : i + TEXT_BLOCK]) for i in range(0, len(data) - TEXT_BLOCK + 1, TEXT_BLOCK))


# ---- the filters ----------------------------------------------------------
def _find_starts(data: bytes, start: int, end: int) -> list[int]:
    """Start offsets of lines in data[start:end] that contain a trigger."""
    starts = set()
    find, rfind = data.find, data.rfind
    for lit in _LITERALS:
        i = find(lit, start, end)
        while i >= 0:
            st = rfind(b"\n", start, i) + 1
            starts.add(st if st > start else start)
            nl = find(b"\n", i, end)
            if nl < 0:
                break
            i = find(lit, nl + 1, end)
    return sorted(starts)


def _py_filter(data: bytes, start: int, end: int, max_line: int) -> tuple[list, int]:
    """((line index within the region, line bytes), ...), newlines in the region.
    data[start:end] holds complete lines (ends with a newline)."""
    out = []
    count, find = data.count, data.find
    idx, pos = 0, start
    for st in _find_starts(data, start, end):
        idx += count(b"\n", pos, st)
        pos = st
        stop = find(b"\n", st, end)
        if stop < 0:
            stop = end
        if stop - st > max_line:
            line = data[st : st + max_line]
            if not has_trigger(line):
                continue
        else:
            line = data[st:stop]
        out.append((idx, line))
    return out, idx + count(b"\n", pos, end)


class _QuadTable:
    """The numpy filter: a table of hashed 4-byte grams. For each trigger it
    holds one gram the trigger must contain at an even offset of the buffer
    and one at an odd offset (the rarest such grams of the data seen first);
    every 4-byte window at an even offset is looked up at once."""

    BITS = 20
    MULT = 0x9E3779B1

    def __init__(self, np, sample: bytes):
        self.np = np
        self.mult, self.shift = np.uint32(self.MULT), np.uint32(32 - self.BITS)
        freq = np.zeros(1 << self.BITS, dtype=np.int64)
        for off in (0, 2):
            if len(sample) >= off + 4:
                words = np.frombuffer(sample, "<u4", count=(len(sample) - off) // 4, offset=off)
                freq += np.bincount(self._hash(words), minlength=1 << self.BITS)
        table = np.zeros(1 << self.BITS, dtype=bool)
        for lit in _LITERALS:
            if len(lit) < 5:  # a gram at both alignments needs 5 bytes
                raise ValueError(f"trigger {lit!r} is too short for the gram filter")
            for parity in (0, 1):
                grams = [self._hash1(lit[j : j + 4]) for j in range(parity, len(lit) - 3, 2)]
                table[min(grams, key=lambda g: freq[g])] = True
        self.table = table
        self._room = 0

    def _hash(self, words):
        return (words * self.mult) >> self.shift

    def _hash1(self, gram: bytes) -> int:
        return ((int.from_bytes(gram, "little") * self.MULT) & 0xFFFFFFFF) >> (32 - self.BITS)

    def _scratch(self, size: int) -> None:
        """Scratch arrays for a region of ``size`` bytes, reused: fresh ones per chunk cost page faults."""
        if self._room < size:
            np = self.np
            self._room = max(size, 1 << 20)
            self._nl = np.empty(self._room, dtype=bool)
            self._h32 = np.empty(self._room // 4 + 1, dtype=np.uint32)
            self._hix = np.empty(self._room // 4 + 1, dtype=np.intp)
            self._hit = np.empty(self._room // 4 + 1, dtype=bool)

    def newlines(self, data: bytes, start: int, end: int):
        """The offsets in ``data`` of the newlines in data[start:end], ascending."""
        np = self.np
        size = end - start
        self._scratch(size)
        is_nl = np.equal(np.frombuffer(data, np.uint8, count=size, offset=start), 10, out=self._nl[:size])
        return np.flatnonzero(is_nl) + start

    def flagged(self, data: bytes, start: int, end: int):
        """The offsets of the flagged windows of data[start:end] (unsorted; some may lie just
        before ``start``): every line of the region that holds a trigger holds one of them."""
        np = self.np
        self._scratch(end - start)
        found = self._windows(data, start, end)
        return np.concatenate(found) if found else np.zeros(0, dtype=np.intp)

    def _windows(self, data: bytes, start: int, end: int) -> list:
        """The flagged window offsets, as one array per alignment that has any."""
        np = self.np
        s0 = start & ~1  # even offsets of data; a window that starts before start is harmless
        found = []
        for off in (0, 2):
            n = (end - s0 - off) // 4
            if n > 0:
                words = np.frombuffer(data, "<u4", count=n, offset=s0 + off)
                h32, hix, hit = self._h32[:n], self._hix[:n], self._hit[:n]
                np.multiply(words, self.mult, out=h32)
                np.right_shift(h32, self.shift, out=h32)
                hix[...] = h32
                self.table.take(hix, out=hit)
                hits = np.flatnonzero(hit)
                if hits.size:
                    found.append(hits * 4 + (s0 + off))
        return found

    def filter(self, data: bytes, start: int, end: int, max_line: int) -> tuple[list, int]:
        np = self.np
        size = end - start
        self._scratch(size)
        is_nl = np.equal(np.frombuffer(data, np.uint8, count=size, offset=start), 10, out=self._nl[:size])
        total = int(np.count_nonzero(is_nl))
        found = self._windows(data, start, end)
        if not found:
            return [], total
        pos = np.unique(np.concatenate(found)) if len(found) > 1 else found[0]
        out = []
        if pos.size > MANY_HITS:
            # many hits: number them all at once from the newline positions
            newlines = np.flatnonzero(is_nl) + start
            idxs = np.unique(np.searchsorted(newlines, pos))
            bounds = np.concatenate(([start - 1], newlines, [end]))  # line i runs from bounds[i] + 1 to bounds[i + 1]
            starts = bounds[idxs] + 1
            stops = np.minimum(bounds[idxs + 1], starts + max_line)
            for idx, st, stop in zip(idxs.tolist(), starts.tolist(), stops.tolist()):
                line = data[st:stop]
                if has_trigger(line):
                    out.append((idx, line))
            return out, total
        rfind, find = data.rfind, data.find
        idx, prev, last = 0, start, -1
        for p in pos.tolist():
            if p < start or p <= last:
                continue  # before the region, or on the line just looked at
            st = rfind(b"\n", start, p) + 1 or start
            if st < start:
                st = start
            last = find(b"\n", p, end)
            if last < 0:
                last = end
            idx += int(np.count_nonzero(is_nl[prev - start : st - start]))
            prev = st
            line = data[st : min(last, st + max_line)]
            if has_trigger(line):
                out.append((idx, line))
        return out, total


_TABLE: Optional[_QuadTable] = None
_NUMPY_FAILED = False


def _gram_table(data: bytes, start: int) -> Optional[_QuadTable]:
    """The gram table, built from the first data seen (data[start:] here when none is built yet);
    None without numpy."""
    global _TABLE, _NUMPY_FAILED
    if _TABLE is None and not _NUMPY_FAILED:
        try:
            import numpy

            _TABLE = _QuadTable(numpy, data[start : start + (4 << 20)])
        except Exception as exc:  # no numpy (or a broken one): the find sweeps give the same lines
            tolerate(exc, (ImportError, OSError))
            _NUMPY_FAILED = True
    return _TABLE


def _filter(data: bytes, start: int, end: int, max_line: int, numpy_min: Optional[int] = None) -> tuple[list, int]:
    if end - start >= (NUMPY_MIN if numpy_min is None else numpy_min):
        table = _gram_table(data, start)
        if table is not None:
            return table.filter(data, start, end, max_line)
    return _py_filter(data, start, end, max_line)


# ---- the bulk path: lines that differ only in NCCL's prefix, read once ---------
# NCCL's prefix up to its "]" (collapse.PREFIX without the "]" and the blank after it)
_HEAD = re.compile(rb"([A-Za-z][\w.-]{0,254}):[0-9]{1,9}:[0-9]{1,9} \[[0-9]{1,4}")
BULK_MIN = 16 << 10  # regions at least this large take the bulk path when the caller skips inert lines
BULK_DENSITY = 0.05  # a region with fewer candidate lines than this share sends the next one the ordinary way
BULK_MAX_NEW = 0.5  # a region where more than this share of the lines are new messages leaves the bulk path
MAX_KEYS = 1 << 16  # distinct heads and rests whose reading is remembered (the tables start again when full)
_rest_code: dict = {}  # rest (bytes after the first "]") -> 1 if it holds a trigger, | 2 if it starts with a blank
_head_code: dict = {}  # head (bytes before it) -> (host id + 1) << 1 | 1 if it holds a trigger; host id -1: not NCCL's
_host_ids: dict = {}  # host bytes -> host id (an index into _hosts)
_hosts: list = []
_FIRST, _THIRD = itemgetter(0), itemgetter(2)
_EPOCH = [0]  # bumped when host ids start again


def _holding_trigger(pieces: list) -> set:
    """The indices of ``pieces`` (bytes without a newline, none longer than
    MAX_LINE) that hold a trigger: one filter over them all, joined."""
    blob = b"\n".join(pieces) + b"\n"
    # the gram filter however few they are: the find sweeps cost one pass per trigger
    return {idx for idx, _ in _filter(blob, 0, len(blob), MAX_LINE, numpy_min=0)[0]}


def _code_rests(new) -> None:
    new = list(new)
    hit = _holding_trigger(new)
    for i, rest in enumerate(new):
        _rest_code[rest] = (i in hit) | (2 if rest[:1] == b" " else 0)


def _code_heads(new) -> None:
    new = list(new)
    # each head filtered with the "]" that follows it in the log (no trigger holds one): the gram table's windows
    # then look like the log it was sampled from, not like heads cut off by a newline
    hit = _holding_trigger([head + b"]" for head in new])
    for i, head in enumerate(new):
        m = _HEAD.fullmatch(head)
        hid = -1
        if m is not None:
            host = m.group(1)
            hid = _host_ids.get(host)
            if hid is None:
                hid = _host_ids[host] = len(_hosts)
                _hosts.append(host)
        _head_code[head] = ((hid + 1) << 1) | (i in hit)


class _Region(NamedTuple):
    """What :meth:`BulkSkip.region` read of a region, for :meth:`BulkSkip.emit`."""

    out: list  # the lines to hand over, in order, the pending one carried in front where it belongs
    rest_from: Callable  # line number -> every candidate of the region after it
    lines: int  # lines in the region
    generation: int  # the caller's generation when the region was read
    after: Optional[tuple]  # the line pending after the region
    carried: Optional[tuple]  # the line pending before it
    candidates: int  # candidate lines in the region


class BulkSkip:
    """The candidate lines of a region of complete lines, less those the
    caller needs no more, found without per-line Python work: what
    :func:`~ncclnb.doctor.collapse.skip_inert` does after :func:`_filter`,
    line for line, but decided per distinct message.

    Every line with a window the gram table flags (a line with none holds no
    trigger) is split at its first ``"]"`` (no trigger holds one, so a line
    holds a trigger when its head or its rest does); heads and rests are read
    once each (whether they hold a trigger; whether the head is NCCL's
    ``host:pid:tid [dev`` and whose host). A candidate line is skipped when
    its prefix is NCCL's, its rest is one of ``inert.rests`` (messages the
    caller read, found inert and still caches) and its host showed before in
    this source; a line skipped right before a kept line that reads the line
    before it (:func:`~ncclnb.doctor.collapse.looks_back`) is handed over
    before it, as skip_inert does. ``inert.generation`` is looked at before
    each line handed over: once it changes (the caller emptied its cache),
    the rest of the region's candidates are handed over, every one.

    Requires numpy and triggers without ``"]"``; :meth:`region` returns None
    where the bulk path would not pay (over-long lines, mostly new messages;
    the scanner also sends a region the ordinary way after one with few candidates)
    and the caller then filters the region the ordinary way."""

    def __init__(self, np, inert):
        self.np, self.inert = np, inert
        self.seen = np.zeros(0, dtype=bool)  # host id -> showed in this source (skip_inert's hosts)
        self.pending: Optional[tuple] = None  # the last line skipped since the last one handed over
        self.off = False  # mostly new messages: this source leaves the bulk path
        self.epoch = _EPOCH[0]

    def region(self, data: bytes, start: int, end: int, max_line: int, base: int) -> Optional[_Region]:
        """The region data[start:end] read for :meth:`emit` (a :class:`_Region`),
        or None where the bulk path would not pay. ``base``: lines before the
        region (its first is ``base + 1``)."""
        if self.off:
            return None
        np = self.np
        table = _gram_table(data, start)
        if table is None:
            return None
        newlines = table.newlines(data, start, end)
        n = int(newlines.size)  # the region ends with a newline
        if not n:
            return None
        bounds = np.concatenate(([start - 1], newlines))  # line i runs from bounds[i] + 1 to bounds[i + 1]
        if int(np.diff(bounds).max()) - 1 > max_line:
            return None
        # only a line with a flagged window can hold a trigger: the others (most of a log) are never cut out.
        # ``lines`` are the flagged lines, ``line_at`` their indices in the region; indices below are into ``lines``
        line_at = np.unique(np.searchsorted(newlines, table.flagged(data, start, end)))
        lines = list(map(data.__getitem__, map(slice, (bounds[line_at] + 1).tolist(), bounds[line_at + 1].tolist())))
        flagged = len(lines)
        parts = list(map(bytes.partition, lines, _repeat(b"]")))
        heads = list(map(_FIRST, parts))
        rests = list(map(_THIRD, parts))
        del parts
        distinct_rests, distinct_heads = set(rests), set(heads)
        if len(distinct_rests) > MAX_KEYS or len(distinct_heads) > MAX_KEYS:
            return None
        new_rests = distinct_rests.difference(_rest_code)
        if len(new_rests) > flagged * BULK_MAX_NEW and flagged >= 1024:
            self.off = True
            return None
        if len(_rest_code) + len(new_rests) > MAX_KEYS:  # the table starts again
            _rest_code.clear()
            new_rests = distinct_rests
        if new_rests:
            _code_rests(new_rests)
        new_heads = distinct_heads.difference(_head_code)
        if len(_head_code) + len(new_heads) > MAX_KEYS or len(_hosts) + len(new_heads) > MAX_KEYS:
            _head_code.clear()
            new_heads = distinct_heads
            if len(_hosts) + len(new_heads) > MAX_KEYS:  # host ids start again: no scanner's hosts count as shown
                _host_ids.clear()
                _hosts.clear()
                _EPOCH[0] += 1
        if new_heads:
            _code_heads(new_heads)
        if self.epoch != _EPOCH[0]:
            self.epoch, self.seen = _EPOCH[0], np.zeros(0, dtype=bool)
        rc = np.fromiter(map(_rest_code.__getitem__, rests), np.int64, flagged)
        hc = np.fromiter(map(_head_code.__getitem__, heads), np.int64, flagged)
        cand = ((rc | hc) & 1).astype(bool)
        gen = self.inert.generation
        host = (hc >> 1) - 1
        skippable = cand & (host >= 0) & ((rc & 2) > 0)
        if skippable.any():
            known = self.inert.rests
            at = np.flatnonzero(skippable)
            inert = np.fromiter(map(known.__contains__, map(rests.__getitem__, at.tolist())), bool, at.size)
            at = at[inert]
        else:
            at = np.zeros(0, dtype=np.intp)
        if at.size:
            # the first line of a host not shown before is kept, and shows it
            hosts = host[at]
            if int(hosts.max()) >= self.seen.size:
                self.seen = np.concatenate((self.seen, np.zeros(int(hosts.max()) + 1 - self.seen.size, bool)))
            uniq, first = np.unique(hosts, return_index=True)
            fresh = ~self.seen[uniq]
            keep_first = at[first[fresh]]
            self.seen[uniq[fresh]] = True
            skipped = np.setdiff1d(at, keep_first, assume_unique=True)
        else:
            skipped = at
        cand_at = np.flatnonzero(cand)
        kept = np.setdiff1d(cand_at, skipped, assume_unique=True) if skipped.size else cand_at
        # before a kept line that reads the line before it (collapse.looks_back), the skipped line right
        # before it
        out = []
        carried = self.pending
        b1 = base + 1
        if kept.size and skipped.size:
            j = np.searchsorted(skipped, kept) - 1
            prev = np.concatenate(([-1], kept[:-1]))
            before = np.where(j >= 0, skipped[np.maximum(j, 0)], -1)
            since = before > prev  # a line skipped since the kept line before
            lead = since & (line_at[np.maximum(before, 0)] + 1 == line_at[kept])
            for i in np.flatnonzero(lead).tolist():
                lead[i] = looks_back(lines[int(kept[i])], lines[int(before[i])])
            order = np.concatenate((kept, before[lead]))
            order.sort()
            carry = not since[0]
        else:
            order = kept
            carry = bool(kept.size)
        if carry and carried is not None:
            first = int(kept[0])
            if carried[0] + 1 == int(line_at[first]) + b1 and looks_back(lines[first], carried[1]):
                out.append(carried)
        out.extend(zip((line_at[order] + b1).tolist(), map(lines.__getitem__, order.tolist())))
        if skipped.size and (not kept.size or skipped[-1] > kept[-1]):
            after = (int(line_at[skipped[-1]]) + b1, lines[int(skipped[-1])])
        else:
            after = carried if not kept.size else None

        def rest_from(line_no: int) -> list:
            """Every candidate of the region after ``line_no``."""
            idx = cand_at[line_at[cand_at] + b1 > line_no]
            return list(zip((line_at[idx] + b1).tolist(), map(lines.__getitem__, idx.tolist())))

        return _Region(out, rest_from, n, gen, after, carried, int(cand_at.size))

    def emit(self, got) -> Iterator[tuple[int, bytes]]:
        """Hand over a region's lines (from :meth:`region`), watching the caller's generation."""
        inert = self.inert
        last = -1
        for item in got.out:
            if inert.generation != got.generation:
                # the caller emptied its cache: what was skipped may matter again, so every candidate not
                # handed over yet is (the line carried from before the region first)
                self.pending = None
                if got.carried is not None and got.carried[0] > last:
                    yield got.carried
                yield from got.rest_from(last)
                return
            yield item
            last = item[0]
        self.pending = got.after

    def flush(self, before: Optional[tuple] = None) -> Iterator[tuple[int, bytes]]:
        """The pending line at the end of the scan (``before`` None: the caller, or whoever reads
        the next range, decides), or before ``before``, a line handed over by another path, when
        that line reads the line before it."""
        if self.pending is not None:
            item, self.pending = self.pending, None
            if before is None or (item[0] + 1 == before[0] and looks_back(before[1], item[1])):
                yield item


def _bulk_skip(skip) -> Optional[BulkSkip]:
    try:
        import numpy
    except ImportError:
        return None
    return BulkSkip(numpy, skip)


# ---- streaming --------------------------------------------------------------
class LineScanner:
    """Iterate ``(line_number, raw_bytes)`` for candidate lines of ``stream``.

    ``lines_read`` holds the number of lines seen once iteration ends (a last
    line without newline counts). ``truncated`` is set when the stream ended
    early with an error (a cut .gz); iteration then stops quietly. ``limit``
    stops after that many bytes (a range of a file). ``max_candidates`` stops
    early, after the chunk where that many candidates were reached, with
    ``stopped_at`` = bytes consumed (always the end of a complete line).

    ``binary`` (the first bytes looked binary) keeps judging what is read:
    once a candidate line or a text block shows up it is a log; with neither
    in BINARY_BUDGET bytes, or at the end, iteration stops with
    ``not_a_log`` = :data:`~ncclnb.doctor.sources.BINARY`. ``max_no_newline``
    (for streams that may never end) stops after that many bytes without a
    line break: ``not_a_log`` when nothing came before, else ``truncated``."""

    def __init__(
        self,
        stream: BinaryIO,
        chunk: Optional[int] = None,
        max_line: Optional[int] = None,
        limit: Optional[int] = None,
        max_candidates: Optional[int] = None,
        piece: int = PIECE,
        binary: bool = False,
        max_no_newline: Optional[int] = None,
        skip=None,
    ):
        self.stream = stream
        self._bulk: Optional[BulkSkip] = None  # made at the first region large enough (numpy is imported then)
        self._skip = skip if _SPLIT else None
        self.piece = piece
        self.chunk = chunk or CHUNK
        self.max_line = max_line or MAX_LINE
        self.limit = limit
        self.max_candidates = max_candidates
        self.lines_read = 0
        self.bytes_read = 0
        self.truncated = ""
        self.stopped_at: Optional[int] = None
        self.binary = binary
        self.max_no_newline = max_no_newline
        self.not_a_log = ""

    def _read(self) -> bytes:
        # in pieces, so a stream that breaks (a cut .gz) loses at most one piece
        want = self.chunk if self.limit is None else min(self.chunk, self.limit - self.bytes_read)
        pieces, size = [], 0
        while size < want and not self.truncated:
            try:
                piece = self.stream.read(min(self.piece, want - size))
            except (EOFError, OSError, ValueError) as exc:  # truncated or corrupt compressed stream
                self.truncated = f"{type(exc).__name__}: {exc}".splitlines()[0] or type(exc).__name__
                break
            if not piece:
                break
            pieces.append(piece)
            size += len(piece)
        data = b"".join(pieces) if len(pieces) != 1 else pieces[0]
        self.bytes_read += len(data)
        return data

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        max_line = self.max_line
        bulk = self._bulk
        dense = True  # the last region's candidates were many enough for the bulk path to pay
        carry = b""  # the start of a line the last chunk did not finish
        skipping = False  # inside the cut-off tail of an over-long line
        base = 0  # complete lines before the current position
        found = 0
        consumed = 0  # bytes before the current chunk
        after_nl = 0  # bytes consumed up to the last line break
        while True:
            if self.max_candidates is not None and found >= self.max_candidates and not skipping:
                # stop at the start of the unfinished line; whoever goes on starts there
                self.stopped_at = consumed - len(carry)
                carry = b""
                break
            if self.binary and not found and consumed >= BINARY_BUDGET:
                self.not_a_log = BINARY
                break
            data = self._read()
            if not data:
                break
            if self.binary and (found or _has_text_block(data)):
                self.binary = False
            if self.max_no_newline is not None:
                nl = data.rfind(b"\n")
                if nl >= 0:
                    after_nl = consumed + nl + 1
                elif consumed + len(data) - after_nl > self.max_no_newline:
                    why = f"no line break in the first {self.max_no_newline >> 20} MiB"
                    if after_nl or found:
                        self.truncated = why.replace("the first", "its last") + "; stopped reading there"
                    else:
                        self.not_a_log = why + ", not a log"
                    break
            consumed += len(data)
            pos = 0
            if skipping:
                nl = data.find(b"\n")
                if nl < 0:
                    continue
                pos, skipping = nl + 1, False
                base += 1
            if carry:
                nl = data.find(b"\n", pos)
                room = max_line - len(carry)
                if nl < 0 and len(data) - pos <= room:
                    carry += data[pos:]
                    continue
                # the carried line ends here or is cut here: only its head is kept
                head = carry + data[pos : pos + room] if nl < 0 or nl - pos > room else carry + data[pos:nl]
                carry = b""
                if has_trigger(head):
                    if bulk is not None:
                        yield from bulk.flush((base + 1, head))
                    found += 1
                    yield base + 1, head
                if nl < 0:
                    skipping = True
                    continue
                base += 1
                pos = nl + 1
            end = data.rfind(b"\n", pos) + 1
            if end > pos:
                if bulk is None and self._skip is not None and end - pos >= BULK_MIN:
                    bulk = self._bulk = _bulk_skip(self._skip)
                    if bulk is None:  # no numpy: the ordinary way, as without skip
                        self._skip = None
                got = (
                    bulk.region(data, pos, end, max_line, base) if bulk is not None and dense and end - pos >= BULK_MIN else None
                )
                if got is not None:
                    for item in bulk.emit(got):
                        found += 1
                        yield item
                    base += got.lines
                    dense = got.candidates >= got.lines * BULK_DENSITY
                else:
                    cands, lines = _filter(data, pos, end, max_line)
                    if cands and bulk is not None:
                        yield from bulk.flush((base + 1 + cands[0][0], cands[0][1]))
                    for idx, line in cands:
                        yield base + 1 + idx, line
                    found += len(cands)
                    base += lines
                    dense = len(cands) >= lines * BULK_DENSITY
                pos = end
            if pos < len(data):
                if len(data) - pos > max_line:
                    head = data[pos : pos + max_line]
                    if has_trigger(head):
                        if bulk is not None:
                            yield from bulk.flush((base + 1, head))
                        found += 1
                        yield base + 1, head
                    skipping = True
                else:
                    carry = data[pos:]
        if bulk is not None:
            yield from bulk.flush()
        if carry and has_trigger(carry):
            found += 1
            yield base + 1, carry
        if carry or skipping:
            base += 1
        if self.binary and not found and consumed and not self.not_a_log:
            self.not_a_log = BINARY
        self.lines_read = base


# ---- parallel scanning of large regular files ------------------------------
class _Range:
    """A read-only view of bytes [start, stop) of an open file."""

    def __init__(self, fh, stop: int):
        self.fh, self.left = fh, stop - fh.tell()

    def read(self, n: int) -> bytes:
        data = self.fh.read(min(n, self.left)) if self.left > 0 else b""
        self.left -= len(data)
        return data


class _Pread:
    """seek/tell/read over a descriptor with ``os.pread``, up to ``stop``: the
    owner's file offset (and its buffered reader) stay where they were."""

    def __init__(self, fd: int, start: int = 0, stop: Optional[int] = None):
        self.fd, self.pos, self.stop = fd, start, stop

    def seek(self, pos: int) -> None:
        self.pos = pos

    def tell(self) -> int:
        return self.pos

    def read(self, n: int) -> bytes:
        if self.stop is not None:
            n = min(n, self.stop - self.pos)
        if n <= 0:
            return b""
        data = os.pread(self.fd, n, self.pos)
        self.pos += len(data)
        return data


class NotTheFile(OSError, NcclnbError):
    """A worker opened something other than the caller's file: the caller reads that range itself
    (a signal between the scanner's parts, not the user's mistake)."""


def scan_range(
    path: str,
    start: int,
    stop: int,
    chunk: Optional[int] = None,
    max_line: Optional[int] = None,
    max_candidates: Optional[int] = None,
    identity: Optional[tuple[int, int]] = None,
    skip: Optional[frozenset] = None,
) -> tuple[list, int, str, Optional[int]]:
    """The worker: candidates of bytes [start, stop) of ``path`` (a range that
    begins at a line start) as ``[(range-relative line number, bytes)]``, the
    number of lines in the range, a truncation message ("" when none), and the
    byte offset where it stopped early because it reached ``max_candidates``
    (None when it read the whole range). ``identity`` (device, inode): raise
    :class:`NotTheFile` unless ``path`` opens that very file. ``skip``: rests
    the caller knows inert (:func:`ncclnb.doctor.collapse.skip_inert` drops
    their lines here, so they are neither shipped nor read again)."""
    with open(path, "rb") as fh:
        if identity is not None:
            st = os.fstat(fh.fileno())
            if (st.st_dev, st.st_ino) != tuple(identity):
                raise NotTheFile(f"{path} is no longer the file being scanned")
        fh.seek(start)
        # a plain file cannot break off mid-read: one read per chunk, no pieces to join
        chunk = chunk or WORKER_CHUNK
        scanner = LineScanner(
            _Range(fh, stop),
            chunk=chunk,
            max_line=max_line,
            max_candidates=max_candidates or MAX_TASK_CANDIDATES,
            piece=chunk,
            skip=_Snapshot(skip) if skip else None,
        )
        found = list(scanner)
    stopped = None if scanner.stopped_at is None else start + scanner.stopped_at
    return found, scanner.lines_read, scanner.truncated, stopped


class _Snapshot:
    """The caller's inert rests as a task received them: they never change (generation 0)."""

    generation = 0

    def __init__(self, rests: frozenset):
        self.rests = rests


def split_ranges(fh, size: int, step: int) -> list[tuple[int, int]]:
    """Byte ranges of about ``step`` bytes that each begin at a line start."""
    cuts = [0]
    at = step
    while at < size:
        fh.seek(at)
        while True:  # the next newline at or after ``at``, read in pieces
            piece = fh.read(PIECE)
            if not piece:
                at = size
                break
            nl = piece.find(b"\n")
            if nl >= 0:
                at += nl + 1
                break
            at += len(piece)
        if at >= size:
            break
        cuts.append(at)
        at += step
    cuts.append(size)
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


def workers_for(size: int) -> int:
    """How many worker processes a regular file of ``size`` bytes gets (0: scan
    it in this process): one per CPU this process may use, at most
    MAX_WORKERS, for files of PARALLEL_MIN bytes or more. The environment
    variable NCCLNB_DOCTOR_WORKERS overrides the count (0 or 1: never)."""
    if size < PARALLEL_MIN:
        return 0
    env = os.environ.get("NCCLNB_DOCTOR_WORKERS", "").strip()
    if env:
        try:
            n = int(env)
        except ValueError:
            n = -1
        if n >= 0:
            return min(n, 64) if n > 1 else 0
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return min(MAX_WORKERS, cpus) if cpus > 1 else 0


def _worker_init(parent: int) -> None:
    """First thing in every worker: die with the caller, however it dies
    (``PR_SET_PDEATHSIG``; a caller already gone before that was armed shows as
    another parent pid), and leave Ctrl-C, SIGTERM and SIGHUP to the caller,
    which stops the pool itself. A worker killed while it writes a result
    leaves half a message in the pool's result pipe, and the caller's pool
    would wait for the rest for ever; so a worker ignores them, finishes its
    task and leaves when the caller shuts the pool down, or dies with it."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:
        os._exit(1)
    try:
        for sig in _HELD:
            signal.signal(sig, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD)  # held by the caller while it forked
    except (AttributeError, ValueError, OSError):
        pass


_HELD = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP} if hasattr(signal, "SIGHUP") else {signal.SIGINT, signal.SIGTERM}


@contextmanager
def _signals_held():
    """Hold Ctrl-C, SIGTERM and SIGHUP back while the pool forks its workers:
    a handler that raises inside ``os.fork``'s at-fork hooks has its exception
    swallowed there, and the interrupt would be lost. They are delivered when
    the block ends (workers unblock them in :func:`_worker_init`)."""
    import threading

    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    except (OSError, ValueError):
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _pool(workers: int):
    import multiprocessing
    import threading
    from concurrent.futures import ProcessPoolExecutor

    # fork is cheap and safe in a single-threaded process (the CLI); anywhere
    # else (a notebook kernel has threads) start clean interpreters
    method = "fork" if sys.platform.startswith("linux") and threading.active_count() == 1 else "spawn"
    return ProcessPoolExecutor(
        max_workers=workers, mp_context=multiprocessing.get_context(method), initializer=_worker_init, initargs=(os.getpid(),)
    )


def _fd_path(fd: int, fallback: str) -> str:
    """A path that opens the file behind this process's descriptor ``fd`` in
    another process, whatever its name is now: ``/proc/<pid>/fd/<fd>`` on
    Linux; elsewhere the file's name (the workers check its identity)."""
    where = f"/proc/{os.getpid()}/fd/{fd}"
    return where if os.path.exists(where) else fallback


class ParallelScan:
    """Iterate ``(line_number, raw_bytes)`` for the candidate lines of the
    regular file ``path``, scanned by ``workers`` processes, in file order;
    the same lines and numbers as :class:`LineScanner` on the whole file.
    ``lines_read``/``truncated`` as there. ``fd``: the caller's open
    descriptor of the file (else ``path`` is opened once, here); the file read
    is that one, up to its size when the scan starts, even if the path is
    renamed or replaced meanwhile. At most ``2 * workers`` tasks are in
    flight, so memory stays bounded; the pool is shut down however iteration
    ends (tasks not started are cancelled, running ones, a range each, end)."""

    not_a_log = ""

    def __init__(
        self,
        path: str,
        workers: int,
        chunk: Optional[int] = None,
        max_line: Optional[int] = None,
        step: Optional[int] = None,
        max_candidates: Optional[int] = None,
        fd: Optional[int] = None,
        skip=None,
    ):
        self.path, self.workers, self.fd = path, workers, fd
        self.skip = skip  # collapse.InertRests of the caller: each task takes a snapshot
        self.chunk, self.max_line = chunk, max_line or MAX_LINE
        self.step, self.max_candidates = step or RANGE, max_candidates or MAX_TASK_CANDIDATES
        self.lines_read = 0
        self.truncated = ""

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        if self.fd is not None:
            yield from self._scan(self.fd)
            return
        with open(self.path, "rb") as fh:
            yield from self._scan(fh.fileno())

    def _here(self, fd: int, start: int, stop: int, skip=None) -> LineScanner:
        """A scanner of bytes [start, stop) of the caller's file, in this process (``skip``: as LineScanner's)."""
        return LineScanner(_Pread(fd, start, stop), chunk=self.chunk, max_line=self.max_line, skip=skip)

    def _scan(self, fd: int) -> Iterator[tuple[int, bytes]]:
        st = os.fstat(fd)
        size = st.st_size
        ranges = split_ranges(_Pread(fd), size, self.step)
        base = 0
        if self.skip is not None and ranges:
            # the file's first lines are read here, with the caller's skip, before any task is submitted: the
            # caller then knows which messages are inert, and the tasks' snapshots leave out most of their
            # lines (empty, they would ship every candidate of the first ranges, for the caller to drop)
            head = split_ranges(_Pread(fd), ranges[0][1], max(self.step // 4, 1))[0]  # a quarter of a task
            ranges[0:1] = [(head[1], ranges[0][1])] if head[1] < ranges[0][1] else []
            scanner = self._here(fd, 0, head[1], skip=self.skip)
            yield from scanner
            base = scanner.lines_read
            if scanner.truncated or not ranges:
                self.lines_read, self.truncated = base, scanner.truncated
                return
        try:
            pool = _pool(self.workers)
        except Exception as exc:  # no process pool here (no semaphores, no fork): scan in this process
            tolerate(exc, (ImportError, OSError, NotImplementedError))
            pool = None
        if pool is None:
            scanner = self._here(fd, ranges[0][0], size)
            for no, line in scanner:
                yield base + no, line
            self.lines_read, self.truncated = base + scanner.lines_read, scanner.truncated
            return
        where, identity = _fd_path(fd, self.path), (st.st_dev, st.st_ino)
        skip = self.skip
        try:
            pending: deque = deque()
            todo = iter(ranges)
            broken = False

            def submit() -> None:
                nonlocal broken
                for rng in todo:
                    fut = None
                    gen = skip.generation if skip is not None else 0
                    if not broken:
                        try:
                            fut = pool.submit(
                                scan_range,
                                where,
                                rng[0],
                                rng[1],
                                self.chunk,
                                self.max_line,
                                self.max_candidates,
                                identity,
                                frozenset(skip.rests) if skip is not None else None,
                            )
                        except Exception as exc:  # a broken pool takes no more work: the rest is read here
                            tolerate(exc, (RuntimeError, OSError))  # BrokenProcessPool, shut down, fork failed
                            broken = True
                    pending.append((rng, fut, gen))
                    return

            with _signals_held():  # the first submit forks the workers
                for _ in range(2 * self.workers):
                    submit()
            while pending:
                (start, stop), fut, gen = pending.popleft()
                submit()
                try:
                    if fut is None:
                        raise NotTheFile("no worker")
                    found, lines, truncated, stopped = fut.result()
                except Exception as exc:  # a worker died, could not read, or saw another file: read this range here
                    from concurrent.futures import BrokenExecutor  # imported with the pool already

                    tolerate(exc, (OSError, BrokenExecutor))  # NotTheFile is an OSError
                    found, lines, truncated, stopped = [], 0, "", start
                last = 0
                for no, line in found:
                    if skip is not None and skip.generation != gen:
                        break
                    yield base + no, line
                    last = no
                else:
                    last = None
                if last is not None:
                    # the caller's match cache was emptied since the snapshot: the lines the worker dropped
                    # may matter again, so the rest of the range is read here, every candidate
                    again = self._here(fd, start, stop)
                    for no, line in again:
                        if no > last:
                            yield base + no, line
                    lines, truncated, stopped = again.lines_read, again.truncated, None
                base += lines
                if stopped is not None and stopped < stop:
                    # too many candidates to ship at once: stream the rest of the range here
                    rest = self._here(fd, stopped, stop)
                    for no, line in rest:
                        yield base + no, line
                    lines, truncated = rest.lines_read, rest.truncated
                    base += lines
                if truncated:
                    self.truncated = truncated
                    break
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        self.lines_read = base


# ---- parallel scanning of the files of a directory --------------------------
FILES_TASK = 4 << 20  # bytes of files per task: one worker reads them in a row, the caller gets them at once
MAX_FILES_TASK = 16  # files per task (each stays open in the caller until it is read)


def scan_files(
    files: list,
    chunk: Optional[int] = None,
    max_line: Optional[int] = None,
    max_candidates: Optional[int] = None,
    skip: Optional[frozenset] = None,
) -> list:
    """The worker for whole files: :func:`scan_range` of each ``(path, size,
    identity)`` of ``files`` from its first byte to ``size``, in order; one
    result per file read, None for a file it could not read (the caller reads
    that one itself). It stops after the file where the task reached
    ``max_candidates`` candidates: the caller reads the files left over."""
    out: list = []
    left = max_candidates or MAX_TASK_CANDIDATES
    for path, size, identity in files:
        try:
            got = scan_range(path, 0, size, chunk, max_line, left, identity, skip)
        except OSError:  # NotTheFile too: the caller has the file it opened
            out.append(None)
            continue
        out.append(got)
        left -= len(got[0])
        if got[3] is not None or left <= 0:
            break
    return out


class _FilesTask:
    """One task of :class:`FilesAhead`: its future (None: no pool took it) and the caller's generation
    of inert rests when its snapshot was taken."""

    def __init__(self, future, generation: int):
        self.future, self.generation = future, generation
        self._results: Optional[list] = None
        self._done = False

    def results(self) -> Optional[list]:
        """The worker's results, or None when no worker read the files (each is then read in the caller)."""
        if not self._done:
            self._done = True
            if self.future is not None:
                try:
                    self._results = self.future.result()
                except Exception as exc:  # a worker died, or the pool broke: the caller reads these files
                    from concurrent.futures import BrokenExecutor  # imported with the pool already

                    tolerate(exc, (OSError, BrokenExecutor))
            self.future = None
        return self._results


class AheadFile:
    """A scanner of one whole file handed to :class:`FilesAhead`: iterate
    ``(line_number, raw_bytes)`` for its candidate lines, the same lines and
    numbers as :class:`ParallelScan` on that file alone (one range: the whole
    file as it was when it was handed over). ``lines_read``, ``truncated`` and
    ``not_a_log`` as there."""

    not_a_log = ""

    def __init__(self, owner: FilesAhead, fd: int, where: str, size: int, identity: tuple[int, int]):
        self.owner, self.fd, self.where, self.size, self.identity = owner, fd, where, size, identity
        self.task: Optional[_FilesTask] = None
        self.slot = 0
        self.lines_read = 0
        self.truncated = ""

    def _here(self, start: int) -> LineScanner:
        """A scanner of the file from byte ``start`` in this process, every candidate (no skip)."""
        stream = cast(BinaryIO, _Pread(self.fd, start, self.size))
        return LineScanner(stream, chunk=self.owner.chunk, max_line=self.owner.max_line)

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        if self.task is None:  # the caller reached a file still waiting for its task: send what waits now
            self.owner.submit()
        task = self.task
        results = task.results() if task is not None else None
        got = None
        if results is not None and self.slot < len(results):
            got, results[self.slot] = results[self.slot], None  # read once: its lines need not stay in memory
        self.task = None
        stopped: Optional[int]
        found, lines, truncated, stopped = got if got is not None else ([], 0, "", 0)
        skip, gen = self.owner.skip, task.generation if task is not None else 0
        last: Optional[int] = 0
        for no, line in found:
            if skip is not None and skip.generation != gen:
                break
            yield no, line
            last = no
        else:
            last = None
        if last is not None:
            # the caller's match cache was emptied since the snapshot: the lines the worker dropped may
            # matter again, so the rest of the file is read here, every candidate
            again = self._here(0)
            for no, line in again:
                if no > last:
                    yield no, line
            lines, truncated, stopped = again.lines_read, again.truncated, None
        if stopped is not None and stopped < self.size:
            # not read by a worker, or too many candidates to ship at once: the rest is read here
            rest = self._here(stopped)
            for no, line in rest:
                yield lines + no, line
            lines, truncated = lines + rest.lines_read, rest.truncated
        self.lines_read, self.truncated = lines, truncated


class FilesAhead:
    """Whole files (the many per-rank logs of a directory) scanned by
    ``workers`` processes ahead of the caller, which reads them in its own
    order. :meth:`add` hands over a regular file the caller has opened and
    returns its :class:`AheadFile`; files are sent in tasks of about
    FILES_TASK bytes (at most MAX_FILES_TASK files), each with a snapshot of
    the caller's inert rests (``skip``, as :class:`ParallelScan`). Workers
    read the file the caller opened (``/proc/<pid>/fd/<n>``, checked by device
    and inode), so the caller keeps each open until it has read it; the
    caller bounds the tasks in flight (:attr:`waiting`). :meth:`close` shuts
    the pool down (tasks not started are cancelled)."""

    def __init__(
        self,
        workers: int,
        skip=None,
        chunk: Optional[int] = None,
        max_line: Optional[int] = None,
        max_candidates: Optional[int] = None,
    ):
        self.workers, self.skip = workers, skip
        self.chunk, self.max_line, self.max_candidates = chunk, max_line or MAX_LINE, max_candidates
        self._pool = None
        self._broken = False
        self._queued: list = []
        self._queued_bytes = 0
        self._sent: deque = deque()  # tasks sent, oldest first, until their first file is read

    @property
    def waiting(self) -> int:
        """Tasks sent whose files the caller has not started reading."""
        while self._sent and self._sent[0].future is None:
            self._sent.popleft()
        return len(self._sent)

    def add(self, fd: int, path: str, st: os.stat_result) -> AheadFile:
        """Queue the open regular file ``fd`` (``path``, as fstat'd: ``st``); a full task is sent at once."""
        f = AheadFile(self, fd, _fd_path(fd, path), st.st_size, (st.st_dev, st.st_ino))
        self._queued.append(f)
        self._queued_bytes += st.st_size
        if self._queued_bytes >= FILES_TASK or len(self._queued) >= MAX_FILES_TASK:
            self.submit()
        return f

    def submit(self) -> None:
        """Send the files queued as one task."""
        files, self._queued, self._queued_bytes = self._queued, [], 0
        if not files:
            return
        skip = self.skip
        fut = None
        if self._pool is None and not self._broken:
            try:
                self._pool = _pool(self.workers)
            except Exception as exc:  # no process pool here (no semaphores, no fork): the caller reads them
                tolerate(exc, (ImportError, OSError, NotImplementedError))
                self._broken = True
        if self._pool is not None and not self._broken:
            try:
                with _signals_held():  # a submit may fork a worker
                    fut = self._pool.submit(
                        scan_files,
                        [(f.where, f.size, f.identity) for f in files],
                        self.chunk,
                        self.max_line,
                        self.max_candidates,
                        frozenset(skip.rests) if skip is not None else None,
                    )
            except Exception as exc:  # a broken pool takes no more work: the caller reads the rest
                tolerate(exc, (RuntimeError, OSError))
                self._broken = True
        task = _FilesTask(fut, skip.generation if skip is not None else 0)
        for slot, f in enumerate(files):
            f.task, f.slot = task, slot
        if fut is not None:
            self._sent.append(task)

    def close(self) -> None:
        self._queued = []
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
