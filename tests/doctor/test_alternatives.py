"""An "also consistent with" finding names the rule it reads again in ``alternative_of``."""

from __future__ import annotations

import json
from dataclasses import replace

from ncclnb.doctor import diagnose
from ncclnb.model import Diagnosis
from ncclnb.views.diagnosis import findings_html

# a garbage peer address: a version mismatch first, a wrong NCCL_SOCKET_IFNAME as its alternative
FAMILY_0 = "ncclSocketInit: connecting to address with family 0 is neither AF_INET(2) nor AF_INET6(10)\n"


def test_an_alternative_keeps_its_rule_id_and_names_it():
    findings = diagnose(FAMILY_0).findings
    base = next(f for f in findings if f.rule == "socket_init_family_0" and not f.alternative_of)
    alt = next(f for f in findings if f.alternative_of)
    assert (alt.rule, alt.category, alt.alternative_of) == ("socket_init_family_0", "socket_ifname", "socket_init_family_0")
    assert base.category == "version_mismatch" and findings.index(base) < findings.index(alt)
    assert alt.title == "Also consistent with socket ifname: " + base.title
    assert not any("~" in f.rule for f in findings)


def test_alternative_of_survives_the_json():
    diag = diagnose(FAMILY_0)
    data = json.loads(json.dumps(diag.to_dict()))
    assert [f["alternative_of"] for f in data["findings"]][:2] == ["", "socket_init_family_0"]
    assert Diagnosis.from_dict(data) == diag


def test_alternatives_of_one_rule_get_a_row_each_in_the_more_table():
    alt = next(f for f in diagnose(FAMILY_0).findings if f.alternative_of)
    other = replace(alt, category="ib_misconfig", title="Also consistent with ib misconfig: ...")
    html = findings_html([alt, other, alt], limit=0)
    assert html.count("<code>socket_init_family_0</code>") == 2
    assert "Also consistent with socket ifname" in html and "Also consistent with ib misconfig" in html
