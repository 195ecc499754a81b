"""Training configs: kairos-gym's own YAML layout, one section of hyperparameters per Gymnasium env id.

The layout borrows RL Zoo's ideas (sections keyed by env id, ``n_envs``/``n_timesteps``/``normalize``/
``policy_kwargs`` keys, ``lin_`` schedules, ``dict(...)`` strings) but it is NOT an RL Zoo hyperparameter
file: ``rl_zoo3.train`` would refuse it (``algo``, ``seed``, ``eval``, ``checkpoint_freq`` and ``device``
are kairos-gym keys). Read only with :func:`load_config` / ``kairos-gym train``.

```yaml
kairos_gym/Kairos-v0:
  algo: maskable_ppo              # maskable_ppo (default) or ppo (the ablation: no action masks)
  n_envs: 2                       # envs of the vector env (one process unless vec_backend: subproc)
  vec_backend: native             # native (default: KairosVecEnv, one native call per step) | dummy | subproc
  n_timesteps: !!float 4e5
  policy: MlpPolicy               # the only policy the safe checkpoint format stores
  normalize: {norm_obs: true, norm_reward: true}   # VecNormalize: true / false / a mapping (or its string)
  env_kwargs: {episode_window: 600, tbt_penalty: 0.5}
  policy_kwargs: "dict(net_arch=dict(pi=[64, 64], vf=[64, 64]))"   # or a mapping; parsed, never evaluated
  learning_rate: lin_3e-4         # lin_<x> decays linearly to 0 (clamped at 0)
  n_steps: 512
  ...                             # any other PPO / MaskablePPO constructor argument
  seed: 0
  eval: {freq: 50000, seeds: [100, 101, 102]}
  checkpoint_freq: 100000
```

String forms of ``policy_kwargs`` and ``normalize`` are parsed by :func:`parse_literal` (literals,
``dict(...)`` and ``nn.<activation>`` only; no ``eval``). See docs/training.md for every key.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kairos_gym.agents.sb3_checkpoint import DEFAULT_NORMALIZE, parse_normalize

from kairos_gym.errors import ConfigError
from kairos_gym.literal import parse_literal
from kairos_gym.yaml_io import load_yaml_file

ALGOS = ("maskable_ppo", "ppo", "maskable_dqn")
"""Training algorithms: sb3-contrib's MaskablePPO, SB3's PPO (the ablation without masks) and
:class:`~kairos_gym.train.maskable_dqn.MaskableDQN` (SB3's DQN with action masks: the value-based family)."""
PPO_ALGOS = ("maskable_ppo", "ppo")
RUN_KEYS = ("algo", "n_envs", "vec_backend", "n_timesteps", "policy", "normalize", "normalize_kwargs", "env_kwargs",
            "policy_kwargs")
KAIROS_KEYS = ("seed", "eval", "checkpoint_freq", "device", "init_from", "freeze_actor_steps", "anchor_kl")
EVAL_KEYS = ("freq", "seeds", "env_id", "env_kwargs", "reference")
NOT_HYPER = ("self", "policy", "env", "tensorboard_log", "verbose", "seed", "device", "_init_setup_model",
             "policy_kwargs", "stats_window_size", "replay_buffer_class", "replay_buffer_kwargs",
             "optimize_memory_usage")
DEFAULT_EVAL = {"freq": 50_000, "seeds": [100, 101, 102], "env_id": None, "env_kwargs": {}, "reference": "kairos"}
MAX_N_ENVS = 64
"""Most envs in one run's vector env (they all run in one process)."""
MAX_TIMESTEPS = 10**9
"""Most ``n_timesteps`` of one run (about 20 hours at the fast recipe's ~14k steps/s on 2 cores)."""
MAX_N_STEPS = 1 << 20
"""Most ``n_steps`` per env and rollout (the rollout buffer holds n_steps x n_envs observations)."""
MAX_BUFFER_SIZE = 4_000_000
"""Most transitions of a MaskableDQN replay buffer (it holds two float32 observations and a mask per transition:
about 2 GB at the domain env's 57 features and 13 actions)."""

_INT, _FLOAT, _BOOL = "int", "float", "bool"
HYPER_RANGES: dict[str, tuple[str, float | None, bool, float | None, bool]] = {
    # name: (kind, low, low inclusive, high, high inclusive); None: unbounded on that side
    "learning_rate": (_FLOAT, 0.0, False, 1.0, True),
    "n_steps": (_INT, 1, True, MAX_N_STEPS, True),
    "batch_size": (_INT, 1, True, None, True),  # and <= n_steps x n_envs, checked in parse_config
    "n_epochs": (_INT, 1, True, 1000, True),
    "gamma": (_FLOAT, 0.0, False, 1.0, True),
    "gae_lambda": (_FLOAT, 0.0, True, 1.0, True),
    "clip_range": (_FLOAT, 0.0, False, 10.0, True),
    "clip_range_vf": (_FLOAT, 0.0, False, 1e6, True),
    "ent_coef": (_FLOAT, 0.0, True, 1e3, True),
    "vf_coef": (_FLOAT, 0.0, True, 1e3, True),
    "max_grad_norm": (_FLOAT, 0.0, False, 1e6, True),
    "target_kl": (_FLOAT, 0.0, False, 1e3, True),
    "normalize_advantage": (_BOOL, None, True, None, True),
    # MaskableDQN (SB3's DQN arguments)
    "buffer_size": (_INT, 1, True, MAX_BUFFER_SIZE, True),
    "learning_starts": (_INT, 0, True, MAX_TIMESTEPS, True),
    "tau": (_FLOAT, 0.0, False, 1.0, True),
    "train_freq": (_INT, 1, True, MAX_N_STEPS, True),
    "gradient_steps": (_INT, 1, True, 1000, True),
    "target_update_interval": (_INT, 1, True, MAX_TIMESTEPS, True),
    "exploration_fraction": (_FLOAT, 0.0, True, 1.0, True),
    "exploration_initial_eps": (_FLOAT, 0.0, True, 1.0, True),
    "exploration_final_eps": (_FLOAT, 0.0, True, 1.0, True),
}
"""Documented ranges of the PPO / MaskablePPO / MaskableDQN hyperparameters a config may set, checked before SB3 sees
them (a schedule ``lin_x`` is checked at its start x). ``clip_range_vf`` and ``target_kl`` may also be null."""


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
    vec_backend: str = "native"  # kairos_gym.train.envs.VEC_BACKENDS
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
    init_from: str | None = None  # a safe checkpoint whose actor starts the run (train/init_from.py)
    freeze_actor_steps: int = 0  # timesteps during which only the value network trains (train/init_from.py)
    anchor_kl: float = 0.0  # weight of the KL to the init_from actor after each rollout (train/anchor_kl.py)
    source: str = "(dict)"
    raw: dict[str, Any] = field(default_factory=dict)  # the env id's section as written (for the run's copy)

    def to_yaml_dict(self) -> dict[str, Any]:
        """The resolved config in the same layout (what a run writes next to its model)."""
        body: dict[str, Any] = {
            "algo": self.algo, "n_envs": self.n_envs, "vec_backend": self.vec_backend, "n_timesteps": self.n_timesteps,
            "policy": self.policy,
            "normalize": self.normalize if self.normalize is not None else False,
            "env_kwargs": self.env_kwargs, "policy_kwargs": self.raw.get("policy_kwargs", self.policy_kwargs),
        }
        body.update(self.raw_hyperparams())
        body.update({"seed": self.seed, "eval": {"freq": self.eval.freq, "seeds": list(self.eval.seeds),
                                                 "env_id": self.eval.env_id, "env_kwargs": self.eval.env_kwargs,
                                                 "reference": self.eval.reference},
                     "checkpoint_freq": self.checkpoint_freq, "device": self.device})
        if self.init_from is not None:
            body["init_from"] = self.init_from
        if self.freeze_actor_steps:
            body["freeze_actor_steps"] = self.freeze_actor_steps
        if self.anchor_kl:
            body["anchor_kl"] = self.anchor_kl
        return {self.env_id: body}

    def raw_hyperparams(self) -> dict[str, Any]:
        """Hyperparameters as written (schedules as ``lin_x`` strings)."""
        return {k: self.raw.get(k, v) for k, v in self.hyperparams.items()}


def _algo_class(algo: str) -> Any:
    if algo == "maskable_dqn":
        from kairos_gym.train.maskable_dqn import MaskableDQN

        return MaskableDQN
    if algo == "maskable_ppo":
        from sb3_contrib import MaskablePPO

        return MaskablePPO
    from stable_baselines3 import PPO

    return PPO


def hyperparam_names(algo: str) -> list[str]:
    """Constructor arguments of the algorithm that a config may set directly."""
    if algo == "maskable_dqn":  # MaskableDQN takes DQN's arguments (**kwargs) except the ones it fixes
        from kairos_gym.train.maskable_dqn import FIXED
        from stable_baselines3 import DQN

        params = inspect.signature(DQN.__init__).parameters
        return [p for p in params if p not in NOT_HYPER and p not in FIXED]
    params = inspect.signature(_algo_class(algo).__init__).parameters
    return [p for p in params if p not in NOT_HYPER]


def _schedule(where: str, key: str, value: Any) -> Any:
    """Schedule strings: ``lin_3e-4`` -> a linear decay from 3e-4 to 0 (SB3 passes progress 1 -> 0)."""
    if isinstance(value, str) and value.startswith("lin_"):
        try:
            start = float(value[4:])
        except ValueError:
            raise ConfigError(where, key, value, "a number or lin_<number>, e.g. lin_3e-4") from None
        if not math.isfinite(start) or start < 0:
            raise ConfigError(where, key, value, "lin_<number> with a finite number >= 0")
        return LinearSchedule(start)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            raise ConfigError(where, key, value, "a number or lin_<number>, e.g. lin_3e-4") from None
    return value


class LinearSchedule:
    """``max(progress_remaining, 0) * start`` (picklable, unlike a lambda).

    SB3 computes ``progress_remaining = 1 - num_timesteps / total_timesteps`` and trains whole rollouts, so
    when the total is not a multiple of ``n_steps * n_envs`` the last update sees a negative progress:
    clamped at 0 (no negative learning rate or clip range)."""

    def __init__(self, start: float) -> None:
        self.start = float(start)

    def __call__(self, progress_remaining: float) -> float:
        return max(progress_remaining, 0.0) * self.start

    def __repr__(self) -> str:
        return f"lin_{self.start:g}"


# ---------------------------------------------------------------------------- literal strings, no eval
POLICY_KWARGS = ("net_arch", "activation_fn", "ortho_init", "share_features_extractor", "optimizer_kwargs")
"""policy_kwargs keys accepted (what the safe checkpoint format can represent)."""
MAX_NET_LAYERS = 16
MAX_NET_WIDTH = 4096


def _activations() -> dict[str, Any]:
    import torch.nn as nn
    from kairos_gym.agents.checkpoint import ACTIVATIONS

    return {n: getattr(nn, n) for n in ACTIVATIONS}


def _policy_kwargs(where: str, value: Any, algo: str = "maskable_ppo") -> dict[str, Any]:
    """A mapping, or the string form ``"dict(net_arch=dict(pi=[64, 64], vf=[64, 64]), activation_fn=nn.ReLU)"``
    (parsed by :func:`parse_literal`, never evaluated). MaskableDQN's Q-network takes ``net_arch`` as one list
    and no ``ortho_init`` / ``share_features_extractor``."""
    from kairos_gym.agents.checkpoint import ACTIVATIONS

    if value is None:
        return {}
    acts = _activations()
    if isinstance(value, str):
        value = parse_literal(where, "policy_kwargs", value, acts)
    if not isinstance(value, Mapping):
        raise ConfigError(where, "policy_kwargs", value, "a mapping or a 'dict(...)' string")
    out = dict(value)
    for k in out:
        if k not in POLICY_KWARGS:
            raise ConfigError(where, f"policy_kwargs.{k}", out[k], "one of " + ", ".join(POLICY_KWARGS))
    act = out.get("activation_fn")
    if isinstance(act, str):
        prefix, _, name = act.rpartition(".")
        if prefix not in ("", "nn", "th.nn", "torch.nn") or name not in ACTIVATIONS:
            raise ConfigError(where, "policy_kwargs.activation_fn", act, "one of " + ", ".join(ACTIVATIONS))
        out["activation_fn"] = acts[name]
    elif act is not None and act not in acts.values():
        raise ConfigError(where, "policy_kwargs.activation_fn", act, "one of " + ", ".join(ACTIVATIONS))
    if "net_arch" in out:
        _check_net_arch(where, out["net_arch"])
    if algo == "maskable_dqn":
        if "net_arch" in out and not isinstance(out["net_arch"], list):
            raise ConfigError(where, "policy_kwargs.net_arch", out["net_arch"],
                              "a list of layer widths (maskable_dqn: one Q-network, no pi / vf)")
        for k in ("ortho_init", "share_features_extractor"):
            if k in out:
                raise ConfigError(where, f"policy_kwargs.{k}", out[k], "absent (a PPO key; maskable_dqn has no "
                                  "actor-critic)")
    for k in ("ortho_init", "share_features_extractor"):
        if k in out and not isinstance(out[k], bool):
            raise ConfigError(where, f"policy_kwargs.{k}", out[k], "true or false")
    if "optimizer_kwargs" in out and not isinstance(out["optimizer_kwargs"], Mapping):
        raise ConfigError(where, "policy_kwargs.optimizer_kwargs", out["optimizer_kwargs"], "a mapping")
    return out


def _check_net_arch(where: str, arch: Any) -> None:
    allowed = (f"a list of at most {MAX_NET_LAYERS} layer widths (1-{MAX_NET_WIDTH}) or "
               "{pi: [...], vf: [...]} of such lists")
    lists = [arch] if isinstance(arch, list) else (
        [arch.get("pi", []), arch.get("vf", [])] if isinstance(arch, Mapping) and set(arch) <= {"pi", "vf"} else None)
    if lists is None or not all(isinstance(x, list) and len(x) <= MAX_NET_LAYERS and all(
            isinstance(w, int) and not isinstance(w, bool) and 1 <= w <= MAX_NET_WIDTH for w in x) for x in lists):
        raise ConfigError(where, "policy_kwargs.net_arch", arch, allowed)


def _check_hyper(where: str, key: str, value: Any) -> None:
    """``value`` (a number, or a :class:`LinearSchedule` checked at its start) within :data:`HYPER_RANGES`."""
    if key not in HYPER_RANGES or (value is None and key in ("clip_range_vf", "target_kl")):
        return
    kind, low, low_in, high, high_in = HYPER_RANGES[key]
    if kind == _BOOL:
        if not isinstance(value, bool):
            raise ConfigError(where, key, value, "true or false")
        return
    num = value.start if isinstance(value, LinearSchedule) else value
    text = ("a whole number" if kind == _INT else "a finite number") + (
        f" {'>=' if low_in else '>'} {low:g}" if low is not None else "") + (
        f" and {'<=' if high_in else '<'} {high:,g}" if high is not None else "")
    ok = not isinstance(num, bool) and isinstance(num, (int, float)) and math.isfinite(num)
    if ok and kind == _INT:
        ok = isinstance(num, int) or float(num).is_integer()
    if ok and low is not None:
        ok = num >= low if low_in else num > low
    if ok and high is not None:
        ok = num <= high if high_in else num < high
    if not ok:
        raise ConfigError(where, key, value, text)


def _pos_int(where: str, key: str, value: Any, *, zero: bool = False) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if zero else 1):
        raise ConfigError(where, key, value, "a whole number " + (">= 0" if zero else ">= 1"))
    return value


def _timesteps(where: str, value: Any) -> int:
    n = _pos_int(where, "n_timesteps", value)
    if n > MAX_TIMESTEPS:
        raise ConfigError(where, "n_timesteps", value, f"a whole number from 1 to {MAX_TIMESTEPS:,}")
    return n


def check_batch(where: str, hyper: Mapping[str, Any], n_envs: int, algo: str = "maskable_ppo") -> None:
    """PPO: ``batch_size`` at most one rollout (``n_steps x n_envs`` transitions; SB3 would train on short
    batches). MaskableDQN: ``n_steps`` (its returns' length) at most ``MAX_RETURN_STEPS``, ``batch_size`` at most
    ``buffer_size``, which holds at least one transition per env."""
    if algo == "maskable_dqn":
        from kairos_gym.train.maskable_dqn import MAX_RETURN_STEPS

        steps = int(hyper.get("n_steps", 1))
        if steps > MAX_RETURN_STEPS:
            raise ConfigError(where, "n_steps", steps, f"a whole number from 1 to {MAX_RETURN_STEPS} (maskable_dqn: "
                              "transitions summed into one return)")
        buffer = int(hyper.get("buffer_size", 1_000_000))
        batch = int(hyper.get("batch_size", 32))
        if batch > buffer:
            raise ConfigError(where, "batch_size", batch, f"a whole number from 1 to buffer_size = {buffer}")
        if buffer < n_envs:
            raise ConfigError(where, "buffer_size", buffer, f"a whole number >= n_envs = {n_envs}")
        return
    n_steps = int(hyper.get("n_steps", 2048))
    batch = int(hyper.get("batch_size", 64))
    if batch > n_steps * n_envs:
        raise ConfigError(where, "batch_size", batch, f"a whole number from 1 to n_steps x n_envs = {n_steps} x "
                          f"{n_envs} = {n_steps * n_envs} (one rollout)")


def parse_config(data: Mapping[str, Any], env_id: str | None = None, source: str = "(dict)") -> TrainConfig:
    """Resolve the section of ``env_id`` (the only one when None) of a training-config mapping."""
    if not isinstance(data, Mapping) or not data:
        raise ConfigError(source, "(top level)", data, "a mapping of env id -> hyperparameters")
    if env_id is None:
        if len(data) != 1:
            raise ConfigError(source, "--env-id", None, "one of the config's env ids: " + ", ".join(map(str, data)))
        env_id = str(next(iter(data)))
    if env_id not in data:
        raise ConfigError(source, "--env-id", env_id, "one of the config's env ids: " + ", ".join(map(str, data)))
    from kairos_gym.train.domain import DOMAIN_ENV_ID

    from kairos_gym.env.registration import env_ids

    known = [*env_ids(), DOMAIN_ENV_ID]
    if env_id not in known:
        raise ConfigError(source, "(env id)", env_id, "a registered env id: " + ", ".join(known))
    body = data[env_id] or {}
    where = f"{source} [{env_id}]"
    if not isinstance(body, Mapping):
        raise ConfigError(where, env_id, body, "a mapping of hyperparameters")
    algo = body.get("algo", "maskable_ppo")
    if algo not in ALGOS:
        raise ConfigError(where, "algo", algo, "one of " + ", ".join(ALGOS))
    names = hyperparam_names(algo)
    for k in body:
        if k not in RUN_KEYS and k not in KAIROS_KEYS and k not in names:
            raise ConfigError(where, str(k), body[k], "a run key (" + ", ".join(RUN_KEYS) + "), a kairos-gym key ("
                              + ", ".join(KAIROS_KEYS) + ") or a " + algo + " argument (" + ", ".join(names) + ")")
    hyper = {k: _schedule(where, k, v) if k in ("learning_rate", "clip_range", "clip_range_vf") else v
             for k, v in body.items() if k in names}
    for k, v in hyper.items():
        _check_hyper(where, k, v)
    hyper.update({k: int(v) for k, v in hyper.items() if HYPER_RANGES.get(k, ("",))[0] == _INT})
    env_kwargs = body.get("env_kwargs") or {}
    if not isinstance(env_kwargs, Mapping):
        raise ConfigError(where, "env_kwargs", env_kwargs, "a mapping of KairosEnv arguments")
    if env_kwargs.get("obs_mode", "flat") != "flat":
        raise ConfigError(where, "env_kwargs.obs_mode", env_kwargs["obs_mode"],
                          "flat (the safe checkpoint format stores an MLP on flat observations)")
    policy = body.get("policy", "MlpPolicy")
    if policy != "MlpPolicy":
        raise ConfigError(where, "policy", policy, "MlpPolicy (what the safe checkpoint format stores)")
    n_envs = _pos_int(where, "n_envs", body.get("n_envs", 2))
    if n_envs > MAX_N_ENVS:
        raise ConfigError(where, "n_envs", n_envs, f"a whole number from 1 to {MAX_N_ENVS}")
    check_batch(where, hyper, n_envs, algo)
    ev = {**DEFAULT_EVAL, **(body.get("eval") or {})}
    for k in ev:
        if k not in EVAL_KEYS:
            raise ConfigError(where, f"eval.{k}", ev[k], "one of " + ", ".join(EVAL_KEYS))
    from kairos_gym.train.domain import check_kwargs

    from kairos_gym.flags import check_seed_list, parse_seeds

    if env_id == DOMAIN_ENV_ID:  # the domain env: its own kwargs; it validates on held-out train-side instances
        check_kwargs(env_kwargs, f"{where} env_kwargs")
        given = body.get("eval") or {}
        for k in ("seeds", "env_id", "env_kwargs"):
            if given.get(k) not in (None, [], {}):
                raise ConfigError(where, f"eval.{k}", given[k], f"nothing ({DOMAIN_ENV_ID} evaluates on the suite's "
                                  "held-out train instances, train/domain.py; eval takes freq and reference)")
        ev["seeds"] = []
    seeds = ev["seeds"]
    if env_id == DOMAIN_ENV_ID:
        seeds = []
    elif isinstance(seeds, str):
        seeds = parse_seeds(seeds, "eval.seeds", where)
    else:
        seeds = check_seed_list(seeds, "eval.seeds", where)
    from kairos_gym.train.envs import TRAIN_SEED_MIN, VEC_BACKENDS

    # every id trains on every backend (the domain env's native one: train/domain_vec.py)
    vec_backend = body.get("vec_backend", VEC_BACKENDS[0])
    if vec_backend not in VEC_BACKENDS:
        raise ConfigError(where, "vec_backend", vec_backend, "one of " + ", ".join(VEC_BACKENDS))

    if any(s >= TRAIN_SEED_MIN for s in seeds):
        raise ConfigError(where, "eval.seeds", seeds, f"seeds below {TRAIN_SEED_MIN} (training workloads use seeds "
                          f">= {TRAIN_SEED_MIN}, so these stay held out)")
    return TrainConfig(
        env_id=env_id,
        algo=algo,
        n_envs=n_envs,
        vec_backend=vec_backend,
        n_timesteps=_timesteps(where, body.get("n_timesteps", 400_000)),
        policy=policy,
        normalize=parse_normalize(where, body.get("normalize", True), body.get("normalize_kwargs")),
        env_kwargs=dict(env_kwargs),
        policy_kwargs=_policy_kwargs(where, body.get("policy_kwargs"), algo),
        hyperparams=hyper,
        seed=_pos_int(where, "seed", body.get("seed", 0), zero=True),
        eval=EvalConfig(freq=_pos_int(where, "eval.freq", ev["freq"], zero=True), seeds=list(seeds),
                        env_id=ev["env_id"], env_kwargs=dict(ev["env_kwargs"] or {}), reference=str(ev["reference"])),
        checkpoint_freq=_pos_int(where, "checkpoint_freq", body.get("checkpoint_freq", 100_000), zero=True),
        device=str(body.get("device", "cpu")),
        init_from=_init_from(where, body),
        freeze_actor_steps=_pos_int(where, "freeze_actor_steps", body.get("freeze_actor_steps", 0), zero=True),
        anchor_kl=_anchor_kl(where, body),
        source=source,
        raw=dict(body),
    )


def _init_from(where: str, body: Mapping[str, Any]) -> str | None:
    """``init_from`` checked (train/init_from.py; PPO algorithms only); ``freeze_actor_steps`` needs it."""
    from kairos_gym.train.init_from import check_init_from

    value = check_init_from(where, body.get("init_from"))
    algo = body.get("algo", "maskable_ppo")
    if value is not None and algo not in PPO_ALGOS:
        raise ConfigError(where, "init_from", value, "absent with algo " + str(algo) + " (it loads an actor into a "
                          "PPO / MaskablePPO policy)")
    if value is None and body.get("freeze_actor_steps"):
        raise ConfigError(where, "freeze_actor_steps", body["freeze_actor_steps"],
                          "0 or absent without init_from (a fresh actor has nothing to keep)")
    return value


MAX_ANCHOR_KL = 1e3
"""Largest ``anchor_kl`` weight."""


def _anchor_kl(where: str, body: Mapping[str, Any]) -> float:
    """``anchor_kl`` checked (train/anchor_kl.py): a number from 0 to :data:`MAX_ANCHOR_KL`; above 0 it needs
    ``init_from`` (the actor it anchors to) and maskable_ppo (the masks it restricts both distributions to)."""
    value = body.get("anchor_kl", 0.0)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 <= value <= MAX_ANCHOR_KL:
        raise ConfigError(where, "anchor_kl", value, f"a number from 0 to {MAX_ANCHOR_KL:g}")
    if value and (body.get("init_from") is None or body.get("algo", "maskable_ppo") != "maskable_ppo"):
        raise ConfigError(where, "anchor_kl", value, "0 or absent without init_from and algo maskable_ppo (it anchors "
                          "the policy to the init_from actor, within the rollout's action masks)")
    return float(value)


def load_config(path: str | Path, env_id: str | None = None) -> TrainConfig:
    """Read a training-config YAML file (:func:`kairos_gym.yaml_io.load_yaml_file`) and resolve one env id's
    section."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError("train", "--config", str(path), "an existing YAML file, e.g. configs/ppo/kairos-v0.yaml")
    data = load_yaml_file(p)
    return parse_config(data, env_id, source=str(p))
