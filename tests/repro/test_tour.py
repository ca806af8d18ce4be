"""``ncclnb tour``, the README's first command's last step: one scenario
broken (diagnosed), fixed (completes) and guarded (stopped at step 0), for
real, and a scenario without a guarded variant refused in one line."""

from __future__ import annotations

from _procs import processes_mentioning


def test_tour_runs_broken_fixed_and_guarded_for_real(cli, tmp_path):
    proc = cli("tour", "--keep", str(tmp_path / "tour"), timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    for heading in ("1. Reproduce", "2. Fix and verify", "3. Prevent"):
        assert heading in out
    assert out.count("\n  ok: ") == 3, out
    assert "the doctor names collective_desync blaming [1]" in out
    assert "completed in" in out
    assert "notebooks/00_start_here.ipynb" in out
    for variant in ("broken", "fixed", "guarded"):
        logs = tmp_path / "tour" / variant
        assert sorted(p.name for p in logs.glob("rank*.log")) == [f"rank{r}.log" for r in range(4)]
        assert (logs / "result.json").is_file()
    assert processes_mentioning(str(tmp_path / "tour")) == []


def test_tour_of_a_scenario_without_a_guarded_variant_is_one_line(cli):
    proc = cli("tour", "--scenario", "slow_rank_checkpoint")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "no guarded variant" in proc.stderr


def test_tour_of_an_unknown_scenario_is_one_line(cli):
    proc = cli("tour", "--scenario", "no_such_thing")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
