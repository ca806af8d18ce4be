"""The command runner (real processes) and environment redaction."""

from __future__ import annotations

import os
import sys
import time

from ncclnb.collectors.envvars import REDACTED, redact, redact_env, select_env
from ncclnb.collectors.runner import run


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); it is dead for our purpose
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def test_runner_captures_output_and_exit_code():
    result = run([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"], 10)
    assert (result.returncode, result.stdout.strip(), result.stderr.strip(), result.error) == (3, "out", "err", None)
    assert not result.ok
    assert result.reason("probe") == "probe exited with status 3: err"


def test_runner_reports_missing_command():
    result = run(["ncclnb-no-such-command-xyz"], 1)
    assert result.error == "not found" and result.returncode is None
    assert result.reason("ncclnb-no-such-command-xyz") == "ncclnb-no-such-command-xyz: not found"


def test_runner_timeout_kills_the_child_and_its_children(tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    # the child starts a grandchild that would outlive a plain kill of the child
    code = (
        "import subprocess, sys, time\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(60)\n"
    )
    start = time.monotonic()
    result = run([sys.executable, "-c", code], 1.5)
    assert time.monotonic() - start < 10
    assert result.error == "timed out after 1.5 s"
    grandchild = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while pid_alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_alive(grandchild), "the grandchild outlived the timeout"


def test_secret_names_are_redacted():
    for name in ("HF_TOKEN", "WANDB_API_KEY", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "MYSQL_PASSWD", "GCP_CREDENTIALS"):
        assert redact(name, "hunter2") == REDACTED
    assert redact("NCCL_SOCKET_IFNAME", "eth0") == "eth0"


def test_passwords_inside_urls_are_redacted():
    assert redact("MASTER_ADDR", "etcd://alice:s3cret@10.0.0.1:2379/x") == f"etcd://alice:{REDACTED}@10.0.0.1:2379/x"
    assert redact("TORCH_STORE", "https://:tok@host") == f"https://:{REDACTED}@host"
    assert redact("NCCL_X", "https://host/path?a=b") == "https://host/path?a=b"
    assert redact("X", "a=http://u:p@h b=ftp://v:q@i") == f"a=http://u:{REDACTED}@h b=ftp://v:{REDACTED}@i"


def test_select_env_keeps_the_distributed_variables_only():
    environ = {
        "NCCL_DEBUG": "INFO",
        "NCCL_SOCKET_IFNAME": "ens34",
        "TORCH_DISTRIBUTED_DEBUG": "DETAIL",
        "CUDA_VISIBLE_DEVICES": "6,7,8,9",
        "MASTER_ADDR": "10.0.0.1",
        "MASTER_PORT": "29500",
        "RANK": "7",
        "LOCAL_RANK": "3",
        "WORLD_SIZE": "4",
        "LOCAL_WORLD_SIZE": "4",
        "NODE_RANK": "1",
        "GROUP_RANK": "1",
        "SLURM_PROCID": "7",
        "SLURM_LOCALID": "3",
        "SLURM_NTASKS": "8",
        "SLURM_JOB_NODELIST": "node[01-02]",
        "OMPI_COMM_WORLD_RANK": "7",
        "OMPI_COMM_WORLD_LOCAL_RANK": "3",
        "HOME": "/root",
        "PATH": "/usr/bin",
        "HF_TOKEN": "hf_abc",
        "NCCL_IB_HCA": "mlx5_0",
        "TORCH_HUB_TOKEN": "x",
    }
    env = select_env(environ)
    for dropped in ("HOME", "PATH", "HF_TOKEN"):
        assert dropped not in env
    assert env["RANK"] == "7" and env["SLURM_JOB_NODELIST"] == "node[01-02]" and env["OMPI_COMM_WORLD_LOCAL_RANK"] == "3"
    assert env["TORCH_HUB_TOKEN"] == REDACTED  # kept (TORCH_*) but redacted
    assert list(env) == sorted(env)
    assert redact_env({"HF_TOKEN": "hf_abc", "HOME": "/root"}) == {"HF_TOKEN": REDACTED, "HOME": "/root"}
