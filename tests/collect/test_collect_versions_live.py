"""NCCL libraries, torch facts, and collect() on this real machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from fakes.runner import no_commands
from ncclnb.collectors import collect
from ncclnb.collectors.libraries import find_libraries, framework_versions, installed_distributions, version_from_name
from ncclnb.collectors.runner import CommandResult
from ncclnb.collectors.torchinfo import nccl_version_text, read_version_file, torch_facts
from ncclnb.model import NodeSnapshot


def ldconfig_listing(lines):
    def fake_run(argv, timeout):
        if list(argv[:2]) == ["ldconfig", "-p"]:
            return CommandResult(0, "\n".join(["3 libs found in cache `/etc/ld.so.cache'", *lines]) + "\n", "")
        return CommandResult(None, error="not found")

    return fake_run


def test_nccl_libraries_from_ldconfig_ld_library_path_and_usual_dirs(tree):
    root = tree("l40s-2socket")
    run = ldconfig_listing(
        [
            "\tlibnccl.so.2 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libnccl.so.2",
            "\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6",
        ]
    )
    found, missing, _ = find_libraries(root=root, environ={"LD_LIBRARY_PATH": "/opt/custom/lib:"}, run=run, distributions={})
    system = {(lib.path, lib.version, lib.source) for lib in found["nccl_system"]}
    assert system == {
        ("/usr/lib/x86_64-linux-gnu/libnccl.so.2.19.3", "2.19.3", "ldconfig"),  # symlink followed
        ("/opt/custom/lib/libnccl.so.2.14.3", "2.14.3", "LD_LIBRARY_PATH"),
        ("/usr/local/nccl2/lib/libnccl.so.2.17.1", "2.17.1", "dir"),
    }
    assert [(p.path, p.source) for p in found["net_plugins"]] == [("/opt/amazon/ofi-nccl/lib/libnccl-net.so", "dir")]
    assert missing == {}


def test_ldconfig_failure_is_a_reason_not_an_error(tree):
    found, missing, _ = find_libraries(root=tree("container-eth0"), environ={}, run=no_commands, distributions={})
    assert found["nccl_system"] == ()
    assert missing["versions.nccl_system.ldconfig"] == "ldconfig -p: not found"


def test_pip_nccl_wheels_and_frameworks_from_dist_info_names(tmp_path):
    site = tmp_path / "site"
    (site / "nvidia_nccl_cu12-2.21.5.dist-info").mkdir(parents=True)
    (site / "nvidia" / "nccl" / "lib").mkdir(parents=True)
    (site / "nvidia" / "nccl" / "lib" / "libnccl.so.2").write_text("not a library")
    (site / "deepspeed-0.14.4.dist-info").mkdir()
    (site / "pytorch_lightning-1.9.5.dist-info").mkdir()
    (site / "torch-2.4.0+cu121.dist-info").mkdir()
    dists = installed_distributions([str(site)])
    assert dists["nvidia-nccl-cu12"][0] == "2.21.5" and dists["torch"][0] == "2.4.0+cu121"
    found, _, _ = find_libraries(root=str(tmp_path / "empty"), environ={}, run=no_commands, distributions=dists)
    assert found["nccl_pip"] == {"nvidia-nccl-cu12": "2.21.5"}
    pip_libs = [lib for lib in found["nccl_system"] if lib.source == "pip"]
    assert [(os.path.basename(lib.path), lib.version) for lib in pip_libs] == [("libnccl.so.2", "2.21.5")]
    assert framework_versions(dists) == {"pytorch-lightning": "1.9.5", "deepspeed": "0.14.4"}


def test_version_from_file_names():
    assert version_from_name("libnccl.so.2.19.3") == "2.19.3"
    assert version_from_name("libnccl.so.2") == "2"
    assert version_from_name("libnccl-net.so") is None
    assert nccl_version_text((2, 21, 5)) == "2.21.5"
    assert nccl_version_text(21903) == "2.19.3"
    assert nccl_version_text(2708) == "2.7.8"


def test_torch_version_file_is_parsed_not_executed(tmp_path):
    path = tmp_path / "version.py"
    path.write_text(
        "from typing import Optional\n__version__ = '2.4.0+cu121'\ncuda: Optional[str] = '12.1'\n"
        "hip = None\nimport os; os.system('echo pwned')\nx = os.getcwd()\n"
    )
    assert read_version_file(str(path)) == {"__version__": "2.4.0+cu121", "cuda": "12.1", "hip": None}


def test_torch_facts_on_this_cpu_build_need_no_child_python():
    """Run in a fresh Python so that no other test has imported torch."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed here")
    code = (
        "import json, sys\n"
        "from ncclnb.collectors.runner import CommandResult\n"
        "from ncclnb.collectors.torchinfo import torch_facts\n"
        "asked = []\n"
        "def refuse(argv, timeout):\n"
        "    asked.append(list(argv)); return CommandResult(None, error='not allowed')\n"
        "facts, missing = torch_facts(5, run=refuse)\n"
        "print(json.dumps({'facts': facts, 'missing': missing, 'asked': asked, 'imported': 'torch' in sys.modules}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    result = json.loads(out.stdout)
    if result["facts"]["torch_cuda"]:
        pytest.skip("this torch is a CUDA build")
    assert result["asked"] == [] and result["imported"] is False
    assert result["facts"]["torch"].startswith("2.")
    assert result["facts"]["nccl_torch"] is None
    assert result["missing"]["versions.nccl_torch"] == "torch is a CPU build: it has no NCCL"


def test_torch_facts_when_the_probe_hangs(monkeypatch, tmp_path):
    """A CUDA build whose import hangs: versions from files, NCCL a reason."""
    import ncclnb.collectors.torchinfo as ti

    pkg = tmp_path / "torch"
    pkg.mkdir()
    (pkg / "version.py").write_text("__version__ = '2.4.0+cu121'\ncuda = '12.1'\nhip = None\n")
    monkeypatch.setattr(ti, "_torch_dir", lambda: str(pkg))
    monkeypatch.delitem(sys.modules, "torch", raising=False)

    def hung(argv, timeout):
        return CommandResult(None, error=f"timed out after {timeout:g} s")

    facts, missing = torch_facts(3, run=hung, distributions={})
    assert facts == {"torch": "2.4.0+cu121", "torch_cuda": "12.1", "nccl_torch": None}
    assert missing["versions.nccl_torch"] == "importing torch: timed out after 3 s"

    def answers(argv, timeout):
        payload = {"torch": "2.4.0+cu121", "cuda": "12.1", "nccl_available": True, "nccl": [2, 20, 5]}
        return CommandResult(0, "noise\nNCCLNB-TORCH " + json.dumps(payload) + "\n", "")

    facts, missing = torch_facts(3, run=answers, distributions={})
    assert facts["nccl_torch"] == "2.20.5" and "versions.nccl_torch" not in missing


def test_collect_on_this_machine_without_a_driver():
    snap = collect(timeout=2.0)
    assert snap.origin == "live" and snap.captured_at.endswith("Z")
    assert snap.host.hostname and snap.host.cpu_count and snap.host.cpu_count >= 1
    assert snap.gpus == ()
    try:
        import pynvml

        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
        pytest.skip("this machine has an NVIDIA driver")
    except Exception:
        pass
    assert "NVML library not found" in snap.missing["gpus"]
    assert "versions.driver" in snap.missing
    assert any(n.kind == "loopback" for n in snap.nics)
    data = json.loads(json.dumps(snap.to_dict()))
    assert set(data) >= {"schema", "host", "gpus", "links", "nics", "versions", "env", "missing"}
    assert NodeSnapshot.from_dict(data) == snap


def test_collect_redacts_secrets_from_the_environment(tree):
    snap = collect(
        environ={"NCCL_DEBUG": "INFO", "HF_TOKEN": "hf_x", "TORCH_SECRET_KEY": "abc", "MASTER_ADDR": "http://u:pw@10.0.0.1"},
        sysfs_root=tree("container-eth0"),
        run=no_commands,
        probe_torch=False,
    )
    assert snap.env == {"MASTER_ADDR": "http://u:<redacted>@10.0.0.1", "NCCL_DEBUG": "INFO", "TORCH_SECRET_KEY": "<redacted>"}
    assert "pw" not in json.dumps(snap.to_dict()).replace("<redacted>", "")


def test_collect_subprocess_prints_json_without_heavy_imports():
    code = (
        "import sys, json, ncclnb; s = ncclnb.collect(probe_torch=False); "
        "print(json.dumps({'heavy': [m for m in ('torch', 'plotly', 'pandas', 'ipywidgets') if m in sys.modules], "
        "'schema': s.to_dict()['schema']}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    result = json.loads(out.stdout)
    assert result["heavy"] == [] and result["schema"].startswith("ncclnb.node/")


def test_public_functions_stay_callable_after_their_packages_are_imported():
    # the functions ncclnb.collect / ncclnb.machines live in packages of other names
    # (collectors, recorded), so importing those packages cannot shadow them
    code = (
        "import ncclnb, ncclnb.collectors.runner, ncclnb.recorded, json; "
        "print(json.dumps([ncclnb.collect(probe_torch=False).to_dict()['origin'], "
        "'hgx-h100' in ncclnb.machines()]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(out.stdout) == ["live", True]
