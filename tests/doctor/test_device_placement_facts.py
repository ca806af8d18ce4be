"""Which ranks fail, and who holds the GPU that ran out, tell a rank put on the wrong GPU
(device_mapping) from more processes than GPUs or a model too large for its GPU."""

from ncclnb.doctor import diagnose


def _ordinal(ranks) -> str:
    return "".join(f"[rank{r}]: RuntimeError: CUDA error: invalid device ordinal\n" for r in ranks)


def test_an_invalid_ordinal_on_rank_0_is_a_device_index_that_is_not_local_rank():
    top = diagnose(_ordinal(range(4))).findings[0]
    assert (top.rule, top.category) == ("invalid_device_ordinal", "device_mapping")


def test_an_invalid_ordinal_on_the_highest_ranks_only_is_more_processes_than_gpus():
    top = diagnose(_ordinal(range(4, 8))).findings[0]
    assert (top.rule, top.category) == ("invalid_device_ordinal", "rank_world_size_mismatch")


OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.95 GiB. GPU 0 has a total capacity of 23.65 GiB "
    "of which 1.02 GiB is free. {procs}Of the allocated memory 6.80 GiB is allocated by PyTorch, and 112.08 MiB is "
    "reserved by PyTorch but unallocated.\n"
)


def test_an_oom_on_a_gpu_several_processes_hold_is_ranks_on_one_gpu():
    many = "".join(f"Process {pid} has 5.02 GiB memory in use. " for pid in (55120, 55121, 55122))
    top = diagnose(OOM.format(procs=many)).findings[0]
    assert (top.rule, top.category) == ("cuda_oom", "device_mapping")
    one = "Process 55120 has 21.30 GiB memory in use. "
    assert diagnose(OOM.format(procs=one)).findings[0].category == "oom_or_resource"


DUPLICATE = (
    "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, invalid usage, NCCL version 2.14.3\n"
    "node01:3414:3414 [0] init.cc:573 NCCL WARN Duplicate GPU detected : rank 2 and rank 0 both on CUDA device 1000\n"
)


def _launched(visible: str, nproc: int, failure: str) -> str:
    return f"export CUDA_VISIBLE_DEVICES={visible}\ntorchrun --nproc_per_node {nproc} train.py\n{failure}"


def test_more_processes_than_the_visible_gpus_is_a_world_size_mistake():
    for failure in (DUPLICATE, _ordinal([3])):
        top = diagnose(_launched("0,1", 4, failure)).findings[0]
        assert top.category == "rank_world_size_mismatch", failure


def test_no_more_processes_than_the_visible_gpus_is_a_device_mapping_mistake():
    for failure in (DUPLICATE, _ordinal([3])):
        top = diagnose(_launched("2,3,6,7", 4, failure)).findings[0]
        assert top.category == "device_mapping", failure


def test_a_device_picked_by_a_physical_id_from_cuda_visible_devices_is_device_mapping():
    code = '    gpu = int(os.environ["CUDA_VISIBLE_DEVICES"].split(",")[local_rank])\n    torch.cuda.set_device(gpu)\n'
    assert diagnose(code + _ordinal([3])).findings[0].category == "device_mapping"
    counted = '    n_gpus = len(os.environ["CUDA_VISIBLE_DEVICES"].split(","))\n'  # counting the ids maps nothing
    assert diagnose(counted + _ordinal([3])).findings[0].category == "rank_world_size_mismatch"


def test_a_device_picked_by_the_global_rank_is_device_mapping_only_across_nodes():
    code = "    torch.cuda.set_device(args.rank)\n"
    one_node = diagnose(code + _ordinal([3])).findings[0]
    assert one_node.category == "rank_world_size_mismatch"  # the global rank is the local rank on one node
    two_nodes = diagnose("torchrun --nnodes 2 --nproc_per_node 4 train.py\n" + code + _ordinal([5])).findings[0]
    assert two_nodes.category == "device_mapping"


def test_out_of_memory_in_an_object_collective_is_every_rank_on_the_current_device():
    oom = (
        '[rank2]:   File "/usr/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", '
        "line 2444, in all_gather_object\n"
        "[rank2]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, "
        "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n"
        "[rank2]: ncclUnhandledCudaError: Call to CUDA function failed.\n"
        "[rank2]: Last error:\n[rank2]: Cuda failure 'out of memory'\n"
    )
    top = diagnose(oom).findings[0]
    assert (top.rule, top.category) == ("cuda_oom_in_nccl", "device_mapping")
    plain = oom.replace("all_gather_object", "all_reduce")
    assert diagnose(plain).findings[0].category == "oom_or_resource"


def test_slurm_naming_the_failed_tasks_node_tells_a_second_node():
    code = "    torch.cuda.set_device(args.rank)\n"
    nodes = "v100-n12:44120:44120 [0] NCCL INFO Bootstrap : Using ib0:10.148.0.12<0>\n"
    failed = "srun: error: v100-n13: tasks 4-7: Exited with exit code 1\n"
    assert diagnose(nodes + code + _ordinal([5])).findings[0].category == "rank_world_size_mismatch"
    assert diagnose(nodes + code + _ordinal([5]) + failed).findings[0].category == "device_mapping"


SMI_PROCESSES = """\
+-----------------------------------------------------------------------------+
| Processes:                                                                  |
|  GPU   GI   CI        PID   Type   Process name                  GPU Memory |
|=============================================================================|
{rows}+-----------------------------------------------------------------------------+
"""


def _smi(gpus) -> str:
    rows = "".join(
        f"|  {g:>3}   N/A  N/A     {15220 + i}      C   ...envs/cv/bin/python            2771MiB |\n" for i, g in enumerate(gpus)
    )
    return SMI_PROCESSES.format(rows=rows)


def test_every_process_on_one_gpu_in_nvidia_smi_is_a_device_mapping_mistake():
    assert diagnose(_smi([0, 0, 0, 0]) + DUPLICATE).findings[0].category == "device_mapping"
    # two processes on each of two GPUs: as many as the counts would put there, nothing settled
    assert diagnose(_smi([0, 0, 1, 1]) + DUPLICATE).findings[0].category == "rank_world_size_mismatch"


def test_three_ranks_nccl_finds_on_one_gpu_is_a_device_mapping_mistake():
    pairs = "".join(
        f"dgx:700{r}:7088 [0] init.cc:869 NCCL WARN Duplicate GPU detected : rank {r} and rank 0 both on CUDA device 7000\n"
        for r in (1, 3)
    )
    assert diagnose(pairs).findings[0].category == "device_mapping"
    two_devices = pairs.replace("rank 3 and rank 0 both on CUDA device 7000", "rank 3 and rank 2 both on CUDA device 41000")
    assert diagnose(two_devices).findings[0].category == "rank_world_size_mismatch"

    # three on one GPU where the counts put four there (four tasks, a node Slurm gives one GPU): the counts did it
    one_gpu = "srun -N1 --ntasks-per-node=4 --gres=gpu:1 python train_ddp.py\n" + pairs
    assert diagnose(one_gpu).findings[0].category == "rank_world_size_mismatch"
    # but three on one GPU where the counts put two there is still a pile
    two_gpus = one_gpu.replace("--gres=gpu:1", "--gres=gpu:2")
    assert diagnose(two_gpus).findings[0].category == "device_mapping"


def test_the_gpus_a_script_counts_and_the_nodes_slurm_starts_settle_it_too():
    counted = "".join("torch.cuda.device_count() = 4\n" for _ in range(4))
    assert diagnose("torchrun --nproc_per_node=4 finetune.py\n" + counted + DUPLICATE).findings[0].category == "device_mapping"
    code = "    torch.cuda.set_device(rank)\n"
    two_nodes = "srun -N 2 --ntasks-per-node=8 --gpus-per-node=8 python train.py\n"
    assert diagnose(two_nodes + code + _ordinal([8])).findings[0].category == "device_mapping"
    # DeepSpeed's launcher echoes the list it derived itself: not GPUs that exist
    echo = (
        "[INFO] [launch.py:151:main] nnodes=1, num_local_procs=8, node_rank=0\n"
        "[INFO] [launch.py:165:main] Setting CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7\n"
    )
    assert diagnose(echo + _ordinal([5])).findings[0].category == "rank_world_size_mismatch"


def test_a_wrapper_the_rank_printed_first_gives_way_to_the_error_under_it():
    # rank 7 failed first; its DistBackendError's "Last error:" line says why, and that is the cause of the others' wait
    log = (
        "[rank7]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691, "
        "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.6\n"
        "[rank7]: Last error:\n"
        "[rank7]: socketStartConnect: Connect to 10.0.3.7<52811> failed : Connection refused\n"
    ) + "".join(
        f"[rank{r}]:[E ProcessGroupNCCL.cpp:523] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
        "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600414 milliseconds before timing out.\n"
        for r in (3, 12)
    )
    top = diagnose(log).findings[0]
    assert (top.rule, top.ranks) == ("socket_connect_failed", (7,))


def test_processes_each_shown_their_own_single_gpu_cannot_be_too_many():
    # Slurm's --gpus-per-task, Ray: every process sees one GPU (CUDA_VISIBLE_DEVICES=its own id); an index past 0
    # is the code's, whatever the launcher's count per node
    views = "".join(f"rank {r} local_rank {r} CUDA_VISIBLE_DEVICES={r}\n" for r in range(4))
    launched = "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-task=1\n"
    top = diagnose(launched + views + _ordinal([1, 2, 3])).findings[0]
    assert (top.rule, top.category) == ("invalid_device_ordinal", "device_mapping")
    # a paste that shows only some of the processes' views (3 of 4) says the same
    three = "".join(f"rank {r} local_rank {r} CUDA_VISIBLE_DEVICES={r}\n" for r in (0, 1, 3))
    assert diagnose(launched + three + _ordinal([1, 3])).findings[0].category == "device_mapping"
    # one view alone says nothing about the others
    one = diagnose("#SBATCH --ntasks-per-node=4\nCUDA_VISIBLE_DEVICES=0\n" + _ordinal([1, 2, 3])).findings[0]
    assert one.category == "rank_world_size_mismatch"


def test_the_gpus_slurm_gives_a_node_count_against_its_tasks():
    for gpus, expected in (("--gres=gpu:4", "device_mapping"), ("--gres=gpu:a100:2", "rank_world_size_mismatch")):
        log = f"#SBATCH -N 2 --ntasks-per-node=4 {gpus}\n{DUPLICATE}"
        assert diagnose(log).findings[0].category == expected, gpus
    assert diagnose(f"srun --gpus-per-node=8 --ntasks-per-node=8 python train.py\n{DUPLICATE}").findings[0].category == (
        "device_mapping"
    )


BARRIER_GUESS = (
    "[rank4]:[W1014 02:25:07.091 ProcessGroupNCCL.cpp:3865] [PG 0 Rank 4]  using GPU 4 to perform barrier as devices "
    "used by this process are currently unknown. This can potentially cause a hang if this rank to GPU mapping is incorrect.\n"
)


def _timeout(seq: int) -> str:
    return (
        "[rank4]:[E1014 02:55:07.272 ProcessGroupNCCL.cpp:607] [Rank 4] Watchdog caught collective operation timeout: "
        f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800080 "
        "milliseconds before timing out.\n"
    )


def test_a_barrier_on_a_guessed_gpu_explains_a_hang_of_the_first_collectives():
    top = diagnose(BARRIER_GUESS + _timeout(2)).findings[0]
    assert (top.rule, top.category) == ("barrier_device_unknown", "device_mapping")
    # thousands of collectives later the guess had been right: the timeout is about something else
    assert diagnose(BARRIER_GUESS + _timeout(5000)).findings[0].rule != "barrier_device_unknown"


def test_the_gpus_a_paste_says_its_machine_has_count_when_nothing_else_does():
    two = "2x RTX 3090, torch 2.4.1, python -m torch.distributed.run --nproc_per_node 2 ddp.py\n"
    assert diagnose(two + DUPLICATE).findings[0].category == "device_mapping"
    assert diagnose(two.replace("--nproc_per_node 2", "--nproc_per_node 4") + DUPLICATE).findings[0].category == (
        "rank_world_size_mismatch"
    )
    # two different statements (two machines, or a typo): neither is taken
    both = "node a: 2x RTX 3090; node b: 4x RTX 3090\npython -m torch.distributed.run --nproc_per_node 2 ddp.py\n"
    assert diagnose(both + DUPLICATE).findings[0].category == "rank_world_size_mismatch"


def test_a_device_picked_out_of_a_list_of_gpu_ids_is_device_mapping():
    log = (
        "CUDA_VISIBLE_DEVICES=2,3,6,7\n"
        "    model = model.to(f\"cuda:{os.environ['GPU_IDS'].split(',')[local_rank]}\")\n"
        "RuntimeError: CUDA error: invalid device ordinal\n"
    )
    assert diagnose(log).findings[0].category == "device_mapping"
    # a device picked by the local rank itself is no such mistake
    plain = log.replace("os.environ['GPU_IDS'].split(',')[local_rank]", "local_rank")
    assert diagnose(plain).findings[0].category == "rank_world_size_mismatch"
