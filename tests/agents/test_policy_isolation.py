"""--isolate: a submission runs in a forked child under memory and CPU limits; its result equals the in-process
run's, and a child that crashes, exits or exhausts a limit is one ConfigError naming the submission."""

from __future__ import annotations

import dataclasses
import sys

import pytest
from kairos_gym.agents.policy_file_loader import policy_from_file, run_checked
from kairos_gym.agents.policy_guard import Limits
from kairos_gym.agents.policy_isolation import MIN_MEMORY_BYTES, check_isolation, run_isolated

from kairos_gym.errors import ConfigError
from kairos_gym.scenario import load_scenario

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="isolation needs fork")

POLICIES = '''
import ctypes, os, sys
from kairos_gym.sim.hook import Decision, PREFILL, DEFLECT


class Alternates:
    def __init__(self):
        self.n = 0

    def decide(self, ctx):
        self.n += 1
        if self.n % 3 == 0 and ctx.decode[0].can_deflect:
            return Decision(DEFLECT, decode_node=0, chunk=512)
        return Decision(PREFILL)


class HardExit:
    def decide(self, ctx):
        os._exit(7)


class Hog:
    def decide(self, ctx):
        self.keep = bytearray(4 << 30)
        return Decision(PREFILL)


class Crashes:
    def decide(self, ctx):
        ctypes.string_at(0)
'''


@pytest.fixture(scope="module")
def scenario():
    return load_scenario("small").with_overrides({"workload": {"max_requests": 40}})


def _ext(tmp_path, cls):
    (tmp_path / "p.py").write_text(POLICIES)
    return dataclasses.replace(policy_from_file(f"{tmp_path / 'p.py'}:{cls}"), limits=Limits(decision_s=5, run_s=60))


def test_the_isolated_result_equals_the_in_process_one(tmp_path, scenario):
    ext = _ext(tmp_path, "Alternates")
    here, there = run_checked(ext, scenario, 3), run_isolated(ext, scenario, 3)
    assert 0 < here["deflection_rate"] < 1 and here["n_completed"] == 40
    timing = {k for k in here if k.startswith("decision_") or k == "wall_time_s"}
    assert {k: v for k, v in here.items() if k not in timing} == {k: v for k, v in there.items() if k not in timing}
    through = run_checked(dataclasses.replace(ext, isolate_memory=2 << 30), scenario, 3)  # what --isolate runs
    assert {k: v for k, v in through.items() if k not in timing} == {k: v for k, v in here.items() if k not in timing}


@pytest.mark.parametrize("cls, why", [
    ("HardExit", "exit code 7"),
    ("Hog", "MemoryError"),
    ("Crashes", "exit code -11"),
])
def test_a_child_that_dies_or_hits_a_limit_is_one_error(tmp_path, scenario, cls, why):
    ext = _ext(tmp_path, cls)
    with pytest.raises(ConfigError) as e:
        run_isolated(ext, scenario, 0, memory_bytes=2 << 30)
    assert e.value.field == "--policy" and why in str(e.value)


def test_the_memory_limit_has_a_range():
    with pytest.raises(ConfigError, match="--isolate-memory"):
        check_isolation("leaderboard", MIN_MEMORY_BYTES - 1)
    assert check_isolation("leaderboard", MIN_MEMORY_BYTES) == MIN_MEMORY_BYTES
