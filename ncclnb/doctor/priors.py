"""What the rest of a log says about a failure whose own line does not name its cause.

Three kinds of knowledge live here, all as data over :class:`LogContext`
(facts about the run gathered from the lines the scanner hands over):

* ``WARN_SOURCES``: the category an ``NCCL WARN`` line no signature knows
  leans to, from the NCCL source file that printed it (``transport/nvls.cc``
  is NVLink SHARP, ``transport/shm.cc`` shared memory, ...);
* ``CANDIDATES``: for a generic NCCL error (``unhandled system error``,
  ``internal error``, ``remote error``, ``unhandled cuda error``, a connection
  reset, a job that stopped after init with no error at all), the causes that
  produce it, each weighted up or down by what the log shows (one container
  node, several hosts, InfiniBand in use, an interface forced, an NVSwitch
  box, an old GPU or NCCL), with what to check to tell them apart;
* ``PREFER``: which of a signature's categories (its own or one of ``also``)
  a fact of the log settles.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from ..model.derive import parse_version
from .kb import required_any
from .reason import ALLTOALL_OPS


class _Gated:
    """A regex searched only where one of the literals every match of it holds
    (kb.required_any) shows: the same answers, for a few ``in`` tests on most
    messages instead of a search. observe runs once per distinct message, and
    a big log has tens of thousands."""

    __slots__ = ("rx", "lits")

    def __init__(self, rx: re.Pattern):
        self.rx, self.lits = rx, required_any(rx.pattern, rx.flags)

    def search(self, text: str) -> Optional[re.Match]:
        if self.lits is not None:
            for lit in self.lits:
                if lit in text:
                    break
            else:
                return None
        return self.rx.search(text)


def _holds(text: str, words: tuple) -> bool:
    """Whether ``text`` holds one of ``words`` (any() over a generator costs twice this loop)."""
    for w in words:
        if w in text:
            return True
    return False


# ---- facts of the run -------------------------------------------------------
_CONTAINER_HOST = re.compile(r"[0-9a-f]{12}", re.ASCII)  # docker's default hostname
# an interface no peer on another host can reach NCCL through: loopback, container bridges, the tunnels and overlays
# of container networks (Calico's tunl0 and vxlan.calico, flannel, weave, Cilium, kube-ipvs), and VPNs (Tailscale,
# WireGuard, OpenVPN's tun and tap, ZeroTier): a path between some hosts, not the cluster's network
_UNREACHABLE_IFACE = (
    r"(?:lo|docker[0-9]*|veth[0-9a-z]*|virbr[0-9]*|br-[0-9a-f]+|cni[0-9]*|"
    r"tunl[0-9]*|vxlan[\w.]*|flannel[\w.]*|cali[0-9a-f]*|weave|cilium_[\w]+|kube-ipvs[0-9]*|"
    r"tailscale[0-9]*|wg[0-9]+|tun[0-9]+|tap[0-9]+|zt[0-9a-z]+|ztun[0-9]*):"
)
# the interface bootstrap uses, or any of those NET/Socket lists (its channels use every one: one channel over a
# VPN hangs while the others run)
_BAD_IFACE = re.compile(
    rf"(?:Bootstrap|NET/Socket) ?: ?Using (?:\[[0-9]+\] ?)?{_UNREACHABLE_IFACE}"
    rf"|NET/Socket ?: ?Using [^\n]{{0,512}}?\[[0-9]+\] ?{_UNREACHABLE_IFACE}",
    re.ASCII,
)
# the address an interface NCCL uses has ("Bootstrap : Using eth0:172.31.5.11<0>", "NET/Socket : Using [0]ens5:10.0.3.4<0>")
_OWN_ADDRESS = re.compile(
    r"(?:Bootstrap|NET/Socket) ?: ?Using (?:\[[0-9]+\] ?)?[\w.-]+:(?P<net>[0-9]{1,3}\.[0-9]{1,3})\.[0-9]", re.ASCII
)
# a connection to a peer that got no answer at all (timed out), or a rejection a firewall sends for a host it guards
# (firewalld's icmp-host-prohibited reads as "No route to host"); not "refused", which is the peer's own answer
_CONNECT_UNANSWERED = re.compile(
    r"Connect to (?P<net>[0-9]{1,3}\.[0-9]{1,3})\.[0-9.]+<[0-9]+> (?:failed ?: ?|returned 11[03] ?\()"
    r"(?:Connection timed out|No route to host)",
    re.ASCII,
)
_OLD_GPU = re.compile(r"\b(?:Tesla )?(?:[KMP][0-9]{2,3}\b|GTX ?[0-9]{3,4}|GeForce GTX|Quadro [KMP][0-9])", re.ASCII)
_NEW_GPU = _Gated(
    re.compile(
        r"\b(?:[GH]100|H200|H800|H20\b|GH200|[GB]200|B100|GB300|NVSwitch|NVLS|NVLink SHARP|[Ff]abric ?[Mm]anager|MNNVL [1-9])",
        re.ASCII,
    )
)
# the NVSwitch fabric's service or its state, named (a paste that suspects it, nvidia-smi -q's "Fabric" block)
_FABRIC = re.compile(r"[Ff]abric ?[Mm]anager|fabricmanager|Fabric State", re.ASCII)
# a cuMem driver call NCCL made, named with how it ended ("cuMemCreate failed", "cuMemMap returned 1")
_CUMEM_CALL = re.compile(r"\bcuMem[A-Z][A-Za-z]+(?:\(\))? ?(?:failed|returned|error)", re.ASCII)
_HCA = re.compile(r"\bmlx[45]_[0-9a-z]+|\bibp[0-9]+s[0-9]+", re.ASCII)
_CONSUMER_GPU = _Gated(re.compile(r"GeForce|\bRTX ?[0-9]{4}\b|TITAN|PCIE", re.ASCII))
# NCCL's own line for a variable it read ("NCCL_ALGO set by environment to Tree"; old releases and a few
# variables: "NCCL_IB_HCA set to mlx5_0"), and a whole line of a shell or config file that sets one
# ("export NCCL_PROTO=LL128", "NCCL_TOPO_FILE=/opt/x.xml" in /etc/nccl.conf): never a variable named in prose
_ENV_SET = re.compile(r"(?P<var>NCCL_[A-Z0-9_]+) set (?:by environment )?to (?P<val>\S*)", re.ASCII)
_ENV_LINE = re.compile(r"^(?:\$ )?(?:export )?(?P<var>NCCL_[A-Z0-9_]+)=(?P<val>\S*)$", re.ASCII)
# the NCCL variables that override NCCL's own tuning choices (algorithm, protocol, channels, buffers,
# transports' levels, memory APIs): a failing WARN that names one the environment set is that setting's failure
TUNING_VARS = frozenset(
    {
        "NCCL_ALGO",
        "NCCL_PROTO",
        "NCCL_MIN_NCHANNELS",
        "NCCL_MAX_NCHANNELS",
        "NCCL_MIN_NRINGS",
        "NCCL_MAX_NRINGS",
        "NCCL_MIN_CTAS",
        "NCCL_MAX_CTAS",
        "NCCL_NTHREADS",
        "NCCL_BUFFSIZE",
        "NCCL_LL_BUFFSIZE",
        "NCCL_LL128_BUFFSIZE",
        "NCCL_NET_GDR_LEVEL",
        "NCCL_NET_GDR_READ",
        "NCCL_P2P_LEVEL",
        "NCCL_P2P_NET_CHUNKSIZE",
        "NCCL_NCHANNELS_PER_NET_PEER",
        "NCCL_CUMEM_ENABLE",
        "NCCL_NVLS_ENABLE",
        "NCCL_COLLNET_ENABLE",
        "NCCL_CROSS_NIC",
        "NCCL_GRAPH_REGISTER",
        "NCCL_LOCAL_REGISTER",
    }
)
NAMED_VAR = re.compile(r"NCCL_[A-Z0-9_]+", re.ASCII)
# torch / the CUDA samples saying two GPUs have no peer access: can_device_access_peer(...) answered False
# (same line, or the REPL's next line), p2pBandwidthLatencyTest's "Device=0 CANNOT Access Peer Device=1",
# simpleP2P's "Peer access from GPU0 -> GPU1 : No"
_P2P_DENIED = re.compile(
    r"can_device_access_peer\([^)]*\)\)?[ :=>-]*False|CANNOT Access Peer|Peer access from .* : No\b", re.ASCII
)
# df's line for a /dev/shm smaller than 1 GB (df -h sizes in K or M; df's 1K blocks, at most six digits)
_SMALL_SHM = re.compile(r"^\S+ +(?:[0-9.]+[KM]i?|[0-9]{1,6}) +\S+ +\S+ +[0-9]+% +/dev/shm", re.ASCII)
# the script's own code, pasted: a branch only one rank takes ("if self.trainer.is_global_zero:", "if rank == 0:") and a
# collective called in it (or in the next lines read): the other ranks never call it, so the ranks' collectives differ
_RANK_GUARD = re.compile(
    r"^(?:el)?if\b[^#\n]{0,120}(?:is_global_zero|is_main_process|is_local_main_process|is_world_process_zero|"
    r"rank\(?\)? ?== ?0\b)",
    re.ASCII,
)
_COLLECTIVE_CALL = re.compile(
    r"\b(?:all_reduce|all_gather(?:_object|_into_tensor)?|reduce_scatter(?:_tensor)?|broadcast(?:_object_list)?|barrier|"
    r"all_to_all(?:_single)?)\(|\bsync_dist ?= ?True",
    re.ASCII,
)
_GUARD_SPAN = 3  # distinct messages read after a rank-0 branch's line that may still be its body
# the run got on after NCCL's set-up: a training step, a loss, a rate, a bandwidth figure
_PROGRESS = re.compile(
    r"['\"]loss['\"]: ?-?[0-9]|\bloss[ :=]+-?[0-9]|[0-9] ?(?:it/s|s/it)\b|\bbusbw\b[^0-9\n]{0,8}[0-9]|"
    r"\b(?:[Ss]tep|[Ii]teration) +[0-9]+ *(?:/|\||,|:)|\bstep=[0-9]+[,/ ]|SamplesPerSec=[0-9]|"
    # a server that came up and serves (after its engine's NCCL set-up): uvicorn's banner, a throughput report
    r"\bUvicorn running on |throughput: [0-9.]+ tokens/s",
    re.ASCII,
)
# someone says it stopped: a hang, a stuck rank, an interrupt, a stack dump of the living process (py-spy, faulthandler)
_STOPPED = _Gated(
    re.compile(
        r"\b(?:[Hh]angs?|[Hh]anging|[Hh]ung|HANG|[Ss]tuck|[Ff]roze|[Ff]reezes|never (?:returns|finishes|completes))\b|"
        r"KeyboardInterrupt|py-spy|\(most recent call first\)|^Thread (?:0x[0-9a-f]+|[0-9]+) \((?:idle|active)|"
        # the same said in the reporter's own language (Chinese, Japanese, Korean pastes around English error lines)
        "\u5361\u6b7b|\u5361\u4f4f|\u30cf\u30f3\u30b0|\u30d5\u30ea\u30fc\u30ba|\uba48\ucdb0|\uba48\ucda4",
        re.ASCII,
    )
)
# a warning that something could hang ("... this can cause the process to hang"), not a report that it did
_MAY_HANG = re.compile(r"\b(?:can|could|may|might|will|would)\b[^.!?]{0,40}\b(?:hang|freeze|get stuck)\b", re.ASCII)
_OLD_WORDING = _Gated(re.compile(r"NCCL Error [0-9]+:|compiled with NCCL 1\.|NCCL 1\.[0-9]", re.ASCII))
_NCCL_VERSION = re.compile(r"NCCL version:? ?(?P<ver>[0-9]{1,2}\.[0-9]{1,3}\.[0-9]{1,3})", re.ASCII)
_HOSTS_ARG = re.compile(r"(?:--host|-H) (?P<list>[\w.-]+(?:,[\w.-]+)+)", re.ASCII)
_NRANKS = re.compile(r"\bn[Rr]anks[= ](?P<n>[0-9]{1,7})", re.ASCII)
# a job this large: hundreds of ranks, or tens of nodes
MANY_RANKS, MANY_NODES = 256, 32
_NNODES = re.compile(r"(?:--nnodes[= ]|nNodes |num_nodes=|--nodes[= ]|(?:^|\s)-N ?)(?P<n>[0-9]{1,5})\b", re.ASCII)
# how many GPUs a process sees, as the script prints it ("torch.cuda.device_count() = 4", "device_count=2")
_DEVICE_COUNT = re.compile(r"device_count(?:\(\))?\s*(?:=|:|is)\s*(?P<n>[0-9]{1,3})\b", re.ASCII)
# processes a launcher starts on this node, as DeepSpeed's launcher reports it
_LOCAL_PROCS = re.compile(r"\bnum_local_procs=(?P<n>[0-9]{1,4})\b", re.ASCII)
# a host firewall or a cloud security group in the paste (its status, its rules, the command that lists them)
_FIREWALL = (
    "firewall-cmd",
    "firewalld",
    "iptables",
    "ufw status",
    "ufw allow",
    "Chain INPUT (policy",
    "ecurity group",
    "firewall-rules",  # gcloud compute firewall-rules: a VPC's rules, open for some ports only
    "firewall rule",
)
# code or a stack that sends to and receives from chosen peers: its sizes are the program's, per pair
_SEND_RECV = (
    "isend(",
    "irecv(",
    "dist.send(",
    "dist.recv(",
    "batch_isend_irecv",
    "P2POp(",
    "ProcessGroupNCCL::send(",
    "ProcessGroupNCCL::recv(",
    "ncclSend(",  # NCCL's C API, and CuPy's communicator
    "ncclRecv(",
    "comm.send(",
    "comm.recv(",
)
_P2P_CODE = ("all_to_all", "alltoall") + _SEND_RECV
# the driver's version (nvidia-smi's header, the kernel module's banner) and the CUDA an NCCL was built for
_DRIVER = re.compile(r"(?:Driver Version: |NVIDIA UNIX [\w-]+ Kernel Module +)(?P<major>[0-9]{3})\.[0-9]", re.ASCII)
# the CUDA version the driver supports, as NCCL prints it (11040: 11.4)
_DRIVER_CUDA = re.compile(r"cudaDriverVersion (?P<v>[0-9]{4,5})\b", re.ASCII)
_NCCL_CUDA = re.compile(r"NCCL version [0-9]+\.[0-9]+\.[0-9]+\+cuda(?P<major>[0-9]{2})\.", re.ASCII)
# the oldest driver of each CUDA major: an older one runs it only through the forward-compatibility package, which
# leaves out features NCCL uses (the cuMem API, IPC handles)
_DRIVER_FOR_CUDA = {11: 450, 12: 525, 13: 580}
# a paste's own statement of a machine's GPUs: "2x RTX 3090", "8 x A100", "4xA10G"
_GPUS_STATED = re.compile(
    r"(?<![\w.])(?P<n>[1-9]|1[0-6]) ?[x\u00d7] ?(?:NVIDIA |Nvidia )?(?:GeForce |Tesla )?(?:RTX ?|GTX ?)?"
    r"(?:A100|A800|H100|H800|H200|H20|B200|L40S|L40|L4|A10G|A10|A30|A40|A6000|A5000|A4000|V100|P100|T4|"
    r"5090|4090|3090|3080|2080)\b"
)
# the GPUs a Slurm allocation gives each node: --gres=gpu[:type]:N, --gpus-per-node=[type:]N
_GPUS_PER_NODE = re.compile(
    r"(?:--gres[= ]gpu(?::[A-Za-z][\w.-]{0,31})?:|--gpus-per-node[= ](?:[A-Za-z][\w.-]{0,31}:)?)(?P<n>[0-9]{1,2})\b", re.ASCII
)
# an all-to-all's split sizes as a script prints them before the call ("input_splits=[512, 300]", "send_splits: [3, 5]",
# "output_split_sizes = [...]"): the sizes each pair of ranks must agree on
_SPLITS = re.compile(r"\b(?:input|output|in|out|send|recv)_?(?:split(?:s|_sizes)?|counts)\b ?[=:] ?\[[0-9]", re.ASCII)
# Slurm binding one GPU to each task (--gpus-per-task=1): every process sees its own single GPU, as cuda:0
_GPU_PER_TASK = re.compile(r"--gpus-per-task[= ](?:[A-Za-z][\w.-]{0,31}:)?1\b", re.ASCII)
# CUDA_VISIBLE_DEVICES as a shell line, an env dump or a launcher's echo sets it: the GPUs each process of the node sees
_VISIBLE = re.compile(r"CUDA_VISIBLE_DEVICES[\"']?[=:] ?[\"']?(?P<ids>[0-9]{1,3}(?:,[0-9]{1,3})*)\b", re.ASCII)
# code (a traceback's source line, a snippet) that picks a process's GPU by a physical id out of CUDA_VISIBLE_DEVICES
# (CUDA renumbers the visible GPUs from 0), or by the global rank (the local rank on one node only)
_DEVICE_BY_PHYSICAL_ID = re.compile(r"CUDA_VISIBLE_DEVICES['\"]\)?\]?\)?\.split\([^)]*\)\s*\[", re.ASCII)
# (or out of a list of GPU ids of its own: "cuda:{os.environ['GPU_IDS'].split(',')[local_rank]}", ids a process whose
# CUDA_VISIBLE_DEVICES is set does not number its GPUs by)
_DEVICE_FROM_ID_LIST = re.compile(r"(?:cuda:\{|set_device\(|torch\.device\()[^\n]{0,120}?\.split\([^)]{0,8}\)\s*\[", re.ASCII)
_DEVICE_BY_RANK = re.compile(
    r"(?:set_device\(|cuda:\{|\.cuda\(|device\(\s*['\"]cuda['\"],\s*)(?:args\.|self\.|opt\.|cfg\.|config\.)?"
    r"(?:rank|global_rank|world_rank|dist\.get_rank\(\)|torch\.distributed\.get_rank\(\))\s*[)}]|"
    # the global rank read from the launcher's environment ("cuda:{int(os.environ['RANK'])}")
    r"(?:set_device\(|cuda:\{|\.cuda\(|device\(\s*['\"]cuda['\"],\s*)(?:int\()?"
    r"os\.(?:environ\[|environ\.get\(|getenv\()['\"]RANK['\"]",
    re.ASCII,
)
# code picking a GPU out of the node's list of GPUs by the local rank (Horovod's gpus[hvd.local_rank()]): a list that
# runs out where more processes run on the node than it has GPUs
_GPU_LIST_BY_LOCAL_RANK = re.compile(
    r"\b(?:gpus|devices|physical_devices|gpu_ids|visible_gpus)\[(?:hvd\.|args\.|self\.)?local_rank(?:\(\))?\]", re.ASCII
)
# torch's object collectives put each object's bytes on torch.cuda.current_device(): cuda:0 in every process that
# never called set_device
_OBJECT_COLLECTIVE = re.compile(
    r"\bin (?:all_gather_object|broadcast_object_list|gather_object|scatter_object_list|_object_to_tensor)\b|"
    r"_object_to_tensor\(\w+, current_device",
    re.ASCII,
)
# a row of nvidia-smi's process table: "|    0   N/A  N/A     15220      C   ...envs/cv/bin/python     2771MiB |"
# (GI and CI columns since the A100's MIG; none before)
_SMI_PROCESS = re.compile(
    r"\|\s+(?P<gpu>[0-9]{1,3})\s+(?:(?:N/A|[0-9]+)\s+(?:N/A|[0-9]+)\s+)?(?P<pid>[0-9]{1,9})\s+[CGM+]{1,3}\s+\S+\s+[0-9]+MiB\s*\|$",
    re.ASCII,
)
# Slurm naming the node whose tasks failed ("srun: error: gpu-n13: tasks 4-7: Exited with exit code 1")
_SRUN_NODE = re.compile(r"srun: error: (?P<host>[A-Za-z][\w.-]{0,62}): tasks? [0-9]", re.ASCII)
_RANKS_ON = re.compile(r"Rank +[0-9]+ (?:Pid +[0-9]+ )?on +(?P<host>[\w.-]+) +device", re.ASCII)  # nccl-tests' device table

# a rank busy on its own work (data preparation, clustering, a checkpoint) in the lines before a timeout
_BUSY = (
    "heckpoint",
    "reprocess",
    "okeniz",
    "Clustering",
    "ndexing",
    "Building index",
    "uilding the indices",
    "shuffle buffer",
    "retry loop",
    "wandb: Network error",
)
# a rank that ended its loop while others may still wait in a collective
_FINISHED = ("fit` stopped", "raining completed", "arly stopping", "Trainer to stop")
# the communication itself ran to its end (nccl-tests' closing lines, NCCL's communicator torn down in order):
# a log that ends after these did not hang
_COMPLETED = ("Out of bounds values", "Avg bus bandwidth", "Destroy COMPLETE")
# the job got past NCCL's init (a stop after these is a hang, not a failure to start)
_INIT_DONE = (
    "Setting affinity",
    "Launch mode",
    "out-of-place",
    "Using devices",
    "nGpus",
    "Trees [",
    "localRanks",
    "Init COMPLETE",
    "Connected all rings",
    "Connected all trees",
)


# messages whose reading depends on the line before them (observe_pair): never read as a repeat of themselves
PAIR_ANSWERS = frozenset({"False"})


@dataclass
class LogContext:
    """Facts of the run read from every candidate line (cheap substring tests first)."""

    hosts: set = field(default_factory=set)
    nnodes: int = 0
    nranks: int = 0  # the largest communicator NCCL reports (nRanks / nranks)
    container: bool = False
    ib: bool = False
    socket_only: bool = False
    ifname_set: bool = False
    bad_iface: bool = False
    env: dict = field(default_factory=dict)  # NCCL_* variable -> value, from "set by environment"
    topo_env: bool = False  # NCCL_TOPO_FILE / NCCL_GRAPH_FILE / nccl.conf in play
    net_plugin: bool = False  # an external net plugin (aws-ofi-nccl) is loaded
    new_gpu: bool = False  # Hopper/Blackwell, NVSwitch, NVLS, fabric manager
    old_gpu: bool = False  # Kepler/Maxwell/Pascal
    consumer_gpu: bool = False  # GeForce/RTX/PCIe cards (no NVLink, P2P over PCIe)
    old_stack: bool = False  # NCCL 1.x or a pre-2.8 NCCL (no Ampere+ kernels), old wordings
    busy: bool = False
    finished: bool = False
    completed: bool = False
    init_seen: bool = False
    progress: bool = False  # a step, loss, rate or bandwidth line: the job ran after its set-up
    stopped: bool = False  # someone says it hung or stopped it (a hang, ^C, a py-spy / faulthandler dump)
    p2p_denied: bool = False  # torch or the CUDA samples say two GPUs have no peer access
    ib_wanted: bool = False  # NCCL_IB_HCA set, or an HCA (mlx5_*, an ibp* interface) named: IB was meant to be used
    shm_small: bool = False  # df shows a /dev/shm under 1 GB
    firewall: bool = False  # the paste shows a host firewall or a cloud security group at work (_FIREWALL)
    p2p_code: bool = False  # the paste's code or stack exchanges data point to point or all-to-all (_P2P_CODE)
    driver_major: int = 0  # the oldest driver the paste shows (470 of 470.199.02)
    cuda_major: int = 0  # the newest CUDA an NCCL of the paste was built for (12 of +cuda12.4)
    driver_cuda: int = 0  # the oldest CUDA major a driver of the paste supports (11 of cudaDriverVersion 11040)
    send_recv: bool = False  # ... by send and recv (_SEND_RECV): torch makes a communicator per pair for them, lazily
    cumem: bool = False  # NCCL's cuMem API in play (NCCL_CUMEM_ENABLE set, a cuMem call named)
    single_process: bool = False  # one process drives every GPU (nccl-tests -g N): one host
    visible_gpus: int = 0  # the most GPUs a CUDA_VISIBLE_DEVICES line of the log lists, a script counts, or Slurm gives a node
    single_views: set = field(default_factory=set)  # the ids of CUDA_VISIBLE_DEVICES lines that list exactly one GPU
    stated_gpus: int = 0  # the GPUs a paste says its machine has ("2x RTX 3090"), when it says so once
    local_procs: int = 0  # the processes a launcher says it starts on a node (DeepSpeed's num_local_procs)
    device_by_physical_id: bool = False  # code indexes GPUs by CUDA_VISIBLE_DEVICES's ids (_DEVICE_BY_PHYSICAL_ID)
    device_by_rank: bool = False  # code picks a GPU by the global rank (_DEVICE_BY_RANK)
    gpu_list_by_local_rank: bool = False  # code picks a GPU out of the node's list by the local rank (_GPU_LIST_BY_LOCAL_RANK)
    object_collective: bool = False  # a traceback passes through an object collective (all_gather_object, ...)
    nvls_call: bool = False  # a line names NVLS's source (nvls.cc) or a multicast driver call (cuMulticast*)
    fabric_named: bool = False  # a line names the NVSwitch fabric's manager or its state (fabric manager, Fabric State)
    conf_file: bool = False  # an NCCL configuration file is in play (/etc/nccl.conf, ~/.nccl.conf, NCCL_CONF_FILE)
    gpu_processes: dict = field(default_factory=dict)  # GPU index -> pids nvidia-smi's process table lists on it
    collective_code: bool = False  # the paste's code or traceback calls a collective (all_reduce(, all_gather(, ...)
    rank_guarded_collective: bool = False  # the pasted code calls a collective in a branch only rank 0 takes
    gpu_per_task: bool = False  # Slurm gives each task one GPU of its own (--gpus-per-task=1)
    splits_shown: bool = False  # the paste prints an all-to-all's split sizes (input_splits=[...], send_splits=[...])
    _guard_left: int = 0  # messages still read as the body of the last rank-0 branch seen
    own_nets: set = field(default_factory=set)  # the first two octets of the addresses NCCL's interfaces have
    timed_out_nets: set = field(default_factory=set)  # the same of the peers a connection to went unanswered

    MAX_HOSTS = 64

    def observe_host(self, host: str) -> None:
        if host not in self.hosts and len(self.hosts) < self.MAX_HOSTS:
            self.hosts.add(host)
            if _CONTAINER_HOST.fullmatch(host):
                self.container = True

    def observe(self, msg: str) -> None:
        """Read the facts ``msg`` carries (called once per distinct message: the lines that
        carry them hold one of kb.TRIGGERS' context literals, so the scanner hands them over)."""
        if " to " in msg or "=" in msg:
            m = _ENV_SET.search(msg) if " to " in msg else _ENV_LINE.search(msg.strip())
            if m and len(self.env) < 256:
                self.env[m.group("var")] = m.group("val")
                if m.group("var") in ("NCCL_TOPO_FILE", "NCCL_GRAPH_FILE"):
                    self.topo_env = True
                if m.group("var") == "NCCL_SOCKET_IFNAME":
                    self.ifname_set = True
                if m.group("var") == "NCCL_IB_HCA":
                    self.ib_wanted = True
        if "NCCL_SOCKET_IFNAME" in msg or "GLOO_SOCKET_IFNAME" in msg:
            self.ifname_set = True
        if "nccl.conf" in msg or "NCCL_CONF_FILE" in msg:
            self.conf_file = True
        if "MiB" in msg and msg.lstrip().startswith("|"):
            m = _SMI_PROCESS.match(msg.strip())
            if m and len(self.gpu_processes) < 64:
                pids = self.gpu_processes.setdefault(int(m.group("gpu")), set())
                if len(pids) < 64:
                    pids.add(m.group("pid"))
        if ("Connection timed out" in msg or "No route to host" in msg) and len(self.timed_out_nets) < 16:
            self.timed_out_nets.update(_CONNECT_UNANSWERED.findall(msg))
        if "srun: error" in msg:
            m = _SRUN_NODE.search(msg)
            if m:
                self.observe_host(m.group("host"))
        if "nccl.conf" in msg or "NCCL_TOPO_FILE" in msg or "NCCL_GRAPH_FILE" in msg or "Loading topology file" in msg:
            self.topo_env = True
        if "NET/IB" in msg or "Using network IB" in msg or "mlx5" in msg or "NCCL_IB_" in msg:
            if "No device found" in msg:
                self.socket_only = True
            else:
                self.ib = True
        if ("mlx5_" in msg or "ibp" in msg) and "No device found" not in msg and _HCA.search(msg):
            self.ib_wanted = True  # an HCA or IPoIB interface exists on the node
        if "Using network Socket" in msg:
            self.socket_only = True
        if "NET/OFI" in msg or "aws-ofi" in msg:
            self.net_plugin = True
        if "Bootstrap" in msg or "NET/Socket" in msg:
            if _BAD_IFACE.search(msg):
                self.bad_iface = True
            if len(self.own_nets) < 16:
                self.own_nets.update(_OWN_ADDRESS.findall(msg))
            if "172.17." in msg or "docker0" in msg:
                self.container = True
        if not self.new_gpu and _NEW_GPU.search(msg):
            self.new_gpu = True
        if not self.old_gpu and _OLD_GPU.search(msg):
            self.old_gpu = True
        if not self.consumer_gpu and _CONSUMER_GPU.search(msg):
            self.consumer_gpu = True
        if not self.old_stack and _OLD_WORDING.search(msg):
            self.old_stack = True
        if "ersion" in msg:
            m = _NCCL_VERSION.search(msg)
            if m and (parse_version(m.group("ver")) or ()) < (2, 8):
                self.old_stack = True
        if "--host" in msg or "-H " in msg:
            m = _HOSTS_ARG.search(msg)
            if m:
                self.nnodes = max(self.nnodes, len(set(m.group("list").split(","))))
        if "anks" in msg:
            m = _NRANKS.search(msg)
            if m:
                self.nranks = max(self.nranks, int(m.group("n")))
        if "nnodes" in msg or "nNodes" in msg or "num_nodes" in msg or "-N" in msg or "--nodes" in msg:
            m = _NNODES.search(msg)
            if m:
                self.nnodes = max(self.nnodes, int(m.group("n")))
        if "device" in msg and " on " in msg:
            m = _RANKS_ON.search(msg)
            if m:
                self.observe_host(m.group("host"))
        if "nGpus" in msg and "nThread" in msg and "mpirun" not in msg:
            self.single_process = True
        if _holds(msg, _BUSY):
            self.busy = True
        if _holds(msg, _FINISHED):
            self.finished = True
        if _holds(msg, _COMPLETED):
            self.completed = True
        if _holds(msg, _INIT_DONE):
            self.init_seen = True
        if not self.progress and (
            "loss" in msg
            or "/it" in msg
            or "it/" in msg
            or "busbw" in msg
            or "tep " in msg
            or "tep=" in msg
            or "PerSec=" in msg
            or "teration " in msg
            or "Uvicorn" in msg
            or "tokens/s" in msg
        ):
            self.progress = bool(_PROGRESS.search(msg))
        if not self.stopped and _STOPPED.search(msg) and not _MAY_HANG.search(msg):
            self.stopped = True
        if not self.p2p_denied and ("ccess" in msg) and _P2P_DENIED.search(msg):
            self.p2p_denied = True
        if not self.cumem and "cuMem" in msg and _CUMEM_CALL.search(msg):
            self.cumem = True
        if not self.shm_small and "/dev/shm" in msg and _SMALL_SHM.search(msg.strip()):
            self.shm_small = True
        if not self.firewall and _holds(msg, _FIREWALL):
            self.firewall = True
        if "Driver Version" in msg or "Kernel Module" in msg:
            m = _DRIVER.search(msg)
            if m:
                major = int(m.group("major"))
                self.driver_major = min(self.driver_major, major) if self.driver_major else major
        if "cudaDriverVersion" in msg:
            m = _DRIVER_CUDA.search(msg)
            if m:
                v = int(m.group("v")) // 1000
                self.driver_cuda = min(self.driver_cuda, v) if self.driver_cuda else v
        if "+cuda" in msg:
            m = _NCCL_CUDA.search(msg)
            if m:
                self.cuda_major = max(self.cuda_major, int(m.group("major")))
        if not self.splits_shown and ("split" in msg or "_counts" in msg) and _SPLITS.search(msg):
            self.splits_shown = True
        if not self.p2p_code and _holds(msg, _P2P_CODE):
            self.p2p_code = True
        if not self.send_recv and _holds(msg, _SEND_RECV):
            self.send_recv = True
        if "CUDA_VISIBLE_DEVICES" in msg and "Setting CUDA_VISIBLE_DEVICES" not in msg:
            # (DeepSpeed's launcher echoes the list it derived from --num_gpus or --include: not GPUs that exist)
            for m in _VISIBLE.finditer(msg):
                ids = set(m.group("ids").split(","))
                self.visible_gpus = max(self.visible_gpus, len(ids))
                if len(ids) == 1 and len(self.single_views) < 64:
                    self.single_views |= ids
        if self.stated_gpus >= 0 and ("x" in msg or "\u00d7" in msg):
            for m in _GPUS_STATED.finditer(msg):
                n = int(m.group("n"))
                self.stated_gpus = n if self.stated_gpus in (0, n) else -1  # two different statements: neither
        if "--g" in msg:
            for m in _GPUS_PER_NODE.finditer(msg):
                self.visible_gpus = max(self.visible_gpus, int(m.group("n")))
            if _GPU_PER_TASK.search(msg):
                self.gpu_per_task = True
        if "device_count" in msg:
            m = _DEVICE_COUNT.search(msg)
            if m:
                self.visible_gpus = max(self.visible_gpus, int(m.group("n")))
        if "num_local_procs" in msg:
            m = _LOCAL_PROCS.search(msg)
            if m:
                self.local_procs = int(m.group("n"))
        if not self.device_by_physical_id and "CUDA_VISIBLE_DEVICES" in msg and _DEVICE_BY_PHYSICAL_ID.search(msg):
            self.device_by_physical_id = True
        if not self.device_by_physical_id and ".split(" in msg and _DEVICE_FROM_ID_LIST.search(msg):
            self.device_by_physical_id = True
        if not self.gpu_list_by_local_rank and "local_rank" in msg and _GPU_LIST_BY_LOCAL_RANK.search(msg):
            self.gpu_list_by_local_rank = True
        if not self.device_by_rank and ("rank" in msg or "RANK" in msg) and _DEVICE_BY_RANK.search(msg):
            self.device_by_rank = True
        if "cuMulticast" in msg or "nvls.cc" in msg:
            self.nvls_call = True
        if not self.fabric_named and "abric" in msg and _FABRIC.search(msg):
            self.fabric_named = True
        if not self.object_collective and "_object" in msg and _OBJECT_COLLECTIVE.search(msg):
            self.object_collective = True
        if not self.collective_code and "(" in msg and _COLLECTIVE_CALL.search(msg):
            self.collective_code = True
        if not self.rank_guarded_collective:
            if self._guard_left and ("(" in msg or "sync_dist" in msg) and _COLLECTIVE_CALL.search(msg):
                self.rank_guarded_collective = True
            elif msg.lstrip().startswith(("if", "elif")):
                guard = _RANK_GUARD.match(msg.strip())
                if guard is not None:
                    # the branch's body on the same line ("if is_main_process(): dist.all_reduce(x)"), or the next lines
                    self._guard_left = _GUARD_SPAN + 1
                    if _COLLECTIVE_CALL.search(msg.strip(), guard.end()):
                        self.rank_guarded_collective = True
            self._guard_left = max(self._guard_left - 1, 0)

    def observe_pair(self, prev: str, msg: str) -> None:
        """Facts only two consecutive lines carry: the REPL's answer under the call (``>>> ...can_device_access_peer(0, 1)``
        then ``False``)."""
        if msg.strip() in PAIR_ANSWERS and "can_device_access_peer" in prev:
            self.p2p_denied = True

    def tuning_var_named(self, msg: str) -> Optional[str]:
        """The NCCL tuning variable (TUNING_VARS) ``msg`` names that this run set, or that ``msg`` says was set; None."""
        for var in NAMED_VAR.findall(msg):
            if var in TUNING_VARS and (var in self.env or f"{var} was set" in msg or f"{var} set by" in msg):
                return var
        return None

    @property
    def node_gpus(self) -> int:
        """The GPUs a node has, as far as the log shows: the most one process sees or Slurm gives a node, or
        the GPUs processes shown one each hold between them; else what the paste says its machine has."""
        return max(self.visible_gpus, len(self.single_views)) or max(self.stated_gpus, 0)

    @property
    def several_hosts(self) -> bool:
        return len(self.hosts) > 1 or self.nnodes > 1

    @property
    def many_ranks(self) -> bool:
        # each rank holds sockets and file descriptors for its peers and proxies: OS limits bite at scale
        return self.nranks >= MANY_RANKS or self.nnodes >= MANY_NODES

    @property
    def one_host(self) -> bool:
        # one host in a log is what any single rank's log shows: only NCCL's nNodes 1 (or --nnodes 1), or
        # one process driving all the GPUs, says the job had one node
        return self.nnodes == 1 or (self.single_process and len(self.hosts) <= 1 and self.nnodes <= 1)

    def facts(self, watchdog: Optional[dict] = None) -> set:
        """The names of the facts that hold (what CANDIDATES and PREFER key on)."""
        out = {
            name
            for name in (
                "container",
                "ib",
                "socket_only",
                "ifname_set",
                "bad_iface",
                "topo_env",
                "net_plugin",
                "new_gpu",
                "old_gpu",
                "consumer_gpu",
                "old_stack",
                "busy",
                "finished",
                "completed",
                "init_seen",
                "p2p_denied",
                "ib_wanted",
                "shm_small",
                "firewall",
                "p2p_code",
                "send_recv",
                "cumem",
                "several_hosts",
                "one_host",
                "many_ranks",
                "object_collective",
                "nvls_call",
                "fabric_named",
                "conf_file",
                "rank_guarded_collective",
                "collective_code",
                "gpu_list_by_local_rank",
                "splits_shown",
            )
            if getattr(self, name)
        }
        if self.progress and not self.stopped:
            # the job got on after its set-up and nobody says it stopped: a log that simply ends here did not
            # hang (the hang candidates need a stop, or no sign of progress). A harmless line alone does not
            # say so: a run that stopped after its set-up prints the plugin fallback too
            out.add("completed")
        if self.stopped:
            out.add("stopped")
        if self.timed_out_nets & self.own_nets and not self.bad_iface:
            # a peer on the network this host's interface is on gave no answer, or a firewall's rejection: something
            # drops the packets (a firewall, a cloud security group open only for the rendezvous port), not a wrong
            # interface
            out.add("peer_silent_on_own_network")
        piles = sorted((len(pids) for pids in self.gpu_processes.values()), reverse=True)
        if piles and piles[0] >= 2:
            out.add("processes_share_gpu")
            if piles[0] >= 3 or len(piles) == 1:
                out.add("ranks_pile_on_one_gpu")  # every process, or three or more, on one GPU: none set its device
        if self.device_by_physical_id or (self.device_by_rank and self.several_hosts):
            out.add("device_not_local")
        if (self.driver_major and self.driver_major < _DRIVER_FOR_CUDA.get(self.cuda_major, 0)) or (
            self.driver_cuda and self.driver_cuda < self.cuda_major
        ):
            out.add("driver_behind_cuda")  # an NCCL built for a CUDA newer than the driver: forward compatibility
        if len(self.single_views) >= 2 or self.gpu_per_task:
            # processes each shown another single GPU (Slurm's --gpus-per-task, Ray, a per-rank launcher): none can
            # share a GPU by count, and device 0 is the only index each has
            out.add("one_gpu_per_process")
        if any(var in TUNING_VARS for var in self.env):
            out.add("tuning_env")
        if self.env.get("NCCL_CUMEM_ENABLE", "0") != "0":
            out.add("cumem")
        if "NCCL_NET" in self.env:
            out.add("net_forced")
        if any(var in self.env for var in _BUFFER_VARS):
            out.add("buffers_tuned")  # the run sets how much memory NCCL's channels take
        if self.env.get("NCCL_SHM_DISABLE") == "1":
            out.add("shm_disabled")
        if self.env.get("NCCL_P2P_DISABLE") == "1" or self.env.get("NCCL_P2P_LEVEL") in ("LOC", "0"):
            out.add("p2p_disabled")
        if self.env.get("NCCL_IB_DISABLE") == "1":
            out.add("socket_only")
            out.discard("ib")
        if watchdog:
            recs = list(watchdog.values())
            seqs = {r.seq for r in recs}
            ops = {r.op for r in recs}
            if len(ops) == 1:
                if max(seqs) <= 8 and all(r.numel in (None, (1, 1)) for r in recs):
                    out.add("early_barrier")  # barrier() is a 1-element all_reduce; the first few are set-up
            if ops and ops <= ALLTOALL_OPS:
                out.add("alltoall_waits")  # the ranks wait in an all-to-all: its sends and receives, by their sizes
        return out


# ---- an NCCL WARN no signature knows ----------------------------------------
# (substring of the source path or of the message, category, alternatives): first that matches wins
WARN_SOURCES = (
    ("nvls", "driver_or_hardware", ("version_mismatch",)),
    ("NVLS", "driver_or_hardware", ("version_mismatch",)),
    ("net_ib", "ib_misconfig", ("p2p_topology",)),
    ("ibvwrap", "ib_misconfig", ()),
    ("ibvsymbols", "ib_misconfig", ("version_mismatch",)),
    ("NET/IB", "ib_misconfig", ()),
    ("coll_net", "ib_misconfig", ("nccl_env_override",)),
    ("NET/OFI", "ib_misconfig", ("version_mismatch",)),
    ("ofi", "ib_misconfig", ("version_mismatch",)),
    ("net_socket", "socket_ifname", ("rendezvous_unreachable",)),
    ("NET/Socket", "socket_ifname", ("rendezvous_unreachable",)),
    ("socket", "socket_ifname", ("rendezvous_unreachable",)),
    ("bootstrap", "rendezvous_unreachable", ("socket_ifname",)),
    ("Bootstrap", "rendezvous_unreachable", ("socket_ifname",)),
    ("shm", "shm_too_small", ("version_mismatch",)),
    ("p2p", "p2p_topology", ()),
    ("graph/xml", "nccl_env_override", ("version_mismatch",)),
    ("graph/", "p2p_topology", ("nccl_env_override",)),
    ("register", "ib_misconfig", ("oom_or_resource",)),
    ("alloc", "oom_or_resource", ()),
    ("cudawrap", "driver_or_hardware", ("version_mismatch",)),
    ("nvmlwrap", "driver_or_hardware", ()),
    ("enqueue", "version_mismatch", ("collective_desync",)),
    ("init.cc", "version_mismatch", ("device_mapping",)),
    ("net.cc", "ib_misconfig", ("socket_ifname",)),
    ("proxy", "ib_misconfig", ("oom_or_resource",)),
)


# what a WARN printed with no source location (NCCL before 2.9, a trimmed paste) says it was doing
WARN_MESSAGES = (
    ("/dev/shm", "shm_too_small", ("version_mismatch",)),
    ("ibv_", "ib_misconfig", ()),
    ("posix_memalign", "oom_or_resource", ()),
    ("Cannot allocate memory", "oom_or_resource", ()),
    ("cudaMalloc", "oom_or_resource", ()),
)


def warn_prior(where: Optional[str], text: str) -> Optional[tuple[str, tuple[str, ...]]]:
    """(category, alternatives) that an unrecognised NCCL WARN from ``where`` leans to, or None."""
    for key, cat, also in WARN_SOURCES:
        if (where and key in where) or (not where and key[:1].isupper() and key in text):
            return cat, also
    if not where:
        for key, cat, also in WARN_MESSAGES:
            if key in text:
                return cat, also
    return None


# ---- candidate causes of a generic error -------------------------------------
@dataclass(frozen=True)
class Candidate:
    category: str
    weight: float
    why: str  # the mechanism, one sentence
    check: str  # what tells it apart from the other candidates
    up: tuple = ()  # facts that make it more likely
    down: tuple = ()  # facts that make it less likely


_SHM = Candidate(
    "shm_too_small",
    0.26,
    "NCCL's shared-memory transport could not create its /dev/shm segment "
    "(Docker gives 64 MB by default; Kubernetes a tiny /dev/shm unless an emptyDir with medium Memory)",
    "df -h /dev/shm inside the container; run with --ipc=host or --shm-size=16g; NCCL_SHM_DISABLE=1 "
    "makes the error go away if this is it",
    up=("container", "one_host", "shm_small"),
    down=("shm_disabled", "several_hosts"),
)
_IFNAME = Candidate(
    "socket_ifname",
    0.24,
    "NCCL picked a network interface that does not reach the other ranks "
    "(lo, docker0, a virtual bridge) or found none usable in the container",
    "the 'NET/Socket : Using' and 'Bootstrap : Using' lines of each rank with NCCL_DEBUG=INFO; set "
    "NCCL_SOCKET_IFNAME to the interface that carries the nodes' addresses (same name on every node)",
    up=("ifname_set", "bad_iface", "several_hosts", "container", "socket_only"),
    down=(),
)
_IB = Candidate(
    "ib_misconfig",
    0.28,
    "the InfiniBand/RoCE set-up failed: a wrong NCCL_IB_GID_INDEX for RoCE, an "
    "HCA that is down or not the one wired to the peers, or a memlock limit too low to register memory",
    "ibv_devinfo (port state ACTIVE), show_gids (the RoCE v2 GID index of the routable address), "
    "ulimit -l (unlimited); NCCL_IB_DISABLE=1 makes it go away if this is it",
    up=("ib", "several_hosts", "ib_wanted"),
    down=("socket_only", "one_host"),
)
_VERSION = Candidate(
    "version_mismatch",
    0.14,
    "the nodes run different NCCL (or torch) builds, or an NCCL with a bug fixed in a later release",
    "python -c 'import torch; print(torch.__version__, torch.cuda.nccl.version())' on every node; try the newest NCCL",
    up=("several_hosts", "old_stack"),
    down=(),
)
_STORE = Candidate(
    "rendezvous_unreachable",
    0.1,
    "a rank could not reach another's port (a firewall between the nodes, or a peer that already died)",
    "nc -zv <peer> <port> from each node; the first rank that failed",
    up=("several_hosts",),
    down=("one_host",),
)

CANDIDATES = {
    "system": (
        _IB,
        _SHM,
        _IFNAME,
        _VERSION,
        _STORE,
        Candidate(
            "oom_or_resource",
            0.15,
            "an OS limit was hit (open files, locked memory, processes): each rank holds sockets and "
            "descriptors for its peers, so limits that pass at 8 ranks fail at hundreds",
            "ulimit -a in the job's environment (open files at least 1048576, locked memory unlimited)",
            up=("many_ranks",),
            down=(),
        ),
    ),
    "internal": (
        Candidate(
            "version_mismatch",
            0.3,
            "NCCL met a state it does not handle: an NCCL too old for the GPUs or "
            "topology (Hopper/Blackwell paths), or nodes on different NCCL builds",
            "torch.cuda.nccl.version() on each node against the GPU's release; try the newest NCCL",
            up=("old_stack", "new_gpu", "several_hosts"),
            down=(),
        ),
        Candidate(
            "socket_ifname",
            0.22,
            "the bootstrap found no usable socket interface",
            "the 'Bootstrap : Using' line; set NCCL_SOCKET_IFNAME",
            up=("ifname_set", "bad_iface", "container"),
            down=(),
        ),
        Candidate(
            "nccl_env_override",
            0.16,
            "an NCCL_TOPO_FILE / NCCL_GRAPH_FILE (often from /etc/nccl.conf or the VM image) describes another machine",
            "env | grep NCCL_ and cat /etc/nccl.conf; unset them",
            up=("topo_env",),
            down=(),
        ),
        Candidate(
            "p2p_topology",
            0.14,
            "NCCL could not build paths between the GPUs (P2P not possible, virtualised PCIe topology)",
            "nvidia-smi topo -m; NCCL_P2P_DISABLE=1",
            up=("p2p_disabled", "consumer_gpu", "one_host", "p2p_denied"),
            down=(),
        ),
        _IB,
    ),
    "remote": (
        Candidate(
            "driver_or_hardware",
            0.26,
            "the peer process died under NCCL (a GPU that fell off, an Xid, a node reboot)",
            "dmesg | grep -i xid and nvidia-smi on the peer's node; the peer's own log",
            up=("new_gpu",),
            down=(),
        ),
        _IB,
        Candidate(
            "oom_or_resource",
            0.2,
            "the peer was killed (host OOM killer, CUDA OOM on that rank)",
            "the peer's log and dmesg | grep -i 'killed process'",
            up=(),
            down=(),
        ),
        _IFNAME,
        Candidate(
            "p2p_pairing",
            0.08,
            "a peer sent more than this rank posted to receive (all-to-all split tables or send/recv sizes that do not "
            "pair) and the transfer was torn down",
            "each rank's send and receive sizes for the exchange (input/output splits): what a sends to b must be what b "
            "expects from a",
            up=("splits_shown", "p2p_code"),
        ),
    ),
    "cuda": (
        Candidate(
            "driver_or_hardware",
            0.3,
            "the driver or the GPU refused a call NCCL needs (a node in a bad "
            "state, fabric manager not running on an NVSwitch box, NVLS multicast unavailable)",
            "nvidia-smi -q | grep -i -A2 fabric, systemctl status nvidia-fabricmanager, dmesg | grep -i xid on "
            "the failing node; NCCL_NVLS_ENABLE=0 if the WARN names NVLS",
            up=("new_gpu", "several_hosts"),
            down=("old_stack", "old_gpu"),
        ),
        Candidate(
            "version_mismatch",
            0.26,
            "the NCCL in use has no kernels for this GPU (built for another compute "
            "capability, an NCCL 1.x / pre-2.8 build on a newer GPU, or a torch wheel for another CUDA)",
            "the 'Cuda failure' line (named symbol not found / no kernel image); torch.cuda.get_arch_list() "
            "against the GPU's sm_XX; install a torch/NCCL built for it",
            up=("old_stack", "old_gpu"),
            down=(),
        ),
        Candidate(
            "oom_or_resource",
            0.2,
            "a CUDA allocation inside NCCL failed (the model filled the GPU before NCCL allocated its buffers)",
            "the 'Cuda failure ... out of memory' line; nvidia-smi memory at the failure",
            up=(),
            down=("old_gpu",),
        ),
        Candidate(
            "p2p_topology",
            0.12,
            "enabling peer access or IPC between GPUs failed",
            "nvidia-smi topo -p2p r; NCCL_P2P_DISABLE=1",
            up=("consumer_gpu", "p2p_disabled", "p2p_denied"),
            down=(),
        ),
    ),
    "reset": (
        Candidate(
            "oom_or_resource",
            0.22,
            "the peer process died (killed by the OOM killer or a CUDA OOM) and its sockets were closed",
            "the first rank that failed and dmesg on its node",
            up=(),
            down=(),
        ),
        Candidate(
            "rendezvous_unreachable",
            0.22,
            "the store host (rank 0) exited or restarted, so every client's connection to it broke",
            "rank 0's own log; whether it exited first",
            up=("several_hosts",),
            down=(),
        ),
        Candidate(
            "driver_or_hardware", 0.16, "a node or GPU failed under the job", "dmesg | grep -i xid", up=("new_gpu",), down=()
        ),
        _IFNAME,
    ),
    "invalid_usage": (
        Candidate(
            "device_mapping",
            0.26,
            "two ranks drive the same GPU, or a tensor is on another GPU than the rank's own",
            "torch.cuda.set_device(LOCAL_RANK) before init_process_group, device_id=...",
            up=(),
            down=(),
        ),
        Candidate(
            "rank_world_size_mismatch",
            0.22,
            "more processes than GPUs on a node",
            "nproc_per_node against nvidia-smi -L",
            up=("one_host",),
            down=(),
        ),
        Candidate(
            "p2p_pairing",
            0.18,
            "a send/recv group NCCL refuses (a peer out of range, zero-size or unpaired operations)",
            "the send/recv plan of each rank",
            up=(),
            down=(),
        ),
        Candidate(
            "collective_desync",
            0.14,
            "ranks call different collectives or shapes",
            "TORCH_DISTRIBUTED_DEBUG=DETAIL",
            up=(),
            down=(),
        ),
    ),
    "hang": (
        Candidate(
            "p2p_topology",
            0.3,
            "GPU peer-to-peer traffic stalls on this host: PCIe ACS or the IOMMU "
            "(VT-d/AMD-Vi) reroutes or blocks P2P, or P2P across CPU sockets does not work",
            "NCCL_P2P_DISABLE=1 (the hang goes away if this is it); lspci -vvv | grep ACSCtl; "
            "dmesg | grep -i -e DMAR -e IOMMU; nvidia-smi topo -m",
            up=("one_host", "consumer_gpu", "old_gpu", "p2p_denied"),
            down=("p2p_disabled", "several_hosts"),
        ),
        Candidate(
            "ib_misconfig",
            0.22,
            "the InfiniBand/RoCE path between the nodes does not carry traffic (GID index, HCA choice, ACS in the GDR path)",
            "NCCL_IB_DISABLE=1 to see if it moves; ib_write_bw between the nodes",
            up=("ib", "several_hosts", "ib_wanted"),
            down=("one_host", "socket_only"),
        ),
        Candidate(
            "socket_ifname",
            0.2,
            "NCCL's socket transport connects over an interface the peers cannot reach",
            "the 'NET/Socket : Using' lines; NCCL_SOCKET_IFNAME",
            up=("several_hosts", "bad_iface", "socket_only"),
            down=("one_host",),
        ),
        Candidate(
            "p2p_pairing",
            0.1,
            "the program's own sends and receives do not pair: two ranks that both send first with blocking "
            "send() (large messages do not complete until the peer receives), or a recv no rank sends to",
            "the order of each rank's send/recv calls; post both with batch_isend_irecv, or have one side receive first",
            up=("send_recv", "p2p_code"),
        ),
        Candidate(
            "shm_too_small",
            0.12,
            "shared-memory transport between the local ranks stalled",
            "NCCL_SHM_DISABLE=1; df -h /dev/shm",
            up=("container", "shm_small"),
            down=("shm_disabled",),
        ),
    ),
    "kernel_fault": (
        Candidate(
            "version_mismatch",
            0.28,
            "a bug of the NCCL release in use: faults in NCCL's own kernels (NVLS, cuMem, LL128 paths) were fixed in "
            "point releases",
            "the NCCL version line; rerun with the newest NCCL for this CUDA (the nvidia-nccl-cu12 wheel) or with "
            "NCCL_NVLS_ENABLE=0 / NCCL_PROTO=^LL128 to see whether the fault follows the path",
            up=("new_gpu",),
        ),
        Candidate(
            "driver_or_hardware",
            0.24,
            "the GPU or its memory faulted (an Xid 48/79/94 or ECC error in the kernel log), not the program",
            "dmesg | grep -i xid and nvidia-smi -q -d ECC on the node; a fault that moves with the node, not the rank",
            up=("several_hosts",),
        ),
        Candidate(
            "collective_desync",
            0.2,
            "ranks passed a collective buffers of different sizes, so one rank wrote past the end of another's",
            "TORCH_DISTRIBUTED_DEBUG=DETAIL compares every collective's shapes across ranks",
        ),
    ),
}
# every rank in the job's first collective and none coming back: a transport that does not carry the first transfers,
# the causes of a stop with no error
CANDIDATES["first_collective"] = CANDIDATES["hang"]
CANDIDATE_KIND_TITLES = {
    "system": "unhandled system error",
    "internal": "internal error",
    "remote": "remote error",
    "cuda": "unhandled cuda error",
    "reset": "a closed connection",
    "invalid_usage": "invalid usage",
    "hang": "a hang with no error (a stop after NCCL's set-up, or one someone reports)",
    "first_collective": "every rank timed out together in the job's first collective",
    "kernel_fault": "a GPU kernel fault",
}
_STEP = 0.12  # how much one fact for or against moves a candidate


def rank_candidates(kind: str, facts: set) -> list[tuple[Candidate, float, list[str]]]:
    """The candidates of ``kind`` as (candidate, score, facts that moved it), most likely first."""
    out = []
    for c in CANDIDATES.get(kind, ()):
        score, moved = c.weight, []
        for f in c.up:
            if f in facts:
                score += _STEP
                moved.append(f)
        for f in c.down:
            if f in facts:
                score -= _STEP
                moved.append("not " + f)
        out.append((c, max(score, 0.01), moved))
    out.sort(key=lambda t: -t[1])
    return out


# the variables that size NCCL's per-channel buffers (their product with the channels and peers is its GPU memory)
_BUFFER_VARS = ("NCCL_BUFFSIZE", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_NCHANNELS", "NCCL_MIN_CTAS", "NCCL_MAX_CTAS")


# ---- a fact that settles which of a signature's categories holds -------------
# (signature ids, fact, category): the first rule whose fact holds and whose category is the
# signature's own or one of its ``also`` wins
PREFER = (
    # the work that timed out is a send or a receive (torch's older wording, with no SeqNum for the cross-rank
    # reading): its peer never posted the other half
    (("watchdog_timeout", "timeout_at_nccl_work"), "p2p_timed_out", "p2p_pairing"),
    # the job's first collectives timed out on GPUs that say they have no peer access (torch's answer, nvidia-smi's
    # matrix) or that are consumer cards (whose drivers may advertise P2P they do not carry): the P2P path NCCL set up
    # between them does not carry data
    (("watchdog_timeout",), "p2p_denied_early", "p2p_topology"),
    (("watchdog_timeout", "timeout_at_nccl_work"), "finished", "collective_desync"),
    (("watchdog_timeout", "timeout_at_nccl_work"), "rank_guarded_collective", "collective_desync"),
    (("watchdog_timeout", "timeout_at_nccl_work"), "busy", "slow_rank_timeout"),
    (("watchdog_timeout", "timeout_at_nccl_work"), "early_barrier", "slow_rank_timeout"),
    # an all-to-all is a send and a receive per pair of ranks, each of the size its split tables say: one that does
    # not complete is split tables that do not pair (a rank expecting more rows than its peer sends) before a rank
    # that is late
    (("watchdog_timeout", "timeout_at_nccl_work"), "alltoall_waits", "p2p_pairing"),
    # (the same where the timeout names no op but the paste prints the all-to-all's split tables before it)
    (("watchdog_timeout", "timeout_at_nccl_work"), "splits_shown", "p2p_pairing"),
    (("nccl_unique_id_store_timeout",), "device_unknown", "device_mapping"),
    (("nccl_unique_id_store_timeout",), "busy", "slow_rank_timeout"),
    # the unique id of a pair's communicator, which torch makes at the pair's first send/recv: the peer never
    # called the matching recv/send
    (("nccl_unique_id_store_timeout",), "send_recv", "p2p_pairing"),
    # all the processes (or three or more) on one GPU, as nvidia-smi's process table or NCCL's duplicate pairs show:
    # no process set its device, whatever the counts
    (("duplicate_gpu", "cuda_oom", "cuda_oom_in_nccl"), "ranks_pile_on_one_gpu", "device_mapping"),
    # the launcher starts more processes per node than CUDA_VISIBLE_DEVICES lists GPUs, or at most as many: the
    # counts say which of the two ways to put two ranks on one GPU (or ask for one past the last) it was
    (("duplicate_gpu", "invalid_device_ordinal"), "oversubscribed", "rank_world_size_mismatch"),
    # a list index out of range where the code indexes the node's GPUs by the local rank: more processes than GPUs
    (("list_index_out_of_range",), "gpu_list_by_local_rank", "rank_world_size_mismatch"),
    (("duplicate_gpu", "invalid_device_ordinal"), "one_gpu_per_process", "device_mapping"),
    (("duplicate_gpu", "invalid_device_ordinal"), "device_unknown", "device_mapping"),
    (("duplicate_gpu", "invalid_device_ordinal", "cuda_oom", "cuda_oom_in_nccl"), "device_not_local", "device_mapping"),
    # an object collective's bytes go to current_device(): out of memory there, or two ranks on one GPU, is every
    # process on cuda:0 (no set_device), not a model too large
    (("duplicate_gpu", "cuda_oom", "cuda_oom_in_nccl"), "object_collective", "device_mapping"),
    (("invalid_device_ordinal",), "rank0_bad_ordinal", "device_mapping"),
    # several processes holding memory on the GPU that ran out: ranks placed on one GPU (torch.load without
    # map_location, no set_device), not a model too large for its GPU
    (("cuda_oom",), "processes_share_gpu", "device_mapping"),
    # NCCL ran out of GPU memory for its own buffers while the run sets their size or count (a site profile's
    # NCCL_BUFFSIZE, forced channels): the setting asks for the memory
    (("cuda_oom_in_nccl",), "buffers_tuned", "nccl_env_override"),
    # NCCL's proxy lost a rank while a system resource ran out in the same run (a thread, memory): that is why
    (("proxy_service_accept_failed",), "resource_exhausted", "oom_or_resource"),
    (("topology_xml_unreadable", "topology_path_not_found", "topology_node_not_found"), "topo_env", "nccl_env_override"),
    # NCCL tries P2P only where its topology says the GPUs can: with a topology file from the environment, a refused
    # peer access is the file describing other hardware (a base image's file for another machine)
    (("peer_access_unsupported",), "topo_env", "nccl_env_override"),
    (("topology_xml_unreadable", "topology_path_not_found", "topology_node_not_found"), "net_plugin", "version_mismatch"),
    (("store_barrier_timeout",), "over_joined", "rank_world_size_mismatch"),
    (("socket_init_family_0",), "ifname_set", "socket_ifname"),
    (("gloo_op_timeout",), "p2p_ops", "p2p_pairing"),
    # more bytes than posted, in a program that picks its peers and sizes itself (all-to-all splits, send/recv)
    (("net_message_truncated",), "p2p_ops", "p2p_pairing"),
    (("net_message_truncated",), "p2p_code", "p2p_pairing"),
    # (or where the paste prints the split sizes or counts each rank sends and receives)
    (("net_message_truncated",), "splits_shown", "p2p_pairing"),
    # more bytes than posted in a collective the paste's code calls (no send/recv of its own): the ranks passed it
    # tensors of different sizes (an all_gather of per-rank lengths)
    (("net_message_truncated",), "collective_code", "collective_desync"),
    # "NET/IB : No device found" is harmless only where nobody meant to use IB: with NCCL_IB_HCA set or an HCA
    # on the node, NCCL did not find the HCAs it was told to use
    (("ib_no_device_found", "libibverbs_missing"), "ib_wanted", "ib_misconfig"),
    (("socket_connect_failed", "network_unreachable"), "peer_silent_on_own_network", "rendezvous_unreachable"),
    # a host firewall or a security group the paste shows beside a connection that failed: it drops NCCL's ports
    (("socket_connect_failed", "network_unreachable"), "firewall", "rendezvous_unreachable"),
    # a network NCCL was told to use (NCCL_NET) that this node lacks, beside an NCCL configuration file: the file
    # (a base image's /etc/nccl.conf) forces it, not the job
    (("net_plugin_required_missing",), "conf_file", "nccl_env_override"),
    # the same, forced by NCCL_NET from the environment (a job manifest, an image): unsetting it is the fix
    (("net_plugin_required_missing",), "net_forced", "nccl_env_override"),
    # a feature refused by a driver older than the CUDA the NCCL was built for: the versions do not go together
    (("cuda_operation_not_supported",), "driver_behind_cuda", "version_mismatch"),
    # NVLS's set-up failed where the paste names the fabric (its manager restarted, its state): the fabric; else one
    # that failed for want of memory is NCCL's NVLS buffers (hundreds of MB to GBs per communicator) not fitting
    (("nvls_failure",), "fabric_named", "driver_or_hardware"),
    (("nvls_failure",), "nvls_out_of_memory", "oom_or_resource"),
    # CUDA refused the P2P transport's buffer set-up where the platform shows no peer access (nvidia-smi's CNS/GNS,
    # torch's can_device_access_peer False, consumer cards): the GPUs' path, not the NCCL release's cuMem bugs
    (("p2p_cuda_invalid_argument",), "p2p_denied", "p2p_topology"),
    (("p2p_cuda_invalid_argument",), "consumer_gpu", "p2p_topology"),
    # a feature refused in NVLS's multicast set-up: the NVSwitch fabric (fabric manager, driver) does not offer it
    (("cuda_operation_not_supported",), "nvls_call", "driver_or_hardware"),
    # a feature refused while NCCL uses the cuMem API: the NCCL and driver do not agree on it
    (("cuda_operation_not_supported",), "cumem", "version_mismatch"),
)


def preferred_category(sig_id: str, own: str, also: tuple, facts: set) -> str:
    """The category of ``sig_id`` that the log's facts settle (``own`` when none does)."""
    allowed = (own,) + tuple(also)
    for ids, fact, cat in PREFER:
        if sig_id in ids and fact in facts and cat in allowed:
            return cat
    return own
