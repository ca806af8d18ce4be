# %% [markdown]
# # 00 · Start here: ncclnb in five minutes
#
# Your multi-GPU job hangs, times out, or dies in `init_process_group`. ncclnb gives you:
#
# 1. **the cause, named**, with the log lines that prove it and the fix (the *doctor*);
# 2. **the picture around it**: GPU topology, NUMA placement, which rank runs on which GPU of
#    which node, which versions each node runs (the *views*);
# 3. **a reproduction** that fails the same way on a laptop with no GPU, then passes once fixed;
# 4. **prevention**: a launch check and cheap guards inside the training loop.
#
# This notebook shows one of each in about half a minute. Then pick your symptom from the
# [map at the end](#Which-notebook-for-your-symptom).

# %%
import ncclnb
%load_ext ncclnb

# %% [markdown]
# ## The dashboard
#
# On a machine with NVIDIA GPUs this shows *this* machine (`ncclnb.collect()` reads NVML,
# sysfs and the environment; it touches no GPU). Without GPUs (like the machine that built
# this notebook, or Binder) it shows a bundled, recorded job instead:
# `seed000-2node-a10g`, the two-node job of [notebook 01](01_world_size_and_rendezvous.ipynb),
# because a broken job gives every tab something to say.

# %%
here = ncclnb.collect()
if here.gpus:
    target, why = here, f"this machine ({len(here.gpus)} GPUs)"
else:
    target, why = ncclnb.load("seed000-2node-a10g"), "the bundled seed000-2node-a10g report: no GPU here"
print("dashboard of", why)
ncclnb.dashboard(target)

# %% [markdown]
# ## A pasted log, diagnosed
#
# Paste what your ranks printed under `%%ncclnb_doctor`. These two lines are from a real
# incident (seed 002: two nodes, each with its own NCCL):

# %%
%%ncclnb_doctor
ncclSocketInit: connecting to address with family 0 is neither AF_INET(2) nor AF_INET6(10)
torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1275, internal error

# %% [markdown]
# The same from Python: `ncclnb.diagnose(text_or_paths)`; from a shell:
# `ncclnb doctor rank*.log`. Give it every rank's log: cross-rank reasoning (who ran one
# collective more, which hosts run which NCCL) needs them all.

# %% [markdown]
# ## A failure reproduced and fixed, live
#
# Seed 003: training runs for hours, then the job hangs at the final save and NCCL's watchdog
# kills it after 10 minutes. Cause: an unseeded train/test split, so one rank gets one more
# batch and runs one collective more than the others. Here: 4 gloo ranks on 127.0.0.1,
# timeouts cut to 5 s.

# %%
broken = %ncclnb repro unseeded_split_desync
assert not broken.completed and broken.diagnosed_as_expected

# %% [markdown]
# The fix is one seed (`train_test_split(..., seed=42)`, or seeding numpy on every rank).
# The fixed program completes:

# %%
fixed = %ncclnb repro unseeded_split_desync --fixed
assert fixed.completed

# %% [markdown]
# ## Which notebook for your symptom
#
# | you see | open |
# |---|---|
# | my job hangs at init; `Invalid rank requested`; `Timed out … waiting for clients` | [01 · World size and rendezvous](01_world_size_and_rendezvous.ipynb), then [02](02_cuda_visible_devices.ipynb) |
# | ranks see different GPUs; a barrier hangs; `using GPU 3 to perform barrier as devices used by this process are currently unknown` | [02 · CUDA_VISIBLE_DEVICES](02_cuda_visible_devices.ipynb) |
# | NCCL versions differ; `ncclSocketInit` errors across nodes | [03 · NCCL versions across nodes](03_nccl_versions_across_nodes.ipynb) |
# | a watchdog timeout at the end of training (at save, at eval) | [04 · Desync at save](04_desync_at_save.ipynb) |
# | a hand-written all-to-all (isend/irecv) hangs | [05 · All-to-all pairing](05_alltoall_pairing.ipynb) |
# | a long run is about to start on many nodes: is everything the same, placed well, fast? | [06 · Survey your cluster](06_survey_your_cluster.ipynb) |
# | my own logs, my own cluster | [07 · Your own logs](07_your_own_logs.ipynb) |
# | every view on bundled machines | [views](views.ipynb) |
#
# Two settings help in every case: `NCCL_DEBUG=INFO` (NCCL prints its version, transports and
# ring/tree at init), and a shorter `timeout=` in `init_process_group` while you debug (torch's
# defaults: 600 s for NCCL's watchdog, 1800 s for the store). Leave
# `TORCH_NCCL_ASYNC_ERROR_HANDLING` on, as recent torch does by default: with `0` the watchdog
# reports a timed-out collective but does not end the process, and the job hangs on.
