"""Pick the environment variables that shape NCCL and torch.distributed, and
redact anything that looks like a secret before it is stored.

A snapshot must be safe to paste in a public issue, so redaction happens
here, at collection time, not when the snapshot is shown. What counts as a
secret is :mod:`ncclnb.model.redact`, the one policy the doctor uses too:
secret names hide the whole value (``HF_TOKEN``, ``MASTER_PASS``,
``DB_PWD``; not ``PWD``/``OLDPWD``, which are paths, nor diagnostic
settings such as ``NCCL_IB_PKEY``), and any value has its passwords in URLs,
``?token=`` parameters, private keys and tokens of known shapes replaced.
"""

from __future__ import annotations

from typing import Mapping, Optional

from ..model.redact import REDACTED, is_secret_name, redact_mapping as redact_env, redact_value as redact

__all__ = ["PREFIXES", "NAMES", "REDACTED", "is_relevant", "is_secret_name", "redact", "redact_env", "select_env"]

# Whole families that configure NCCL, torch, CUDA, the rendezvous and the
# fabrics NCCL's net plugins use (libfabric/EFA).
PREFIXES = (
    "NCCL_",
    "TORCH_",
    "TORCHELASTIC_",
    "CUDA_",
    "MASTER_",
    "GLOO_",
    "OMPI_COMM_WORLD_",
    "FI_",
    "NVIDIA_",
)

# Single names: the launcher's rank variables and the library search path.
NAMES = frozenset(
    {
        "RANK",
        "LOCAL_RANK",
        "WORLD_SIZE",
        "LOCAL_WORLD_SIZE",
        "NODE_RANK",
        "GROUP_RANK",
        "GROUP_WORLD_SIZE",
        "ROLE_RANK",
        "ROLE_WORLD_SIZE",
        "LD_LIBRARY_PATH",
        "LD_PRELOAD",
        # Slurm: which task, on which node, of how many
        "SLURM_PROCID",
        "SLURM_LOCALID",
        "SLURM_NTASKS",
        "SLURM_NTASKS_PER_NODE",
        "SLURM_TASKS_PER_NODE",
        "SLURM_NODEID",
        "SLURM_NNODES",
        "SLURM_JOB_NUM_NODES",
        "SLURM_JOB_NODELIST",
        "SLURM_NODELIST",
        "SLURM_JOB_ID",
        "SLURM_STEP_ID",
        "SLURM_STEP_NUM_TASKS",
        "SLURM_GPUS_ON_NODE",
        "SLURM_GPUS_PER_NODE",
        "SLURM_JOB_GPUS",
        "SLURM_STEP_GPUS",
        "SLURM_CPUS_PER_TASK",
        "SLURMD_NODENAME",
        # PMI / PMIx (MPICH, Intel MPI, Open MPI under srun)
        "PMI_RANK",
        "PMI_SIZE",
        "PMI_LOCAL_RANK",
        "PMIX_RANK",
        "MPI_LOCALRANKID",
        "MPI_LOCALNRANKS",
    }
)


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
