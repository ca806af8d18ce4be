"""collect: build a NodeSnapshot from the machine, or from text pasted from one.

:func:`collect` reads the live host. Every source is a parameter, so a
recorded sysfs tree, a fake NVML and a scripted command runner read exactly
like a real machine. Each probe has a deadline and a failing probe costs a
``missing`` reason, never the snapshot.
"""

from __future__ import annotations

import os
import platform
import threading
from datetime import datetime, timezone
from typing import Any, Callable, Mapping, Optional, Sequence

from ..errors import tolerate
from ..model import Links, NodeSnapshot, Versions

__all__ = ["collect"]


def collect(
    *,
    environ: Optional[Mapping[str, str]] = None,
    sysfs_root: str = "/",
    procfs_root: str = "/proc",
    nvml: Any = None,
    run: Optional[Callable] = None,
    timeout: float = 2.0,
    probe_torch: bool = True,
    hostname: Optional[str] = None,
    shm_path: Optional[str] = None,
    torch_timeout: float = 15.0,
) -> NodeSnapshot:
    """Snapshot this machine (``origin="live"``).

    ``sysfs_root`` is the filesystem root that ``/sys``, ``/etc/os-release``,
    ``/.dockerenv`` and the library dirs are read under ("/" live, a recorded
    tree in tests); ``procfs_root`` stands for ``/proc``. ``nvml`` is an
    NVML-like object (default: pynvml, imported here lazily); ``run`` a
    command runner ``run(argv, timeout) -> CommandResult`` (default
    :func:`ncclnb.collectors.runner.run`). ``timeout`` bounds each NVML call and
    each command; ``torch_timeout`` the one child Python that imports a CUDA
    build of torch to ask its NCCL version (``probe_torch=False`` skips it).
    ``shm_path`` defaults to ``/dev/shm`` under ``sysfs_root``.
    Never raises for what the machine lacks: see ``snapshot.missing``."""
    from . import envvars, host, libraries, nics, nvml as nvml_facts, pci, runner, torchinfo

    environ = dict(os.environ if environ is None else environ)
    command = _never_raising(run or runner.run)
    missing: dict[str, str] = {}
    sources: dict[str, str] = {}

    dists = _safely("versions", lambda: libraries.installed_distributions(), {}, missing)

    # torch may need a child Python: start it first so it overlaps the rest.
    torch_out: dict = {}

    def torch_probe() -> None:
        torch_out["result"] = torchinfo.torch_facts(torch_timeout, run=command, distributions=dists, probe=probe_torch)

    torch_thread = threading.Thread(target=_guarded(torch_probe, torch_out), name="ncclnb-torch", daemon=True)
    torch_thread.start()

    host_fact, host_missing = _safely(
        "host",
        lambda: host.read_host(root=sysfs_root, procfs_root=procfs_root, environ=environ, hostname=hostname, shm_path=shm_path),
        None,
        missing,
    )
    if host_fact is None:
        from ..model import Host

        host_fact, host_missing = Host(hostname=hostname or platform.node() or "unknown"), {}
    missing.update(host_missing)
    sources["host"] = f"{procfs_root}/cpuinfo, {procfs_root}/self/limits, /sys/devices/system/node, /etc/os-release"

    nic_list, nic_missing = _safely("nics", lambda: nics.read_nics(sysfs_root), ([], {}), missing)
    missing.update(nic_missing)
    sources["nics"] = "/sys/class/net, /sys/class/infiniband" + (
        ", psutil.net_if_addrs" if sysfs_root in ("/", "") else f", {nics.ADDRESSES_FILE}"
    )

    gpu = nvml_facts.read_gpus(nvml, environ=environ, root=sysfs_root, timeout=timeout, cpu_count=host_fact.cpu_count)
    missing.update(gpu.missing)
    sources["gpus"] = gpu.source + ", sysfs PCI devices"
    driver = gpu.driver
    if driver is None:
        fallback, why = libraries.nvidia_smi_driver(command, timeout)
        if fallback:
            driver = fallback
            missing.pop("versions.driver", None)
            sources["versions.driver"] = "nvidia-smi"
        elif why and "not found" not in why:
            missing["versions.driver"] = f"{missing.get('versions.driver', 'NVML')}; {why}"

    gpu_nic: tuple = ()
    nic_names: tuple = ()
    physical = [n for n in nic_list if n.pci_bus_id and n.kind in ("ethernet", "infiniband", "roce")]
    if gpu.gpus and physical:
        matrix, why = _safely(
            "links.gpu_nic",
            lambda: pci.gpu_nic_matrix(sysfs_root, [g.pci_bus_id for g in gpu.gpus], [n.pci_bus_id for n in physical]),
            ((), None),
            missing,
        )
        if matrix:
            gpu_nic, nic_names = matrix, tuple(n.ib_device or n.name for n in physical)
            sources["links.gpu_nic"] = "sysfs PCI paths of GPUs and NICs"
        elif why:
            missing["links.gpu_nic"] = why

    libs, lib_missing, lib_sources = _safely(
        "versions.nccl_system",
        lambda: libraries.find_libraries(root=sysfs_root, environ=environ, run=command, timeout=timeout, distributions=dists),
        ({"nccl_pip": {}, "nccl_system": (), "net_plugins": ()}, {}, []),
        missing,
    )
    missing.update(lib_missing)
    sources["versions.nccl_system"] = ", ".join(lib_sources)
    frameworks = _safely("versions.frameworks", lambda: libraries.framework_versions(dists), {}, missing)

    torch_thread.join(torch_timeout + 5.0)
    if "exception" in torch_out:
        tolerate(torch_out.pop("exception"), (OSError,))
    if "result" in torch_out:
        tfacts, tmissing = torch_out["result"]
    else:
        why = torch_out.get("error", f"timed out after {torch_timeout:g} s")
        tfacts = {"torch": None, "torch_cuda": None, "nccl_torch": None}
        tmissing = {f"versions.{k}": why for k in tfacts}
    missing.update(tmissing)
    sources["versions.torch"] = "torch dist-info and torch/version.py; torch.cuda.nccl.version() in a child Python"

    env = _safely("env", lambda: envvars.select_env(environ), {}, missing)
    sources["env"] = "process environment (secrets redacted)"

    versions = Versions(
        driver=driver,
        cuda_driver=gpu.cuda_driver,
        torch=tfacts["torch"],
        torch_cuda=tfacts["torch_cuda"],
        nccl_torch=tfacts["nccl_torch"],
        nccl_pip=libs["nccl_pip"],
        nccl_system=libs["nccl_system"],
        net_plugins=libs["net_plugins"],
        frameworks=frameworks,
        python=platform.python_version(),
    )
    links = Links(gpu_gpu=gpu.gpu_gpu, gpu_nic=gpu_nic, nic_names=nic_names, p2p=gpu.p2p)
    return NodeSnapshot(
        host=host_fact,
        gpus=tuple(gpu.gpus),
        links=links,
        nics=tuple(nic_list),
        versions=versions,
        env=env,
        missing=dict(sorted(missing.items())),
        sources=sources,
        origin="live",
        description=f"collected live on {host_fact.hostname}",
        captured_at=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )


def _safely(what: str, fn: Callable, default: Any, missing: dict) -> Any:
    """Run one probe; a bug in it costs its facts and a reason, not the
    snapshot (under NCCLNB_STRICT a bug raises; an OSError of an odd machine
    does not)."""
    try:
        return fn()
    except Exception as exc:  # deliberately broad: collection must not fail
        tolerate(exc, (OSError,))
        missing[what] = f"collector failed: {type(exc).__name__}: {exc}"
        return default


def _guarded(fn: Callable[[], None], out: dict) -> Callable[[], None]:
    def body() -> None:
        try:
            fn()
        except Exception as exc:  # a thread: what it raised goes to ``out``; collect() tolerates it after the join
            out["error"] = f"collector failed: {type(exc).__name__}: {exc}"
            out["exception"] = exc

    return body


def _never_raising(run: Callable) -> Callable:
    """Wrap a caller's runner so a broken one reads as a failed command."""
    from .runner import CommandResult

    def wrapped(argv: Sequence[str], timeout: float) -> CommandResult:
        try:
            return run(argv, timeout)
        except Exception as exc:  # the caller's code, not ncclnb's: not re-raised under NCCLNB_STRICT
            return CommandResult(None, error=f"runner failed: {type(exc).__name__}: {exc}")

    return wrapped
