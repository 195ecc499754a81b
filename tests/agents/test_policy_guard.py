"""A submitted policy runs under the guard of agents/policy_guard.py: a decide that is too slow, loops, or tries to
end the process is one ConfigError naming the flag and the submission; a well-behaved policy runs unchanged."""

from __future__ import annotations

import dataclasses

import pytest
from kairos_gym.agents.policy_file_loader import policy_from_file, run_checked
from kairos_gym.agents.policy_guard import MAX_LIMIT_S, Limits, guard
from kairos_gym.agents.registry import make_policy
from kairos_gym.agents.runner import simulate

from kairos_gym.errors import ConfigError
from kairos_gym.scenario import load_scenario
from tests.fixtures import MISBEHAVING_POLICIES


@pytest.fixture(scope="module")
def scenario():
    return load_scenario("small").with_overrides({"workload": {"max_requests": 40}})


@pytest.mark.parametrize("cls, why", [
    ("Exits", "raised SystemExit(3)"),
    ("Interrupts", "raised KeyboardInterrupt"),
    ("Slow", "took more than 0.1 s (--decision-time-limit)"),
    ("Loops", "took more than 0.1 s (--decision-time-limit)"),
    ("SlowRun", "more than 0.2 s (--run-time-limit)"),
    ("ExitsInInit", "raised SystemExit: 4"),
])
def test_a_misbehaving_submission_is_one_error_naming_it(tmp_path, scenario, cls, why):
    (tmp_path / "p.py").write_text(MISBEHAVING_POLICIES)
    spec = f"{tmp_path / 'p.py'}:{cls}"
    # the run limit binds only where it is the point (SlowRun): on a loaded machine the others' 40 requests may take
    # longer than 0.2 s before they misbehave
    ext = dataclasses.replace(policy_from_file(spec), limits=Limits(decision_s=0.1, run_s=0.2 if cls == "SlowRun"
                                                                   else 30.0))
    with pytest.raises(ConfigError) as e:
        run_checked(ext, scenario, 0)
    assert e.value.field == "--policy" and e.value.value == spec and why in str(e.value)


def test_a_guarded_policy_gives_the_unguarded_result(scenario):
    plain = simulate(make_policy("kairos", scenario, 0), scenario, 0)[0]
    kept = guard(make_policy("kairos", scenario, 0), Limits())
    guarded = simulate(kept, scenario, 0)[0]
    timing = {k for k in plain if k.startswith("decision_") or k == "wall_time_s"}
    assert {k: v for k, v in plain.items() if k not in timing} == {k: v for k, v in guarded.items() if k not in timing}
    assert guarded["decision_cpu_us_p50"] is not None  # still reset and timed as a BasePolicy


@pytest.mark.parametrize("kw", [{"decision_s": 0}, {"run_s": -1}, {"decision_s": MAX_LIMIT_S * 2},
                                {"run_s": float("nan")}, {"decision_s": True}])
def test_limits_outside_their_range_are_refused(kw):
    with pytest.raises(ConfigError, match="seconds > 0"):
        Limits(**kw)


SLOTTED = '''
from kairos_gym.sim.hook import Decision


class Slotted:
    __slots__ = ("calls",)

    def __init__(self):
        self.calls = 0

    def decide(self, ctx):
        self.calls += 1
        return Decision.prefill_path()


class SlowSlotted(Slotted):
    __slots__ = ()

    def decide(self, ctx):
        import time
        time.sleep(0.3)
        return Decision.prefill_path()
'''


def test_a_policy_with_slots_runs_guarded_behind_a_proxy(tmp_path, scenario):
    (tmp_path / "s.py").write_text(SLOTTED)
    ext = policy_from_file(f"{tmp_path / 's.py'}:Slotted")
    summary = run_checked(ext, scenario, 0)
    assert summary["n_requests"] == 40
    slow = dataclasses.replace(policy_from_file(f"{tmp_path / 's.py'}:SlowSlotted"), limits=Limits(decision_s=0.1))
    with pytest.raises(ConfigError, match=r"took more than 0.1 s \(--decision-time-limit\)"):
        run_checked(slow, scenario, 0)
