# %% [markdown]
# # 02 · CUDA_VISIBLE_DEVICES: physical GPUs, logical ids, and the barrier's guess
#
# **Seed 001.** Four ranks on GPUs 6,7,8,9 of a large PCIe server hang while loading the
# dataset. You will see why every rank ends up on one GPU, which view shows it, the one-argument
# fix, and what the write-up's workaround (`NCCL_P2P_DISABLE=1`) really costs.
# Runs on a laptop with no GPU in well under a minute; cells that need a GPU are marked.
#
# [← 01 World size and rendezvous](01_world_size_and_rendezvous.ipynb) · [00 Start here](00_start_here.ipynb)

# %% [markdown]
# ## 1 · Symptom
#
# LLaMA-Factory, LoRA fine-tuning, `CUDA_VISIBLE_DEVICES=6,7,8,9`. The job stops while loading
# the dataset; the GPUs show 100 % utilisation; nothing moves. The log's one clue:
#
# ```
# [rank3]:[W304 17:41:12.735149131 ProcessGroupNCCL.cpp:4561] [PG ID 0 PG GUID 0 Rank 3] using GPU 3 to perform barrier as devices used by this process are currently unknown...
# ```
#
# The write-up's fix was three environment variables, `NCCL_SOCKET_IFNAME=ens34`,
# `NCCL_IB_DISABLE=1`, `NCCL_P2P_DISABLE=1`: the first two do nothing on one node, and the third
# slows every transfer between GPUs (section 5). The 100 % is NCCL kernels spinning while they
# wait for a peer, not work.

# %%
import ncclnb
%load_ext ncclnb

# %%
%%ncclnb_doctor
[rank3]:[W304 17:41:12.735149131 ProcessGroupNCCL.cpp:4561] [PG ID 0 PG GUID 0 Rank 3] using GPU 3 to perform barrier as devices used by this process are currently unknown. This can potentially cause a hang if this rank to GPU mapping is incorrect.

# %% [markdown]
# ## 2 · What CUDA and NCCL are doing at that moment
#
# `CUDA_VISIBLE_DEVICES=6,7,8,9` renumbers: inside every process the four GPUs are `cuda:0`
# … `cuda:3`, and physical GPUs 0–5 do not exist. A process uses `cuda:0` until it calls
# `torch.cuda.set_device`. None did, so:
#
# | rank | should use | logical id it used | physical GPU it used |
# |---|---|---|---|
# | 0 | `cuda:0` | `cuda:0` | 6 |
# | 1 | `cuda:1` | `cuda:0` | 6 |
# | 2 | `cuda:2` | `cuda:0` | 6 |
# | 3 | `cuda:3` | `cuda:0` | 6 |
#
# Four processes put their model and tensors on physical GPU 6. Then `barrier()` needs a device,
# and ProcessGroupNCCL has not seen one bound to this process, so it *guesses* one from the
# rank: `using GPU 3 to perform barrier`. The guess (`cuda:rank`) differs from where the rank's
# data lives (`cuda:0`), so the barrier's communicator and the training's communicator are on
# different GPUs, and the training's puts four ranks on one device, which NCCL does not support
# (it says `Duplicate GPU detected` where it notices at init). The ranks end up waiting on each
# other until the watchdog's timeout (600 s by default), with the GPUs spinning at 100 %.
# `LOCAL_RANK` is the right logical index, because logical ids count from 0 inside
# `CUDA_VISIBLE_DEVICES`.

# %% [markdown]
# ## 3 · Reproduce
#
# Four ranks with `CUDA_VISIBLE_DEVICES=6,7,8,9` and no `set_device`. Without GPUs the ranks
# cannot hang on a GPU, so they run for real over gloo, record which device each one would have
# used, and the doctor judges their logs (the result's notes say what NCCL prints instead):

# %%
broken = %ncclnb repro cuda_visible_devices
assert broken.diagnosed_as_expected

# %% [markdown]
# ## 4 · Diagnose
#
# The doctor names `device_mapping`: the ranks share one GPU. Where are GPUs 6,7,8,9 on
# the seed's machine? The bundled `seed001-10x-pcie` is built from a real ten-GPU Quadro
# RTX 8000 server (topology written by hand to match the seed; its description says so).
# The GPUs in use are highlighted:

# %%
seed001 = ncclnb.load("seed001-10x-pcie")
ncclnb.show_topology(seed001, highlight=[6, 7, 8, 9])

# %% [markdown]
# 6↔7 and 8↔9 are `PIX` (one PCIe switch), but 6,7 and 8,9 are `SYS`: they sit on different
# sockets, and traffic between the pairs crosses the inter-socket link. NUMA placement:

# %%
ncclnb.show_numa(seed001)

# %% [markdown]
# ## 5 · Fix
#
# One line per rank, before any CUDA work, or one argument:
#
# ```python
# local_rank = int(os.environ["LOCAL_RANK"])
# torch.cuda.set_device(local_rank)                      # cuda:LOCAL_RANK, inside CUDA_VISIBLE_DEVICES
# dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
# ```
#
# `device_id=` binds the process group to that GPU, so the barrier needs no guess (and the
# NCCL communicator is created at once, so init errors show at init). Cost: none.
#
# Not the fix: `NCCL_P2P_DISABLE=1`. It changes how bytes travel, not which GPU each rank
# uses, and it costs bandwidth on every intra-node transfer: NCCL then copies through host
# memory (the SHM transport) instead of GPU to GPU. On this machine that hits the `PIX` pairs
# 6↔7 and 8↔9; across sockets (`SYS`) NCCL on Intel hosts uses host memory by default anyway.
# What the recorded nccl-tests runs bundled with ncclnb measured (all_reduce bus bandwidth,
# largest size, one machine each):

# %%
import math

import pandas as pd
from ncclnb.checks.topology import BUSBW

pd.set_option("display.max_colwidth", 110)
rows = [(k, *BUSBW[k]) for k in ("pcie_no_p2p", "pcie_p2p", "a100_nvlink", "h100_nvlink")]
pd.DataFrame({
    "machine (recorded nccl-tests run)": [what for _, _, what, _ in rows],
    "all_reduce busbw GB/s": [gbs for _, gbs, _, _ in rows],
    "x PCIe without P2P": [round(gbs / BUSBW["pcie_no_p2p"][0], 1) for _, gbs, _, _ in rows],
    "log scale": ["█" * max(1, round(8 * math.log10(gbs))) for _, gbs, _, _ in rows],
}, index=[k for k, *_ in rows])

# %% [markdown]
# These are four different machines, not one machine with P2P on and off: the PCIe figures are
# 2× RTX 2080 Ti with P2P unsupported (4.0 GB/s) and 6× RTX 4090 with P2P enabled by a patched
# driver (24.6 GB/s at 32 MiB). They bound the scale, about 6× on PCIe; we have no recorded
# Quadro RTX 8000 or L20 run. Measure your own with
# `all_reduce_perf -b 8 -e 1G -f 2 -g 4`, once as is and once with `NCCL_P2P_DISABLE=1`.
#
# What the checks say of the seed's node with the seed's settings: the placement warning.
# `NCCL_P2P_DISABLE=1` on a PCIe-only machine draws no finding of its own; the rule
# `p2p_disabled_on_nvlink` fires where the setting throws NVLink away.

# %%
import dataclasses

seed_env = dataclasses.replace(seed001, env={"CUDA_VISIBLE_DEVICES": "6,7,8,9", "NCCL_P2P_DISABLE": "1",
                                             "NCCL_IB_DISABLE": "1", "NCCL_SOCKET_IFNAME": "ens34"})
for f in ncclnb.check(seed_env):
    print(f"{f.severity:8s} {f.rule}: {f.title}")

# %% [markdown]
# ## 6 · Verify
#
# The fixed program (`set_device(LOCAL_RANK)`) completes with one rank per GPU. The doctor's
# remaining note is about placement, not mapping: GPUs 8,9 sit on the other socket.

# %%
fixed = %ncclnb repro cuda_visible_devices --fixed
assert fixed.completed and "device_mapping" not in {f.category for f in fixed.diagnosis.findings}

# %% [markdown]
# **Prevention.** With ncclnb's drop-in `init_process_group` (one line in your script:
# `from ncclnb.guard import init_process_group`), an NCCL job runs `ncclnb.guard.check_devices()`
# right after the group exists: every rank reports the physical GPU it uses, over a small gloo
# exchange, and ranks on one host that share a GPU stop at once, named, instead of hanging. The
# guarded variant runs the seed's broken program with that check (on this CPU machine each rank
# reports the GPU the seed-001 mapping gives it; the ranks and the exchange are real):

# %%
guarded = %ncclnb repro cuda_visible_devices --guarded
assert not guarded.completed and guarded.diagnosis.top.category == "device_mapping"
print(guarded.diagnosis.top.evidence[0].text)

# %% [markdown]
# The launch check also catches this failure's neighbour before any rendezvous: the same job moved to
# an 8-GPU node, where `CUDA_VISIBLE_DEVICES=6,7,8,9` names GPUs that do not exist (CUDA hides them
# silently, and every entry after them). Here is what it says, stopping rank 1 at launch:

# %% tags=["raises-exception"]
from ncclnb.guard import preflight

launch = {"CUDA_VISIBLE_DEVICES": "6,7,8,9", "RANK": "1", "WORLD_SIZE": "4", "LOCAL_RANK": "1",
          "LOCAL_WORLD_SIZE": "4", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}
preflight(environ=launch, backend="nccl", gpus=8, check_store=False)

# %% [markdown]
# ### On a machine with GPUs
#
# The next cell needs NVIDIA GPUs; it is tagged `gpu` and was not run when this
# notebook was built. It starts one process per setting of `CUDA_VISIBLE_DEVICES` and prints
# what each logical id means in it, by PCI bus id:

# %% tags=["gpu"]
import os
import subprocess
import sys

import torch

n = torch.cuda.device_count()
probe = ("import torch; print([(f'cuda:{i}', torch.cuda.get_device_properties(i).pci_bus_id) "
         "for i in range(torch.cuda.device_count())])")
if n == 0:
    print("No CUDA GPU here (torch.cuda.device_count() is 0): nothing to probe. On a GPU node this "
          "prints each logical id's PCI bus id, unset and with the ids reversed.")
for visible in (None, ",".join(str(i) for i in reversed(range(n)))) if n else ():
    env = dict(os.environ)
    env.pop("CUDA_VISIBLE_DEVICES", None)
    if visible is not None:
        env["CUDA_VISIBLE_DEVICES"] = visible
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    print(f"CUDA_VISIBLE_DEVICES={visible or '(unset)'}: {out.stdout.strip() or out.stderr.strip()[-300:]}")

# %% [markdown]
# ## 7 · Recognise its cousins
#
# The knowledge base's other signatures of the same categories (device mapping, and the GPU
# placement / peer-to-peer family), each with an example line from its fixture:

# %%
from ncclnb.doctor import signature_examples

pd.DataFrame(signature_examples("device_mapping", "p2p_topology", ids=("duplicate_gpu", "invalid_device_ordinal"))).set_index(["category", "signature"])

# %% [markdown]
# ### Exercise
#
# An 8-rank job on one node, `CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7`, dies at the first
# all_reduce. Rank 5's log ends with:
#
# ```
# node-7:21877:21950 [0] init.cc:871 NCCL WARN Duplicate GPU detected : rank 5 and rank 4 both on CUDA device 61000
# [rank5]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:2027, invalid usage
# ```
#
# Which is it?
#
# 1. GPUs 4 and 5 are on different sockets, so P2P between them fails.
# 2. Ranks 4 and 5 both use the same GPU: a device chosen from something other than
#    `LOCAL_RANK` (a hard-coded `cuda:0`, `set_device(rank % 4)`, a missing `set_device`).
# 3. `NCCL_P2P_DISABLE` is not set.
#
# <details><summary>Answer</summary>
#
# **2.** `Duplicate GPU detected : rank 5 and rank 4 both on CUDA device 61000` names two
# ranks and one device (61000 is its PCI bus id). NCCL checks this at communicator init,
# before any transport is chosen, so neither P2P (1) nor its setting (3) is involved.
# Print `torch.cuda.current_device()` and `LOCAL_RANK` on every rank, then
# `torch.cuda.set_device(local_rank)`.
# </details>
#
# What the doctor says, with the lines it used:

# %%
exercise = """\
node-7:21877:21950 [0] init.cc:871 NCCL WARN Duplicate GPU detected : rank 5 and rank 4 both on CUDA device 61000
[rank5]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:2027, invalid usage
"""
for f in ncclnb.diagnose(exercise).findings[:2]:
    print(f"{f.category} ({f.rule}): {f.title}")
    for ev in f.evidence[:2]:
        print(f"    line {ev.line}: {ev.text[:120]}")
