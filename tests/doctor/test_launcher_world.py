"""The number of processes a launcher starts (Slurm's and torchrun's options, as a paste shows them) against
the world size the job's processes print (reason.launcher_findings)."""

from ncclnb.doctor import diagnose

BANNERS = "".join(f"Initializing distributed: GLOBAL_RANK: {r}, MEMBER: {r + 1}/4\n" for r in (0, 2, 1, 3))


def _rules(log: str) -> list:
    return [f.rule for f in diagnose(log).findings]


def test_slurm_starting_more_processes_than_the_world_size():
    log = "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\nsrun python train.py\n" + BANNERS + BANNERS
    top = diagnose(log).findings[0]
    assert (top.rule, top.category) == ("launcher_world_differs", "rank_world_size_mismatch")
    assert "starts 8 processes" in top.title and "world size is 4" in top.title
    assert _rules("srun --ntasks 8 python train.py\n" + BANNERS)[0] == "launcher_world_differs"


def test_torchrun_counts_its_workers_not_slurms_agents():
    # srun starts one torchrun agent per node; the world is nnodes x nproc_per_node
    agree = "#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=1\nsrun torchrun --nnodes 1 --nproc_per_node=4 train.py\n"
    assert "launcher_world_differs" not in _rules(agree + BANNERS)
    differ = "torchrun --nnodes=2 --nproc-per-node=4 train.py\n"
    assert "launcher_world_differs" in _rules(differ + BANNERS)


def test_what_the_paste_does_not_settle_says_nothing():
    # two attempts with different options, an elastic range, no world size printed
    two = "torchrun --nproc_per_node=8 train.py\ntorchrun --nproc_per_node=4 train.py\n"
    assert "launcher_world_differs" not in _rules(two + BANNERS)
    assert "launcher_world_differs" not in _rules("torchrun --nnodes=1:4 --nproc_per_node=2 train.py\n" + BANNERS)
    assert "launcher_world_differs" in _rules("torchrun --nnodes=2:2 --nproc_per_node=4 train.py\n" + BANNERS)
    assert "launcher_world_differs" not in _rules("#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\nno world size here\n")


def test_torchrun_without_nnodes_and_a_world_of_whole_nodes_is_that_many_nodes():
    # the paste shows nproc_per_node only (--nnodes cut, or set by PET_NNODES / a training operator)
    two_nodes = "".join(f"Initializing distributed: GLOBAL_RANK: {r}, MEMBER: {r + 1}/8\n" for r in range(8))
    assert "launcher_world_differs" not in _rules("torchrun --nproc_per_node 4 train.py\n" + two_nodes)
    # a world that is no whole number of such nodes still differs, and so does a smaller one
    assert "launcher_world_differs" in _rules("torchrun --nproc_per_node 3 train.py\n" + two_nodes)
    assert "launcher_world_differs" in _rules("torchrun --nproc_per_node 8 train.py\n" + BANNERS)


def test_every_launcher_option_the_reasoning_reads_is_a_trigger():
    from ncclnb.doctor.reason import LAUNCH
    from ncclnb.doctor.scan import has_trigger

    for option in ("--nodes", "--ntasks-per-node", "--ntasks", "--nnodes", "--nproc_per_node", "--nproc-per-node"):
        line = f"srun {option}=4 python train.py"
        assert LAUNCH.search(line) and has_trigger(line.encode()), option


STORE_WAIT = "torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. 8/16 clients joined.\n"


def test_slurms_environment_and_the_stores_wait_say_the_counts():
    # SLURM_NTASKS as the job echoes it; the world size the store's server waited for
    top = diagnose("SLURM_NNODES=1 SLURM_NTASKS=8 WORLD_SIZE=16\n" + STORE_WAIT).findings[0]
    assert top.rule == "launcher_world_differs" and "starts 8 processes" in top.title and "world size is 16" in top.title
    # a variable that only ends in the name is not Slurm's
    assert "launcher_world_differs" not in _rules("MY_SLURM_NTASKS=8\n" + STORE_WAIT)


def test_a_bind_warning_before_a_store_that_waited_for_clients_is_not_the_cause():
    bind = "[W socket.cpp:464] [c10d] The server socket has failed to bind to [::]:53394 (errno: 98 - Address already in use).\n"
    rules = _rules(bind + STORE_WAIT)
    assert rules[0] == "store_clients_timeout" and (
        "master_port_in_use" not in rules or rules.index("master_port_in_use") > rules.index("store_clients_timeout")
    )
    # a server that failed to listen on any address did not start: the port is the cause
    failed = bind + "[E socket.cpp:500] [c10d] The server socket has failed to listen on any local network address.\n"
    assert _rules(failed + STORE_WAIT)[0] == "master_port_in_use"


def test_torchrun_waiting_for_more_nodes_than_slurm_starts_agents():
    launch = "srun --nodes=2 --ntasks-per-node=1 bash -c 'torchrun --nnodes={n} --nproc_per_node=8 train.py'\n"
    timeout = "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError\n"
    top = diagnose(launch.format(n=4) + timeout).findings[0]
    assert (top.rule, top.category) == ("launcher_nodes_differ", "rank_world_size_mismatch")
    assert "waits for 4 nodes but Slurm starts 2 torchrun agents" in top.title
    assert "launcher_nodes_differ" not in _rules(launch.format(n=2) + timeout)
    # an elastic range of nodes: how many join is not fixed
    assert "launcher_nodes_differ" not in _rules(launch.format(n="1:4") + timeout)


def test_torchruns_options_as_a_kubernetes_operator_hands_them_count_too():
    env = "worker-0 env: PET_NNODES=2 PET_NPROC_PER_NODE=8 WORLD_SIZE=16\n"
    banner = "lightning: Initializing distributed: GLOBAL_RANK: 9, MEMBER: 10/32\n"
    assert "launcher_world_differs" in _rules(env + banner)
    assert "launcher_world_differs" not in _rules(env + banner.replace("10/32", "10/16"))
