"""PPO from a trained actor (train/init_from.py) and the domain env's Kairos input (train/domain.py ``inputs``): the
feature is Kairos's own action, the copied actor acts as the checkpoint does, the frozen actor does not move, and
every mismatch is one clear error."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from kairos_gym.agents import run_policy
from kairos_gym.agents.checkpoint import load_policy
from kairos_gym.agents.inputs import KairosFeature
from kairos_gym.train.config import load_config, parse_config
from kairos_gym.train.domain import DomainEnv

from kairos_gym.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
FT = ROOT / "configs" / "ppo" / "v2-finetune-distilled.yaml"
STUDENT = ROOT / "agents" / "checkpoints" / "distilled-oracle"
KW = {"suite": "v2", "families": ["bursty", "kv-pressure"], "largest_safe_action": True,
      "inputs": "observation+kairos"}


def test_the_kairos_input_is_kairos_s_action_and_following_it_is_kairos() -> None:
    env = DomainEnv(**KW)
    assert env.observation_space.shape == (70,) and env.feature_names()[-1] == "kairos_action_12"
    obs, _ = env.reset(seed=5)
    feat = KairosFeature(env.draw.scenario(), env.env.action_layout)
    n = 0
    while True:
        assert np.array_equal(obs[-13:], feat.encode(env.env.decision_context))
        obs, _r, term, trunc, info = env.step(int(np.argmax(obs[-13:])))
        n += 1
        if term or trunc:
            break
    assert not obs[-13:].any()  # no decision left
    ref = run_policy("kairos", env.draw.scenario(), env.draw.instance.seed)
    for key in ("slo_attainment", "ttft_p95", "deflection_rate"):
        assert info["summary"][key] == ref[key], key


def test_the_observation_part_is_the_plain_domain_env_s() -> None:
    a, b = DomainEnv(**KW), DomainEnv(**{**KW, "inputs": "observation"})
    oa, _ = a.reset(seed=2)
    ob, _ = b.reset(seed=2)
    for _ in range(50):
        assert np.array_equal(oa[:-13], ob)
        act = int(np.flatnonzero(a.action_masks())[-1])
        oa, *_ = a.step(act)
        ob, *_ = b.step(act)


@pytest.mark.parametrize("kwargs, allowed", [({"inputs": "pixels"}, "one of"),
                                             ({"largest_safe_action": False}, "largest_safe_action: true")])
def test_a_bad_input_layout_is_refused(kwargs: dict, allowed: str) -> None:
    with pytest.raises(ConfigError, match=allowed):
        DomainEnv(**{**KW, **kwargs})


def test_the_native_domain_vector_env_refuses_the_kairos_input() -> None:
    from kairos_gym.train.envs import make_vec_env

    with pytest.raises(ConfigError, match="vec_backend dummy or subproc"):
        make_vec_env("kairos_train/KairosGeneral-v0", KW, 2, 0, None, 0.99, "native")


def _small(**over) -> object:
    cfg = load_config(FT)
    raw = {**cfg.raw, "n_envs": 1, "n_steps": 64, "batch_size": 64, "n_epochs": 2,
           "env_kwargs": {**cfg.raw["env_kwargs"], "families": ["bursty"]}, **over}
    return parse_config({cfg.env_id: raw}, source="test")


def _model(cfg):
    from kairos_gym.train.envs import env_inputs, make_vec_env
    from kairos_gym.train.trainer import build_model

    venv = make_vec_env(cfg.env_id, cfg.env_kwargs, cfg.n_envs, 0, cfg.normalize, 0.99, cfg.vec_backend)
    return build_model(cfg, venv), venv, env_inputs(venv)


def test_the_copied_actor_is_the_checkpoint_s_bit_for_bit() -> None:
    from kairos_gym.agents.sb3_checkpoint import actor_from_sb3
    from kairos_gym.train.init_from import STATISTICS_COUNT, load_actor_into

    model, venv, inputs = _model(_small())
    out = load_actor_into(model, venv, STUDENT, inputs)
    assert out["inputs"] == "observation+kairos" and out["hidden"] == [128, 128]
    got, want = actor_from_sb3(model, venv, inputs), load_policy(STUDENT)
    for (w1, b1), (w2, b2) in zip([*got.hidden, got.head], [*want.hidden, want.head], strict=True):
        assert np.array_equal(w1, w2) and np.array_equal(b1, b2)
    assert np.array_equal(got.normalizer.mean, want.normalizer.mean)
    assert np.array_equal(got.normalizer.var, want.normalizer.var)
    assert venv.obs_rms.count == STATISTICS_COUNT and got.inputs == "observation+kairos"


@pytest.mark.parametrize("over, field", [
    ({"policy_kwargs": "dict(net_arch=dict(pi=[64, 64], vf=[64, 64]))"}, "policy_kwargs"),
    ({"normalize": {"norm_obs": False, "norm_reward": True}}, "normalize"),
    ({"normalize": {"norm_obs": True, "norm_reward": True}, "normalize_kwargs": {"clip_obs": 5.0}}, "normalize_kwargs"),
])
def test_a_model_that_does_not_match_the_checkpoint_is_refused(over: dict, field: str) -> None:
    from kairos_gym.train.init_from import load_actor_into

    model, venv, inputs = _model(_small(**over))
    with pytest.raises(ConfigError, match=field):
        load_actor_into(model, venv, STUDENT, inputs)


def test_a_model_on_other_inputs_is_refused() -> None:
    from kairos_gym.train.init_from import load_actor_into

    cfg = _small()
    cfg = dataclasses.replace(cfg, env_kwargs={**cfg.env_kwargs, "inputs": "observation"})
    model, venv, inputs = _model(cfg)
    with pytest.raises(ConfigError, match="inputs"):
        load_actor_into(model, venv, STUDENT, inputs)


@pytest.mark.parametrize("over, field", [({"init_from": "no/such/folder"}, "init_from"),
                                         ({"init_from": None, "freeze_actor_steps": 10}, "freeze_actor_steps"),
                                         ({"freeze_actor_steps": -1}, "freeze_actor_steps")])
def test_bad_init_keys_are_refused(over: dict, field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        _small(**over)


def test_the_config_round_trips_its_init_keys() -> None:
    cfg = _small()
    body = cfg.to_yaml_dict()[cfg.env_id]
    assert body["init_from"] == "agents/checkpoints/distilled-oracle" and body["freeze_actor_steps"] == 200_000


def _params(model):
    pol = model.policy
    actor = [p.detach().clone() for p in [*pol.mlp_extractor.policy_net.parameters(), *pol.action_net.parameters()]]
    critic = [p.detach().clone() for p in [*pol.mlp_extractor.value_net.parameters(), *pol.value_net.parameters()]]
    return actor, critic


def test_a_frozen_actor_does_not_move_while_the_critic_learns_then_both_train(tmp_path: Path) -> None:
    import torch
    from kairos_gym.train.trainer import train

    cfg = dataclasses.replace(_small(), n_timesteps=128, freeze_actor_steps=10**6,
                              eval=dataclasses.replace(_small().eval, freq=0), checkpoint_freq=0)
    meta = train(cfg, tmp_path / "frozen", progress=False)
    assert meta["timesteps"] >= 128
    assert meta["init_from"] == {"init_from": cfg.init_from, "hidden": [128, 128], "activation": "Tanh",
                                 "inputs": "observation+kairos", "obs_statistics": True}
    frozen = load_policy(tmp_path / "frozen" / "final")
    student = load_policy(STUDENT)
    for (w1, b1), (w2, b2) in zip([*frozen.hidden, frozen.head], [*student.hidden, student.head], strict=True):
        assert np.array_equal(w1, w2) and np.array_equal(b1, b2)
    # the inputs are read as the student reads them: its statistics held
    np.testing.assert_allclose(frozen.normalizer.mean, student.normalizer.mean, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(frozen.normalizer.var, student.normalizer.var, rtol=1e-9, atol=1e-12)
    from kairos_gym.train.init_from import FreezeActor, load_actor_into

    model, venv, inputs = _model(_small())
    load_actor_into(model, venv, STUDENT, inputs)
    a0, c0 = _params(model)
    model.learn(total_timesteps=128, callback=FreezeActor(64))
    a1, c1 = _params(model)
    assert any(not torch.equal(x, y) for x, y in zip(c0, c1, strict=True))
    assert any(not torch.equal(x, y) for x, y in zip(a0, a1, strict=True))  # unfrozen after 64 steps
    assert all(p.requires_grad for p in model.policy.parameters())


def test_the_masked_kl_ignores_invalid_actions_and_is_zero_only_at_the_target() -> None:
    import torch
    from kairos_gym.train.anchor_kl import masked_kl

    t = torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 5.0]])
    masks = torch.tensor([[True, True, False], [True, True, False]])
    assert float(masked_kl(t, t, masks)) == 0.0
    other = t.clone()
    other[:, 2] = -40.0  # differs only on masked actions
    assert float(masked_kl(t, other, masks)) == 0.0
    other[0, 0] = 3.0
    assert float(masked_kl(t, other, masks)) > 0.0


def test_the_anchor_is_the_checkpoint_s_actor() -> None:
    import torch
    from kairos_gym.train.anchor_kl import actor_module

    net, student = actor_module(STUDENT), load_policy(STUDENT)
    x = np.random.default_rng(0).normal(size=(64, student.observation_size)).astype(np.float32)
    got = net(torch.as_tensor(student.normalizer(x))).numpy()  # the anchor reads normalised inputs
    want = np.stack([student.logits(row) for row in x])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert not any(p.requires_grad for p in net.parameters())


def test_the_anchor_pulls_the_policy_back_to_the_start() -> None:
    """After a rollout, the anchor phase lowers the KL between the (perturbed) policy and the starting actor, and
    is skipped while the actor is frozen."""
    import torch
    from kairos_gym.train.anchor_kl import AnchorKL
    from kairos_gym.train.init_from import FreezeActor, load_actor_into

    model, venv, inputs = _model(_small())
    load_actor_into(model, venv, STUDENT, inputs)
    with torch.no_grad():
        model.policy.action_net.bias.add_(torch.linspace(-2.0, 2.0, model.action_space.n))
    anchor = AnchorKL(STUDENT, 5.0, 64)
    model.learn(total_timesteps=64, callback=[FreezeActor(10**6), anchor])  # frozen: the phase does not run
    assert anchor.last_kl is None
    for group in model.policy.optimizer.param_groups:  # a visible pull in a few steps
        group["lr"] = 1e-3
    anchor = AnchorKL(STUDENT, 1.0, 16)
    anchor.init_callback(model)
    anchor.on_training_start({}, {})
    kls = []
    for _ in range(8):  # each phase: one pass over the last rollout (64 decisions, 4 minibatches)
        anchor.on_rollout_end()
        kls.append(anchor.last_kl)
    assert kls[0] > 0.01 and kls[-1] < kls[0] / 4, kls


@pytest.mark.parametrize("over, field", [({"anchor_kl": -1.0}, "anchor_kl"), ({"anchor_kl": "x"}, "anchor_kl"),
                                         ({"anchor_kl": 0.5, "init_from": None, "freeze_actor_steps": 0},
                                          "anchor_kl")])
def test_bad_anchor_values_are_refused(over: dict, field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        _small(**over)
    assert _small(anchor_kl=0.5).to_yaml_dict()["kairos_train/KairosGeneral-v0"]["anchor_kl"] == 0.5
