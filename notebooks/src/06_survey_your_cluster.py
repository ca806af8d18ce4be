# %% [markdown]
# # 06 · Survey your cluster before a long run
#
# Most of the documented failures were visible before the job started: a node with another NCCL (seed
# 002), a world size that did not add up (seed 000), ranks on the wrong GPUs (seed 001). `ncclnb survey`
# is the pre-flight check you run **on the same nodes, with the same launcher** as the job. Every rank
# joins a gloo group of the survey's own (so a broken NCCL cannot hide the facts that explain it),
# the ranks exchange their facts as JSON, one snapshot per node is collected, a link test measures the
# collectives and the links between nodes, and rank 0 writes `report.json`, runs the checks and prints a
# verdict.
#
# This notebook: how to launch it on a cluster, a real run on this machine, then the bundled demo report
# of a 4-node job with problems planted, read view by view and finding by finding. It runs in well
# under a minute on a laptop with no GPU.

# %%
import os
import subprocess
import sys
import tempfile
import textwrap

import pandas as pd

import ncclnb
%load_ext ncclnb

# %% [markdown]
# ## 1 · Launch it the way you launch the job
#
# Each rank runs `python -m ncclnb survey --out DIR`; rank 0 writes `DIR/report.json` (give a directory
# on shared storage, or copy it from rank 0's node afterwards).
#
# | launcher | command |
# |---|---|
# | one node, torchrun | `torchrun --nproc-per-node 8 -m ncclnb survey --out survey/` |
# | N nodes, torchrun (static) | on node *i*: `torchrun --nnodes N --nproc-per-node 8 --node-rank i --master-addr NODE0 --master-port 29500 -m ncclnb survey --out survey/` |
# | N nodes, torchrun (c10d) | on every node: `torchrun --nnodes N --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint NODE0:29500 --rdzv-id survey1 -m ncclnb survey --out survey/` |
# | Slurm | `export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" \| head -1) MASTER_PORT=29500`<br>`srun --ntasks-per-node 8 --gpus-per-node 8 python -m ncclnb survey --out survey/` |
# | Open MPI | `mpirun -np 16 -npernode 8 -x MASTER_ADDR=node0 -x MASTER_PORT=29500 python -m ncclnb survey --out survey/` |
# | one machine, no launcher | `ncclnb survey --local --nproc 8 --out survey/` |
#
# The survey reads each launcher's own rank variables (`RANK`/`LOCAL_RANK`/`WORLD_SIZE`,
# `SLURM_PROCID`/`SLURM_LOCALID`/`SLURM_NTASKS`, `OMPI_COMM_WORLD_*`); under srun and mpirun export
# `MASTER_ADDR` and `MASTER_PORT` yourself. Use the job's own environment (container, modules,
# `NCCL_*` exports, `CUDA_VISIBLE_DEVICES`): the survey reports what *that* environment gives each rank.
#
# Options: `--timeout S` (default 120; every step waits at most this long, and a rank that never joins
# is named in a *partial* report instead of a hang), `--no-link-test`, `--sizes 8B:1G[:2]` and
# `--iters N` for the link test (NCCL on the GPUs where every rank has one, gloo otherwise). Exit
# status: 0 no error findings, 1 error findings or a partial report, 2 bad arguments.

# %% [markdown]
# ## 2 · A real run on this machine
#
# Two ranks on 127.0.0.1, no launcher, with a short gloo link test (this machine has no GPU, so the link
# test measures gloo over loopback: there is no reference to judge it against, and the verdict says so):

# %%
out = tempfile.mkdtemp(prefix="ncclnb-survey-")
run = subprocess.run([sys.executable, "-m", "ncclnb", "survey", "--local", "--nproc", "2", "--out", out,
                      "--sizes", "8B:256K:8", "--iters", "3", "--timeout", "60"],
                     capture_output=True, text=True, timeout=300)
print(run.stdout or run.stderr)
print("exit status:", run.returncode)

# %% [markdown]
# The report opens like any ncclnb file. Its rank table has, per rank: host, node rank, rank, local rank,
# pid, CUDA device, GPU UUID and PCI bus id (only where the job had already set its device), CPU
# affinity, NUMA node (of the GPU; without one, of the rank's CPUs) and the NIC its NCCL would use
# (`NCCL_SOCKET_IFNAME` or NCCL's default order; the HCA where `NCCL_IB_HCA` names one):

# %%
mine = ncclnb.load(os.path.join(out, "report.json"))
pd.DataFrame([{k: getattr(r, k) for k in ("host", "rank", "local_rank", "world_size", "pid", "cuda_index",
                                          "bus_id", "cpu_affinity", "numa_node", "nic")} for r in mine.ranks])

# %% [markdown]
# ## 3 · The demo report: a 4-node job with problems planted
#
# `survey-demo` is bundled: what the survey would write for 4 DGX A100 nodes × 8 GPUs, built from the
# recorded DGX A100 topology, with six problems planted. Its description says exactly what is recorded,
# what is constructed (the link figures are constructed, not measured) and what was planted:

# %%
demo = ncclnb.load("survey-demo")
print(textwrap.fill(demo.description, 110))

# %% [markdown]
# The summary rank 0 printed is the report's own findings, worst first. `ncclnb check DIR/report.json`
# prints them with evidence and fixes; here, the titles:

# %%
for f in demo.findings:
    print(f"{f.severity:7s} {f.rule:20s} {f.title}")

# %% [markdown]
# ## 4 · The job map
#
# One row per node: its GPUs grouped by NUMA node, its NICs, and each rank on the GPU it runs on with its
# CPU affinity. Marks come only from the findings (the view never judges by itself): a rank named by a
# finding is marked, a node named by one (or holding a marked rank) is flagged, and named nodes come
# first. Click a rank or a node for its details. On 1024 nodes the map pages, anomalous nodes first.

# %%
ncclnb.show_job_map(demo)

# %% [markdown]
# Reading it:
#
# - **demo-node3**: ranks 28-31 marked for `rank_nic_far` (their `nic` is mlx5_4..7, SYS from their
#   GPUs), and a rank 32 with no GPU: `rank_out_of_range`, the stray 9th process.
# - **demo-node1**: ranks 11 and 12 sit on each other's GPU (cuda:4 and cuda:3, `local_rank_device`),
#   and their CPUs are the other socket's (`rank_affinity_numa`).
# - **demo-node0**: rank 5 bound to NUMA node 1's CPUs while GPU5 is on NUMA node 7.
# - **demo-node2**: the whole node flagged by `versions_differ` (another torch and NCCL).

# %% [markdown]
# ## 5 · Link results: "is this normal?"
#
# busbw by message size for each collective, as nccl-tests computes it (all_reduce:
# algbw × 2(n-1)/n), against the reference band for this hardware; then the point-to-point ring
# between nodes, each node's lowest rank sending to the next node's.

# %%
ncclnb.show_links(demo)

# %% [markdown]
# The reference here is the per-NIC inter-node row (InfiniBand HDR, 22-25 GB/s per port) times the 8
# ports each node uses: 176-200 GB/s for large all_reduce. The demo reaches about 47: `link_busbw_low`.
# The ring says why: demo-node1 → demo-node2 runs at 5.9 GB/s where the other pairs run at about 23
# (`link_slow_pair`). Every ring channel carries the same share, so one slow link holds all of them back.
# Two traps when you read your own numbers: below about 1 GiB per rank the figures are latency-bound
# and say nothing about the links (the verdict then says "too small to judge"), and on two nodes NCCL's
# Tree or NVLS algorithms can show a busbw above the NIC's line rate: measure the network with
# `NCCL_ALGO=Ring`.

# %% [markdown]
# ## 6 · The rank table and the versions
#
# The rank map (nodes × local slots; cells coloured by what is odd about them) and the version matrix
# (one row per node, the cells that differ from the majority in red):

# %%
ncclnb.show_ranks(demo)

# %%
ncclnb.show_versions(demo)

# %% [markdown]
# ## 7 · Every finding, and what to fix
#
# | finding | on | what it means | fix |
# |---|---|---|---|
# | `versions_differ` (NCCL, torch, CUDA, pip) | demo-node2, ranks 16-23 | an older image: NCCL 2.18.1 against 2.21.5. NCCL does not promise that versions interoperate; seed 002 died at connect with `family 0` | one image for every node; check `torch.cuda.nccl.version()` everywhere ([notebook 03](03_nccl_versions_across_nodes.ipynb)) |
# | `rank_out_of_range` | rank 32 on demo-node3 | a process with RANK ≥ WORLD_SIZE: gloo refused it, NCCL would say `Invalid rank requested : 32/32` | start as many processes per node as the world size counts; let the launcher number ranks ([notebook 01](01_world_size_and_rendezvous.ipynb)) |
# | `local_rank_device` | ranks 11, 12 | each runs on the other's GPU | `torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))` ([notebook 02](02_cuda_visible_devices.ipynb)) |
# | `rank_affinity_numa` | ranks 5, 11, 12 | CPUs on another socket than the GPU: host↔device copies and NCCL's proxy thread cross the inter-socket link | bind each rank to its GPU's NUMA node (`numactl --cpunodebind=N --membind=N`, Slurm `--cpu-bind`); fixing the device mapping fixes 11 and 12 |
# | `rank_nic_far` | ranks 28-31 | `NCCL_IB_HCA=mlx5_$LOCAL_RANK` sends them through HCAs on the other socket (mlx5_4/5 are storage ports on a DGX A100) | leave `NCCL_IB_HCA` unset, or list every compute HCA: NCCL picks the nearest per GPU |
# | `link_busbw_low`, `link_slow_pair` | demo-node1 → demo-node2 | one degraded link drags every collective | `ibstat` on both ends (rate, state), the switch port and cable; `ib_write_bw` or nccl-tests `sendrecv_perf` between the two nodes |
# | `local_rank_device` (info) | rank 32 | the stray process set no GPU | goes away with the stray process |
# | `nccl_env_differs` (info) | demo-node3 | its `NCCL_IB_HCA` differs from the others' | see `rank_nic_far` |
#
# Each finding carries its evidence lines and fix; one in full:

# %%
far = next(f for f in demo.findings if f.rule == "rank_nic_far")
print(far.title)
for e in far.evidence:
    print("  >", e.text)
print("fix:", far.fix)

# %% [markdown]
# After fixing, run the survey again with the same launcher and compare: the verdict should read
# `READY`, the link figures should sit in their band, and `ncclnb check survey/report.json` should have
# no errors. In any notebook, `%ncclnb load survey/report.json` then `%ncclnb jobmap` or `%ncclnb links`
# opens the same views, and `ncclnb.dashboard(report)` puts every view in tabs. For a run you did not survey, collect a snapshot
# on each node (`ncclnb collect -o $(hostname).json`) and `ncclnb check *.json`: the node checks run, but
# only the survey knows which rank ran where.
