"""Parsers for text people paste from clusters. Each is a pure function
``text -> Partial`` (partial facts keyed like the model's fields) that raises
``ParseError`` with one line when the text is recognisable but broken.

- :func:`parse_topo_m`: ``nvidia-smi topo -m`` / ``-mp``
- :func:`parse_p2p`: ``nvidia-smi topo -p2p r|w|n|a|p``
- :func:`parse_nvidia_smi`: the default ``nvidia-smi`` table
- :func:`parse_collect_env`: ``python -m torch.utils.collect_env`` (and vLLM's)
- :func:`parse_nccl_version`: ``NCCL version ...`` / ``cudaDriverVersion`` log lines
- :func:`peer_transports`: the transport NCCL chose per peer, from its INFO channel lines

:func:`detect`, :func:`split_blocks` and :func:`parse_text` find these blocks
in a paste that holds any number of them, in any order.
"""

from ._common import ParseError, Partial
from .collect_env import parse_collect_env
from .detect import KINDS, Block, as_text, detect, hostnames_in, parse_block, parse_text, split_blocks
from .nccl_version import cuda_driver_versions, nccl_versions, parse_nccl_version, peer_transports
from .nvidia_smi import parse_nvidia_smi
from .p2p import parse_p2p
from .topo_m import parse_topo_m

__all__ = [
    "KINDS",
    "Block",
    "ParseError",
    "Partial",
    "as_text",
    "cuda_driver_versions",
    "detect",
    "hostnames_in",
    "nccl_versions",
    "parse_block",
    "parse_collect_env",
    "parse_nccl_version",
    "parse_nvidia_smi",
    "parse_p2p",
    "parse_text",
    "parse_topo_m",
    "peer_transports",
    "split_blocks",
]
