"""Training configs in RL Zoo layout: one YAML file, hyperparameters keyed by Gymnasium env id.

```yaml
kairos_gym/Kairos-v0:
  algo: maskable_ppo              # maskable_ppo (default) or ppo (the ablation: no action masks)
  n_envs: 2                       # DummyVecEnv (one process)
  n_timesteps: !!float 4e5
  policy: MlpPolicy
  normalize: {norm_obs: true, norm_reward: true}   # VecNormalize (RL Zoo: true / false / a dict or its string)
  env_kwargs: {episode_window: 600, tbt_penalty: 0.5}
  policy_kwargs: "dict(net_arch=dict(pi=[64, 64], vf=[64, 64]))"
  learning_rate: lin_3e-4         # RL Zoo schedule syntax: lin_<x> decays linearly to 0
  n_steps: 512
  ...                             # any other PPO / MaskablePPO constructor argument
  # kairos-gym keys (not RL Zoo):
  seed: 0
  eval: {freq: 50000, seeds: [100, 101, 102]}
  checkpoint_freq: 100000
```

See docs/training.md for every key.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kairos_gym.errors import ConfigError
from kairos_gym.yaml_io import load_yaml_file

ALGOS = ("maskable_ppo", "ppo")
ZOO_KEYS = ("algo", "n_envs", "n_timesteps", "policy", "normalize", "normalize_kwargs", "env_kwargs", "policy_kwargs")
KAIROS_KEYS = ("seed", "eval", "checkpoint_freq", "device")
EVAL_KEYS = ("freq", "seeds", "env_id", "env_kwargs", "reference")
NOT_HYPER = ("self", "policy", "env", "tensorboard_log", "verbose", "seed", "device", "_init_setup_model",
             "policy_kwargs", "stats_window_size")
DEFAULT_EVAL = {"freq": 50_000, "seeds": [100, 101, 102], "env_id": None, "env_kwargs": {}, "reference": "kairos"}
DEFAULT_NORMALIZE = {"norm_obs": True, "norm_reward": True}


@dataclass
class EvalConfig:
    """Periodic evaluation on held-out workload seeds (logged under ``kairos/`` in TensorBoard)."""

    freq: int = 50_000  # timesteps between evaluations (0: never)
    seeds: list[int] = field(default_factory=lambda: [100, 101, 102])
    env_id: str | None = None  # default: the training env id
    env_kwargs: dict[str, Any] = field(default_factory=dict)  # on top of the training env_kwargs (minus episode cuts)
    reference: str = "kairos"  # the baseline policy the gaps are measured against


@dataclass
class TrainConfig:
    """One resolved training configuration."""

    env_id: str
    algo: str = "maskable_ppo"
    n_envs: int = 2
    n_timesteps: int = 400_000
    policy: str = "MlpPolicy"
    normalize: dict[str, Any] | None = field(default_factory=lambda: dict(DEFAULT_NORMALIZE))
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    policy_kwargs: dict[str, Any] = field(default_factory=dict)
    hyperparams: dict[str, Any] = field(default_factory=dict)  # PPO / MaskablePPO constructor arguments
    seed: int = 0
    eval: EvalConfig = field(default_factory=EvalConfig)
    checkpoint_freq: int = 100_000
    device: str = "cpu"
    source: str = "(dict)"
    raw: dict[str, Any] = field(default_factory=dict)  # the env id's section as written (for the run's copy)

    def to_yaml_dict(self) -> dict[str, Any]:
        """The resolved config in the same RL Zoo layout (what a run writes next to its model)."""
        body: dict[str, Any] = {
            "algo": self.algo, "n_envs": self.n_envs, "n_timesteps": self.n_timesteps, "policy": self.policy,
            "normalize": self.normalize if self.normalize is not None else False,
            "env_kwargs": self.env_kwargs, "policy_kwargs": self.raw.get("policy_kwargs", self.policy_kwargs),
        }
        body.update(self.raw_hyperparams())
        body.update({"seed": self.seed, "eval": {"freq": self.eval.freq, "seeds": list(self.eval.seeds),
                                                 "env_id": self.eval.env_id, "env_kwargs": self.eval.env_kwargs,
                                                 "reference": self.eval.reference},
                     "checkpoint_freq": self.checkpoint_freq, "device": self.device})
        return {self.env_id: body}

    def raw_hyperparams(self) -> dict[str, Any]:
        """Hyperparameters as written (schedules as ``lin_x`` strings)."""
        return {k: self.raw.get(k, v) for k, v in self.hyperparams.items()}


def _algo_class(algo: str) -> Any:
    if algo == "maskable_ppo":
        from sb3_contrib import MaskablePPO

        return MaskablePPO
    from stable_baselines3 import PPO

    return PPO


def hyperparam_names(algo: str) -> list[str]:
    """Constructor arguments of the algorithm that a config may set directly."""
    params = inspect.signature(_algo_class(algo).__init__).parameters
    return [p for p in params if p not in NOT_HYPER]


def _schedule(where: str, key: str, value: Any) -> Any:
    """RL Zoo schedule strings: ``lin_3e-4`` -> a linear decay from 3e-4 to 0 (SB3 passes progress 1 -> 0)."""
    if isinstance(value, str) and value.startswith("lin_"):
        try:
            start = float(value[4:])
        except ValueError:
            raise ConfigError(where, key, value, "a number or lin_<number>, e.g. lin_3e-4") from None
        return LinearSchedule(start)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            raise ConfigError(where, key, value, "a number or lin_<number>, e.g. lin_3e-4") from None
    return value


class LinearSchedule:
    """``progress_remaining * start`` (picklable, unlike a lambda)."""

    def __init__(self, start: float) -> None:
        self.start = float(start)

    def __call__(self, progress_remaining: float) -> float:
        return progress_remaining * self.start

    def __repr__(self) -> str:
        return f"lin_{self.start:g}"


def _policy_kwargs(where: str, value: Any) -> dict[str, Any]:
    """A mapping, or the RL Zoo string ``"dict(net_arch=..., activation_fn=nn.ReLU)"``."""
    import torch.nn as nn

    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = eval(value, {"__builtins__": {}}, {"dict": dict, "nn": nn, "list": list})
        except Exception as e:
            raise ConfigError(where, "policy_kwargs", value, f"a dict or a 'dict(...)' string ({e})") from None
    if not isinstance(value, Mapping):
        raise ConfigError(where, "policy_kwargs", value, "a dict or a 'dict(...)' string")
    out = dict(value)
    act = out.get("activation_fn")
    if isinstance(act, str):
        if not hasattr(nn, act.split(".")[-1]):
            raise ConfigError(where, "policy_kwargs.activation_fn", act, "a torch.nn activation name, e.g. ReLU")
        out["activation_fn"] = getattr(nn, act.split(".")[-1])
    return out


def _normalize(where: str, value: Any, kwargs: Any) -> dict[str, Any] | None:
    if isinstance(value, str):
        try:
            value = eval(value, {"__builtins__": {}}, {"dict": dict, "True": True, "False": False})
        except Exception:
            raise ConfigError(where, "normalize", value, "true, false or a dict of VecNormalize arguments") from None
    if value is False or value is None:
        return None
    out = dict(DEFAULT_NORMALIZE) if value is True else None
    if out is None:
        if not isinstance(value, Mapping):
            raise ConfigError(where, "normalize", value, "true, false or a dict of VecNormalize arguments")
        out = dict(value)
    if kwargs:
        if not isinstance(kwargs, Mapping):
            raise ConfigError(where, "normalize_kwargs", kwargs, "a dict of VecNormalize arguments")
        out.update(kwargs)
    allowed = ("norm_obs", "norm_reward", "clip_obs", "clip_reward", "gamma", "epsilon", "norm_obs_keys")
    for k in out:
        if k not in allowed:
            raise ConfigError(where, f"normalize.{k}", out[k], "one of " + ", ".join(allowed))
    return out


def _pos_int(where: str, key: str, value: Any, *, zero: bool = False) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if zero else 1):
        raise ConfigError(where, key, value, "a whole number " + (">= 0" if zero else ">= 1"))
    return value


def parse_config(data: Mapping[str, Any], env_id: str | None = None, source: str = "(dict)") -> TrainConfig:
    """Resolve the section of ``env_id`` (the only one when None) of an RL Zoo-layout mapping."""
    if not isinstance(data, Mapping) or not data:
        raise ConfigError(source, "(top level)", data, "a mapping of env id -> hyperparameters")
    if env_id is None:
        if len(data) != 1:
            raise ConfigError(source, "--env-id", None, "one of the config's env ids: " + ", ".join(map(str, data)))
        env_id = str(next(iter(data)))
    if env_id not in data:
        raise ConfigError(source, "--env-id", env_id, "one of the config's env ids: " + ", ".join(map(str, data)))
    body = data[env_id] or {}
    where = f"{source} [{env_id}]"
    if not isinstance(body, Mapping):
        raise ConfigError(where, env_id, body, "a mapping of hyperparameters")
    algo = body.get("algo", "maskable_ppo")
    if algo not in ALGOS:
        raise ConfigError(where, "algo", algo, "one of " + ", ".join(ALGOS))
    names = hyperparam_names(algo)
    for k in body:
        if k not in ZOO_KEYS and k not in KAIROS_KEYS and k not in names:
            raise ConfigError(where, str(k), body[k], "an RL Zoo key (" + ", ".join(ZOO_KEYS) + "), a kairos-gym key ("
                              + ", ".join(KAIROS_KEYS) + ") or a " + algo + " argument (" + ", ".join(names) + ")")
    hyper = {k: _schedule(where, k, v) if k in ("learning_rate", "clip_range", "clip_range_vf") else v
             for k, v in body.items() if k in names}
    env_kwargs = body.get("env_kwargs") or {}
    if not isinstance(env_kwargs, Mapping):
        raise ConfigError(where, "env_kwargs", env_kwargs, "a mapping of KairosEnv arguments")
    ev = {**DEFAULT_EVAL, **(body.get("eval") or {})}
    for k in ev:
        if k not in EVAL_KEYS:
            raise ConfigError(where, f"eval.{k}", ev[k], "one of " + ", ".join(EVAL_KEYS))
    from kairos_gym.flags import check_seed_list, parse_seeds

    seeds = ev["seeds"]
    seeds = parse_seeds(seeds, "eval.seeds", where) if isinstance(seeds, str) else check_seed_list(
        seeds, "eval.seeds", where)
    from kairos_gym.train.envs import TRAIN_SEED_MIN

    if any(s >= TRAIN_SEED_MIN for s in seeds):
        raise ConfigError(where, "eval.seeds", seeds, f"seeds below {TRAIN_SEED_MIN} (training workloads use seeds "
                          f">= {TRAIN_SEED_MIN}, so these stay held out)")
    return TrainConfig(
        env_id=env_id,
        algo=algo,
        n_envs=_pos_int(where, "n_envs", body.get("n_envs", 2)),
        n_timesteps=_pos_int(where, "n_timesteps", body.get("n_timesteps", 400_000)),
        policy=str(body.get("policy", "MlpPolicy")),
        normalize=_normalize(where, body.get("normalize", True), body.get("normalize_kwargs")),
        env_kwargs=dict(env_kwargs),
        policy_kwargs=_policy_kwargs(where, body.get("policy_kwargs")),
        hyperparams=hyper,
        seed=_pos_int(where, "seed", body.get("seed", 0), zero=True),
        eval=EvalConfig(freq=_pos_int(where, "eval.freq", ev["freq"], zero=True), seeds=list(seeds),
                        env_id=ev["env_id"], env_kwargs=dict(ev["env_kwargs"] or {}), reference=str(ev["reference"])),
        checkpoint_freq=_pos_int(where, "checkpoint_freq", body.get("checkpoint_freq", 100_000), zero=True),
        device=str(body.get("device", "cpu")),
        source=source,
        raw=dict(body),
    )


def load_config(path: str | Path, env_id: str | None = None) -> TrainConfig:
    """Read an RL Zoo-layout YAML file and resolve one env id's section."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError("train", "--config", str(path), "an existing YAML file, e.g. configs/ppo/kairos-v0.yaml")
    data = load_yaml_file(p)
    return parse_config(data, env_id, source=str(p))
