"""The facts behind the flight-recorder and pairing views, read from what a
run left: a run directory, paths of logs and dumps, a ``ReproResult`` (its
run directory) or a ``Diagnosis`` (the files it read).

Files are read as the doctor reads them (the same bounds on dumps, the same
line scanner and normaliser on logs) and analysed by the same functions
(:func:`ncclnb.doctor.flight_recorder.alignment`,
:mod:`ncclnb.doctor.pairing`), so a view shows what the doctor decided.
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass, field

from ..errors import InputError, tolerate
from ..model import Diagnosis, ReproResult
from .core import _NCCLNB_JSON, MAX_DUMP, MAX_DUMPS_KEPT, _Chained, _parse_dump_bytes, _read_upto
from .flight_recorder import Alignment, alignment, looks_like_dump, prepare_dump, ranks_ahead
from .normalize import normalize
from .pairing import MAX_PLAN_RANKS, PLAN_MARK, Pairing, pairing_from_dumps, parse_plan_line, plan_pairing
from .scan import LineScanner, looks_binary
from .sources import DoctorInputError, expand

__all__ = ["RunInputs", "inputs_of", "read_run", "run_alignment", "run_pairing"]

_HOW_TO_DUMP = (
    "torch writes them when TORCH_FR_BUFFER_SIZE (TORCH_NCCL_TRACE_BUFFER_SIZE on older torch) "
    "is above 0 and a rank calls torch._C._distributed_c10d._dump_fr_trace_json() on failure; "
    "`ncclnb repro run NAME --keep DIR` does both"
)


@dataclass
class RunInputs:
    """What :func:`read_run` found: dumps as (name, PreparedDump), the plan
    lines, and the inputs it could not use, with why."""

    where: str
    dumps: list = field(default_factory=list)
    plans: list = field(default_factory=list)
    skipped: list = field(default_factory=list)


def inputs_of(source) -> tuple:
    """The paths to read for ``source``: a ReproResult's run directory, the
    files a Diagnosis read, or the path(s) given. Raises InputError (a ValueError, one line)
    when ``source`` names nothing to read."""
    if isinstance(source, ReproResult):
        return (source.run_dir,)
    if isinstance(source, Diagnosis):
        paths = tuple(s for s in source.sources if "\n" not in s and os.path.exists(s))
        if not paths:
            raise InputError(
                "this diagnosis was made from text, not files: pass the run directory or the log and dump files instead"
            )
        return paths
    if isinstance(source, (str, os.PathLike)):
        return (os.fspath(source),)
    if isinstance(source, (list, tuple)) and source and all(isinstance(s, (str, os.PathLike)) for s in source):
        return tuple(os.fspath(s) for s in source)
    raise TypeError(f"expected a run directory, paths, a ReproResult or a Diagnosis, got {type(source).__name__}")


def _where(paths: tuple) -> str:
    return paths[0] if len(paths) == 1 else f"{paths[0]} and {len(paths) - 1} more"


def read_run(source) -> RunInputs:
    """Read every flight-recorder dump and every ``ncclnb guard: p2p plan``
    line of ``source`` (see :func:`inputs_of`); ncclnb's own JSON files
    (``result.json``) are left out. A path that does not exist raises
    :class:`~ncclnb.doctor.DoctorInputError` (an OSError, one line)."""
    paths = inputs_of(source)
    for p in paths:
        if not os.path.exists(p):
            raise DoctorInputError(2, "No such file or directory", p)
    out = RunInputs(_where(paths))
    kept = 0
    for src in expand(paths):
        if src.problem:
            out.skipped.append((src.name, src.problem))
            continue
        try:
            stream = src.open()
        except OSError as exc:
            out.skipped.append((src.name, getattr(exc, "strerror", None) or "cannot read"))
            continue
        try:
            head = stream.read(65536) or b""
            if _NCCLNB_JSON.match(head[:256]):
                continue
            if looks_like_dump(head):
                parsed, why = _parse_dump_bytes(_read_upto(stream, MAX_DUMP + 1, head))
                if parsed is None:
                    out.skipped.append((src.name, why))
                    continue
                dump, parsed = prepare_dump(src.name, parsed, MAX_DUMPS_KEPT - kept), None
                if dump.reason is not None or dump.size > MAX_DUMPS_KEPT - kept:
                    out.skipped.append((src.name, str(dump.reason or "too large")))
                    continue
                kept += dump.size
                out.dumps.append((src.name, dump))
                continue
            if looks_binary(head):
                continue
            for line_no, raw in LineScanner(_Chained(head, stream)):
                if b"p2p plan" not in raw:
                    continue
                ln = normalize(raw.decode("utf-8", "replace"))
                plan = parse_plan_line(ln.text, src.name, line_no) if ln is not None else None
                if plan is not None and len(out.plans) < MAX_PLAN_RANKS * 4:
                    out.plans.append(plan)
        except OSError as exc:
            out.skipped.append((src.name, str(exc).splitlines()[0] if str(exc) else "cannot read"))
        finally:
            try:
                stream.close()
            except Exception as exc:  # a half-read gzip can raise again on close
                tolerate(exc, (OSError, EOFError, ValueError, zlib.error))
    return out


def run_alignment(source) -> Alignment:
    """The flight-recorder alignment of a run (see
    :func:`~ncclnb.doctor.flight_recorder.alignment`). Raises ValueError (one
    line) when ``source`` holds no usable dump."""
    run = read_run(source)
    if not run.dumps:
        why = f" ({run.skipped[0][0]}: {run.skipped[0][1]})" if run.skipped else ""
        raise InputError(f"no flight-recorder dumps in {run.where}{why}: {_HOW_TO_DUMP}")
    return alignment(run.dumps)


def run_pairing(source) -> Pairing:
    """The send/receive pairing of a run: from the sends and recvs its
    flight-recorder dumps recorded (NCCL), else from its ranks' ``ncclnb
    guard: p2p plan`` lines (gloo). Raises InputError (a ValueError, one line) when it
    holds neither."""
    run = read_run(source)
    recorded = pairing_from_dumps(run.dumps) if run.dumps else None
    if recorded is not None:
        return recorded
    if run.plans:
        return plan_pairing(run.plans, ranks_ahead(run.dumps) if run.dumps else ())
    raise InputError(
        f"no send/recv in {run.where}: no NCCL flight-recorder send/recv entries and no "
        f"'{PLAN_MARK.strip()}' lines (gloo records no isend/irecv: call "
        "ncclnb.guard.p2p.log_p2p_plan(sends, recvs) on every rank before posting)"
    )
