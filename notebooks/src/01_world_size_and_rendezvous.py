# %% [markdown]
# # 01 · World size and rendezvous: the job that waits for ranks that never come
#
# **Seed 000.** You will see a two-node job fail the way it failed for real, read the doctor's
# verdict, fix it, and turn on the one-line check that stops it at launch next time.
# Runs on a laptop with no GPU in under a minute (three live runs on 127.0.0.1 over gloo).
#
# [← 00 Start here](00_start_here.ipynb) · next: [02 CUDA_VISIBLE_DEVICES](02_cuda_visible_devices.ipynb)

# %% [markdown]
# ## 1 · Symptom
#
# Two nodes, four NVIDIA A10G each, PyTorch Lightning 1.9.5, PyTorch 2.4.0, FSDP over NCCL.
# The job never trains. The write-up quotes three lines:
#
# ```
# Invalid rank requested : 7/4
# libnccl-net.so: cannot open shared object file
# Timed out after 1801 seconds waiting for clients
# ```
#
# The last one is the expensive one: the rendezvous store waits its full timeout
# (torch's default for the store is 1800 s) before it says anything, so **every attempt cost
# half an hour**. The write-up then suspects the network, firewalls, clock skew and NCCL
# settings, exports `NCCL_SOCKET_IFNAME`, `NCCL_NSOCKS_PERTHREAD`, `NCCL_SOCKET_NTHREADS`…
# None of that is the cause. The first line says it: rank 7 asked for a place in a group of 4.
#
# Paste the three lines into the doctor:

# %%
import ncclnb
%load_ext ncclnb

# %%
%%ncclnb_doctor
Invalid rank requested : 7/4
libnccl-net.so: cannot open shared object file
Timed out after 1801 seconds waiting for clients

# %% [markdown]
# The net-plugin line is ranked last and marked harmless: NCCL looks for an optional external
# network plugin (`libnccl-net.so`, e.g. AWS's or Mellanox's), finds none, and uses its internal
# socket/IB transport. It costs nothing on a machine that never had such a plugin.

# %% [markdown]
# ## 2 · What torch.distributed is doing at that moment
#
# `init_process_group` runs in two phases:
#
# 1. **Rendezvous (c10d TCPStore).** Rank 0 (or torchrun's agent) listens on
#    `MASTER_ADDR:MASTER_PORT`; every rank connects, checks in, and waits until `WORLD_SIZE`
#    ranks have. Too few ranks ever arrive → `Timed out after N seconds waiting for clients`
#    once the store's timeout has passed: 1800 s in the seed (its
#    `FSDPStrategy(timeout=timedelta(seconds=1800))`, which is also torch's store default),
#    reported as 1801.
# 2. **Communicator init (NCCL).** Rank 0 creates a `ncclUniqueId` and publishes it through
#    the store; every rank calls `ncclCommInitRank(nranks=WORLD_SIZE, id, rank)`. A rank
#    with `rank >= nranks` is refused at once: `Invalid rank requested : 7/4`
#    (gloo says `rank < size. 7 vs 4`).
#
# Who computes `RANK` and `WORLD_SIZE`? Here Lightning does, from `Trainer(num_nodes=…,
# devices=…)`, *not* from the launcher. The job ran two nodes while Lightning was left at
# `num_nodes=1`:

# %%
import pandas as pd

rows = []
for node in (0, 1):
    for local in range(4):
        rank = node * 4 + local                      # what the launcher numbers
        rows.append({"node": node, "LOCAL_RANK": local, "RANK": rank,
                     "WORLD_SIZE (num_nodes=1)": 1 * 4, "WORLD_SIZE (num_nodes=2)": 2 * 4,
                     "valid with num_nodes=1": rank < 4})
pd.DataFrame(rows).set_index(["node", "LOCAL_RANK"])

# %% [markdown]
# Node 1's ranks 4–7 ask for places 4…7 in a group of 4: NCCL refuses them. The same
# arithmetic the other way round (`WORLD_SIZE=8` but only one node's 4 processes started, or
# a node that cannot reach the store) leaves the store waiting for `4/8 clients` until its
# timeout: the third line.

# %% [markdown]
# ## 3 · Reproduce
#
# Two torchrun "nodes" of four ranks on 127.0.0.1, Lightning's arithmetic with `num_nodes=1`,
# gloo instead of NCCL (no GPU here), timeouts cut to 5 s. Live per-rank progress, then the
# doctor's card on the logs of all eight ranks:

# %%
broken = %ncclnb repro rank_beyond_world_size
assert not broken.completed and broken.diagnosed_as_expected  # this notebook checks itself when the tests execute it

# %% [markdown]
# ## 4 · Diagnose
#
# The doctor named `rank_world_size_mismatch` and blamed ranks 4–7. The lines it used:

# %%
top = broken.diagnosis.top
print(f"{top.category}: {top.title}\nranks blamed: {list(top.ranks)}\n")
for ev in top.evidence[:6]:
    print(f"  {ev.source.rsplit('/', 1)[-1]}:{ev.line}  {ev.text}")

# %% [markdown]
# The rank map of the seed's job, rebuilt from recorded machines (bundled report
# `seed000-2node-a10g`): node 1's four slots are red because their `RANK` is not below the
# `WORLD_SIZE` they were given. Click a cell for the rank's environment.

# %%
ncclnb.show_ranks(ncclnb.load("seed000-2node-a10g"))

# %% [markdown]
# ## 5 · Fix
#
# Make every rank agree with the launcher: `WORLD_SIZE = nodes × GPUs per node`,
# `RANK = NODE_RANK × GPUs per node + LOCAL_RANK`. Either tell Lightning the truth:
#
# ```python
# trainer = Trainer(num_nodes=2, devices=4, strategy=strategy)
# ```
#
# or, as the seed did, give it a `ClusterEnvironment` that reads `RANK`, `WORLD_SIZE`,
# `LOCAL_RANK` and `NODE_RANK` from what torchrun/Slurm exported. It costs nothing. The NCCL
# socket settings the write-up added change nothing here; keep `NCCL_DEBUG=INFO` while you
# debug, it prints every rank's `nRanks` at init.

# %% [markdown]
# ## 6 · Verify
#
# The fixed program (the seed's `CustomEnvironment`) completes. To keep this notebook
# under a minute, this run and the next use two "nodes" of two ranks (`--nproc 4`): same
# program, smaller numbers.

# %%
fixed = %ncclnb repro rank_beyond_world_size --fixed --nproc 4
assert fixed.completed

# %% [markdown]
# And prevention: the broken launch again, with ncclnb's launch check before the rendezvous.
# Node 1's ranks (2 and 3 of a world of 2 here) stop before the rendezvous with the cause in
# one line, instead of a 30-minute wait:

# %%
guarded = %ncclnb repro rank_beyond_world_size --guarded --nproc 4
assert not guarded.completed and {2, 3} <= set(guarded.diagnosis.top.ranks)
for f in guarded.diagnosis.findings:
    if f.rule == "ncclnb_preflight_rank":
        print("\n".join(ev.text for ev in f.evidence))

# %% [markdown]
# To turn it on in your own script, one line replaces torch's `init_process_group`
# (same arguments; it checks rank < world size, the launcher's numbering, that
# `MASTER_ADDR` resolves and `MASTER_PORT` answers, then compares versions across ranks):
#
# ```python
# from ncclnb.guard import init_process_group
# ```
#
# Lightning calls torch's `init_process_group` itself; there, call
# `ncclnb.guard.preflight(rank=trainer.global_rank, world_size=trainer.world_size)` first,
# which is what the guarded run above does.

# %% [markdown]
# ## 7 · Recognise its cousins
#
# The knowledge base's other signatures of the same categories, each with an example line
# from its fixture:

# %%
from ncclnb.doctor import signature_examples

pd.set_option("display.max_colwidth", 110)
pd.DataFrame(signature_examples("rank_world_size_mismatch", "rendezvous_unreachable", "net_plugin_missing")).set_index(["category", "signature"])

# %% [markdown]
# ### Exercise
#
# A colleague's 16-rank job (torchrun, two nodes) dies after half an hour. Rank 5 printed:
#
# ```
# [rank5]:[W1103 09:12:44.118230871 socket.cpp:663] [c10d] The client socket has failed to connect to [gpu-node-0]:29500 (errno: 111 - Connection refused).
# [rank5]: torch.distributed.DistNetworkError: The client socket has timed out after 1800s while trying to connect to (gpu-node-0, 29500).
# ```
#
# Which is it?
#
# 1. Rank 5 is beyond the world size.
# 2. Nothing listens on `gpu-node-0:29500`: the store host never started, died first, or
#    `MASTER_PORT` differs between the nodes.
# 3. `libnccl-net.so` is missing on the second node.
#
# <details><summary>Answer</summary>
#
# **2.** `Connection refused` (errno 111) means the host answered and no process listens on
# that port. Rank 5 never reached the store, so nothing about its rank number was checked yet (1),
# and NCCL, which loads net plugins, was never initialised (3). Look at rank 0's log on
# `gpu-node-0` for why it is not there. (`errno: 110 - Connection timed out` instead would
# point at a firewall or a wrong address.) The launch check catches it in seconds:
# `nobody listens at MASTER_ADDR:MASTER_PORT`.
# </details>
#
# What the doctor says, with the lines it used:

# %%
exercise = """\
[rank5]:[W1103 09:12:44.118230871 socket.cpp:663] [c10d] The client socket has failed to connect to [gpu-node-0]:29500 (errno: 111 - Connection refused).
[rank5]: torch.distributed.DistNetworkError: The client socket has timed out after 1800s while trying to connect to (gpu-node-0, 29500).
"""
answer = ncclnb.diagnose(exercise)
for f in answer.findings[:2]:
    print(f"{f.category} ({f.rule}): {f.title}")
    for ev in f.evidence[:2]:
        print(f"    line {ev.line}: {ev.text[:120]}")
