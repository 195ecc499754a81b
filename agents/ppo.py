"""PPOAgent: a trained Stable-Baselines3 / sb3-contrib model (PPO or MaskablePPO) behind the policy interface.

``predict(observation, state, episode_start, deterministic, action_masks)`` forwards to the loaded
model (``action_masks`` only to MaskablePPO) and returns ``(action, state)`` as SB3 does: this is how the
agent runs inside the Gymnasium environment.

``decide(ctx)`` (the simulator's policy hook) needs the environment's observation encoder and action
decoder. Given a ``scenario``, PPOAgent builds them from ``kairos_gym.env`` exactly as
:class:`kairos_gym.env.KairosEnv` does (``ObservationLayout(...).encode``, flat or dict after the model's
observation space; ``ActionLayout(...).decision`` and ``.mask``), so a model trained in the environment
runs through :func:`kairos_gym.agents.runner.run_policy` like any baseline. They can also be passed explicitly:
``obs_builder(ctx) -> observation``, ``action_decoder(ctx, action) -> Decision`` and optionally
``mask_builder(ctx) -> mask``. Without either, ``decide`` raises NotImplementedError.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from kairos_gym.agents.base import BasePolicy
from kairos_gym.agents.kairos import build_model

from kairos_gym.config import ScenarioConfig, load_scenario
from kairos_gym.errors import ConfigError
from kairos_gym.sim.hook import Decision, DecisionContext

ALGOS = ("auto", "maskable_ppo", "ppo")
DEFAULT_CHECKPOINT = Path(__file__).resolve().parent / "checkpoints" / "ppo-kairos-v0" / "model.zip"
"""The shipped agent (agents/checkpoints/ppo-kairos-v0/README.md): used when no path is given."""


def load_obs_normalizer(path: str | Path) -> Any:
    """The VecNormalize statistics saved beside a model zip (``vecnormalize.pkl``, or
    ``ckpt_vecnormalize_<n>_steps.pkl`` for ``ckpt_<n>_steps.zip``); None if absent or without norm_obs."""
    import pickle
    import re

    p = Path(path)
    if not p.is_file() and Path(str(p) + ".zip").is_file():
        p = Path(str(p) + ".zip")
    m = re.match(r"^ckpt_(\d+)_steps\.zip$", p.name)
    cands = [p.with_name(f"ckpt_vecnormalize_{m.group(1)}_steps.pkl")] if m else []
    cands.append(p.with_name("vecnormalize.pkl"))
    stats = next((c for c in cands if c.is_file()), None)
    if stats is None:
        return None
    with open(stats, "rb") as f:
        vn = pickle.load(f)
    if not getattr(vn, "norm_obs", False):
        return None
    vn.training = False
    return vn


def load_sb3_model(path: str | Path, algo: str = "auto", device: str = "cpu") -> Any:
    """Load an SB3 model zip. ``algo``: ``maskable_ppo``, ``ppo`` or ``auto`` (the class recorded in the
    zip: MaskablePPO when its policy is a maskable one, else PPO)."""
    where = "policy ppo"
    if algo not in ALGOS:
        raise ConfigError(where, "algo", algo, "one of " + ", ".join(ALGOS))
    p = Path(path)
    if not p.is_file() and Path(str(p) + ".zip").is_file():
        p = Path(str(p) + ".zip")
    if not p.is_file():
        raise ConfigError(where, "path", str(path), "an existing Stable-Baselines3 model .zip file")
    if algo == "auto":
        algo = "maskable_ppo" if _is_maskable(p) else "ppo"
    st = p.stat()
    return _load_cached(str(p.resolve()), st.st_mtime_ns, st.st_size, algo, device)


@functools.lru_cache(maxsize=8)
def _load_cached(path: str, mtime_ns: int, size: int, algo: str, device: str) -> Any:
    """One load per file version: evaluations build a policy per seed, and loading costs seconds.
    Inference does not change the model, so runs may share it."""
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
    """Does the zip's recorded policy class come from sb3_contrib's maskable module?"""
    import json
    import zipfile

    try:
        with zipfile.ZipFile(path) as z:
            data = json.loads(z.read("data").decode("utf-8"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        raise ConfigError("policy ppo", "path", str(path), "a Stable-Baselines3 model .zip (with its 'data' entry)") \
            from None
    pc = data.get("policy_class", {})
    module = pc.get("__module__", "") if isinstance(pc, dict) else str(pc)
    return "maskable" in str(module)


class GreedyActor:
    """Deterministic action of an SB3 actor-critic for one observation, ~10x faster than ``model.predict``.

    Same result as ``model.predict(obs, deterministic=True, action_masks=mask)`` for a Discrete action
    space (argmax of the masked logits), without SB3's per-call preprocessing and distribution objects.
    ``normalizer`` (a VecNormalize) is applied to the raw observation first.
    """

    def __init__(self, model: Any, normalizer: Any = None, use_masks: bool | None = None) -> None:
        import torch

        self.torch = torch
        self.policy = model.policy
        self.normalizer = normalizer if normalizer is not None and getattr(normalizer, "norm_obs", False) else None
        self.use_masks = type(model).__name__ == "MaskablePPO" if use_masks is None else use_masks

    def normalize(self, obs: np.ndarray) -> np.ndarray:
        return obs if self.normalizer is None else self.normalizer.normalize_obs(obs)

    def logits(self, obs: np.ndarray) -> np.ndarray:
        torch = self.torch
        x = torch.as_tensor(np.asarray(self.normalize(obs), dtype=np.float32).reshape(1, -1))
        pol = self.policy
        with torch.no_grad():
            feats = pol.extract_features(x, pol.pi_features_extractor)
            latent = pol.mlp_extractor.forward_actor(feats)
            return pol.action_net(latent)[0].numpy()

    def act(self, obs: np.ndarray, mask: np.ndarray | None = None) -> int:
        lg = self.logits(obs)
        if self.use_masks and mask is not None:
            lg = np.where(np.asarray(mask, dtype=bool), lg, -np.inf)
        return int(np.argmax(lg))


class PPOAgent(BasePolicy):
    """A trained PPO / MaskablePPO model."""

    name = "ppo"

    def __init__(
        self,
        scenario: Any = None,
        seed: int | None = 0,
        path: str | Path | None = None,
        algo: str = "auto",
        device: str = "cpu",
        obs_builder: Callable[[DecisionContext], Any] | None = None,
        action_decoder: Callable[[DecisionContext, Any], Decision] | None = None,
        mask_builder: Callable[[DecisionContext], Any] | None = None,
        oracle: bool = False,
        model: Any = None,
    ) -> None:
        super().__init__(seed)
        if model is None:
            if path is None and DEFAULT_CHECKPOINT.is_file():
                path = DEFAULT_CHECKPOINT
            if path is None:
                raise ConfigError(f"policy {self.name}", "path", None, "the path of a Stable-Baselines3 model .zip")
            model = load_sb3_model(path, algo, device)
        self.path = None if path is None else str(path)
        self.obs_normalizer = load_obs_normalizer(path) if path is not None else None
        self._actor: GreedyActor | None = None  # fast deterministic path for flat observations
        space = getattr(model, "action_space", None)
        self._fast_ok = type(space).__name__ == "Discrete" and hasattr(getattr(model, "policy", None), "action_net")
        self.model = model
        self.maskable = type(model).__name__ == "MaskablePPO"
        self.oracle_obs = bool(oracle)
        self.env_adapter_error: str | None = None
        if obs_builder is None and action_decoder is None and scenario is not None:
            obs_builder, action_decoder, mask_builder = self._env_adapters(load_scenario(scenario), mask_builder)
        self.obs_builder = obs_builder
        self.action_decoder = action_decoder
        self.mask_builder = mask_builder

    def _env_adapters(self, sc: ScenarioConfig, mask_builder: Any) -> tuple[Any, Any, Any]:
        """Observation encoder, action decoder and mask of the Gymnasium env for scenario ``sc``."""
        try:
            from kairos_gym.env.actions import ActionLayout
            from kairos_gym.env.observation import ObservationLayout

            model = build_model(sc)
            obs_layout = ObservationLayout(sc, oracle=self.oracle_obs, max_context=model.model.max_context)
            act_layout = ActionLayout(sc)
        except Exception as e:  # the env package is optional for the baselines: report, do not fail
            self.env_adapter_error = f"{type(e).__name__}: {e}"
            return None, None, mask_builder
        space = getattr(self.model, "observation_space", None)
        dict_obs = type(space).__name__ == "Dict"
        shape = getattr(space, "shape", None)
        if not dict_obs and shape is not None and tuple(shape) != (obs_layout.size,):
            raise ConfigError("policy ppo", "path", self.path,
                              f"a model trained on this scenario's observation ({obs_layout.size} features; the model "
                              f"expects shape {tuple(shape)})")
        n_actions = getattr(getattr(self.model, "action_space", None), "n", None)
        if n_actions is not None and int(n_actions) != act_layout.n:
            raise ConfigError("policy ppo", "path", self.path,
                              f"a model trained on this scenario's action space ({act_layout.n} actions; the model "
                              f"has {int(n_actions)})")
        buf = np.zeros(obs_layout.size, dtype=np.float32)
        mask = np.zeros(act_layout.n, dtype=np.int8)

        def obs_builder(ctx: DecisionContext) -> Any:
            flat = obs_layout.encode(ctx, buf)
            return obs_layout.to_dict(flat) if dict_obs else flat.copy()

        def action_decoder(ctx: DecisionContext, action: Any) -> Decision:
            return act_layout.decision(int(np.asarray(action).reshape(-1)[0]))

        def masks(ctx: DecisionContext) -> Any:
            return act_layout.mask(ctx, mask).astype(bool)

        return obs_builder, action_decoder, (mask_builder if mask_builder is not None else masks)

    def predict(
        self,
        observation: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
        action_masks: Any = None,
    ) -> tuple[Any, Any]:
        """The model's action for an environment observation (or a Decision for a DecisionContext)."""
        if isinstance(observation, DecisionContext):
            return self.decide(observation), state
        if deterministic and isinstance(observation, np.ndarray) and self._fast_ok:
            if self._actor is None:
                self._actor = GreedyActor(self.model, self.obs_normalizer)
            return np.int64(self._actor.act(observation, action_masks)), state
        if self.obs_normalizer is not None:
            observation = self.obs_normalizer.normalize_obs(observation)
        if self.maskable:
            return self.model.predict(observation, state=state, episode_start=episode_start,
                                      deterministic=deterministic, action_masks=action_masks)
        return self.model.predict(observation, state=state, episode_start=episode_start, deterministic=deterministic)

    def _decide(self, ctx: DecisionContext) -> Decision:
        if self.obs_builder is None or self.action_decoder is None:
            why = f" (kairos_gym.env adapters unavailable: {self.env_adapter_error})" if self.env_adapter_error else ""
            raise NotImplementedError(
                "PPOAgent.decide(ctx) needs the Gymnasium environment's observation encoder and action decoder"
                f"{why}: build the agent with a scenario (make_policy('ppo', scenario, path=...)), or pass "
                "obs_builder=(ctx -> observation), action_decoder=(ctx, action -> Decision) and optionally "
                "mask_builder=(ctx -> mask), or run the agent inside the environment with "
                "predict(observation, action_masks=...)."
            )
        obs = self.obs_builder(ctx)
        masks = self.mask_builder(ctx) if self.mask_builder is not None else None
        action, _ = self.predict(obs, deterministic=True, action_masks=masks)
        return self.action_decoder(ctx, action)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "path": self.path, "algo": type(self.model).__name__}
