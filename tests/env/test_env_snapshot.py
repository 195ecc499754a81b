"""The env's snapshot/restore and pickling give the recorded trajectories (tests/golden/engine_traces.json), bit
for bit."""

from __future__ import annotations

import pickle

import pytest

from kairos_gym.env import KairosEnv
from kairos_gym.sim.simulator import Simulator
from tests.golden.engine_cases import RUNNERS, env_steps, recorded

from .common import TINY, assert_same, random_actions


def _make_env(**kw) -> KairosEnv:
    env = KairosEnv(**kw)
    assert isinstance(env.sim, Simulator)
    return env


@pytest.mark.parametrize("how", ["restore", "pickle"])
def test_native_env_snapshot_and_pickle_follow_the_python_trajectory(how):
    assert RUNNERS[f"env/snapshot/{how}"]({"how": how}, None, _make_env) == recorded(f"env/snapshot/{how}")


@pytest.mark.parametrize("how", ["restore", "pickle"])
def test_restored_or_unpickled_env_goes_on_as_a_straight_run(how):
    """25 steps, then a restore (after another future) or a pickle, then 60 steps: the straight run's steps."""
    runs = []
    for branch in (None, how):
        env = _make_env(scenario=TINY)
        _, info = env.reset(seed=3)
        head, mask = env_steps(env, info["action_mask"], random_actions(1), 25)
        twin = env
        if branch == "restore":
            snap = env.snapshot()
            env_steps(env, mask, random_actions(2), 30)  # another future, undone by the restore
            _, info = env.restore(snap)
            assert (info["action_mask"] == mask).all()
        elif branch == "pickle":
            twin = pickle.loads(pickle.dumps(env))
            assert isinstance(twin.sim, Simulator)
        tail, _ = env_steps(twin, mask, random_actions(5), 60)
        runs.append(head + tail)
    assert len(runs[0]) > 50
    assert_same(runs[0], runs[1])
