"""torch facts: the only module of ncclnb that imports torch, and only lazily.

Importing torch takes one to several seconds, so :func:`torch_facts` avoids
it where it can: the version comes from the wheel's ``dist-info`` name and
``torch.version.cuda`` from the text of ``torch/version.py`` (parsed as
literals, never executed). A CPU build has no NCCL, so that is the whole
answer there. Only a CUDA or ROCm build is imported, in a child Python with a
deadline, to ask ``torch.cuda.nccl.version()`` (when
``torch.distributed.is_nccl_available()``): a broken or hung torch costs a
``missing`` reason, not the collection.
"""

from __future__ import annotations

import ast
import json
import os
import sys
from typing import Callable, Mapping, Optional, Sequence

from ..errors import tolerate
from .runner import CommandResult

# what a half-broken torch install raises when asked for its versions (not a bug in ncclnb)
_TORCH_FAILURES = (ImportError, RuntimeError, AttributeError, OSError)

_PROBE = r"""
import json
out = {}
try:
    import torch
    out["torch"] = str(torch.__version__)
    out["cuda"] = torch.version.cuda
    import torch.distributed as dist
    out["nccl_available"] = bool(dist.is_available() and dist.is_nccl_available())
    if out["nccl_available"]:
        v = torch.cuda.nccl.version()
        out["nccl"] = list(v) if isinstance(v, tuple) else v
except Exception as exc:
    out["error"] = "%s: %s" % (type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")
print("NCCLNB-TORCH " + json.dumps(out))
"""


def import_torch():
    """Import and return torch, or raise ImportError with a message saying
    which Python lacks it and how to get it."""
    try:
        import torch
    except ImportError as exc:
        raise ImportError(
            f"torch is not importable in {sys.executable} ({exc}); install your PyTorch build, e.g. `pip install torch`"
        ) from exc
    return torch


def nccl_version_text(value) -> Optional[str]:
    """``torch.cuda.nccl.version()`` -> "2.21.5": a tuple on recent torch, an
    int code on old ones (2708 = 2.7.8; from 2.9 on, 21903 = 2.19.3)."""
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, int) for v in value):
        return ".".join(str(v) for v in value)
    if isinstance(value, int) and value > 0:
        if value >= 10000:
            return f"{value // 10000}.{value % 10000 // 100}.{value % 100}"
        return f"{value // 1000}.{value % 1000 // 100}.{value % 100}"
    return None


def read_version_file(path: str) -> dict[str, object]:
    """Literal assignments of ``torch/version.py`` (``__version__``, ``cuda``,
    ``hip``); never executes the file."""
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), filename=path)
    out: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name):
            try:
                out[target.id] = ast.literal_eval(value)
            except ValueError:
                continue
    return out


def _torch_dir() -> Optional[str]:
    import importlib.util

    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def torch_facts(
    timeout: float = 15.0,
    *,
    run: Optional[Callable[[Sequence[str], float], CommandResult]] = None,
    distributions: Optional[Mapping[str, tuple[str, str]]] = None,
    probe: bool = True,
    python: Optional[str] = None,
) -> tuple[dict[str, Optional[str]], dict[str, str]]:
    """Returns ({"torch", "torch_cuda", "nccl_torch"}, missing reasons keyed
    ``versions.<field>``). ``probe=False`` never starts a child Python."""
    facts: dict[str, Optional[str]] = {"torch": None, "torch_cuda": None, "nccl_torch": None}
    missing: dict[str, str] = {}

    loaded = sys.modules.get("torch")
    if loaded is not None and hasattr(loaded, "__version__"):
        return _from_module(loaded, facts, missing)

    folder = _torch_dir()
    if folder is None:
        reason = f"torch is not installed in {sys.executable}"
        return facts, {f"versions.{k}": reason for k in facts}
    info: dict[str, object] = {}
    try:
        info = read_version_file(os.path.join(folder, "version.py"))
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        info = {}
    if distributions is None:
        from .libraries import installed_distributions

        distributions = installed_distributions()
    version = (distributions.get("torch") or (None, None))[0] or info.get("__version__")
    facts["torch"] = str(version) if version else None
    if "cuda" in info:
        cuda = info.get("cuda")
        facts["torch_cuda"] = str(cuda) if cuda else None
        if not cuda:
            missing["versions.torch_cuda"] = "torch is a CPU build (torch.version.cuda is None)"
        if not cuda and not info.get("hip"):
            missing["versions.nccl_torch"] = "torch is a CPU build: it has no NCCL"
            return facts, missing

    # A CUDA/ROCm build, or version.py unreadable: ask torch itself.
    if not probe:
        missing["versions.nccl_torch"] = "not probed (importing torch was switched off)"
        if facts["torch"] is None:
            missing["versions.torch"] = "not probed (importing torch was switched off)"
        return facts, missing
    if run is None:
        from .runner import run as run_command

        run = run_command
    result = run([python or sys.executable, "-c", _PROBE], timeout)
    payload = None
    for line in result.stdout.splitlines():
        if line.startswith("NCCLNB-TORCH "):
            try:
                payload = json.loads(line[len("NCCLNB-TORCH ") :])
            except ValueError:
                payload = None
    if not isinstance(payload, dict):
        reason = result.reason("importing torch")
        for key in ("torch", "torch_cuda", "nccl_torch"):
            if facts[key] is None and f"versions.{key}" not in missing:
                missing[f"versions.{key}"] = reason
        return facts, missing
    if payload.get("torch"):
        facts["torch"] = str(payload["torch"])
    if "cuda" in payload:
        facts["torch_cuda"] = str(payload["cuda"]) if payload["cuda"] else None
        if facts["torch_cuda"]:
            missing.pop("versions.torch_cuda", None)
    if payload.get("error"):
        missing["versions.nccl_torch"] = f"importing torch failed: {payload['error']}"
    elif not payload.get("nccl_available"):
        missing["versions.nccl_torch"] = "torch.distributed.is_nccl_available() is False"
    else:
        facts["nccl_torch"] = nccl_version_text(payload.get("nccl"))
        if facts["nccl_torch"] is None:
            missing["versions.nccl_torch"] = f"unexpected torch.cuda.nccl.version(): {payload.get('nccl')!r}"
    return facts, missing


def _from_module(torch, facts: dict, missing: dict) -> tuple[dict, dict]:
    """torch is already imported here (a notebook): ask it directly."""
    facts["torch"] = str(torch.__version__)
    cuda = getattr(getattr(torch, "version", None), "cuda", None)
    facts["torch_cuda"] = str(cuda) if cuda else None
    if not cuda:
        missing["versions.torch_cuda"] = "torch is a CPU build (torch.version.cuda is None)"
    try:
        import torch.distributed as dist

        available = bool(dist.is_available() and dist.is_nccl_available())
    except Exception as exc:  # a half-broken install must not break collection
        tolerate(exc, _TORCH_FAILURES)
        missing["versions.nccl_torch"] = f"torch.distributed: {type(exc).__name__}: {exc}"
        return facts, missing
    if not available:
        missing["versions.nccl_torch"] = (
            "torch is a CPU build: it has no NCCL" if not cuda else "torch.distributed.is_nccl_available() is False"
        )
        return facts, missing
    try:
        facts["nccl_torch"] = nccl_version_text(torch.cuda.nccl.version())
    except Exception as exc:
        tolerate(exc, _TORCH_FAILURES)
        missing["versions.nccl_torch"] = f"torch.cuda.nccl.version(): {type(exc).__name__}: {exc}"
    return facts, missing
