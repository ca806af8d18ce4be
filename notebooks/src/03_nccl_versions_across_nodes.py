# %% [markdown]
# # 03 · Two nodes, two NCCLs: a crash at init that never names a version
#
# Seed 002. A multi-node PyTorch job dies in `init_process_group` / the first collective with an error
# about an address "with family 0". The network is fine. One node runs NCCL 2.14.3 + CUDA 11.7, the
# other NCCL 2.19.3 + CUDA 12.3, and the first node has a third NCCL (2.17.1) installed system-wide.
#
# Runs top to bottom in well under a minute on a laptop, no GPU. **Read this first:** the failure
# itself needs NCCL on GPUs on two machines. Here the ranks, the two-node launch and the exchange of
# facts are live; what each node *has installed* comes from recorded snapshots built to match the seed
# (`seed002-node-a`, `seed002-node-b`). The notebook shows the cause the way you find it on a real
# cluster: by comparing what each node runs.

# %%
import ncclnb
import pandas as pd
%load_ext ncclnb

# %% [markdown]
# ## 1 · Symptom
#
# The write-up's lines, verbatim:
#
# ```
# ncclSocketInit: connecting to address with family 0 is neither AF_INET(2) nor AF_INET6(10)
# torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1275, internal error
# ```
#
# and its findings: *问题节点使用NCCL 2.14.3 + CUDA 11.7; 正常节点使用NCCL 2.19.3 + CUDA 12.3;
# 系统层面还安装了NCCL 2.17.1* (the failing node uses NCCL 2.14.3 + CUDA 11.7; the healthy node NCCL
# 2.19.3 + CUDA 12.3; NCCL 2.17.1 is also installed system-wide).
#
# Neither line mentions a version. "family 0" reads like a network problem, so the usual first hours go
# to `NCCL_SOCKET_IFNAME`, firewalls and `/etc/hosts`. The job never trains a step.

# %% [markdown]
# ## 2 · What NCCL is doing at that moment
#
# Creating a communicator, step by step (`init_process_group("nccl")` then the first collective, or
# eagerly with `device_id=`):
#
# | step | who | what travels | can fail with |
# |---|---|---|---|
# | 1. unique id | rank 0: `ncclGetUniqueId` | opens the bootstrap root socket; the 128-byte id holds its address | — |
# | 2. share the id | torch, via the c10d TCPStore at `MASTER_ADDR:MASTER_PORT` | the id, as bytes | store timeout (1800 s default) |
# | 3. bootstrap | `ncclCommInitRank` on every rank | each rank sends the root its own listening address; the root hands each rank its neighbour's; the ranks form a ring and all-gather their info | **`family 0`** |
# | 4. version check | every rank, after the all-gather | each rank's NCCL version | *Mismatched NCCL version detected* |
# | 5. topology, channels, transports | every rank | rings/trees, P2P/SHM/NET connections | transport errors |
#
# Step 3 exchanges C structs as raw bytes. Their layout is not promised to stay the same between NCCL
# releases, and mixing versions in one communicator is not supported. When a 2.14 rank and a 2.19 rank
# read each other's messages, a field lands where an address is expected; its first two bytes (the
# address family) read 0, and `ncclSocketInit` refuses to connect. NCCL *does* compare versions, but
# only in step 4, which this job never reaches; that is why the error never says "version".
#
# `NCCL_DEBUG=INFO` prints `NCCL version 2.x.y+cudaX.Y` on every rank at init: the cheapest way to see
# which library each process really loaded (not the one `pip` lists: `LD_LIBRARY_PATH` or `LD_PRELOAD`
# can put the system copy first).

# %% [markdown]
# ## 3 · Reproduce
#
# Two `torchrun` "nodes" (`--nnodes 2`, two ranks each) on 127.0.0.1. Each rank reads its node's
# versions from the recorded snapshot, the ranks exchange them over gloo, and rank 0 writes a cluster
# report that the checks judge. On gloo the job itself runs to the end: the NCCL crash cannot happen
# without NCCL, so the run reproduces the facts that cause it.

# %%
broken = %ncclnb repro nccl_version_mismatch

# %% [markdown]
# Each rank's first line says which node it is and what that node runs:

# %%
import os
for r in range(4):
    print(open(os.path.join(broken.run_dir, f"rank{r}.log")).readline().rstrip())

# %% [markdown]
# ## 4 · Diagnose
#
# The checks' findings are in the card above: NCCL used by torch differs across the nodes (2.14.3 vs
# 2.19.3), node a carries two NCCL libraries, and torch and CUDA differ too. The version matrix of the
# run's cluster report, one row per node, the cells that differ from the other node in red:

# %%
report = ncclnb.load(os.path.join(broken.run_dir, "report.json"))
ncclnb.show_versions(report)

# %% [markdown]
# (With no run at all, `ncclnb.show_versions("seed002-version-mismatch")` opens the bundled seed-002
# report: the same two nodes, built from the recorded DGX A100 snapshot with the seed's versions.)
# The findings, as the checks return them:

# %%
for f in ncclnb.check(report):
    print(f"{f.severity:7s} {f.rule:24s} {f.title}")

# %% [markdown]
# ## 5 · Fix
#
# One NCCL, one CUDA, one torch build on every node:
#
# ```bash
# pip uninstall -y nvidia-nccl-cu11                 # node a: the cu11 wheel torch 1.13+cu117 pulled in
# pip install torch==<the same version on every node>   # a cu12 build; it pins its own nvidia-nccl-cu12
# python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())"   # on every node
# ```
#
# and make sure no system `libnccl.so` (here `/usr/local/nccl2`, 2.17.1) is first on `LD_LIBRARY_PATH`
# or in `LD_PRELOAD`. The simplest way to keep it that way is one container image for every node.
# The write-up pins `nvidia-nccl-cu12==2.17.1`; installing an NCCL wheel other than the one your torch
# pins works only if it is ABI-compatible, and pip will warn about the conflict: prefer the torch
# build's own. The cost: reinstalling (or rebuilding the image) on the odd node, and here upgrading
# torch 1.13 to a CUDA 12 build, which is a code-compatibility check of its own.

# %% [markdown]
# ## 6 · Verify
#
# The fixed run: both nodes carry the same recorded versions (node b's, as if node a had been
# reinstalled). Same launch, same exchange:

# %%
fixed = ncclnb.reproduce("nccl_version_mismatch", fixed=True)
fixed_report = ncclnb.load(os.path.join(fixed.run_dir, "report.json"))
print(f"completed: {fixed.completed} in {fixed.seconds:.1f} s; findings from the checks: {len(ncclnb.check(fixed_report))}")
ncclnb.show_versions(fixed_report)

# %% [markdown]
# **Prevention.** Two ways to catch it before a long run:
#
# - **In the job**, one line: `from ncclnb.guard import init_process_group` in place of torch's.
#   After the group exists it compares torch, CUDA, NCCL and the `NCCL_*` settings that must agree over
#   a small **gloo** exchange (so a broken NCCL cannot hide it) and raises on every rank naming the
#   ranks that differ. It runs before NCCL's first collective, which is when step 3 above would crash.
#   The guarded variant runs the broken job with that comparison; as in step 3, each node's versions
#   are the recorded ones (on this CPU machine every process really loads the same torch), while the
#   ranks, the launch and the exchange are live:

# %%
guarded = %ncclnb repro nccl_version_mismatch --guarded
assert not guarded.completed and guarded.diagnosis.top.category == "version_mismatch"
print(guarded.diagnosis.top.evidence[0].text)

# %% [markdown]
# - **Before the job**, on every node: `ncclnb collect -o $(hostname).json`, then
#   `ncclnb check *.json` on any machine. That is what produced the findings above.

# %% [markdown]
# ## 7 · Recognise its cousins
#
# The knowledge base's other signatures of the same category (`version_mismatch`), with a line each
# from their fixtures:

# %%
from ncclnb.doctor import signature_examples

pd.DataFrame(signature_examples("version_mismatch")).style.hide(axis="index").set_properties(
    subset=["example line"], **{"font-family": "monospace", "font-size": "11px", "text-align": "left"})

# %% [markdown]
# ### Exercise
#
# A 16-rank job on two hosts, the lines that matter:
#
# ```
# gpu-07:88121:88121 [0] NCCL INFO NCCL version 2.18.1+cuda12.1
# gpu-07:88121:88190 [0] NCCL INFO Bootstrap : Using ens5:10.4.1.7<0>
# gpu-12:41377:41377 [0] NCCL INFO NCCL version 2.21.5+cuda12.4
# gpu-12:41377:41440 [0] NCCL INFO Bootstrap : Using ens5:10.4.1.12<0>
# gpu-12:41377:41440 [0] misc/socket.cc:484 NCCL WARN socketProgress: Connection closed by remote peer gpu-07<48532>
# gpu-12:41377:41440 [0] NCCL INFO bootstrap.cc:80 -> 6
# [rank8]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error, NCCL version 2.21.5
# ```
#
# Which is it?
#
# 1. The network between gpu-07 and gpu-12 drops connections.
# 2. The two hosts load different NCCL versions, and the bootstrap fails between them.
# 3. A rank on gpu-07 crashed (out of memory) and took the connection down with it.
#
# <details><summary><b>Answer</b> (click)</summary>
#
# **2.** The two `NCCL version` lines, printed at init by each host, disagree: 2.18.1 + CUDA 12.1 on
# gpu-07, 2.21.5 + CUDA 12.4 on gpu-12. The failure happens in the bootstrap (`bootstrap.cc`), before
# any collective ran, so no data was ever moved: neither a flaky link (1) nor a crash in training (3)
# fits. A closed connection at bootstrap between hosts with different NCCLs is the mismatch until
# proven otherwise: install one NCCL on both and try again before touching the network.
#
# </details>
#
# The doctor on the same text; its first finding is built from the two version lines:

# %%
%%ncclnb_doctor
gpu-07:88121:88121 [0] NCCL INFO NCCL version 2.18.1+cuda12.1
gpu-07:88121:88190 [0] NCCL INFO Bootstrap : Using ens5:10.4.1.7<0>
gpu-12:41377:41377 [0] NCCL INFO NCCL version 2.21.5+cuda12.4
gpu-12:41377:41440 [0] NCCL INFO Bootstrap : Using ens5:10.4.1.12<0>
gpu-12:41377:41440 [0] misc/socket.cc:484 NCCL WARN socketProgress: Connection closed by remote peer gpu-07<48532>
gpu-12:41377:41440 [0] NCCL INFO bootstrap.cc:80 -> 6
[rank8]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error, NCCL version 2.21.5

# %% [markdown]
# Next: `04_desync_at_save.ipynb`, a job whose nodes agree on everything and still hangs.
