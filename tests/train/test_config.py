"""Training configs (kairos-gym's layout), their string forms parsed without eval, the held-out seed wrapper
and the CLI's error path (fast)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from kairos_gym.train.config import LinearSchedule, load_config, parse_config
from kairos_gym.train.envs import TRAIN_SEED_MIN, HeldOutSeeds, eval_env_kwargs, make_env_fn

from kairos_gym.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted([*(ROOT / "configs" / "ppo").glob("*.yaml"), *(ROOT / "configs" / "dqn").glob("*.yaml")])


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_shipped_configs_parse(path):
    if path.name.startswith("distill"):  # the Oracle-distillation recipes: their own layout (train/distill.py)
        from kairos_gym.train.distill import load_config as load_distill

        assert load_distill(path).seeds == (0, 1, 2)
        return
    cfg = load_config(path)
    assert cfg.env_id.startswith(("kairos_gym/", "kairos_train/"))  # kairos_train/: train/domain.py
    assert cfg.vec_backend != "subproc" or cfg.n_envs <= 2  # the 2-core budget: at most 2 worker processes
    assert all(s < TRAIN_SEED_MIN for s in cfg.eval.seeds)
    again = parse_config(cfg.to_yaml_dict(), source="roundtrip")  # the run's config.yaml re-reads
    assert again.hyperparams.keys() == cfg.hyperparams.keys() and again.env_kwargs == cfg.env_kwargs
    assert again.vec_backend == cfg.vec_backend


SMALL = "kairos_gym/KairosSmall-v0"


def test_string_forms_and_schedules():
    cfg = parse_config({"kairos_gym/KairosSmall-v0": {
        "policy_kwargs": "dict(net_arch=dict(pi=[8], vf=[8]), activation_fn=nn.ReLU)",
        "learning_rate": "lin_1e-3", "normalize": "{'norm_obs': False, 'norm_reward': True}",
        "n_timesteps": 1e4, "env_kwargs": {"episode_window": 50}}})
    assert cfg.algo == "maskable_ppo" and cfg.n_timesteps == 10_000
    assert isinstance(cfg.hyperparams["learning_rate"], LinearSchedule)
    assert cfg.hyperparams["learning_rate"](0.5) == pytest.approx(5e-4)
    assert cfg.normalize == {"norm_obs": False, "norm_reward": True}
    assert cfg.policy_kwargs["net_arch"] == {"pi": [8], "vf": [8]}
    assert parse_config({"kairos_gym/KairosSmall-v0": {"normalize": False}}).normalize is None
    assert eval_env_kwargs({"episode_window": 50, "tbt_penalty": 1.0}, {"reward": "slo"}) == \
        {"tbt_penalty": 1.0, "reward": "slo"}


@pytest.mark.parametrize("body, field", [
    ({"algo": "dqn"}, "algo"),
    ({"n_stepz": 5}, "n_stepz"),
    ({"n_envs": 0}, "n_envs"),
    ({"learning_rate": "lin_x"}, "learning_rate"),
    ({"policy_kwargs": "dict(oops"}, "policy_kwargs"),
    ({"policy_kwargs": {"features_extractor_class": "x"}}, "policy_kwargs.features_extractor_class"),
    ({"policy_kwargs": {"activation_fn": "Linear"}}, "policy_kwargs.activation_fn"),
    ({"policy_kwargs": "dict(activation_fn=nn.Module)"}, "policy_kwargs"),
    ({"policy_kwargs": {"net_arch": [64, 0]}}, "policy_kwargs.net_arch"),
    ({"policy_kwargs": {"net_arch": {"pi": [5000]}}}, "policy_kwargs.net_arch"),
    ({"policy_kwargs": {"net_arch": [8] * 17}}, "policy_kwargs.net_arch"),
    ({"normalize": {"norm_obz": True}}, "normalize.norm_obz"),
    ({"normalize": {"norm_obs": "yes"}}, "normalize.norm_obs"),
    ({"normalize": {"clip_obs": -1}}, "normalize.clip_obs"),
    ({"normalize": "dict(norm_obs=__import__('os'))"}, "normalize"),
    ({"normalize": 3}, "normalize"),
    ({"learning_rate": "lin_-1e-3"}, "learning_rate"),
    ({"policy": "CnnPolicy"}, "policy"),
    ({"env_kwargs": {"obs_mode": "dict"}}, "env_kwargs.obs_mode"),
    ({"n_envs": 65}, "n_envs"),
    ({"eval": {"seeds": [TRAIN_SEED_MIN]}}, "eval.seeds"),
    ({"eval": {"every": 5}}, "eval.every"),
])
def test_bad_values_name_the_field(body, field):
    with pytest.raises(ConfigError) as e:
        parse_config({"kairos_gym/KairosSmall-v0": body})
    assert e.value.field == field


ESCAPES = [
    # the demonstrated escape of eval(..., {"__builtins__": {}}): reach the real builtins through a class
    "[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == 'catch_warnings'][0]()._module"
    ".__builtins__['__import__']('os').system('touch {marker}')",
    "__import__('os').system('touch {marker}')",
    "dict(net_arch=open('{marker}', 'w'))",
    "dict(net_arch=[64], activation_fn=nn.ReLU.__init__.__globals__['sys'])",
    "nn.Module.__subclasses__()",
    "dict(**{{'net_arch': [64]}})",
    "(lambda: open('{marker}', 'w'))()",
    "[open('{marker}', 'w') for _ in [0]]",
    "dict(net_arch=[6 ** 4])",
    "th.optim.Adam",
]


@pytest.mark.parametrize("template", ESCAPES, ids=range(len(ESCAPES)))
@pytest.mark.parametrize("key", ["policy_kwargs", "normalize"])
def test_string_forms_are_parsed_never_evaluated(tmp_path, template, key):
    """policy_kwargs / normalize strings were eval()'d with empty builtins, which a class walk escapes: now
    only literals, dict(...) and nn.<activation> parse; anything else is one ConfigError and runs nothing."""
    marker = tmp_path / "ran"
    with pytest.raises(ConfigError) as e:
        parse_config({"kairos_gym/KairosSmall-v0": {key: template.format(marker=marker)}})
    assert e.value.field == key and "literal" in e.value.allowed
    assert not marker.exists()


def test_literal_parser_accepts_the_documented_forms():
    import torch.nn as nn

    from kairos_gym.literal import MAX_LITERAL_CHARS, parse_literal

    acts = {"ReLU": nn.ReLU}
    assert parse_literal("t", "f", "dict(a=[1, -2.5, (3, 4)], b={'c': None, 'd': True}, e='x')", acts) == \
        {"a": [1, -2.5, [3, 4]], "b": {"c": None, "d": True}, "e": "x"}
    for spelled in ("nn.ReLU", "th.nn.ReLU", "torch.nn.ReLU"):
        assert parse_literal("t", "f", spelled, acts) is nn.ReLU
    with pytest.raises(ConfigError):
        parse_literal("t", "f", "nn.Tanh", acts)  # not in the names given
    with pytest.raises(ConfigError, match="at most"):
        parse_literal("t", "f", "[" + "1, " * MAX_LITERAL_CHARS + "]")
    with pytest.raises(ConfigError, match="nesting"):
        parse_literal("t", "f", "[" * 40 + "]" * 40)
    cfg = parse_config({SMALL: {"policy_kwargs": {"activation_fn": "nn.ReLU", "net_arch": [16]}}})
    assert cfg.policy_kwargs["activation_fn"] is nn.ReLU
    assert parse_config({SMALL: {"normalize": "True"}}).normalize == {"norm_obs": True, "norm_reward": True}
    assert parse_config({SMALL: {"normalize": "False"}}).normalize is None


def test_linear_schedule_is_clamped_at_zero():
    """SB3's last update of a run whose total is not a multiple of the rollout sees progress < 0."""
    sched = LinearSchedule(3e-4)
    assert sched(1.0) == pytest.approx(3e-4) and sched(0.0) == 0.0
    assert sched(-0.024) == 0.0 and sched(-5.0) == 0.0


def test_env_id_selection(tmp_path):
    data = {SMALL: {}, "kairos_gym/Kairos-v0": {"n_envs": 1}}
    with pytest.raises(ConfigError, match="--env-id"):
        parse_config(data)
    assert parse_config(data, "kairos_gym/Kairos-v0").n_envs == 1
    with pytest.raises(ConfigError, match="a registered env id"):
        parse_config({"kairos_gym/Nope-v0": {}})
    with pytest.raises(ConfigError, match="--config"):
        load_config(tmp_path / "missing.yaml")
    # plain PPO has no mask-specific arguments; a maskable-only config stays valid for it
    assert parse_config({SMALL: {"algo": "ppo", "n_steps": 64}}).hyperparams == {"n_steps": 64}


@pytest.mark.parametrize("body, field, allowed", [
    ({"learning_rate": float("nan")}, "learning_rate", "a finite number > 0"),
    ({"learning_rate": -1}, "learning_rate", "> 0"),
    ({"learning_rate": "lin_-1"}, "learning_rate", ">= 0"),
    ({"gamma": 2}, "gamma", "<= 1"),
    ({"gamma": 0}, "gamma", "> 0"),
    ({"n_steps": 0}, "n_steps", ">= 1"),
    ({"n_steps": 2.5}, "n_steps", "a whole number"),
    ({"n_epochs": 10**6}, "n_epochs", "<= 1,000"),
    ({"clip_range": 0}, "clip_range", "> 0"),
    ({"ent_coef": float("inf")}, "ent_coef", "a finite number"),
    ({"normalize_advantage": 1}, "normalize_advantage", "true or false"),
    ({"n_timesteps": 1e15}, "n_timesteps", "from 1 to 1,000,000,000"),
    ({"n_steps": 64, "n_envs": 2, "batch_size": 100_000}, "batch_size", "n_steps x n_envs = 64 x 2 = 128"),
])
def test_hyperparameters_outside_their_documented_range_are_refused(body, field, allowed):
    with pytest.raises(ConfigError) as e:
        parse_config({SMALL: body})
    assert e.value.field == field and allowed in str(e.value)


def test_held_out_seeds_are_reproducible_and_never_evaluation_seeds():
    env = make_env_fn("kairos_gym/KairosSmall-v0", {"workload": {"max_requests": 20}})()
    assert isinstance(env, HeldOutSeeds)
    seeds = []
    for i in range(4):
        _, info = env.reset(seed=3) if i == 0 else env.reset()
        seeds.append(info["sim_seed"])
    again = [env.reset(seed=3)[1]["sim_seed"]] + [env.reset()[1]["sim_seed"] for _ in range(3)]
    assert seeds == again and min(seeds) >= TRAIN_SEED_MIN and len(set(seeds)) == 4
    assert np.array_equal(env.action_masks(), env.unwrapped.action_masks())


def test_cli_parser_and_error_exit(tmp_path, capsys):
    from kairos_gym.cli.main import build_parser, main

    args = build_parser().parse_args(["train", "--config", "x.yaml", "--algo", "ppo", "--timesteps", "10"])
    assert args.algo == "ppo" and args.timesteps == 10 and callable(args.func)
    assert main(["train", "--config", str(tmp_path / "nope.yaml")]) == 2
    assert "--config" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("kairos_gym/KairosSmall-v0: {n_stepz: 3}\n")
    assert main(["train", "--config", str(bad)]) == 2
    assert "n_stepz" in capsys.readouterr().err


def test_cli_checkpoint_flags_refuse_pickles_without_trust(tmp_path, capsys):
    """--resume and compare --checkpoint refuse an SB3 zip without --trust-checkpoint, with exit status 2."""
    from kairos_gym.cli.main import main

    (tmp_path / "model.zip").write_bytes(b"PK\x05\x06" + bytes(18))  # never opened
    smoke = ROOT / "configs" / "ppo" / "smoke.yaml"
    assert main(["train", "--config", str(smoke), "--resume", str(tmp_path), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kairos-gym train: error:") and "--trust-checkpoint" in err and "execute" in err
    assert not (tmp_path / "run").exists()
    assert main(["compare", "--checkpoint", str(tmp_path / "model.zip"), "--scenarios", "small", "--seeds", "0"]) == 2
    err = capsys.readouterr().err
    assert "--trust-checkpoint" in err and "execute" in err


def test_a_run_that_fails_before_any_checkpoint_leaves_no_folder(tmp_path, monkeypatch):
    import kairos_gym.train.trainer as trainer

    def boom(*a, **k):
        raise RuntimeError("failed while building the model")

    monkeypatch.setattr(trainer, "build_model", boom)
    cfg = parse_config({SMALL: {"n_envs": 1, "n_steps": 64, "batch_size": 64, "n_timesteps": 64,
                                "eval": {"freq": 0}}})
    out = tmp_path / "run"
    with pytest.raises(RuntimeError, match="building the model"):
        trainer.train(cfg, out, progress=False)
    assert not out.exists()
    (tmp_path / "mine").mkdir()  # a folder the user made is never removed
    with pytest.raises(RuntimeError):
        trainer.train(cfg, tmp_path / "mine", progress=False)
    assert (tmp_path / "mine").is_dir()
