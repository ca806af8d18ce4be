"""Every `--json` output carries a `schema` key ("ncclnb.<kind>/<n>", first),
`show --list --json` lists the bundled machines, and `show -` reads stdin."""

import argparse
import json
import re

import pytest

from tests.conftest import CAPTURES, REPO
from ncclnb.cli import build_parser

LOG = REPO / "ncclnb" / "doctor" / "signatures" / "watchdog_timeout.log"
SCHEMA = re.compile(r"ncclnb\.[a-z]+/[0-9]+")

# every command line that prints JSON, and the schema it names
JSON_OUTPUTS = [
    (["collect", "--no-torch", "--timeout", "1"], "ncclnb.node/1"),
    (["show", "hgx-h100", "--json"], "ncclnb.node/1"),
    (["show", "survey-demo", "--json"], "ncclnb.report/1"),
    (["show", "--list", "--json"], "ncclnb.machines/1"),
    (["doctor", "--json", str(LOG)], "ncclnb.diagnosis/1"),
    (["check", "--json", "seed000-2node-a10g"], "ncclnb.findings/1"),
    (["check", "--json", "hgx-h100"], "ncclnb.findings/1"),
    (["check", "--list", "--json"], "ncclnb.checks/1"),
    (["repro", "list", "--json"], "ncclnb.scenarios/1"),
]


@pytest.mark.parametrize("args,schema", JSON_OUTPUTS, ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_json_output_names_its_schema_first(cli, args, schema):
    proc = cli(*args)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert isinstance(data, dict) and next(iter(data)) == "schema"
    assert data["schema"] == schema and SCHEMA.fullmatch(schema)


def test_ingest_json_names_its_schema(cli):
    topo = CAPTURES / "topo_m__hgx-h100-8gpu__stas00-ml-engineering.txt"
    proc = cli("ingest", str(topo))
    assert proc.returncode == 0, proc.stderr
    assert next(iter(json.loads(proc.stdout).items())) == ("schema", "ncclnb.node/1")


def _json_commands(parser, path=()):
    """Every (sub)command that has a --json option, as its words."""
    for action in parser._actions:
        if "--json" in getattr(action, "option_strings", ()):
            yield path
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _json_commands(sub, path + (name,))


def test_every_json_option_is_covered_here():
    """A verb that gains --json must add its case to JSON_OUTPUTS (and carry a schema)."""
    covered = {
        tuple(
            w
            for w in args
            if not w.startswith("-") and w in {"show", "doctor", "check", "repro", "list", "run", "collect", "ingest"}
        )
        for args, _ in JSON_OUTPUTS
    }
    # repro run --json prints a ReproResult (ncclnb.repro/1): its own test runs a scenario
    missing = set(_json_commands(build_parser())) - covered - {("repro", "run")}
    assert not missing, missing


def test_repro_result_json_has_its_schema():
    from ncclnb.model import REPRO_SCHEMA, ReproResult

    assert REPRO_SCHEMA == "ncclnb.repro/1" and ReproResult.__dataclass_fields__["schema"].default == REPRO_SCHEMA


def test_show_list_json_matches_the_text_list(cli):
    data = json.loads(cli("show", "--list", "--json").stdout)
    names = [m["name"] for m in data["machines"]]
    text = [ln.split()[0] for ln in cli("show", "--list").stdout.splitlines() if ln.strip()]
    assert names == text and {"hgx-h100", "survey-demo"} <= set(names)
    assert all(set(m) == {"name", "description"} and m["description"] for m in data["machines"])


def test_show_reads_stdin(cli):
    for name in ("hgx-h100", "survey-demo"):
        raw = cli("show", name, "--json").stdout.encode()
        from_stdin = cli("show", "-", input=raw)
        assert from_stdin.returncode == 0, from_stdin.stderr
        assert from_stdin.stdout == cli("show", name).stdout


def test_show_stdin_round_trips_as_json(cli):
    raw = cli("show", "dgx-a100", "--json").stdout
    assert cli("show", "-", "--json", input=raw.encode()).stdout == raw


@pytest.mark.parametrize(
    "content", [b"", b"not json", b"\x00\x01\x02" * 100, b"[1, 2]", b'{"schema": "ncclnb.findings/1", "findings": []}']
)
def test_show_bad_stdin_is_one_line_exit_2(cli, content):
    proc = cli("show", "-", input=content)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ncclnb show: error: <stdin>"), proc.stderr
