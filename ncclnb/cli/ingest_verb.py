"""ncclnb ingest: text pasted from a cluster -> snapshot JSON (Python twin: ncclnb.ingest())."""

from __future__ import annotations

import json


def add_parser(sub):
    p = sub.add_parser(
        "ingest",
        help="turn pasted nvidia-smi / topo -m / topo -p2p / collect_env text into a snapshot",
        description="Read the output of `nvidia-smi topo -m`, `nvidia-smi topo -p2p r|w|n|a|p`, "
        "`nvidia-smi` and `python -m torch.utils.collect_env` (any subset, any order, one file or "
        "several; '-' reads stdin) and print one node snapshot as JSON.",
    )
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    p.add_argument("--hostname", help="hostname to record when the text shows none")
    p.add_argument("--description", default="", help="free text saved with the snapshot")
    return p


def run(args) -> int:
    import sys
    from pathlib import Path

    from ..collectors.ingest import ingest
    from ..collectors.parsers import ParseError
    from ..model.limits import TEXT_LIMIT, read_bounded
    from . import write_output

    for f in args.files:
        if f != "-":
            _require_file(f)
    # every input is read bounded: binary after its first 64 KiB, too large past TEXT_LIMIT
    # (a file by its size, before its body). A Path is always read as a file, so
    # /dev/stdin, <(cmd) and other pipes are read as files too.
    sources = [
        read_bounded(
            sys.stdin.buffer, limit=TEXT_LIMIT, label="<stdin>", binary="input is binary data, not text", error=ParseError
        )
        if f == "-"
        else Path(f)
        for f in args.files
    ]
    snapshot = ingest(*sources, hostname=args.hostname, description=args.description)
    write_output(json.dumps(snapshot.to_dict(), indent=2), args.output)
    return 0


def _require_file(path: str) -> None:
    import errno
    import os

    from ..errors import PathError

    if not os.path.exists(path):
        raise PathError(errno.ENOENT, "No such file or directory", path)
    if os.path.isdir(path):
        raise PathError(errno.EISDIR, "Is a directory", path)
