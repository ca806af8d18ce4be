"""One rank of a real gloo job that runs the guards; started by test_guard.py.

    python tests/guard/_worker.py CASE RANK WORLD PORT OUT

Runs every step of CASE in one process group and writes OUT/rank<RANK>.json
after each step ({step: {"ok": true} or the error}), so a parent that has to
kill a stuck job still sees how far each rank got. Leaves with os._exit:
after a gloo failure a normal exit often aborts (code 134).
"""

from __future__ import annotations

import datetime
import json
import os
import random
import sys
import traceback


def main() -> int:
    case, rank, world, port, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
    import torch
    import torch.distributed as dist

    from ncclnb.guard import GuardError, Watermark, assert_same, check_dataset

    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        timeout=datetime.timedelta(seconds=5),
    )
    results: dict[str, dict] = {}
    path = os.path.join(out, f"rank{rank}.json")

    def record(name, fn):
        try:
            value = fn()
            results[name] = {"ok": True, "value": value}
        except GuardError as exc:
            results[name] = {
                "error": "GuardError",
                "message": str(exc),
                "ranks": exc.ranks,
                "check": exc.check,
                "values": {k: {str(r): v for r, v in d.items()} for k, d in exc.values.items()},
            }
        except Exception as exc:
            results[name] = {"error": type(exc).__name__, "message": str(exc).splitlines()[0] if str(exc) else ""}
        with open(path + ".tmp", "w") as fh:
            json.dump(results, fh)
        os.replace(path + ".tmp", path)

    t = torch.ones(8)

    def train(steps, wm, extra=None):
        for s in range(1, steps + 1):
            dist.all_reduce(t)
            if extra:
                extra(s)
            wm.step()
        return {"count": wm.count, "steps": wm.steps}

    if case == "four":
        record("equal", lambda: assert_same(dataset_len=1000, cfg={"lr": 0.1, "layers": (256, 256)}, tags={"a", "b"}))
        record("len", lambda: assert_same(dataset_len=1001 if rank == 1 else 1000, seed=0))
        data = [f"sample-{i}" for i in range(500)]
        record("dataset_equal", lambda: check_dataset(data))
        split = list(data)
        if rank == 2:  # a split made with another seed: same length, other first items
            random.Random(7).shuffle(split)
        record("dataset_split", lambda: check_dataset(split[:400]))
        from torch.utils.data import Subset

        indices = list(range(0, 300, 3)) if rank != 3 else list(range(1, 301, 3))
        record("subset", lambda: check_dataset(Subset(data, indices)))

        def pass_case():
            model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 4))
            with Watermark(every=5, timeout=5) as wm:
                before = wm.count
                for s in range(1, 21):
                    model(torch.ones(2, 4)).sum().backward()
                    dist.all_reduce(t)
                    if s % 7 == 0:
                        assert_same(step=s)
                    wm.step()
                return {"issued": wm.count - before, "steps": wm.steps}

        record("watermark_pass", pass_case)

        def extra_case():
            # rank 1 issues one more all_reduce right before the check at step 10;
            # async, as a NCCL call is for the CPU: rank 1 still reaches the check.
            with Watermark(every=5, timeout=5) as wm:
                return train(10, wm, lambda s: s == 10 and rank == 1 and dist.all_reduce(t, async_op=True))

        record("watermark_extra", extra_case)
    elif case == "pair":
        record("tie", lambda: assert_same(x=rank, same="yes"))

        def tie_case():
            wm = Watermark(every=5, timeout=5)
            work = []
            try:
                return train(5, wm, lambda s: s == 5 and rank == 0 and work.append(dist.all_reduce(t, async_op=True)))
            finally:
                if rank == 1:  # give rank 0's extra all_reduce its partner: the group is aligned again
                    dist.all_reduce(t)
                for w in work:
                    w.wait()
                wm.uninstall()

        record("watermark_tie", tie_case)
        record("after_tie", lambda: assert_same(aligned=True))

        def blocked_case():
            # rank 1 runs a synchronous extra all_reduce at step 7: at step 10 it
            # blocks in an all_reduce rank 0 never issues, rank 0 waits in the check.
            with Watermark(every=5, timeout=3) as wm:
                return train(10, wm, lambda s: s == 7 and rank == 1 and dist.all_reduce(t))

        record("watermark_blocked", blocked_case)
    else:
        raise SystemExit(f"unknown case {case!r}")
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
