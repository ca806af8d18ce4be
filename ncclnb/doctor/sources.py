"""Turn what the user gave (paths, directories, .gz files, ``-``, raw text)
into named byte streams, opened one at a time. What a stream holds is told by
its content, not its name: gzip is decompressed, and a pickled
flight-recorder dump is handed on as its JSON text."""

from __future__ import annotations

import errno
import io
import json
import os
import re
import stat
import sys
import zlib
from dataclasses import dataclass
from typing import BinaryIO, Callable, Iterator, Optional, Union

from ..errors import PathError, tolerate
from ..model.limits import looks_like_path

_GZIP_MAGIC = b"\x1f\x8b"
BINARY = "binary data, not a log"  # why a stream whose bytes are not text is not read
EMPTY = "empty, no log text"  # why a file or stream of nothing but white space gives no diagnosis
NCCLNB_JSON = "ncclnb's own JSON (a snapshot, report or result), not a log: ncclnb check or ncclnb show reads it"


class DoctorInputError(PathError):
    """An input the doctor cannot read (missing path, unreadable file): one
    line; an OSError (errno, filename) and an InputError."""


@dataclass
class Source:
    name: str
    open: Optional[Callable[[], BinaryIO]]
    gz: bool = False
    path: Optional[str] = None  # the file system path it was opened by (None: stdin, text)
    text: bool = False  # text handed over in Python: read whatever it holds
    walked: bool = False  # found by a directory walk: unreadable means skipped, not fatal
    problem: str = ""  # why the walk found it unreadable (``open`` is None then)


def _natural_key(path: str):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path)]


class _Prefixed:
    """A read-only stream that returns ``head`` (bytes already read from
    ``raw`` to sniff it) and then the rest of ``raw``: a sniff that needs no
    seek, for pipes, FIFOs, ``<(...)`` and terminals. ``read(n)`` returns n
    bytes unless the stream ends, as a buffered file does."""

    def __init__(self, head: bytes, raw):
        self.head, self.raw = head, raw
        self.name = getattr(raw, "name", None)

    def read(self, n: Optional[int] = -1) -> bytes:
        head = self.head
        if not head:
            return self.raw.read(n)
        if n is None or n < 0:
            self.head = b""
            return head + (self.raw.read() or b"")
        if n <= len(head):
            self.head = head[n:]
            return head[:n]
        self.head = b""
        return head + (self.raw.read(n - len(head)) or b"")

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.raw.fileno()

    def close(self) -> None:
        self.raw.close()


def sniff_gzip(fh):
    """``fh`` as it is, or decompressed when it starts with the gzip magic
    (whatever its name says). Seeks back on a regular file; on a pipe or a
    FIFO the sniffed bytes are chained back instead."""
    try:
        seekable = fh.seekable()
    except (OSError, ValueError):
        seekable = False
    head = fh.read(2) or b""
    if seekable:
        try:
            fh.seek(0)
        except (OSError, ValueError):  # says seekable, is not: keep the bytes read
            fh = _Prefixed(head, fh)
    else:
        fh = _Prefixed(head, fh)
    if head == _GZIP_MAGIC:
        import gzip  # only for input that is gzip

        return gzip.GzipFile(fileobj=fh, mode="rb")
    return fh


def _peek(fh, n: int) -> bytes:
    """Up to ``n`` bytes at the front of ``fh`` without consuming them (what
    :func:`sniff_gzip` returned: a buffered file, a gzip stream, or a pipe
    with its sniffed head), or b"" when they cannot be had without reading."""
    if isinstance(fh, _Prefixed):
        return fh.head[:n]
    peek = getattr(fh, "peek", None)
    if peek is None:
        return b""
    try:
        return peek(n)[:n]
    except (OSError, ValueError, EOFError):
        return b""


def sniff_pickle(fh, name: str):
    """``fh`` as it is, or, when its content starts as a pickle does, the
    flight-recorder dump in it as JSON text (torch writes its dumps as
    pickles by default; :mod:`ncclnb.doctor.unpickle` reads plain data only
    and runs nothing). A pickle that is not a plain-data dump raises
    DoctorInputError with one line saying why."""
    head = _peek(fh, 2)
    if head[:1] != b"\x80":  # no pickle opcode first: the pickle reader is not even imported
        return fh
    from .unpickle import PickleRefused, looks_like_pickle, read_pickled_dump

    if not looks_like_pickle(head):
        return fh
    try:
        data = read_pickled_dump(fh)
    except PickleRefused as exc:
        raise DoctorInputError(errno.EINVAL, f"a pickle, refused (nothing in it was run): {exc}", name) from None
    except OSError as exc:
        raise DoctorInputError(exc.errno or errno.EIO, exc.strerror or "cannot read", name) from None
    finally:
        if name != "<stdin>":  # stdin stays open, as the doctor leaves it (it may be named twice)
            try:
                fh.close()
            except Exception as exc:  # a half-read gzip can raise again on close
                tolerate(exc, (OSError, EOFError, ValueError, zlib.error))
    return io.BytesIO(data)


def regular_stat(stream) -> Optional[os.stat_result]:
    """The stat of the regular file under ``stream`` (through gzip and the
    sniff), or None for a pipe, a device, or text."""
    try:
        st = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None
    return st if stat.S_ISREG(st.st_mode) else None


def changed_while_read(src: Source, before: Optional[os.stat_result], stream) -> str:
    """Why the file ``src`` is not what it was when it was opened (it shrank;
    its path now names another file or none), or "" when nothing says so. A
    file that grew is a live log: not a change worth a word."""
    if before is None:
        return ""
    try:
        now = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return ""
    if now.st_size < before.st_size:
        return f"it shrank from {before.st_size} to {now.st_size} bytes (truncated in place?); lines past the cut may be missing"
    if src.path is None:
        return ""
    try:
        at_path = os.stat(src.path)
    except FileNotFoundError:
        return "the path was removed; the file as opened was read"
    except OSError:
        return ""
    if (at_path.st_dev, at_path.st_ino) != (now.st_dev, now.st_ino):
        return "the path now names another file (rotated or replaced); the file as opened was read"
    return ""


def _file_source(path: str, walked: bool = False) -> Source:
    def opener(path=path):
        try:
            fh = open(path, "rb")
        except OSError as exc:
            raise DoctorInputError(exc.errno or errno.EIO, exc.strerror or "cannot read", path) from None
        return sniff_pickle(sniff_gzip(fh), path)

    return Source(path, opener, gz=path.endswith(".gz"), path=path, walked=walked)


def _text_source(data: bytes, name: str) -> Source:
    return Source(name, lambda: io.BytesIO(data), text=True)


def _stdin() -> BinaryIO:
    return sniff_pickle(sniff_gzip(sys.stdin.buffer), "<stdin>")


def _link_problem(path: str) -> str:
    """Why the symbolic link ``path`` leads to no file."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symbolic link loop"
        if exc.errno == errno.ENOENT:
            try:
                return f"dangling symbolic link (to {os.readlink(path)})"
            except OSError:
                return "dangling symbolic link"
        return exc.strerror or "cannot read"
    return "not a regular file"


def _walk(top: str) -> list[Source]:
    """The files under the directory ``top`` (hidden ones left out), in
    natural order; what cannot be listed or read below ``top`` (a directory
    without permission or gone during the walk, a dangling link, a link loop)
    comes as a Source with ``problem`` set, so it is skipped and named. Raises
    DoctorInputError when ``top`` itself cannot be listed or holds no file."""
    files: list = []
    problems: list = []

    def onerror(exc: OSError) -> None:
        where = exc.filename or top
        if os.path.normpath(where) == os.path.normpath(top):
            raise exc
        problems.append(Source(where, None, path=where, walked=True, problem=exc.strerror or "cannot list"))

    try:
        for root, dirs, names in os.walk(top, onerror=onerror):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            files.extend(os.path.join(root, f) for f in names if not f.startswith("."))
    except OSError as exc:
        raise DoctorInputError(exc.errno or errno.EIO, exc.strerror or "cannot list", exc.filename or top) from None
    found = list(problems)
    for path in files:
        if os.path.isfile(path):
            found.append(_file_source(path, walked=True))
        elif os.path.islink(path):
            found.append(Source(path, None, path=path, walked=True, problem=_link_problem(path)))
        # a FIFO, socket or device inside a log directory is not a log file: left out
    if not found:
        raise DoctorInputError(errno.ENOENT, "no log files in this directory", top)
    return sorted(found, key=lambda s: _natural_key(s.name))


def expand(sources: tuple) -> Iterator[Source]:
    """Yield one Source per file / text. Raises DoctorInputError for a path
    that does not exist or cannot be listed; never reads file contents here."""
    for group in expand_groups(sources):
        yield from group


def expand_groups(sources: tuple) -> Iterator[list[Source]]:
    """:func:`expand`'s Sources, a list per input given: one Source, or the files of a directory."""
    text_count = 0
    for src in sources:
        if isinstance(src, os.PathLike):
            src = os.fspath(src)
        if isinstance(src, (bytes, bytearray, memoryview)):
            text_count += 1
            yield [_text_source(bytes(src), f"<text{text_count}>" if len(sources) > 1 else "<text>")]
            continue
        if not isinstance(src, str):
            raise DoctorInputError(errno.EINVAL, f"cannot read a {type(src).__name__}", "<input>")
        if src == "-":
            yield [Source("<stdin>", _stdin)]
            continue
        if "\n" not in src and os.path.isdir(src):
            yield _walk(src)
            continue
        if "\n" not in src and os.path.exists(src):
            if not os.access(src, os.R_OK):
                raise DoctorInputError(errno.EACCES, "Permission denied", src)
            yield [_file_source(src)]
            continue
        if "\n" not in src and len(src) < 4096 and os.path.lexists(src):  # a link to nothing
            problem = _link_problem(src)
            raise DoctorInputError(errno.ELOOP if problem == "symbolic link loop" else errno.ENOENT, problem, src)
        if looks_like_path(src):
            raise DoctorInputError(errno.ENOENT, "No such file or directory", src)
        text_count += 1
        yield [_text_source(src.encode("utf-8", "surrogateescape"), f"<text{text_count}>" if len(sources) > 1 else "<text>")]


def nothing_readable(sources: tuple, skipped: list) -> DoctorInputError:
    """The one-line error when no input had log text (``skipped``: [(name,
    why)] in order): binary data, empty files, unreadable entries of a
    directory, ..."""
    name, why = skipped[0]
    if len(skipped) == 1:
        return DoctorInputError(errno.EINVAL, why, name)
    args = [os.fspath(s) for s in sources if isinstance(s, (str, os.PathLike))]
    if len(sources) == 1 and args and "\n" not in args[0] and os.path.isdir(args[0]):
        labels = {EMPTY: "empty", BINARY: "binary data", NCCLNB_JSON: "ncclnb's own JSON"}
        counts = {label: sum(why == reason for _, why in skipped) for reason, label in labels.items()}
        counts = {label: n for label, n in counts.items() if n}
        if len(counts) == 1 and sum(counts.values()) == len(skipped):
            text = f"no log text in it ({len(skipped)} files, all {next(iter(counts))})"
        elif sum(counts.values()) == len(skipped):
            text = f"no log text in it ({len(skipped)} files: {', '.join(f'{n} {k}' for k, n in counts.items())})"
        else:
            text = f"no log text in it ({len(skipped)} entries skipped; the first: {name}: {why})"
        return DoctorInputError(errno.EINVAL, text, args[0])
    return DoctorInputError(errno.EINVAL, f"{why} (and {len(skipped) - 1} more inputs with no log text)", name)


_RANK_IN_NAME = re.compile(r"rank[_\-.]?([0-9]+)", re.IGNORECASE | re.ASCII)
_WORKER_NAME = re.compile(r"(?:worker|proc|process)[_\-.]?([0-9]+)(?:\..*)?", re.ASCII)
_NUMBER_NAME = re.compile(r"([0-9]+)\.(?:log|txt|out|err)(?:\.gz)?", re.ASCII)
_TRAILING_NUMBER = re.compile(r"([0-9]+)$", re.ASCII)
MAX_RANK = 1_000_000  # a "rank" in a file name beyond this is a date or an id


def rank_from_name(name: str, *, trailing_number: bool = False) -> Union[int, None]:
    """The rank a per-rank file names, or None: the last ``rank<N>`` in any
    case and separator (``rank3.log``, ``fr_rank_12.json``, ``RANK2.JSON``),
    ``worker-3.out``, ``3.log``; with ``trailing_number`` (torch's
    flight-recorder dumps, written as ``<prefix><rank>``) also a number that
    ends the name before its extension (``nccl_trace_7``, ``trace-5.json``).
    A number of a million or more is a date or an id, not a rank."""
    base = os.path.basename(str(name))
    found = _RANK_IN_NAME.findall(base)
    if found:
        text = found[-1]
    else:
        m = _WORKER_NAME.fullmatch(base) or _NUMBER_NAME.fullmatch(base)
        if m is None and trailing_number:
            stem = base
            for ext in (".gz", ".json", ".txt", ".pkl", ".pickle"):
                if stem.lower().endswith(ext):
                    stem = stem[: -len(ext)]
            m = _TRAILING_NUMBER.search(stem)
        if m is None:
            return None
        text = m.group(1)
    rank = int(text) if len(text) <= 9 else None
    return rank if rank is not None and rank < MAX_RANK else None


def parse_bounded_json(data: bytes, max_bytes: int, max_items: int, what: str) -> tuple:
    """(parsed dict, "") or (None, why) for the bytes of a JSON input (a flight-recorder dump, an ncclras
    report; ``what`` names it). Size, the number of JSON values (counted from the separators before
    parsing) and nesting are bounded, so a hostile file cannot exhaust memory or the stack."""
    if len(data) > max_bytes:
        return None, f"larger than {max_bytes >> 20} MiB"
    items = data.count(b",") + data.count(b"[") + data.count(b"{")
    if items > max_items:
        return None, f"holds about {items:,} JSON values, more than the {max_items:,} read"
    try:
        parsed = json.loads(data.decode("utf-8", "replace"))
    except RecursionError:
        return None, f"nested too deeply to be {what}"
    except ValueError as exc:  # also an integer past int()'s 4300 digits
        return None, f"not valid JSON ({getattr(exc, 'msg', exc)})".splitlines()[0][:200]
    except MemoryError:
        return None, "too large to parse in memory"
    if not isinstance(parsed, dict):
        return None, "not a JSON object"
    return parsed, ""
