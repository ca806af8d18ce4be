"""The doctor: logs of any number of ranks in, the root cause out.

``diagnose(*sources)`` reads files, directories of per-rank logs, ``.gz``
files, ``-`` (stdin) or raw text, matches the knowledge base in
``signatures/`` (one JSON record per failure signature), reasons across ranks
(who diverged, which hosts run which NCCL, which ranks fall outside the world
size) and returns a :class:`ncclnb.model.Diagnosis`.
"""

from .core import diagnose
from .kb import KnowledgeBaseError, Signature, grep_patterns, load_signatures, signature_examples
from .sources import DoctorInputError

__all__ = [
    "diagnose",
    "DoctorInputError",
    "KnowledgeBaseError",
    "Signature",
    "grep_patterns",
    "load_signatures",
    "signature_examples",
]
