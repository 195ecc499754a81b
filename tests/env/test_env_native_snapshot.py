"""The env on the native engine (issue 11, step 6): snapshot/restore and pickling give the trajectories the
Python engine gives, bit for bit."""

from __future__ import annotations

import pickle

import pytest

from kairos_gym.env import KairosEnv
from kairos_gym.sim.native_engine import NativeSimulator

from .common import TINY, assert_same, random_actions


def _env(monkeypatch, engine: str) -> KairosEnv:
    monkeypatch.setenv("KAIROS_ENGINE", engine)  # read when the env builds its simulator
    env = KairosEnv(TINY)
    assert isinstance(env.sim, NativeSimulator) == (engine == "native")
    return env


def _steps(env, mask, act, n):
    out = []
    for _ in range(n):
        obs, r, term, trunc, info = env.step(act(mask))
        out.append((obs, r, term, trunc, info))
        mask = info["action_mask"]
        if term or trunc:
            break
    return out, mask


@pytest.mark.parametrize("how", ["restore", "pickle"])
def test_native_env_snapshot_and_pickle_follow_the_python_trajectory(monkeypatch, how):
    runs = {}
    for engine in ("python", "native"):
        env = _env(monkeypatch, engine)
        _, info = env.reset(seed=3)
        head, mask = _steps(env, info["action_mask"], random_actions(1), 25)
        if how == "restore":
            snap = env.snapshot()
            _steps(env, mask, random_actions(2), 30)  # another future, undone by the restore
            _, info = env.restore(snap)
            assert (info["action_mask"] == mask).all()
            twin = env
        else:
            twin = pickle.loads(pickle.dumps(env))
            assert isinstance(twin.sim, NativeSimulator) == (engine == "native")
        tail, _ = _steps(twin, mask, random_actions(5), 60)
        runs[engine] = head + tail
    assert_same(runs["python"], runs["native"])
