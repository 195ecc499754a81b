"""evaluate, sweep and compare run policies from a user's file or checkpoint beside the registry's: the same
loader and guard as the leaderboard (kairos_gym/agents/policy_file_loader.py), rows labelled by what they are, the
same figures as the registry policy they equal."""

from __future__ import annotations

import pytest
from kairos_gym.agents.policy_file_loader import policy_from_checkpoint, policy_from_file
from kairos_gym.agents.ppo import DEFAULT_CHECKPOINT

from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.backends import ProcessBackend
from kairos_gym.evaluation.compare import compare
from kairos_gym.evaluation.evaluate import evaluate
from kairos_gym.evaluation.sweep import sweep
from kairos_gym.scenario import load_scenario
from tests.fixtures import tiny_scenario

TINY = load_scenario(tiny_scenario(80))
CKPT = str(DEFAULT_CHECKPOINT.parent)
POLICY = '''from kairos_gym.agents.baselines import least_loaded_deflectable
from kairos_gym.sim.hook import Decision


class Deflector:
    """always-deflect-ls, written outside the package."""

    def decide(self, ctx):
        d = least_loaded_deflectable(ctx)
        return Decision.prefill_path() if d is None else Decision.deflect(d)


class Boom:
    def decide(self, ctx):
        raise RuntimeError("boom")
'''


@pytest.fixture
def externals(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text(POLICY)
    return [policy_from_file(f"{path}:Deflector", "evaluate", "--policy"),
            policy_from_checkpoint(CKPT, "evaluate", "--checkpoint")]


def _by_policy(runs):
    out: dict[str, list] = {}
    for r in runs:
        out.setdefault(r["policy"], []).append(r)
    return out


def test_evaluate_runs_files_and_checkpoints_beside_registry_names(externals, tmp_path):
    res = evaluate(TINY, ["always-deflect-ls", "ppo"], [0, 1], externals=externals)
    labels = ["always-deflect-ls", "ppo", "file:mine.py:Deflector", f"checkpoint:{CKPT}"]
    assert res["policies"] == labels
    runs = _by_policy(res["runs"])
    assert list(runs) == labels and all(len(v) == 2 for v in runs.values())
    for a, b in (("always-deflect-ls", "file:mine.py:Deflector"), ("ppo", f"checkpoint:{CKPT}")):
        for x, y in zip(runs[a], runs[b], strict=True):  # the same decisions, so the same figures
            assert (x["ttft_p95"], x["slo_attainment"], x["deflection_rate"]) == \
                (y["ttft_p95"], y["slo_attainment"], y["deflection_rate"])
    # plots include the external rows (their simulators kept in this process)
    res = evaluate(TINY, ["no-deflect"], [0], plots_dir=tmp_path / "plots", externals=externals[:1])
    assert len(res["plots"]) == 4


def test_evaluate_on_a_pool_gives_the_serial_result(externals):
    serial = evaluate(TINY, ["sq"], [0, 1], externals=externals)
    with ProcessBackend(2) as pool:
        pooled = evaluate(TINY, ["sq"], [0, 1], externals=externals, backend=pool)
    keys = ("policy", "ttft_p95", "slo_attainment", "n_requests")
    assert [[r[k] for k in keys] for r in serial["runs"]] == [[r[k] for k in keys] for r in pooled["runs"]]


def test_sweep_runs_them_in_the_load_sweep_and_beside_the_references(externals):
    res = sweep(TINY, [0.5, 1.0], ["always-deflect-ls"], [0], sq=(2048.0,), sl=(), chunks=(512,),
                references=["kairos"], externals=externals[:1])
    load = {(r["load"], r["policy"]): r for r in res["load"]}
    for f in (0.5, 1.0):
        assert load[(f, "file:mine.py:Deflector")]["slo_attainment"] == load[(f, "always-deflect-ls")]["slo_attainment"]
    assert [r["policy"] for r in res["thresholds"]] == ["sq", "kairos", "file:mine.py:Deflector"]


def test_compare_labels_checkpoints_and_files(externals):
    res = compare(["small:workload.num_requests=60"], ["no-deflect", "ppo"], [0], externals=externals)
    assert res[0]["policies"] == ["no-deflect", "ppo", "file:mine.py:Deflector", f"checkpoint:{CKPT}"]
    runs = _by_policy(res[0]["runs"])
    assert runs[f"checkpoint:{CKPT}"][0]["ttft_p95"] == runs["ppo"][0]["ttft_p95"]


def test_a_crashing_policy_stops_before_any_run(tmp_path, monkeypatch):
    import kairos_gym.agents.runner as runner

    path = tmp_path / "mine.py"
    path.write_text(POLICY)
    boom = policy_from_file(f"{path}:Boom", "evaluate", "--policy")
    real = runner.simulate
    calls = []

    def counting(policy, *a, **k):
        calls.append(getattr(policy, "name", type(policy).__name__))
        return real(policy, *a, **k)

    monkeypatch.setattr(runner, "simulate", counting)
    with pytest.raises(ConfigError, match=r"RuntimeError: boom at .*mine\.py:15 in decide"):
        evaluate(TINY, ["no-deflect", "kairos"], [0, 1], externals=[boom])
    assert calls == ["Boom"]  # the probe: no registry policy ran
    for fn in (lambda: sweep(TINY, [1.0], ["no-deflect"], [0], sq=(), sl=(), externals=[boom]),
               lambda: compare(["small"], ["no-deflect"], [0], externals=[boom])):
        with pytest.raises(ConfigError, match="RuntimeError: boom"):
            fn()


def test_bad_lists_are_refused_before_any_run(externals):
    with pytest.raises(ConfigError, match="given twice"):
        evaluate(TINY, [], [0], externals=[externals[0], externals[0]])
    with pytest.raises(ConfigError, match="at least one"):
        evaluate(TINY, [], [0])
    with pytest.raises(ConfigError, match="--policies"):
        compare(["small"], ["nope"], [0], externals=externals)
