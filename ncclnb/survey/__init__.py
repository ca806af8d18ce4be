"""The cluster survey: run by a job's own launcher on every rank (torchrun,
Slurm ``srun``, Open MPI ``mpirun``), or ``--local`` on one machine; rank 0
writes ``DIR/report.json``, a :class:`~ncclnb.model.ClusterReport` the checks
judge and every view opens.

- :func:`run_survey` runs inside one rank (``python -m ncclnb survey --out DIR``).
- :func:`run_local` starts G ranks on 127.0.0.1 itself and waits for them.

What the survey gathers and how a rank that never joins ends up named in a
partial report is in :mod:`ncclnb.survey.gather`'s docstring.
"""

from __future__ import annotations

from .gather import SurveyUsageError, own_entry, run_survey
from .local import run_local

__all__ = ["SurveyUsageError", "own_entry", "run_local", "run_survey"]
