"""DomainVectorEnv (train/domain_vec.py): the native vector env of kairos_train/KairosGeneral-v0 gives sub-env i the
episodes of the i-th Python DomainEnv, bit for bit (observations, rewards, flags, infos, draws), through Gymnasium
and through the SB3 training backends; each env's reward uses its own SLO; bad input is a ConfigError."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from kairos_gym.train.domain import DOMAIN_ENV_ID
from kairos_gym.train.domain_vec import DomainVectorEnv

from kairos_gym.errors import ConfigError
from tests.env.test_env_vector_infos import MODES, assert_same

FAMILIES = ["bursty", "long-tail", "kv-pressure", "azure-code"]  # synthetic and trace families
KW = {"families": FAMILIES, "largest_safe_action": True, "tbt_penalty": 0.5, "max_decisions": 25}


def _side_by_side(n: int, mode: str, steps: int, seed: int, **kw):
    """DomainVectorEnv from gym.make_vec and a SyncVectorEnv of DomainEnvs stepped alike, compared at every step;
    returns the vector env and the episode draws seen (as dicts, from the reset infos)."""
    vec = gym.make_vec(DOMAIN_ENV_ID, num_envs=n, vectorization_mode="vector_entry_point", autoreset_mode=mode,
                       **kw)
    sync = gym.make_vec(DOMAIN_ENV_ID, num_envs=n, vectorization_mode="sync",
                        vector_kwargs={"autoreset_mode": MODES[mode]}, **kw)
    assert type(vec.unwrapped) is DomainVectorEnv
    rng = np.random.default_rng(seed)
    draws: list[dict] = []

    def seen(infos: dict) -> None:
        for info in (infos, infos.get("final_info", {})):
            if "domain" in info:
                for i in np.flatnonzero(info["_domain"]).tolist():
                    draws.append({k: info["domain"][k][i] for k in ("family", "tier", "track", "load", "seed")})

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gym.make's checker
        (vobs, vinfo), (sobs, sinfo) = vec.reset(seed=seed), sync.reset(seed=seed)
        assert vobs.tobytes() == sobs.tobytes()
        assert_same(vinfo, sinfo, "reset infos")
        seen(vinfo)
        for t in range(steps):
            acts = np.array([rng.choice(np.flatnonzero(m)) for m in sinfo["action_mask"]], dtype=np.int64)
            vout, sout = vec.step(acts), sync.step(acts)
            for name, g, w in zip(("obs", "rewards", "terminated", "truncated"), vout[:4], sout[:4], strict=True):
                assert np.asarray(g).tobytes() == np.asarray(w).tobytes(), (t, name)
            vinfo, sinfo = vout[4], sout[4]
            assert_same(vinfo, sinfo, f"step {t} infos")
            seen(vinfo)
    return vec.unwrapped, draws


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
@pytest.mark.parametrize("reward", ["ttft", "misses", "slo"])  # slo: KairosEnv.step env by env
def test_domain_vector_env_matches_python_domain_envs_bit_for_bit(mode, reward):
    """Over several autoresets per env (25-decision episodes), on both tracks and several families and tiers: the
    same observations, rewards, flags, infos (every key, the summaries and info["domain"]) and draws."""
    vec, draws = _side_by_side(3, mode, 110, seed=7, reward=reward, **KW)
    assert (vec._vs is not None) == (reward != "slo")  # one native call stepped the three envs
    assert len(draws) >= 3 * 4
    assert {d["track"] for d in draws} == {"exact", "realistic"}
    assert len({d["family"] for d in draws}) >= 3 and len({d["tier"] for d in draws}) >= 2
    assert all(0.7 <= d["load"] <= 1.3 for d in draws)


def test_sb3_native_backend_gives_the_dummy_backends_domain_episodes():
    """The training backends (train/envs.py): HeldOutVecEnv over DomainVectorEnv against DummyVecEnv of
    HeldOutSeeds(Monitor(DomainEnv)): observations, masks, rewards, dones, terminal observations, Monitor episodes
    and every env's draw, over several autoresets."""
    pytest.importorskip("sb3_contrib")
    from kairos_gym.train.envs import HeldOutVecEnv, make_vec_env
    from sb3_contrib.common.maskable.utils import get_action_masks
    kw = {**KW, "tracks": ["exact", "realistic"], "reward": "ttft"}
    native, dummy = (make_vec_env(DOMAIN_ENV_ID, kw, 3, 4, None, 0.99, b) for b in ("native", "dummy"))
    assert isinstance(native, HeldOutVecEnv) and isinstance(native.vec, DomainVectorEnv)
    assert native.reset().tobytes() == dummy.reset().tobytes()
    assert native.vec.draws == dummy.get_attr("draw")
    rng = np.random.default_rng(1)
    ends = 0
    for t in range(90):
        masks = get_action_masks(native)
        assert masks.tobytes() == get_action_masks(dummy).tobytes(), t
        acts = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        (o1, r1, d1, i1), (o2, r2, d2, i2) = native.step(acts), dummy.step(acts)
        assert o1.tobytes() == o2.tobytes() and r1.tobytes() == r2.tobytes() and (d1 == d2).all(), t
        for i in np.flatnonzero(d1).tolist():
            ends += 1
            assert i1[i]["terminal_observation"].tobytes() == i2[i]["terminal_observation"].tobytes()
            assert i1[i]["TimeLimit.truncated"] == i2[i]["TimeLimit.truncated"]
            assert (i1[i]["episode"]["r"], i1[i]["episode"]["l"]) == (i2[i]["episode"]["r"], i2[i]["episode"]["l"])
        assert native.vec.draws == dummy.get_attr("draw"), t
    assert ends >= 3 * 3


def test_maskable_ppo_with_vecnormalize_trains_the_same_parameters_on_native_and_dummy():
    """A domain config trains bit-identical parameters on the native backend and on DummyVecEnv (VecNormalize on)."""
    pytest.importorskip("sb3_contrib")
    import torch
    from kairos_gym.train.config import parse_config
    from kairos_gym.train.envs import make_vec_env
    from kairos_gym.train.trainer import build_model

    from tests.fixtures import silent_logger

    torch.set_num_threads(1)

    def params(backend: str) -> list[np.ndarray]:
        cfg = parse_config({DOMAIN_ENV_ID: {
            "n_envs": 2, "vec_backend": backend, "env_kwargs": {**KW, "reward": "ttft"}, "n_steps": 48,
            "batch_size": 48, "n_epochs": 2, "policy_kwargs": "dict(net_arch=[16])", "seed": 5,
            "normalize": {"norm_obs": True, "norm_reward": True}}})
        venv = make_vec_env(cfg.env_id, cfg.env_kwargs, cfg.n_envs, cfg.seed, cfg.normalize, 0.99, cfg.vec_backend)
        model = build_model(cfg, venv)
        model.set_logger(silent_logger())
        model.learn(total_timesteps=2 * 48 * 2)
        assert len(model.ep_info_buffer) > 0
        return [p.detach().numpy().copy() for p in model.policy.parameters()]

    a, b = params("native"), params("dummy")
    assert all(x.tobytes() == y.tobytes() for x, y in zip(a, b, strict=True))


def test_each_env_rewards_with_its_own_slo():
    """The batched ttft reward divides each env's TTFT area by that env's SLO (strict and relaxed tiers differ)."""
    vec = DomainVectorEnv(4, families=["bursty"], tiers=["strict", "relaxed"], reward="ttft", tbt_penalty=0.5,
                          max_decisions=30)
    vec.reset(seed=[0, 1, 2, 3])
    slos = vec._ttft_s.copy()
    assert len(set(slos.tolist())) == 2
    assert slos.tolist() == [e.scenario.slo.ttft_s for e in vec.envs]
    checked = 0
    for _ in range(25):
        _, rew, _, _, info = vec.step(np.zeros(4, dtype=np.int64))
        want = -(info["ttft_area_s"] / slos) - 0.5 * info["tbt_violations"]
        assert rew.tobytes() == want.tobytes()
        checked += int(np.count_nonzero(info["ttft_area_s"]))
    assert checked > 0


@pytest.mark.parametrize(("kw", "field"), [
    ({"families": ["nope"]}, "families"), ({"tiers": ["hard"]}, "tiers"), ({"tracks": "exact"}, "tracks"),
    ({"load": [1.5, 1.0]}, "load"), ({"largest_safe_action": 1}, "largest_safe_action"),
    ({"scenario": "bursty"}, "scenario"), ({"obs_mode": "dict"}, "obs_mode"), ({"num_envs": 0}, "num_envs"),
    ({"families": ["bursty", "fault-shift"]}, "families"), ({"reward": "nope"}, "reward"),
    ({"autoreset_mode": "never"}, "autoreset_mode")])
def test_bad_arguments_are_one_config_error(kw, field):
    args = {"num_envs": 2, "families": ["bursty"], **kw}
    with pytest.raises(ConfigError) as e:
        DomainVectorEnv(**args)
    assert e.value.field == field


def test_bad_reset_seeds_are_refused():
    vec = DomainVectorEnv(2, families=["bursty"], reward="ttft")
    for seed in (-1, [0, -3], [0, "x"], [0], 1.5):
        with pytest.raises(ConfigError):
            vec.reset(seed=seed)


def test_perf_env_times_the_domain_vector_env():
    """kairos-gym perf-env --vector N --env kairos_train/KairosGeneral-v0 steps the native domain vector env."""
    from kairos_gym.perf.env_throughput import make_vector, run_vector_steps

    vec = make_vector(DOMAIN_ENV_ID, 2, False)
    assert type(vec) is DomainVectorEnv and not vec.summaries and not vec.step_infos
    res = run_vector_steps(DOMAIN_ENV_ID, 2, 30)
    assert res["env_steps"] == 60 and res["seconds"] > 0
