"""Policy registry (names, parameters, errors) and the runner."""

from __future__ import annotations

import pytest
from kairos_gym.agents import POLICIES, Kairos, NoDeflect, make_policy, policy_params, run_policy

from kairos_gym.errors import ConfigError
from kairos_gym.sim.hook import Decision
from tests.fixtures import tiny_scenario

TINY = tiny_scenario(60, rate=20, cv=None)


def test_names():
    assert list(POLICIES) == ["no-deflect", "always-deflect", "always-deflect-ls", "random", "sq", "sq-ls", "sl",
                              "sl-ls", "pending-switch", "slo-guard", "kairos", "kairos-exact", "kairos-pull", "oracle",
                              "ppo", "distilled-oracle"]


def test_a_former_name_is_refused_with_the_new_one():
    with pytest.raises(ConfigError, match=r"ppo-general.*'distilled-oracle'.*supervised student"):
        make_policy("ppo-general", TINY)


def test_kairos_exact_is_kairos_on_the_exact_track():
    k = make_policy("kairos-exact", TINY, seed=3, alpha=1.5)
    assert isinstance(k, Kairos) and not k.realistic and k.alpha == 1.5
    assert "staleness_s" not in policy_params("kairos-exact") and "model_error" not in policy_params("kairos-exact")
    exact = run_policy("kairos-exact", TINY, seed=1)
    same = run_policy("kairos", TINY, seed=1)
    assert exact["policy"] == "kairos-exact"
    for key in ("ttft_p95", "slo_attainment", "deflection_rate"):
        assert exact[key] == same[key], key
    # it draws no random numbers: the policy seed does not matter
    assert run_policy("kairos-exact", TINY, seed=1)["ttft_p95"] == run_policy(
        make_policy("kairos-exact", TINY, seed=7), TINY, seed=1)["ttft_p95"]


def test_kairos_exact_refuses_a_realistic_track_scenario():
    with pytest.raises(ConfigError) as e:
        make_policy("kairos-exact", {**TINY, "information": {"track": "realistic"}})
    assert "information.track" in e.value.field and "run kairos" in str(e.value)


@pytest.mark.parametrize("name", ["kairos", "kairos-exact"])
def test_former_kairos_knobs_are_refused_by_make_policy_naming_the_scenario_option(name):
    with pytest.raises(ConfigError) as e:
        make_policy(name, TINY, staleness_s=0.2)
    assert e.value.field == "staleness_s" and "information.staleness_s" in str(e.value)


def test_make_policy_with_parameters():
    k = make_policy("kairos", TINY, seed=3, alpha=1.5)
    assert isinstance(k, Kairos) and k.alpha == 1.5 and k.seed == 3
    assert make_policy("sq", TINY, queue_threshold=100, unit="tokens").queue_threshold == 100
    assert "alpha" in policy_params("kairos") and "bases" in policy_params("oracle")


def test_unknown_name_lists_choices():
    with pytest.raises(ConfigError) as e:
        make_policy("kairoz", TINY)
    for name in POLICIES:
        assert name in str(e.value)


def test_unknown_parameter_lists_valid_ones():
    with pytest.raises(ConfigError) as e:
        make_policy("kairos", TINY, gamma=2)
    assert e.value.field == "gamma"
    for p in ("alpha", "beta", "chunk_menu"):
        assert p in str(e.value)
    assert "staleness_s" not in str(e.value)


def test_bad_value_and_bad_scenario():
    with pytest.raises(ConfigError):
        make_policy("kairos", TINY, alpha=-1)
    with pytest.raises(ConfigError):
        make_policy("kairos", {"name": "x", "slo": {"ttft": 1}})
    # no path: the shipped checkpoint (agents/checkpoints/ppo-kairos-v0) is used
    assert make_policy("ppo", TINY).path.endswith("ppo-kairos-v0/policy.json")
    with pytest.raises(ConfigError):
        make_policy("ppo", TINY, path="/nonexistent/model.zip")


def test_run_policy_summary():
    s = run_policy("no-deflect", TINY, seed=1)
    assert s["policy"] == "no-deflect" and s["seed"] == 1
    assert s["n_completed"] + s["n_rejected"] == s["n_requests"] == 60
    assert s["decision_us_p50"] is not None and s["decision_us_p99"] >= s["decision_us_p50"]
    assert s["decision_cpu_us_p50"] is not None and s["decision_cpu_us_p99"] >= s["decision_cpu_us_p50"]
    assert s["deflection_rate"] == 0.0


def test_run_policy_is_reproducible_and_resets():
    k = make_policy("kairos", TINY, seed=0)
    a = run_policy(k, TINY, seed=2)
    n = len(k.decision_times_us)
    b = run_policy(k, TINY, seed=2)
    assert len(k.decision_times_us) == n  # reset between runs
    for key in ("ttft_p95", "tbt_violation_rate", "slo_attainment", "deflection_rate"):
        assert a[key] == b[key]
    assert a["policy_params"]["alpha"] == 1.3


def test_run_policy_with_hook_only_object():
    class Plain:
        name = "plain"

        def decide(self, ctx):
            return Decision.prefill_path()

    s = run_policy(Plain(), TINY, seed=0)
    assert s["policy"] == "plain" and s["decision_us_p50"] is not None
    assert s == {**s, "deflection_rate": 0.0}
    with pytest.raises(TypeError):
        run_policy(NoDeflect(), TINY, 0, chunk=5)
