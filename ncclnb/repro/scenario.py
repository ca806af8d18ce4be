"""Scenarios as data: ``scenarios/<name>.json``, one per reproduction.

A scenario names the seed it comes from, the worker module that plays the
job (``ncclnb.repro.workers.<module>``: importable, never a notebook), how
many ranks and "nodes" it starts and with which launcher, the knobs of each
variant (``broken``, ``fixed`` and optionally ``guarded``), the category the
doctor must name first for the broken run, and the culprit ranks.

Fields of a variant:
- ``args``: knobs handed to the worker (``job.arg(name)``);
- ``env``: extra environment for every rank; ``env_by_node``: per node;
- ``start``: the process indices the runner starts (default: all);
- ``rank_env``: per process index, variables that override the launcher's
  (two processes told the same ``RANK``, a wrong ``MASTER_PORT`` ...);
- ``replay``: for launcher ``replay``, the recorded real log to read
  (``ncclnb/repro/recorded/<file>``) instead of running anything;
- ``note``: one line the result carries for the reader.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ..errors import InputError
from ..model import CATEGORIES, VARIANTS

HERE = Path(__file__).resolve().parent
SCENARIO_DIR = HERE / "scenarios"
RECORDED_DIR = HERE / "recorded"
LAUNCHERS = ("processes", "torchrun", "replay")
BACKENDS = ("gloo", "nccl")
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_VARIANT_KEYS = {"args", "env", "env_by_node", "start", "rank_env", "replay", "note", "completes"}
_KEYS = {
    "name",
    "seed",
    "title",
    "story",
    "worker",
    "nproc",
    "nodes",
    "launcher",
    "backends",
    "timeout_s",
    "expected_category",
    "culprit_ranks",
    "nccl_signature",
    "fails_on_cpu",
    "lesson",
    "variants",
}


class ScenarioError(InputError):
    """A scenario file that does not describe a runnable scenario (one line)."""


@dataclass(frozen=True)
class Variant:
    name: str
    args: dict = field(default_factory=dict)
    env: dict = field(default_factory=dict)
    env_by_node: dict = field(default_factory=dict)  # "0" -> {VAR: value}
    start: Optional[tuple[int, ...]] = None  # process indices started; None: all
    rank_env: dict = field(default_factory=dict)  # "3" -> {VAR: value}
    replay: Optional[str] = None
    note: str = ""
    completes: Optional[bool] = None  # expected: runs to its end (default: fixed yes, broken no)


@dataclass(frozen=True)
class Scenario:
    name: str
    seed: str  # "000".."004", or "" for a neighbour of the seeds
    title: str
    story: str  # what happens, in two or three sentences
    worker: str  # module run as `python -m`
    nproc: int
    nodes: int
    launcher: str
    backends: tuple[str, ...]
    timeout_s: float  # process-group and store timeout of the ranks
    expected_category: str
    culprit_ranks: tuple[int, ...]
    nccl_signature: str  # knowledge-base signature whose fixture shows NCCL's wording ("" none)
    fails_on_cpu: bool  # False where the failure itself needs GPUs (the facts are still caught)
    lesson: str  # the fix, in one or two sentences
    variants: dict  # name -> Variant

    @property
    def per_node(self) -> int:
        return self.nproc // self.nodes

    def variant(self, name: str) -> Variant:
        try:
            return self.variants[name]
        except KeyError:
            raise ScenarioError(f"scenario {self.name!r} has no {name!r} variant (it has: {', '.join(self.variants)})") from None

    def summary(self) -> dict:
        """The one-line facts ``ncclnb repro list --json`` prints."""
        return {
            "name": self.name,
            "seed": self.seed,
            "title": self.title,
            "expected_category": self.expected_category,
            "culprit_ranks": list(self.culprit_ranks),
            "nproc": self.nproc,
            "nodes": self.nodes,
            "launcher": self.launcher,
            "variants": list(self.variants),
            "fails_on_cpu": self.fails_on_cpu,
        }


def _need(data: dict, key: str, kind, where: str):
    value = data.get(key)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise ScenarioError(f"{where}: field {key!r} must be {getattr(kind, '__name__', kind)}, got {value!r}")
    return value


def _variant(name: str, data: Any, where: str) -> Variant:
    if not isinstance(data, dict):
        raise ScenarioError(f"{where}: variant {name!r} must be an object")
    unknown = set(data) - _VARIANT_KEYS
    if unknown:
        fields = "field" if len(unknown) == 1 else "fields"
        raise ScenarioError(f"{where}: variant {name!r} has unknown {fields} {', '.join(sorted(unknown))}")
    start = data.get("start")
    if start is not None and not (isinstance(start, list) and all(isinstance(i, int) for i in start)):
        raise ScenarioError(f"{where}: variant {name!r}: 'start' must be a list of process indices")
    for key in ("args", "env", "env_by_node", "rank_env"):
        if not isinstance(data.get(key, {}), dict):
            raise ScenarioError(f"{where}: variant {name!r}: {key!r} must be an object")
    for key in ("env",):
        if not all(isinstance(v, str) for v in data.get(key, {}).values()):
            raise ScenarioError(f"{where}: variant {name!r}: environment values must be strings")
    return Variant(
        name=name,
        args=dict(data.get("args", {})),
        env=dict(data.get("env", {})),
        env_by_node=dict(data.get("env_by_node", {})),
        start=tuple(start) if start is not None else None,
        rank_env=dict(data.get("rank_env", {})),
        replay=data.get("replay"),
        note=str(data.get("note", "")),
        completes=data.get("completes"),
    )


def parse(data: Any, where: str) -> Scenario:
    """A scenario from its JSON object; ScenarioError names the file and field."""
    if not isinstance(data, dict):
        raise ScenarioError(f"{where}: a scenario is a JSON object")
    unknown = set(data) - _KEYS
    if unknown:
        raise ScenarioError(f"{where}: unknown {'field' if len(unknown) == 1 else 'fields'} {', '.join(sorted(unknown))}")
    name = _need(data, "name", str, where)
    if not _NAME.match(name):
        raise ScenarioError(f"{where}: name {name!r} must be lower_snake_case")
    launcher = _need(data, "launcher", str, where)
    if launcher not in LAUNCHERS:
        raise ScenarioError(f"{where}: launcher {launcher!r} is not one of {', '.join(LAUNCHERS)}")
    nproc, nodes = _need(data, "nproc", int, where), _need(data, "nodes", int, where)
    if nproc < 1 or nodes < 1 or nproc % nodes:
        raise ScenarioError(f"{where}: nproc {nproc} must be a positive multiple of nodes {nodes}")
    category = _need(data, "expected_category", str, where)
    if category not in CATEGORIES:
        raise ScenarioError(f"{where}: expected_category {category!r} is not a doctor category")
    culprits = _need(data, "culprit_ranks", list, where)
    if not all(isinstance(r, int) and 0 <= r for r in culprits):
        raise ScenarioError(f"{where}: culprit_ranks must be non-negative integers")
    backends = tuple(data.get("backends", ["gloo"]))
    if not backends or any(b not in BACKENDS for b in backends):
        raise ScenarioError(f"{where}: backends must be a non-empty subset of {', '.join(BACKENDS)}")
    variants_raw = _need(data, "variants", dict, where)
    if "broken" not in variants_raw or "fixed" not in variants_raw:
        raise ScenarioError(f"{where}: a scenario needs a 'broken' and a 'fixed' variant")
    bad = set(variants_raw) - set(VARIANTS)
    if bad:
        which = "variant" if len(bad) == 1 else "variants"
        raise ScenarioError(f"{where}: unknown {which} {', '.join(sorted(bad))} (known: {', '.join(VARIANTS)})")
    variants = {k: _variant(k, v, where) for k, v in variants_raw.items()}
    timeout = data.get("timeout_s", 5)
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not 1 <= timeout <= 120:
        raise ScenarioError(f"{where}: timeout_s must be a number of seconds in 1..120")
    return Scenario(
        name=name,
        seed=str(data.get("seed", "")),
        title=_need(data, "title", str, where),
        story=_need(data, "story", str, where),
        worker=str(data.get("worker", "")),
        nproc=nproc,
        nodes=nodes,
        launcher=launcher,
        backends=backends,
        timeout_s=float(timeout),
        expected_category=category,
        culprit_ranks=tuple(culprits),
        nccl_signature=str(data.get("nccl_signature", "")),
        fails_on_cpu=bool(data.get("fails_on_cpu", True)),
        lesson=_need(data, "lesson", str, where),
        variants=variants,
    )


def load_scenarios(folder: Optional[Path] = None) -> dict[str, Scenario]:
    """Every scenario in ``folder`` (default: the bundled ones), by name, in file order."""
    folder = Path(folder) if folder else SCENARIO_DIR
    out: dict[str, Scenario] = {}
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ScenarioError(f"{path.name}: not valid JSON ({exc})") from None
        scenario = parse(data, path.name)
        if scenario.name != path.stem:
            raise ScenarioError(f"{path.name}: name {scenario.name!r} differs from the file name")
        out[scenario.name] = scenario
    return out


def get(name: str) -> Scenario:
    """The bundled scenario ``name``; ScenarioError lists the known ones."""
    scenarios = load_scenarios()
    try:
        return scenarios[name]
    except KeyError:
        raise ScenarioError(f"unknown scenario {name!r}; known: {', '.join(scenarios)} (`ncclnb repro list`)") from None
