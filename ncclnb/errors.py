"""ncclnb's exceptions: the user's mistakes, and everything else.

:class:`InputError` is the user's input being wrong (a missing file, a file
that is not what it should be, a bad argument): its message is one line and
says what to do, and the ``ncclnb`` command prints it and exits 2, a magic
shows it as one line. Any other exception is a bug in ncclnb and shows as a
traceback a user can report.

Some readers never raise on purpose (a collector records a probe that failed
as a fact, the doctor skips a part of its input it cannot read): their broad
``except`` goes through :func:`tolerate`, which re-raises when
``NCCLNB_STRICT=1`` is set (the tests set it) and the exception is not an
expected input problem, so a bug there fails a test instead of becoming a
quiet "could not read".

A leaf module: it imports nothing of ncclnb, so every layer may import it.
"""

from __future__ import annotations

import os
from typing import Optional

__all__ = ["NcclnbError", "InputError", "PathError", "path_error", "STRICT_ENV", "strict", "tolerate"]

STRICT_ENV = "NCCLNB_STRICT"


class NcclnbError(Exception):
    """Every exception ncclnb raises on purpose."""


class InputError(NcclnbError, ValueError):
    """The user's input is wrong; the message is one line and says what to do.
    A ValueError too, for callers that caught that before this class existed."""


class PathError(OSError, InputError):
    """A path the user gave that cannot be opened, read or written: an
    OSError too (``errno``, ``strerror``, ``filename``), for callers that
    catch that."""


def path_error(exc: OSError, path: Optional[str] = None) -> PathError:
    """``exc`` (raised opening, reading or writing the user's ``path``) as a
    :class:`PathError` with the same errno, reason and file name."""
    name = path if path is not None else exc.filename
    reason = exc.strerror or (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if name is None:
        return PathError(reason)
    return PathError(exc.errno or 0, reason, os.fspath(name))


def strict() -> bool:
    """Whether ``NCCLNB_STRICT`` asks the tolerant readers to re-raise bugs."""
    return os.environ.get(STRICT_ENV, "").strip() not in ("", "0")


def tolerate(exc: BaseException, expected: tuple = ()) -> None:
    """For an ``except`` that is broad on purpose: return (the caller records
    or skips the failure), unless ``NCCLNB_STRICT`` is set and ``exc`` is
    neither an :class:`InputError` nor one of ``expected`` (the failures the
    caller exists to survive: an OSError of a missing device file, a probe's
    own error class), in which case ``exc`` is raised again: a bug."""
    if strict() and not isinstance(exc, (InputError, *expected)):
        raise exc
