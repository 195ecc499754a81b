"""Shared helpers of the environment tests."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import kairos_gym.env  # noqa: F401  (registers the ids)
from kairos_gym.errors import ConfigError
from kairos_gym.scenario import load_scenario
from tests.fixtures import TINY  # noqa: F401 - the env tests import it from here

SMALL_OVERRIDES = {"workload": {"max_requests": 60}}


def make_or_skip(env_id: str, **kwargs):
    """gym.make, skipping the test when the id's shipped scenario file is missing."""
    spec = gym.spec(env_id)
    try:
        load_scenario(spec.kwargs["scenario"])
    except ConfigError as e:
        pytest.skip(f"{env_id}: scenario not available ({e})")
    return gym.make(env_id, **kwargs)


def random_actions(seed: int):
    """A masked uniform random policy: mask -> action."""
    rng = np.random.default_rng(seed)

    def act(mask: np.ndarray) -> int:
        valid = np.flatnonzero(mask)
        return int(valid[rng.integers(valid.size)])

    return act


def rollout(env, seed: int, actions=None, policy_seed: int = 0, max_steps: int = 10**9):
    """Run one episode; returns (observations, rewards, infos, actions)."""
    obs, info = env.reset(seed=seed)
    act = random_actions(policy_seed)
    observations, rewards, infos, taken = [obs], [], [info], []
    for t in range(max_steps):
        a = actions[t] if actions is not None else act(info["action_mask"])
        obs, r, term, trunc, info = env.step(a)
        observations.append(obs)
        rewards.append(r)
        infos.append(info)
        taken.append(a)
        if term or trunc or (actions is not None and t + 1 == len(actions)):
            break
    return observations, rewards, infos, taken


def assert_same(a, b, path="") -> None:
    """Exact (bitwise for floats) equality of nested obs/info structures."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), path
        for k in a:
            assert_same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{path}[{i}]")
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True), path
    elif isinstance(a, float) and a != a:
        assert isinstance(b, float) and b != b, path
    else:
        assert a == b and type(a) is type(b), f"{path}: {a!r} != {b!r}"
