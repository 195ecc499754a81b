"""A crash of a user's policy is reported with the user's file:line and the exception, as the author knows the
objects (kairos_gym/agents/policy_crash.py), whichever command runs it."""

from __future__ import annotations

import pytest
from kairos_gym.agents.policy_crash import crash_report, describe_exception, user_frame
from kairos_gym.agents.policy_file_loader import policy_from_file, probe, run_checked

from kairos_gym.errors import ConfigError
from kairos_gym.scenario import load_scenario
from tests.fixtures import tiny_scenario

TINY = tiny_scenario(60)

CRASHES = '''from kairos_gym.sim.hook import Decision


def helper(ctx):
    return ctx.request.prompt_tokens / 0


class Typo:
    def decide(self, ctx):
        return ctx.queued_tokens


class Divides:
    def decide(self, ctx):
        x = helper(ctx)
        return Decision.prefill_path()


class Late:
    def decide(self, ctx):
        if ctx.request.rid >= 45:
            raise RuntimeError("late failure")
        return Decision.prefill_path()


class BadCall:
    def decide(self, ctx):
        return Decision.deflect("zero", chunk=None, extra=1)
'''


def _file(tmp_path):
    path = tmp_path / "crashy.py"
    path.write_text(CRASHES)
    return path


@pytest.mark.parametrize("cls,needles", [
    ("Typo", ["AttributeError: DecisionContext has no attribute 'queued_tokens' (its fields: now_s, request",
              "crashy.py:10 in decide: return ctx.queued_tokens"]),
    ("Divides", ["ZeroDivisionError: division by zero", "crashy.py:5 in helper: return ctx.request.prompt_tokens / 0"]),
    ("BadCall", ["TypeError:", "crashy.py:28 in decide"]),
])
def test_a_crash_in_decide_names_the_users_line(cls, needles, tmp_path):
    ext = policy_from_file(f"{_file(tmp_path)}:{cls}", "evaluate", "--policy")
    with pytest.raises(ConfigError) as e:
        probe(ext, load_scenario(TINY))
    msg = str(e.value)
    assert e.value.where == "evaluate" and e.value.field == "--policy"
    for needle in needles:
        assert needle in msg, msg
    assert "LazyDecisionContext" not in msg


def test_a_crash_after_the_probe_is_reported_the_same_way(tmp_path):
    ext = policy_from_file(f"{_file(tmp_path)}:Late", "simulate", "--policy")
    sc = load_scenario(TINY)
    probe(ext, sc, requests=40)  # the first 40 requests decide fine
    with pytest.raises(ConfigError, match=r"RuntimeError: late failure at .*crashy\.py:22 in decide: raise Runtime"):
        run_checked(ext, sc, 0)


def test_the_report_without_a_user_frame_or_with_an_internal_name():
    try:
        raise ValueError("'LazyDecisionContext' object is read-only")
    except ValueError as e:
        assert describe_exception(e) == "ValueError: 'DecisionContext' object is read-only"
        assert user_frame(e, None) is None and user_frame(e, "/no/such/file.py") is None
        assert crash_report(e, "/no/such/file.py") == "ValueError: 'DecisionContext' object is read-only"
    assert describe_exception(KeyError()) == "KeyError"
