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
