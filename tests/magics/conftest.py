"""The IPython shell the magics tests run through, with ncclnb loaded and its
state fresh before and after each test (and no NCCLNB_RENDERER from the
caller's environment)."""

from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell

from ncclnb import magics


@pytest.fixture
def ip(monkeypatch):
    monkeypatch.delenv("NCCLNB_RENDERER", raising=False)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "ncclnb")
    magics.STATE.__init__()
    yield shell
    shell.run_line_magic("unload_ext", "ncclnb")
    magics.STATE.__init__()
