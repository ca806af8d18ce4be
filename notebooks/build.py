"""Build the guided notebooks from their reviewable sources.

    .venv/bin/python notebooks/build.py [NAME...] [--check] [--timeout S]

Each ``notebooks/src/<name>.py`` is a notebook in jupytext's "percent" format
(no jupytext needed; the parser is below):

    # %% [markdown]
    # # A title
    # Prose, each line prefixed with "# ".

    # %%
    import ncclnb

    # %% tags=["raises-exception"]
    a_cell_that_fails_on_purpose()

    # %% tags=["gpu"]
    needs_a_gpu()

Building writes ``notebooks/<name>.ipynb``: the cells, executed top to bottom
by nbclient in a real kernel (cwd ``notebooks/``), outputs kept, saved widget
state and volatile metadata removed. Cells tagged ``raises-exception`` may
raise; cells tagged ``gpu`` are not executed and keep no output (they need
NVIDIA GPUs; run on a machine with none, they say so and do nothing). A notebook over 2 MB or over 60 s fails the build.

``--check`` starts no kernel: it verifies that every committed ``.ipynb``
holds exactly the cells (type, source, tags) of its ``src/*.py`` and that
every notebook has a source, so the two cannot drift. NAME is a file stem
(``01_world_size_and_rendezvous``) or any unique prefix of one (``01``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE / "src"
MAX_BYTES = 2 * 1024 * 1024
MAX_SECONDS = 60.0
CELL_TIMEOUT = 120

_HEADER = re.compile(r"^# %%(?P<md>\s+\[(?:markdown|md)\])?(?P<rest>.*)$")
_TAGS = re.compile(r"^\s*tags\s*=\s*(\[.*\])\s*$")


class SourceError(ValueError):
    """A source file that is not valid percent format."""


def parse(text: str, origin: str = "<source>") -> list[dict]:
    """Percent-format text -> ``[{"cell_type", "source", "tags"}]``.

    Lines before the first ``# %%`` may only be blank or comments (a header);
    markdown lines lose their ``# `` prefix; leading and trailing blank lines
    of every cell are dropped.
    """
    cells: list[dict] = []
    current: dict | None = None
    lines: list[str] = []

    def close():
        if current is None:
            return
        body = list(lines)
        while body and not body[0][1].strip():
            body.pop(0)
        while body and not body[-1][1].strip():
            body.pop()
        if current["cell_type"] == "markdown":
            out = []
            for n, line in body:
                if line == "#":
                    out.append("")
                elif line.startswith("# "):
                    out.append(line[2:])
                else:
                    raise SourceError(f"{origin}:{n}: a markdown line must start with '# ' (got {line[:40]!r})")
            while out and not out[-1]:
                out.pop()
            current["source"] = "\n".join(out)
        else:
            current["source"] = "\n".join(line for _, line in body)
        cells.append(current)

    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        m = _HEADER.match(line)
        if m:
            close()
            lines = []
            rest = m.group("rest").strip()
            tags: list[str] = []
            if rest:
                t = _TAGS.match(rest)
                if not t:
                    raise SourceError(f"{origin}:{n}: unreadable cell options {rest!r} (expected tags=[\"...\"])")
                try:
                    tags = json.loads(t.group(1))
                except json.JSONDecodeError as exc:
                    raise SourceError(f"{origin}:{n}: tags are not a JSON list of strings: {exc}") from None
                if not isinstance(tags, list) or not all(isinstance(x, str) for x in tags):
                    raise SourceError(f"{origin}:{n}: tags are not a JSON list of strings")
            current = {"cell_type": "markdown" if m.group("md") else "code", "source": "", "tags": tags}
            continue
        if current is None:
            if line.strip() and not line.startswith("#"):
                raise SourceError(f"{origin}:{n}: code before the first '# %%' cell marker")
            continue
        lines.append((n, line))
    close()
    if not cells:
        raise SourceError(f"{origin}: no cells (a cell starts with '# %%')")
    return cells


def _cells_of(nb: dict) -> list[dict]:
    out = []
    for cell in nb.get("cells", []):
        src = cell.get("source", "")
        if isinstance(src, list):
            src = "".join(src)
        out.append({"cell_type": cell.get("cell_type"), "source": src, "tags": list(cell.get("metadata", {}).get("tags", []))})
    return out


def to_notebook(cells: list[dict], name: str):
    import nbformat
    from nbformat import v4

    nb = v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    for i, c in enumerate(cells):
        make = v4.new_markdown_cell if c["cell_type"] == "markdown" else v4.new_code_cell
        cell = make(c["source"])
        cell.id = f"{name[:40]}-{i:02d}".replace("_", "-")
        if c["tags"]:
            cell.metadata["tags"] = list(c["tags"])
        nb.cells.append(cell)
    nbformat.validate(nb)
    return nb


def clean(nb) -> None:
    """Drop saved widget state and what changes from run to run without
    meaning anything (timings, interpreter version)."""
    nb.metadata.pop("widgets", None)
    nb.metadata["language_info"] = {"name": "python"}
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        cell.metadata.pop("collapsed", None)
        cell.metadata.pop("scrolled", None)
        if cell.cell_type != "code":
            continue
        if "gpu" in cell.metadata.get("tags", []):
            cell.outputs = []
            cell.execution_count = None
        for out in cell.get("outputs", []):
            # a widget view means nothing without the saved state; the output's
            # text/html static copy stays and is what GitHub and nbconvert show
            data = out.get("data")
            if data and "application/vnd.jupyter.widget-view+json" in data and len(data) > 1:
                del data["application/vnd.jupyter.widget-view+json"]


def sources(names: list[str]) -> list[Path]:
    all_src = sorted(SRC.glob("*.py"))
    if not names:
        return all_src
    picked = []
    for name in names:
        stem = Path(name).stem
        hits = [p for p in all_src if p.stem == stem] or [p for p in all_src if p.stem.startswith(stem)]
        if len(hits) != 1:
            raise SystemExit(
                f"build: {name!r} matches {len(hits)} sources in {SRC} (names: " + ", ".join(p.stem for p in all_src) + ")"
            )
        picked.append(hits[0])
    return picked


def _cell_seconds(nb) -> list[tuple[float, int]]:
    """(seconds, cell number) of each executed cell, from nbclient's timing metadata."""
    from datetime import datetime

    out = []
    for i, cell in enumerate(nb.cells, 1):
        t = cell.metadata.get("execution", {})
        a, b = t.get("iopub.execute_input"), t.get("shell.execute_reply")
        if a and b:
            parse_t = lambda x: datetime.fromisoformat(x.replace("Z", "+00:00"))
            out.append(((parse_t(b) - parse_t(a)).total_seconds(), i))
    return sorted(out, reverse=True)


def build(src: Path, timeout: int, verbose: bool = False) -> tuple[int, float, list[str]]:
    import nbformat
    from nbclient import NotebookClient

    cells = parse(src.read_text(encoding="utf-8"), str(src))
    nb = to_notebook(cells, src.stem)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        record_timing=True,
        store_widget_state=False,
        skip_cells_with_tag="gpu",
        resources={"metadata": {"path": str(HERE)}},
    )
    t0 = time.monotonic()
    client.execute()
    seconds = time.monotonic() - t0
    if verbose:
        slow = ", ".join(f"cell {i}: {sec:.1f} s" for sec, i in _cell_seconds(nb)[:5])
        print(f"{src.stem}: slowest cells: {slow}")
    clean(nb)
    out = HERE / f"{src.stem}.ipynb"
    nbformat.write(nb, str(out))
    size = out.stat().st_size
    problems = []
    if size > MAX_BYTES:
        problems.append(f"{out.name} is {size / 1e6:.2f} MB, over the 2 MB limit")
    if seconds > MAX_SECONDS:
        problems.append(f"{out.name} took {seconds:.1f} s, over the {MAX_SECONDS:.0f} s limit")
    return size, seconds, problems


def check(srcs: list[Path], whole: bool) -> list[str]:
    problems = []
    for src in srcs:
        nb_path = HERE / f"{src.stem}.ipynb"
        if not nb_path.exists():
            problems.append(f"{nb_path.name} is missing: run notebooks/build.py {src.stem}")
            continue
        try:
            want = parse(src.read_text(encoding="utf-8"), str(src))
        except SourceError as exc:
            problems.append(str(exc))
            continue
        got = _cells_of(json.loads(nb_path.read_text(encoding="utf-8")))
        if got == want:
            continue
        if len(got) != len(want):
            problems.append(f"{nb_path.name} has {len(got)} cells, src/{src.name} {len(want)}: run notebooks/build.py {src.stem}")
            continue
        i = next(i for i, (a, b) in enumerate(zip(got, want)) if a != b)
        what = next(k for k in ("cell_type", "tags", "source") if got[i][k] != want[i][k])
        problems.append(
            f"{nb_path.name} cell {i + 1} differs from src/{src.name} in its {what}: run notebooks/build.py {src.stem}"
        )
    if whole:
        stems = {p.stem for p in srcs}
        for nb_path in sorted(HERE.glob("*.ipynb")):
            if nb_path.stem not in stems:
                problems.append(f"{nb_path.name} has no source src/{nb_path.stem}.py")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="notebooks to build (stem or prefix); default: all")
    ap.add_argument("--check", action="store_true", help="verify committed notebooks match their sources; no kernel")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the slowest cells of each notebook")
    ap.add_argument("--timeout", type=int, default=CELL_TIMEOUT, help="per-cell timeout in seconds")
    args = ap.parse_args(argv)
    srcs = sources(args.names)
    if args.check:
        problems = check(srcs, whole=not args.names)
        for p in problems:
            print(f"build --check: {p}", file=sys.stderr)
        if not problems:
            print(f"build --check: {len(srcs)} notebooks match their sources")
        return 1 if problems else 0
    failed = False
    for src in srcs:
        try:
            size, seconds, problems = build(src, args.timeout, args.verbose)
        except SourceError as exc:
            print(f"build: {exc}", file=sys.stderr)
            failed = True
            continue
        except Exception as exc:  # a cell that raised without the raises-exception tag, a timeout
            first = str(exc).strip().splitlines()
            tail = [ln for ln in first if ln.strip()][-1:] or [type(exc).__name__]
            print(f"build: {src.stem} failed: {type(exc).__name__}: {tail[0][:300]}", file=sys.stderr)
            failed = True
            continue
        print(f"{src.stem}.ipynb  {size / 1024:8.1f} KiB  {seconds:5.1f} s")
        for p in problems:
            print(f"build: {p}", file=sys.stderr)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
