"""Which frontend is showing ncclnb's output, decided in one place (as
plotly picks its renderer): the magics show a live widget, a static HTML
copy or the full text by it, and any layer may ask. Imports nothing of
ncclnb and nothing heavy (ipywidgets is looked for, not imported)."""

from __future__ import annotations

import importlib.util
import os
import sys

RENDERERS = ("widget", "static", "text")
RENDERER_ENV = "NCCLNB_RENDERER"


def renderer(ipython=None) -> str:
    """How the magics show what they make, decided in one place (as plotly
    picks its renderer):

    - ``text``: the full text form, printed (``ncclnb doctor``'s report,
      ``ncclnb show``'s summary): a terminal IPython, or no IPython at all;
    - ``static``: a static HTML copy (escaped summary, the figure as inline
      SVG) with the full text as text/plain, no widget: where widgets cannot
      render (Google Colab without its custom widget manager, a kernel with
      no ipywidgets installed, such as a bare JupyterLite);
    - ``widget``: the live ipywidgets view, which also carries the static
      copy (JupyterLab, Notebook 7, VS Code, nbconvert).

    The environment variable ``NCCLNB_RENDERER=text|static|widget``
    overrides the choice; any other value is ignored."""
    forced = os.environ.get(RENDERER_ENV, "").strip().lower()
    if forced in RENDERERS:
        return forced
    if ipython is None and "IPython" in sys.modules:  # not imported: no IPython shell runs
        ipython = sys.modules["IPython"].get_ipython()
    if ipython is None:
        return "text"
    if "TerminalInteractiveShell" in {cls.__name__ for cls in type(ipython).__mro__}:
        return "text"
    if "google.colab" in sys.modules:
        return "static"
    if importlib.util.find_spec("ipywidgets") is None:
        return "static"
    return "widget"
