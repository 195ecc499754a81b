"""RL training of a kairos-gym env: MaskablePPO (default), PPO or MaskableDQN, VecNormalize, checkpoints, resume,
periodic held-out evaluation with ``kairos/`` TensorBoard scalars. See docs/training.md.

A run folder holds::

    config.yaml              the resolved config (same layout as the input)
    tb/                      TensorBoard event files (SB3 scalars + kairos/)
    progress.csv             the same scalars as CSV
    eval_history.jsonl       one line per periodic evaluation
    checkpoints/             ckpt_<steps>_steps/ (safe format), ckpt_<steps>_steps.zip and
                             ckpt_vecnormalize_<steps>_steps.pkl (SB3 training state)
    best/                    the best evaluation: policy.json + policy.npz + normalize.json (safe), eval.json,
                             model.zip + vecnormalize.pkl (SB3 training state)
    final/                   the same at the end (without eval.json)
    meta.json                command, seconds, timesteps, versions, last / best evaluation

The safe files (kairos_gym.agents.checkpoint) load without trust; the SB3 files hold pickles and are read
only by ``resume`` with ``trust_checkpoint=True`` (see kairos_gym.train.checkpoints).
"""

from __future__ import annotations

import json
import platform
import shlex
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml
from kairos_gym.agents.checkpoint import NORMALIZE_JSON, POLICY_JSON, WEIGHTS_NPZ, require_trust
from kairos_gym.agents.sb3_checkpoint import resolve_model_path, stats_path_for
from kairos_gym.train.callbacks import CheckpointEvery, DomainEvalCallback, KairosEvalCallback, ProgressBar
from kairos_gym.train.checkpoints import save_checkpoint
from kairos_gym.train.config import TrainConfig, _algo_class
from kairos_gym.train.domain import DOMAIN_ENV_ID
from kairos_gym.train.envs import eval_env_kwargs, make_eval_env, make_vec_env

from kairos_gym.errors import ConfigError
from kairos_gym.json_file import read_json_file

MAX_RUN_JSON_BYTES = 1 << 20
"""Largest ``meta.json`` / ``eval.json`` of a run folder read on ``--resume`` or ``--export`` (bytes)."""


def _run_json(path: Path) -> Any:
    """A JSON file of a run folder, read under the bounds of :mod:`kairos_gym.json_file`."""
    return read_json_file("train", path.name, path, MAX_RUN_JSON_BYTES, "file written by kairos-gym train")


def _versions() -> dict[str, str]:
    import gymnasium
    import sb3_contrib
    import stable_baselines3
    import torch

    return {"python": platform.python_version(), "torch": torch.__version__, "stable_baselines3":
            stable_baselines3.__version__, "sb3_contrib": sb3_contrib.__version__, "gymnasium": gymnasium.__version__}


def prepare_torch() -> None:
    """torch as training uses it: one thread (SB3's rollout and update are serial; a second thread fights the env
    and other runs on 2 cores) and no argument validation in ``torch.distributions`` (the checks only raise on
    malformed logits, which a network's finite outputs never are, and run on every distribution of the rollout and
    the update: docs/training.md). Values, hence runs, are the same either way (tested)."""
    import torch

    torch.set_num_threads(1)
    torch.distributions.Distribution.set_default_validate_args(False)


def build_model(cfg: TrainConfig, venv: Any) -> Any:
    """A fresh PPO / MaskablePPO / MaskableDQN for ``venv`` from the config's hyperparameters."""
    algo = _algo_class(cfg.algo)
    return algo(cfg.policy, venv, seed=cfg.seed, device=cfg.device, policy_kwargs=cfg.policy_kwargs or None,
                verbose=0, **cfg.hyperparams)


def train(cfg: TrainConfig, out: str | Path, **kwargs: Any) -> dict[str, Any]:
    """:func:`train_into` ``out``; a run that fails (an exception) before it saved any checkpoint removes the run
    folder if it created it, so a failed run leaves nothing behind. An interrupted run (Ctrl-C) keeps its folder."""
    out = Path(out)
    created = not out.exists()
    try:
        return train_into(cfg, out, **kwargs)
    except Exception:
        if created and out.is_dir() and not any((out / "checkpoints").glob("*")) and not (out / "final").exists():
            shutil.rmtree(out, ignore_errors=True)
        raise


def train_into(cfg: TrainConfig, out: str | Path, *, resume: str | Path | None = None,
               trust_checkpoint: bool = False, progress: bool = True, export: str | Path | None = None,
               command: str | None = None, verbose: int = 0) -> dict[str, Any]:
    """Train per ``cfg`` into run folder ``out``; ``resume`` continues from SB3's training state (a zip, a
    checkpoint folder or a run folder: its latest ``checkpoints/ckpt_<n>_steps.zip``) up to ``cfg.n_timesteps``
    in total, and needs ``trust_checkpoint=True`` (the zip and vecnormalize.pkl are unpickled).
    ``export`` copies the best model (else the final one) in the safe format, the config and meta.json
    into a folder (the shipped-agent layout). Returns the run's meta dict."""
    zip_path = None
    if resume is not None and cfg.algo == "maskable_dqn":
        raise ConfigError("train", "--resume", str(resume), "a PPO / MaskablePPO run (a MaskableDQN checkpoint does "
                          "not keep its replay buffer, so resuming would not continue the same training)")
    if resume is not None:  # refused before any work: unpickling a file can run code stored in it
        zip_path = resolve_model_path(resume)
        require_trust(zip_path, trust_checkpoint, "train", "--resume",
                      "--trust-checkpoint (Python: trust_checkpoint=True)")
    from stable_baselines3.common.logger import configure
    from stable_baselines3.common.utils import set_random_seed
    from stable_baselines3.common.vec_env import VecNormalize

    prepare_torch()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    gamma = float(cfg.hyperparams.get("gamma", 0.99))
    algo_cls = _algo_class(cfg.algo)
    init: dict[str, Any] | None = None  # what init_from loaded (a fresh run of a config with init_from)
    if zip_path is not None:
        set_random_seed(cfg.seed + 1)
        model0 = algo_cls.load(zip_path, device=cfg.device)
        done = int(model0.num_timesteps)
        # reseed the envs past the steps done, so resumed episodes are new workloads
        venv = make_vec_env(cfg.env_id, cfg.env_kwargs, cfg.n_envs, cfg.seed + 7919 * (done + 1), None, gamma,
                            cfg.vec_backend)
        stats = stats_path_for(zip_path)
        if cfg.normalize is not None:
            if stats is None:
                raise ConfigError("train", "--resume", str(resume), "a checkpoint saved with its vecnormalize "
                                  "statistics (the config normalises)")
            venv = VecNormalize.load(str(stats), venv)
            venv.training = True
        model = algo_cls.load(zip_path, env=venv, device=cfg.device)
        del model0
    else:
        set_random_seed(cfg.seed)
        venv = make_vec_env(cfg.env_id, cfg.env_kwargs, cfg.n_envs, cfg.seed, cfg.normalize, gamma, cfg.vec_backend)
        model = build_model(cfg, venv)
        done = 0
        if cfg.init_from is not None:
            from kairos_gym.train.envs import env_inputs
            from kairos_gym.train.init_from import load_actor_into

            init = load_actor_into(model, venv, cfg.init_from, env_inputs(venv))
    model.set_logger(configure(str(out / "tb"), ["tensorboard", "csv"]))
    (out / "config.yaml").write_text(yaml.safe_dump(cfg.to_yaml_dict(), sort_keys=False), encoding="utf-8")

    callbacks: list[Any] = []
    evaluator = None
    if cfg.eval.freq and cfg.env_id == DOMAIN_ENV_ID:  # the held-out train-side cases of the domain (train/domain.py)
        from kairos_gym.train.domain import spec_from_kwargs, validation_cases

        evaluator = DomainEvalCallback(validation_cases(spec_from_kwargs(cfg.env_kwargs)), cfg.eval.freq,
                                       reference=cfg.eval.reference, best_dir=out / "best",
                                       history_path=out / "eval_history.jsonl", verbose=verbose)
    elif cfg.eval.freq:
        eval_id = cfg.eval.env_id or cfg.env_id
        eval_env = make_eval_env(eval_id, eval_env_kwargs(cfg.env_kwargs, cfg.eval.env_kwargs))
        evaluator = KairosEvalCallback(eval_env, cfg.eval.seeds, cfg.eval.freq, reference=cfg.eval.reference,
                                       best_dir=out / "best", history_path=out / "eval_history.jsonl", verbose=verbose)
    if evaluator is not None:
        if resume is not None and (out / "best" / "eval.json").is_file():
            from kairos_gym.train.callbacks import eval_score

            prev = _run_json(out / "best" / "eval.json")
            evaluator.best, evaluator.best_metrics = eval_score(prev), prev
        callbacks.append(evaluator)
    if cfg.freeze_actor_steps:
        from kairos_gym.train.init_from import FreezeActor

        callbacks.append(FreezeActor(cfg.freeze_actor_steps))
    if cfg.anchor_kl:
        from kairos_gym.train.anchor_kl import AnchorKL

        callbacks.append(AnchorKL(str(cfg.init_from), cfg.anchor_kl, int(cfg.hyperparams.get("batch_size", 64))))
    ckpt = CheckpointEvery(out / "checkpoints", cfg.checkpoint_freq)
    callbacks.append(ckpt)
    if progress:
        callbacks.append(ProgressBar(cfg.n_timesteps, evaluator))

    remaining = max(cfg.n_timesteps - done, 0)
    t0 = time.perf_counter()
    model.learn(total_timesteps=remaining, callback=callbacks, reset_num_timesteps=resume is None,
                log_interval=1)
    seconds = time.perf_counter() - t0
    ckpt.save()
    save_checkpoint(model, venv, out / "final")

    prev_meta = {}
    if resume is not None and (out / "meta.json").is_file():
        prev_meta = _run_json(out / "meta.json")
    meta: dict[str, Any] = {
        "command": command or shlex.join(sys.argv),
        "config": cfg.source,
        "env_id": cfg.env_id,
        "algo": cfg.algo,
        "seed": cfg.seed,
        "timesteps": int(model.num_timesteps),
        "train_seconds": round(seconds + float(prev_meta.get("train_seconds", 0.0)), 1),
        "eval_seconds": round((evaluator.eval_seconds if evaluator else 0.0)
                              + float(prev_meta.get("eval_seconds", 0.0)), 1),
        "resumed_from": None if resume is None else str(resume),
        "init_from": init,
        "eval_seeds": cfg.eval.seeds,
        "last_eval": evaluator.last if evaluator else None,
        "best_eval": evaluator.best_metrics if evaluator else None,
        "versions": _versions(),
        "machine": {"cpus": _cpus(), "platform": platform.platform()},
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    if export is not None:
        export_checkpoint(out, export)
    venv.close()
    return meta


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def export_checkpoint(run: str | Path, dest: str | Path, which: str = "auto") -> Path:
    """Copy a run's ``best`` (``auto``: best if it exists, else ``final``) checkpoint in the safe format
    (policy.json, policy.npz, normalize.json), its config and meta into ``dest`` (the shipped layout;
    no pickles are copied)."""
    run, dest = Path(run), Path(dest)
    src = run / ("best" if which == "auto" and (run / "best" / POLICY_JSON).is_file() else
                 ("final" if which == "auto" else which))
    if not (src / POLICY_JSON).is_file():
        raise ConfigError("train", "--export", str(src), "a run folder with best/ or final/policy.json")
    dest.mkdir(parents=True, exist_ok=True)
    for name in (POLICY_JSON, WEIGHTS_NPZ, NORMALIZE_JSON):
        if (src / name).is_file():
            shutil.copy2(src / name, dest / name)
        elif (dest / name).exists():
            (dest / name).unlink()
    shutil.copy2(run / "config.yaml", dest / "config.yaml")
    meta = _run_json(run / "meta.json") if (run / "meta.json").is_file() else {}
    meta["exported"] = src.name
    if (src / "eval.json").is_file():
        meta["exported_eval"] = _run_json(src / "eval.json")
    (dest / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return dest


def with_overrides(cfg: TrainConfig, *, algo: str | None = None, timesteps: int | None = None,
                   seed: int | None = None, n_envs: int | None = None, eval_freq: int | None = None,
                   vec_backend: str | None = None) -> TrainConfig:
    """The config with command-line overrides applied (``algo`` re-validates the hyperparameters)."""
    if algo is not None and algo != cfg.algo:
        from kairos_gym.train.config import ALGOS, PPO_ALGOS, hyperparam_names

        if algo not in ALGOS:
            raise ConfigError("train", "--algo", algo, "one of " + ", ".join(ALGOS))
        if (algo in PPO_ALGOS) != (cfg.algo in PPO_ALGOS):
            raise ConfigError("train", "--algo", algo, f"an algorithm of the config's family ({cfg.algo}: "
                              + ("maskable_ppo or ppo" if cfg.algo in PPO_ALGOS else "maskable_dqn") + ")")
        names = hyperparam_names(algo)
        bad = [k for k in cfg.hyperparams if k not in names]
        if bad:
            raise ConfigError("train", "--algo", algo, f"an algorithm accepting {bad}")
        cfg = replace(cfg, algo=algo, raw={**cfg.raw, "algo": algo})
    from kairos_gym.train.config import MAX_N_ENVS, MAX_TIMESTEPS, check_batch

    if timesteps is not None:
        if isinstance(timesteps, bool) or not isinstance(timesteps, int) or not 1 <= timesteps <= MAX_TIMESTEPS:
            raise ConfigError("train", "--timesteps", timesteps, f"a whole number from 1 to {MAX_TIMESTEPS:,}")
        cfg = replace(cfg, n_timesteps=timesteps)
    if seed is not None:
        cfg = replace(cfg, seed=seed)
    if n_envs is not None:
        if isinstance(n_envs, bool) or not isinstance(n_envs, int) or not 1 <= n_envs <= MAX_N_ENVS:
            raise ConfigError("train", "--n-envs", n_envs, f"a whole number from 1 to {MAX_N_ENVS}")
        check_batch("train --n-envs", cfg.hyperparams, n_envs, cfg.algo)
        cfg = replace(cfg, n_envs=n_envs)
    if eval_freq is not None:
        cfg = replace(cfg, eval=replace(cfg.eval, freq=eval_freq))
    if vec_backend is not None:
        from kairos_gym.train.envs import VEC_BACKENDS

        if vec_backend not in VEC_BACKENDS:
            raise ConfigError("train", "--vec-backend", vec_backend, "one of " + ", ".join(VEC_BACKENDS))
        cfg = replace(cfg, vec_backend=vec_backend)
    return cfg
