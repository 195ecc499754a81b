"""The execution backends (docs/scale-out.md): results in task order, bounded retries, the flags' checks, and the
evaluation commands' output identical byte for byte on every backend (wall-time figures aside)."""

from __future__ import annotations

import json
import sys

import pytest

import kairos_gym.benchmark.suite as suite_mod
from kairos_gym.cli.main import main
from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.backends import BackendError, ProcessBackend, SerialBackend, Task, make_backend
from tests.fixtures import TINY_SUITE
from tests.ray.common import dies, flaky, json_without_wall, md_without_wall, needs_ray, square, strip_wall

SWEEP = ["sweep", "--scenario", "bursty", "--loads", "0.5,1.5", "--policies", "no-deflect,kairos", "--seeds", "0-1",
         "--sq-thresholds", "2048", "--sl-thresholds", "1024", "--chunks", "512", "--references", "kairos",
         "--no-progress"]
LEADERBOARD = ["leaderboard", "--policies", "no-deflect,sq,best-static,kairos,kairos-exact,oracle", "--track", "exact",
               "--no-progress"]
BACKENDS = [[], ["--workers", "2"], pytest.param(["--backend", "ray", "--workers", "2"], marks=needs_ray)]


def _sweep_outputs(extra, tmp_path, capsys):
    js = tmp_path / f"sweep{len(extra)}.json"
    assert main([*SWEEP, "--json", str(js), *extra]) == 0
    return capsys.readouterr().out, js.read_text()


def _leaderboard_outputs(extra, tmp_path, capsys):
    out, js = tmp_path / f"LB{len(extra)}.md", tmp_path / f"lb{len(extra)}.json"
    assert main([*LEADERBOARD, "--out", str(out), "--json", str(js), "--oracle-cache", str(tmp_path / "none.json"),
                 *extra]) == 0
    capsys.readouterr()
    # the header records the command as typed (other flags, other file names): left out with the wall time
    md = "\n".join(ln for ln in out.read_text().splitlines() if not ln.startswith("Command: "))
    return md_without_wall(md), json_without_wall(js, drop=("command",))


@pytest.mark.parametrize("extra", BACKENDS[1:], ids=["workers-2", "ray-2"])
def test_sweep_output_is_identical_on_every_backend(extra, tmp_path, capsys, request):
    if "ray" in extra:
        request.getfixturevalue("ray_session")
    serial = _sweep_outputs([], tmp_path, capsys)
    assert _sweep_outputs(extra, tmp_path, capsys) == serial  # table and JSON, byte for byte


@pytest.mark.parametrize("extra", BACKENDS[1:], ids=["workers-2", "ray-2"])
def test_two_task_leaderboard_is_identical_on_every_backend(extra, tmp_path, capsys, monkeypatch, request):
    if "ray" in extra:
        request.getfixturevalue("ray_session")
    monkeypatch.setattr(suite_mod, "SUITE", TINY_SUITE)
    serial = _leaderboard_outputs([], tmp_path, capsys)
    other = _leaderboard_outputs(extra, tmp_path, capsys)
    assert other[0] == serial[0]
    assert other[1] == serial[1]


def test_evaluate_runs_are_identical_with_a_process_pool():
    from kairos_gym.evaluation.evaluate import evaluate
    from tests.ray.common import strip_wall

    serial = evaluate("bursty", ["no-deflect", "sq", "kairos"], [0, 1, 2])
    with ProcessBackend(2) as be:
        pooled = evaluate("bursty", ["no-deflect", "sq", "kairos"], [0, 1, 2], backend=be)
    assert json.dumps(strip_wall(pooled), sort_keys=True) == json.dumps(strip_wall(serial), sort_keys=True)


def test_evaluate_plots_on_a_pool_keep_their_runs_in_the_driver(tmp_path):
    from kairos_gym.evaluation.evaluate import evaluate
    from kairos_gym.evaluation.plots import PLOT_FILES

    serial = evaluate("small", ["no-deflect", "kairos"], [0, 1], plots_dir=tmp_path / "a")
    with ProcessBackend(2) as be:
        pooled = evaluate("small", ["no-deflect", "kairos"], [0, 1], plots_dir=tmp_path / "b", backend=be)
    assert strip_wall(pooled["runs"]) == strip_wall(serial["runs"])
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == sorted(PLOT_FILES)


def test_leaderboard_with_a_policy_file_and_a_checkpoint_is_identical_on_a_pool(tmp_path, monkeypatch, capsys):
    """Entries loaded from a user's file or checkpoint run in the pool like the rest: same figures."""
    from kairos_gym.agents.ppo import DEFAULT_CHECKPOINT

    from tests.benchmark.test_leaderboard import POLICY_FILE

    monkeypatch.setattr(suite_mod, "SUITE", TINY_SUITE)
    pol = tmp_path / "my_policy.py"
    pol.write_text(POLICY_FILE)
    outs = []
    for extra in ([], ["--workers", "2"]):
        js = tmp_path / f"lb{len(extra)}.json"
        assert main(["leaderboard", "--policies", "no-deflect,kairos,kairos-exact,oracle", "--policy", f"{pol}:Prefill",
                     "--oracle-cache", str(tmp_path / "none.json"),
                     "--checkpoint", str(DEFAULT_CHECKPOINT.parent), "--track", "exact", "--no-progress",
                     "--out", str(tmp_path / "LB.md"), "--json", str(js), *extra]) == 0
        outs.append(json_without_wall(js, drop=("command",)))
    capsys.readouterr()
    assert outs[1] == outs[0]


def test_a_pool_counts_every_finished_task_on_the_progress_bar():
    from kairos_gym.progress import RunProgress

    bar = RunProgress("t", enabled=False)
    bar.start(6)
    with ProcessBackend(2) as b:
        b.map([Task(square, i, f"sq {i}") for i in range(6)], bar)
    assert bar.done == 6


# ---------------------------------------------------------------------------------------------- order, retries

@pytest.fixture(params=["serial", "pool", pytest.param("ray", marks=needs_ray)])
def be(request):
    """A constructor (keyword arguments: ``retries``, ``log``) of each kind of backend; Ray in the module's session."""
    if request.param == "ray":
        request.getfixturevalue("ray_session")
    return {"serial": SerialBackend, "pool": lambda **k: ProcessBackend(2, **k),
            "ray": lambda **k: make_backend("test", "ray", **k)}[request.param]


def test_results_come_back_in_task_order_and_failed_tasks_are_retried(be, tmp_path):
    log = tmp_path / "log.txt"
    with log.open("w") as fh, be(retries=2, log=fh) as b:
        tasks = [Task(square, i, f"sq {i}") for i in range(7)]
        tasks.insert(3, Task(flaky, (str(tmp_path / "count"), 2, "ok"), "flaky"))
        out = b.map(tasks)
    assert out == [0, 1, 4, "ok", 9, 16, 25, 36]
    assert b.attempts[3] == 3 and (tmp_path / "count").read_text() == "3"
    assert log.read_text().count("injected failure") == 2 and "retrying" in log.read_text()


def test_a_task_failing_past_its_retries_raises_a_backend_error_naming_it(be, tmp_path):
    with open(tmp_path / "log.txt", "w") as fh, be(retries=1, log=fh) as b, \
            pytest.raises(BackendError, match=r"'flaky' failed 2 time\(s\) \(--retries 1\).*injected failure 2"):
        b.map([Task(square, 2, "sq"), Task(flaky, (str(tmp_path / "count"), 5, "ok"), "flaky")])
    assert (tmp_path / "count").read_text() == "2"  # bounded: 1 + 1 retry


@pytest.mark.parametrize("kind", ["pool", pytest.param("ray", marks=needs_ray)])
def test_a_dead_worker_is_replaced_and_its_task_run_again(kind, tmp_path, request):
    if kind == "ray":
        request.getfixturevalue("ray_session")
    with open(tmp_path / "log.txt", "w") as fh, \
            (ProcessBackend(2, log=fh) if kind == "pool" else make_backend("test", "ray", log=fh)) as b:
        out = b.map([Task(square, 3, "sq"), Task(dies, (str(tmp_path / "died"), "back"), "dies")])
    assert out == [9, "back"] and b.attempts[1] == 2


def test_a_config_error_in_a_worker_is_not_retried_and_arrives_whole(tmp_path):
    from kairos_gym.evaluation.backends.runs import RunSpec, run_task
    from kairos_gym.scenario import load_scenario

    bad = run_task(RunSpec(load_scenario("bursty"), "sq", 0, {"queue_threshold": 10, "chunk": 300}), "bad chunk")
    with ProcessBackend(2) as b, pytest.raises(ConfigError) as e:
        b.map([bad])
    assert e.value.field == "chunk" and b.attempts[0] == 1


def test_serial_backend_without_retries_raises_the_task_error_unchanged(tmp_path):
    with pytest.raises(RuntimeError, match="injected failure 1") as e:
        SerialBackend(retries=0).map([Task(flaky, (str(tmp_path / "c"), 1, 0), "x")])
    assert not isinstance(e.value, BackendError)


# ---------------------------------------------------------------------------------------------- flags
@pytest.mark.parametrize("argv,needle", [
    (["--backend", "spark"], "--backend = 'spark'"),
    (["--workers", "0"], "--workers = '0'"),
    (["--workers", "257"], "--workers"),
    (["--retries", "11"], "--retries = '11'"),
    (["--address", "auto"], "--address = 'auto' is not valid; allowed: only with --backend ray"),
])
@pytest.mark.parametrize("cmd", ["evaluate", "sweep", "leaderboard"])
def test_bad_backend_flags_exit_2_with_one_line(cmd, argv, needle, capsys, tmp_path):
    extra = ["--out", str(tmp_path / "LB.md")] if cmd == "leaderboard" else []
    assert main([cmd, *argv, *extra, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"kairos-gym {cmd}: error: ") and needle in err[0], err


def test_backend_ray_without_ray_installed_is_one_clear_line(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    assert main(["evaluate", "--backend", "ray", "--policies", "no-deflect", "--seeds", "0", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Ray is not installed" in err[0] and "kairos-gym[ray]" in err[0], err


@needs_ray
def test_workers_with_address_is_refused(capsys):
    assert main(["sweep", "--backend", "ray", "--address", "auto", "--workers", "2"]) == 2
    assert "not with --address" in capsys.readouterr().err


def test_importing_kairos_gym_and_its_cli_does_not_import_ray():
    import subprocess

    code = ("import sys, kairos_gym, kairos_gym.cli.main, kairos_gym.evaluation.backends, "
            "kairos_gym.benchmark.leaderboard; print('ray' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


def test_a_pool_waits_on_its_futures_once_per_pass_not_once_per_completion(monkeypatch, tmp_path):
    # one as_completed() over the pending futures per pass (O(n) for a map of n tasks), not a wait() over all of
    # them after every completion (O(n^2): the driver at 60-100% of a core on 10^5 tasks; kairos_gym/perf/pool.py)
    import kairos_gym.evaluation.backends.local as local

    calls = []
    real = local.as_completed

    def counted(fs, *a, **k):
        calls.append(len(fs))
        return real(fs, *a, **k)

    monkeypatch.setattr(local, "as_completed", counted)
    with ProcessBackend(2) as b:
        assert b.map([Task(square, i, f"sq {i}") for i in range(40)]) == [i * i for i in range(40)]
    assert calls == [40]
    calls.clear()
    with open(tmp_path / "log.txt", "w") as fh, ProcessBackend(2, retries=2, log=fh) as b:
        tasks = [Task(square, i, f"sq {i}") for i in range(5)]
        tasks.append(Task(flaky, (str(tmp_path / "count"), 2, "ok"), "flaky"))
        assert b.map(tasks) == [0, 1, 4, 9, 16, "ok"]
    assert calls == [6, 1, 1]  # each retry of the flaky task is watched by the next pass
