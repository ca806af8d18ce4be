"""A snapshot and a diagnosis must be safe to paste in a public issue.

Through the public functions (``ncclnb.collect(environ=...)``,
``ncclnb.ingest(text)``, ``ncclnb.diagnose(text)``, ``ncclnb doctor``):
credentials under secret names, credentials of known shapes under any name,
and passwords inside URLs are replaced by ``<redacted>``; diagnostic
settings (``NCCL_IB_PKEY``) stay readable. The tokens below are made up and
assembled from pieces so that no literal token sits in the source.
"""

from __future__ import annotations

import json
import random
import string

import pytest

import ncclnb
from ncclnb.collectors.runner import CommandResult

R = "<redacted>"


def _body(seed: int, n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    rnd = random.Random(seed)
    return "".join(rnd.choice(alphabet) for _ in range(n))


HF = "hf" + "_" + _body(1, 34)
GHP = "ghp" + "_" + _body(2, 36)
GHO = "gho" + "_" + _body(3, 36)
GH_PAT = "github" + "_pat_" + _body(4, 22) + "_" + _body(5, 59)
AWS = "AKIA" + _body(6, 16, string.ascii_uppercase + string.digits)
JWT = "eyJ" + _body(7, 30) + ".eyJ" + _body(8, 40) + "." + _body(9, 43)
SK = "sk" + "-proj-" + _body(10, 48)
SLACK = "xoxb" + "-" + _body(11, 12, string.digits) + "-" + _body(12, 24)
BEARER_TOKEN = _body(13, 40)
PEM_BODY = "MIIEowIBAAKCAQEA" + _body(14, 60)
PEM = f"-----BEGIN RSA PRIVATE KEY-----{PEM_BODY}-----END RSA PRIVATE KEY-----"
PEM_MULTI = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{PEM_BODY}\n{PEM_BODY[::-1]}\n-----END OPENSSH PRIVATE KEY-----"

# (variable, value, what the snapshot must store, secrets that must not appear anywhere)
ENV_CASES = [
    # passwords inside URLs and user:password@host without a scheme
    ("MASTER_URI", "alice:s3cr3tpw@10.0.0.1:29500", f"alice:{R}@10.0.0.1:29500", ["s3cr3tpw"]),
    ("MASTER_ADDR", "https://u:pa/ss@w0rd@head.example:29500", f"https://u:{R}@head.example:29500", ["pa/ss", "w0rd"]),
    (
        "TORCHELASTIC_RDZV_URL",
        "https://store.example/rdzv?token=tok0123&key=key4567&sig=sig89ab&n=4",
        f"https://store.example/rdzv?token={R}&key={R}&sig={R}&n=4",
        ["tok0123", "key4567", "sig89ab"],
    ),
    # secret names
    ("MASTER_AUTH", "opensesame1", R, ["opensesame1"]),
    ("MASTER_PASS", "opensesame2", R, ["opensesame2"]),
    ("TORCH_STORE_PASSWORD", "opensesame3", R, ["opensesame3"]),
    ("MASTER_DB_PWD", "opensesame4", R, ["opensesame4"]),
    ("TORCH_HUB_COOKIE", "opensesame5", R, ["opensesame5"]),
    ("TORCHELASTIC_SESSION", "opensesame6", R, ["opensesame6"]),
    ("MASTER_CREDS", "opensesame7", R, ["opensesame7"]),
    ("TORCH_PRIVATE_BLOB", "opensesame8", R, ["opensesame8"]),
    ("TORCH_URL_SIGNATURE", "opensesame9", R, ["opensesame9"]),
    # diagnostic settings whose name holds KEY stay readable
    ("NCCL_IB_PKEY", "0x8001", "0x8001", []),
    ("NCCL_IB_GID_INDEX", "3", "3", []),
    ("NCCL_IB_TC", "106", "106", []),
    # ... unless their value looks like a secret
    ("NCCL_IB_SL", GHP, R, [GHP[4:]]),
    # tokens known by their shape, under names that say nothing
    ("NCCL_DEBUG_SUBSYS", HF, R, [HF[3:]]),
    ("TORCH_EXTRA_ARGS", f"--hub {HF} --gh {GHO}", f"--hub {R} --gh {R}", [HF[3:], GHO[4:]]),
    ("MASTER_NOTE", GH_PAT, R, [GH_PAT[11:]]),
    ("CUDA_NOTE", f"id={AWS}", f"id={R}", [AWS[4:]]),
    ("TORCH_HEADERS", f"Authorization: Bearer {BEARER_TOKEN}", f"Authorization: Bearer {R}", [BEARER_TOKEN]),
    ("TORCH_JWT_HINT", JWT, R, [JWT[3:25]]),
    ("NCCL_PLUGIN_ARG", SK, R, [SK[3:]]),
    ("GLOO_NOTE", f"slack={SLACK}", f"slack={R}", [SLACK[5:]]),
    ("TORCH_SSH_HINT", PEM, f"-----BEGIN RSA PRIVATE KEY-----{R}-----END RSA PRIVATE KEY-----", [PEM_BODY]),
]
IDS = [case[0] for case in ENV_CASES]


def no_commands(argv, timeout):
    return CommandResult(None, error="not found")


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    root = tmp_path_factory.mktemp("bare-root")
    environ = {name: value for name, value, _, _ in ENV_CASES}
    environ.update({"NCCL_DEBUG": "INFO", "TORCH_MULTILINE_KEYFILE_HINT": PEM_MULTI, "HF_TOKEN": HF})
    snap = ncclnb.collect(
        environ=environ,
        sysfs_root=str(root),
        procfs_root=str(root / "proc"),
        run=no_commands,
        probe_torch=False,
        hostname="node-a",
        timeout=0.5,
    )
    return snap


ENV_BANNER = "\n".join(
    [
        "Collecting environment information...",
        "==============================",
        "        System Info",
        "==============================",
        "OS                           : Ubuntu 22.04.4 LTS (x86_64)",
        "==============================",
        "       PyTorch Info",
        "==============================",
        "PyTorch version              : 2.6.0+cu124",
        "==============================",
        "     Environment Variables",
        "==============================",
    ]
)


@pytest.fixture(scope="module")
def ingested():
    lines = [f"{name}={value}" for name, value, _, _ in ENV_CASES]
    return ncclnb.ingest(ENV_BANNER + "\n" + "\n".join(lines) + "\nNCCL_DEBUG=INFO\n")


@pytest.mark.parametrize("name, value, stored, secrets", ENV_CASES, ids=IDS)
def test_collect_redacts_secrets_in_the_environment(collected, name, value, stored, secrets):
    assert collected.env[name] == stored
    dumped = json.dumps(collected.to_dict())
    for secret in secrets:
        assert secret not in dumped


@pytest.mark.parametrize("name, value, stored, secrets", ENV_CASES, ids=IDS)
def test_ingest_redacts_secrets_in_pasted_collect_env(ingested, name, value, stored, secrets):
    assert ingested.env[name] == stored
    dumped = json.dumps(ingested.to_dict())
    for secret in secrets:
        assert secret not in dumped


def test_collect_redacts_a_multiline_private_key_under_any_name(collected):
    value = collected.env["TORCH_MULTILINE_KEYFILE_HINT"]
    assert value.startswith("-----BEGIN OPENSSH PRIVATE KEY-----") and R in value
    assert PEM_BODY not in json.dumps(collected.to_dict()) and PEM_BODY[::-1] not in json.dumps(collected.to_dict())


def test_pwd_and_oldpwd_are_paths_not_passwords():
    from ncclnb.model.redact import is_secret_name, redact_value

    assert not is_secret_name("PWD") and not is_secret_name("OLDPWD")
    assert redact_value("PWD", "/home/alice/run") == "/home/alice/run"
    assert is_secret_name("MYSQL_PWD") and is_secret_name("DB_PASSWORD") and is_secret_name("REDIS_PASSWD")
    assert not is_secret_name("NCCL_IB_PKEY") and is_secret_name("WANDB_API_KEY") and is_secret_name("SSH_KEY")
    assert not is_secret_name("GIT_AUTHOR_NAME") and is_secret_name("OAUTH_CLIENT") and is_secret_name("AUTHORIZATION")


def test_the_collectors_and_the_doctor_share_one_policy():
    """No second copy of the patterns: the collectors' redact is the model's."""
    from ncclnb.collectors import envvars
    from ncclnb.model import redact

    assert envvars.REDACTED is redact.REDACTED
    assert envvars.redact is redact.redact_value and envvars.is_secret_name is redact.is_secret_name


# ---- the doctor ---------------------------------------------------------------
# (log fragment after "Socket Timeout", what the redacted fragment must read, secrets)
LOG_CASES = [
    (
        "connecting to MASTER_URI=alice:s3cr3tpw@10.0.0.1:29500",
        f"connecting to MASTER_URI=alice:{R}@10.0.0.1:29500",
        ["s3cr3tpw"],
    ),
    ("store https://u:pa/ss@w0rd@head.example:29500/x", f"store https://u:{R}@head.example:29500/x", ["pa/ss", "w0rd"]),
    (
        "GET https://hub.example/f?token=tok0123&sig=sig89ab&n=4",
        f"GET https://hub.example/f?token={R}&sig={R}&n=4",
        ["tok0123", "sig89ab"],
    ),
    (
        "env WANDB_API_KEY=wandbsecret1 HF_TOKEN=hfsecret2 NCCL_IB_PKEY=0x8001",
        f"env WANDB_API_KEY={R} HF_TOKEN={R} NCCL_IB_PKEY=0x8001",
        ["wandbsecret1", "hfsecret2"],
    ),
    (f"hub login {HF}", f"hub login {R}", [HF[3:]]),
    (f"git clone https://{GHP}@github.com/org/repo", f"git clone https://{R}@github.com/org/repo", [GHP[4:]]),
    (f"pat {GH_PAT}", f"pat {R}", [GH_PAT[11:]]),
    (f"aws {AWS}", f"aws {R}", [AWS[4:]]),
    (f"header Authorization: Bearer {BEARER_TOKEN}", f"header Authorization: Bearer {R}", [BEARER_TOKEN]),
    (f"jwt {JWT}", f"jwt {R}", [JWT[3:25]]),
    (f"openai {SK}", f"openai {R}", [SK[3:]]),
    (f"slack {SLACK}", f"slack {R}", [SLACK[5:]]),
    (f"key {PEM}", f"key -----BEGIN RSA PRIVATE KEY-----{R}-----END RSA PRIVATE KEY-----", [PEM_BODY]),
]
LOG = "".join(f"[rank{r}]: torch.distributed.DistStoreError: Socket Timeout {frag}\n" for r, (frag, _, _) in enumerate(LOG_CASES))
ALL_SECRETS = [s for _, _, secrets in LOG_CASES for s in secrets]


def _leaks(text: str) -> list:
    return [s for s in ALL_SECRETS if s in text]


def test_diagnose_redacts_evidence_and_first_errors_and_keeps_the_line_readable():
    diag = ncclnb.diagnose(LOG)
    dumped = json.dumps(diag.to_dict())
    assert _leaks(dumped) == []
    assert any(f.rule == "dist_store_error" for f in diag.findings)
    firsts = {r.rank: r.first_error for r in diag.ranks}
    for rank, (_, readable, _) in enumerate(LOG_CASES):
        assert firsts[rank] == f"torch.distributed.DistStoreError: Socket Timeout {readable}"
    evidence = [ev.text for f in diag.findings for ev in f.evidence]
    assert f"[rank0]: torch.distributed.DistStoreError: Socket Timeout {LOG_CASES[0][1]}" in evidence


def test_diagnose_keeps_secrets_when_asked_for_local_use():
    diag = ncclnb.diagnose(LOG, redact=False)
    assert sorted(_leaks(json.dumps(diag.to_dict()))) == sorted(ALL_SECRETS)


def test_a_secret_cut_by_the_length_limits_is_still_redacted():
    """first_error keeps 200 characters, evidence 500: a token across the cut
    must not leave its first characters behind."""
    msg = "torch.distributed.DistStoreError: Socket Timeout "
    near_200 = msg + "x" * (190 - len(msg)) + " " + HF
    near_500 = "[rank1]: " + msg + "y" * (490 - 9 - len(msg)) + " " + GHP
    diag = ncclnb.diagnose(f"[rank0]: {near_200}\n{near_500}\n")
    firsts = {r.rank: r.first_error for r in diag.ranks}
    assert "hf_" not in firsts[0] and HF[3:9] not in firsts[0], firsts[0]
    texts = [ev.text for f in diag.findings for ev in f.evidence]
    assert texts and all("ghp_" not in t and GHP[4:10] not in t for t in texts), texts


def test_doctor_views_text_json_and_html_are_redacted(tmp_path, cli):
    from ncclnb.terminal import render_diagnosis as render_text
    from ncclnb.views.diagnosis import diagnosis_html

    diag = ncclnb.diagnose(LOG)
    assert _leaks(render_text(diag)) == [] and _leaks(diagnosis_html(diag)) == []
    log = tmp_path / "rank0.log"
    log.write_text(LOG)
    for args in (["--json"], []):
        proc = cli("doctor", *args, str(log))
        assert proc.returncode == 0, proc.stderr
        assert _leaks(proc.stdout) == [] and R in proc.stdout


def test_doctor_no_redact_shows_the_lines_as_they_were(tmp_path, cli):
    log = tmp_path / "rank0.log"
    log.write_text(LOG)
    proc = cli("doctor", "--json", "--no-redact", str(log))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    firsts = {r["rank"]: r["first_error"] for r in data["ranks"]}
    assert "alice:s3cr3tpw@10.0.0.1:29500" in firsts[0] and HF in firsts[4]


def test_redaction_changes_nothing_in_logs_without_secrets():
    """The knowledge base's own fixture logs hold no secrets: redacting must
    leave their diagnoses identical (no false positives)."""
    from pathlib import Path

    logs = sorted((Path(ncclnb.__file__).parent / "doctor" / "signatures").glob("*.log"))
    assert logs
    text = "".join(p.read_text() for p in logs)
    assert ncclnb.diagnose(text) == ncclnb.diagnose(text, redact=False)


ADVERSARIAL = {  # lines built to make a secret pattern backtrack over the whole line
    "userinfo": "!a:" * 20000 + "@",
    "assign": "token " + "a-" * 30000 + "=",
    "url": "x://a:" * 10000 + "@",
    "query": "?a" * 30000 + "token",
}


@pytest.mark.parametrize("kind", sorted(ADVERSARIAL))
def test_the_cost_of_redaction_is_bounded_on_hostile_lines(kind):
    """Unbounded, the patterns backtracked quadratically (16 s for one 16 KiB
    "assign" line, minutes at 64 KiB); bounded, a 64 KiB line takes well under
    a second (the budget is generous for loaded machines), and the doctor
    scrubs only the part of a line it keeps."""
    import time

    from ncclnb.model.redact import scrub

    started = time.perf_counter()
    scrub(ADVERSARIAL[kind])
    assert time.perf_counter() - started < 5
    log = f"[rank1]: torch.distributed.DistStoreError: Socket Timeout {ADVERSARIAL[kind]}\n" * 200
    started = time.perf_counter()
    diag = ncclnb.diagnose(log)
    assert time.perf_counter() - started < 15 and diag.findings
