"""One rank of a real gloo job that runs check_devices and
compare_across_ranks; started by test_devices.py.

    python tests/guard/_devices_worker.py RANK WORLD PORT OUT

Runs every case in one process group and writes OUT/rank<RANK>.json after
each ({case: {"ok": true} or the error}), so a parent that has to kill a
stuck job still sees how far each rank got. Leaves with os._exit.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import traceback


def main() -> int:
    rank, world, port, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    import torch
    import torch.distributed as dist

    from ncclnb.guard import GuardError, check_devices, compare_across_ranks

    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=5)
    )
    results: dict[str, dict] = {}
    path = os.path.join(out, f"rank{rank}.json")

    def record(name, fn):
        try:
            fn()
            results[name] = {"ok": True}
        except GuardError as exc:
            results[name] = {
                "error": "GuardError",
                "message": str(exc),
                "ranks": exc.ranks,
                "check": exc.check,
                "values": {k: {str(r): v for r, v in d.items()} for k, d in exc.values.items()},
            }
            print(f"{type(exc).__module__}.{type(exc).__name__}: {exc}", flush=True)  # as a traceback ends
        except Exception as exc:
            results[name] = {"error": type(exc).__name__, "message": str(exc).splitlines()[0] if str(exc) else ""}
        with open(path + ".tmp", "w") as fh:
            json.dump(results, fh)
        os.replace(path + ".tmp", path)

    os.environ["CUDA_VISIBLE_DEVICES"] = "6,7,8,9"
    # seed 001: no set_device, every process on its cuda:0 = physical GPU 6
    record("shared", lambda: check_devices(device=0))
    # the fix: cuda:<local rank>, physical GPUs 6,7,8,9
    record("own", lambda: check_devices(device=torch.device("cuda", rank)))
    # explicit identities: two hosts with GPUs 0 and 1 each; the same index on two hosts is two GPUs
    record("two_hosts", lambda: check_devices(device={"host": "node-a" if rank < 2 else "node-b", "index": str(rank % 2)}))
    # the same GPU told by UUID on two hosts' names is still one GPU (UUIDs are global)
    record("uuid", lambda: check_devices(device="GPU-aaaa" if rank in (1, 3) else f"GPU-{rank}"))
    record("cpu", lambda: check_devices(device="cpu"))
    del os.environ["CUDA_VISIBLE_DEVICES"]

    ours = {"torch": "2.2.0", "cuda": "12.3", "nccl": "2.19.3"}
    record("versions_equal", lambda: compare_across_ranks(versions=ours))
    record(
        "versions_minority", lambda: compare_across_ranks(versions=dict(ours, nccl="2.14.3", cuda="11.7") if rank == 3 else ours)
    )
    record("versions_tie", lambda: compare_across_ranks(versions=dict(ours, nccl="2.14.3") if rank < 2 else ours))
    if rank == 1:
        os.environ["NCCL_ALGO"] = "Tree"
    record("settings", lambda: compare_across_ranks(versions=ours))
    return 0


if __name__ == "__main__":
    try:
        code = main()
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
