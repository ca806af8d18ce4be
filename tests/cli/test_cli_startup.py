"""What ``ncclnb VERB`` loads: only that verb's parser, and the doctor on a
small log neither the other verbs' modules nor numpy; the verb's parser alone
reads arguments as the whole parser does."""

import subprocess
import sys

import pytest

from tests.conftest import REPO
from ncclnb.cli import VERBS, build_parser

LOG = REPO / "ncclnb" / "doctor" / "signatures" / "watchdog_timeout.log"


def _sub_help(parser, *path: str) -> str:
    """The help text of the sub-parser reached by ``path`` (verb, then its action)."""
    for name in path:
        action = next(a for a in parser._actions if a.dest in ("verb", "action"))
        parser = action.choices[name]
    return parser.format_help()


@pytest.mark.parametrize("verb", VERBS)
def test_one_verbs_parser_is_that_verb_of_the_whole_parser(verb):
    whole, alone = build_parser(), build_parser((verb,))
    assert _sub_help(alone, verb) == _sub_help(whole, verb)
    assert alone.format_usage() == whole.format_usage()


def test_doctor_on_a_small_log_loads_no_other_verb_and_no_numpy():
    probe = (
        "import sys\n"
        "from ncclnb.cli import main\n"
        f"code = main(['doctor', '--json', {str(LOG)!r}])\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'numpy' or m.startswith('ncclnb.repro') "
        "or (m.startswith('ncclnb.cli.') and m != 'ncclnb.cli.doctor_verb'))\n"
        "print(code, loaded, file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert '"schema": "ncclnb.diagnosis/1"' in proc.stdout
    assert proc.stderr.strip().splitlines()[-1] == "0 []"


def test_top_level_help_still_lists_every_verb():
    proc = subprocess.run([sys.executable, "-m", "ncclnb", "--help"], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0
    listed = [line.split()[0] for line in proc.stdout.splitlines() if line.startswith("    ") and line.split()]
    assert [v for v in listed if v in VERBS] == list(VERBS)
