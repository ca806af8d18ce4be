"""``ncclnb check``: run the checks on snapshots, cluster reports or bundled
machines. Python twin: ``ncclnb.check(target, only=...)``."""

from __future__ import annotations

import json
import os
import sys

from . import UsageError, add_fail_on, fail_status, write_output

FINDINGS_SCHEMA = "ncclnb.findings/1"
CHECKS_SCHEMA = "ncclnb.checks/1"

USAGE = "ncclnb check SNAPSHOT_OR_REPORT_OR_NAME... [--json] [--only ID,...] [--fail-on error|warning] [--list]"


def add_parser(subparsers):
    p = subparsers.add_parser(
        "check",
        help="run the checks on snapshots / reports / bundled machines",
        usage=USAGE,
        description="Run the checks on node snapshots, cluster reports or bundled machine names. Several "
        "snapshots are checked together as the nodes of one job. Exit 0 whether or not anything "
        "was found (with --fail-on, 1 when a finding is that severe); 2 on unreadable input.",
    )
    p.add_argument(
        "inputs",
        nargs="*",
        metavar="SNAPSHOT_OR_REPORT_OR_NAME",
        help="a JSON file written by `ncclnb collect` or a report, a bundled name, the output of an "
        "nccl-tests run (all_reduce_perf ...: its busbw is judged), or - for stdin",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help=f'print {{"schema": "{FINDINGS_SCHEMA}", "findings": [...]}}, each finding as '
        '`ncclnb doctor --json` gives it (with --list: {"schema": "' + CHECKS_SCHEMA + '", "checks": [...]})',
    )
    p.add_argument("--only", metavar="ID,...", help="run only these check ids")
    add_fail_on(p, "the check")
    p.add_argument("--list", action="store_true", help="list the check ids and exit")
    p.add_argument("-o", "--output", metavar="PATH", help="write to PATH instead of stdout")
    return p


def _load(item: str):
    from ..collectors.parsers.nccl_tests import looks_like_nccl_tests, parse_nccl_tests
    from ..recorded import load_facts

    raw = sys.stdin.buffer.read() if item == "-" else None
    if raw is None and os.path.isfile(item) and not item.endswith(".json"):
        from ..model.limits import JSON_LIMIT, read_bounded

        raw = read_bounded(item, limit=JSON_LIMIT, label=item, what="a JSON file or nccl-tests output")
    if raw is not None and raw.lstrip()[:1] not in (b"{", b"["):
        text = raw.decode("utf-8", "replace")
        if looks_like_nccl_tests(text):  # a person's own all_reduce_perf run: the link checks judge it
            return parse_nccl_tests(text, "<stdin>" if item == "-" else item)
    if raw is not None:
        return load_facts(raw, "<stdin>" if item == "-" else item)
    return load_facts(item)


def _require_known(only: str, known) -> None:
    """``--only`` names registered checks, or the command stops with one line
    (before any input is read)."""
    unknown = [i for i in (p.strip() for p in only.split(",")) if i and i not in known]
    if unknown:
        ids = "id" if len(unknown) == 1 else "ids"
        raise UsageError(f"--only: unknown check {ids}: {', '.join(unknown)} (known: {', '.join(sorted(known))})")


def combine(targets):
    """One target for ``check()``: a lone report as is, snapshots as one job,
    reports and snapshots merged (snapshots and rank tables concatenated)."""
    from ..model import ClusterReport, NodeSnapshot

    if len(targets) == 1:
        return targets[0]
    if all(isinstance(t, NodeSnapshot) for t in targets):
        return list(targets)
    snaps, ranks, links = [], [], []
    for t in targets:
        if isinstance(t, ClusterReport):
            snaps.extend(t.snapshots)
            ranks.extend(t.ranks)
            links.extend(t.links)
        else:
            snaps.append(t)
    return ClusterReport(snapshots=tuple(snaps), ranks=tuple(ranks), links=tuple(links), description="combined by ncclnb check")


def run(args) -> int:
    from ..checks import as_report, check, registry
    from ..terminal import render_findings

    if args.list:
        reg = registry()
        if args.json:
            text = json.dumps(
                {
                    "schema": CHECKS_SCHEMA,
                    "checks": [
                        {"id": i.id, "category": i.category, "takes": i.takes, "summary": i.summary} for i in reg.values()
                    ],
                },
                indent=2,
            )
        else:
            width = max(len(i) for i in reg)
            text = "\n".join(f"{i.id:{width}}  {i.takes:6}  {i.category:24}  {i.summary}" for i in reg.values())
        write_output(text, args.output)
        return 0
    if not args.inputs:
        raise UsageError(f"nothing to check; usage: {USAGE}")
    if args.only is not None:
        _require_known(args.only, registry())
    target = combine([_load(item) for item in args.inputs])
    findings = check(target, only=args.only)
    if args.json:
        text = json.dumps({"schema": FINDINGS_SCHEMA, "findings": [f.to_dict() for f in findings]}, indent=2, ensure_ascii=False)
    else:
        n_checks = len(registry()) if not args.only else len([p for p in args.only.split(",") if p.strip()])
        text = render_findings(findings, n_checks, len(as_report(target).snapshots))
    write_output(text, args.output)
    return fail_status(findings, args.fail_on)
