"""Bad input to the env that could otherwise be silently reinterpreted: a snapshot of another cluster shape, an
episode window above the workload size, an empty workload. Each is one ConfigError, before anything changes."""

from __future__ import annotations

import numpy as np
import pytest

from kairos_gym.env import KairosEnv
from kairos_gym.errors import ConfigError
from kairos_gym.workload import generate
from kairos_gym.workload.config import MAX_REQUESTS

from .common import TINY, assert_same


def _stepped(env: KairosEnv, seed: int = 0, steps: int = 5) -> KairosEnv:
    env.reset(seed=seed)
    for _ in range(steps):
        env.step(0)
    return env


def test_restore_of_another_cluster_shape_is_refused():
    """A 2P2D snapshot in a 1P4D env gave an observation of shape (57,) against a (96,) space."""
    snap = _stepped(KairosEnv(TINY)).snapshot()
    env = _stepped(KairosEnv(TINY, cluster={"prefill_nodes": 1, "decode_nodes": 4}), seed=3)
    assert env.observation_space.shape == (96,)
    before = env.snapshot()
    with pytest.raises(ConfigError, match=r"^KairosEnv.restore: state = .*2P2D.*allowed: .*1P4D"):
        env.restore(snap)
    # nothing changed: the env goes on exactly as a copy restored from its own snapshot
    twin = KairosEnv(TINY, cluster={"prefill_nodes": 1, "decode_nodes": 4})
    twin.restore(before)
    for _ in range(5):
        a, b = env.step(0), twin.step(0)
        assert env.observation_space.contains(a[0])
        assert_same(a, b)


@pytest.mark.parametrize("kwargs", [
    {"deflection": {"chunk_menu": [256, 512]}}, {"slo": {"tbt_s": 0.05}}, {"oracle": True},
])
def test_restore_of_another_scenario_or_oracle_setting_is_refused(kwargs):
    snap = _stepped(KairosEnv(TINY)).snapshot()
    with pytest.raises(ConfigError, match=r"KairosEnv\.restore"):
        _stepped(KairosEnv(TINY, **kwargs)).restore(snap)


def test_restore_of_a_partial_snapshot_is_refused():
    snap = _stepped(KairosEnv(TINY)).snapshot()
    del snap["slo"]
    with pytest.raises(ConfigError, match=r"KairosEnv\.snapshot"):
        KairosEnv(TINY).restore(snap)


def test_restore_into_an_equal_env_still_works():
    src = _stepped(KairosEnv(TINY))
    snap = src.snapshot()
    dst = KairosEnv(dict(TINY))
    obs, _ = dst.restore(snap)
    assert dst.observation_space.contains(obs)
    assert_same([src.step(0) for _ in range(5)], [dst.step(0) for _ in range(5)])


def test_episode_window_above_the_workload_size_names_both_numbers():
    """It was silently clipped to the whole workload."""
    env = KairosEnv(TINY, episode_window=121)
    with pytest.raises(ConfigError, match=r"episode_window = 121 .*at most the workload's size: 120 requests"):
        env.reset(seed=0)
    assert KairosEnv(TINY, episode_window=120).reset(seed=0)[1]["n_requests"] == 120
    with pytest.raises(ConfigError, match="episode_window"):
        KairosEnv(TINY, episode_window=MAX_REQUESTS + 1)


def test_episode_window_on_a_duration_workload():
    sc = {**TINY, "workload": {**TINY["workload"], "num_requests": None, "duration_s": 2.0}}
    env = KairosEnv(sc, episode_window=10**6)
    with pytest.raises(ConfigError, match=r"episode_window = 1000000 .*at most the workload's size: \d+ requests"):
        env.reset(seed=1)


def test_empty_workload_is_refused_when_the_env_is_built():
    # bursty Gamma arrivals (CV 3) have tiny gaps: seed 0's first arrival is at ~2.2e-13 s, so 1e-14 s is empty
    with pytest.raises(ConfigError, match=r"duration_s = 1e-14 .*at least one request"):
        KairosEnv(TINY, workload={"num_requests": None, "duration_s": 1e-14})


def test_empty_workload_is_refused_at_reset_in_window_mode():
    """A short duration: some seeds draw no arrival. reset(seed) of such a seed is a ConfigError naming it."""
    wl = {"num_requests": None, "duration_s": 0.2}
    cfg = KairosEnv(TINY, workload=wl).scenario.workload
    sizes = [len(generate(cfg, np.random.default_rng(s))) for s in range(100)]
    empty = sizes.index(0)  # bursty Gamma arrivals (CV 3): the first arrival often comes after 0.2 s
    assert sizes[0] > 0
    env = KairosEnv(TINY, workload=wl, episode_window=1)
    with pytest.raises(ConfigError, match=rf"duration_s = 0.2 .*seed {empty} drew no request"):
        env.reset(seed=empty)
    with pytest.raises(ConfigError, match=rf"seed {empty} drew no request"):
        KairosEnv(TINY, workload=wl).reset(seed=empty)
    assert env.reset(seed=0)[1]["n_requests"] == 1
