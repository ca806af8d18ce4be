"""`import ncclnb` touches no hardware and imports none of the heavy libraries."""

import json
import subprocess
import sys

HEAVY = ["torch", "pynvml", "plotly", "pandas", "ipywidgets", "numpy", "IPython"]


def test_import_ncclnb_pulls_in_no_heavy_module():
    code = (
        "import sys, json, ncclnb; "
        "ncclnb.NodeSnapshot; ncclnb.SchemaError; "
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_public_names_resolve_lazily():
    import ncclnb

    assert "collect" in dir(ncclnb)
    assert ncclnb.NodeSnapshot.__name__ == "NodeSnapshot"
