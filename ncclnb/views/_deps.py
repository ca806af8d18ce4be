"""What the views need beyond the light core, and the one line that says how
to get it. ``pip install ncclnb`` is the light core (the doctor, the checks,
the CLI, on a cluster node); the views' libraries come with the ``notebook``
extra. A view called without them raises :class:`ViewsNotInstalled`, whose
message names the extra (the magics show it as their one usage line).
Imports nothing of ncclnb and nothing heavy."""

from __future__ import annotations

import functools
from typing import Callable, Optional, TypeVar

INSTALL = "pip install 'ncclnb[notebook]'"
# the libraries the views import (pandas' Styler imports jinja2); top-level module names
STACK = ("plotly", "pandas", "ipywidgets", "anywidget", "jinja2")

F = TypeVar("F", bound=Callable)


class ViewsNotInstalled(ModuleNotFoundError):
    """A view was asked for where its libraries are not installed."""


def _missing(exc: ImportError) -> Optional[str]:
    """The module of :data:`STACK` that ``exc`` says is missing, or None. pandas
    raises its own ImportError for jinja2, with the ModuleNotFoundError as its cause."""
    for err in (exc, exc.__cause__):
        name = (getattr(err, "name", None) or "").split(".")[0]
        if isinstance(err, ImportError) and name in STACK:
            return name
    return None


def views_not_installed(exc: ImportError) -> ImportError:
    """The one-line :class:`ViewsNotInstalled` for ``exc`` where it is about a
    library of the views; ``exc`` itself otherwise (a bug, not a missing extra)."""
    if isinstance(exc, ViewsNotInstalled):
        return exc
    name = _missing(exc)
    if name is None:
        return exc
    return ViewsNotInstalled(f"ncclnb's views need {name}, which is not installed here: {INSTALL}", name=name)


def needs_views(view: F) -> F:
    """``view``, raising :class:`ViewsNotInstalled` (one line naming the extra)
    where it fails for a library of the views that is not installed."""

    @functools.wraps(view)
    def call(*args, **kwargs):
        try:
            return view(*args, **kwargs)
        except ImportError as exc:
            refusal = views_not_installed(exc)
            if refusal is exc:
                raise
            raise refusal from None

    return call  # type: ignore[return-value]
