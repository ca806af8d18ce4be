"""Wording families and log context the doctor reads beyond one line's signature: the NCCL >= 2.19 plugin
fallback, SIGBUS from a full /dev/shm, tuning variables the environment set and a WARN then names, the
source file that printed a WARN deciding between two signatures of its line, "No device found" where IB
was wanted, a log with no error (set-up, progress, a stop) and stack dumps (py-spy, faulthandler)
saying where each rank waits. Logs are written as the tools print them, with the lines around them."""

from __future__ import annotations

import pytest

from ncclnb.doctor import diagnose
from ncclnb.doctor.match import Matcher, SourceContext
from ncclnb.doctor.priors import LogContext
from ncclnb.doctor.rank_table import RankRows
from ncclnb.doctor.kb import load_signatures


def _rules(diag) -> list:
    return [(f.category, f.rule) for f in diag.findings]


def _first(log: str):
    findings = diagnose(log).findings
    assert findings, log
    return findings[0]


def _facts(log: str) -> set:
    ctx = LogContext()
    for line in log.splitlines():
        ctx.observe(line)
    return ctx.facts()


# ---- NCCL >= 2.19 plugin wording; a healthy run is not a hang ---------------------------------------------
HEALTHY_219 = """\
gpu-a:3921:3921 [0] NCCL INFO Bootstrap : Using ens1:10.1.0.11<0>
gpu-a:3921:3921 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.
gpu-a:3921:3921 [0] NCCL INFO TUNER/Plugin: Could not find: libnccl-tuner.so libnccl-net.so. Using internal tuner plugin.
NCCL version 2.19.3+cuda12.3
gpu-a:3921:4009 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB ens1:10.1.0.11<0>
gpu-a:3921:4009 [0] NCCL INFO Using network IB
gpu-a:3921:4009 [0] NCCL INFO Setting affinity for GPU 0 to ffff,ffffffff
gpu-a:3921:4009 [0] NCCL INFO Connected all rings
gpu-a:3921:4009 [0] NCCL INFO comm 0x9c80a90 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 7000 commId 0x2a4b - Init COMPLETE
"""
PROGRESS = (
    "{'loss': 2.3311, 'learning_rate': 4.9e-05, 'epoch': 0.02}\n{'loss': 2.0413, 'learning_rate': 4.8e-05, 'epoch': 0.04}\n"
)


def test_the_219_plugin_fallback_is_the_benign_plugin_reading_and_progress_rules_out_a_hang():
    diag = diagnose(HEALTHY_219 + PROGRESS)
    assert _rules(diag)[0] == ("net_plugin_missing", "net_plugin_not_found")
    assert not [f for f in diag.findings if f.rule.startswith("candidate.hang")]


def test_a_stop_after_set_up_still_raises_the_hang_candidates_even_after_progress():
    diag = diagnose(HEALTHY_219 + PROGRESS + "^C\nKeyboardInterrupt\n")
    assert any(f.rule.startswith("candidate.hang") for f in diag.findings)
    # Init COMPLETE / Connected all rings are set-up done: without progress a stopped log is a hang candidate too
    no_affinity = "".join(line + "\n" for line in HEALTHY_219.splitlines() if "Setting affinity" not in line)
    assert any(f.rule.startswith("candidate.hang") for f in diagnose(no_affinity).findings)


def test_a_hang_someone_reports_with_no_log_lines_raises_the_hang_candidates():
    report = "2x RTX 4090, driver 535.54.03. DDP hangs forever at the first backward, GPU util 100% on both.\n"
    assert _rules(diagnose(report))[0] == ("p2p_topology", "candidate.hang.p2p_topology")
    assert not diagnose("2x RTX 4090, driver 535.54.03, DDP runs fine.\n").findings


def test_progress_stop_and_set_up_facts():
    assert {"completed", "init_seen"} <= _facts(HEALTHY_219 + "[rank0]: step 10 | loss 9.8712 | tokens/s 412034\n")
    assert "completed" in _facts("  5%|▌         | 512/10000 [03:11<58:49,  2.69it/s, loss=2.31]\n")
    assert "completed" not in _facts("Epoch 1:   0%|          | 0/2500 [00:00<?, ?it/s]\n")  # no step done yet
    assert "completed" not in _facts(HEALTHY_219 + PROGRESS + "the job hangs after the first eval\n")
    # DeepSpeed's step lines
    deepspeed = (
        "[2024-03-11 08:03:11,004] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=0, lr=[2.9999e-05]\n"
        "[2024-03-11 08:03:11,005] [INFO] [timer.py:260:stop] epoch=0/micro_step=10/global_step=10, "
        "RunningAvgSamplesPerSec=211.6, CurrSamplesPerSec=213.9\n"
    )
    assert "completed" in _facts(HEALTHY_219 + deepspeed)
    # a warning that the process could hang is not a report that it did (Accelerate's kernel version warning)
    may_hang = (
        "Detected kernel version 5.4.0, which is below the recommended minimum of 5.5.0; this can cause the process to "
        "hang. It is recommended to upgrade the kernel to the minimum version or higher.\n"
    )
    assert "completed" in _facts(may_hang + HEALTHY_219 + PROGRESS)
    assert "completed" not in _facts(HEALTHY_219 + PROGRESS + "and then it hangs\n")


# ---- SIGBUS from a full /dev/shm -----------------------------------------------------------------------------
SIGBUS = """\
Filesystem      Size  Used Avail Use% Mounted on
shm              64M     0   64M   0% /dev/shm
Epoch 1:   0%|          | 0/2500 [00:00<?, ?it/s]
Fatal Python error: Bus error

Thread 0x00007f2a4d7fe700 (most recent call first):
  File "/usr/lib/python3.10/threading.py", line 320 in wait
[2024-05-19 06:41:18,008] torch.distributed.elastic.multiprocessing.api: [ERROR] \
failed (exitcode: -7) local_rank: 3 (pid: 231) of binary: /usr/bin/python
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-05-19_06:41:18
  host      : trainer-0
  rank      : 3 (local_rank: 3)
  exitcode  : -7 (pid: 231)
  error_file: <N/A>
  traceback : Signal 7 (SIGBUS) received by PID 231
============================================================
"""


def test_sigbus_points_to_shm_above_torchruns_summary():
    diag = diagnose(SIGBUS)
    rules = [f.rule for f in diag.findings]
    assert diag.findings[0].category == "shm_too_small" and rules[0] == "process_bus_error"
    assert "dev_shm_small" in rules  # the df line, promoted beside an error
    assert "torchrun_child_failed" not in rules[:2]


def test_sigkill_is_still_the_oom_killer_not_shm():
    killed = SIGBUS.replace("-7", "-9").replace("Signal 7 (SIGBUS)", "Signal 9 (SIGKILL)").replace("Bus error", "Killed")
    assert _first(killed).rule == "process_killed"


# ---- NCCL tuning variables the environment set --------------------------------------------------------------
ALGO_PROTO = """\
gpu-p2-011:551:551 [0] NCCL INFO NCCL_ALGO set by environment to Tree
gpu-p2-011:551:551 [0] NCCL INFO NCCL_PROTO set by environment to LL128
gpu-p2-011:551:551 [0] enqueue.cc:1556 NCCL WARN Error : no algorithm/protocol available for function AllGather \
with datatype ncclInt8. \
NCCL_ALGO was set to Tree. NCCL_PROTO was set to LL128.
gpu-p2-011:551:551 [0] NCCL INFO enqueue.cc:1641 -> 3
[rank0]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3699, \
internal error - please report this issue to the NCCL developers, NCCL version 2.21.5
"""


def test_no_algorithm_protocol_available_is_the_environments_override():
    assert (_first(ALGO_PROTO).category, _first(ALGO_PROTO).rule) == ("nccl_env_override", "nccl_algo_proto_unavailable")


# a WARN no signature knows, from a file that leans elsewhere (enqueue.cc: version mismatch), naming a variable
TUNING_WARN = "node-a:4121:4188 [3] enqueue.cc:1204 NCCL WARN Invalid NCCL_MAX_NCHANNELS 1 for AllReduce with NVLS, need 16\n"


@pytest.mark.parametrize(
    "env",
    [
        "node-a:4121:4121 [3] NCCL INFO NCCL_MAX_NCHANNELS set by environment to 1.\n",
        "$ cat /etc/profile.d/nccl-tuning.sh\nexport NCCL_MAX_NCHANNELS=1\n",
    ],
)
def test_a_warn_naming_a_tuning_variable_the_run_set_is_the_override_wherever_it_was_set(env):
    for log in (env + TUNING_WARN, TUNING_WARN + env):  # the setting before the WARN, or pasted after it
        first = _first(log)
        assert (first.category, first.rule) == ("nccl_env_override", "nccl_warn.nccl_env_override"), log
        assert ("version_mismatch", "nccl_warn.nccl_env_override") in _rules(diagnose(log))  # the file's lean, kept


def test_a_warn_naming_a_variable_nobody_set_keeps_its_files_lean():
    assert _first(TUNING_WARN).category == "version_mismatch"
    # prose naming a variable is not a setting
    assert _first("NCCL_MAX_NCHANNELS=1 did not help either\n" + TUNING_WARN).category == "version_mismatch"


# ---- the source file that printed a WARN decides between two signatures of its line ------------------------
NVLS_OOM = """\
hgx-03:3328:3410 [0] NCCL INFO NVLS multicast support is available on dev 0
hgx-03:3328:3410 [0] transport/nvls.cc:152 NCCL WARN Cuda failure 'out of memory'
hgx-03:3328:3410 [0] NCCL INFO transport/nvls.cc:334 -> 1
torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691, \
unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3
ncclUnhandledCudaError: Call to CUDA function failed.
Last error:
Cuda failure 'out of memory'
"""


def test_a_warn_from_nvls_cc_is_an_nvls_failure_not_an_out_of_memory():
    # what failed is NVLS's set-up (one card, not an OOM card too); 'out of memory' says its memory did not fit
    diag = diagnose(NVLS_OOM)
    assert (diag.findings[0].category, diag.findings[0].rule) == ("oom_or_resource", "nvls_failure")
    assert "cuda_oom_in_nccl" not in [f.rule for f in diag.findings]


def test_an_nvls_failure_beside_the_fabric_named_is_the_fabric():
    log = "NCCL 2.19.3 on 8x H100; after the fabric manager was restarted on this node:\n" + NVLS_OOM
    assert (_first(log).category, _first(log).rule) == ("driver_or_hardware", "nvls_failure")
    # and one that CUDA refused for another reason is the fabric or driver, memory or not
    other = NVLS_OOM.replace("'out of memory'", "'invalid argument'")
    assert (_first(other).category, _first(other).rule) == ("driver_or_hardware", "nvls_failure")


def test_the_same_wording_from_another_file_is_still_an_out_of_memory():
    log = NVLS_OOM.replace("transport/nvls.cc:152", "transport/p2p.cc:210").replace("NVLS multicast", "P2P multicast")
    assert _first(log).rule == "cuda_oom_in_nccl"


# ---- "NET/IB : No device found" where IB was wanted --------------------------------------------------------
NO_IB = """\
node1:1880:1880 [0] NCCL INFO Bootstrap : Using enp75s0:10.0.0.1<0>
node1:1880:1880 [0] NCCL INFO NET/IB : No device found.
node1:1880:1880 [0] NCCL INFO NET/Socket : Using [0]enp75s0:10.0.0.1<0>
node1:1880:1880 [0] NCCL INFO Using network Socket
"""


@pytest.mark.parametrize(
    "wanted",
    [
        "node1:1880:1880 [0] NCCL INFO NCCL_IB_HCA set by environment to mlx5_0,mlx5_1\n",
        "node1:1880:1880 [0] NCCL INFO NCCL_IB_HCA set to mlx5_0,mlx5_1\n",
        "$ ibv_devices\n    device                 node GUID\n    mlx5_ib0            b8cef603005d1a20\n",
    ],
)
def test_no_ib_device_is_an_hca_selection_problem_where_ib_was_wanted(wanted):
    assert _first(wanted + NO_IB).category == "ib_misconfig"


def test_no_ib_device_is_harmless_where_nothing_says_ib():
    first = _first(NO_IB)
    assert (first.category, first.rule) == ("net_plugin_missing", "ib_no_device_found")


# ---- category conventions ----------------------------------------------------------------------------------
def test_a_driver_too_old_for_the_cuda_runtime_is_a_version_mismatch():
    log = (
        "node3:1501:1501 [0] misc/cudawrap.cc:36 NCCL WARN "
        "Cuda failure 'CUDA driver version is insufficient for CUDA runtime version'\n"
    )
    assert _first(log).category == "version_mismatch"
    assert "driver_or_hardware" in [f.category for f in diagnose(log).findings]


# ---- GPUs without peer access -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "answer",
    [
        ">>> torch.cuda.can_device_access_peer(0, 1)\nFalse\n",
        "print(torch.cuda.can_device_access_peer(0, 1)) -> False\n",
        "> Peer access from NVIDIA A100-PCIE-40GB (GPU0) -> NVIDIA A100-PCIE-40GB (GPU1) : No\n",
        "Device=0 CANNOT Access Peer Device=1\n",
    ],
)
def test_no_peer_access_is_a_fact_for_p2p_topology(answer):
    log = "ws:81211:81290 [0] NCCL INFO Connected all rings\n" + answer + "and then it just hangs\n"
    hang = [f for f in diagnose(log).findings if f.rule == "candidate.hang.p2p_topology"]
    assert hang and "p2p_denied" in hang[0].title + hang[0].cause  # the fact that moved it, named
    assert "p2p_denied" not in str(diagnose(log.replace(answer, "")).findings)


def test_a_true_answer_is_no_fact():
    assert "p2p_denied" not in _facts(">>> torch.cuda.can_device_access_peer(0, 1)\nTrue\n")


# ---- stack dumps: where each rank waits --------------------------------------------------------------------
def _waits(log: str) -> dict:
    m = Matcher(load_signatures(), RankRows())
    ctx = SourceContext(name="dump.txt", index=0, rank_hint=None)
    for no, line in enumerate(log.splitlines(), 1):
        m.line(ctx, no, line.encode())
    return {r: call for r, (call, _) in m.state.waits.items()}


PYSPY = """\
Process 31207: python pretrain_gpt.py --rank 1
Python v3.10.12 (/usr/bin/python3.10)

Thread 31207 (idle): "MainThread"
    synchronize (torch/cuda/__init__.py:792)
    _communicate (megatron/core/pipeline_parallel/p2p_communication.py:327)
    recv_backward (megatron/core/pipeline_parallel/p2p_communication.py:410)
    forward_backward_pipelining_without_interleaving (megatron/core/pipeline_parallel/schedules.py:1204)
Process 31206: python pretrain_gpt.py --rank 0
Python v3.10.12 (/usr/bin/python3.10)

Thread 31206 (active+gil): "MainThread"
    all_reduce (torch/distributed/distributed_c10d.py:2050)
    wrapper (torch/distributed/c10d_logger.py:75)
    reduce_loss (megatron/training/utils.py:210)
Process 31208: python pretrain_gpt.py --rank 2
Thread 31208 (idle): "MainThread"
    all_reduce (torch/distributed/distributed_c10d.py:2050)
    wrapper (torch/distributed/c10d_logger.py:75)
"""

FAULTHANDLER = """\
[rank1]:Thread 0x00007f5a2bfff700 (most recent call first):
[rank1]:  File "/usr/lib/python3.10/threading.py", line 324 in wait
[rank1]:
[rank1]:Current thread 0x00007f5b9b2a4740 (most recent call first):
[rank1]:  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/distributed_c10d.py", line 1947 in recv
[rank1]:  File "/workspace/train.py", line 88 in exchange
[rank0]:Current thread 0x00007f5b9b2a4740 (most recent call first):
[rank0]:  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/distributed_c10d.py", line 2050 in all_reduce
[rank0]:  File "/workspace/train.py", line 97 in step
"""


def test_py_spy_frames_say_where_each_rank_waits():
    assert _waits(PYSPY) == {1: "irecv", 0: "all_reduce", 2: "all_reduce"}
    assert _waits(PYSPY.replace("recv_backward", "send_forward")) == {1: "isend", 0: "all_reduce", 2: "all_reduce"}


def test_faulthandler_frames_say_where_each_rank_waits():
    assert _waits(FAULTHANDLER) == {1: "recv", 0: "all_reduce"}


def test_frames_outside_a_dump_say_nothing():
    # a traceback (outermost first, "line N, in fn") is read by the c10d frame rule on its error, not here
    log = '  File "/workspace/torch/distributed/distributed_c10d.py", line 1947 in recv\n    recv_backward (a/p2p.py:410)\n'
    assert _waits(log) == {}


def test_a_rank_in_a_send_recv_beside_ranks_in_a_collective_is_a_pairing_problem():
    first = _first(PYSPY)
    assert (first.category, first.rule) == ("p2p_pairing", "p2p_wait_beside_collective")
    assert first.ranks == (1,)


def test_the_wording_from_another_file_after_an_nvls_one_is_read_on_its_own():
    log = NVLS_OOM + "hgx-03:3328:3411 [1] transport/p2p.cc:210 NCCL WARN Cuda failure 'out of memory'\n"
    assert "cuda_oom_in_nccl" in [f.rule for f in diagnose(log).findings]


def test_a_repeated_last_error_line_of_one_process_is_counted_for_what_it_hit_first():
    # a process printing the same message again takes the echo path (Matcher._echo): the rule left out stays out
    log = NVLS_OOM + "Cuda failure 'out of memory'\n" * 3
    rules = [f.rule for f in diagnose(log).findings]
    assert rules[0] == "nvls_failure" and "cuda_oom_in_nccl" not in rules


def test_a_stop_is_named_among_what_the_log_shows():
    stopped = diagnose(HEALTHY_219 + "it hangs here, nothing after Init COMPLETE\n")
    hang = [f for f in stopped.findings if f.rule.startswith("candidate.hang")]
    assert hang and any("stopped" in f.cause for f in hang)


def test_ib_wanted_raises_the_ib_candidate_that_a_socket_fallback_lowers():
    from ncclnb.doctor.priors import rank_candidates

    def ib(facts):
        return next(score for c, score, _ in rank_candidates("system", facts) if c.category == "ib_misconfig")

    assert ib({"socket_only", "ib_wanted"}) > ib({"socket_only"})


# ---- a CUDA feature refused -------------------------------------------------------------------------------
NOT_SUPPORTED = """\
h100:661:772 [0] NCCL INFO NCCL version 2.18.1+cuda12.1
h100:661:772 [0] transport/p2p.cc:274 NCCL WARN Cuda failure 'operation not supported'
h100:661:772 [0] NCCL INFO transport/p2p.cc:327 -> 1
RuntimeError: NCCL Error 1: unhandled cuda error (run with NCCL_DEBUG=INFO for details)
"""


def test_operation_not_supported_in_p2p_is_a_peer_sharing_problem_unless_nccl_uses_cumem():
    first = _first(NOT_SUPPORTED)
    assert (first.category, first.rule) == ("p2p_topology", "cuda_operation_not_supported")
    assert "version_mismatch" in [f.category for f in diagnose(NOT_SUPPORTED).findings[:3]]
    cumem = "h100:661:661 [0] NCCL INFO NCCL_CUMEM_ENABLE set by environment to 1.\n"
    assert _first(cumem + NOT_SUPPORTED).category == "version_mismatch"
    # prose naming the API is not the API in use
    assert _first(NOT_SUPPORTED + "maybe the cuMem path is the issue?\n").category == "p2p_topology"


def test_operation_not_supported_from_nvls_cc_is_an_nvls_failure():
    first = _first(NOT_SUPPORTED.replace("transport/p2p.cc:274", "transport/nvls.cc:158"))
    assert first.rule == "nvls_failure"
    # torch's "Last error:" copy of it, beside a WARN that names the multicast call rather than a source line
    named = (
        "[rank0]: ncclUnhandledCudaError: Call to CUDA function failed.\n[rank0]: Last error:\n"
        "[rank0]: Cuda failure 'operation not supported'\n"
        "h100-7:991:1022 [0] NCCL WARN Cuda failure 'operation not supported' (transport/nvls.cc: cuMulticastCreate)\n"
    )
    assert _first(named).category == "driver_or_hardware"


def test_a_local_rank_on_the_command_line_is_not_the_rank():
    # py-spy's header shows the command line: --local-rank is the GPU index on the node, not the global rank
    log = PYSPY.replace("--rank 1", "--local-rank 0 --rank 5")
    assert _waits(log) == {5: "irecv", 0: "all_reduce", 2: "all_reduce"}
    assert _waits(PYSPY.replace("--rank 1", "--local-rank 1")) == {0: "all_reduce", 2: "all_reduce"}  # rank unknown


def test_a_missing_tuner_or_profiler_plugin_says_nothing_of_the_net_plugin():
    log = (
        "node-0:194:490 [0] NCCL INFO NET/Plugin: Loaded net plugin Libfabric (v10)\n"
        "node-0:194:490 [0] NCCL INFO PROFILER/Plugin: Could not find: libnccl-profiler.so.\n"
        "node-0:194:490 [0] NCCL INFO TUNER/Plugin: Could not find: libnccl-tuner.so libnccl-net.so. "
        "Using internal tuner plugin.\n"
    )
    rules = [f.rule for f in diagnose(log).findings]
    assert "tuner_plugin_not_found" in rules and "net_plugin_not_found" not in rules


def test_every_stuck_rank_receiving_is_a_p2p_cycle():
    both_receive = PYSPY.replace(
        "all_reduce (torch/distributed/distributed_c10d.py:2050)",
        "recv_forward (megatron/core/pipeline_parallel/p2p_communication.py:361)",
    )
    first = _first(both_receive)
    assert (first.category, first.rule) == ("p2p_pairing", "traceback_p2p_cycle")
    mixed = PYSPY.replace(
        "all_reduce (torch/distributed/distributed_c10d.py:2050)",
        "send_forward (megatron/core/pipeline_parallel/p2p_communication.py:380)",
    )
    assert "traceback_p2p_cycle" not in [f.rule for f in diagnose(mixed).findings]  # a send meets a receive


# ---- wordings from the later unseen sets (bench/recalled set 15 and 16): each by its mechanism ------------------
def test_torchs_env_rendezvous_refusing_a_rank_past_the_world_is_a_rank_world_size_mismatch():
    log = """\
  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/rendezvous.py", line 246, in _env_rendezvous_handler
    raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {world_size - 1}]")
ValueError: Invalid rank 12, rank should be in the interval [0, 7]
srun: error: node-b: tasks 8-15: Exited with exit code 1
"""
    first = _first(log)
    assert (first.category, first.rule, first.ranks) == ("rank_world_size_mismatch", "env_rank_out_of_range", (12,))


def test_a_store_reply_the_client_does_not_expect_is_a_torch_version_split():
    first = _first("Traceback (most recent call last):\n  ...\nRuntimeError: Stop_waiting response is expected\n")
    assert (first.category, first.rule) == ("version_mismatch", "tcpstore_protocol_mismatch")


@pytest.mark.parametrize(
    "shown",
    ["NCCL (2, 18, 1)", "nccl version: (2, 18, 1)", "torch.cuda.nccl.version() = (2, 18, 1)"],
)
def test_nccl_versions_torch_prints_as_tuples_are_compared_across_hosts(shown):
    _WD = (
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
        "Timeout(ms)=600000) ran for 600090 milliseconds before timing out."
    )
    log = f"""\
pool0-0: torch 2.3.1+cu121 | NCCL (2, 20, 5)
pool1-0: torch 2.1.2+cu121 | {shown}
pool1-1: torch 2.1.2+cu121 | {shown}
pool1-0: [Rank 9] {_WD}
pool0-0: [Rank 0] {_WD}
"""
    first = _first(log)
    assert (first.category, first.rule) == ("version_mismatch", "nccl_version_differs_across_hosts")
    assert first.hosts == ("pool0-0",) and "2.18.1" in first.title and "2.20.5" in first.title


def test_a_topology_file_naming_a_gpu_the_node_lacks_is_the_environment_override():
    log = """\
gke-a3-pool:88:88 [0] NCCL INFO NCCL_TOPO_FILE set by environment to /opt/topo/a3plus.xml
gke-a3-pool:88:140 [0] graph/topo.cc:712 NCCL WARN Topology: could not find GPU with busId 0000:04:00.0 in topology file
gke-a3-pool:88:140 [0] NCCL INFO init.cc:1234 -> 3
"""
    first = _first(log)
    assert (first.category, first.rule) == ("nccl_env_override", "topology_node_not_found")


def test_a_server_that_came_up_and_serves_did_not_hang():
    log = """\
fd2c9a1b7e30:835:835 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation
fd2c9a1b7e30:835:835 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC
fd2c9a1b7e30:835:835 [0] NCCL INFO comm 0x5627f0b0 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE
INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)
"""
    assert "completed" in _facts(log)
    assert [f.category for f in diagnose(log).findings] == ["net_plugin_missing"]
    served = log.replace(
        "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
        "INFO 05-21 Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 41.2 tokens/s",
    )
    assert "completed" in _facts(served)


def test_a_py_spy_command_line_heads_the_dump_it_printed():
    log = """\
py-spy dump --pid 40112   (pipeline stage 1, rank 1)
Thread 40112 (idle): "MainThread"
    synchronize (torch/cuda/streams.py:225)
    _communicate (megatron/core/pipeline_parallel/p2p_communication.py:322)
    recv_backward (megatron/core/pipeline_parallel/p2p_communication.py:436)
py-spy dump --pid 40113   (pipeline stage 2, rank 2)
Thread 40113 (idle): "MainThread"
    _communicate (megatron/core/pipeline_parallel/p2p_communication.py:322)
    recv_forward (megatron/core/pipeline_parallel/p2p_communication.py:393)
"""
    first = _first(log)
    assert (first.category, first.ranks) == ("p2p_pairing", (1, 2))


def test_an_ordinal_past_a_single_gpu_view_that_is_not_the_first_gpu_is_device_mapping():
    log = """\
    torch.cuda.set_device(self.local_rank)
RuntimeError: CUDA error: invalid device ordinal
(PolicyWorker pid=58112, ip=10.0.0.4) local_rank=2 CUDA_VISIBLE_DEVICES=2 torch.cuda.device_count()=1
"""
    assert _first(log).category == "device_mapping"
    # the same error under a launcher that starts more processes than the node has GPUs: too many ranks
    launched = log + "torchrun --nproc_per_node=4 train.py\nCUDA_VISIBLE_DEVICES=0,1\n"
    assert _first(launched).category == "rank_world_size_mismatch"


def test_a_rank_that_says_it_left_its_loop_is_what_the_others_wait_for():
    wd = (
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=71504, OpType=ALLREDUCE, NumelIn=2569, "
        "NumelOut=2569, Timeout(ms)=1800000) ran for 1800587 milliseconds before timing out."
    )
    log = f"""\
step 14300 | loss 1.8790 | val_loss 2.0162
[rank0] val_loss did not improve for 5 evals, early stopping.
[rank2]:[E ProcessGroupNCCL.cpp:563] [Rank 2] {wd}
[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] {wd}
[rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] {wd}
"""
    findings = diagnose(log).findings
    assert (findings[0].rule, findings[0].category) == ("watchdog_all_waiting", "collective_desync")
    assert "slow_rank_timeout" in [f.category for f in findings[1:3]]
    # without the rank's word, the same timeouts say only that everyone waited
    quiet = log.replace("[rank0] val_loss did not improve for 5 evals, early stopping.\n", "")
    assert diagnose(quiet).findings[0].category == "slow_rank_timeout"


def test_a_crash_inside_the_net_plugin_after_its_interface_fell_back_is_a_plugin_for_another_nccl():
    log = """\
[1,mpirank:0,algo-1]<stdout>:algo-1:120:120 [0] NCCL INFO NCCL version 2.21.5+cuda12.4
[1,mpirank:0,algo-1]<stdout>:algo-1:120:120 [0] NCCL INFO NET/Plugin: Failed to find ncclNetPlugin_v8 symbol.
[1,mpirank:0,algo-1]<stdout>:algo-1:120:120 [0] NCCL INFO NET/Plugin: Loaded net plugin AWS Libfabric (v6)
[1,mpirank:0,algo-1]<stderr>:[algo-1:120  :0:344] Caught signal 11 (Segmentation fault: address not mapped to object)
[1,mpirank:0,algo-1]<stderr>: 1 0x000000000001c8f1 nccl_net_ofi_regMr()  /tmp/aws-ofi-nccl/src/nccl_ofi_net.c:2203
"""
    first = _first(log)
    assert (first.rule, first.category, first.ranks) == ("net_plugin_crash", "version_mismatch", (0,))


def test_flight_recorder_entries_pasted_as_text_say_where_each_rank_waits():
    log = """\
rank 0:
  {'record_id': 4410, 'pg_id': 3, 'p2p_seq_id': 2205, 'profiling_name': 'nccl:recv 0<-4', 'state': 'started'}
rank 4:
  {'record_id': 4409, 'pg_id': 3, 'p2p_seq_id': 2205, 'profiling_name': 'nccl:recv 4<-0', 'state': 'started'}
"""
    first = _first(log)
    assert (first.category, first.ranks) == ("p2p_pairing", (0, 4))
    # entries that completed say nobody waits there
    assert not diagnose(log.replace("'started'", "'completed'")).findings


def _timeout(rank: int, seq: int, op: str) -> str:
    return (
        f"[rank{rank}]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank {rank}] Watchdog caught collective operation timeout: "
        f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800031 milliseconds "
        "before timing out.\n"
    )


def test_a_collective_in_a_branch_only_rank_0_takes_is_a_desync():
    code = """\
    def validation_step(self, batch, idx):
        if self.trainer.is_global_zero:
            self.log("val/loss_rank0", loss, sync_dist=True)
"""
    log = code + "Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/2\n" + _timeout(1, 5, "ALLREDUCE")
    assert "rank_guarded_collective" in _facts(code)
    assert _first(log).category == "collective_desync"
    # the collective outside any rank's branch says nothing of the kind
    assert "rank_guarded_collective" not in _facts('self.log("val/loss", loss, sync_dist=True)\nif rank == 0:\n    print(x)\n')


def test_a_timeout_in_an_all_to_all_is_split_tables_that_do_not_pair_first():
    first = _first("rank1 send_splits=[4, 4, 3, 5] recv_splits=[5, 4, 2, 5]\n" + _timeout(1, 77, "ALLTOALL_BASE"))
    assert (first.rule, first.category) == ("watchdog_timeout", "p2p_pairing")
    assert _first(_timeout(1, 77, "ALLREDUCE")).category != "p2p_pairing"


def test_wordings_from_sets_19_and_20():
    # torch's older env:// wording for a rank past the world
    diag = diagnose(
        "ValueError: Error initializing torch.distributed using env:// rendezvous: RANK (4) must be less than WORLD_SIZE (4)\n"
    )
    assert diag.findings[0].category == "rank_world_size_mismatch"
    assert "env_rank_out_of_range" in [f.rule for f in diag.findings]
    # a hang said in the reporter's language is a stop
    for said in (
        "allreduce \u5361\u6b7b\u4e0d\u52a8",
        "all_reduce \u304c\u30cf\u30f3\u30b0\u3059\u308b",
        "\ud559\uc2b5\uc774 \uba48\ucdb0\uc694",
    ):
        assert "stopped" in _facts(said), said
    # a collective on the same line as the rank-0 branch
    assert "rank_guarded_collective" in _facts("if is_main_process(): dist.all_reduce(loss_for_log)")
    # a device picked by the global rank from the environment, on a job of several nodes
    facts = _facts("torchrun --nnodes 2 --nproc_per_node 8\ndevice = torch.device(f\"cuda:{int(os.environ['RANK'])}\")")
    assert "device_not_local" in facts


def test_a_gdb_frame_inside_the_net_plugin_is_read_not_dropped_as_noise():
    log = """\
ip-10-1-5-77:41:41 [0] NCCL INFO NET/Plugin: Loaded net plugin AWS Libfabric (v4)
Fatal Python error: Segmentation fault
#0 0x00007f3b1e2a90c1 in nccl_net_ofi_regMr () from /opt/amazon/efa/lib/libnccl-net.so
#2 0x00007f3c9e0120aa in ncclProxyProgress () from /usr/local/lib/python3.10/dist-packages/nvidia/nccl/lib/libnccl.so.2
"""
    assert _first(log).rule == "net_plugin_crash"


def test_wordings_from_sets_21_and_22():
    # CUDA error 803 (and an NGC container's banner saying so): the driver and the CUDA do not go together
    first = _first(
        "RuntimeError: Unexpected error from cudaGetDeviceCount(). "
        "Error 803: system has unsupported display driver / cuda driver combination\n"
    )
    assert (first.rule, first.category) == ("driver_too_old", "version_mismatch")
    # Slurm's --gpus-per-task=1 gives each process its own single GPU: an ordinal past it is the script's mapping
    log = (
        "#SBATCH --nodes=2 --ntasks-per-node=4 --gpus-per-task=1\n"
        "    torch.cuda.set_device(local)\nRuntimeError: CUDA error: invalid device ordinal\n"
    )
    assert _first(log).category == "device_mapping"
    # split tables printed before a timeout that names no op: the all-to-all's sizes do not pair
    log = (
        "[rank2] input_splits=[230, 201, 601, 34] output_splits=[212, 177, 601, 34]\n"
        "[rank2]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 2] Timeout at NCCL work: 7, "
        "last enqueued NCCL work: 7, last completed NCCL work: 6.\n"
    )
    assert _first(log).category == "p2p_pairing"


def test_hosts_listing_different_hcas_are_named_and_hosts_alike_are_not():
    same = "".join(
        f"{h}:77:78 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.2.0.{i}<0>\n"
        for i, h in enumerate(("n1", "n2", "n3"))
    )
    assert "ib_devices_differ_across_hosts" not in [f.rule for f in diagnose(same).findings]
    odd = (
        same
        + "n4:77:78 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_bond_0:1/RoCE ; OOB eth0:10.2.0.9<0>\n"
    )
    found = [f for f in diagnose(odd).findings if f.rule == "ib_devices_differ_across_hosts"]
    assert len(found) == 1 and found[0].hosts == ("n4",) and found[0].category == "ib_misconfig"
    assert "mlx5_bond_0:1/RoCE" in found[0].cause


def test_wordings_from_sets_23_and_24():
    # NCCL out of memory for its own buffers while the run sizes them: the setting asks for the memory
    log = (
        "gpu12:61102:61267 [1] NCCL INFO NCCL_BUFFSIZE set by environment to 536870912.\n"
        "gpu12:61102:61267 [1] include/alloc.h:114 NCCL WARN Failed to CUDA calloc 536870912 bytes\n"
    )
    assert _first(log).category == "nccl_env_override"
    assert _first(log.splitlines()[1] + "\n").category == "oom_or_resource"
    # the proxy losing a rank while a thread could not be created: the resource ran out
    log = (
        "w3:481:1071 [6] proxy.cc:1524 NCCL WARN [Proxy Service 30] Failed to execute operation Init from rank 30, retcode 2\n"
        "w3:481:1062 [6] proxy.cc:1213 NCCL WARN Call to pthread_create failed : Resource temporarily unavailable\n"
    )
    assert _first(log).category == "oom_or_resource"
    # another wording of a rank past the world
    first = _first("ValueError: RANK=2048 is out of range; expected value in [0, 2048) (WORLD_SIZE=2048)\n")
    assert (first.rule, first.ranks) == ("env_rank_out_of_range", (2048,))


def test_a_vpn_interface_among_those_nccls_sockets_use_is_a_bad_interface():
    listed = (
        "w1:2131:2131 [0] NCCL INFO NET/Socket : Using [0]eth0:10.244.1.17<0> [1]{iface}:100.101.7.3<0>\n"
        "w1:2131:2219 [0] NCCL INFO Channel 01/0 : 1[0] -> 0[0] [receive] via NET/Socket/1\n"
    )
    for iface in ("tailscale0", "wg0", "tun0", "ztly5abcde"):
        assert "bad_iface" in _facts(listed.format(iface=iface)), iface
    assert "bad_iface" not in _facts(listed.format(iface="eth1"))
    # bootstrap uses one interface: the first is the one
    assert "bad_iface" not in _facts("w1:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0> tailscale0 is up\n")


# ---- CUDA's 'invalid argument' in NCCL's P2P buffer set-up -------------------------------------------------
P2P_INVALID = """\
h100-a:3312:3410 [0] NCCL INFO NCCL version 2.18.1+cuda12.1
h100-a:3312:3410 [0] transport/p2p.cc:427 NCCL WARN Cuda failure 'invalid argument'
h100-a:3312:3410 [0] NCCL INFO transport/p2p.cc:508 -> 1
[rank0]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1331, \
unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.1
"""


def test_cuda_refusing_the_p2p_buffer_set_up_is_the_nccl_release_unless_the_gpus_have_no_peer_access():
    assert (_first(P2P_INVALID).category, _first(P2P_INVALID).rule) == ("version_mismatch", "p2p_cuda_invalid_argument")
    matrix = "$ nvidia-smi topo -p2p r\n GPU0\tX\tCNS\n GPU1\tCNS\tX\n"
    assert _first(matrix + P2P_INVALID).category == "p2p_topology"
    assert _first("2x RTX 4090 on one board\n" + P2P_INVALID).category == "p2p_topology"


# ---- blind sets 27 and 28: context that settles a signature's category ----------------------------------
def test_torchs_ipv6_bind_warning_is_not_a_port_in_use():
    log = (
        "[W socket.cpp:464] [c10d] The server socket has failed to bind to [::]:23456 "
        "(errno: 97 - Address family not supported by protocol).\n"
    )
    in_use = log.replace("97 - Address family not supported by protocol", "98 - Address already in use")
    assert "master_port_in_use" not in [rule for _, rule in _rules(diagnose(log))]
    assert "master_port_in_use" in [rule for _, rule in _rules(diagnose(in_use))]


def test_a_vpcs_firewall_rules_listed_beside_a_refused_peer_is_the_rendezvous_path():
    log = (
        "gpu-b:5120:5190 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.128.0.12<44751> failed : "
        "Software caused connection abort\n"
    )
    assert _first(log).category == "socket_ifname"
    rules = "$ gcloud compute firewall-rules list --filter network=ml-vpc\nml-vpc-torch  ml-vpc  INGRESS  1000  tcp:29500\n"
    assert _first(rules + log).category == "rendezvous_unreachable"


def test_a_driver_whose_cuda_is_older_than_ncclss_build_is_a_version_mismatch():
    log = (
        "gpu-old:1422:1422 [0] NCCL INFO cudaDriverVersion {v}\n"
        "NCCL version 2.18.1+cuda12.1\n"
        "gpu-old:1422:1490 [0] transport/p2p.cc:274 NCCL WARN Cuda failure 'operation not supported'\n"
    )
    assert "driver_behind_cuda" in _facts(log.format(v=11040))
    assert "driver_behind_cuda" not in _facts(log.format(v=12040))
    assert _first(log.format(v=11040)).category == "version_mismatch"


def test_index_maps_built_on_rank_0_make_it_busy():
    assert "busy" in _facts(" > WARNING: could not find index map files, building the indices on rank 0 ...\n")


def test_counts_a_script_prints_for_its_all_to_all_are_split_tables():
    assert "splits_shown" in _facts("[moe] rank 0 send_counts=[512, 512, 512, 640] recv_counts=[512, 512, 448, 576]\n")
    log = (
        "[moe] rank 1 send_counts=[512, 512, 448, 576] recv_counts=[384, 512, 512, 640]\n"
        "moe-0:2210:2290 [1] transport/net_ib.cc:557 NCCL WARN NET/IB : Message truncated : received 262144 bytes "
        "instead of 196608\n"
    )
    assert (_first(log).category, _first(log).rule) == ("p2p_pairing", "net_message_truncated")


# ---- blind set 29: short questions -------------------------------------------------------------------------
def test_ranks_waiting_after_the_loop_with_fewer_batches_are_uneven_data_too():
    log = "".join(f"[rank {r}] len(loader)={n}\n" for r, n in ((0, 1503), (1, 1502), (2, 1502), (3, 1503)))
    log += "".join(
        f"[rank{r}]:[E ProcessGroupNCCL.cpp:563] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL("
        "SeqNum=9018, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800322 milliseconds before "
        "timing out.\n"
        for r in (1, 2)
    )
    top = _first(log)
    # the ranks with the extra batch are named, whichever side timed out
    assert (top.rule, top.category, top.ranks) == ("watchdog_uneven_data", "collective_desync", (0, 3))


def test_a_bare_progress_bar_says_the_run_went_on():
    assert "completed" in _facts("  3%|▎         | 112/3750 [01:41<54:02,  1.12it/s]\n")
    healthy = (
        "h100-a:31201:31490 [0] NCCL INFO ncclCommInitRank comm 0x55d1c8f0 rank 0 nranks 8 cudaDev 0 nvmlDev 0 busId "
        "18000 commId 0x9e3c7a1b5d0f2e44 - Init COMPLETE\n"
        "  3%|▎         | 112/3750 [01:41<54:02,  1.12it/s]\n"
    )
    assert not [f for f in diagnose(healthy).findings if f.rule.startswith("candidate.hang")]


def test_a_truncated_message_in_a_collective_the_code_calls_is_a_desync():
    log = (
        "gathering predictions with dist.all_gather(out_list, preds) where preds is (n_i, 10)\n"
        "n2:3901:3956 [1] transport/net_socket.cc:405 NCCL WARN NET/Socket : peer 10.1.0.5<44021> message truncated : "
        "receiving 20480 bytes instead of 16384\n"
    )
    assert (_first(log).category, _first(log).rule) == ("collective_desync", "net_message_truncated")


def test_a_receive_that_timed_out_in_torchs_older_wording_is_a_pairing_mistake():
    log = (
        "[E ProcessGroupNCCL.cpp:566] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(OpType=RECV, "
        "Timeout(ms)=1800000) ran for 1806024 milliseconds before timing out.\n"
    )
    assert _first(log).category == "p2p_pairing"
    assert _first(log.replace("OpType=RECV", "OpType=ALLREDUCE")).category != "p2p_pairing"


def test_a_hang_said_after_punctuation_or_at_a_lines_start_is_a_stop():
    for said in ("(hang, nothing after Init START)", "hangs forever after init", "it hung. no error at all"):
        assert [f.rule for f in diagnose(said + "\n").findings if f.rule.startswith("candidate.hang")], said


# ---- blind set 32: NCCL under other frameworks (TensorFlow, JAX, CuPy, Horovod) ----------------------------
def test_nccl_result_codes_as_other_bindings_print_them_are_the_generic_errors():
    for line, rule in (
        ("cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_INVALID_USAGE: invalid usage", "nccl_invalid_usage"),
        (
            "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: NCCL operation ncclCommInitRank(&comm, nranks, id, rank) "
            "failed: internal error - please report this issue to the NCCL developers.",
            "nccl_internal_error",
        ),
        (
            "[1,0]<stderr>: E horovod/common/ops/nccl_operations.cc:101] NCCL error: unhandled cuda error",
            "nccl_unhandled_cuda_error",
        ),
    ):
        assert rule in [r for _, r in _rules(diagnose(line + "\n"))], line


def test_tensorflows_collective_timeout_is_read_as_a_watchdog_timeout_is():
    log = (
        "2023-09-14 07:20:11.553312: I tensorflow/core/kernels/data/shuffle_dataset_op.cc:392] Filling up shuffle buffer "
        "(this may take a while): 163001 of 2000000\n"
        "tensorflow.python.framework.errors_impl.DeadlineExceededError: Collective ops is aborted by: Collective operation "
        "timed out after 1800 seconds\n"
    )
    assert (_first(log).rule, _first(log).category) == ("watchdog_timeout", "slow_rank_timeout")  # a task still busy


def test_grpc_and_jax_coordination_that_cannot_reach_its_peers_is_the_rendezvous():
    tf = "tensorflow.python.framework.errors_impl.UnavailableError: failed to connect to all addresses\n"
    assert (_first(tf).rule, _first(tf).category) == ("grpc_peer_unreachable", "rendezvous_unreachable")
    jax = "jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Id: PjRT_Client_Connect.\n"
    assert _first(jax).rule == "jax_coordination_barrier_timeout"


# ---- blind set 31: NCCL's own internals ----------------------------------------------------------------------
def test_a_rank_label_in_front_of_nccls_prefix_names_the_rank():
    from ncclnb.doctor.normalize import normalize

    ln = normalize("[rank2] ip-172-31-9-20:3323:3323 [2] NCCL INFO Broadcast: opCount 3f4 sendbuff 0x7f count 1 datatype 0")
    assert (ln.rank, ln.host, ln.pid) == (2, "ip-172-31-9-20", 3323)


def test_all_to_alls_at_different_numbers_are_split_sizes_that_do_not_pair():
    log = "".join(
        f"[rank{r}]:[E ProcessGroupNCCL.cpp:1182] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL("
        f"SeqNum={seq}, OpType=ALLTOALL_BASE, NumelIn=2097152, NumelOut=2115584, Timeout(ms)=600000) ran for 600091 "
        "milliseconds before timing out.\n"
        for r, seq in ((1, 1092), (0, 1093), (2, 1093), (3, 1093))
    )
    top = _first(log)
    assert (top.rule, top.category, top.ranks) == ("watchdog_alltoall_unpaired", "p2p_pairing", (1,))
    # the same numbers in another collective are still a rank that issued a different count
    assert _first(log.replace("ALLTOALL_BASE", "ALLREDUCE")).rule == "watchdog_seq_differs"


def test_the_first_collective_timing_out_on_gpus_without_peer_access_is_the_p2p_path():
    log = (
        ">>> torch.cuda.can_device_access_peer(0, 1)\nFalse\n"
        "box:3101:3160 [0] NCCL INFO Channel 00/0 : 0[1000] -> 1[2000] via P2P/direct pointer\n"
        "[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
        "OpType=BROADCAST, NumelIn=262144000, NumelOut=262144000, Timeout(ms)=1800000) ran for 1800331 milliseconds "
        "before timing out.\n"
    )
    assert _first(log).category == "p2p_topology"
    assert _first(log.replace("SeqNum=1,", "SeqNum=4012,")).category != "p2p_topology"  # late in the run: not the path


def test_sends_and_receives_in_ncclss_c_api_or_cupy_are_point_to_point_code():
    for code in (
        "ncclSend(sendbuf, n, ncclFloat, (rank+1)%size, comm, s);",
        "comm.send(x.data.ptr, x.size, nccl.NCCL_FLOAT32, 1, s)",
    ):
        assert {"send_recv", "p2p_code"} <= _facts(code + "\n"), code


def test_split_tables_beside_a_lost_peer_put_pairing_among_its_candidates():
    log = (
        "[rank0] all_to_all_single in_splits=[512, 384] out_splits=[512, 256]\n"
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1275, "
        "remote process exited or there was a network error, NCCL version 2.18.1\n"
    )
    assert _first(log).rule == "candidate.remote.p2p_pairing"


def test_the_first_collective_timing_out_on_consumer_gpus_with_p2p_channels_is_the_p2p_path():
    log = (
        "2x RTX 4090, torch 2.0.1+cu118, driver 525.105.17\n"
        "ws:88:88 [0] NCCL INFO Channel 00/0 : 0[1000] -> 1[2000] via P2P/IPC\n"
        "[E ProcessGroupNCCL.cpp:828] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
        "OpType=BROADCAST, Timeout(ms)=1800000) ran for 1800473 milliseconds before timing out.\n"
    )
    assert _first(log).category == "p2p_topology"
    assert _first(log.replace("2x RTX 4090", "8x H100")).category != "p2p_topology"


def test_a_once_read_line_with_no_host_pasted_twice_is_read_without_error():
    # (it reached the inert path with no host, and the run facts were handed None for one: a traceback)
    line = "NET/Plugin: Could not find: libnccl-tuner.so libnccl-net.so. Using internal tuner plugin.\n"
    assert [rule for _, rule in _rules(diagnose(line * 2))] == [rule for _, rule in _rules(diagnose(line))]


def test_a_gpu_list_indexed_by_the_local_rank_running_out_is_more_processes_than_gpus():
    log = (
        "[1,4]<stderr>:    tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], 'GPU')\n"
        "[1,4]<stderr>:IndexError: list index out of range\n"
    )
    assert (_first(log).rule, _first(log).category) == ("list_index_out_of_range", "rank_world_size_mismatch")
    # an IndexError elsewhere says nothing of the kind
    other = "    x = batch[idx]\nIndexError: list index out of range\n"
    assert _first(other).category == "unknown"


def test_a_coll_trace_split_one_against_one_names_both_calls_and_blames_no_rank():
    line = (
        "[rank{r}] ip-1:33{r}:33{r} [{r}] NCCL INFO {op}: opCount 3f4 sendbuff 0x7f recvbuff 0x7f count {n} datatype {dt} "
        "op 0 root 0 comm 0x55 [nranks=2] stream 0x55\n"
    )
    log = line.format(r=0, op="AllReduce", n=1, dt=7) + line.format(r=1, op="Broadcast", n=65536, dt=0)
    top = _first(log)
    assert (top.rule, top.category, top.ranks) == ("coll_trace_mismatch", "collective_desync", ())
    assert "AllReduce of 1 element" in top.title and "Broadcast of 65536 elements" in top.title
