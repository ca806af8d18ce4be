"""The one exception every guard raises."""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

from ..errors import NcclnbError


class GuardError(NcclnbError, RuntimeError):
    """Ranks of a distributed job disagree on something that must be equal.
    Not an InputError: it stops the user's training job (a RuntimeError, as
    torch.distributed's own errors are), and no command prints it as one line.

    Raised on every rank of the group by the same check, with the same text,
    so no rank runs on while another stops.

    ``ranks``: the global ranks blamed (sorted): the minority, or on a tie
    the ranks whose value differs from the group's first rank.
    ``values``: ``{name: {global rank: value}}`` for each name that differs,
    every rank of the group included. For :func:`~ncclnb.guard.assert_same`
    a value is the canonical JSON text the rank holds (cut at 256 bytes with
    "…"), or ``"<absent>"``; for :class:`~ncclnb.guard.Watermark` it is the
    int count (``"collectives"``) or step (``"step"``).
    ``check``: what found it: ``"assert_same"``, ``"watermark"``,
    ``"p2p_plan"``, ``"devices"``, ``"versions"``, ``"nccl_settings"`` or
    ``"preflight"``; the message words each differently, so the doctor
    names the matching category from a log.
    """

    def __init__(
        self,
        message: str,
        ranks: Sequence[int] = (),
        values: Optional[Mapping[str, Mapping[int, object]]] = None,
        check: str = "",
    ):
        super().__init__(message)
        self.ranks = sorted(int(r) for r in ranks)
        self.values = {str(k): dict(v) for k, v in (values or {}).items()}
        self.check = check

    def __reduce__(self):  # keep ranks/values across pickling (multiprocessing)
        return (type(self), (str(self), self.ranks, self.values, self.check))
