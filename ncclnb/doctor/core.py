"""``diagnose``: logs of any number of ranks in, ranked findings out.

Four stages, each in its own module: read (here: each input opened, a
flight-recorder dump kept, the lines of a log handed on one by one), match
(:mod:`ncclnb.doctor.match`: every line against the signatures and the
reasoning's patterns), the rank table (:mod:`ncclnb.doctor.rank_table`)
and the findings ranked (:mod:`ncclnb.doctor.ranking`).
"""

from __future__ import annotations

import io
import os
import re
import stat
import zlib
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Optional

from ..errors import tolerate
from ..model import Diagnosis
from . import flight_recorder as fr
from . import ras
from .collapse import skip_inert
from .kb import Signature, load_signatures
from .match import Matcher, SourceContext
from .rank_table import RankRows, cut_note
from .ranking import rank_findings
from .scan import MAX_NO_NEWLINE, FilesAhead, LineScanner, ParallelScan, looks_binary, workers_for
from .sources import (
    EMPTY,
    NCCLNB_JSON,
    DoctorInputError,
    Source,
    changed_while_read,
    expand_groups,
    nothing_readable,
    parse_bounded_json,
    rank_from_name,
    regular_stat,
)

MAX_DUMP = 48 << 20  # bytes of a flight-recorder dump read (torch's 2000-entry buffer is a few MB)
MAX_DUMP_ITEMS = 2_000_000  # JSON values a dump may hold (bounds the memory json.loads needs)
MAX_DUMPS_KEPT = 512 << 20  # estimated bytes kept of all dumps (what the analysis reads: ~2.6M entries of the usual size)
_NCCLNB_JSON = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"schema"\s*:\s*"ncclnb\.[a-z]+/')


@dataclass
class Inputs:
    """What reading the inputs found besides their lines: inputs by index as (index, name, why)."""

    lines_read: int = 0
    skipped: list = field(default_factory=list)  # inputs not read: binary, unlistable, not a log, ...
    blank: list = field(default_factory=list)  # inputs with no log text: white space, ncclnb's JSON
    truncated: list = field(default_factory=list)  # (name, why) of inputs that ended early
    changed: list = field(default_factory=list)  # (name, how) of files that changed while they were read
    skipped_dumps: list = field(default_factory=list)  # (name, why) of dumps too large or malformed to read
    dumps_kept: int = 0  # estimated bytes of the dumps kept so far


def diagnose(
    *sources,
    top: Optional[int] = None,
    signatures: Optional[tuple[Signature, ...]] = None,
    redact: bool = True,
    collapse: bool = True,
) -> Diagnosis:
    """Read logs (paths, directories of per-rank logs, ``.gz`` files, ``-``
    for stdin, or the text itself as str/bytes) and return a
    :class:`~ncclnb.model.Diagnosis`: findings ranked most likely root cause
    first, and a per-rank table.

    A str is a path when it has no newline and exists; a str that looks like
    a path but does not exist raises :class:`DoctorInputError` (an OSError
    with one-line message), as does an unreadable file. Text passed in (str or
    bytes) always yields a Diagnosis, whatever it holds. A file or stream
    with no log text (binary data; no line break in MAX_NO_NEWLINE bytes of a
    pipe or device; a pickle that is not a plain-data flight-recorder dump)
    and an entry of a directory that cannot be read are skipped and named in
    an ``input_skipped`` finding; when no input had log text (all of them
    skipped, empty or white space only), DoctorInputError. A file truncated or replaced while it is read is
    named in ``input_changed``. Memory stays flat as input grows. ``top`` keeps only the first N findings.

    ``redact`` (default True) replaces credentials in evidence lines and first
    errors with ``<redacted>`` (:mod:`ncclnb.model.redact`); False keeps the
    lines as they were, for local use.

    ``collapse`` (default True) reads a message that many lines repeat behind
    NCCL's per-rank prefix once (:mod:`ncclnb.doctor.collapse`); False
    normalises every line whole. Both give the same Diagnosis.
    """
    if not sources:
        raise DoctorInputError(22, "no input given (a path, a directory, '-' or log text)", "<input>")
    rows = RankRows()
    matcher = Matcher(signatures if signatures is not None else load_signatures(), rows, redact=redact, collapse=collapse)
    inputs, dumps, names = Inputs(), [], []
    for group in expand_groups(sources):
        workers = _directory_workers(group)
        if workers:
            _read_directory(group, len(names), inputs, matcher, dumps, workers)
        else:
            for index, src in enumerate(group, len(names)):
                read(src, index, inputs, matcher, dumps)
        names.extend(src.name for src in group)
    names = _names_read(sources, names, inputs, dumps)
    # the world the dumps' process-group configs name counts like NCCL's nRanks: ranks of it that
    # left no log and no dump are the ones a timeout's printers waited for
    world_size = max(matcher.world_size or 0, (fr.world_size(dumps) if dumps else None) or 0) or None
    rows.fold(matcher.state)
    findings, statuses = rank_findings(matcher, inputs, dumps, world_size)
    table, cut = rows.table(statuses, {r for f in findings for r in f.ranks})
    if cut:
        findings.append(cut_note(cut))
    if top is not None and top >= 0:
        findings = findings[:top]
    return Diagnosis(findings=tuple(findings), ranks=table, sources=tuple(names), lines_read=inputs.lines_read)


def _names_read(sources: tuple, names: list, inputs: Inputs, dumps: list) -> list:
    """The names of the inputs read; DoctorInputError when none had log text."""
    if (
        inputs.blank
        and not dumps
        and not inputs.skipped_dumps
        and len({i for i, _, _ in inputs.blank} | {i for i, _, _ in inputs.skipped}) == len(names)
    ):
        # every input was empty or unreadable: "no known failure" would claim a log was read
        unread = sorted(inputs.blank + inputs.skipped)
        raise nothing_readable(sources, [(n, why) for _, n, why in unread])
    if inputs.skipped:  # inputs not read are not sources of the diagnosis; with none read, nothing to say
        unread_at = {i for i, _, _ in inputs.skipped}
        names = [n for i, n in enumerate(names) if i not in unread_at]
        if not names:
            raise nothing_readable(sources, [(n, why) for _, n, why in inputs.skipped])
    return names


def read(src: Source, index: int, inputs: Inputs, matcher: Matcher, dumps: list) -> None:
    """Stage 1: the lines of ``src`` (the ``index``-th input) handed to ``matcher`` one by one, or the
    flight-recorder dump it holds appended to ``dumps``; what could not be read is noted in ``inputs``."""
    _read_opened(_open(src), index, inputs, matcher, dumps)


@dataclass
class _Opened:
    """An input opened and its first bytes read (:func:`_open`), not yet read on (:func:`_read_opened`)."""

    src: Source
    why: str = ""  # why a directory's entry cannot be read (nothing opened then)
    stream: Any = None
    before: Optional[os.stat_result] = None  # the file's stat when opened (None: a pipe, a device, text)
    head: bytes = b""
    head_error: str = ""  # reading the first bytes failed: why
    ahead: Any = None  # the scanner of a worker that reads the file ahead (FilesAhead), or None

    def close(self) -> None:
        if self.stream is not None and self.src.name != "<stdin>":
            try:
                self.stream.close()
            except Exception as exc:  # closing a half-read gzip can raise again
                tolerate(exc, (OSError, EOFError, ValueError, zlib.error))


def _open(src: Source) -> _Opened:
    """``src`` opened and its first 64 KiB read; nothing noted in the inputs yet."""
    if src.problem:  # a directory walk found it unreadable
        return _Opened(src, why=src.problem)
    try:
        stream = src.open()
    except DoctorInputError as exc:
        if not src.walked:
            raise
        return _Opened(src, why=exc.strerror or "cannot read")
    opened = _Opened(src, stream=stream, before=regular_stat(stream))  # to tell, at the end, whether the file changed
    try:
        opened.head = stream.read(65536) or b""
    except (EOFError, OSError) as exc:
        if isinstance(exc, DoctorInputError):
            raise
        opened.head_error = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return opened


def _read_opened(opened: _Opened, index: int, inputs: Inputs, matcher: Matcher, dumps: list) -> None:
    """:func:`read` of an input :func:`_open` opened."""
    src, stream, before, head = opened.src, opened.stream, opened.before, opened.head
    if opened.why:  # say so, read the rest
        inputs.skipped.append((index, src.name, opened.why))
        return
    if opened.head_error:
        inputs.truncated.append((src.name, opened.head_error))
    elif not src.text and len(head) < 65536 and not head.strip():  # a short read is the whole input
        inputs.blank.append((index, src.name, EMPTY))
    workers, binary = 0, False
    if _NCCLNB_JSON.match(head[:256]):
        # a snapshot, report, diagnosis or repro result ncclnb wrote: facts, not log lines
        inputs.blank.append((index, src.name, NCCLNB_JSON))
        return
    try:
        if head[:1] in (b"{", b" ", b"\n", b"\t", b"\xef") and ras.looks_like_ras_json(head):
            # ncclras -f json: read whole (bounded), its failures handed on as the lines its text form says them in
            report = bytes(_read_upto(stream, ras.MAX_RAS + 1, head))
            said, why = ras.ras_lines(report)
            if why:
                inputs.skipped.append((index, src.name, f"an ncclras JSON report that cannot be read: {why}"))
                return
            ctx = SourceContext(src.name, index, None)
            matcher.rows.add_source(src.name, None)
            for line_no, raw in said:
                matcher.line(ctx, line_no, raw)
            inputs.lines_read += report.count(b"\n") + (not report.endswith(b"\n"))
            return
        if head[:1] in (b"{", b" ", b"\n", b"\t", b"\xef") and fr.looks_like_dump(head):
            # read at most MAX_DUMP bytes, parse only what stays small in memory, and keep
            # only what the analysis reads (the JSON is dropped at once), MAX_DUMPS_KEPT in all
            left = MAX_DUMPS_KEPT - inputs.dumps_kept
            if left < 1 << 20:
                why = f"the dumps read before it already hold the {MAX_DUMPS_KEPT >> 20} MiB kept for dumps"
            else:
                parsed, why = _parse_dump_bytes(_read_upto(stream, MAX_DUMP + 1, head))
                if parsed is not None:
                    kept, parsed = fr.prepare_dump(src.name, parsed, left), None
                    if kept.size > left:
                        why = (
                            f"it needs about {kept.size >> 20} MiB, more than the {left >> 20} MiB "
                            f"left of the {MAX_DUMPS_KEPT >> 20} MiB kept for dumps"
                        )
                    else:
                        inputs.dumps_kept += kept.size
                        dumps.append((src.name, kept))
            if why:
                inputs.skipped_dumps.append((src.name, why))
            return
        elif opened.ahead is None:
            binary = not src.text and looks_binary(head)
            workers = _parallel_workers(stream) if src.path is not None and not binary else 0
            if not workers:
                stream = _Chained(head, stream)
        ctx = SourceContext(src.name, index, rank_from_name(src.name))
        matcher.rows.add_source(src.name, ctx.rank_hint)
        if opened.ahead is not None:  # a worker reads it (see _read_directory)
            scanner = opened.ahead
        elif workers:  # the workers read the file opened here, whatever the path names meanwhile
            scanner = ParallelScan(src.path, workers, fd=stream.fileno(), skip=matcher.inert)
        else:  # a pipe or a device may never end: a stretch with no line break stops it
            scanner = LineScanner(
                stream,
                binary=binary,
                max_no_newline=MAX_NO_NEWLINE if before is None and not src.text else None,
                skip=matcher.inert,
            )
        # the scanner leaves out the lines read before only where it can do so in bulk; here the rest
        if matcher.inert is not None:
            matcher.inert.repeats.clear()  # lines of the source read before: echoes of its processes only
            lines = skip_inert(iter(scanner), matcher.inert.rests, matcher.inert.repeats)
        else:
            lines = iter(scanner)
        try:
            for line_no, raw in lines:
                matcher.line(ctx, line_no, raw)
        finally:
            lines.close()  # an interrupted parallel scan shuts its pool down now, not at garbage collection
        if scanner.not_a_log:
            inputs.skipped.append((index, src.name, scanner.not_a_log))
            return
        inputs.lines_read += scanner.lines_read
        if scanner.truncated:
            inputs.truncated.append((src.name, scanner.truncated))
        changed = changed_while_read(src, before, opened.stream)
        if changed:
            inputs.changed.append((src.name, changed))
    finally:
        opened.close()


def _read_ahead(opened: _Opened, files: FilesAhead) -> bool:
    """Hand ``opened`` to ``files`` when :func:`_read_opened` would scan it in this process with a
    LineScanner of the plain file (a log, not a dump, not binary, not ncclnb's JSON, a regular file
    opened plainly and too small for a pool of its own) and there is more to it than its first bytes."""
    head, stream = opened.head, opened.stream
    if opened.why or opened.head_error or opened.before is None or opened.src.text or len(head) < 65536:
        return False
    if _NCCLNB_JSON.match(head[:256]) or (
        head[:1] in (b"{", b" ", b"\n", b"\t", b"\xef") and (fr.looks_like_dump(head) or ras.looks_like_ras_json(head))
    ):
        return False
    if looks_binary(head) or opened.src.path is None or not isinstance(stream, io.BufferedReader):
        return False
    if not isinstance(getattr(stream, "name", None), str) or _parallel_workers(stream):
        return False
    opened.ahead = files.add(stream.fileno(), opened.src.path, opened.before)
    return True


MAX_AHEAD = 256  # files of a directory open ahead of the one read (each holds a descriptor and its first 64 KiB)


def _directory_workers(group: list) -> int:
    """Worker processes for the files of a directory (``group``: its Sources), by their size in all
    (:func:`~ncclnb.doctor.scan.workers_for`); 0 for a single input."""
    if len(group) < 3 or not all(src.walked for src in group) or not workers_for(1 << 62):
        return 0  # one input, or no workers whatever the size (one CPU, NCCLNB_DOCTOR_WORKERS=0)
    total = 0
    for src in group:
        try:
            total += os.stat(src.path).st_size if src.path is not None and not src.problem else 0
        except (OSError, ValueError):
            continue  # read() says why
    return workers_for(total)


def _read_directory(group: list, start: int, inputs: Inputs, matcher: Matcher, dumps: list, workers: int) -> None:
    """The files of a directory (``group``, the ``start``-th input first) read in order, each as
    :func:`read` reads it, while ``workers`` processes scan the plain log files among them ahead
    (:class:`~ncclnb.doctor.scan.FilesAhead`): the same lines reach the matcher in the same order.
    The first file is read here before any task is sent, so the tasks' snapshots already hold the
    messages it found inert. A file read here (a dump, a .gz, a short or binary one) stops the
    opening ahead until it is read: a pickled dump is converted whole when it is opened."""
    read(group[0], start, inputs, matcher, dumps)
    files = FilesAhead(workers, skip=matcher.inert)
    ahead: deque = deque()  # (index, _Opened), in order
    todo = iter(range(1, len(group)))
    try:
        while True:
            while files.waiting < 2 * workers and len(ahead) < MAX_AHEAD and (not ahead or ahead[-1][1].ahead is not None):
                i = next(todo, None)
                if i is None:
                    files.submit()
                    break
                opened = _open(group[i])
                ahead.append((start + i, opened))
                if not _read_ahead(opened, files):
                    files.submit()  # what waits goes now: the files before it are read first
            if not ahead:
                break
            index, opened = ahead.popleft()
            _read_opened(opened, index, inputs, matcher, dumps)
    finally:
        for _, opened in ahead:
            opened.close()
        files.close()


def _parallel_workers(stream) -> int:
    """Worker processes for ``stream`` when it is a large regular file opened
    plainly (not stdin, not gzip, not text); 0 otherwise."""
    if not isinstance(stream, io.BufferedReader) or not isinstance(getattr(stream, "name", None), str):
        return 0
    try:
        st = os.fstat(stream.fileno())
    except (OSError, ValueError):
        return 0
    return workers_for(st.st_size) if stat.S_ISREG(st.st_mode) else 0


def _parse_dump_bytes(data: bytes):
    """(parsed dict, "") or (None, why) for the bytes of a dump, bounded (sources.parse_bounded_json)."""
    return parse_bounded_json(data, MAX_DUMP, MAX_DUMP_ITEMS, "a flight-recorder dump")


def _read_upto(stream, limit: int, head: bytes = b"") -> bytearray:
    """``head`` and then the stream up to ``limit`` bytes in all (a short read
    is not the end: only an empty one is)."""
    data = bytearray(head)
    while len(data) < limit:
        chunk = stream.read(min(limit - len(data), 8 << 20))
        if not chunk:
            break
        data += chunk
    return data


class _Chained:
    """A read-only stream that first returns ``head`` and then the rest of ``stream``."""

    def __init__(self, head: bytes, stream):
        self.head, self.stream = head, stream

    def read(self, n: int = -1) -> bytes:
        if self.head:  # a short read: the caller asks again for the rest
            out, self.head = self.head, b""
            return out
        return self.stream.read(n)

    def close(self) -> None:
        self.stream.close()
