"""``kairos-gym train --backend rllib``: PPO with the masking RLModule, from a kairos-gym training config.

The config is the SB3 pipeline's (docs/training.md; e.g. ``configs/ppo/rllib-smoke.yaml``), mapped onto RLlib's
``PPOConfig`` (:data:`HYPER_MAP`): one RLlib iteration collects ``n_steps x n_envs`` env steps (SB3's rollout),
``n_timesteps`` sets the number of iterations (rounded up), ``batch_size`` is the minibatch, ``n_epochs`` the
epochs, ``policy_kwargs.net_arch`` the hidden layers (the same for pi and vf). ``normalize`` must be false (RLlib's
MeanStdFilter would filter the mask too). What RLlib has no equivalent for (``lin_`` schedules, other keys) is refused
with a ConfigError, never dropped. Each iteration's figures go to ``<out>/metrics.jsonl``; the final
algorithm state to ``<out>/checkpoint`` (RLlib's own format). Every env counts the invalid actions it was
sent (:class:`InvalidActionCounter` sums them: with the masking module the sum is 0).
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from kairos_gym.train.config import LinearSchedule, TrainConfig
from kairos_gym.train.rllib.env import ENV_NAME, make_masked_env

from kairos_gym.errors import ConfigError

HYPER_MAP = {"learning_rate": "lr", "gamma": "gamma", "gae_lambda": "lambda_", "clip_range": "clip_param",
             "ent_coef": "entropy_coeff", "vf_coef": "vf_loss_coeff", "max_grad_norm": "grad_clip"}
"""SB3 hyperparameter -> RLlib ``PPOConfig.training`` argument (n_steps, batch_size, n_epochs: see the module)."""
SHAPE_KEYS = ("n_steps", "batch_size", "n_epochs")
MAX_ITERATIONS = 100_000
"""Most RLlib iterations of one run."""
INVALID = "kairos_invalid_actions"
STEPS = "kairos_env_steps"


def register() -> str:
    """Register the env creator (:func:`kairos_gym.train.rllib.env.make_masked_env`) in Ray's registry as
    :data:`~kairos_gym.train.rllib.env.ENV_NAME`; returns the name."""
    from ray.tune.registry import register_env

    register_env(ENV_NAME, make_masked_env)
    return ENV_NAME


def _callback_class() -> Any:
    from ray.rllib.callbacks.callbacks import RLlibCallback

    class InvalidActionCounter(RLlibCallback):
        """Sums the env's own ``info["invalid_action"]`` and the env steps (metrics ``kairos_invalid_actions``,
        ``kairos_env_steps`` under ``env_runners``)."""

        def on_episode_step(self, *, episode: Any, metrics_logger: Any = None, **kwargs: Any) -> None:
            info = episode.get_infos(-1) or {}
            metrics_logger.log_value(INVALID, int(bool(info.get("invalid_action", False))), reduce="sum")
            metrics_logger.log_value(STEPS, 1, reduce="sum")

    return InvalidActionCounter


def ppo_config(cfg: TrainConfig, *, num_env_runners: int = 0, module_class: Any = None) -> tuple[Any, int]:
    """RLlib's ``PPOConfig`` of ``cfg`` and the number of iterations; ConfigError for what does not map.
    ``module_class``: the RLModule (default :class:`~kairos_gym.train.rllib.module.MaskedPPOTorchModule`)."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    if module_class is None:
        from kairos_gym.train.rllib.module import MaskedPPOTorchModule as module_class

    w = f"{cfg.source} [{cfg.env_id}] (--backend rllib)"
    if cfg.algo != "maskable_ppo":
        raise ConfigError(w, "algo", cfg.algo, "maskable_ppo (the rllib backend always masks)")
    training: dict[str, Any] = {}
    for key, value in cfg.hyperparams.items():
        if key in SHAPE_KEYS:
            continue
        if key not in HYPER_MAP:
            raise ConfigError(w, key, value, "hyperparameters the rllib backend maps: "
                              + ", ".join([*SHAPE_KEYS, *HYPER_MAP]))
        if isinstance(value, LinearSchedule) or not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ConfigError(w, key, cfg.raw.get(key, value), "a number (no lin_ schedules on the rllib backend)")
        training[HYPER_MAP[key]] = float(value)
    hp = cfg.hyperparams
    rollout = int(hp.get("n_steps", 2048)) * cfg.n_envs
    minibatch = int(hp.get("batch_size", 64))
    if minibatch > rollout:
        raise ConfigError(w, "batch_size", minibatch, f"at most n_steps x n_envs = {rollout}")
    arch = cfg.policy_kwargs.get("net_arch", {"pi": [64, 64], "vf": [64, 64]})
    if isinstance(arch, dict):
        if arch.get("pi") != arch.get("vf"):
            raise ConfigError(w, "policy_kwargs.net_arch", arch, "the same pi and vf layers (RLlib's default PPO "
                              "module has one hidden-layer list)")
        arch = arch.get("pi")
    extra = sorted(set(cfg.policy_kwargs) - {"net_arch"})
    if extra:
        raise ConfigError(w, "policy_kwargs", {k: cfg.policy_kwargs[k] for k in extra}, "net_arch only")
    norm = cfg.normalize or {}
    for key in ("norm_obs", "norm_reward"):
        if norm.get(key):
            raise ConfigError(w, f"normalize.{key}", True, "false (normalize: false): RLlib's MeanStdFilter would "
                              "also filter the action mask, and it has no reward normalisation")
    iterations = math.ceil(cfg.n_timesteps / rollout)
    if iterations > MAX_ITERATIONS:
        raise ConfigError(w, "n_timesteps", cfg.n_timesteps, f"at most {MAX_ITERATIONS} iterations of {rollout} steps")
    config = (
        PPOConfig()
        .environment(register(), env_config={"env_id": cfg.env_id, **cfg.env_kwargs})
        .framework("torch")
        .env_runners(num_env_runners=num_env_runners, num_envs_per_env_runner=cfg.n_envs,
                     rollout_fragment_length="auto")
        .learners(num_learners=0)
        .training(train_batch_size_per_learner=rollout, minibatch_size=minibatch,
                  num_epochs=int(hp.get("n_epochs", 10)), **training)
        .rl_module(rl_module_spec=RLModuleSpec(module_class=module_class,
                                               model_config={"fcnet_hiddens": list(arch), "vf_share_layers": False}))
        .callbacks(_callback_class())
        .debugging(seed=cfg.seed)
    )
    return config, iterations


def train_rllib(cfg: TrainConfig, out: str | Path, *, num_env_runners: int = 0, workers: int | None = None,
                address: str | None = None, log: Any = None, module_class: Any = None) -> dict[str, Any]:
    """Train; returns ``{"iterations", "env_steps", "invalid_actions", "train_seconds", "episode_return_mean",
    "out"}`` and writes ``metrics.jsonl``, ``meta.json`` and ``checkpoint/`` under ``out``. Starts a local Ray
    instance with ``workers`` CPUs (or joins ``address``) unless Ray is already initialised."""
    from kairos_gym.evaluation.backends.ray_backend import import_ray

    ray = import_ray("train", "--backend", "rllib")
    config, iterations = ppo_config(cfg, num_env_runners=num_env_runners, module_class=module_class)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    started = False
    if not ray.is_initialized():
        ray.init(address=address) if address else ray.init(num_cpus=workers, include_dashboard=False)
        started = True
    t0 = time.perf_counter()
    try:
        algo = config.build_algo()
        invalid = steps = 0
        last: dict[str, Any] = {}
        with (out / "metrics.jsonl").open("w", encoding="utf-8") as fh:
            for it in range(1, iterations + 1):
                res = algo.train()
                er = res.get("env_runners", {})
                invalid += int(er.get(INVALID, 0))
                steps += int(er.get(STEPS, 0))
                last = {"iteration": it, "env_steps": steps, "invalid_actions": invalid,
                        "episode_return_mean": er.get("episode_return_mean"),
                        "episodes": er.get("num_episodes_lifetime")}
                fh.write(json.dumps(last) + "\n")
                if log is not None:
                    print(f"iteration {it}/{iterations}: {json.dumps(last)}", file=log)
        algo.save_to_path(str((out / "checkpoint").resolve()))
        algo.stop()
    finally:
        if started:
            ray.shutdown()
    meta = {**last, "iterations": iterations, "train_seconds": time.perf_counter() - t0, "out": str(out),
            "env_id": cfg.env_id, "seed": cfg.seed}
    (out / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return meta
