"""The doctor's knowledge base: one JSON record per failure signature.

Each ``signatures/<id>.json`` holds ``id``, ``category`` (one of
:data:`ncclnb.model.CATEGORIES`), ``severity``, ``confidence``, ``title``,
``patterns`` (regexes on the normalised message, anchored on stable
substrings), ``cause``, ``fix``, ``docs`` and optional ``also`` (other
categories the same lines are consistent with), ``benign`` (a fallback NCCL
recovers from: info, never above a real error), ``blame`` (whom the finding
blames: see :data:`BLAME`), ``consequence`` (a wrapper or
cascade that says something failed, not why), ``suspect`` (a setting that is
only a cause when something else failed) and ``once_per_message`` (a benign
line every process prints alike: the first line of each message is read, the
same message again is not, so that thousands of ranks cost one line each
message). Beside each record, ``<id>.log``
holds lines marked ``# ncclnb: hit`` / ``# ncclnb: miss``.

Patterns use the subset of regex syntax that ``grep -E`` also understands
(``[0-9]`` rather than ``\\d``; ``(?:``, ``(?P<name>`` are rewritten on
export), so the benchmark can time grep on the very same patterns.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import lru_cache, cache
from typing import Iterable, Optional

from ..errors import InputError
from ..model import CATEGORIES, SEVERITIES

SIGNATURE_DIR = os.path.join(os.path.dirname(__file__), "signatures")
FIXTURE_MARK = re.compile(r"\s+# ncclnb: (hit|miss)\s*$")

# The prefilter. The scanner only reads lines that contain one of these plain
# substrings (case-sensitive; searched over whole chunks in C, never per line).
# Every literal run that a signature pattern or a cross-rank reasoning pattern
# requires contains one of them (``pattern_covered``; the knowledge-base lint
# test checks every pattern and every fixture hit line), so a line that a
# pattern can match is never skipped. Each is rare in healthy NCCL_DEBUG=INFO
# output: broad words ("rror", "ail") stand for many signatures, specific
# phrases for the INFO-level lines that carry no error word.
# the triggers of a line that says the run went on (a step, a loss, a rate, a bandwidth figure): once the log has
# shown one, a line that holds only these tells nothing more (match.Matcher.line passes it by)
# (and of a server that came up and serves: uvicorn's banner, an engine's throughput report)
PROGRESS_TRIGGERS = (
    "'loss'",
    "loss:",
    "loss=",
    "it/s,",
    # a bare progress bar (tqdm with no postfix: "1.12it/s]"), by the digit before its rate (a trigger must not hold
    # "]": scan's bulk path splits lines at the first one)
    *(f"{d}it/s" for d in "0123456789"),
    *(f"{d}s/it" for d in "0123456789"),
    "s/it,",
    "busbw",
    "step ",
    "Step ",
    "step=",
    "PerSec=",
    "teration ",
    "Uvicorn running on",
    "tokens/s",
)

TRIGGERS = (
    # error words
    "Error",
    "error",
    "failed",
    "Failed",
    "failure",
    "unavailable",
    "NCCL_NET",
    "imeout",
    "imed out",
    "Abort",
    "abort",
    "nvalid",
    "ismatch",
    "inconsisten",
    # cross-rank reasoning
    "NCCL version",
    "localRanks",
    "WorkNCCL(",
    "GLOBAL_RANK",
    "ncclnb guard:",
    "ncclnb preflight",
    "enqueued ",
    "distributed_c10d.py",
    # sockets, store, rendezvous
    "reset by peer",
    "closed by",
    "refused",
    "servname",
    "ADDRINUSE",
    "already in use",
    "family 0",
    "not receive type",
    "ncclUniqueId",
    # CUDA, driver, memory
    "ut of memory",
    "bad_alloc",
    "CPUAllocator",
    "ot yet init",
    "insufficient",
    "too old",
    "forward compatibility",
    "CompatNotSupported",
    "COMPAT_NOT_SUPPORTED",
    "CUDA-capable",
    "Found no",
    "peer access",
    "peer mapping",
    "allocate shared memory",
    "open files",
    "_FILE",
    "EMFILE",
    # GPUs, ranks, devices
    "Duplicate GPU",
    "ultiple ",
    "rank < size",
    "perform barrier",
    "Guessing device",
    "fallen off the bus",
    "device handle for GPU",
    "NVRM: Xid",
    "DMAR:",
    "AMD-Vi",
    "is running ",
    "ensor",
    "backend type",
    "SIGKILL",
    "exitcode",
    "got stuck",
    # NCCL transports, plugins, topology
    "Got completion",
    "IBV_WC_",
    "reg_mr",
    "dmabuf_mr",
    "create_qp",
    "create_cq",
    "alloc_pd",
    "device found",
    "plugin found",
    "interface",
    "shared object",
    "undefined symbol",
    "nccl.conf",
    "opCount",
    "ot found",
    "not find a ",
    "open XML",
    # every NCCL WARN line, with or without NCCL's prefix (an unrecognised one still counts: priors.WARN_SOURCES)
    "WARN ",
    # lines that carry a fact of the run which decides between causes (priors.LogContext)
    "NET/IB : Using",
    "NET/IB: Using",
    "Using network",
    "Bootstrap : ",
    "Bootstrap: ",
    "NET/Socket",
    "set by environment",
    "NET/OFI",
    "Tesla",
    "GeForce",
    " H100",
    " H200",
    " H800",
    "GH200",
    " B200",
    "NVSwitch",
    "NVLS ",
    "abric manager",
    "abric Manager",
    "Using devices",
    "nGpus ",
    "compiled with NCCL",
    "NCCL Error ",
    "--host",
    "mpirun",
    "--nnodes",
    "nNodes",
    " Pid  ",
    "heckpoint",
    "retry loop",
    "wandb: Network error",
    "reprocess",
    "okeniz",
    "Clustering",
    "ndexing",
    "Building index",
    "fit` stopped",
    "raining completed",
    "arly stopping",
    "Trainer to stop",
    "Out of bounds values",
    "Avg bus bandwidth",
    "Destroy COMPLETE",
    "Setting affinity",
    "Launch mode",
    "out-of-place",
    "Trees [",
    "SOCKET_IFNAME",
    "NCCL_IB_",
    "mlx5_",
    # NCCL RAS (ncclras) naming the ranks it could not reach; the NVSwitch driver's errors in the kernel log
    "missing rank",
    "joining collective",
    "EmptyDir volume",
    "not permitted",
    "cudaErrorNotPermitted",
    "Mismatched",
    "Verification error @",
    "does not contain rank",
    "required GPUs exceeds",
    "placement group of specs",
    "Unable to register memory",
    "_MISMATCH",
    "does not match found",  # torch's flight-recorder analyzer: "Expected input sizes: ... does not match found ..."
    "communicator data",
    "launched up to operation",
    "not launched any operations",
    "SXid (",
    # wordings of the failure families (arch/build, NVLS/fabric, verbs, RoCE GIDs, memlock, name resolution, ports,
    # the store, device mapping, shm, P2P/ACS/IOMMU, bootstrap checks, topology)
    "kernel image",
    "not compatible",
    "NOT_READY",
    "fabricmanager",
    "Fabric State",
    "cuMulticast",
    "NVLink SHARP",
    "retry counter",
    "ncclIbRoce",
    "ncclIbGetGid",
    "ibv_query_gid",
    "GID index",
    "gid_attrs",
    "RLIMIT_MEMLOCK",
    "memory registrations",
    "locked memory",
    "memlock",
    "Unable to open",
    "Unable to query",
    "Got async",
    "getaddrinfo",
    "No address associated",
    "ame or service",
    "nknown host",
    "not resolve",
    "to resolve",
    "gaierror",
    "errno: 98",
    "Errno 98",
    "errno 98",
    "errno: 24",
    "Errno 24",
    "No route to host",
    "unreachable",
    "find address",
    "wrong magic",
    "wrong type",
    "runcated",
    "checked in",
    "store based barrier",
    "TCPStore(",
    "_create_c10d_store",
    "_rendezvous_handler",
    "_create_tcp_store",
    "currently unknown",
    "device_id",
    "CUDA_VISIBLE_DEVICES",
    "device_ids and output_device",
    "to self without",
    "should not be the same as the rank",
    "from self without",
    "libnccl-net",
    "nccl_net_ofi_",
    "rdma-sharp-plugins",
    "rdma_sharp_plugin",
    "aws-ofi-nccl",
    # a driver and a CUDA that do not go together (CUDA error 803; an NGC container's banner)
    "DRIVER_MISMATCH",
    "DriverMismatch",
    "driver combination",
    "was built for NVIDIA Driver",
    # torch's env:// rendezvous refusing a rank (older wording)
    "WORLD_SIZE (",
    " is out of range",
    # an all-to-all's split sizes that do not add up (torch's check)
    "Split sizes doesn",
    # a flight-recorder entry pasted as text
    "profiling_name",
    # pasted code: a branch only rank 0 takes, and a collective called in it
    "is_global_zero",
    "is_main_process",
    "_process_zero",
    "rank == 0",
    "rank==0",
    "rank() == 0",
    "sync_dist=True",
    "all_reduce(",
    "all_gather(",
    "barrier(",
    "broadcast(",
    # a hang as Chinese, Japanese and Korean reporters write it (卡死, 卡住, ハング, フリーズ, 멈춰, 멈춤)
    "\u5361\u6b7b",
    "\u5361\u4f4f",
    "\u30cf\u30f3\u30b0",
    "\u30d5\u30ea\u30fc\u30ba",
    "\uba48\ucdb0",
    "\uba48\ucda4",
    # nvidia-smi topo -p2p: a pair without peer-to-peer support (between separators; a symmetric matrix has one)
    " CNS ",
    " GNS ",
    " TNS ",
    "\tCNS\t",
    "\tGNS\t",
    "\tTNS\t",
    "tasks per node configured",
    "connectFullMesh",
    "pair.cc",
    "subset of ranks",
    "Connect to",
    "connect [",
    "device_count",
    "num_local_procs",
    "Driver Version",
    # a paste's statement of its machine's GPUs ("2x RTX 3090", "8 x A100"): priors._GPUS_STATED
    # (letters in each: a trigger of digits alone would flag every pid and address that holds them)
    "x RTX",
    "x A100",
    "x H100",
    "x A800",
    "x H800",
    "x V100",
    "x L40S",
    "x A6000",
    "xA100",
    "xH100",
    "Kernel Module",
    "firewall",
    "all_to_all",
    "alltoall",
    ".isend(",
    ".irecv(",
    "dist.send(",
    "dist.recv(",
    "ProcessGroupNCCL::send(",
    "ProcessGroupNCCL::recv(",
    "iptables",
    "ufw status",
    "ufw allow",
    "Chain INPUT",
    "ecurity group",
    "--gres",
    "--gpus-per-node",
    "--gpus-per-task",
    # an all-to-all's split sizes printed before the call
    "_splits=",
    "_splits:",
    "split_sizes",
    "_splits =",
    "Inconsistent compute device",
    "MiB |",
    "set_device(",
    "cuda:{",  # code picking a device by an expression (f"cuda:{rank}"): priors' device facts
    "DDP expects same model",
    "appears not to match",
    "send_counts",  # an all-to-all's counts as a script prints them (priors' splits_shown)
    "recv_counts",
    "cudaDriverVersion",  # the CUDA version the driver supports (priors' driver_behind_cuda)
    "uilding the indices",  # rank-0-only work (priors' busy): Megatron's index maps
    "loader)",  # a rank's len(loader): its batches per epoch (rank_count)
    "NCCL_ERROR_",  # NCCL's result codes as other bindings print them (CuPy's NcclError)
    "Unexpected task registered",  # JAX's coordination service refusing a task
    "IndexError",
    "other workers",  # fairseq's workers out of sync
    "fallen out of sync",
    "enter the function together",
    "PET_NNODES",  # torchrun's options as environment (reason.LAUNCH)
    "PET_NPROC_PER_NODE",
    "[hvd.local_rank",  # code indexing the node's GPUs by the local rank (priors' gpu_list_by_local_rank)
    "[args.local_rank",
    "[self.local_rank",
    "[local_rank",
    "ncclSend(",  # point-to-point calls in pasted code (priors' send_recv): NCCL's C API, CuPy's communicator
    "ncclRecv(",
    "comm.send(",
    "comm.recv(",
    "Coordination agent",  # TensorFlow's and JAX's coordination service
    "shuffle buffer",  # a task still filling TensorFlow's shuffle buffer (priors' busy)
    "Broken pipe",
    "No space left",
    "ACSCtl",
    "Translated",
    "PeerAccess",
    "IpcOpenMemHandle",
    "Could not find",
    "could not find",
    "Loading topology",
    "Loading graph",
    "cannot be retrieved",
    # counts each rank prints that every rank should share (rank_count: a desync's tie-break)
    " batches",
    "training examples",
    "training samples",
    "iterations per epoch",
    "ataset length",
    "ataset size",
    "len(dataset)",
    "num_batches",
    "steps_per_epoch",
    "umber of batches",
    "atches per epoch",
    "teps per epoch",
    # plugin fallbacks of NCCL >= 2.19 ("NET/Plugin: Using internal network plugin."), bus errors and /dev/shm (df)
    "Using internal",
    "SIGBUS",
    "/dev/shm",
    # a collective NCCL cannot run with the algorithms/protocols it is allowed; the tuning variables an environment sets
    # (whole lines of a shell or nccl.conf: "export NCCL_PROTO=LL128")
    "algorithm/protocol",
    "export NCCL_",
    "NCCL_ALGO",
    "NCCL_PROTO",
    "NCCL_MIN_",
    "NCCL_MAX_",
    "NCCL_BUFFSIZE",
    "NCCL_LL",
    "NCCL_NTHREADS",
    "NCCL_CUMEM",
    "NCCL_NVLS",
    "NCCL_P2P_",
    "NCCL_COLLNET",
    "NCCL_CROSS_NIC",
    "NCCL_NCHANNELS",
    "_REGISTER",
    # a log with no error (priors.LogContext): set-up done, progress after it, or someone saying it stopped
    "Connected all",
    *PROGRESS_TRIGGERS,
    " hang",
    # (the same word after punctuation or at a line's start: "(hang, nothing after Init START)", "hangs forever")
    "hangs",
    "hangi",
    "(hang",
    "hang,",
    "hang.",
    "hang)",
    "hung ",
    "hung.",
    "hung,",
    "Hang ",
    "Hangs",
    "Hangi",
    " HANG",
    " hung",
    "stuck",
    "Stuck",
    "froze",
    "reezes",
    "never returns",
    "never finishes",
    "never completes",
    "KeyboardInterrupt",
    # stack dumps of a living process: py-spy ("Process 31207: python train.py", 'Thread 31207 (idle): "MainThread"',
    # "recv_backward (megatron/core/pipeline_parallel/p2p_communication.py:410)") and faulthandler; torch's own
    # isend/irecv frames hold "distributed_c10d.py" (bare "isend"/"irecv" flag too many windows of NCCL's INFO lines)
    "py-spy",
    "most recent call first",
    "Process 1",
    "Process 2",
    "Process 3",
    "Process 4",
    "Process 5",
    "Process 6",
    "Process 7",
    "Process 8",
    "Process 9",
    "(idle)",
    "(active",
    "P2POp",
    "_communicate",
    "recv_forward",
    "recv_backward",
    "send_forward",
    "send_backward",
    # two GPUs without peer access: torch's can_device_access_peer (and the REPL's answer under it), the CUDA samples
    "can_device_access_peer",
    "False",
    "CANNOT Access Peer",
    "Peer access from",
    # a launcher's process count (reason.LAUNCH): Slurm's and torchrun's options
    "--nodes",
    "--ntasks",
    "--nproc",
    "SLURM_NNODES",
    "SLURM_JOB_NUM_NODES",
    "SLURM_NTASKS",
    # a GPU kernel fault, as CUDA's runtime and driver APIs name it
    "illegal memory access",
    "ILLEGAL_ADDRESS",
    "IllegalAddress",
    "LaunchFailure",
    "LAUNCH_FAILED",
    "misaligned address",
    "MisalignedAddress",
    # a CUDA feature the driver or system lacks (cuMem shareable handles, IPC): the driver API's name, cuMem calls
    "NOT_SUPPORTED",
    "cuMem",
    # the rendezvous store's protocol (a reply a TCPStore client does not expect)
    "response is expected",
    "response expected",
    # the NCCL version as torch reports it, a tuple
    "NCCL (2,",
    "nccl (2,",
    "nccl version",
    "ccl.version()",
)


def _sre_parse():
    """The regex parser of the running Python (re._parser since 3.11, sre_parse before)."""
    try:
        from re import _parser as sre_parse  # Python >= 3.11
    except ImportError:  # pragma: no cover - Python 3.10
        import sre_parse  # type: ignore[no-redef]
    return sre_parse


def pattern_covered(pattern: str, triggers=TRIGGERS) -> bool:
    """True when every string ``pattern`` matches contains one of ``triggers``:
    some literal run the pattern requires (at top level, or in every branch of
    a required alternation) contains a trigger."""
    sre_parse = _sre_parse()
    return _seq_covered(list(sre_parse.parse(pattern)), tuple(triggers), sre_parse)


def _seq_covered(seq, triggers, sp) -> bool:
    run: list[str] = []
    for op, arg in seq + [(None, None)]:
        if op is sp.LITERAL:
            run.append(chr(arg))
            continue
        if run and any(t in "".join(run) for t in triggers):
            return True
        run = []
        if op is sp.SUBPATTERN and _seq_covered(list(arg[-1]), triggers, sp):
            return True
        if op is sp.BRANCH and all(_seq_covered(list(b), triggers, sp) for b in arg[1]):
            return True
        if op in (sp.MAX_REPEAT, sp.MIN_REPEAT) and arg[0] >= 1 and _seq_covered(list(arg[2]), triggers, sp):
            return True
    return False


_REQUIRED = ("id", "category", "severity", "confidence", "title", "patterns", "cause", "fix", "docs")
_OPTIONAL = {"also": list, "benign": bool, "consequence": bool, "suspect": bool, "blame": str, "once_per_message": bool}
# whom a signature's finding blames: the ranks that printed it (default), the
# ranks of the world size that never printed anything ("missing_ranks": the
# pattern's (?P<expected>) group or the known world size), the rank that
# hosts the rendezvous store ("store_host": rank 0, unless it fails the same way),
# or the ranks of the job that did not print it while others did ("silent_ranks":
# a timeout says its printer waited for a peer; the peers that did not time out
# are the ones it waited for); "values": nobody, the line is a count each rank
# prints that every rank should share (the pattern's (?P<what>) and (?P<value>)
# groups: batches, dataset length), kept per rank to break a desync tie
BLAME = ("printers", "missing_ranks", "store_host", "silent_ranks", "values")


class KnowledgeBaseError(InputError):
    """A signature record that is malformed (one line, names the file); a
    ValueError too, as InputError is."""


@dataclass(frozen=True)
class Signature:
    id: str
    category: str
    severity: str
    confidence: float
    title: str
    patterns: tuple[str, ...]
    cause: str
    fix: str
    docs: str
    also: tuple[str, ...] = ()
    benign: bool = False
    consequence: bool = False
    suspect: bool = False
    blame: str = "printers"
    once_per_message: bool = False

    @property
    def compiled(self) -> tuple:
        return _compile(self.patterns)

    def match(self, message: str):
        """First match of any pattern in ``message``, or None."""
        for literal, rx in self.compiled:
            if literal is not None and literal not in message:
                continue
            m = rx.search(message)
            if m:
                return m
        return None


@cache
def _compile(patterns: tuple[str, ...]) -> tuple:
    return tuple((required_literal(p), re.compile(p)) for p in patterns)


def required_literal(pattern: str) -> Optional[str]:
    """The longest literal run every match of ``pattern`` contains, or None.
    A cheap ``in`` test on it skips the regex for most candidate lines."""
    sre_parse = _sre_parse()
    try:
        parsed = sre_parse.parse(pattern)
    except re.error:
        return None
    best, run = "", []
    for op, arg in _inlined(parsed, sre_parse) + [(None, None)]:
        if op is sre_parse.LITERAL:
            run.append(chr(arg))
            continue
        if len(run) > len(best):
            best = "".join(run)
        run = []
    return best if len(best) >= 3 else None


def required_any(pattern: str, flags: int = 0) -> Optional[tuple[str, ...]]:
    """Literals of at least 3 characters one of which every match of ``pattern``
    contains (a literal run it requires, or one run from each branch of an
    alternation it requires), or None. Of the choices, the one whose shortest
    literal is longest, then the one with fewest literals. Where no single
    literal is required (``"Hangs?|Stuck"``), a few ``in`` tests still rule
    out most lines before the regex runs. None for a case-insensitive pattern
    (``flags`` holding re.IGNORECASE, or an inline flag)."""
    if flags & re.IGNORECASE:
        return None
    sre_parse = _sre_parse()
    try:
        parsed = sre_parse.parse(pattern)
    except re.error:
        return None
    if parsed.state.flags & re.IGNORECASE:
        return None
    return _seq_required(list(parsed), sre_parse)


def _inlined(items, sp) -> list:
    """The (op, arg) items of a parsed pattern with each group that has no flags of its own opened in place:
    its contents are part of the sequence around it (a literal run goes on through it)."""
    flat: list = []
    for op, arg in items:
        if op is sp.SUBPATTERN and not arg[1] and not arg[2]:
            flat.extend(_inlined(arg[3], sp))
        else:
            flat.append((op, arg))
    return flat


def _seq_required(seq: list, sp) -> Optional[tuple[str, ...]]:
    flat = _inlined(seq, sp)
    choices: list[tuple[str, ...]] = []
    run: list[str] = []
    for op, arg in flat + [(None, None)]:
        if op is sp.LITERAL:
            run.append(chr(arg))
            continue
        if run:
            choices.append(("".join(run),))
        run = []
        got: Optional[tuple[str, ...]] = None
        if op is sp.BRANCH:
            each = [_seq_required(list(b), sp) for b in arg[1]]
            if all(e is not None for e in each):
                lits = list(dict.fromkeys(lit for e in each for lit in e or ()))
                # a literal holding another one adds no line the other does not let through
                got = tuple(a for a in lits if not any(b != a and b in a for b in lits))
        elif op in (sp.MAX_REPEAT, sp.MIN_REPEAT) and arg[0] >= 1:
            got = _seq_required(list(arg[2]), sp)
        if got:
            choices.append(got)
    choices = [c for c in choices if min(map(_utf8_len, c)) >= 3]  # (bytes: two CJK characters are long enough)
    if not choices:
        return None
    return max(choices, key=lambda c: (min(map(_utf8_len, c)), -len(c)))


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def _load_record(path: str) -> Signature:
    name = os.path.basename(path)
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError) as exc:
        raise KnowledgeBaseError(f"{name}: not readable JSON ({exc})") from None
    if not isinstance(data, dict):
        raise KnowledgeBaseError(f"{name}: expected a JSON object")
    missing = [k for k in _REQUIRED if k not in data]
    if missing:
        raise KnowledgeBaseError(f"{name}: missing {'field' if len(missing) == 1 else 'fields'} {', '.join(missing)}")
    unknown = sorted(set(data) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        raise KnowledgeBaseError(f"{name}: unknown {'field' if len(unknown) == 1 else 'fields'} {', '.join(unknown)}")
    if data["id"] + ".json" != name:
        raise KnowledgeBaseError(f"{name}: id {data['id']!r} does not match the file name")
    if data["category"] not in CATEGORIES:
        raise KnowledgeBaseError(f"{name}: unknown category {data['category']!r}")
    if data["severity"] not in SEVERITIES:
        raise KnowledgeBaseError(f"{name}: unknown severity {data['severity']!r}")
    conf = data["confidence"]
    if isinstance(conf, bool) or not isinstance(conf, (int, float)) or not 0 <= conf <= 1:
        raise KnowledgeBaseError(f"{name}: confidence must be a number in 0..1")
    pats = data["patterns"]
    if not isinstance(pats, list) or not pats or not all(isinstance(p, str) and p for p in pats):
        raise KnowledgeBaseError(f"{name}: patterns must be a non-empty list of strings")
    for p in pats:
        try:
            re.compile(p)
        except re.error as exc:
            raise KnowledgeBaseError(f"{name}: pattern {p!r} does not compile: {exc}") from None
    for key, typ in _OPTIONAL.items():
        if key in data and not isinstance(data[key], typ):
            raise KnowledgeBaseError(f"{name}: {key} must be a {typ.__name__}")
    if data.get("blame", "printers") not in BLAME:
        raise KnowledgeBaseError(f"{name}: blame must be one of {', '.join(BLAME)}")
    if data.get("once_per_message") and not data.get("benign"):
        raise KnowledgeBaseError(f"{name}: once_per_message is for benign signatures only")
    for cat in data.get("also", ()):
        if cat not in CATEGORIES:
            raise KnowledgeBaseError(f"{name}: unknown category {cat!r} in also")
    return Signature(
        id=data["id"],
        category=data["category"],
        severity=data["severity"],
        confidence=float(conf),
        title=data["title"],
        patterns=tuple(pats),
        cause=data["cause"],
        fix=data["fix"],
        docs=data["docs"],
        also=tuple(data.get("also", ())),
        benign=bool(data.get("benign", False)),
        consequence=bool(data.get("consequence", False)),
        suspect=bool(data.get("suspect", False)),
        blame=data.get("blame", "printers"),
        once_per_message=bool(data.get("once_per_message", False)),
    )


@lru_cache(maxsize=8)
def load_signatures(folder: Optional[str] = None) -> tuple[Signature, ...]:
    """Every signature record in ``folder`` (default: the bundled knowledge
    base), sorted by id. Raises KnowledgeBaseError on a malformed record or a
    duplicate id."""
    folder = folder or SIGNATURE_DIR
    sigs = [_load_record(os.path.join(folder, n)) for n in sorted(os.listdir(folder)) if n.endswith(".json")]
    seen: set[str] = set()
    for s in sigs:
        if s.id in seen:
            raise KnowledgeBaseError(f"duplicate signature id {s.id!r}")
        seen.add(s.id)
    return tuple(sigs)


def fixture_lines(sig_id: str, folder: Optional[str] = None) -> list[tuple[int, str, str]]:
    """(line number, kind 'hit'/'miss', line without its marker) of a signature's fixture log."""
    path = os.path.join(folder or SIGNATURE_DIR, sig_id + ".log")
    out = []
    with open(path, encoding="utf-8") as fh:
        for no, line in enumerate(fh, 1):
            m = FIXTURE_MARK.search(line)
            if m:
                out.append((no, m.group(1), line[: m.start()]))
    return out


def signature_examples(*categories: str, ids: Iterable[str] = (), width: int = 110) -> list[dict]:
    """What each failure looks like in a log: one row per signature of
    ``categories`` (and per id in ``ids``), sorted by category and id, with
    its ``title`` and the first line its fixture must hit (``example line``,
    cut at ``width``). The guided notebooks' "cousins" tables read this."""
    wanted = set(ids)
    rows = []
    for sig in load_signatures():
        if sig.category not in categories and sig.id not in wanted:
            continue
        line = next((text.strip() for _, kind, text in fixture_lines(sig.id) if kind == "hit"), "")
        rows.append(
            {
                "category": sig.category,
                "signature": sig.id,
                "title": sig.title,
                "example line": line if len(line) <= width else line[: width - 1] + "…",
            }
        )
    return sorted(rows, key=lambda r: (r["category"], r["signature"]))


def to_grep(pattern: str) -> str:
    """Rewrite a knowledge-base regex into POSIX ERE for ``grep -E``."""
    out = pattern.replace("(?:", "(")
    out = re.sub(r"\(\?P<[A-Za-z_][A-Za-z0-9_]*>", "(", out)
    out = out.replace(r"\d", "[0-9]").replace(r"\s", "[[:space:]]").replace(r"\w", "[[:alnum:]_]")
    return out


def grep_patterns(sigs: Optional[tuple[Signature, ...]] = None) -> list[str]:
    """Every pattern of the knowledge base (and of the cross-rank reasoning),
    in grep -E syntax, one per entry."""
    from .reason import REASONING_PATTERNS

    pats = [p for s in (sigs or load_signatures()) for p in s.patterns] + list(REASONING_PATTERNS)
    return [to_grep(p) for p in pats]
