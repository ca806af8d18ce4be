"""Guards for training code: cheap checks that run inside a real
torch.distributed job and turn a silent divergence between ranks into one
readable error, raised on every rank, before it becomes a hang.

- :func:`assert_same` — every rank holds the same values (one all_gather of
  24 bytes per rank).
- :func:`check_dataset` — every rank sees the same dataset (length, first
  items or indices).
- :class:`Watermark` — every N steps, every rank issued the same number of
  collectives (one gloo all_gather of 16 bytes per rank per check).
- :func:`check_p2p_plan` — before a hand-written isend/irecv exchange, every
  send has its receive (two small all_gathers of the plans as JSON bytes).
- :func:`check_devices` — no two ranks use one GPU: each reports its host
  and physical GPU (``torch.cuda.current_device()`` through
  ``CUDA_VISIBLE_DEVICES``, UUID, bus id; or an explicit ``device=``) in one
  all_gather of 256 bytes per rank.
- :func:`preflight` / :func:`init_process_group` — the launch check: what
  each rank can know alone (rank < world size, devices, MASTER_ADDR/PORT,
  /dev/shm, open files), before any rendezvous; then versions and NCCL_*
  settings compared across ranks once the group exists
  (:func:`compare_across_ranks`), and on NCCL :func:`check_devices`.
- :class:`GuardError` — what they raise: ``.ranks`` blamed, ``.values``
  per rank.

``import ncclnb.guard`` does not import torch; the first call does. No pickle
crosses the wire: digests, JSON bytes and int64 in tensors.
"""

from __future__ import annotations

from .devices import check_devices
from .errors import GuardError
from .p2p import check_p2p_plan
from .preflight import LaunchFacts, PreflightError, compare_across_ranks, init_process_group, launch_facts, preflight
from .same import assert_same, check_dataset, dataset_facts
from .watermark import Watermark

__all__ = [
    "GuardError",
    "LaunchFacts",
    "PreflightError",
    "Watermark",
    "assert_same",
    "check_dataset",
    "check_devices",
    "check_p2p_plan",
    "compare_across_ranks",
    "dataset_facts",
    "init_process_group",
    "launch_facts",
    "preflight",
]
