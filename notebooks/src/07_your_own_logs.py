# %% [markdown]
# # 07 · Your own job's logs
#
# Point the doctor at what your failed job left behind, read what it found, look at the views, and
# save the result to share or attach to a ticket.
#
# **To use it on your job, set `LOGS` in the next cell** and run all cells. Left at `None`, the notebook
# makes a log directory of its own with a quick reproduction (three ranks on this machine, one of which
# crashes first), so every cell has something to show.

# %%
LOGS = None          # e.g. "/scratch/job-4711/logs", ["rank0.log.gz", "rank1.log.gz"], or pasted text
SAVE_TO = None       # where to write diagnosis.json and findings.html; None: a new temporary folder

# %%
import gzip
import json
import os
import shutil
import tempfile
from pathlib import Path

import ncclnb
from ncclnb.model.words import how_many
%load_ext ncclnb

if LOGS is None:
    demo = ncclnb.reproduce("first_crash_cascade", keep=tempfile.mkdtemp(prefix="ncclnb-demo-logs-"))
    LOGS = demo.run_dir
    print(f"no LOGS given: made {LOGS} with a quick reproduction ({demo.seconds:.1f} s, 3 ranks)")
SAVE_TO = Path(SAVE_TO or tempfile.mkdtemp(prefix="ncclnb-findings-"))
print("reading:", LOGS)

# %% [markdown]
# ## What the doctor accepts
#
# | you have | pass it as | notes |
# |---|---|---|
# | a directory of per-rank logs (`rank0.log`, `slurm-123_4.out`, `node*/stderr`, ...) | `diagnose("/path/dir")` | every file under it; ranks are read from `[rankN]:` prefixes, NCCL's `host:pid:tid [dev]` prefixes or the file names |
# | some files, compressed or not | `diagnose("a.log", "b.log.gz")` | `.gz` is read as a stream |
# | torch flight-recorder dumps, JSON or pickle | in the directory, or by path | recognised by content, rank from the file name (`rank3.json`, `nccl_trace_rank_3`) |
# | text copied from a terminal or a ticket | `diagnose(text)`, or a cell starting with `%%ncclnb_doctor` | anything with a newline is text |
# | a terminal, not a notebook | `ncclnb doctor DIR`, `ncclnb doctor --json DIR`, or pipe text into `ncclnb doctor -` | same diagnosis, as text or JSON |
#
# **Flight-recorder dumps are read as torch writes them.** What `TORCH_NCCL_DUMP_ON_TIMEOUT=1` writes
# (with `TORCH_NCCL_TRACE_BUFFER_SIZE` > 0; newer releases also read `TORCH_FR_BUFFER_SIZE`) is a
# **pickle**; `torch._C._distributed_c10d._dump_fr_trace_json()` writes JSON. A pickle is read with no
# globals at all (`ncclnb/doctor/unpickle.py`): plain dicts, lists, strings and numbers come out, and one that
# asks for anything else is refused with one line saying so, so nothing in it runs.
#
# Big logs are fine: memory stays flat, and files of 64 MiB or more are scanned by several processes.
# Credentials in evidence lines are replaced by `<redacted>` unless you pass `redact=False`.

# %% [markdown]
# ## The diagnosis
#
# Findings, most likely root cause first, each with its evidence lines (file and line number), the
# cause and the fix. Read the first card first; the rest are alternatives and consequences.

# %%
inputs = LOGS if isinstance(LOGS, (list, tuple)) else [LOGS]
diagnosis = ncclnb.diagnose(*inputs)
print(f"{how_many(len(diagnosis.sources), 'source')}, {diagnosis.lines_read} lines read, {how_many(len(diagnosis.findings), 'finding')}")
ncclnb.show_diagnosis(diagnosis)

# %% [markdown]
# What each rank said last: its host, NCCL version, the last collective it reached and its first
# error. The rank whose first error came first, or whose last collective differs, is where to look.

# %%
import pandas as pd

pd.DataFrame([{"rank": r.rank, "host": r.host, "NCCL": r.nccl_version, "last seq": r.last_seq,
               "last op": r.last_op, "first error": (r.first_error or "")[:110],
               "file": os.path.basename(r.source or "")} for r in diagnosis.ranks])

# %% [markdown]
# ## The views that need the flight recorder
#
# With dumps from every rank, the alignment shows each rank's collectives by sequence id with the first
# divergence highlighted, and the pairing matrix shows who posted sends and receives to whom. With no
# dumps in your logs, they say so; turn the recorder on for the next run
# (`TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1`).

# %%
from ncclnb.doctor.flight_recorder import looks_like_dump

def head(path, n=65536):
    with open(path, "rb") as fh:
        return fh.read(n)

log_dir = inputs[0] if len(inputs) == 1 and os.path.isdir(str(inputs[0])) else None
dumps = [p for p in sorted(Path(log_dir).rglob("*")) if p.is_file() and looks_like_dump(head(p))] if log_dir else []
print(f"{how_many(len(dumps), 'flight-recorder dump')} found")
ncclnb.show_alignment(log_dir) if dumps else print("no dumps: no alignment to draw")

# %% [markdown]
# The pairing matrix needs the send/recv entries of NCCL dumps, or plan lines printed by
# `ncclnb.guard.p2p.log_p2p_plan(sends, recvs)` before a hand-written exchange (gloo records no
# isend/irecv). When your logs have neither, it says what is missing:

# %%
try:
    view = ncclnb.show_pairing(log_dir or inputs[0])
except ValueError as exc:
    view = None
    print(f"no pairing matrix: {exc}")
view

# %% [markdown]
# The machine views (`show_topology`, `show_numa`, `show_ranks`, `show_versions`, `dashboard`) need
# facts about the nodes, not logs: run `ncclnb collect -o $(hostname).json` on each node (no GPU work,
# a second or two), copy the files here, and
#
# ```python
# report = ncclnb.load("node0.json")          # or a cluster report from the survey
# ncclnb.dashboard(report, diagnosis)         # topology, NUMA, ranks, versions and these findings, in tabs
# ```

# %% [markdown]
# ## Other forms of the same input
#
# The same logs, compressed: the doctor reads `.gz` directly. (And a few pasted lines work too: the
# last cell of this notebook.)

# %%
if log_dir:
    gz_dir = Path(tempfile.mkdtemp(prefix="ncclnb-gz-"))
    for p in Path(log_dir).glob("*.log"):
        with open(p, "rb") as src, gzip.open(gz_dir / (p.name + ".gz"), "wb") as dst:
            shutil.copyfileobj(src, dst)
    again = ncclnb.diagnose(str(gz_dir))
    print("from .gz files:", again.top.title if again.top else "no findings")
    print("same top finding as before:", (again.top and again.top.rule) == (diagnosis.top and diagnosis.top.rule))

# %% [markdown]
# ## Save what you found
#
# A `Diagnosis` is plain JSON (`ncclnb.diagnosis/1`): write it, send it, open it on any machine with
# `ncclnb.load`, which checks the schema and refuses what it cannot read. The HTML export is the card
# above as one self-contained file, for a ticket or an email.

# %%
saved = SAVE_TO / "diagnosis.json"
saved.write_text(json.dumps(diagnosis.to_dict(), indent=1))
back = ncclnb.load(str(saved))
print(f"wrote {saved} ({saved.stat().st_size} bytes); loaded back: {type(back).__name__}, "
      f"{len(back.findings)} findings, identical: {back == diagnosis}")

html = SAVE_TO / "findings.html"
html.write_text("<!doctype html><meta charset='utf-8'><title>ncclnb findings</title>"
                + ncclnb.show_diagnosis(diagnosis).static_html(), encoding="utf-8")
print(f"wrote {html} ({html.stat().st_size} bytes)")

# %% [markdown]
# In a terminal, the same in one line: `ncclnb doctor --json LOGS > diagnosis.json`.
#
# ## Pasted text
#
# When all you have is a few lines from a chat or a ticket, paste them into a cell under
# `%%ncclnb_doctor`. For example, the last words of a job on two hosts:

# %%
%%ncclnb_doctor
[rank4]:[E ProcessGroupNCCL.cpp:616] [Rank 4] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2210, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for 600033 milliseconds before timing out.
[rank5]:[E ProcessGroupNCCL.cpp:616] [Rank 5] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2210, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for 600035 milliseconds before timing out.
torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process 91113 closing signal SIGTERM
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: train.py FAILED

# %% [markdown]
# Next steps by category: the doctor's card links the guided notebook for each root cause it knows
# (`03` versions across nodes, `04` desync, `05` send/recv pairing, and `00`–`02` for launch and
# rendezvous failures).
