# %% [markdown]
# # ncclnb views
#
# Every view ncclnb draws, on machines bundled with ncclnb (no GPU needed). Each `show_*`
# returns a live widget in a kernel; click a cell of a matrix to read its details in the pane
# under it. The same output also carries plain HTML with the figure, so this notebook still
# reads after nbconvert or on a machine with no kernel.
#
# | Python | magic | shows |
# |---|---|---|
# | `ncclnb.show_topology(x)` | `%ncclnb topo` | GPU×GPU and GPU×NIC links, GPUs in use |
# | `ncclnb.show_numa(x)` | `%ncclnb numa` | NUMA nodes, their GPUs and NICs, ranks' CPU affinity |
# | `ncclnb.show_ranks(report)` | `%ncclnb ranks` | which rank runs on which GPU of which node |
# | `ncclnb.show_versions(report)` | `%ncclnb versions` | driver / CUDA / torch / NCCL per node |
# | `ncclnb.show_diagnosis(d)` | `%ncclnb doctor LOG`, `%%ncclnb_doctor` | the doctor's findings |
# | `ncclnb.dashboard(x, d)` | `%ncclnb dashboard` | all of the above, in tabs |

# %%
import ncclnb
%load_ext ncclnb

# %% [markdown]
# ## One machine
#
# A 2-socket server with four L40S on PCIe and two NICs. GPUs 0–1 and 2–3 share a socket; any pair across sockets is `SYS`. Type `2,3` in *GPUs in use* to see the set a job would use.

# %%
node = ncclnb.load("l40s-2socket")
ncclnb.show_topology(node)

# %% [markdown]
# NUMA placement: each NUMA node with its CPUs, GPUs and NICs; each rank sits under its GPU's node, green when its CPU affinity is on that node, red when it is not (dashed line to where its threads really run).

# %%
import dataclasses

# A healthy two-node H100 job, except that rank 3 (on GPU3, NUMA node 0) is pinned
# to the other socket, as a wrong `numactl --cpunodebind` would do.
h100 = ncclnb.load("two-node-h100")
wrong = dataclasses.replace(h100.ranks[3], cpu_affinity="52-103,156-207")
ncclnb.show_numa(dataclasses.replace(h100, ranks=h100.ranks[:3] + (wrong,) + h100.ranks[4:]))

# %% [markdown]
# ## A multi-node job
#
# Seed 000: two nodes of four A10G where the rank table is wrong. Anomalous nodes come first; hover or click a cell to see why it is coloured.

# %%
report = ncclnb.load("seed000-2node-a10g")
ncclnb.show_ranks(report)

# %% [markdown]
# Seed 002: one node runs another NCCL and CUDA than the others; the cells that differ from the majority are red.

# %%
ncclnb.show_versions(ncclnb.load("seed002-version-mismatch"))

# %% [markdown]
# ## Diagnosis
#
# The doctor reads log lines from any number of ranks and ranks the causes.

# %%
log = """\
[rank7]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, invalid usage
[rank7]: ncclInvalidUsage: Invalid rank requested : 7/4
NCCL WARN NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.
torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. 4/8 clients joined.
"""
diagnosis = ncclnb.diagnose(log)
ncclnb.show_diagnosis(diagnosis)

# %% [markdown]
# ## Everything at once

# %%
ncclnb.dashboard(report, diagnosis)

# %% [markdown]
# ## Magics
#
# `%ncclnb` remembers the last machine loaded; `%%ncclnb_doctor` diagnoses the text pasted in the cell.

# %%
%ncclnb load hgx-h100
%ncclnb topo

# %%
%%ncclnb_doctor
[rank3]:[W304 17:41:12.735149131 ProcessGroupNCCL.cpp:4561] [PG ID 0 PG GUID 0 Rank 3] using GPU 3 to perform barrier as devices used by this process are currently unknown. This can potentially cause a hang if this rank to GPU mapping is incorrect.
[rank3]: host <img src=x onerror="window.__pwned=3"> says: NCCL WARN <script>window.__pwned=4</script>

# %% [markdown]
# ## Hostile text stays text
#
# A hostname or log line is shown escaped: the markup below appears as characters and never runs.

# %%
evil = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
hostile = dataclasses.replace(node, host=dataclasses.replace(node.host, hostname=evil))
ncclnb.show_topology(hostile)
