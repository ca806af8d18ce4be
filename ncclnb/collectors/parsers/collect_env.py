"""``python -m torch.utils.collect_env`` and its forks.

Read: the plain layout of torch 1.x/2.x (``Key: value``), and the sectioned
one of vLLM's ``collect_env`` (``Key   : value`` under ``=====`` banners)
with its ``GPU Topology:`` block (a ``nvidia-smi topo -m``) and
``Environment Variables`` section. The CPU section is ``lscpu`` output,
which gives the CPU model, the CPU count and each NUMA node's CPUs.
"""

from __future__ import annotations

import re
from typing import Optional

from ...model import NumaNode
from ..envvars import is_relevant, redact
from ._common import (
    CPULIST_RE,
    INDEX_DIGITS,
    ParseError,
    Partial,
    content_lines,
    cpulist_spans,
    is_number,
    to_int,
)
from .nccl_version import nccl_versions
from .topo_m import is_header as is_topo_header, parse_topo_m

KIND = "collect_env"

# `Key: value` and `GPU 0: name (UUID: ...)` lines are split by hand, not by one
# pattern with a lazy group before `\s*`: that backtracks quadratically on a
# long run of spaces.
_KEY = re.compile(r"[A-Za-z][A-Za-z0-9 ()_./+-]*")
_GPU_HEAD = re.compile(r"GPU ([0-9]+): ")
_ARCH_SUFFIX = re.compile(r"\((?:x86_64|aarch64|arm64|ppc64le|s390x)\)$")
_PIP_LINE = re.compile(r"\[(pip3?|conda)\]\s+([A-Za-z0-9_.-]+)(?:==|\s+)(\S+)")
_NUMA_KEY = re.compile(r"NUMA node([0-9]+) CPU\(s\)")
_ENV_LINE = re.compile(r"([A-Z_][A-Z0-9_]*)=(.*)")
_PLATFORM = re.compile(r"Linux-(.+)-(?:x86_64|aarch64|arm64|ppc64le|s390x)-with")
NOT_COLLECTED = {"", "N/A", "None", "Could not collect", "No CUDA"}
FRAMEWORKS = ("lightning", "pytorch-lightning", "deepspeed", "accelerate", "transformers", "vllm")


def is_start(line: str) -> bool:
    s = line.strip()
    return s.startswith("Collecting environment information") or bool(re.match(r"PyTorch version\s*:", s))


def parse_collect_env(text: str) -> Partial:
    """Parse collect_env output into partial facts: torch and the CUDA it was
    built with, OS, kernel, Python, CPU model/count and NUMA nodes, the GPU
    list, driver version, nvidia-nccl-* and framework pip packages, and (vLLM
    variant) the GPU topology and the NCCL/torch environment variables."""
    lines = content_lines(text)
    values: dict[str, str] = {}
    gpu_names: dict[int, str] = {}
    numa: dict[int, str] = {}
    packages: dict[str, str] = {}
    env: dict[str, str] | None = None
    topo_lines: list[str] | None = None
    section = ""
    banner = ""  # "open" after a ===== line, "titled" once the title under it is read
    in_topology = False
    for raw in lines:
        line = raw.strip()
        if line and set(line) == {"="}:
            banner = "" if banner == "titled" else "open"
            in_topology = False
            continue
        if banner == "open":
            section, banner = line, "titled"
            continue
        if in_topology:
            topo_lines.append(raw)
            continue
        if section == "Environment Variables":
            m = _ENV_LINE.fullmatch(line)
            if m:
                env = env if env is not None else {}
                if is_relevant(m.group(1)):  # the same variables and redaction as live collection
                    env[m.group(1)] = redact(m.group(1), m.group(2))
            continue
        if line.startswith("GPU Topology:"):
            in_topology = True
            topo_lines = [line[len("GPU Topology:") :]]
            continue
        gpu = _gpu_line(line)
        if gpu:
            gpu_names.setdefault(to_int(gpu[0], "collect_env: GPU index", INDEX_DIGITS), gpu[1])
            continue
        pkg = _PIP_LINE.match(line)
        if pkg:
            name = pkg.group(2).lower()
            if pkg.group(1).startswith("pip") or name not in packages:
                packages[name] = pkg.group(3)
            continue
        kv = _key_value(line)
        if kv:
            key, value = " ".join(kv[0].split()), kv[1].strip()
            numa_m = _NUMA_KEY.fullmatch(key)
            if numa_m and CPULIST_RE.fullmatch(value):
                node = to_int(numa_m.group(1), "collect_env: NUMA node", INDEX_DIGITS)
                cpulist_spans(value, f"collect_env: {key}")  # refuse a malformed or huge list here
                numa[node] = value
            if key == "GPU models and configuration":
                single = _gpu_line(value)  # one GPU: printed on the same line
                if single:
                    gpu_names.setdefault(to_int(single[0], "collect_env: GPU index", INDEX_DIGITS), single[1])
            values.setdefault(key, value)
    if "PyTorch version" not in values:
        raise ParseError("collect_env: no 'PyTorch version' line")

    def value(key: str):
        v = values.get(key)
        return None if v is None or v in NOT_COLLECTED else v

    missing: dict[str, str] = {}
    notes: dict[str, str] = {}
    versions: dict = {}
    for field_name, key in (
        ("torch", "PyTorch version"),
        ("torch_cuda", "CUDA used to build PyTorch"),
        ("driver", "Nvidia driver version"),
    ):
        v = value(key)
        if v is not None:
            versions[field_name] = v
        elif key in values:
            missing[f"versions.{field_name}"] = f"collect_env shows {key}: {values[key] or '(empty)'}"
    python = value("Python version")
    if python:
        versions["python"] = python.split()[0]
    if packages:
        versions["nccl_pip"] = {n: v for n, v in packages.items() if n.startswith("nvidia-nccl")}
        versions["frameworks"] = {n: v for n, v in packages.items() if n in FRAMEWORKS}
    vllm = value("vLLM Version")
    if vllm:
        versions.setdefault("frameworks", {})["vllm"] = vllm.split()[0]
    found_nccl = nccl_versions("\n".join(lines))
    if found_nccl:
        versions["nccl_torch"] = found_nccl[0].split("+")[0]
        notes["versions.nccl_torch"] = f"'NCCL version {found_nccl[0]}' printed in the collect_env text"

    host: dict = {}
    os_name = value("OS")
    if os_name:
        arch = _ARCH_SUFFIX.search(os_name)
        host["os"] = os_name[: arch.start()].rstrip() if arch else os_name
    platform_m = _PLATFORM.match(value("Python platform") or "")
    if platform_m:
        host["kernel"] = platform_m.group(1)
        notes["host.kernel"] = "from collect_env's Python platform line"
    model = value("Model name")
    if model:
        host["cpu_model"] = model
    count = value("CPU(s)")
    if count and is_number(count):  # "³" or "４８" is not a CPU count
        host["cpu_count"] = to_int(count, "collect_env: CPU(s)")
    if numa:
        host["numa_nodes"] = tuple(NumaNode(id=i, cpus=cpus) for i, cpus in sorted(numa.items()))
        notes["host.numa_nodes"] = "lscpu NUMA node lines in collect_env's CPU section"

    gpus: dict[int, dict] = {i: {"name": name} for i, name in gpu_names.items()}
    links: dict = {}
    nics = None
    derived: tuple = ()
    if topo_lines:
        topo = parse_topo_m("\n".join(topo_lines)) if any(is_topo_header(t) for t in topo_lines) else None
        if topo is not None:
            if gpus and set(topo.gpus) != set(gpus):
                raise ParseError(f"collect_env: its GPU Topology shows {len(topo.gpus)} GPUs but its GPU list shows {len(gpus)}")
            for index, facts in topo.gpus.items():
                gpus.setdefault(index, {}).update(facts)
            links, nics, derived = topo.links, topo.nics, topo.derived_numa_nodes
            for key, text_value in topo.missing.items():
                missing.setdefault(key, text_value)
            for key, text_value in topo.notes.items():
                notes.setdefault(key, text_value)
            notes["links"] = "the GPU Topology section (nvidia-smi topo -m)"
    return Partial(
        kind=KIND,
        host=host,
        gpus=gpus,
        links=links,
        nics=nics,
        versions=versions,
        env=env,
        derived_numa_nodes=derived,
        missing=missing,
        notes=notes,
    )


def _key_value(line: str) -> Optional[tuple[str, str]]:
    """``Key: value`` -> (key, value); None when ``line`` is not one. The key
    ends at the first colon, which ends the line or is followed by
    whitespace (``Key: http://x`` has the value ``http://x``)."""
    key, colon, rest = line.partition(":")
    if not colon or (rest and not rest[0].isspace()):
        return None
    key = key.rstrip()
    return (key, rest[1:]) if _KEY.fullmatch(key) else None


def _gpu_line(line: str) -> Optional[tuple[str, str]]:
    """``GPU 0: NVIDIA A100 (UUID: GPU-...)`` -> ("0", "NVIDIA A100"); None
    when ``line`` is not one."""
    head = _GPU_HEAD.match(line)
    if not head:
        return None
    name = line[head.end() :].rstrip()
    if name.endswith(")"):
        # the " (UUID: ...)" that holds the final ")": the first one after the ")" before it
        start = line.rfind(")", 0, head.end() + len(name) - 1) + 1
        mark = line.find(" (UUID: ", max(start, head.end() + 1))
        if mark >= 0:
            name = line[head.end() : mark]
    name = name.strip()
    return (head.group(1), name) if name else None
