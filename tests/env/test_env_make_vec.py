"""gym.make_vec(id, num_envs=N, vectorization_mode="vector_entry_point") returns a KairosVectorEnv; gym.make(id)
returns the same wrapped env as before (KairosWrapper outermost, after TimeLimit)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from kairos_gym.env import KairosWrapper
from kairos_gym.env.registration import WRAPPER, env_ids
from kairos_gym.env.vector import KairosVectorEnv
from kairos_gym.errors import ConfigError

ID = "kairos_gym/KairosSmall-v0"


@pytest.mark.parametrize("mode", ["vector_entry_point", gym.VectorizeMode.VECTOR_ENTRY_POINT, None])
def test_make_vec_returns_a_kairos_vector_env(mode):
    vec = gym.make_vec(ID, num_envs=3, vectorization_mode=mode, max_decisions=4)
    assert type(vec) is KairosVectorEnv and vec.num_envs == 3
    assert vec.spec.id == ID and vec.spec.kwargs["scenario"] == "small" and vec.spec.kwargs["num_envs"] == 3
    assert all(e.max_decisions == 4 and e.scenario.name == vec.envs[0].scenario.name for e in vec.envs)
    obs, info = vec.reset(seed=5)
    assert obs.shape == (3, vec.single_observation_space.shape[0]) and info["action_mask"].shape[0] == 3
    ref = KairosVectorEnv(3, scenario="small", max_decisions=4)
    robs, _ = ref.reset(seed=5)
    assert obs.tobytes() == robs.tobytes()
    for _ in range(6):  # through an autoreset (max_decisions 4)
        a = np.zeros(3, dtype=np.int64)
        out, rout = vec.step(a), ref.step(a)
        for x, y in zip(out[:4], rout[:4], strict=True):
            assert np.asarray(x).tobytes() == np.asarray(y).tobytes()


def test_every_id_has_the_vector_entry_point():
    for env_id in env_ids():
        spec = gym.spec(env_id)
        assert spec.vector_entry_point == "kairos_gym.env.vector:KairosVectorEnv"
        assert tuple(spec.additional_wrappers) == (WRAPPER,) and list(spec.additional_wrappers[0:]) == [WRAPPER]


def test_gym_make_is_unchanged_by_the_vector_entry_point():
    env = gym.make(ID)
    assert type(env) is KairosWrapper and type(env.env) is gym.wrappers.OrderEnforcing
    assert type(env.env.env) is gym.wrappers.PassiveEnvChecker
    assert env.spec.additional_wrappers == (WRAPPER,) and len(env.spec.additional_wrappers) == 1
    limited = gym.make(ID, max_episode_steps=3)
    assert type(limited) is KairosWrapper and type(limited.env) is gym.wrappers.TimeLimit
    again = gym.make(limited.spec)
    assert type(again) is KairosWrapper and type(again.env) is gym.wrappers.TimeLimit
    assert not isinstance(again.env.env, KairosWrapper)
    sync = gym.make_vec(ID, num_envs=2, vectorization_mode="sync")
    assert type(sync) is gym.vector.SyncVectorEnv and all(type(e) is KairosWrapper for e in sync.envs)


def test_make_vec_refuses_what_the_vector_env_cannot_honour():
    with pytest.raises(ConfigError, match="max_episode_steps"):
        gym.make_vec(ID, num_envs=2, vectorization_mode="vector_entry_point", max_episode_steps=5)
    with pytest.raises(ConfigError, match="num_envs"):
        gym.make_vec(ID, num_envs=0, vectorization_mode="vector_entry_point")
    with pytest.raises(gym.error.Error, match="wrappers"):
        gym.make_vec(ID, num_envs=2, vectorization_mode="vector_entry_point", wrappers=[lambda e: e])
