"""Submitted entries on the workers (kairos_gym/benchmark/submitted.py): a ``--policy`` file and a ``--checkpoint``
run in the pool's processes, loaded there by path, with the serial run's results, under the same guard; a file
that changes during the run is refused."""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import re

import pytest
from kairos_gym.agents.policy_file_loader import policy_from_checkpoint, policy_from_file, run_checked
from kairos_gym.agents.ppo import DEFAULT_CHECKPOINT

import kairos_gym.benchmark.submitted as submitted_mod
import kairos_gym.benchmark.suite as suite_mod
from kairos_gym.benchmark.entries import entry_task, external_entry
from kairos_gym.benchmark.leaderboard import run_suite
from kairos_gym.benchmark.submitted import SubmittedRun, load, run_submitted, source_of
from kairos_gym.cli.main import main
from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.backends import ProcessBackend, SerialBackend
from kairos_gym.scenario import load_scenario
from tests.benchmark.test_leaderboard import POLICY_FILE
from tests.fixtures import TINY_BENCH, TINY_SUITE
from tests.ray.common import strip_wall

WHERE_AM_I = '''
import os

from kairos_gym.sim.hook import Decision


class WhereAmI:
    """Deflects nothing; its name is the process it runs in."""

    @property
    def name(self):
        return f"pid-{os.getpid()}"

    def decide(self, ctx):
        return Decision.prefill_path()


class ExitsLater:
    """Passes the 40-request probe, then tries to end its process."""

    def __init__(self):
        self.n = 0

    def decide(self, ctx):
        self.n += 1
        if self.n > 60:
            raise SystemExit(3)
        return Decision.prefill_path()
'''


def test_serial_and_a_2_process_pool_give_the_same_leaderboard_with_a_file_and_a_checkpoint(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_policy.py").write_text(POLICY_FILE)
    externals = [policy_from_file("my_policy.py:Prefill"), policy_from_checkpoint(str(DEFAULT_CHECKPOINT.parent))]
    kw = {"suite": TINY_SUITE, "reps": 200, "oracle_cache": tmp_path / "none.json"}
    policies = ["no-deflect", "kairos", "oracle"]
    serial = run_suite(policies, externals, backend=SerialBackend(retries=0), **kw)
    with ProcessBackend(2) as pool:
        pooled = run_suite(policies, externals, backend=pool, **kw)
    assert [e["label"] for e in pooled["entries"]][-2:] == [externals[0].label, externals[1].label]
    for key in ("figures", "per_task", "paired", "aggregates", "normalized", "anchors"):
        assert json.dumps(strip_wall(pooled[key]), sort_keys=True) == json.dumps(strip_wall(serial[key]),
                                                                                 sort_keys=True), key
    # the rows are not trivially equal: the file's policy is no-deflect's twin, the checkpoint differs from both
    assert pooled["figures"][externals[0].label] == pooled["figures"]["no-deflect"]
    assert pooled["figures"][externals[1].label] != pooled["figures"]["no-deflect"]


def test_submitted_runs_go_to_the_workers_which_load_the_file_themselves(tmp_path):
    path = tmp_path / "where.py"
    path.write_text(WHERE_AM_I)
    ext = policy_from_file(f"{path}:WhereAmI")
    entry = external_entry(ext)
    sc = load_scenario(TINY_BENCH)
    task = suite_mod.Task("tiny", TINY_BENCH, suite_mod.seeds(0), suite_mod.seeds(1))
    jobs = [entry_task(entry, task, sc, seed, f"where {seed}") for seed in range(4)]
    assert not any(j.local for j in jobs)
    pickle.dumps([(j.fn, j.arg) for j in jobs])  # what a worker receives pickles: a path, a class name, a scenario
    with ProcessBackend(2) as pool:
        pooled = pool.map(jobs)
    here = SerialBackend(retries=0).map(jobs)
    assert {r["policy"] for r in here} == {f"pid-{os.getpid()}"}  # the serial backend: the driver's own entry
    assert f"pid-{os.getpid()}" not in {r["policy"] for r in pooled}  # the pool: its workers
    for a, b in zip(pooled, here, strict=True):
        assert strip_wall({**a, "policy": ""}) == strip_wall({**b, "policy": ""})


def test_a_submission_that_exits_in_a_worker_is_its_own_error_with_exit_status_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(suite_mod, "SUITE", TINY_SUITE)
    (tmp_path / "p.py").write_text(WHERE_AM_I)
    argv = ["leaderboard", "--policies", "no-deflect,kairos,oracle", "--policy", f"{tmp_path}/p.py:ExitsLater",
            "--tasks", "tiny", "--track", "exact", "--no-progress", "--out", str(tmp_path / "o.md"),
            "--oracle-cache", str(tmp_path / "none.json")]
    errors = []
    for extra in ([], ["--workers", "2"]):
        assert main([*argv, *extra]) == 2
        errors.append(capsys.readouterr().err.strip().splitlines())
    err = errors[1]
    # the pool's error is the serial run's, word for word, but for the instance: the first failure to come back
    assert [re.sub(r"seed \d+", "seed N", e) for e in err] == [re.sub(r"seed \d+", "seed N", e) for e in errors[0]]
    assert len(err) == 1 and err[0].startswith("kairos-gym leaderboard: error: leaderboard: --policy = ")
    assert f"{tmp_path}/p.py:ExitsLater" in err[0] and "SystemExit(3)" in err[0] and "may not end the process" in err[0]
    assert not (tmp_path / "o.md").exists()


def test_a_worker_refuses_a_file_that_changed_since_the_driver_loaded_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_policy.py").write_text(POLICY_FILE)
    ext = policy_from_file("my_policy.py:Prefill")
    src = source_of(ext)
    assert src is not None and src.spec == "my_policy.py:Prefill" and src.target == f"{tmp_path}/my_policy.py:Prefill"
    assert load(src) is ext  # the driver keeps its own entry: the file does not run twice here
    monkeypatch.setattr(submitted_mod, "_LOADED", {})  # as in a fresh worker
    sc = load_scenario(TINY_BENCH)
    fresh = load(src)
    assert fresh is not ext and (fresh.label, fresh.spec, fresh.limits) == (ext.label, ext.spec, ext.limits)
    assert strip_wall(run_submitted(SubmittedRun(src, sc, 0))) == strip_wall(run_checked(ext, sc, 0))
    monkeypatch.setattr(submitted_mod, "_LOADED", {})
    (tmp_path / "my_policy.py").write_text(POLICY_FILE + "\n# edited\n")
    with pytest.raises(ConfigError) as e:
        run_submitted(SubmittedRun(src, sc, 0))
    assert (e.value.field, e.value.value) == ("--policy", "my_policy.py:Prefill")
    assert "changed during the run" in str(e.value)


def test_a_checkpoint_source_names_its_resolved_folder_and_an_entry_built_in_code_stays_in_the_driver(tmp_path):
    ext = policy_from_checkpoint(str(DEFAULT_CHECKPOINT.parent))
    src = source_of(ext)
    assert src is not None and src.target == str(DEFAULT_CHECKPOINT.parent.resolve())
    assert src.label == ext.label == f"checkpoint:{DEFAULT_CHECKPOINT.parent}"
    in_code = dataclasses.replace(ext, flag="(python)")
    assert source_of(in_code) is None
    entry = external_entry(in_code)
    task = suite_mod.Task("tiny", TINY_BENCH, suite_mod.seeds(0), suite_mod.seeds(1))
    assert entry.spec is None and entry_task(entry, task, load_scenario(TINY_BENCH), 0, "x").local


def test_an_isolated_submission_runs_in_a_child_of_the_worker_with_the_serial_results(tmp_path):
    from kairos_gym.agents.policy_isolation import DEFAULT_MEMORY_BYTES

    path = tmp_path / "where.py"
    path.write_text(WHERE_AM_I)
    sc = load_scenario(TINY_BENCH)
    task = suite_mod.Task("tiny", TINY_BENCH, suite_mod.seeds(0), suite_mod.seeds(1))
    plain = policy_from_file(f"{path}:WhereAmI")
    isolated = dataclasses.replace(plain, isolate_memory=DEFAULT_MEMORY_BYTES)
    exits = dataclasses.replace(policy_from_file(f"{path}:ExitsLater"), isolate_memory=DEFAULT_MEMORY_BYTES)
    with ProcessBackend(2) as pool:
        pooled = pool.map([entry_task(external_entry(isolated), task, sc, s, f"iso {s}") for s in range(3)])
        with pytest.raises(ConfigError) as e:
            pool.map([entry_task(external_entry(exits), task, sc, 0, "exits")])
    here = SerialBackend(retries=0).map([entry_task(external_entry(plain), task, sc, s, f"s {s}") for s in range(3)])
    workers = {r["policy"] for r in pooled}
    assert f"pid-{os.getpid()}" not in workers  # each isolated run: a child forked by a worker
    for a, b in zip(pooled, here, strict=True):
        assert strip_wall({**a, "policy": ""}) == strip_wall({**b, "policy": ""})
    assert "SystemExit(3)" in str(e.value) and e.value.field == "--policy"


def test_precision_spreads_a_submission_over_the_pool_with_the_serial_result(tmp_path):
    from kairos_gym.benchmark.precision import run_precision
    from kairos_gym.benchmark.suite import select_tasks

    (tmp_path / "my_policy.py").write_text(POLICY_FILE)
    ext = policy_from_file(f"{tmp_path}/my_policy.py:Prefill")
    kw = {"suite": select_tasks("bursty/strict"), "tracks": ("exact",), "half_width": 0.05, "pilot": 3,
          "max_instances": 6}
    serial = run_precision(["no-deflect", "kairos"], [ext], **kw)
    with ProcessBackend(2, 0) as pool:
        pooled = run_precision(["no-deflect", "kairos"], [ext], backend=pool, **kw)
    assert pooled["cells"] == serial["cells"]
    cells = pooled["cells"]["exact"]["bursty/strict"]
    assert cells[ext.label]["scores"] == cells["no-deflect"]["scores"][:len(cells[ext.label]["scores"])]
