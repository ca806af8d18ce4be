# %% [markdown]
# # 05 · A hand-written all-to-all whose sends and receives do not pair
#
# Seed 004 (NCCL, 4 nodes × 8 GPUs = 32 ranks). A developer tests a custom all-to-all built from
# `isend`/`irecv`. The job dies in NCCL's proxy with *Resource temporarily unavailable* and a
# communicator abort; the write-up suspects exhausted sockets or file descriptors. The real cause is
# simpler: one rank posts a receive that nobody sends. The proxy errors are what the teardown looks like.
#
# Runs top to bottom in well under a minute on a laptop, no GPU.

# %%
import os
import ncclnb
import pandas as pd
%load_ext ncclnb

# %% [markdown]
# ## 1 · Symptom
#
# The write-up does not paste its log; it lists the errors in Chinese. Verbatim, with a translation:
#
# | the seed says | in English |
# |---|---|
# | 中间服务线程无法接受连接(Resource temporarily unavailable) | the proxy service thread could not accept a connection (Resource temporarily unavailable) |
# | 无法从本地rank接收类型信息 | could not receive the type (of a request) from a local rank |
# | 中间服务执行关闭操作失败 | the proxy service failed to execute a Close operation |
# | 最终通信组被中止(Abort COMPLETE) | in the end the communicator was aborted (Abort COMPLETE) |
# | 即使在简化的点对点(P2P)通信测试中,同样出现了连接被关闭的问题 | even a simplified point-to-point test showed connections being closed |
#
# In NCCL's own words (the knowledge base's fixture lines for this signature):
#
# ```
# node-a:4121:4188 [3] proxy.cc:1496 NCCL WARN [Service thread] Accept failed Resource temporarily unavailable
# node-a:4121:4188 [3] proxy.cc:1518 NCCL WARN [Service thread] Could not receive type from localRank 3, res=3, closed=1
# node-a:4121:4188 [3] proxy.cc:1540 NCCL WARN [Proxy Service 3] Failed to execute operation Close from rank 3, retcode 3
# ```
#
# The fixes the write-up lists (set the device, check that ranks pair their operations, check the
# environment, add error handling) include the right one, second in the list, without saying which
# it was. The cost: a 32-GPU allocation spent debugging "resources".

# %% [markdown]
# ## 2 · What NCCL is doing at that moment
#
# - **Pairing.** NCCL matches point-to-point operations by order: the k-th `send` from rank A to rank B
#   pairs with the k-th `recv` on B from A, and the counts must agree. Nothing checks this up front. A
#   `recv` with no `send` simply never completes; torch's watchdog sees that work item outlive the
#   group's timeout (600 s by default) and aborts the communicator.
# - **Connections.** The first send/recv between two ranks sets up a channel between them (NVLink/PCIe
#   P2P, shared memory or the network). Each process runs a **proxy thread** for this: local ranks
#   send it requests (setup, connect, close) over a socket, and it drives network transfers.
# - **The proxy lines.** The proxy's listening socket is non-blocking. `accept()` on a non-blocking
#   socket with no connection pending returns `EAGAIN`, whose text is *Resource temporarily
#   unavailable*: it means "nothing to accept right now", not "out of file descriptors" (that is
#   `EMFILE`, *Too many open files*). When the communicator is aborted after the hang, local ranks close
#   their sockets to the proxy mid-conversation, so the proxy reads nothing (*Could not receive type
#   ... closed=1*) and cannot run the `Close` (*Failed to execute operation Close*). They are the
#   consequence of the abort, printed after the real failure, and they are the loudest lines in the log.
#
# The reproduction routes tokens the way a mixture-of-experts layer does; `counts[src][dst]` is how many
# tokens rank *src* sends to rank *dst*, and rank 1 routes nothing to rank 2. The broken exchange skips
# a send when the count is 0 but posts a receive from every peer. What each pair posts, computed from
# the program's own routing:

# %%
from ncclnb.repro.workers.alltoall_by_hand import routed_counts

counts = routed_counts(4)

def posted(src, dst):
    if src == dst:
        return ""
    send = counts[src][dst] > 0            # the broken program sends only when it has tokens ...
    return f"{counts[src][dst]} tokens: send + recv" if send else "recv without send"   # ... but always receives

table = pd.DataFrame([[posted(s, d) for d in range(4)] for s in range(4)],
                     index=[f"rank {s} sends" for s in range(4)], columns=[f"to rank {d}" for d in range(4)])
table.style.map(lambda v: "background:#f8d7da;font-weight:bold" if v == "recv without send" else "")

# %% [markdown]
# Rank 2 waits in `irecv(src=1).wait()`; ranks 0, 1, 3 finish their exchanges and enter the next
# collective (an `all_reduce`), where they wait for rank 2. Everybody waits until the timeout.

# %% [markdown]
# ## 3 · Reproduce
#
# Four gloo ranks on 127.0.0.1 running the broken exchange, the timeout cut to 5 s.

# %%
broken = %ncclnb repro alltoall_unpaired

# %% [markdown]
# Each rank's last line, and the plan it printed before posting anything:

# %%
for r in range(4):
    lines = open(os.path.join(broken.run_dir, f"rank{r}.log")).read().strip().splitlines()
    print(f"rank {r}:", lines[-1][:150])
    for line in lines:
        if "p2p plan" in line:
            print("        ", line[:150])

# %% [markdown]
# The timeouts themselves say only `recv` or `send`, never the peer, and every rank has one. On NCCL,
# rank 2's watchdog line would read `OpType=RECV` while the others say `OpType=ALLREDUCE`, and the
# flight-recorder dumps hold every send and receive with its peer. gloo's recorder does not record
# isend/irecv, so the program prints its plan first (one line per rank, from
# `ncclnb.guard.p2p.log_p2p_plan(sends, recvs)`): that is what the doctor and the pairing view pair
# here. (The run's last note quotes what the seed's NCCL job printed instead: the proxy's
# `Accept failed Resource temporarily unavailable`, a consequence of the abort, not the cause. With
# `NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL`, NCCL also logs each Send/Recv it enqueues, with its peer.)

# %% [markdown]
# ## 4 · Diagnose
#
# The doctor paired the plans the ranks printed (and read the dumps: ranks 0, 1, 3 reached the
# `all_reduce` after the exchange, rank 2 never did). Its top finding names the pair, sender and
# receiver:

# %%
top = broken.diagnosis.top
print(f"{top.category}  blames rank{'s' if len(top.ranks) != 1 else ''} {', '.join(map(str, top.ranks))}  (confidence {top.confidence})")
print(top.title)
for ev in top.evidence:
    print("  ", os.path.basename(ev.source), "|", ev.text)

# %% [markdown]
# The send/recv pairing matrix of the run: who posted what to whom, unmatched pairs marked.

# %%
ncclnb.show_pairing(broken)

# %% [markdown]
# ## 5 · Fix
#
# Every `isend` needs exactly one `irecv` on its peer with the same count, and vice versa. Two ways:
#
# ```python
# # (a) exchange the counts first, then post only the pairs both sides know about, in one batch
# theirs = torch.empty_like(mine)                      # mine[p] = tokens I send to p
# dist.all_to_all_single(theirs, mine)                 # theirs[p] = tokens p sends me
# ops = [dist.P2POp(dist.isend, send[p], p) for p in peers if mine[p]] + \
#       [dist.P2POp(dist.irecv, recv[p], p) for p in peers if theirs[p]]
# for req in dist.batch_isend_irecv(ops):
#     req.wait()
#
# # (b) let the library pair them: one collective with split sizes
# dist.all_to_all_single(out, inp, output_split_sizes=theirs.tolist(), input_split_sizes=mine.tolist())
# ```
#
# The cost: one extra all-to-all of `world_size` int64 counts per exchange (a few hundred bytes; one
# small-message latency). A real MoE layer needs those counts anyway to size its receive buffers.
# `batch_isend_irecv` also groups the operations into one NCCL group call, so the order in which
# ranks post them cannot deadlock. And set the device before the first collective
# (`torch.cuda.set_device(local_rank)`), the other half of the seed's advice.

# %% [markdown]
# ## 6 · Verify
#
# The fixed program (counts first, then `batch_isend_irecv`), for real:

# %%
fixed = ncclnb.reproduce("alltoall_unpaired", fixed=True)
print(f"completed: {fixed.completed} in {fixed.seconds:.1f} s; exit codes {fixed.exit_codes}")
for r in range(4):
    print(open(os.path.join(fixed.run_dir, f"rank{r}.log")).read().strip().splitlines()[-2])

# %% [markdown]
# **Prevention.** `check_p2p_plan` compares every rank's plan of sends and receives (two small
# all_gathers of JSON bytes) before anything is posted, and raises on every rank naming each
# unpaired operation. One call before the exchange:
#
# ```python
# from ncclnb.guard import check_p2p_plan
# check_p2p_plan(sends={p: t.shape for p, t in outgoing.items()}, recvs={p: (n, hidden) for p, n in expected.items()})
# ```
#
# The guarded variant is the broken program with that call added:

# %%
guarded = %ncclnb repro alltoall_unpaired --guarded

# %% [markdown]
# Stopped before anything was posted, naming the pair (1 → 2) and the shape, instead of a 10-minute
# hang followed by proxy noise.

# %% [markdown]
# ## 7 · Recognise its cousins
#
# The knowledge base's signatures of the same category (`p2p_pairing`), with a line each from their
# fixtures. The proxy one is there because it is how this failure usually *looks*; the doctor ranks it as
# a consequence, below a line that says who waited for what.

# %%
from ncclnb.doctor import signature_examples

pd.DataFrame(signature_examples("p2p_pairing")).style.hide(axis="index").set_properties(
    subset=["example line"], **{"font-family": "monospace", "font-size": "11px", "text-align": "left"})

# %% [markdown]
# ### Exercise
#
# A 4-rank NCCL job you have not seen, the lines that matter:
#
# ```
# [rank0]:[E ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=412, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600050 milliseconds before timing out.
# [rank1]:[E ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=412, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600049 milliseconds before timing out.
# [rank3]:[E ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=412, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600051 milliseconds before timing out.
# [rank2]:[E ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=411, OpType=RECV, NumelIn=65536, NumelOut=65536, Timeout(ms)=600000) ran for 600112 milliseconds before timing out.
# moe-1:7712:7790 [2] proxy.cc:1496 NCCL WARN [Service thread] Accept failed Resource temporarily unavailable
# moe-1:7712:7712 [2] NCCL INFO comm 0x5581c0a3e2f0 rank 2 nranks 4 cudaDev 2 busId b3000 - Abort COMPLETE
# ```
#
# Which is it?
#
# 1. Host `moe-1` ran out of file descriptors or sockets (*Resource temporarily unavailable*).
# 2. Rank 2 posted a receive that no rank sends, and the others moved on to the next collective.
# 3. Rank 2 is slow, and the others timed out waiting for it in the all_reduce.
#
# <details><summary><b>Answer</b> (click)</summary>
#
# **2.** Rank 2's watchdog line says `OpType=RECV`: it is stuck in a point-to-point receive, while
# ranks 0, 1, 3 have finished the exchange and are in the `ALLREDUCE` after it. A slow rank (3) would be
# in the *same* op as the others, late. The `Accept failed Resource temporarily unavailable` line is
# `EAGAIN` from a non-blocking `accept()` during the abort (1 would read *Too many open files*). Find
# which peer should have sent to rank 2 and why it skipped the send: a zero count, a rank-dependent
# branch.
#
# </details>
#
# The doctor on the same text. Note how it reads it: it names rank 2 as the rank that diverged
# (`collective_desync`, from the differing ops) and puts the pairing finding from the proxy lines
# next; the `OpType=RECV` on the diverging rank is what tells you it is a pairing problem.

# %%
%%ncclnb_doctor
[rank0]:[E ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=412, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600050 milliseconds before timing out.
[rank1]:[E ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=412, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600049 milliseconds before timing out.
[rank3]:[E ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=412, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600051 milliseconds before timing out.
[rank2]:[E ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=411, OpType=RECV, NumelIn=65536, NumelOut=65536, Timeout(ms)=600000) ran for 600112 milliseconds before timing out.
moe-1:7712:7790 [2] proxy.cc:1496 NCCL WARN [Service thread] Accept failed Resource temporarily unavailable
moe-1:7712:7712 [2] NCCL INFO comm 0x5581c0a3e2f0 rank 2 nranks 4 cudaDev 2 busId b3000 - Abort COMPLETE

# %% [markdown]
# Next: `07_your_own_logs.ipynb`, the same doctor and views pointed at your job's logs.
