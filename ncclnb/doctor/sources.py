"""Turn what the user gave (paths, directories, .gz files, ``-``, raw text)
into named byte streams, opened one at a time."""
from __future__ import annotations

import errno
import gzip
import io
import os
import re
import sys
from dataclasses import dataclass
from typing import BinaryIO, Callable, Iterator, Union

_PATHLIKE = re.compile(r"^[^\s]*(?:/[^\s]*|\.(?:log|txt|gz|json|out|err))$", re.ASCII)


class DoctorInputError(OSError):
    """An input the doctor cannot read (missing path, unreadable file): one line."""


@dataclass
class Source:
    name: str
    open: Callable[[], BinaryIO]
    gz: bool = False


def _natural_key(path: str):
    return [(0, int(t), "") if t.isascii() and t.isdigit() and len(t) <= 18 else (1, 0, t)
            for t in re.split(r"([0-9]+)", path)]


def _file_source(path: str) -> Source:
    def opener(path=path):
        try:
            fh = open(path, "rb")
        except OSError as exc:
            raise DoctorInputError(exc.errno or errno.EIO, exc.strerror or "cannot read", path) from None
        head = fh.read(2)
        fh.seek(0)
        if head == b"\x1f\x8b":  # gzip magic, whatever the name says
            return gzip.GzipFile(fileobj=fh, mode="rb")
        return fh
    return Source(path, opener, gz=path.endswith(".gz"))


def _text_source(data: bytes, name: str) -> Source:
    return Source(name, lambda: io.BytesIO(data))


def expand(sources: tuple) -> Iterator[Source]:
    """Yield one Source per file / text. Raises DoctorInputError for a path
    that does not exist or cannot be listed; never reads file contents here."""
    text_count = 0
    for src in sources:
        if isinstance(src, os.PathLike):
            src = os.fspath(src)
        if isinstance(src, (bytes, bytearray, memoryview)):
            text_count += 1
            yield _text_source(bytes(src), f"<text{text_count}>" if len(sources) > 1 else "<text>")
            continue
        if not isinstance(src, str):
            raise DoctorInputError(errno.EINVAL, f"cannot read a {type(src).__name__}", "<input>")
        if src == "-":
            yield Source("<stdin>", lambda: sys.stdin.buffer)
            continue
        if "\n" not in src and os.path.isdir(src):
            try:
                walked = []
                for root, dirs, files in os.walk(src, onerror=_raise):
                    dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                    walked.extend(os.path.join(root, f) for f in files if not f.startswith("."))
            except OSError as exc:
                raise DoctorInputError(exc.errno or errno.EIO, exc.strerror or "cannot list", exc.filename or src) from None
            for path in sorted(walked, key=_natural_key):
                if os.path.isfile(path):
                    yield _file_source(path)
            continue
        if "\n" not in src and os.path.exists(src):
            if not os.access(src, os.R_OK):
                raise DoctorInputError(errno.EACCES, "Permission denied", src)
            yield _file_source(src)
            continue
        if "\n" not in src and _PATHLIKE.match(src.strip()) and len(src) < 4096:
            raise DoctorInputError(errno.ENOENT, "No such file or directory", src)
        text_count += 1
        yield _text_source(src.encode("utf-8", "surrogateescape"), f"<text{text_count}>" if len(sources) > 1 else "<text>")


def _raise(exc: OSError) -> None:
    raise exc


def rank_from_name(name: str) -> Union[int, None]:
    """The rank a per-rank log file names (``rank3.log``, ``rank_3.txt``,
    ``worker-3.out``, ``3.log``), or None."""
    base = os.path.basename(name)
    m = re.search(r"(?:rank|RANK|Rank)[_\-.]?(\d+)", base) or re.fullmatch(r"(?:worker|proc|process)[_\-.]?(\d+)(?:\..*)?", base) \
        or re.fullmatch(r"(\d+)\.(?:log|txt|out|err)(?:\.gz)?", base)
    digits = m.group(1) if m else ""
    return int(digits) if digits.isascii() and digits.isdigit() and len(digits) <= 9 else None
