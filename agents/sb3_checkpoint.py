"""Reading Stable-Baselines3 checkpoints and converting them to the project's safe format.

The safe format (:mod:`kairos_gym.agents.checkpoint`: ``policy.json`` + ``policy.npz`` + ``normalize.json``) is
data only and loads without unpickling anything. Stable-Baselines3's own files (a ``model.zip`` with cloudpickle
entries, a ``vecnormalize.pkl`` pickle) can execute code when read, so every function here that reads them requires
``trust_checkpoint=True`` (CLI: ``--trust-checkpoint``). :func:`convert_checkpoint` turns a trusted SB3 checkpoint
into the safe format once (``kairos-gym convert``). Writing checkpoints during training is
:mod:`kairos_gym.train.checkpoints`.
"""
from __future__ import annotations

import functools
import json
import math
import pickle
import re
import warnings
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from kairos_gym.agents.checkpoint import (
    ACTIVATIONS,
    GreedyActor,
    ObsNormalizer,
    load_policy,
    require_trust,
    resolve_checkpoint,
    write_policy,
)

from kairos_gym.errors import ConfigError
from kairos_gym.extras import require
from kairos_gym.literal import parse_literal
from kairos_gym.yaml_io import load_yaml_file

__all__ = ["GreedyActor", "actor_from_sb3", "convert_checkpoint", "load_actor", "load_model", "make_ppo_agent",
           "normalize_stats", "resolve_model_path", "stats_path_for"]

MODEL_NAME = "model.zip"
STATS_NAME = "vecnormalize.pkl"
SB3_ALGOS = ("auto", "maskable_ppo", "ppo")
_CKPT = re.compile(r"^ckpt_(\d+)_steps\.zip$")


DEFAULT_NORMALIZE = {"norm_obs": True, "norm_reward": True}
"""The VecNormalize arguments a run uses when its config says ``normalize: true``."""
NORMALIZE_ARGS: dict[str, tuple[type, ...]] = {
    "norm_obs": (bool,), "norm_reward": (bool,), "clip_obs": (int, float), "clip_reward": (int, float),
    "gamma": (int, float), "epsilon": (int, float)}
"""VecNormalize arguments a config may set, and their types."""


def parse_normalize(where: str, value: Any, kwargs: Any = None) -> dict[str, Any] | None:
    """``normalize`` (true, false, a mapping of VecNormalize arguments or its string form, parsed by
    :func:`parse_literal`) merged with ``normalize_kwargs``: the VecNormalize arguments, or None for none."""
    allowed = "true, false or a mapping of VecNormalize arguments (" + ", ".join(NORMALIZE_ARGS) + ")"
    if isinstance(value, str):
        value = parse_literal(where, "normalize", value)
    if value is False or value is None:
        return None
    if value is True:
        out = dict(DEFAULT_NORMALIZE)
    elif isinstance(value, Mapping):
        out = dict(value)
    else:
        raise ConfigError(where, "normalize", value, allowed)
    if kwargs:
        if not isinstance(kwargs, Mapping):
            raise ConfigError(where, "normalize_kwargs", kwargs, "a mapping of VecNormalize arguments")
        out.update(kwargs)
    for k, v in out.items():
        if k not in NORMALIZE_ARGS:
            raise ConfigError(where, f"normalize.{k}", v, "one of " + ", ".join(NORMALIZE_ARGS))
        types = NORMALIZE_ARGS[k]
        ok = isinstance(v, bool) if types == (bool,) else (
            isinstance(v, types) and not isinstance(v, bool) and math.isfinite(v) and v > 0)
        if not ok:
            raise ConfigError(where, f"normalize.{k}", v, "true or false" if types == (bool,) else "a number > 0")
    return out


# ---------------------------------------------------------------------------- SB3 model -> safe format
def actor_from_sb3(model: Any, normalizer: Any = None, inputs: str = "observation") -> GreedyActor:
    """A :class:`GreedyActor` with a copy of an SB3 PPO / MaskablePPO model's actor weights (a
    :class:`~kairos_gym.train.maskable_dqn.MaskableDQN`'s Q-network: its greedy policy is the masked argmax of the
    Q-values, as the actor's of its logits) and ``normalizer``'s observation statistics (a VecNormalize, an
    :class:`ObsNormalizer` or None; a VecNormalize without ``norm_obs`` normalises nothing); ``inputs``: the input
    layout the model was trained on (the training env's, :func:`kairos_gym.train.envs.env_inputs`). Needs an
    ``MlpPolicy`` on a flat ``Box`` observation with a ``Discrete`` action space (what the safe format stores)."""
    import torch.nn as nn

    where = "checkpoint"
    obs_space, act_space, pol = model.observation_space, model.action_space, model.policy
    if type(obs_space).__name__ != "Box" or len(obs_space.shape) != 1:
        raise ConfigError(where, "observation_space", obs_space, "a flat Box (obs_mode flat) for the safe format")
    if type(act_space).__name__ != "Discrete":
        raise ConfigError(where, "action_space", act_space, "Discrete for the safe format")
    kind = type(model).__name__
    if kind == "MaskableDQN":  # one Sequential: the hidden layers, then the Q-values layer
        extractor, mods = pol.q_net.features_extractor, list(pol.q_net.q_net)
        body, head, body_name, head_name = mods[:-1], mods[-1] if mods else None, "q_net.q_net", "q_net output"
    else:
        extractor, body, head = pol.pi_features_extractor, list(pol.mlp_extractor.policy_net), pol.action_net
        body_name, head_name = "mlp_extractor.policy_net", "action_net"
    if type(extractor).__name__ != "FlattenExtractor":
        raise ConfigError(where, "features_extractor", type(extractor).__name__,
                          "FlattenExtractor (MlpPolicy) for the safe format")
    hidden, activation = _hidden_layers(body, body_name)
    if type(head) is not nn.Linear or head.bias is None:
        raise ConfigError(where, head_name, head, "a Linear layer with bias")
    algo = {"MaskablePPO": "maskable_ppo", "MaskableDQN": "maskable_dqn"}.get(kind, "ppo")
    return GreedyActor(hidden, (_np(head.weight), _np(head.bias)), activation or "Tanh",
                       maskable=algo != "ppo", normalizer=obs_normalizer_of(normalizer), algo=algo, inputs=inputs)


def _hidden_layers(mods: list[Any], name: str) -> tuple[list[tuple[np.ndarray, np.ndarray]], str | None]:
    """``(weight, bias)`` of each Linear of ``mods`` (Linear, activation, Linear, activation, ...) and the one
    activation's name; one :class:`ConfigError` for any other layout."""
    import torch.nn as nn

    hidden: list[tuple[np.ndarray, np.ndarray]] = []
    activation: str | None = None
    for i in range(0, len(mods), 2):
        lin, act = mods[i], mods[i + 1] if i + 1 < len(mods) else None
        act_name = type(act).__name__
        if type(lin) is not nn.Linear or lin.bias is None or act_name not in ACTIVATIONS \
                or (activation or act_name) != act_name:
            raise ConfigError("checkpoint", name, mods, "Linear layers with bias, each followed by the same "
                              "activation: " + ", ".join(ACTIVATIONS))
        if not _default_activation(act):
            raise ConfigError("checkpoint", "activation_fn", act, "an activation with its default arguments")
        activation = act_name
        hidden.append((_np(lin.weight), _np(lin.bias)))
    return hidden, activation


def _np(t: Any) -> np.ndarray:
    return t.detach().cpu().numpy().astype(np.float32, copy=True)


def _default_activation(act: Any) -> bool:
    defaults = {"ELU": ("alpha", 1.0), "LeakyReLU": ("negative_slope", 0.01), "GELU": ("approximate", "none")}
    name = type(act).__name__
    return name not in defaults or getattr(act, defaults[name][0]) == defaults[name][1]


def obs_normalizer_of(normalizer: Any) -> ObsNormalizer | None:
    """The observation transform of a VecNormalize (None without ``norm_obs``); an ObsNormalizer or None as is."""
    if normalizer is None or isinstance(normalizer, ObsNormalizer):
        return normalizer
    if not getattr(normalizer, "norm_obs", False):
        return None
    rms = normalizer.obs_rms
    return ObsNormalizer(np.array(rms.mean, dtype=np.float64), np.array(rms.var, dtype=np.float64),
                         float(normalizer.epsilon), float(normalizer.clip_obs))


def normalize_stats(venv: Any) -> dict[str, Any] | None:
    """``normalize.json``'s content for a VecNormalize (None for any other env)."""
    from stable_baselines3.common.vec_env import VecNormalize

    if not isinstance(venv, VecNormalize):
        return None
    rms = venv.obs_rms
    return {"norm_obs": bool(venv.norm_obs), "norm_reward": bool(venv.norm_reward), "clip_obs": float(venv.clip_obs),
            "clip_reward": float(venv.clip_reward), "epsilon": float(venv.epsilon), "gamma": float(venv.gamma),
            "obs_mean": np.asarray(rms.mean, dtype=np.float64), "obs_var": np.asarray(rms.var, dtype=np.float64),
            "obs_count": float(rms.count)}


# ---------------------------------------------------------------------------- SB3 files (trusted only)
def stats_path_for(model_path: str | Path) -> Path | None:
    """The VecNormalize statistics saved with a model zip (either naming scheme), or None."""
    p = Path(model_path)
    m = _CKPT.match(p.name)
    cands = [p.with_name(f"ckpt_vecnormalize_{m.group(1)}_steps.pkl")] if m else []
    cands.append(p.with_name(STATS_NAME))
    return next((c for c in cands if c.is_file()), None)


def resolve_model_path(path: str | Path) -> Path:
    """An SB3 model zip from: a zip, a checkpoint folder (``model.zip``) or a run folder (its latest
    ``checkpoints/ckpt_<n>_steps.zip``). Only finds the file: loading it is :func:`load_model`'s business."""
    p = Path(path)
    if p.is_file():
        return p
    if p.suffix != ".zip" and p.with_name(p.name + ".zip").is_file():
        return p.with_name(p.name + ".zip")
    if p.is_dir():
        ckpts = sorted(((int(m.group(1)), f) for f in (p / "checkpoints").glob("ckpt_*_steps.zip")
                        if (m := _CKPT.match(f.name))), key=lambda t: t[0])
        if ckpts:
            return ckpts[-1][1]
        if (p / MODEL_NAME).is_file():
            return p / MODEL_NAME
    raise ConfigError("train", "checkpoint", str(path), "a Stable-Baselines3 model .zip, a folder with model.zip, "
                      "or a run folder with checkpoints/ckpt_*_steps.zip")


def _trained_with_obs_norm(model_path: Path) -> bool | None:
    """Whether the run config next to a model zip (its folder's or the run folder's ``config.yaml``)
    normalises observations; None when no readable config is there."""
    for cfg in (model_path.parent / "config.yaml", model_path.parent.parent / "config.yaml"):
        if not cfg.is_file():
            continue
        try:
            data = load_yaml_file(cfg)
            sections = [b for b in data.values() if isinstance(b, Mapping)] if isinstance(data, Mapping) else []
            if not sections:
                continue
            norms = [parse_normalize(str(cfg), b.get("normalize", True), b.get("normalize_kwargs")) for b in sections]
        except ConfigError:
            continue
        return any(n is not None and n.get("norm_obs", True) for n in norms)
    return None


def load_obs_normalizer(model_path: str | Path, *, trust_checkpoint: bool = False) -> Any:
    """The VecNormalize saved with a model zip (unpickled: needs ``trust_checkpoint``), frozen, or None when
    absent. Absent statistics for a run whose config normalises observations are an error; absent
    statistics with no config to tell are a warning (the model then sees raw observations)."""
    p = Path(model_path)
    sp = stats_path_for(p)
    if sp is None:
        normed = _trained_with_obs_norm(p)
        if normed:
            raise ConfigError("checkpoint", "vecnormalize.pkl", str(p.with_name(STATS_NAME)),
                              "the VecNormalize statistics saved with this model: its run config normalises "
                              "observations, and without them the model would see raw observations")
        if normed is None:
            warnings.warn(f"{p}: no VecNormalize statistics (vecnormalize.pkl) and no run config.yaml beside it: "
                          "the model sees raw observations, correct only if it was trained without "
                          "observation normalisation", UserWarning, stacklevel=3)
        return None
    require_trust(sp, trust_checkpoint, "checkpoint", "vecnormalize.pkl")
    with open(sp, "rb") as f:
        vn = pickle.load(f)
    vn.training = False
    return vn


def load_sb3_model(path: str | Path, algo: str = "auto", device: str = "cpu", *,
                   trust_checkpoint: bool = False) -> Any:
    """Load an SB3 model zip (needs ``trust_checkpoint``: the zip carries cloudpickle entries). ``algo``:
    ``maskable_ppo``, ``ppo`` or ``auto`` (MaskablePPO when the zip's recorded policy class is maskable). Needs the
    [train] extra (Stable-Baselines3, torch)."""
    where = "policy ppo"
    if algo not in SB3_ALGOS:
        raise ConfigError(where, "algo", algo, "one of " + ", ".join(SB3_ALGOS))
    p = Path(path)
    if not p.is_file() and p.with_name(p.name + ".zip").is_file():
        p = p.with_name(p.name + ".zip")
    if not p.is_file():
        raise ConfigError(where, "path", str(path), "an existing Stable-Baselines3 model .zip file")
    require_trust(p, trust_checkpoint, where)
    require("train", "reading a Stable-Baselines3 checkpoint")
    if algo == "auto":
        algo = "maskable_ppo" if _is_maskable(p) else "ppo"
    st = p.stat()
    return _load_cached(str(p.resolve()), st.st_mtime_ns, st.st_size, algo, device)


@functools.lru_cache(maxsize=8)
def _load_cached(path: str, mtime_ns: int, size: int, algo: str, device: str) -> Any:
    """One load per file version (inference does not change the model, so runs may share it)."""
    # Schedules are cloudpickled functions of the training code: inference never uses them, so they are
    # replaced instead of unpickled (they name modules such as the old top-level ``train``).
    inference_only = {"learning_rate": 0.0, "lr_schedule": _zero, "clip_range": _zero}
    if algo == "maskable_ppo":
        from sb3_contrib import MaskablePPO

        return MaskablePPO.load(path, device=device, custom_objects=inference_only)
    from stable_baselines3 import PPO

    return PPO.load(path, device=device, custom_objects=inference_only)


def _zero(_progress: float) -> float:
    return 0.0


def _is_maskable(path: Path) -> bool:
    """Does the zip's recorded policy class come from sb3_contrib's maskable module? (reads JSON only)"""
    try:
        with zipfile.ZipFile(path) as z:
            if z.getinfo("data").file_size > 16 << 20:
                raise ValueError("data entry too large")
            data = json.loads(z.read("data").decode("utf-8"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        raise ConfigError("policy ppo", "path", str(path), "a Stable-Baselines3 model .zip (with its 'data' entry)") \
            from None
    pc = data.get("policy_class", {}) if isinstance(data, dict) else {}
    module = pc.get("__module__", "") if isinstance(pc, dict) else str(pc)
    return "maskable" in str(module)


def load_model(path: str | Path, device: str = "cpu", *, algo: str = "auto",
               trust_checkpoint: bool = False) -> tuple[Any, Any]:
    """``(SB3 model, VecNormalize or None)`` from an SB3 zip / checkpoint folder / run folder. Unpickles:
    needs ``trust_checkpoint=True`` (refused with a ConfigError otherwise, before any file is read)."""
    p = resolve_model_path(path)
    require_trust(p, trust_checkpoint, "checkpoint", "path")
    return (load_sb3_model(p, algo, device, trust_checkpoint=True),
            load_obs_normalizer(p, trust_checkpoint=True))


# ---------------------------------------------------------------------------- inference
def load_actor(path: str | Path, *, trust_checkpoint: bool = False) -> GreedyActor:
    """The greedy actor of a checkpoint: a safe checkpoint folder (or its run folder) with nothing
    unpickled; an SB3 zip only with ``trust_checkpoint=True``."""
    kind, target = resolve_checkpoint(path, "checkpoint", "path")
    if kind == "safe":
        return load_policy(target)
    model, norm = load_model(target, trust_checkpoint=trust_checkpoint)
    return actor_from_sb3(model, norm)


def convert_checkpoint(src: str | Path, dest: str | Path, *, trust_checkpoint: bool = False) -> Path:
    """Write an SB3 checkpoint (zip, folder or run folder; needs ``trust_checkpoint``) in the safe format
    into ``dest``: same weights, same statistics, same greedy actions."""
    p = resolve_model_path(src)
    require_trust(p, trust_checkpoint, "convert", "SRC", "--trust-checkpoint")
    model, norm = load_model(p, trust_checkpoint=True)
    actor = actor_from_sb3(model, norm)
    stats = normalize_stats(norm) if norm is not None else None
    return write_policy(dest, actor, stats, {"converted_from": p.name, "timesteps": int(model.num_timesteps)})


def make_ppo_agent(path: str | Path, scenario: Any, seed: int = 0, *, trust_checkpoint: bool = False) -> Any:
    """A :class:`kairos_gym.agents.ppo.PPOAgent` for ``scenario`` from a checkpoint (safe folder or run folder;
    an SB3 zip only with ``trust_checkpoint``). The agent applies the checkpoint's observation normalisation."""
    from kairos_gym.agents.ppo import PPOAgent

    return PPOAgent(scenario, seed=seed, path=str(path), trust_checkpoint=trust_checkpoint)
