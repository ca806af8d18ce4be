"""Pick the environment variables that shape NCCL and torch.distributed, and
redact anything that looks like a secret before it is stored.

A snapshot must be safe to paste in a public issue, so redaction happens
here, at collection time, not when the snapshot is shown.
"""
from __future__ import annotations

import re
from typing import Mapping, Optional

REDACTED = "<redacted>"

# Whole families that configure NCCL, torch, CUDA, the rendezvous and the
# fabrics NCCL's net plugins use (libfabric/EFA).
PREFIXES = (
    "NCCL_", "TORCH_", "TORCHELASTIC_", "CUDA_", "MASTER_", "GLOO_",
    "OMPI_COMM_WORLD_", "FI_", "NVIDIA_",
)

# Single names: the launcher's rank variables and the library search path.
NAMES = frozenset({
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK",
    "GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE",
    "LD_LIBRARY_PATH", "LD_PRELOAD",
    # Slurm: which task, on which node, of how many
    "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_NTASKS_PER_NODE",
    "SLURM_TASKS_PER_NODE", "SLURM_NODEID", "SLURM_NNODES", "SLURM_JOB_NUM_NODES",
    "SLURM_JOB_NODELIST", "SLURM_NODELIST", "SLURM_JOB_ID", "SLURM_STEP_ID",
    "SLURM_STEP_NUM_TASKS", "SLURM_GPUS_ON_NODE", "SLURM_GPUS_PER_NODE",
    "SLURM_JOB_GPUS", "SLURM_STEP_GPUS", "SLURM_CPUS_PER_TASK", "SLURMD_NODENAME",
    # PMI / PMIx (MPICH, Intel MPI, Open MPI under srun)
    "PMI_RANK", "PMI_SIZE", "PMI_LOCAL_RANK", "PMIX_RANK",
    "MPI_LOCALRANKID", "MPI_LOCALNRANKS",
})

_SECRET_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")

# scheme://user:password@host -> scheme://user:<redacted>@host
_URL_PASSWORD = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]*):[^\s@/]*@")


def is_secret_name(name: str) -> bool:
    """True for names whose value is a credential (``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY``)."""
    upper = name.upper()
    return any(word in upper for word in _SECRET_WORDS)


def redact(name: str, value: str) -> str:
    """The value to store for ``name``: ``"<redacted>"`` when the name looks
    like a secret, else ``value`` with passwords inside URLs replaced."""
    if is_secret_name(name):
        return REDACTED
    return _URL_PASSWORD.sub(rf"\1:{REDACTED}@", value)


def redact_env(environ: Mapping[str, str]) -> dict[str, str]:
    """Every variable of ``environ``, redacted (see :func:`redact`)."""
    return {str(k): redact(str(k), str(v)) for k, v in environ.items()}


def is_relevant(name: str) -> bool:
    """True for the variables a snapshot keeps (NCCL_*, rank variables, ...)."""
    return name in NAMES or name.startswith(PREFIXES)


def select_env(environ: Optional[Mapping[str, str]] = None) -> dict[str, str]:
    """The relevant variables of ``environ`` (default ``os.environ``), sorted
    by name and redacted."""
    if environ is None:
        import os

        environ = os.environ
    return {k: redact(k, v) for k, v in sorted(environ.items()) if is_relevant(k)}
