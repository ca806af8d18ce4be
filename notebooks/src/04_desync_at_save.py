# %% [markdown]
# # 04 · A hang at "save": one rank ran one collective more
#
# Seed 003 (llama-recipes, four A10G under `torchrun`). Training runs for hours, reaches the end, starts
# saving the model, and the whole job dies ten minutes later with a watchdog timeout. Nothing is
# wrong with the network, the GPUs or NCCL: one rank did **one more training step** than the others,
# because each rank split the dataset with its own random state.
#
# This notebook walks the incident: what was seen, what torch.distributed was doing, a live
# reproduction on 4 CPU ranks, the diagnosis, the fix, a guard that stops it at step 0, and its cousins.
# Runs top to bottom in well under a minute on a laptop, no GPU.

# %%
import ncclnb
import pandas as pd
%load_ext ncclnb

# %% [markdown]
# ## 1 · Symptom
#
# The write-up's log line, verbatim:
#
# ```
# [E ProcessGroupNCCL.cpp:563] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1474236, OpType=_ALLGATHER_BASE, NumelIn=262675456, NumelOut=1050701824, Timeout(ms)=600000) ran for 600068 milliseconds before timing out.
# ```
#
# What the person saw: a run that trained normally to the last step, then hung while "saving the model"
# (保存模型时), and after 10 minutes every process was killed. The cost: the whole run's compute,
# because nothing was saved, plus the 10 minutes of idle GPUs, plus the hunt, since the line points at
# an all_gather in the checkpoint code, which is not where the bug is.
#
# Read the line closely, it says more than "timeout":
#
# | field | value | meaning |
# |---|---|---|
# | `SeqNum=1474236` | the 1,474,236th collective this rank issued on this process group | every rank counts its own; on a healthy job the same number means the same call on every rank |
# | `OpType=_ALLGATHER_BASE` | `all_gather_into_tensor` | what FSDP's full state dict does when it gathers the shards to save |
# | `NumelOut = 4 × NumelIn` | 1,050,701,824 = 4 × 262,675,456 | a gather over 4 ranks |
# | `Timeout(ms)=600000` | 10 min | the default timeout of an NCCL process group |

# %% [markdown]
# ## 2 · What torch.distributed is doing at that moment
#
# A collective completes only when **every** rank of the group enters the **same** collective. NCCL
# does not check that: each rank enqueues its kernel on its own stream and waits for its peers' data.
# If rank 1 enters an `all_reduce` while ranks 0, 2, 3 enter an `all_gather`, each waits for bytes that
# never come.
#
# - **Sequence numbers.** Each process group numbers the collectives each rank issues (the `SeqNum`
#   above). On a healthy job collective #N is the same op on every rank; the first N where ranks
#   disagree is the bug.
# - **The watchdog.** A thread in each process polls the outstanding work; after the group's
#   `timeout` (default 600 s for NCCL, set by `init_process_group(timeout=...)`) it logs *Watchdog caught
#   collective operation timeout* and, with `TORCH_NCCL_ASYNC_ERROR_HANDLING` at its default, aborts the
#   communicator and kills the process. It reports the collective **this** rank is stuck in, which on the
#   ranks that are on time is the *innocent* one (here: the save).
# - **The flight recorder.** With `TORCH_NCCL_TRACE_BUFFER_SIZE=N` (N > 0, e.g. 2000; newer releases also
#   read `TORCH_FR_BUFFER_SIZE`) each rank keeps its
#   last N collectives (seq id, op, shapes, state) in a ring buffer, and `TORCH_NCCL_DUMP_ON_TIMEOUT=1`
#   writes it to a file when the watchdog fires. Lined up across ranks by seq id, the dumps show the
#   first divergence. The reproduction below keeps a dump per rank.
# - **`TORCH_DISTRIBUTED_DEBUG=DETAIL`** checks every collective against the other ranks before it runs
#   and raises *Detected mismatch between collectives on ranks* at the first divergence; it costs an extra
#   exchange per call (small `all_reduce`s ran about 4× slower on this machine), so it is a debugging
#   switch, not a production setting.
#
# Here is what each rank of the reproduction will do, computed with the very functions its program
# uses (the model has two parameters, so one step is two `all_reduce`s):

# %%
from types import SimpleNamespace
from ncclnb.repro.workers.unseeded_split import rank_batches

def plan(seeded):
    rows = []
    for r in range(4):
        shard, batches = rank_batches(SimpleNamespace(rank=r, world_size=4), seeded, 283, 8)
        ops = ["all_reduce"] * (2 * batches) + ["all_gather (save)"]
        rows.append({"rank": r, "examples": len(shard), "steps": batches,
                     **{f"#{s}": ops[s - 1] if s <= len(ops) else "—" for s in (12, 13, 14)}})
    return pd.DataFrame(rows).set_index("rank")

def mark(v):
    return "background:#f8d7da;font-weight:bold" if v == "all_reduce" else ""

print("collectives each rank issues, by sequence number (unseeded split):")
plan(seeded=False).style.map(mark, subset=["#13", "#14"])

# %% [markdown]
# Rank 1 got 49 examples after filtering, the others 46–48: with batches of 8, that is 7 steps instead
# of 6. At collective #13 ranks 0, 2, 3 start the save's all_gather while rank 1 is still reducing
# gradients. Nobody is slow; they are in different calls.

# %% [markdown]
# ## 3 · Reproduce
#
# The seed's program in miniature: the same unseeded split, four gloo ranks on 127.0.0.1, the group's
# timeout cut from 600 s to 5 s. The cell shows each rank live, then the doctor's card.

# %%
broken = %ncclnb repro unseeded_split_desync

# %% [markdown]
# Every rank exited with an error after the short timeout, as the seed's job did after 600 s. The run
# directory holds each rank's log and flight-recorder dump (gloo records collectives too):

# %%
import os
print(broken.run_dir)
print(sorted(f for f in os.listdir(broken.run_dir) if not f.startswith(".")))
print("exit codes:", broken.exit_codes)
print(open(os.path.join(broken.run_dir, "rank1.log")).read().splitlines()[-1])

# %% [markdown]
# On gloo the timeout reads *Timed out waiting 5000ms for recv operation to complete*; on NCCL it is the
# seed's *Watchdog caught collective operation timeout* line. The logs alone say "everyone timed out";
# the dumps say who diverged.

# %% [markdown]
# ## 4 · Diagnose
#
# The doctor read the logs and the dumps (the card above). Its top finding, with the evidence lines it
# used:

# %%
top = broken.diagnosis.top
print(f"{top.category}  blames rank{'s' if len(top.ranks) != 1 else ''} {', '.join(map(str, top.ranks))}  (confidence {top.confidence})")
print(top.title)
for ev in top.evidence:
    print("  ", os.path.basename(ev.source), "|", ev.text)

# %% [markdown]
# The flight-recorder alignment: ranks down, sequence ids across, the first divergence highlighted.
# Read it left to right: identical columns up to #12, then rank 1's extra `all_reduce` against the
# others' `all_gather` at #13.

# %%
ncclnb.show_alignment(broken)

# %% [markdown]
# Two things to take from this for a real job:
#
# - The rank to look at is the one whose op **differs**, not the one whose log line looks worst. The
#   seed's line names `_ALLGATHER_BASE` because that is where the on-time ranks were waiting.
# - Without dumps, compare the watchdog lines of all ranks: different `SeqNum` or `OpType` across
#   ranks means desync; the same on all but arriving late means a slow rank. Turn the recorder on before
#   the long run: `TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1`.

# %% [markdown]
# ## 5 · Fix
#
# Make every random operation that shapes the data use the same seed on every rank:
#
# ```python
# ds = ds.train_test_split(test_size=500, seed=1234)      # was: ds.train_test_split(test_size=500)
# np.random.seed(train_config.seed); random.seed(train_config.seed)   # torch.manual_seed does not seed these
# ```
#
# or split once on rank 0 and broadcast the indices. The cost is nothing at run time; the split is now
# the same on every run, which is what you want for reproducible evaluation anyway. Same table, seeded:

# %%
plan(seeded=True)

# %% [markdown]
# ## 6 · Verify
#
# The fixed program, for real: the same four ranks, seeded split, same short timeout.

# %%
fixed = ncclnb.reproduce("unseeded_split_desync", fixed=True)
print(f"completed: {fixed.completed} in {fixed.seconds:.1f} s; exit codes {fixed.exit_codes}")
print(open(os.path.join(fixed.run_dir, "rank1.log")).read().strip().splitlines()[-1])

# %% [markdown]
# **Prevention.** A guard compares, at step 0, what must be equal on every rank, over one tiny
# all_gather, and raises the same readable error on every rank. The guarded variant is the *broken*
# program with one added line after `init_process_group`:
#
# ```python
# from ncclnb.guard import assert_same
# assert_same(steps_per_epoch=len(train_loader))
# ```

# %%
guarded = %ncclnb repro unseeded_split_desync --guarded

# %% [markdown]
# Stopped at step 0, in seconds instead of at the end of the run, naming rank 1 and the two values.
#
# The other guards for this family, one line each in your training script:
#
# | guard | catches | cost |
# |---|---|---|
# | `check_dataset(train_set)` (before the sampler shards it) | splits that differ at all: length and a hash of the first 64 items | 64 local reads + one 24-byte all_gather |
# | `assert_same(steps_per_epoch=n, config=cfg)` | step counts, configs | one 24-byte all_gather |
# | `wm = Watermark(every=100)`, then `wm.step()` each step | any rank that issued more collectives than the others, whatever the cause | one 16-byte gloo all_gather per 100 steps |
#
# What `check_dataset` compares, computed here for two ranks' unseeded train sets (no collective needed
# to see that they differ):

# %%
from ncclnb.guard import dataset_facts
from ncclnb.repro.workers.unseeded_split import make_dataset, train_test_split, MAX_LEN

data = make_dataset(283)
for r in (0, 1):
    train, _ = train_test_split(data, test_size=28, entropy=1000 + r)
    facts = dataset_facts([ex for ex in train if ex[1] <= MAX_LEN])
    print(f"rank {r}: len={facts['dataset_len']}  first={facts['first_items']['first']}  "
          f"hash={facts['first_items']['hash'][:12]}")

# %% [markdown]
# ## 7 · Recognise its cousins
#
# The knowledge base's other signatures of the same category (`collective_desync`), each with a line
# from its fixture that it must match:

# %%
from ncclnb.doctor import signature_examples

pd.DataFrame(signature_examples("collective_desync")).style.hide(axis="index").set_properties(
    subset=["example line"], **{"font-family": "monospace", "font-size": "11px", "text-align": "left"})

# %% [markdown]
# ### Exercise
#
# A 4-rank job you have not seen. Every rank's last words:
#
# ```
# [rank0]:[E1103 02:11:40.118 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=8806, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600041 milliseconds before timing out.
# [rank1]:[E1103 02:11:40.120 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=8806, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600039 milliseconds before timing out.
# [rank3]:[E1103 02:11:40.125 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=8806, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600044 milliseconds before timing out.
# [rank2]:[E1103 02:11:40.131 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=8806, OpType=ALLREDUCE, NumelIn=4, NumelOut=4, Timeout(ms)=600000) ran for 600047 milliseconds before timing out.
# ```
#
# Which is it?
#
# 1. Rank 2 is slow (a bad GPU, a long data-loader stall) and the others gave up waiting.
# 2. The network between the nodes dropped, so every collective timed out.
# 3. Rank 2 is in a different collective than the others at the same sequence number.
#
# <details><summary><b>Answer</b> (click)</summary>
#
# **3.** All four lines carry `SeqNum=8806`, but ranks 0, 1, 3 are in a `BROADCAST` of 1 element
# and rank 2 in an `ALLREDUCE` of 4: the ranks disagree about what collective #8806 is. A slow rank
# (1) would show the *same* op arriving late; a network drop (2) would show transport errors (NCCL WARN
# lines, `ncclRemoteError`) rather than four clean timeouts. Look at rank 2's code path for a
# broadcast that it skipped (a `if rank != 2` branch, an early `continue`, a different number of
# batches). The doctor, on the same text:
#
# </details>

# %%
%%ncclnb_doctor
[rank0]:[E1103 02:11:40.118 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=8806, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600041 milliseconds before timing out.
[rank1]:[E1103 02:11:40.120 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=8806, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600039 milliseconds before timing out.
[rank3]:[E1103 02:11:40.125 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=8806, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600044 milliseconds before timing out.
[rank2]:[E1103 02:11:40.131 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=8806, OpType=ALLREDUCE, NumelIn=4, NumelOut=4, Timeout(ms)=600000) ran for 600047 milliseconds before timing out.

# %% [markdown]
# Next: `05_alltoall_pairing.ipynb`, where the ranks agree on the collectives but not on who sends to whom.
