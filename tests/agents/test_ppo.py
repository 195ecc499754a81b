"""PPOAgent: loads SB3 / sb3-contrib zips, predicts on observations, decides through the env's encoders."""

from __future__ import annotations

import numpy as np
import pytest
from kairos_gym.agents import PPOAgent, make_policy, run_policy

from kairos_gym.errors import ConfigError
from kairos_gym.sim.hook import Decision
from tests.agents.ctx_helpers import make_ctx

pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")

TINY = {"name": "tiny", "workload": {"arrival": {"kind": "poisson", "rate": 20}, "num_requests": 40}}


def test_ppo_zip_predict(tmp_path):
    from stable_baselines3 import PPO

    PPO("MlpPolicy", "CartPole-v1", n_steps=32, batch_size=16, seed=0).save(tmp_path / "m.zip")
    agent = PPOAgent(path=tmp_path / "m.zip")
    assert not agent.maskable and type(agent.model).__name__ == "PPO"
    action, state = agent.predict(np.zeros(4, dtype=np.float32))
    assert int(action) in (0, 1) and state is None
    with pytest.raises(NotImplementedError, match="obs_builder"):
        agent.decide(make_ctx())
    # explicit adapters make decide() work
    agent = PPOAgent(path=tmp_path / "m", obs_builder=lambda ctx: np.zeros(4, dtype=np.float32),
                     action_decoder=lambda ctx, a: Decision.prefill_path())
    assert agent.decide(make_ctx()) == Decision.prefill_path()
    with pytest.raises(ConfigError):
        PPOAgent(path=tmp_path / "m.zip", algo="dqn")


def test_maskable_ppo_through_the_env_encoders(tmp_path):
    env_mod = pytest.importorskip("kairos_gym.env")
    from sb3_contrib import MaskablePPO

    env = env_mod.KairosEnv(TINY)
    MaskablePPO("MlpPolicy", env, n_steps=32, batch_size=16, seed=0).save(tmp_path / "mm.zip")
    agent = make_policy("ppo", TINY, path=str(tmp_path / "mm.zip"))
    assert agent.maskable and agent.env_adapter_error is None
    # the agent's observation of a context is the env's observation of it
    obs, info = env.reset(seed=0)
    ctx = env.decision_context  # a property
    assert np.array_equal(agent.obs_builder(ctx), obs)
    assert np.array_equal(agent.mask_builder(ctx), info["action_mask"].astype(bool))
    s = run_policy(agent, TINY, seed=0)
    assert s["policy"] == "ppo" and s["n_completed"] + s["n_rejected"] == 40 and s["n_invalid_actions"] == 0
    # a model trained on another scenario's shape is refused
    with pytest.raises(ConfigError):
        make_policy("ppo", {**TINY, "cluster": {"decode_nodes": 3}}, path=str(tmp_path / "mm.zip"))
