"""vec_backend: the native training vector env (HeldOutVecEnv over KairosVecEnv) gives env i the same
episodes as DummyVecEnv + Monitor + HeldOutSeeds, and MaskablePPO on it is reproducible bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

from kairos_gym.train.config import parse_config
from kairos_gym.train.envs import TRAIN_SEED_MIN, VEC_BACKENDS, HeldOutVecEnv, make_vec_env
from kairos_gym.train.trainer import build_model, with_overrides

from kairos_gym.errors import ConfigError
from tests.fixtures import silent_logger

ID = "kairos_gym/KairosSmall-v0"
KW = {"episode_window": 40, "tbt_penalty": 0.5}


def _venvs(n: int, seed: int) -> dict[str, object]:
    return {b: make_vec_env(ID, KW, n, seed, None, 0.99, b) for b in ("native", "dummy")}


def test_native_backend_gives_the_dummy_backends_episodes_bit_for_bit():
    """Observations, masks, rewards, dones, terminal observations and Monitor episode infos, over several
    episodes per env (autoresets draw held-out seeds from each env's own generator)."""
    from sb3_contrib.common.maskable.utils import get_action_masks

    venvs = _venvs(3, 5)
    assert isinstance(venvs["native"], HeldOutVecEnv)
    obs = {b: v.reset() for b, v in venvs.items()}
    assert obs["native"].tobytes() == obs["dummy"].tobytes()
    seeds = [e.unwrapped._sim_seed for e in venvs["native"].envs]
    assert min(seeds) >= TRAIN_SEED_MIN and seeds == venvs["dummy"].get_attr("_sim_seed")
    rng = np.random.default_rng(0)
    episodes = 0
    for t in range(200):
        masks = {b: get_action_masks(v) for b, v in venvs.items()}
        assert masks["native"].tobytes() == masks["dummy"].tobytes(), t
        acts = np.array([rng.choice(np.flatnonzero(m)) for m in masks["native"]])
        (o1, r1, d1, i1), (o2, r2, d2, i2) = (venvs[b].step(acts) for b in ("native", "dummy"))
        assert o1.tobytes() == o2.tobytes() and r1.tobytes() == r2.tobytes() and (d1 == d2).all(), t
        for i in np.flatnonzero(d1).tolist():
            episodes += 1
            assert i1[i]["terminal_observation"].tobytes() == i2[i]["terminal_observation"].tobytes()
            assert i1[i]["TimeLimit.truncated"] == i2[i]["TimeLimit.truncated"]
            assert (i1[i]["episode"]["r"], i1[i]["episode"]["l"]) == (i2[i]["episode"]["r"], i2[i]["episode"]["l"])
    assert episodes >= 3 * 4  # 40-request windows: every env went through several autoresets
    new_seeds = [e._sim_seed for e in venvs["native"].envs]
    assert new_seeds == venvs["dummy"].get_attr("_sim_seed") and new_seeds != seeds
    assert min(new_seeds) >= TRAIN_SEED_MIN


def _train_params(backend: str) -> tuple[list[np.ndarray], object]:
    cfg = parse_config({ID: {"n_envs": 3, "vec_backend": backend, "env_kwargs": KW, "n_steps": 64, "batch_size": 64,
                             "n_epochs": 2, "policy_kwargs": "dict(net_arch=[16])", "seed": 3}})
    venv = make_vec_env(cfg.env_id, cfg.env_kwargs, cfg.n_envs, cfg.seed, cfg.normalize, 0.99, cfg.vec_backend)
    model = build_model(cfg, venv)
    model.set_logger(silent_logger())  # SB3 would make an empty SB3-<date> folder in /tmp
    model.learn(total_timesteps=3 * 64 * 3)
    params = [p.detach().numpy().copy() for p in model.policy.parameters()]
    return params, model


def test_maskable_ppo_on_the_native_backend_is_reproducible_and_matches_dummy():
    """Two native runs with the same seed end with the same parameters, bit for bit, and so does the same run on
    DummyVecEnv (the default backend does not change what a config trains); episodes reach ep_info_buffer."""
    import torch

    torch.set_num_threads(1)
    a, model = _train_params("native")
    assert type(model.get_env().venv).__name__ == "HeldOutVecEnv"
    assert len(model.ep_info_buffer) > 0 and all(np.isfinite(e["r"]) for e in model.ep_info_buffer)
    assert any(p.any() for p in a)
    b, _ = _train_params("native")
    c, _ = _train_params("dummy")
    assert all(x.tobytes() == y.tobytes() for x, y in zip(a, b, strict=True))
    assert all(x.tobytes() == y.tobytes() for x, y in zip(a, c, strict=True))


def test_prepare_torch_skips_distribution_checks_and_changes_no_parameter():
    """``prepare_torch`` (what train and perf-train call) turns torch.distributions' argument checks off; a run with
    the checks on ends with the same parameters, bit for bit (the checks only raise, they compute nothing)."""
    import torch
    from kairos_gym.train.trainer import prepare_torch

    before = torch.distributions.Distribution._validate_args
    try:
        torch.distributions.Distribution.set_default_validate_args(True)
        torch.set_num_threads(1)
        checked, _ = _train_params("native")
        prepare_torch()
        assert torch.distributions.Distribution._validate_args is False
        assert torch.get_num_threads() == 1
        unchecked, _ = _train_params("native")
    finally:
        torch.distributions.Distribution.set_default_validate_args(before)
    assert all(x.tobytes() == y.tobytes() for x, y in zip(checked, unchecked, strict=True))


def test_vec_backend_is_validated_in_the_config_and_on_the_command_line():
    with pytest.raises(ConfigError, match=r"vec_backend.*one of native, dummy, subproc"):
        parse_config({ID: {"vec_backend": "ray"}})
    cfg = parse_config({ID: {}})
    assert cfg.vec_backend == VEC_BACKENDS[0] == "native"
    assert cfg.to_yaml_dict()[ID]["vec_backend"] == "native"
    assert with_overrides(cfg, vec_backend="dummy").vec_backend == "dummy"
    with pytest.raises(ConfigError, match="--vec-backend"):
        with_overrides(cfg, vec_backend="ray")
    with pytest.raises(ConfigError, match="vec_backend"):
        make_vec_env(ID, {}, 1, 0, None, 0.99, "ray")


def test_native_backend_refuses_a_non_kairos_id():
    with pytest.raises(ConfigError, match="a kairos-gym id"):
        make_vec_env("CartPole-v1", {}, 1, 0, None, 0.99, "native")


def test_subproc_backend_runs_the_same_envs_in_workers():
    """subproc: the dummy backend's envs in SubprocVecEnv workers; the same observations, and the same rewards
    once cast to float32 (SB3's SubprocVecEnv returns them as float64, DummyVecEnv and native as float32)."""
    sub = make_vec_env(ID, KW, 2, 5, None, 0.99, "subproc")
    try:
        nat = make_vec_env(ID, KW, 2, 5, None, 0.99, "native")
        assert sub.reset().tobytes() == nat.reset().tobytes()
        for t in range(60):
            masks = np.stack(sub.env_method("action_masks"))
            acts = np.array([np.flatnonzero(m)[-1] for m in masks])
            (o1, r1, d1, _), (o2, r2, d2, _) = sub.step(acts), nat.step(acts)
            assert o1.tobytes() == o2.tobytes() and r1.astype(np.float32).tobytes() == r2.tobytes(), t
            assert (d1 == d2).all()
    finally:
        sub.close()
